"""The root of every error credprov raises for bad input or a failing environment.

Each package's errors derive from :class:`CredprovError` (many also from ``ValueError`` or
``OSError``, so older ``except`` clauses keep working). ``str()`` of any of them is one
line meant for the user and never quotes a secret. The CLI catches this root, prints
``credprov: error: <message>`` and exits 1 (2 for a :class:`UsageError`); any other
exception is a bug in credprov and exits 70 ("internal error").

The exit statuses every command uses are named here (``EXIT_*``), once, so the credprov CLI,
the standalone doctor and the bundle's tools agree on them.
"""

from __future__ import annotations

#: Success (a check that finds nothing wrong, an image that is ready, a request allowed).
EXIT_OK = 0
#: The command ran and the answer is "no": a check failed, an image is not ready, an error
#: the user can act on (:class:`CredprovError`).
EXIT_FAILURE = 1
#: The command line (or a file it names) cannot be used: argparse's errors and
#: :class:`UsageError`.
EXIT_USAGE = 2
#: A bug in credprov: an exception outside the error root (BSD's ``EX_SOFTWARE``).
EXIT_INTERNAL = 70
#: Interrupted (Ctrl-C): 128 + SIGINT, as a shell reports it.
EXIT_INTERRUPTED = 130
#: stdout closed under us (``credprov ... | head``): 128 + SIGPIPE, as a shell reports it.
EXIT_BROKEN_PIPE = 141


class CredprovError(Exception):
    """Base class of credprov's user-facing errors.

    ``hint`` is an optional second line (what to check or do), printed by the CLI as
    ``credprov: hint: ...``; it keeps messages that must stay byte-identical to the
    kubelet's (which may omit the path) useful.
    """

    hint: str = ""

    def with_hint(self, hint: str) -> CredprovError:
        """Set :attr:`hint` and return the error, for ``raise Error(...).with_hint(...)``."""
        self.hint = hint
        return self


class UsageError(CredprovError, ValueError):
    """The command was asked something it cannot use: an option value or file that does not
    do (an unreadable ``--objects`` file, a ``--root-dir`` that is not a directory). The one
    usage error of the library: the CLI prints it as one line and exits 2, as for the
    argument errors argparse reports. (Also a ``ValueError``, as the doctor's was.)"""


# One base per package, so a caller can catch one package's errors; each message is still
# one line for the user. (CLIError, KubeletError and CRIError are their packages' bases.)


class GoError(CredprovError):
    """Go emulation (:mod:`credprov._go`): URL, duration and decoding errors with Go's text."""


class FileError(CredprovError):
    """Files credprov reads or writes (:mod:`credprov.base.fileio`)."""


class CredentialProviderError(CredprovError):
    """Credential providers (:mod:`credprov.credentialprovider`): configs, images, the
    keyring, plugins and their answers."""


class PullManagerError(CredprovError):
    """KEP-2535 pull records and policies (:mod:`credprov.pullmanager`)."""


class PluginSDKError(CredprovError):
    """The plugin SDK (:mod:`credprov.sdk`): a plugin's refusal, a bad command line or
    request, an unusable answer cache. Plugins' own errors derive from the SDK's
    :class:`credprov.sdk.ProviderError`."""


class NodeAccessError(CredprovError):
    """The node's access to the API server (:mod:`credprov.nodeauth`)."""
