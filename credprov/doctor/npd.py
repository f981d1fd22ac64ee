"""The doctor as a node-problem-detector custom plugin (``doctor --npd``).

node-problem-detector's custom plugin monitor (``pkg/custompluginmonitor`` in
kubernetes/node-problem-detector) runs a rule's ``path`` with its ``args`` every
``invoke_interval``, kills it at the rule's ``timeout``, and reads two things: the exit
status (0 OK, 1 a problem, anything else unknown) and stdout, of which it keeps the first
4 KiB, trims the surrounding white space and cuts the rest at ``max_output_length`` bytes
(80 unless the config says otherwise; a cut in bytes can split a UTF-8 character). For a
``permanent`` rule that message becomes the Node condition's message while the problem
lasts; for a ``temporary`` rule, the event's. stderr only reaches NPD's own log.

So the plugin prints one line of at most :data:`MAX_MESSAGE` ASCII characters: which check
failed and about what (never a finding's message or hint, which may quote what a plugin
said; subjects are already redacted by the doctor), or the summary when nothing failed.
Exit statuses: :data:`OK` when no check failed (warnings included: NPD has no "warn"),
:data:`PROBLEM` when one did, :data:`UNKNOWN` when the doctor could not judge the node (an
option or node root it cannot use, a run that crashed).
"""

from __future__ import annotations

from credprov.doctor.report import Report

__all__ = ["MAX_MESSAGE", "OK", "PROBLEM", "UNKNOWN", "bounded", "unknown", "verdict"]

#: NPD's custom plugin protocol: the plugin's exit statuses.
OK = 0
PROBLEM = 1
UNKNOWN = 2

#: NPD's default ``max_output_length`` (``pluginConfig``): longer output is cut there.
MAX_MESSAGE = 80
_ELLIPSIS = "..."


def bounded(message: str, limit: int = MAX_MESSAGE) -> str:
    """``message`` as one line of printable ASCII (anything else escaped, white space runs
    folded to one space), at most ``limit`` characters: its middle left out beyond."""
    from credprov.base.redact import shorten
    from credprov.base.report import text

    line = " ".join(text(message).split())
    line = line.encode("ascii", "backslashreplace").decode("ascii")
    return shorten(line, limit)


def verdict(report: Report) -> tuple[int, str]:
    """The exit status and the stdout line for ``report``."""
    failures = report.failures()
    if not failures:
        s = report.summary()
        summary = f"{s['pass']} pass, {s['warn']} warn, {s['fail']} fail"
        return OK, bounded(f"credprov doctor: no check failed ({summary})")
    first = failures[0]
    more = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
    head = f"{first.id} failed"
    if first.subject:
        # The subject gives way first: the check id and the count always show.
        room = MAX_MESSAGE - len(head) - len(" for ") - len(more)
        subject = bounded(first.subject, max(room, len(_ELLIPSIS) + 1))
        head += f" for {subject}"
    return PROBLEM, bounded(head + more)


def unknown(reason: str) -> tuple[int, str]:
    """The exit status and the stdout line when the doctor could not judge the node:
    ``reason`` is the error's one line (never a secret: :mod:`credprov.errors`)."""
    return UNKNOWN, bounded(f"credprov doctor could not run: {reason}")
