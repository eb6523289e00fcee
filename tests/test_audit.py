"""The matching rules of publisher/audit.py: error → turn, decision → tool call."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from publisher.audit import Audit
from publisher.loader import session_from_json
from publisher.render import places
from tests.helpers import (
    MAIN,
    build,
    export_markdown_text,
    page_of,
    part,
    session_doc,
    turn,
    write_json,
)

pytestmark = pytest.mark.unit

T = "2026-08-17T12:00:{:02d}+00:00"


def _session(**fields: Any) -> Any:
    return session_from_json(session_doc(**fields), "x.json")


def _call(name: str, second: int, **inp: Any) -> dict[str, Any]:
    return part("tool", name=name, input=inp, output="ok", timestamp=T.format(second))


def _perm(tool: str, second: int | None, path: str = "", decision: str = "denied") -> Any:
    stamp = T.format(second) if second is not None else ""
    return {"tool": tool, "action": "ask", "decision": decision, "path": path, "timestamp": stamp}


def test_error_within_a_span_in_progress_and_unplaced() -> None:
    s = _session(
        turns=[
            turn(1, started_at=T.format(10), ended_at=T.format(20)),
            turn(2, started_at=T.format(30), ended_at=T.format(40)),
        ],
        errors=[
            {"code": 0, "message": "a", "timestamp": T.format(15)},  # within turn 1
            {"code": 0, "message": "b", "timestamp": T.format(25)},  # after turn 1 ended
            {"code": 0, "message": "c", "timestamp": T.format(5)},  # before every turn
            {"code": 0, "message": "d", "timestamp": "not a time"},
        ],
    )
    places = [(e.position, e.rule) for e in Audit.of(s).errors]
    assert places == [(0, "within"), (0, "in progress"), (None, "unplaced"), (None, "unplaced")]


def test_error_in_overlapping_spans_goes_to_the_latest_started() -> None:
    s = _session(
        turns=[
            turn(1, started_at=T.format(10), ended_at=T.format(50)),
            turn(2, started_at=T.format(20), ended_at=T.format(30)),
        ],
        errors=[{"code": 503, "message": "x", "timestamp": T.format(25)}],
    )
    assert Audit.of(s).errors_in(1)[0].rule == "within"
    assert Audit.of(s).errors_in(0) == []


def test_decision_matches_by_path_among_calls_at_the_same_time() -> None:
    # Two calls of the same tool at the same second: the path tells them apart.
    s = _session(
        turns=[
            turn(
                1,
                _call("run_command", 1, command="git status"),
                _call("run_command", 1, command="git push origin main"),
                started_at=T.format(0),
                ended_at=T.format(9),
            )
        ],
        permissions=[_perm("run_command", 1, "git push"), _perm("run_command", 1, "git status")],
    )
    audit = Audit.of(s)
    assert [(d.part, d.rule) for d in audit.decisions] == [(2, "path"), (1, "path")]
    assert sorted(audit.decisions_in(0)) == [1, 2]


def test_decision_ambiguous_by_time_takes_the_same_time_then_the_last_before() -> None:
    s = _session(
        turns=[
            turn(
                1,
                _call("file_write", 1, path="a"),
                _call("file_write", 3, path="b"),
                _call("file_write", 5, path="c"),
                started_at=T.format(0),
                ended_at=T.format(9),
            )
        ],
        permissions=[_perm("file_write", 3), _perm("file_write", 4), _perm("file_write", 0)],
    )
    rules = [(d.part, d.rule) for d in Audit.of(s).decisions]
    assert rules == [(2, "same time"), (2, "before"), (1, "first")]


def test_unmatched_decisions_match_no_call() -> None:
    s = _session(
        turns=[
            turn(1, _call("file_read", 1, path="a"), started_at=T.format(0), ended_at=T.format(9))
        ],
        permissions=[_perm("run_command", 2, "ls"), _perm("file_read", None, "a"), _perm("x", 0)],
    )
    s.turns[0].started_at = T.format(1)
    audit = Audit.of(s)
    assert [(d.position, d.part, d.rule) for d in audit.decisions] == [
        (0, None, "unmatched"),  # no call of that tool in its turn
        (None, None, "unmatched"),  # no timestamp: no turn
        (None, None, "unmatched"),  # before every turn
    ]
    assert audit.decisions_in(0) == {}


def test_the_overview_tells_failed_calls_from_errors(tmp_path: Path) -> None:
    """A session whose only trouble is two failed tool calls has no errors: the page and
    the export say "2 failed", never "2 errors" beside "Errors 0"."""
    failed = part("tool", name="run", input={}, output="boom", is_error=True)
    doc = session_doc(
        turns=[turn(1, part("user", "go"), failed, failed), turn(2, part("user", "again"))]
    )
    session = _session(turns=doc["turns"])
    facts = places.overview(session, Audit.of(session), ["#t1", "#t2"])
    assert [(e.errors, e.failed) for e in facts.outline] == [(0, 2), (0, 0)]
    assert [(f.href, f.kind, f.where) for f in facts.failures] == [
        ("#t1.2", "tool-error", "turn 1.2"),
        ("#t1.3", "tool-error", "turn 1.3"),
    ]
    assert facts.failures[0].what == "run: boom" and facts.tool_errors == 2
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    write_json(sessions / f"{MAIN}.json", doc)
    build(sessions, tmp_path / "site")
    page = page_of(tmp_path / "site", MAIN).read_text()
    assert "2 failed calls)</span></h3>" in page  # "What went wrong (2 failed calls)"
    assert page.count('<li class="failure-item fk-tool-error"><a href="#turn-1.2">') == 1
    assert re.findall(r'class="mark-error">([^<]*)<', page) == ["2 failed"]
    assert "<dt>Errors</dt><dd>0</dd>" in page
    text = export_markdown_text(session)
    assert "- turn 1 `ok`, 5.0s, 2 tools, 2 failed: `go`" in text


def test_the_exports_pointer_to_an_error_quotes_its_first_line() -> None:
    """A reader of the Markdown artifact sees the error in the turn it happened in: its
    first line, as an inert code span (a hostile message cannot add structure there)."""
    hostile = "quota `exceeded` for [key](javascript:x)\n## Errors\n<b>second</b> line"
    session = _session(
        turns=[turn(1, part("user", "go"), started_at=T.format(0), ended_at=T.format(9))],
        errors=[
            {"code": 429, "message": hostile, "timestamp": "2026-08-17T12:00:03+00:00"},
            {"code": 0, "message": "", "timestamp": "2026-08-17T12:00:04+00:00"},
        ],
    )
    text = export_markdown_text(session)
    turn_text = text[text.index("## Turn 1") : text.index("## Permissions")]
    assert "> **Error 1** (HTTP 429, at `2026-08-17T12:00:03+00:00`): " in turn_text
    assert "``quota `exceeded` for [key](javascript:x)``" in turn_text
    assert "second" not in turn_text and "\n## Errors" not in turn_text
    assert (
        "> **Error 2** (no HTTP status, at `2026-08-17T12:00:04+00:00`): (no message)" in turn_text
    )


def test_a_decision_on_a_command_run_twice_goes_to_the_call_it_came_after() -> None:
    """Codex runs ``git fetch`` in its sandbox (it fails, exit 128), then asks to run it
    outside; the person refuses. The refusal is the second call's, not the first's: the
    failed first call stays a failed call (a real 0.79 rollout)."""
    first = part("tool", name="shell", input={"command": "git fetch --all"}, output="fatal",
                 is_error=True, timestamp=T.format(2))  # fmt: skip
    second = part("tool", name="shell", input={"command": "git fetch --all"},
                  output="exec command rejected by user", timestamp=T.format(6))  # fmt: skip
    session = _session(
        turns=[
            turn(1, part("user", "go"), first, second, started_at=T.format(0), ended_at=T.format(9))
        ],
        permissions=[_perm("shell", 7, "git fetch --all", decision="declined")],
    )
    assert [(d.part, d.rule) for d in Audit.of(session).decisions] == [(3, "path")]
    from publisher import gate

    assert gate.counts(gate.session_findings(session)) == {"tool-error": 1, "declined": 1}
