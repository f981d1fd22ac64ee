"""Entry point of ``ecr-credential-provider`` (kept tiny: the warm path runs through it).

Only the standard library and :mod:`credprov.sdk` are imported here; the AWS SDK (boto3's
botocore) is imported by ``credprov_ecr.plugin`` on a cache miss only.

Command line: upstream's binary is a cobra command without flags of its own, so it accepts
``--version`` (``-v`` is cobra's shorthand for it; ``--version=false`` is a no-op),
``-h``/``--help``, and ignores positional arguments (``get-credentials`` in kops-era
configs). All of that is accepted here too, and mapped onto the SDK's options before
:func:`credprov.sdk.run` sees them; ``-v N``/``--v=N`` (a number) is klog-style verbosity,
which upstream rejects, so no working upstream config can mean anything else by it.
"""

import hashlib
import os
import sys
from collections.abc import Mapping

from credprov._go.strconv import FALSE_WORDS, TRUE_WORDS
from credprov.sdk import Option, run

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

_TRUE = tuple(sorted(TRUE_WORDS))
_FALSE = tuple(sorted(FALSE_WORDS))
_WORDS = tuple(v for v in _TRUE + _FALSE if not v.isdigit())


def normalize_argv(argv: list[str]) -> list[str]:
    """Upstream's (cobra) command line → the SDK's: see the module docstring.

    Unknown flags are passed through, so the SDK refuses them (exit 2) as cobra does.
    """
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--":
            break  # the rest is positional
        name, eq, value = arg.partition("=")
        if eq and (
            (name == "--version" and value in _TRUE + _FALSE)
            or (name == "-v" and value in _WORDS)  # -v=1 is verbosity, as klog reads it
        ):
            if value in _TRUE:
                out.append("--version")
        elif name in ("--help", "-h") and eq and value in _TRUE + _FALSE:
            if value in _TRUE:
                out.append("--help")
        elif arg == "-v" and not (i < len(argv) and argv[i].isdigit()):
            out.append("--version")  # cobra: -v is --version
        elif arg in ("-v", "--v") and i < len(argv):
            out.extend((arg, argv[i]))  # verbosity and its number
            i += 1
        elif arg.startswith("-") and arg != "-":
            out.append(arg)
        # else: a positional argument, ignored as upstream does
    return out


def environment_fingerprint(environ: Mapping[str, str]) -> str:
    """A hash of every ``AWS_*`` variable: the answers' scope in the plugin cache."""
    digest = hashlib.sha256()
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
    )
