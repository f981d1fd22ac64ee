"""Entry point of ``ecr-credential-provider`` (kept tiny: the warm path runs through it).

Only the standard library and :mod:`credprov.sdk` are imported here; the AWS SDK (boto3's
botocore) is imported by ``credprov_ecr.plugin`` on a cache miss only.

Command line: upstream's binary is a cobra command without flags of its own, so it accepts
``--version`` (``-v`` is cobra's shorthand for it; ``--version=false`` is a no-op),
``-h``/``--help``, and ignores positional arguments (``get-credentials`` in kops-era
configs). All of that is accepted here too: :func:`normalize_argv` settles what ``-v``
means, and :func:`credprov.sdk.run` reads the rest with the SDK's pflag parser. ``-v N``/
``--v=N`` (a number) is klog-style verbosity, which upstream rejects, so no working upstream
config can mean anything else by it.
"""

import os
import sys

from credprov.base.hashing import sha256  # not hashlib: that loads OpenSSL (~3 ms a start)
from credprov.sdk import Option, run

# collections.abc imports the collections package (~2 ms in the frozen runtime): the
# annotation needs it only for type checkers.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

NAME = "ecr-credential-provider"

#: The option carrying the AWS environment's fingerprint (set here, not by the user).
SCOPE_OPTION = "aws-environment"

OPTIONS = [
    Option(
        SCOPE_OPTION,
        help="set by the plugin itself: a hash of its AWS_* environment, so that cached "
        "answers never cross roles, profiles, regions or endpoints",
    ),
]

_VERSION_WORDS = ("t", "T", "TRUE", "true", "True", "f", "F", "FALSE", "false", "False")


def normalize_argv(argv: list[str]) -> list[str]:
    """Settle what ``-v`` means (see the module docstring); the SDK's parser does the rest.

    ``-v`` alone or before a word that is not a number, and ``-v=<bool>``, are cobra's
    ``--version``; ``-v N``, ``-vN`` and ``-v=N`` are klog's verbosity. Everything else is
    passed on as it is, so that the SDK refuses unknown flags (exit 2) as cobra does.
    """
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg == "--":
            out += argv[i:]  # the rest is positional
            break
        if arg == "-v" and not (i + 1 < len(argv) and argv[i + 1].isdigit()):
            out.append("--version")  # cobra: -v is --version
        elif arg.startswith("-v=") and arg[3:] in _VERSION_WORDS:
            out.append(f"--version={arg[3:]}")
        else:
            out.append(arg)
    return out


def environment_fingerprint(environ: "Mapping[str, str]") -> str:
    """A hash of every ``AWS_*`` variable: the answers' scope in the plugin cache."""
    digest = sha256()
    for key in sorted(k for k in environ if k.startswith("AWS_")):
        digest.update(f"{key}={environ[key]}\0".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:32]


def main() -> int:
    """Run the plugin once (``sys.exit(main())``)."""
    argv = normalize_argv(sys.argv[1:])
    argv += [f"--{SCOPE_OPTION}={environment_fingerprint(os.environ)}"]
    return run(
        "credprov_ecr.plugin:provide",
        name=NAME,
        description="Amazon ECR credentials for the kubelet: GetAuthorizationToken for the "
        "image's registry (private ECR in every partition, or ECR Public), optionally as "
        "the role of the pod's service account (eks.amazonaws.com/ecr-role-arn, "
        "AWS_ECR_ROLE_ARN). Positional arguments are ignored, as upstream.",
        options=OPTIONS,
        cache=True,
        argv=argv,
        # Upstream decodes the request, then refuses an empty image with this text.
        empty_image_error="image in plugin request was empty",
        allow_args=True,  # positional arguments are ignored, as upstream
    )
