"""credprov's ``net/url.Parse``, ``net.SplitHostPort`` and ``strconv.Quote`` against real Go,
one Go release per family of :mod:`credprov._go.version` (and 1.27 for its Unicode 17
tables): the table of :mod:`tests.differential.urlgen` plus generated strings. Accept or
refuse, every field and every error text must be equal.

The oracle runs with ``GODEBUG=urlstrictcolons=1``: a kubelet built with Go 1.26 has it by
default (Kubernetes' ``godebug default=go1.N`` follows the Go it builds with), the oracle,
built in GOPATH mode, would otherwise get Go 1.20's defaults. Older releases ignore it.

``CREDPROV_DIFF_LONG=N`` runs N generated strings per release (1 means 20,000) instead of
400, and more releases (1.21 to 1.23, and two of each family).
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from credprov._go import fmt, version
from credprov._go.url import AddrError, GoURLError, parse, split_host_port
from tests.differential import gotool, urlgen

pytestmark = pytest.mark.e2e

#: One release per family (see credprov._go.version), oldest first; 1.27.3 for Unicode 17.
QUICK = ["1.25.1", "1.25.2", "1.25.5", "1.26.0", "1.26.6", "1.27.3"]
#: More releases in the long run.
LONG = ["1.21.13", "1.22.10", "1.23.9", "1.24.3", "1.24.11", "1.25.3", "1.25.4", "1.26.1",
        "1.26.2", "1.27.0"]  # fmt: skip
RELEASES = QUICK + (LONG if gotool.LONG > 0 else [])

ENV = {"GODEBUG": "urlstrictcolons=1"}


def _text(value: str | None) -> str:
    return base64.b64decode(value or "").decode("utf-8", "surrogateescape")


def _go_parse(answer: dict[str, Any]) -> dict[str, Any]:
    if not answer["ok"]:
        return {"ok": False, "err": _text(answer["err"])}
    fields = ("scheme", "opaque", "host", "path", "rawQuery", "fragment")
    return {
        "ok": True,
        **{key: _text(answer.get(key)) for key in fields},
        "forceQuery": answer.get("forceQuery", False),
        "hasUser": answer.get("hasUser", False),
    }


def _our_parse(raw: str, release: str) -> dict[str, Any]:
    try:
        url = parse(raw, go_version=release)
    except GoURLError as exc:
        return {"ok": False, "err": str(exc)}
    return {
        "ok": True,
        "scheme": url.scheme,
        "opaque": url.opaque,
        "host": url.host,
        "path": url.path,
        "rawQuery": url.raw_query,
        "fragment": url.fragment,
        "forceQuery": url.force_query,
        "hasUser": url.has_user,
    }


def _go_split(answer: dict[str, Any]) -> tuple[str, ...]:
    if not answer["ok"]:
        return ("error", _text(answer["err"]))
    return (_text(answer.get("host")), _text(answer.get("port")))


def _our_split(hostport: str) -> tuple[str, ...]:
    try:
        return split_host_port(hostport)
    except AddrError as exc:
        return ("error", str(exc))


def _report(failures: list[str], total: int) -> None:
    assert not failures, f"{len(failures)} of {total} diverge:\n" + "\n".join(failures[:30])


@pytest.mark.parametrize("source", ["table", "generated"])
@pytest.mark.parametrize("release", RELEASES)
def test_parse_matches_go(release: str, source: str) -> None:
    urls = (
        urlgen.PARSE_TABLE
        if source == "table"
        else urlgen.generated_urls(gotool.case_count(400), seed=20261201)
    )
    go = gotool.oracle("url", release, ENV)
    answers = go.ask([{"op": "parse", "in": urlgen.to_go(url)} for url in urls])
    failures = []
    hosts = []
    for url, answer in zip(urls, answers, strict=True):
        want, got = _go_parse(answer), _our_parse(url, release)
        if got != want:
            failures.append(f"{url!r}:\n  go       {want}\n  credprov {got}")
        elif got["ok"]:
            hosts.append(got["host"])
    _report(failures, len(urls))
    # SplitURL runs net.SplitHostPort on every host url.Parse returns.
    split = go.ask([{"op": "split", "in": urlgen.to_go(host)} for host in hosts])
    failures = [
        f"{host!r}: go {_go_split(answer)}, credprov {_our_split(host)}"
        for host, answer in zip(hosts, split, strict=True)
        if _our_split(host) != _go_split(answer)
    ]
    _report(failures, len(hosts))


def test_split_host_port_matches_go() -> None:
    inputs = urlgen.SPLIT_TABLE + urlgen.generated_hostports(gotool.case_count(400), seed=7)
    answers = gotool.oracle("url", QUICK[-1], ENV).ask(
        [{"op": "split", "in": urlgen.to_go(s)} for s in inputs]
    )
    failures = [
        f"{s!r}: go {_go_split(a)}, credprov {_our_split(s)}"
        for s, a in zip(inputs, answers, strict=True)
        if _our_split(s) != _go_split(a)
    ]
    _report(failures, len(inputs))


@pytest.mark.parametrize("release", ["1.25.5", "1.27.3"])
def test_quote_matches_go(release: str) -> None:
    texts = urlgen.generated_texts(gotool.case_count(400), seed=11) + urlgen.NEW_UNICODE
    answers = gotool.oracle("url", release).ask(
        [{"op": "quote", "in": urlgen.to_go(t)} for t in texts]
    )
    unicode = version.go_release(release).unicode
    failures = [
        f"{t!r}: go {_text(a['out'])}, credprov {fmt.go_quote(t, unicode=unicode)}"
        for t, a in zip(texts, answers, strict=True)
        if fmt.go_quote(t, unicode=unicode) != _text(a["out"])
    ]
    _report(failures, len(texts))


@pytest.mark.parametrize("release", QUICK)
def test_printable_tables_match_go(release: str) -> None:
    """credprov's ``strconv.IsPrint`` table for the release's Unicode version is the release's,
    range for range, and the release's ``unicode.Version`` is the one credprov gives it."""
    answer = gotool.oracle("url", release).ask([{"op": "printable"}])[0]
    ours = version.go_release(release)
    assert answer["unicode"] == ours.unicode
    is_print = fmt._printable(ours.unicode)
    failures = []
    for lo, hi in answer["ranges"]:
        for code in (lo - 1, lo, hi, hi + 1):
            want = lo <= code <= hi
            if code >= 0x80 and is_print(code) != want:
                failures.append(f"U+{code:04X}: go {want}, credprov {not want}")
    _report(failures, len(answer["ranges"]))
    # Inside the ranges and between them.
    inside = sum(hi - lo + 1 for lo, hi in answer["ranges"] if lo >= 0x80)
    assert sum(1 for code in range(0x80, 0x110000) if is_print(code)) == inside
