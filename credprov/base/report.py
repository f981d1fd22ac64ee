"""The verdict model every checking tool shares: ``credprov doctor`` and ``credprov plugin test``.

One :class:`Status`, one record (:class:`Finding`: what was checked, the verdict, what it is
about, why, and what to do), and one report base (:class:`Report`: the findings in order,
their counts, ``ok``/``failed``, redaction by label). Each tool's report is a dataclass that
subclasses :class:`Report` with the facts of its own run (the doctor's node, the plugin
harness's binary and deadline) and keeps its own documented JSON and text layout; both are
pinned by tests and shown in the README, which is why the layouts stay the tools' own while
everything under them is shared.

Statuses: ``fail`` is what makes the kubelet exit, reject an answer or stop a pod from
starting; ``warn`` what works today but is likely wrong; ``skip`` a check that could not or
was asked not to run.

Text output goes through :func:`text`, the one sanitiser (:func:`credprov.base.redact.terminal_safe`
without folding): a node file or a plugin's answer may hold a newline, a carriage return, an
escape sequence or a bidirectional control, and printed raw it would forge a line ("a
newline in a cmdline forged three PASS lines"), recolour or reorder it. Every string a
renderer takes from a finding or from the node goes through it, so a finding is always one
line. JSON keeps the exact values (the encoder escapes them).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Self, TypeVar

from credprov.base.redact import Redactor, terminal_safe

__all__ = ["Finding", "Report", "Status", "status_label", "text"]


class Status(enum.StrEnum):
    """A check's verdict; ``str()`` is its JSON spelling (``pass``, ``fail``, ...)."""

    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"
    SKIP = "skip"


@dataclass(frozen=True)
class Finding:
    """One verdict of one check.

    ``id`` names the check (``plugin.responds``, ``cacheKeyType``), ``subject`` what it is
    about (a provider, a path; empty when the check is about the whole), ``message`` why
    the verdict is what it is, ``hint`` what to do about it (shown for ``fail`` and
    ``warn``). All four may quote untrusted text: render them with :func:`text`.
    """

    id: str
    status: Status
    subject: str = ""
    message: str = ""
    hint: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The finding as JSON: ``id``, ``status``, ``subject``, ``message``, ``hint``."""
        return {
            "id": self.id,
            "status": str(self.status),
            "subject": self.subject,
            "message": self.message,
            "hint": self.hint,
        }

    def scrubbed(self, scrub: Callable[[str], str]) -> Self:
        """This finding with ``scrub`` applied to every free-text field."""
        return dataclasses.replace(
            self, subject=scrub(self.subject), message=scrub(self.message), hint=scrub(self.hint)
        )


FindingT = TypeVar("FindingT", bound=Finding)


class Report(Generic[FindingT]):
    """The findings of one run, in order, and what can be said of them all.

    Not a dataclass itself: each tool's report is one, declaring ``checks`` after its own
    fields so that its constructor keeps its positional order.
    """

    checks: list[FindingT]

    def count(self, status: Status) -> int:
        """How many findings have ``status``."""
        return sum(1 for c in self.checks if c.status == status)

    def counts(self, order: Iterable[Status] = tuple(Status)) -> dict[str, int]:
        """``{status: count}`` for every status, in ``order`` (JSON object order)."""
        return {str(status): self.count(status) for status in order}

    @property
    def ok(self) -> bool:
        """No finding failed."""
        return self.count(Status.FAIL) == 0

    @property
    def failed(self) -> bool:
        """At least one finding failed."""
        return not self.ok

    def failures(self) -> list[FindingT]:
        """The failed findings, in order."""
        return [c for c in self.checks if c.status == Status.FAIL]

    def by_id(self, check_id: str) -> list[FindingT]:
        """The findings of check ``check_id``, in order."""
        return [c for c in self.checks if c.id == check_id]

    def redact(self, secrets: Mapping[str, str]) -> None:
        """Replace every known secret value (in every JSON spelling) by its label.

        ``secrets`` maps a value to the label shown in its place, such as
        ``<env AWS_CONFIG_FILE of provider ecr>``: the reader learns which secret a message
        quoted, never its value. Values shorter than
        :data:`credprov.base.redact.MIN_SCRUB_LENGTH` are left alone (replacing ``1`` would
        garble every number).
        """
        scrub = Redactor()
        for value, label in secrets.items():
            scrub.add(value, label)
        if scrub:
            self.checks = [c.scrubbed(scrub) for c in self.checks]


# -- text ----------------------------------------------------------------------------------------

_COLOURS = {
    Status.PASS: "\033[32m",
    Status.WARN: "\033[33m",
    Status.FAIL: "\033[31m",
    Status.SKIP: "\033[2m",
}
_RESET = "\033[0m"


def text(value: object) -> str:
    """``value`` as one terminal-safe line: controls, escape sequences, bidirectional
    controls and line breaks shown as escapes (``\\n``, ``\\x1b``, ``\\u202e``)."""
    return terminal_safe(str(value), fold_lines=False)


def status_label(status: Status, colour: bool = False) -> str:
    """``PASS``, ``FAIL``, ``WARN`` or ``SKIP``; in the status's colour with ``colour``."""
    label = str(status).upper()
    return f"{_COLOURS[status]}{label}{_RESET}" if colour else label
