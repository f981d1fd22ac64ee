"""The doctor's report: its findings grouped by check, the node's setup, and how they print.

The model is the one every checking tool shares (:mod:`credprov.base.report`: ``Status``,
``Finding``, the report base); this module adds the node's setup to it, the order and headings
of the checks (:data:`GROUPS`) and the README's text layout. Every string :func:`render_text`
takes from the node or a finding goes through :func:`credprov.base.report.text`, so a value
from a node file (a hostname, a flag, a ``/proc`` command line, a provider name) prints on
the line it belongs to, with its controls escaped: one finding is one line, plus at most one
hint line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from credprov.base import report as base
from credprov.base.report import Finding, Status, status_label, text

__all__ = ["GROUPS", "SUMMARY_ORDER", "Finding", "Report", "Status", "render_text"]

#: Check id -> the heading it is printed under (in this order).
GROUPS: dict[str, str] = {
    "kubelet.flags": "kubelet",
    "kubelet.go": "kubelet",
    "feature-gates": "kubelet",
    "provider-config.valid": "provider config",
    "provider-config.lint": "provider config",
    "bin-dir.exec": "plugins",
    "plugin.present": "plugins",
    "plugin.runnable": "plugins",
    "plugin.responds": "plugins",
    "image.match": "images",
    "runtime.mirrors": "container runtime",
    "pull-policy.valid": "KEP-2535 ensure secret-pulled images",
    "pull-records.health": "KEP-2535 ensure secret-pulled images",
    "kep2535.preflight": "KEP-2535 ensure secret-pulled images",
    "kep4412.rbac": "KEP-4412 service-account tokens",
}


#: The order of ``summary`` in the doctor's JSON (and of the text's last line).
SUMMARY_ORDER = (Status.PASS, Status.WARN, Status.FAIL, Status.SKIP)


@dataclass
class Report(base.Report[Finding]):
    """What :func:`credprov.doctor.run_doctor` found.

    ``node`` is the node's effective setup as :meth:`credprov.doctor.discovery.KubeletSetup.to_dict`
    gives it (each value with its source, ``featureGates``, ``notes``); ``checks`` the
    findings in the order the checks ran.
    """

    node: dict[str, Any]
    checks: list[Finding] = field(default_factory=list)

    def summary(self) -> dict[str, int]:
        """``{"pass": n, "warn": n, "fail": n, "skip": n}``."""
        return self.counts(SUMMARY_ORDER)

    def to_dict(self) -> dict[str, Any]:
        """The report as ``-o json`` prints it: ``node``, ``checks``, ``summary``."""
        return {
            "node": self.node,
            "checks": [c.to_dict() for c in self.checks],
            "summary": self.summary(),
        }


#: The heading of findings whose check is not in :data:`GROUPS`, printed last.
OTHER_GROUP = "other"


def render_text(report: Report, colour: bool = False) -> str:
    """The README's layout: the node's setup, then one line per finding under its group's
    heading (plus its hint when it failed or warned), the summary last.

    Every key, value, source, note, subject, message and hint is printed through
    :func:`~credprov.base.report.text`, so nothing from the node reaches the terminal raw
    and no value can add a line. ``colour`` paints the status labels.
    """
    lines: list[str] = ["node"]
    for key, value in report.node.items():
        if isinstance(value, dict) and "value" in value and "source" in value:
            shown = value["value"]
            if isinstance(shown, list):
                shown = ", ".join(str(v) for v in shown) or "[]"
            lines.append(f"  {text(key)}: {text(shown)}  ({text(value['source'])})")
        elif key == "featureGates" and isinstance(value, dict):
            for gate, v in value.items():
                shown = text(str(v["value"]).lower())
                lines.append(f"  featureGates.{text(gate)}: {shown}  ({text(v['source'])})")
        elif key == "notes":
            lines.extend(f"  note: {text(note)}" for note in value)
        elif value is not None and not isinstance(value, dict):
            lines.append(f"  {text(key)}: {text(value)}")
    groups = list(dict.fromkeys(GROUPS.values()))
    groups.append(OTHER_GROUP)  # a check missing from GROUPS still prints
    for group in groups:
        findings = [c for c in report.checks if GROUPS.get(c.id, OTHER_GROUP) == group]
        if not findings:
            continue
        lines.append("")
        lines.append(group)
        for c in findings:
            subject = f" [{text(c.subject)}]" if c.subject else ""
            label = status_label(c.status, colour)
            lines.append(f"  {label} {text(c.id)}{subject}: {text(c.message)}")
            if c.hint and c.status in (Status.FAIL, Status.WARN):
                lines.append(f"       hint: {text(c.hint)}")
    s = report.summary()
    lines.append("")
    lines.append(
        f"{s['pass']} pass, {s['warn']} warn, {s['fail']} fail"
        + (f", {s['skip']} skip" if s["skip"] else "")
    )
    return "\n".join(lines) + "\n"
