"""A bounded mutation fuzz over every kind of input credprov reads (issue 11, "Done when").

Seeds are real inputs (a provider config with a secret ``env`` value, a plugin response, a
pull secret, a docker config, a cluster's objects, pull records, a scenario), each holding
the canary secret where a secret belongs. Each round mutates one seed (byte flips,
truncation, hostile tokens spliced in: lone surrogates, deep nesting, 5,000-digit integers,
wrong types, invalid UTF-8, control characters) and feeds it to the CLI command that reads
it, in-process. A round fails on exit status 70 (a credprov bug), a traceback, an input
that takes longer than :data:`ROUND_SECONDS` (a hang), or the canary in any output.

The default is a few seconds for CI; ``CREDPROV_FUZZ_ROUNDS=20000`` runs longer and
``CREDPROV_FUZZ_SEED`` picks another sequence.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from credprov.api import internal
from credprov.cli.main import main
from credprov.credentialprovider.plugin.exec import ExecPlugin
from credprov.errors import CredprovError
from credprov.pullmanager.types import cache_filename
from tests.conftest import CANARY

ROUNDS = int(os.environ.get("CREDPROV_FUZZ_ROUNDS", "60"))
SEED = int(os.environ.get("CREDPROV_FUZZ_SEED", "2133"))
ROUND_SECONDS = 20
ROOT = Path(__file__).resolve().parents[2]
V1 = "credentialprovider.kubelet.k8s.io/v1"
BIN_DIR = str(ROOT / "config" / "bin")  # example-credential-provider (never matched here)

TOKENS = [
    b'"\\ud800"',
    b'"\\udc00x\\ud83d"',
    b"[" * 3000,
    b"{" * 50 + b"}" * 50,
    b"1" * 5000,
    b"-" + b"9" * 4400,
    b"null",
    b"[1]",
    b'"x"',
    b"{}",
    b"\xff\xfe",
    b"\xc3(",
    b"\xed\xa0\x80",
    b"\x00",
    b"\x1b[31m",
    b"\r\n",
    b"&<>",
    b"*",
    b": ",
    b"- ",
    b"!!binary AAAA",
    b"&a [*a, *a]",
    b"1e999",
    b"NaN",
    b"true",
]

CONFIG = f"""apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: example-credential-provider
    apiVersion: {V1}
    matchImages: ["nomatch.invalid", "*.nomatch.invalid"]
    defaultCacheDuration: "5m"
    env:
      - name: EXAMPLE_PASSWORD
        value: {CANARY}
""".encode()

CONFIG_JSON = json.dumps(
    {
        "apiVersion": "kubelet.config.k8s.io/v1",
        "kind": "CredentialProviderConfig",
        "providers": [
            {
                "name": "p",
                "apiVersion": V1,
                "matchImages": ["r.io"],
                "defaultCacheDuration": "1m",
                "args": ["--x"],
                "env": [{"name": "K", "value": CANARY}],
                "tokenAttributes": {
                    "serviceAccountTokenAudience": "a",
                    "cacheType": "Token",
                    "requireServiceAccount": True,
                },
            }
        ],
    }
).encode()

RESPONSE = json.dumps(
    {
        "kind": "CredentialProviderResponse",
        "apiVersion": V1,
        "cacheKeyType": "Registry",
        "cacheDuration": "5m",
        "auth": {"registry.io": {"username": "u", "password": CANARY}},
    }
).encode()

DOCKERCFG = json.dumps({"auths": {"registry.io": {"username": "u", "password": CANARY}}})
PULL_SECRET = f"""apiVersion: v1
kind: Secret
metadata: {{name: regcred, namespace: default, uid: 0b1c}}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{DOCKERCFG}'
""".encode()

OBJECTS = f"""apiVersion: v1
kind: List
items:
- {{apiVersion: v1, kind: Node, metadata: {{name: node-1, uid: n1}}}}
- apiVersion: v1
  kind: ServiceAccount
  metadata: {{name: sa, namespace: team-a, uid: s1, annotations: {{a: b}}}}
- apiVersion: v1
  kind: Secret
  metadata: {{name: regcred, namespace: team-a, uid: r1}}
  type: kubernetes.io/dockerconfigjson
  stringData: {{.dockerconfigjson: '{DOCKERCFG}'}}
- apiVersion: v1
  kind: Pod
  metadata: {{name: app, namespace: team-a, uid: p1}}
  spec:
    nodeName: node-1
    serviceAccountName: sa
    imagePullSecrets: [{{name: regcred}}]
    containers: [{{name: c, image: registry.io/app:v1}}]
    volumes: [{{name: v, secret: {{secretName: regcred}}}}]
""".encode()

RECORD = json.dumps(
    {
        "kind": "ImagePulledRecord",
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "lastUpdatedTime": "2024-10-21T12:26:40Z",
        "imageRef": "sha256:" + "5e" * 32,
        "credentialMapping": {
            "docker.io/a/b": {
                "kubernetesSecrets": [
                    {"uid": "u", "namespace": "n", "name": "s", "credentialHash": "h"}
                ]
            }
        },
    }
).encode()

SCENARIO = (ROOT / "config" / "simulate-rotation.yaml").read_bytes()


def mutate(rng: random.Random, seed: bytes) -> bytes:
    data = bytearray(seed)
    for _ in range(rng.randint(1, 3)):
        choice = rng.random()
        at = rng.randrange(len(data) + 1)
        if choice < 0.45:  # splice a hostile token in (replacing a few bytes)
            end = min(len(data), at + rng.randint(0, 8))
            data[at:end] = rng.choice(TOKENS)
        elif choice < 0.7 and data:
            data[min(at, len(data) - 1)] = rng.randrange(256)
        elif choice < 0.85:
            del data[at:]
        else:
            chunk = data[at : at + rng.randint(1, 40)]
            data[at:at] = chunk
    return bytes(data)


class Hang(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise Hang()


def run_cli(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(ROUND_SECONDS)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return code, out.getvalue() + err.getvalue()


def _decode_response(path: Path, _: Path) -> tuple[int, str]:
    plugin = ExecPlugin("p", "/bin/true", V1)
    try:
        plugin.decode(path.read_bytes())
    except CredprovError as exc:
        return 1, str(exc)
    return 0, ""


def _records(path: Path, tmp: Path) -> list[list[str]]:
    pulled = tmp / "kubelet" / "image_manager" / "pulled"
    pulled.mkdir(parents=True, exist_ok=True)
    (pulled / cache_filename("sha256:" + "5e" * 32)).write_bytes(path.read_bytes())
    root = str(tmp / "kubelet")
    return [
        ["pull-records", "verify", "--root-dir", root, "-o", "json"],
        ["pull-records", "list", "--root-dir", root],
        ["pull-records", "show", "sha256:" + "5e" * 32, "--root-dir", root, "-o", "json"],
        ["pull-records", "migrate", "--root-dir", root, "--dry-run"],
    ]


def _cfg(tmp: Path) -> Path:
    path = tmp / "good-config.yaml"
    if not path.exists():
        path.write_bytes(CONFIG)
    return path


# seed name -> (seed bytes, file suffix, commands for the mutated file)
Commands = Callable[[Path, Path], list[list[str]]]
SEEDS: dict[str, tuple[bytes, str, Commands]] = {
    "config-yaml": (
        CONFIG,
        ".yaml",
        lambda p, t: [
            ["config", "validate", str(p)],
            ["config", "validate", str(p), "-o", "json"],
            ["explain", "a.nomatch.invalid/x", "--config", str(p)],
        ],
    ),
    "config-json": (
        CONFIG_JSON,
        ".json",
        lambda p, t: [["config", "validate", str(p), "-o", "json"]],
    ),
    "pull-secret": (
        PULL_SECRET,
        ".yaml",
        lambda p, t: [
            [
                "get-credentials",
                "registry.io/app",
                "--config",
                str(_cfg(t)),
                "--bin-dir",
                BIN_DIR,
                "--pull-secret",
                str(p),
                "-o",
                output,
            ]
            for output in ("text", "json")
        ],
    ),
    "docker-config": (
        DOCKERCFG.encode(),
        ".json",
        lambda p, t: [
            [
                "get-credentials",
                "registry.io/app",
                "--config",
                str(_cfg(t)),
                "--bin-dir",
                BIN_DIR,
                "--node-docker-config",
                str(p),
                "-o",
                output,
            ]
            for output in ("text", "json")
        ],
    ),
    "objects": (
        OBJECTS,
        ".yaml",
        lambda p, t: [
            ["nodeauth", "audit", "--objects", str(p), "--node", "node-1"],
            ["nodeauth", "audit", "--objects", str(p), "--node", "node-1", "-o", "json"],
            [
                "nodeauth",
                "check",
                "--objects",
                str(p),
                "--user",
                "system:node:node-1",
                "--verb",
                "get",
                "--resource",
                "secrets",
                "-n",
                "team-a",
                "--name",
                "regcred",
            ],
            [
                "get-credentials",
                "--config",
                str(_cfg(t)),
                "--bin-dir",
                BIN_DIR,
                "--objects",
                str(p),
                "--pod",
                "team-a/app",
                "-o",
                "json",
            ],
        ],
    ),
    "record": (RECORD, "", _records),
    "scenario": (SCENARIO, ".yaml", lambda p, t: [["simulate", str(p), "-o", "json"]]),
}


@pytest.mark.parametrize("seed_name", sorted([*SEEDS, "response"]))
def test_mutated_inputs_never_crash_hang_or_leak(seed_name: str, tmp_path: Path) -> None:
    rng = random.Random(f"{SEED}-{seed_name}")
    failures: list[str] = []
    rounds = max(1, ROUNDS)
    for round_no in range(rounds):
        work = tmp_path / f"r{round_no}"
        work.mkdir()
        if seed_name == "response":
            data = mutate(rng, RESPONSE)
            path = work / "response.json"
            path.write_bytes(data)
            try:
                results = [_decode_response(path, work)]
            except Exception as exc:  # a decode bug, not a PluginError
                failures.append(
                    f"round {round_no}: Exception {type(exc).__name__} on {data[:200]!r}"
                )
                continue
        else:
            seed, suffix, commands = SEEDS[seed_name]
            data = mutate(rng, seed)
            path = work / f"input{suffix}"
            path.write_bytes(data)
            results = []
            for argv in commands(path, work):
                try:
                    results.append(run_cli(argv))
                except Hang:
                    failures.append(f"round {round_no}: hang in {argv[:2]} on {data[:200]!r}")
        for code, output in results:
            if code == 70 or "Traceback" in output:
                failures.append(f"round {round_no}: exit {code} {output[:300]!r} on {data[:300]!r}")
            if CANARY in output:
                failures.append(f"round {round_no}: canary in output {output[:300]!r}")
    kinds = {
        k: sum(f.split(": ", 1)[1].startswith(k) for f in failures)
        for k in ("exit", "hang", "canary", "Exception")
    }
    print(f"fuzz {seed_name}: {rounds} rounds, failures {len(failures)} {kinds}")
    assert failures == [], f"{len(failures)} of {rounds} rounds failed:\n" + "\n".join(
        failures[:10]
    )


def test_the_seeds_themselves_are_valid(tmp_path: Path) -> None:
    """The fuzz starts from inputs credprov accepts (so mutations explore near valid ones)."""
    assert run_cli(["config", "validate", str(_cfg(tmp_path))])[0] == 0
    (tmp_path / "o.yaml").write_bytes(OBJECTS)
    assert (
        run_cli(["nodeauth", "audit", "--objects", str(tmp_path / "o.yaml"), "--node", "node-1"])[0]
        == 0
    )
    (tmp_path / "s.yaml").write_bytes(PULL_SECRET)
    code, output = run_cli(
        ["get-credentials", "registry.io/app", "--config", str(_cfg(tmp_path)),
         "--bin-dir", BIN_DIR, "--pull-secret", str(tmp_path / "s.yaml")]
    )  # fmt: skip
    assert code == 0 and "secret:default/regcred" in output and CANARY not in output
    resp = ExecPlugin("p", "/bin/true", V1).decode(RESPONSE)
    assert resp.auth["registry.io"] == internal.AuthConfig("u", CANARY)
