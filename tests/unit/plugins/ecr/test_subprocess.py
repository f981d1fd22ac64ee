"""``ecr-credential-provider`` as the kubelet runs it: the installed executable, a real
subprocess, against moto's ECR and STS served on 127.0.0.1 (``fake_aws``) through the
``AWS_ENDPOINT_URL`` override. Also through ``credprov plugin test`` (conformance) and
``credprov get-credentials`` with the example configs in ``config/``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from credprov.credentialprovider.plugin.config import load_config
from credprov.imageauth.matching import urls_match_str
from credprov.install import install
from tests.conftest import CANARY
from tests.fakes.ecr import JSON_11, FakeAws, fake_aws
from tests.unit.plugins.ecr.conftest import ACCOUNT, ROLE_ACCOUNT, ROLE_ARN, assumed_roles

pytestmark = pytest.mark.e2e

NAME = "ecr-credential-provider"
G = "credentialprovider.kubelet.k8s.io"
REPO = Path(__file__).resolve().parents[4]
CREDPROV = str(Path(sys.executable).parent / "credprov")
HOST = f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com"
IMAGE = f"{HOST}/app"
NODE_SECRET = f"node-secret-{CANARY}"


@pytest.fixture(scope="module")
def aws() -> Iterator[FakeAws]:
    with fake_aws() as fake:
        yield fake


@pytest.fixture
def fresh_aws(aws: FakeAws) -> FakeAws:
    aws.seen.clear()
    aws.clear_scripts()
    return aws


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin as ``credprov install`` writes it into a kubelet bin dir."""
    bin_dir = tmp_path_factory.mktemp("bin")
    (result,) = install(str(bin_dir), [NAME])
    return Path(result.path)


@pytest.fixture
def env(fresh_aws: FakeAws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The plugin's whole environment: fake node keys, the fake endpoint, an empty cache.

    This process's AWS_* variables are removed too, for the harnesses that pass their own
    environment on to the plugin as the kubelet does."""
    for key in list(os.environ):
        if key.startswith("AWS_"):
            monkeypatch.delenv(key)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "AWS_ACCESS_KEY_ID": "AKIDNODE",
        "AWS_SECRET_ACCESS_KEY": NODE_SECRET,
        "AWS_ENDPOINT_URL": fresh_aws.url,
        "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "CREDPROV_PLUGIN_CACHE_DIR": str(tmp_path / "plugin-cache"),
    }


def request(image: str = IMAGE, version: str = "v1", **extra: Any) -> bytes:
    doc = {"kind": "CredentialProviderRequest", "apiVersion": f"{G}/{version}", "image": image}
    doc.update(extra)
    return json.dumps(doc).encode()


def spawn(cmd: list[str], env: dict[str, str], stdin: bytes = b"") -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    return proc


def finish(proc: subprocess.Popen[bytes]) -> tuple[int, bytes, str]:
    assert proc.stdout is not None and proc.stderr is not None
    try:
        out, err = proc.stdout.read(), proc.stderr.read()
        code = proc.wait(timeout=60)
    finally:
        proc.kill()
        proc.stdout.close()
        proc.stderr.close()
    return code, out, err.decode()


def run_plugin(
    plugin: Path, env: dict[str, str], stdin: bytes, *args: str
) -> tuple[int, bytes, str]:
    return finish(spawn([str(plugin), *args], env, stdin))


# -- the kubelet's view -----------------------------------------------------------------------


def test_answer_then_plugin_cache(plugin: Path, env: dict[str, str], fresh_aws: FakeAws) -> None:
    # Cold: botocore, one GetAuthorizationToken signed for the host's region; positional
    # arguments (kops-era "get-credentials") are ignored as upstream does.
    code, out, err = run_plugin(plugin, env, request(), "get-credentials", "-v", "2")
    assert code == 0, err
    resp = json.loads(out)
    assert resp == {
        "kind": "CredentialProviderResponse",
        "apiVersion": f"{G}/v1",
        "cacheKeyType": "Registry",
        "cacheDuration": "6h0m0s",
        "auth": {HOST: {"username": "AWS", "password": f"{ACCOUNT}-auth-token"}},
    }
    assert [(s.service, s.region, s.operation) for s in fresh_aws.seen] == [
        ("ecr", "us-west-2", "GetAuthorizationToken")
    ]

    # Warm: the plugin cache answers for the rest of the half-life, without any call.
    code, out, err = run_plugin(plugin, env, request(f"{HOST}/other", "v1beta1"), "-v", "2")
    assert code == 0, err
    assert f"answered {HOST}/other from the plugin cache" in err
    warm = json.loads(out)
    assert warm["apiVersion"] == f"{G}/v1beta1"
    assert warm["auth"] == resp["auth"]
    assert warm["cacheDuration"] in ("6h0m0s", "5h59m59s", "5h59m58s")
    assert len(fresh_aws.seen) == 1

    # Another AWS environment (another default region, a role ARN) is another cache scope.
    env2 = {**env, "AWS_ECR_ROLE_ARN": ROLE_ARN, "AWS_REGION": "eu-west-1"}
    code, out, err = run_plugin(plugin, env2, request())
    assert code == 0, err
    assert len(fresh_aws.seen) == 2

    # --clear-cache empties it.
    assert run_plugin(plugin, env, b"", "--clear-cache")[0] == 0
    assert run_plugin(plugin, env, request())[0] == 0
    assert len(fresh_aws.seen) == 3


WARM_PROBE = (
    "import sys\n"
    "from credprov_ecr.main import main\n"
    "code = main()\n"
    "sys.stderr.write('botocore-imported=%s\\n' % ('botocore' in sys.modules))\n"
    "raise SystemExit(code)\n"
)


def test_warm_path_never_imports_the_aws_sdk(plugin: Path, env: dict[str, str]) -> None:
    cmd = [sys.executable, "-c", WARM_PROBE]
    cold = finish(spawn(cmd, env, request()))
    warm = finish(spawn(cmd, env, request()))
    assert cold[0] == 0 and "botocore-imported=True" in cold[2]
    assert warm[0] == 0 and "botocore-imported=False" in warm[2], warm[2]


def test_service_account_token_assumes_the_role(
    plugin: Path, env: dict[str, str], fresh_aws: FakeAws
) -> None:
    token = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6YTpiIn0." + CANARY
    stdin = request(
        serviceAccountToken=token,
        serviceAccountAnnotations={"eks.amazonaws.com/ecr-role-arn": ROLE_ARN},
    )
    code, out, err = run_plugin(plugin, env, stdin, "-v", "4")
    assert code == 0, err
    assert json.loads(out)["auth"][HOST]["password"] == f"{ROLE_ACCOUNT}-auth-token"
    sts, ecr = fresh_aws.seen
    assert (sts.operation, sts.signed, ecr.operation, ecr.signed) == (
        "AssumeRoleWithWebIdentity",
        False,
        "GetAuthorizationToken",
        True,
    )
    assert (ROLE_ARN, "ecr-credential-provider") in assumed_roles()
    assert CANARY not in err


# region → (scripted answer: status, body, content type; the stderr line after
# "GetAuthorizationToken (ECR, <region>): "). The in-process tests (test_provider.py) cover
# more kinds of bad answers. An answer that is not AWS's (a proxy's or load balancer's page)
# is never quoted: only its status is known.
HTML_PAGE = (
    "<!DOCTYPE html>\n<html>\n<head><title>500 Internal Server Error</title></head>\n"
    f"<body><h1>Oops</h1><p>request {CANARY} failed</p></body>\n</html>\n"
)
BAD_ANSWERS: dict[str, tuple[int, str, str, str]] = {
    "us-east-1": (
        400,
        '{"__type":"ThrottlingException","message":"Rate exceeded"}',
        JSON_11,
        "ThrottlingException (HTTP 400): Rate exceeded",
    ),
    "us-east-2": (500, f"<html>{CANARY}</html>", JSON_11, "HTTP 500 Internal Server Error"),
    "us-west-1": (
        200,
        '{"authorizationData":[{"authorizationToken":"' + CANARY,
        JSON_11,
        "malformed response: the answer is not valid JSON",
    ),
    "eu-west-3": (  # a wrong region, in a message that quotes the node's secret key
        403,
        '{"__type":"InvalidSignatureException","message":"Credential should be scoped to a '
        "valid region, not eu-west-3 (" + NODE_SECRET + ')"}',
        JSON_11,
        "InvalidSignatureException (HTTP 403): Credential should be scoped to a valid region, "
        "not eu-west-3 (<redacted>)",
    ),
    "ap-south-1": (500, HTML_PAGE, "text/html", "HTTP 500 Internal Server Error"),
    "eu-central-1": (502, f"  proxy error: {CANARY}\n", "text/plain", "HTTP 502 Bad Gateway"),
    "ca-central-1": (403, f'{{"message":"{CANARY}"}}', "application/json", "HTTP 403 Forbidden"),
    "sa-east-1": (404, "[1, 2]", "application/json", "HTTP 404 Not Found"),
}


def test_bad_answers_are_one_line_without_secrets(
    plugin: Path, env: dict[str, str], fresh_aws: FakeAws
) -> None:
    # All at once (one region each), so the cold starts overlap.
    procs = {}
    for region, (status, body, content_type, _) in BAD_ANSWERS.items():
        fresh_aws.script("GetAuthorizationToken", status, body, content_type, region=region)
        image = f"{ACCOUNT}.dkr.ecr.{region}.amazonaws.com/app"
        procs[region] = spawn([str(plugin)], {**env, "AWS_MAX_ATTEMPTS": "1"}, request(image))
    for region, proc in procs.items():
        code, out, err = finish(proc)
        want = f"{NAME}: GetAuthorizationToken (ECR, {region}): {BAD_ANSWERS[region][3]}\n"
        assert (code, out, err) == (1, b"", want)


@pytest.mark.parametrize(
    ("args", "code", "stdout"),
    [
        (["--version"], 0, f"{NAME} "),
        (["-v"], 0, f"{NAME} "),  # cobra's shorthand for --version
        (["--help"], 0, f"usage: {NAME}"),
        (["--no-such-flag"], 2, ""),
    ],
)
def test_command_line(
    plugin: Path, env: dict[str, str], args: list[str], code: int, stdout: str
) -> None:
    got, out, _ = run_plugin(plugin, env, b"", *args)
    assert got == code
    assert out.decode().startswith(stdout)


# -- the harnesses ----------------------------------------------------------------------------


def test_conformance_harness(plugin: Path, env: dict[str, str], fresh_aws: FakeAws) -> None:
    # With a role for every token: the harness's dummy-token request goes through STS.
    proc = subprocess.run(
        [
            CREDPROV,
            "plugin",
            "test",
            str(plugin),
            "--image",
            f"{HOST}/app:v1",
            "--env",
            f"AWS_ECR_ROLE_ARN={ROLE_ARN}",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    report = json.loads(proc.stdout)
    statuses = {(c["name"], c["status"]) for c in report["checks"]}
    assert not [c for c in report["checks"] if c["status"] in ("fail", "warn")]
    assert ("service-account fields accepted", "pass") in statuses
    assert {c["apiVersion"].rsplit("/", 1)[-1] for c in report["checks"] if c["apiVersion"]} >= {
        "v1alpha1",
        "v1beta1",
        "v1",
    }
    assert "AssumeRoleWithWebIdentity" in fresh_aws.operations()
    assert CANARY not in proc.stdout + proc.stderr


def test_get_credentials_with_the_example_config(plugin: Path, env: dict[str, str]) -> None:
    cn_host = f"{ACCOUNT}.dkr.ecr.cn-north-1.amazonaws.com.cn"
    proc = subprocess.run(
        [
            CREDPROV,
            "get-credentials",
            f"{HOST}/team/app:v1",
            f"{cn_host}/app@sha256:{'a' * 64}",
            "nginx:1.27",
            "--config",
            str(REPO / "config" / "ecr-credential-provider-config.yaml"),
            "--bin-dir",
            str(plugin.parent),
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    private, china, hub = doc["images"]
    for image, host in ((private, HOST), (china, cn_host)):
        (cred,) = image["credentials"]
        assert (cred["username"], cred["password"], cred["key"]) == ("AWS", "<redacted>", host)
        assert cred["source"] == f"provider:{NAME}"
        (prov,) = image["providers"]
        assert (prov["cacheKeyType"], prov["cacheDuration"]) == ("Registry", "6h0m0s")
    assert hub["credentials"] == [] and not hub["providers"][0]["matched"]
    assert doc["executions"] == {NAME: 2}
    assert "auth-token" not in proc.stdout


# -- the example configs ----------------------------------------------------------------------

ECR_HOSTS = {
    f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com": True,
    f"{ACCOUNT}.dkr.ecr.us-gov-west-1.amazonaws.com": True,
    f"{ACCOUNT}.dkr.ecr.cn-north-1.amazonaws.com.cn": True,
    f"{ACCOUNT}.dkr.ecr-fips.us-east-1.amazonaws.com": False,
    f"{ACCOUNT}.dkr.ecr.eusc-de-east-1.amazonaws.eu": False,
    f"{ACCOUNT}.dkr-ecr.us-east-1.on.aws": False,
    f"{ACCOUNT}.dkr-ecr-fips.us-east-1.on.aws": False,
    f"{ACCOUNT}.dkr-ecr.cn-north-1.on.amazonwebservices.com.cn": False,
    f"{ACCOUNT}.dkr.ecr.us-iso-east-1.c2s.ic.gov": False,
    f"{ACCOUNT}.dkr.ecr.us-isob-east-1.sc2s.sgov.gov": False,
    f"{ACCOUNT}.dkr.ecr.eu-isoe-west-1.cloud.adc-e.uk": False,
    f"{ACCOUNT}.dkr.ecr.us-isof-south-1.csp.hci.ic.gov": False,
    "public.ecr.aws": False,
    "ecr-public.aws.com": False,
}


def match_images(name: str) -> tuple[str, ...]:
    config, _ = load_config(str(REPO / "config" / name))
    (provider,) = config.providers
    assert provider.name == NAME
    return provider.match_images


@pytest.mark.parametrize("host", list(ECR_HOSTS))
def test_example_configs_match(host: str) -> None:
    image = f"{host}/team/app"
    upstream = match_images("ecr-credential-provider-config.yaml")
    every = match_images("ecr-credential-provider-config-all-partitions.yaml")
    assert any(urls_match_str(p, image) for p in upstream) is ECR_HOSTS[host]
    assert any(urls_match_str(p, image) for p in every)
    assert not any(urls_match_str(p, "registry.k8s.io/pause") for p in every)


def test_service_account_example_config_is_valid() -> None:
    config, _ = load_config(
        str(REPO / "config" / "ecr-credential-provider-config-service-account.yaml")
    )
    (provider,) = config.providers
    assert provider.token_attributes is not None
    assert provider.token_attributes.optional_service_account_annotation_keys == (
        "eks.amazonaws.com/ecr-role-arn",
    )
