"""The doctor's findings: one :class:`Finding` per check and subject, and how they print.

Statuses are the conformance harness's (:class:`credprov.credentialprovider.plugin.conformance.Status`): ``fail`` is
what makes the kubelet exit or a pod stop starting, ``warn`` what works today but is likely
wrong, ``skip`` a check that could not or was asked not to run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from credprov.credentialprovider.plugin.conformance import Status

__all__ = ["GROUPS", "Finding", "Report", "Status", "render_text"]

#: Check id -> the heading it is printed under (in this order).
GROUPS: dict[str, str] = {
    "kubelet.flags": "kubelet",
    "feature-gates": "kubelet",
    "provider-config.valid": "provider config",
    "provider-config.lint": "provider config",
    "bin-dir.exec": "plugins",
    "plugin.present": "plugins",
    "plugin.runnable": "plugins",
    "plugin.responds": "plugins",
    "image.match": "images",
    "pull-policy.valid": "KEP-2535 ensure secret-pulled images",
    "pull-records.health": "KEP-2535 ensure secret-pulled images",
    "kep2535.preflight": "KEP-2535 ensure secret-pulled images",
    "kep4412.rbac": "KEP-4412 service-account tokens",
}


@dataclass(frozen=True)
class Finding:
    id: str
    status: Status
    subject: str
    message: str
    hint: str = ""

    def to_dict(self) -> dict[str, str]:
        return {
            "id": self.id,
            "status": str(self.status),
            "subject": self.subject,
            "message": self.message,
            "hint": self.hint,
        }


@dataclass
class Report:
    node: dict[str, Any]
    checks: list[Finding] = field(default_factory=list)

    def count(self, status: Status) -> int:
        return sum(1 for c in self.checks if c.status == status)

    @property
    def failed(self) -> bool:
        return self.count(Status.FAIL) > 0

    def summary(self) -> dict[str, int]:
        return {str(s): self.count(s) for s in (Status.PASS, Status.WARN, Status.FAIL, Status.SKIP)}

    def by_id(self, check_id: str) -> list[Finding]:
        return [c for c in self.checks if c.id == check_id]

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "checks": [c.to_dict() for c in self.checks],
            "summary": self.summary(),
        }

    def redact(self, secrets: Iterable[str]) -> None:
        """Replace every known secret value in every message and hint."""
        values = sorted({s for s in secrets if s}, key=len, reverse=True)
        if not values:
            return

        def scrub(text: str) -> str:
            for value in values:
                text = text.replace(value, "<redacted>")
            return text

        self.checks = [
            Finding(c.id, c.status, scrub(c.subject), scrub(c.message), scrub(c.hint))
            for c in self.checks
        ]


_COLOURS = {
    Status.PASS: "\033[32m",
    Status.WARN: "\033[33m",
    Status.FAIL: "\033[31m",
    Status.SKIP: "\033[2m",
}
_RESET = "\033[0m"


def render_text(report: Report, colour: bool = False) -> str:
    """Grouped, one line per finding (plus its hint when it did not pass), a summary last."""
    paint: Callable[[Status, str], str] = (
        (lambda s, t: f"{_COLOURS[s]}{t}{_RESET}") if colour else (lambda s, t: t)
    )
    lines: list[str] = ["node"]
    for key, value in report.node.items():
        if isinstance(value, dict) and "value" in value and "source" in value:
            shown = value["value"]
            if isinstance(shown, list):
                shown = ", ".join(str(v) for v in shown) or "[]"
            lines.append(f"  {key}: {shown}  ({value['source']})")
        elif key == "featureGates" and isinstance(value, dict):
            for gate, v in value.items():
                lines.append(f"  featureGates.{gate}: {str(v['value']).lower()}  ({v['source']})")
        elif key == "notes":
            lines.extend(f"  note: {note}" for note in value)
        elif value is not None and not isinstance(value, dict):
            lines.append(f"  {key}: {value}")
    order = list(dict.fromkeys(GROUPS.values()))
    for group in order:
        findings = [c for c in report.checks if GROUPS.get(c.id, "other") == group]
        if not findings:
            continue
        lines.append("")
        lines.append(group)
        for c in findings:
            label = paint(c.status, f"{str(c.status).upper():4}")
            subject = f" [{c.subject}]" if c.subject else ""
            lines.append(f"  {label} {c.id}{subject}: {c.message}")
            if c.hint and c.status in (Status.FAIL, Status.WARN):
                lines.append(f"       hint: {c.hint}")
    s = report.summary()
    lines.append("")
    lines.append(
        f"{s['pass']} pass, {s['warn']} warn, {s['fail']} fail"
        + (f", {s['skip']} skip" if s["skip"] else "")
    )
    return "\n".join(lines) + "\n"
