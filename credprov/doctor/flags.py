"""Command lines and environment files as the kubelet and systemd read them.

* :func:`parse_flags`: pflag's long-flag syntax, ``--name=value`` and ``--name value``
  (also with one dash), the later occurrence of a flag winning; ``--feature-gates`` is a
  map flag, so its occurrences merge. Only the value flags the doctor reads are taken with
  a following word; any other ``--flag word`` is ambiguous without the kubelet's flag table
  and is read as a value too (the kubelet has no positional arguments, so a stray word can
  only be a value).
* :func:`parse_unit`: the ``[Service]`` assignments of a systemd unit or drop-in
  (``Environment=`` with quoted ``"A=b c"`` words, ``EnvironmentFile=`` with its ``-``
  prefix, ``ExecStart=`` where an empty assignment resets the list), with ``\\``
  line continuations and ``#``/``;`` comments.
* :func:`parse_env_file`: ``KEY=VALUE`` lines of an ``EnvironmentFile=`` (quotes removed,
  comments and blank lines skipped, the later assignment winning).
* :func:`expand_exec`: ``ExecStart=`` words with ``$VAR`` (split on whitespace into
  several words) and ``${VAR}`` (one word) substituted, as systemd does.

Hand-written because no maintained library parses systemd's unit syntax for Python
(``configparser`` rejects repeated keys and knows neither continuations nor ``-`` files) and
pflag's rules are a few lines.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "UnitSettings",
    "expand_exec",
    "parse_env_file",
    "parse_flags",
    "parse_unit",
    "split_words",
]

_MAP_FLAGS = frozenset({"feature-gates"})
#: Repeatable flags: every occurrence kept, joined with a newline (k3s/RKE2 ``--kubelet-arg``).
_REPEATED_FLAGS = frozenset({"kubelet-arg"})


def parse_flags(argv: Iterable[tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """``name -> (value, origin)`` of every ``--name[=value]`` in ``argv`` (later wins).

    ``argv`` holds ``(word, origin)`` pairs, the origin saying where the word came from (a
    ``/proc`` cmdline, an environment variable of a unit). Bare flags
    (``--rotate-certificates``) map to ``"true"``; ``--feature-gates`` occurrences are
    joined with ``,`` so that later entries win gate by gate.
    """
    words = list(argv)
    flags: dict[str, tuple[str, str]] = {}
    i = 0
    while i < len(words):
        word, origin = words[i]
        i += 1
        if not word.startswith("-") or word in ("-", "--"):
            continue
        name, eq, value = word.lstrip("-").partition("=")
        if not eq:
            if i < len(words) and not words[i][0].startswith("-"):
                value = words[i][0]
                i += 1
            else:
                value = "true"
        if name in _MAP_FLAGS and name in flags:
            flags[name] = (f"{flags[name][0]},{value}", origin)
        elif name in _REPEATED_FLAGS and name in flags:
            flags[name] = (f"{flags[name][0]}\n{value}", origin)
        else:
            flags[name] = (value, origin)
    return flags


def split_words(text: str) -> list[str]:
    """Shell-like words (systemd's quoting is close enough to POSIX for unit values)."""
    try:
        return shlex.split(text, comments=False, posix=True)
    except ValueError:
        return text.split()


@dataclass
class UnitSettings:
    """What a unit file (and its drop-ins, applied in order) sets in ``[Service]``."""

    environment: list[tuple[str, str, str]] = field(default_factory=list)  # (name, value, file)
    environment_files: list[tuple[str, bool]] = field(default_factory=list)  # (path, optional)
    exec_start: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)


def _logical_lines(text: str) -> Iterable[str]:
    pending = ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if not pending and line.lstrip().startswith(("#", ";")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def parse_unit(text: str, settings: UnitSettings, source: str) -> None:
    """Apply one unit file or drop-in's ``[Service]`` section to ``settings``."""
    section = ""
    settings.sources.append(source)
    for line in _logical_lines(text):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("[") and stripped.endswith("]"):
            section = stripped[1:-1]
            continue
        if section != "Service" or "=" not in stripped:
            continue
        key, _, value = stripped.partition("=")
        key, value = key.strip(), value.strip()
        if key == "Environment":
            if not value:
                settings.environment.clear()
                continue
            for word in split_words(value):
                name, eq, val = word.partition("=")
                if eq:
                    settings.environment.append((name, val, source))
        elif key == "EnvironmentFile":
            if not value:
                settings.environment_files.clear()
                continue
            optional = value.startswith("-")
            settings.environment_files.append((value.lstrip("-"), optional))
        elif key == "ExecStart":
            # An empty ExecStart= resets; for a simple service the last one is what runs.
            settings.exec_start = split_words(value.lstrip("-@:+!")) if value else []


_ENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$")


def parse_env_file(text: str) -> list[tuple[str, str]]:
    """The assignments of an environment file, in order."""
    out: list[tuple[str, str]] = []
    for line in _logical_lines(text):
        match = _ENV_LINE.match(line)
        if not match:
            continue
        name, raw = match.groups()
        raw = raw.strip()
        if raw[:1] in ("'", '"'):
            words = split_words(raw)
            value = words[0] if words else ""
        else:
            value = raw
        out.append((name, value))
    return out


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def expand_exec(
    words: Sequence[str], env: Mapping[str, tuple[str, str]], origin: str
) -> list[tuple[str, str]]:
    """``ExecStart=`` words with the environment substituted as systemd does.

    ``env`` maps a variable to ``(value, where it was set)``; each resulting word carries
    its origin: ``$VAR from <where>`` for words that came from a variable, else ``origin``.
    """
    out: list[tuple[str, str]] = []
    for word in words:
        whole = re.fullmatch(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", word)
        if whole and (word.startswith("${") == word.endswith("}")):
            value, where = env.get(whole.group(1), ("", ""))
            label = f"${whole.group(1)} from {where}" if where else origin
            if word.startswith("${"):
                out.append((value, label))
            else:  # $VAR alone: split into words
                out.extend((part, label) for part in value.split())
            continue
        out.append(
            (_VAR.sub(lambda m: env.get(m.group(1) or m.group(2), ("", ""))[0], word), origin)
        )
    return out
