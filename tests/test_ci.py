"""Issue 16, CI: --fail-on gating, `polyglav check`, --summary, --format junit, docs/ci.md."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from lxml import etree
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from publisher import gate
from publisher.archive import Archive
from publisher.cli import app
from publisher.loader import read_session, session_from_json
from publisher.render import junit, summary
from tests.helpers import ROOT, SAMPLES, Writer, part, session_doc, turn

pytestmark = pytest.mark.unit

runner = CliRunner()
P = ["--project", str(SAMPLES)]
MAIN = "ses_20260817_120000_ab12cd"
XSD = etree.XMLSchema(etree.parse(str(Path(__file__).parent / "data" / "JUnit.xsd")))
PAYLOADS = [
    line
    for line in (Path(__file__).parent / "data" / "payloads.txt")
    .read_text(encoding="utf-8")
    .split("\n")
    if line
] + [
    "```\n<script>window.__pwned=1</script>\n```",
    "[r]\n\n[r]: javascript:window.__pwned=1",
    "@octocat please merge evil",
    "cc @evil-org/admins",
    "owner/evil#1 and GH-1 and #1",
    ":tada: :evil: evil",
    "https://evil.example/bare www.evil.example",
    "a | b | evil",
    "`` ` evil `` ```",
    "evil\\|escape `x\\` evil",
]


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def fail_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("polyglav: fail-on ")]


def sample_loader(name: str) -> Any:
    try:
        return Archive(SAMPLES).resolve(f"session:{name}")
    except Exception as exc:
        return str(exc)


def sample_tree(name: str = MAIN) -> list[gate.Member]:
    return gate.session_tree(Archive(SAMPLES).resolve(name), sample_loader)


# -- gating on the samples --------------------------------------------------------------

EXPECTED_LINES = {
    "error": "polyglav: fail-on error: turn 7: error 401: Unauthorized: the provider rejected "
    "the API key (token expired) (and 1 more error: turn 10)",
    "tool-error": "polyglav: fail-on tool-error: turn 1.3: tool error: run_command: "
    "test session starts … 1 failed, 47 passed in 2.31s",
    "denied": "polyglav: fail-on denied: turn 7.2: permission denied: run_command git push "
    "origin main",
    "declined": "polyglav: fail-on declined: turn 5.4: permission declined: file_write "
    "/home/dana/src/inventory-api/.env",
    "truncated": "polyglav: fail-on truncated: turn 10: status truncated",
    "cancelled": "polyglav: fail-on cancelled: turn 11: status cancelled",
    "running": "polyglav: fail-on running: turn 12: status running: the run never finished",
}


@pytest.mark.parametrize("kind", gate.EVENT_KINDS)  # secret: tests/test_redact_report.py
def test_each_kind_alone_fails_the_export_but_writes_it(kind: str, tmp_path: Path) -> None:
    plain = tmp_path / "plain.md"
    assert run("export", MAIN, *P, "--out", str(plain))[0] == 0
    out = tmp_path / "gated.md"
    code, _, err = run("export", MAIN, *P, "--out", str(out), "--fail-on", kind)
    assert code == 1, err
    assert fail_lines(err) == [EXPECTED_LINES[kind]]
    assert out.read_bytes() == plain.read_bytes()  # the export is still written, unchanged
    assert f"exported to {out}" in err


@pytest.mark.parametrize("kind", gate.EVENT_KINDS)
def test_each_kind_alone_with_check(kind: str) -> None:
    code, out, err = run("check", MAIN, *P, "--fail-on", kind)
    assert code == 1
    assert fail_lines(err) == [EXPECTED_LINES[kind]]
    assert out.startswith(f"{MAIN}: failed: --fail-on {kind} matched ")


def test_kinds_combined_one_line_per_kind_in_a_fixed_order() -> None:
    code, out, err = run("check", MAIN, *P, "--fail-on", " running , denied,error")
    assert code == 1
    assert fail_lines(err) == [
        EXPECTED_LINES["error"],
        EXPECTED_LINES["denied"],
        EXPECTED_LINES["running"],
    ]
    assert out == (
        f"{MAIN}: failed: --fail-on error,denied,running matched 4 findings "
        "(2 error, 1 denied, 1 running) in 1 of 3 sessions\n"
    )
    code, _, err = run("check", MAIN, *P)  # default: every kind but secret
    assert code == 1
    assert fail_lines(err) == [EXPECTED_LINES[k] for k in gate.EVENT_KINDS]


def test_the_verdict_says_in_how_many_of_the_searched_sessions_it_found() -> None:
    # The findings are all in the root: the summary and the verdict say so alike.
    code, out, _ = run("check", MAIN, *P, "--fail-on", "denied", "--summary", "-")
    assert code == 1
    assert "matched 1 finding (1 denied) in 1 of 3 sessions" in out
    code, _, err = run("check", MAIN, *P, "--fail-on", "denied", "--summary", "-")
    assert err.startswith(
        f"{MAIN}: failed: --fail-on denied matched 1 finding (1 denied) in 1 of 3 sessions\n"
    )
    code, out, _ = run("check", MAIN, *P, "--fail-on", "denied", "--no-sub-sessions")
    assert out == f"{MAIN}: failed: --fail-on denied matched 1 finding (1 denied) in 1 session\n"


@pytest.mark.parametrize(
    ("name", "kinds", "code"),
    [
        ("release-notes", ",".join(gate.KINDS), 0),
        ("sub_20260817_122000_ef56gh", ",".join(gate.KINDS), 0),  # status "empty" is no finding
        ("#7f3k2a", "denied,declined,truncated,cancelled,running", 0),
        ("#7f3k2a", "error", 1),
        ("#7f3k2a", "tool-error", 1),
        (MAIN, "declined", 1),
    ],
)
def test_exit_status_follows_the_findings(name: str, kinds: str, code: int) -> None:
    got, out, err = run("check", name, *P, "--fail-on", kinds)
    assert got == code, err
    assert ("passed" in out) == (code == 0)
    assert bool(fail_lines(err)) == (code == 1)


def test_job_errors_are_attributed_to_the_failed_turn() -> None:
    _, _, err = run("check", "#7f3k2a", *P, "--fail-on", "error")
    assert fail_lines(err) == [
        "polyglav: fail-on error: turn 2: error: stream EOF before completion (connection reset "
        "by provider) (and 1 more error: turn 2)"
    ]


@pytest.mark.parametrize(
    "args",
    [
        ["--fail-on", "denied,nope"],
        ["--fail-on", ""],
        ["--fail-on", " , "],
        ["--fail-on", "Denied"],
    ],
)
def test_unknown_or_missing_kind_is_a_usage_error(args: list[str], tmp_path: Path) -> None:
    out = tmp_path / "x.md"
    for command in (["export", MAIN, "--out", str(out)], ["check", MAIN]):
        code, _, err = run(*command, *P, *args)
        assert code == 2, err
        assert (
            "valid kinds: error, tool-error, denied, declined, truncated, cancelled, running"
            in (err)
        )
        assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_other_usage_errors_exit_2(tmp_path: Path) -> None:
    cases = [
        ["export", MAIN, "--out", "-", "--summary", "-"],
        ["export", MAIN, "--format", "xml"],
        ["check", MAIN, "--summary", "s.md", "--link-base", "javascript:alert(1)"],
        ["check", MAIN, "--summary", "s.md", "--link-base", "https://x.example/a b"],
        ["check", MAIN, "--link-base", "https://x.example/"],
    ]
    for args in cases:
        code, _, err = run(*args, *P)
        assert code == 2, (args, err)
        assert "Traceback" not in err


def test_a_session_that_does_not_load_is_exit_1_naming_the_file() -> None:
    code, _, err = run("check", "ses_20260301_090000_flat01", *P, "--fail-on", "error")
    assert code == 1
    assert err.strip() == (
        "polyglav: error: ses_20260301_090000_flat01.json: does not load: legacy flat-messages "
        "format (written before the turn format)"
    )


def test_check_help_says_it_writes_nothing() -> None:
    result = runner.invoke(app, ["check", "--help"])
    assert result.exit_code == 0
    assert "Example:\n    polyglav check" in result.stdout
    # It writes nothing: its options say nothing of an export written or of its format.
    flat = " ".join(result.stdout.split())
    assert "still written" not in flat and "--format" not in flat
    export = " ".join(runner.invoke(app, ["export", "--help"]).stdout.split())
    assert "The export is still written." in export
    assert "--format html puts them in the same file." in export


# -- sub-sessions --------------------------------------------------------------------------


def _tree_docs(write_session: Writer) -> None:
    """root → sub_a → sub_b → sub_a (a cycle), root → missing; only sub_b went wrong."""
    write_session(session_doc("ses_20260817_120000_root01", sub_sessions=["sub_x_aaaaaa"],
                              turns=[turn(1, part("user", "go"))]))  # fmt: skip
    write_session(
        session_doc(
            "sub_x_aaaaaa",
            parent_id="ses_20260817_120000_root01",
            sub_sessions=["sub_x_bbbbbb", "sub_x_nothere"],
            turns=[turn(1, part("user", "a"))],
        )
    )
    write_session(
        session_doc(
            "sub_x_bbbbbb",
            parent_id="sub_x_aaaaaa",
            sub_sessions=["sub_x_aaaaaa", "ses_20260817_120000_root01", "sub_x_bbbbbb"],
            turns=[
                turn(1, part("user", "b")),
                turn(
                    2,
                    part("user", "push"),
                    part("tool", name="run_command", input={}, output="no", is_error=True),
                    started_at="2026-08-17T12:01:00+00:00",
                    ended_at="2026-08-17T12:01:09+00:00",
                ),
            ],
            permissions=[
                {
                    "tool": "run_command",
                    "action": "deny",
                    "decision": "denied",
                    "path": "git push",
                    "timestamp": "2026-08-17T12:01:01+00:00",
                }
            ],
        )
    )


def test_sub_sessions_count_at_any_depth_and_cycles_end(
    archive: Path, write_session: Writer
) -> None:
    _tree_docs(write_session)
    project = ["--project", str(archive.parent.parent)]
    code, out, err = run("check", "#root01", *project, "--fail-on", "denied,tool-error")
    assert code == 1, err
    # The denied call failed because of its refusal: one finding, the refusal.
    assert fail_lines(err) == [
        "polyglav: fail-on denied: sub_x_bbbbbb turn 2.2: permission denied: run_command git push",
    ]
    assert "in 1 of 3 sessions" in out  # b of root, a and b; one that does not load is a warning
    assert "polyglav: warning: sub-session sub_x_nothere of sub_x_aaaaaa: sub_x_nothere.json: " in (
        err
    )
    code, out, err = run("check", "#root01", *project, "--no-sub-sessions")
    assert code == 0, err
    assert (
        out
        == "ses_20260817_120000_root01: passed: nothing matched --fail-on "
        + ",".join(gate.EVENT_KINDS)
        + " in 1 session\n"
    )
    assert "warning" not in err


def test_session_tree_order_depth_and_problems(archive: Path, write_session: Writer) -> None:
    _tree_docs(write_session)
    arch = Archive(archive)

    def load(name: str) -> Any:
        try:
            return arch.resolve(f"session:{name}")
        except Exception as exc:
            return str(exc)

    members = gate.session_tree(arch.resolve("#root01"), load)
    assert [(m.name, m.parent, m.depth, bool(m.problem)) for m in members] == [
        ("ses_20260817_120000_root01", "", 0, False),
        ("sub_x_aaaaaa", "ses_20260817_120000_root01", 1, False),
        ("sub_x_bbbbbb", "sub_x_aaaaaa", 2, False),
        ("sub_x_nothere", "sub_x_aaaaaa", 2, True),
    ]
    assert [m.name for m in gate.session_tree(arch.resolve("#root01"))] == [
        "ses_20260817_120000_root01"
    ]


# -- attribution ---------------------------------------------------------------------------


def _session(**fields: Any) -> Any:
    from publisher.loader import session_from_json

    return session_from_json(session_doc(**fields), "x.json")


T = "2026-08-17T12:00:{:02d}+00:00"


def _timed_turns() -> list[dict[str, Any]]:
    return [
        turn(1, part("user", "a"), part("tool", name="t", input={}, output="x", timestamp=T.format(2)),
             started_at=T.format(0), ended_at=T.format(10)),
        turn(2, part("user", "b"),
             part("tool", name="t", input={}, output="x", timestamp=T.format(21)),
             part("tool", name="u", input={}, output="x", timestamp=T.format(22)),
             part("tool", name="t", input={}, output="x", timestamp=T.format(25)),
             started_at=T.format(20), ended_at=T.format(30)),
        turn(3, part("user", "c"), status="running", started_at=T.format(40), ended_at=""),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("stamp", "where"),
    [
        (T.format(5), "1"),  # inside turn 1
        (T.format(10), "1"),  # at its end
        (T.format(15), "1"),  # between turns: the last one that ran
        (T.format(20), "2"),
        (T.format(45), "3"),  # after the running turn started
        ("2026-08-17T14:00:25+02:00", "2"),  # another zone, same instant as :25
        ("2026-08-17T12:00:25", "2"),  # no zone: read as UTC
        ("2026-08-17T11:59:59+00:00", ""),  # before every turn
        ("not a time", ""),
        ("", ""),
    ],
)
def test_errors_are_attributed_by_timestamp(stamp: str, where: str) -> None:
    s = _session(turns=_timed_turns(), errors=[{"code": 500, "message": "m", "timestamp": stamp}])
    [found] = gate.session_findings(s, ["error"])
    assert found.turn == where
    assert found.message == "error 500: m"


@pytest.mark.parametrize(
    ("tool", "stamp", "where"),
    [
        ("t", T.format(25), "2.4"),  # same name and timestamp
        ("t", T.format(23), "2.2"),  # the last call of that tool started before it
        ("t", T.format(20), "2.2"),  # none before it: the first one
        ("u", T.format(29), "2.3"),
        ("v", T.format(29), "2"),  # no part calls that tool: the turn
        ("t", T.format(3), "1.2"),
    ],
)
def test_permissions_are_narrowed_to_the_tool_part(tool: str, stamp: str, where: str) -> None:
    perm = {"tool": tool, "action": "deny", "decision": "denied", "path": "p", "timestamp": stamp}
    s = _session(turns=_timed_turns(), permissions=[perm])
    [found] = gate.session_findings(s, ["denied"])
    assert (found.kind, found.turn, found.message) == (
        "denied",
        where,
        f"permission denied: {tool} p",
    )


def test_overlapping_turns_prefer_the_latest_started_span_holding_the_event() -> None:
    turns = [
        turn(1, started_at=T.format(0), ended_at=T.format(50)),
        turn(2, started_at=T.format(10), ended_at=T.format(20)),
        turn(3, started_at=T.format(30), ended_at=T.format(35)),
    ]
    stamps = [T.format(s) for s in (15, 25, 33, 40, 55)]
    positions = gate.attribute(_session(turns=turns).turns, stamps)
    assert positions == [1, 0, 2, 0, 2]


def test_error_codes_and_hostile_text_stay_one_line() -> None:
    errors = [
        {"code": 0, "message": "no status", "timestamp": T.format(1)},
        {"code": "0", "message": "string zero", "timestamp": T.format(1)},
        {"code": 503.0, "message": "float", "timestamp": T.format(1)},
        {"code": "E42", "message": "line one\nline two\r\n\tthree", "timestamp": T.format(1)},
        {"code": 401, "message": "", "timestamp": T.format(1)},
    ]
    s = _session(turns=[turn(1, started_at=T.format(0), ended_at=T.format(9))], errors=errors)
    assert [f.message for f in gate.session_findings(s, ["error"])] == [
        "error: no status",
        "error: string zero",
        "error 503: float",
        "error E42: line one\\nline two\\r\\n\\tthree",
        "error 401",
    ]
    long = _session(errors=[{"code": 1, "message": "x" * 10_000, "timestamp": ""}])
    [found] = gate.session_findings(long)
    assert len(found.message) < 200 and found.message.endswith("…")


def test_a_turn_with_status_error_and_an_error_entry_counts_once() -> None:
    """The entry is the turn's error (named with its message); a turn with status error and
    no entry placed in it is one finding of its own."""
    s = _session(
        turns=[
            turn(1, status="error", started_at=T.format(0), ended_at=T.format(9)),
            turn(2, status="error", started_at=T.format(20), ended_at=T.format(29)),
        ],
        errors=[{"code": 401, "message": "Unauthorized", "timestamp": T.format(9)}],
    )
    assert [(f.turn, f.message) for f in gate.session_findings(s)] == [
        ("1", "error 401: Unauthorized"),
        ("2", "status error"),
    ]


def test_a_refused_call_is_its_refusal_not_also_a_tool_error() -> None:
    """A call whose permission was declined or denied fails (its result says so): it is
    counted once, as the refusal; a failed call with no refusal stays a tool error."""
    refused = part(
        "tool", name="file_write", input={"path": "/p/.env"}, output="Permission declined.",
        is_error=True, timestamp=T.format(2),
    )  # fmt: skip
    failed = part(
        "tool", name="file_write", input={"path": "/p/b"}, output="disk full", is_error=True,
        timestamp=T.format(4),
    )  # fmt: skip
    s = _session(
        turns=[turn(1, refused, failed, started_at=T.format(0), ended_at=T.format(9))],
        permissions=[
            {
                "tool": "file_write",
                "action": "ask",
                "decision": "declined",
                "path": "/p/.env",
                "timestamp": T.format(2),
            },
        ],
    )
    found = gate.session_findings(s)
    assert [(f.kind, f.turn) for f in found] == [("declined", "1.1"), ("tool-error", "1.2")]
    assert gate.counts(found) == {"tool-error": 1, "declined": 1}
    # Asked for tool errors alone, the refused call is not one.
    assert [f.turn for f in gate.session_findings(s, ["tool-error"])] == ["1.2"]


@pytest.mark.parametrize(
    ("output", "gist"),
    [
        ("", ""),
        (" \n\t ", ""),
        ("Permission declined by the operator.", "Permission declined by the operator."),
        ("x\n\n", "x"),
        (
            "=== test session starts ===\n..F\n=== 1 failed in 0.1s ===\n",
            "test session starts … 1 failed in 0.1s",
        ),
        (
            "Traceback (most recent call last):\n  File \"x\"\nKeyError: 'a'\n",
            "Traceback (most recent call last): … KeyError: 'a'",
        ),
        ("Found 1 known vulnerability\nh11 0.14.0\r\n", "Found 1 known vulnerability … h11 0.14.0"),
        ("one\n" + "z" * 10_000 + "END \n\n", "one … " + "z" * 77 + "END"),
        ("f" * 500 + "\nl" * 3 + "x" * 500, "f" * 80 + " … " + "x" * 80),  # one "…" only
        ("y" * 10_000, "y" * 79 + "…"),
        (" " * 1_000_000 + "late\n" + " " * 1_000_000, "late"),
        ("a\tb\n\x1b[31mred", "a\\tb … \x1b[31mred"),
    ],
)
def test_a_tool_error_is_told_by_the_first_and_last_lines_of_its_output(
    output: str, gist: str
) -> None:
    assert gate.output_gist(output) == gist


@pytest.mark.parametrize(
    ("message", "cut"),
    [
        ("tool error: Bash: Exit code 1 … done", "tool error: Bash: Exit code 1 … done"),
        # Both lines long (a real Claude Code hook's output): half of the room each.
        (
            "tool error: Bash: Pre-commit validation failed:\\n\\n[FORMAT] Code is not "
            "formatted.\\nRun 'mix forma … output truncated: showing 30 of 256 lines]"
            "\\n\\nFix these issues before committing.",
            "tool error: Bash: Pre-commit validation failed:\\n … 56 lines]\\n\\n"
            "Fix these issues before committing.",
        ),
        # A short first line is kept whole, the last line loses its start.
        ("tool error: x: short … …" + "z" * 200, "tool error: x: short … " + "z" * 77),
        ("permission denied: " + "p" * 200, "permission denied: " + "p" * 80 + "…"),
    ],
)
def test_a_finding_fits_its_cell_keeping_the_end_of_the_output(message: str, cut: str) -> None:
    assert gate.fit(message, 100) == cut and len(cut) <= 100


def test_only_the_asked_kinds_are_found() -> None:
    s = read_session(SAMPLES / f"{MAIN}.json")
    for kind in gate.EVENT_KINDS:  # the samples hold no secret (tests/test_redact.py)
        found = gate.session_findings(s, [kind])
        assert found and {f.kind for f in found} == {kind}
    assert len(gate.session_findings(s)) == 8
    assert gate.session_findings(s, []) == []


# -- the summary ---------------------------------------------------------------------------

SITE = "https://dana.example/inventory-api/"


def test_summary_of_the_main_sample(tmp_path: Path) -> None:
    out = tmp_path / "summary.md"
    code, stdout, err = run(
        "check", MAIN, *P, "--fail-on", "error,denied", "--summary", str(out), "--link-base", SITE
    )
    assert code == 1, err
    assert stdout.startswith(f"{MAIN}: failed")
    text = out.read_text(encoding="utf-8")
    page = f"{SITE}sessions/{MAIN}/index.html"
    lines = text.splitlines()
    assert lines[0] == f"### Polyglav session `{MAIN}`: failed"
    for expected in [
        "- **Gate:** **failed**: `--fail-on error,denied` matched 3 findings (2 error, 1 denied) "
        "in 1 of 3 sessions",
        f"- **Session:** interactive session, role -, Polyglav `0.35.0`, [transcript]({page})",
        "- **Last turn:** turn 12, `running`: the run never finished",
        "- **Duration:** 19m44s",
        "- **Turns:** 12 (8 `ok`, 1 `running`, 1 `error`, 1 `truncated`, 1 `cancelled`)",
        "- **Tool calls:** 14 (1 failed, 2 refused)",
        "- **Errors:** 2",
        "- **Permission decisions:** 10 (1 `declined`, 1 `denied`, 8 `granted`)",
        "- **Sub-agents:** 2",
        f"| [turn 7.2]({page}#turn-7.2) | denied | "
        "`permission denied: run_command git push origin main` | fails |",
        f"| [turn 10]({page}#turn-10) | error | `error: max_tokens truncation: the answer hit "
        "max_tokens (4096) during reasoning` | fails |",
        f"| [turn 5.4]({page}#turn-5.4) | declined | "
        "`permission declined: file_write /home/dana/src/inventory-api/.env` |  |",
        f"| [`sub_20260817_121500_cd34ef`]({SITE}sessions/sub_20260817_121500_cd34ef/index.html) "
        f"| `reviewer` | `{MAIN}` | 1 | `ok` | none |",
        f"| [`sub_20260817_122000_ef56gh`]({SITE}sessions/sub_20260817_122000_ef56gh/index.html) "
        "| `security` | `sub_20260817_121500_cd34ef` | 2 | `empty` | none |",
    ]:
        assert expected in lines, expected
    rows = [line for line in lines if line.startswith("| [turn ")]
    assert len(rows) == 8
    # The gated findings come first.
    assert [r.split(" | ")[-1] for r in rows] == ["fails |"] * 3 + [" |"] * 5


def test_summary_links_into_the_single_file_its_sub_sessions_included() -> None:
    base = "https://ci.example/artifacts/transcript.html"
    code, stdout, _ = run("check", MAIN, *P, "--summary", "-", "--link-base", base)
    assert code == 1
    assert f"[turn 7.2]({base}#turn-7.2)" in stdout
    assert f", [transcript]({base})" in stdout
    # The sub-sessions are sections of the same file (export --format html puts them there).
    assert f"| [`sub_20260817_121500_cd34ef`]({base}#s-cd34ef) | `reviewer` |" in stdout
    assert f"| [`sub_20260817_122000_ef56gh`]({base}#s-ef56gh) | `security` |" in stdout
    # A finding in a sub-session would link its turn in that section.
    members = [
        gate.Member(MAIN, None),
        gate.Member("sub_20260817_121500_cd34ef", session_from_json(session_doc(
            "sub_20260817_121500_cd34ef"), "sub_20260817_121500_cd34ef.json"), MAIN, 1),
    ]  # fmt: skip
    places = summary.Places.of(members)
    link = summary.link_for(base, MAIN, "sub_20260817_121500_cd34ef", "1.2", 0, places)
    assert link == f"{base}#s-cd34ef-turn-1.2"


def test_summary_without_gate_or_link_base() -> None:
    code, stdout, err = run("check", "#7f3k2a", *P, "--summary", "-", "--fail-on", "running")
    assert code == 0, err
    assert stdout.splitlines()[0] == "### Polyglav session `job_20260826_110230_7f3k2a`: passed"
    assert "- **Gate:** passed: nothing matched `--fail-on running`" in stdout
    assert "](" not in stdout  # no link without --link-base
    assert "| turn 2 | error | `error 503: Service Unavailable` |  |" in stdout
    assert err.startswith("job_20260826_110230_7f3k2a: passed")  # the verdict moved to stderr
    assert "Sub-agents" not in stdout


def test_summary_with_export_goes_to_stdout_or_a_file(tmp_path: Path) -> None:
    report = tmp_path / "r.xml"
    code, stdout, err = run(
        "export", MAIN, *P, "--format", "junit", "--out", str(report), "--summary", "-"
    )
    assert code == 0, err  # no --fail-on: nothing gates
    assert stdout.startswith(f"### Polyglav session `{MAIN}`\n")
    assert "- **Gate:** not set (no `--fail-on`)" in stdout
    assert "| Where | Kind | What |" in stdout
    assert XSD.validate(etree.parse(str(report)))


def test_summary_is_deterministic_and_refuses_the_sessions_folder(
    tmp_path: Path, archive: Path, write_session: Writer
) -> None:
    texts = []
    for i in range(2):
        out = tmp_path / f"s{i}.md"
        run("check", MAIN, *P, "--summary", str(out), "--link-base", SITE)
        texts.append(out.read_bytes())
    assert texts[0] == texts[1] and texts[0]
    write_session(session_doc())
    code, _, err = run(
        "check", "#ab12cd", "--project", str(archive.parent.parent),
        "--summary", str(archive / "summary.md"),
    )  # fmt: skip
    assert code == 1
    assert "refusing to write inside the sessions folder" in err
    assert not (archive / "summary.md").exists()


def test_summary_stays_short_for_a_long_run() -> None:
    turns = [
        turn(i, part("tool", name="t", input={}, output=f"failure {i}", is_error=True),
             status="truncated" if i % 2 else "ok")
        for i in range(1, 2001)
    ]  # fmt: skip
    errors = [{"code": 500, "message": f"e{i}", "timestamp": ""} for i in range(500)]
    root = _session(turns=turns, errors=errors)
    text = summary.ci_summary(gate.session_tree(root), frozenset(["error"]))
    assert len(text) < 4000
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + summary.MAX_FINDINGS  # the header and the capped rows
    assert "…and 3485 more (485 error, 2000 tool-error, 1000 truncated); the transcript" in text
    assert "- **Gate:** **failed**: `--fail-on error` matched 500 findings (500 error)" in text
    # Many sub-agents are capped too.
    subs = [
        gate.Member(f"sub_{i}", _session(name=f"sub_{i}"), root.session_name, 1) for i in range(30)
    ]
    text = summary.ci_summary([gate.Member(root.session_name, root), *subs], None)
    assert "…and 20 more sub-agents." in text
    # Many distinct statuses are capped in the count.
    odd = _session(turns=[turn(i, status=f"s{i}") for i in range(1, 40)])
    assert ", and 31 more)" in summary.ci_summary(gate.session_tree(odd), None)


def _hostile_members(p: str) -> list[gate.Member]:
    stamp = "2026-08-17T12:00:03+00:00"
    root = _session(
        name=f"ses_{p}",
        role=p,
        version=p,
        turns=[
            turn(1, part("user", p), part("tool", name=p, input={p: p}, output=p, is_error=True),
                 status=p),
            turn(2, part("user", p), status="error", started_at=p),
        ],
        errors=[{"code": p, "message": p, "timestamp": stamp},
                {"code": 1, "message": p, "timestamp": p}],
        permissions=[
            {"tool": p, "action": p, "decision": "denied", "path": p, "timestamp": stamp},
            {"tool": p, "action": p, "decision": "declined", "path": p, "timestamp": p},
            {"tool": p, "action": p, "decision": p, "path": p, "timestamp": p},
        ],
    )  # fmt: skip
    sub = _session(name=p, role=p, turns=[turn(1, status=p), turn(2, status="cancelled")])
    return [
        gate.Member(root.session_name, root),
        gate.Member(p, sub, root.session_name, 1),
        gate.Member(p + "2", None, p, 2, f"{p}.json: no such session"),
    ]


MD = MarkdownIt("commonmark", {"html": True}).enable("table")
INERT_TEXT_RE = re.compile(r"pwned|evil|javascript|@|#|:tada:|<|\]\(|!\[", re.I)


def assert_inert(text: str, link_base: str | None) -> None:
    """Nothing quoted became markup: no HTML, image or foreign link, no live mention."""
    tokens = MD.parse(text)
    for token in tokens:
        for child in [token, *(token.children or [])]:
            assert child.type not in ("html_inline", "html_block", "image"), child
            if child.type == "link_open":
                href = str(child.attrs["href"])
                assert link_base is not None and href.startswith(link_base), href
                assert re.fullmatch(r"[A-Za-z0-9:/?#@!$&*+,;=%._~\[\]-]+", href), href
            if child.type == "text":
                assert not INERT_TEXT_RE.search(child.content), (child.content, text)
    headers = {}
    for line in text.splitlines():
        if line.startswith("| Where") or line.startswith("| Session"):
            headers = {"cols": line.count("|")}
        elif line.startswith("|"):
            assert line.count("|") == headers["cols"], line  # no cell was split
        elif line:
            assert not line.startswith(("<", "    ", "```", "~~~")), line


@pytest.mark.parametrize("payload", PAYLOADS)
def test_summary_quotes_every_payload_inertly(payload: str) -> None:
    members = _hostile_members(payload)
    for kinds in (None, frozenset(gate.KINDS)):
        for base in (None, SITE, "https://ci.example/t.html"):
            text = summary.ci_summary(members, kinds, base)
            assert_inert(text, base)
            assert text.count("\n") < 60
    # The payload is shown (in its escaped form), not dropped.
    text = summary.ci_summary(members, None)
    assert text.count("`") >= 20


def test_summary_of_hostile_files_through_the_cli(archive: Path, write_session: Writer) -> None:
    p = "\n".join(PAYLOADS)
    write_session(
        session_doc(
            "ses_20260817_120000_evil01",
            role=p,
            sub_sessions=[p, "../../etc/passwd", "sub_20260817_120000_evil02"],
            turns=[turn(1, part("tool", name=p, input={}, output=p, is_error=True), status=p)],
            errors=[{"code": p, "message": p, "timestamp": "2026-08-17T12:00:01+00:00"}],
        )
    )
    write_session(session_doc("sub_20260817_120000_evil02", role=p, turns=[turn(1, status=p)]))
    code, stdout, err = run(
        "check", "#evil01", "--project", str(archive.parent.parent), "--summary", "-",
        "--link-base", SITE,
    )  # fmt: skip
    assert code == 1
    assert_inert(stdout, SITE)
    assert "not loaded:" in stdout
    for line in err.splitlines():  # stderr stays one line per message, no escape sequence
        assert "\x1b" not in line and "\r" not in line
    assert sum(1 for line in err.splitlines() if line.startswith("polyglav: warning: ")) == 2


def test_redaction_reaches_the_summary_and_the_stderr_lines(
    archive: Path, write_session: Writer
) -> None:
    key = "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"  # fake, from secrets.json
    write_session(
        session_doc(
            "ses_20260817_120000_sec001",
            sub_sessions=["sub_20260817_120000_sec002"],
            turns=[
                turn(1, part("tool", name="t", input={}, output=f"bad key {key}", is_error=True))
            ],
        )
    )
    write_session(
        session_doc(
            "sub_20260817_120000_sec002",
            errors=[{"code": 401, "message": f"rejected {key}", "timestamp": T.format(1)}],
            turns=[turn(1)],
        )
    )
    project = ["--project", str(archive.parent.parent)]
    code, stdout, err = run("check", "#sec001", *project, "--summary", "-")
    assert code == 1 and key in stdout and key in err
    code, stdout, err = run("check", "#sec001", *project, "--summary", "-", "--redact")
    assert code == 1
    assert key not in stdout + err
    assert "[REDACTED:openai]" in stdout and "[REDACTED:openai]" in err
    out = archive.parent / "r.xml"
    code, _, err = run(
        "export", "#sec001", *project, "-f", "junit", "--out", str(out), "--redact",
        "--fail-on", "error,tool-error",
    )  # fmt: skip
    assert code == 1 and key not in out.read_text() and key not in err


def test_link_base_is_percent_encoded() -> None:
    link = summary.link_for("https://x.example/a(b)/'q'<>\"`/", "r", "r", "1.2")
    assert link == "https://x.example/a%28b%29/%27q%27%3C%3E%22%60/sessions/r/index.html#turn-1.2"
    odd = summary.link_for(SITE, "r", "Evil Name/../x", "")
    assert odd is not None and odd.startswith(f"{SITE}sessions/evil_name_x-")
    with pytest.raises(ValueError, match="http"):
        summary.check_link_base("data:text/html,x")
    assert summary.check_link_base("site/") == "site/"


# -- JUnit -----------------------------------------------------------------------------------


def junit_doc(path: Path) -> Any:
    doc = etree.parse(str(path))
    assert XSD.validate(doc), XSD.error_log
    return doc


def test_junit_of_the_main_sample(tmp_path: Path) -> None:
    out = tmp_path / "report.xml"
    code, _, err = run(
        "export", MAIN, *P, "--format", "junit", "--out", str(out), "--fail-on", "error,denied"
    )
    assert code == 1, err
    assert fail_lines(err) == [EXPECTED_LINES["error"], EXPECTED_LINES["denied"]]
    doc = junit_doc(out)
    suites = doc.getroot().findall("testsuite")
    assert [(s.get("name"), s.get("id"), s.get("tests"), s.get("failures")) for s in suites] == [
        (MAIN, "0", "12", "2"),
        ("sub_20260817_121500_cd34ef", "1", "1", "0"),
        ("sub_20260817_122000_ef56gh", "2", "2", "0"),
    ]
    root = suites[0]
    assert root.get("timestamp") == "2026-08-17T12:00:00"
    assert root.get("time") == "177.000"  # the turns' durations; the running turn counts 0
    cases = root.findall("testcase")
    assert [c.get("time") for c in cases][:3] == ["18.000", "10.000", "15.000"]
    assert cases[6].get("name") == "turn 07: Good. Commit and push to main."
    assert cases[3].get("name") == "turn 04: /model llama3.3:70b"
    failed = [c for c in cases if c.find("failure") is not None]
    assert [c.get("name")[:7] for c in failed] == ["turn 07", "turn 10"]
    failure = failed[0].find("failure")
    assert failure.get("type") == "error,denied"
    assert failure.get("message") == (
        "error 401: Unauthorized: the provider rejected the API key (token expired) (and 1 more)"
    )
    body = failure.text
    assert body.startswith(
        "turn 7: error: error 401: Unauthorized: the provider rejected the API key (token expired)\n"
        "turn 7.2: denied: permission denied: run_command git push origin main\n\n## Turn 7\n"
    )
    assert "git commit -am 'Fix off-by-one in reservations' && git push origin main" in body
    props = {p.get("name"): p.get("value") for p in root.find("properties")}
    assert props["fail_on"] == "error,denied" and props["session_id"] == "ab12cd"
    assert (
        "turn 12: running: status running: the run never finished" in root.find("system-out").text
    )


def test_junit_without_fail_on_has_no_failure_and_no_sub_sessions_on_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "report.xml"
    code, _, err = run("export", MAIN, *P, "--format", "junit", "--out", str(out))
    assert code == 0, err
    doc = junit_doc(out)
    assert doc.xpath("//failure") == []
    assert len(doc.xpath("//testsuite")) == 3
    code, _, _ = run("export", MAIN, *P, "-f", "junit", "--out", str(out), "--no-sub-sessions")
    assert code == 0
    assert len(junit_doc(out).xpath("//testsuite")) == 1
    # Default path: .xml beside the other exports.
    monkeypatch.chdir(tmp_path)
    code, _, err = run("export", "#7f3k2a", *P, "-f", "junit", "--fail-on", "tool-error")
    assert code == 1
    assert "exported to .polyglav/exports/job_20260826_110230_7f3k2a.xml" in err
    assert junit_doc(tmp_path / ".polyglav/exports/job_20260826_110230_7f3k2a.xml")


CONTROL = "".join(map(chr, range(0x20))) + "\x7f\x85\x9b\ud800\udfff\ufffe\uffff\ufdd0&<>\"'"


def test_junit_carries_control_characters_visibly(archive: Path, write_session: Writer) -> None:
    c = CONTROL
    write_session(
        session_doc(
            "ses_20260817_120000_ctl001",
            session_name=f"ses_{c}",
            role=c,
            version=c,
            created_at=c,
            sub_sessions=[c, "sub_20260817_120000_ctl002"],
            turns=[
                turn(1, part("user", c), part("tool", name=c, input={c: c}, output=c, is_error=True),
                     status=c),
                turn(2, part("user", "  "), status="cancelled", started_at=T.format(9)),
            ],
            errors=[{"code": c, "message": c, "timestamp": c}],
            permissions=[{"tool": c, "action": c, "decision": "denied", "path": c,
                          "timestamp": "2026-08-17T12:00:03+00:00"}],
        ),
        name="ses_20260817_120000_ctl001",
    )  # fmt: skip
    write_session(
        session_doc("sub_20260817_120000_ctl002", session_name=" \t ", turns=[turn(1)]),
        name="sub_20260817_120000_ctl002",
    )
    out = archive.parent / "r.xml"
    code, _, err = run(
        "export", "#ctl001", "--project", str(archive.parent.parent), "-f", "junit",
        "--out", str(out), "--fail-on", ",".join(gate.KINDS),
    )  # fmt: skip
    assert code == 1, err
    data = out.read_bytes()
    data.decode("utf-8")  # no lone surrogate made it out
    doc = junit_doc(out)
    text = data.decode()
    for shown in ("\\x00", "\\x1b", "\\x7f", "\\x85", "\\x9b", "\\ud800", "\\udfff", "\\ufffe"):
        assert shown in text, shown
    suites = doc.getroot().findall("testsuite")
    assert suites[0].get("name").startswith("ses_\\x00\\x01")
    assert suites[0].get("timestamp") == "2026-08-17T12:00:00"  # unreadable created_at: turn 1
    missing = suites[1]  # the control-character name does not load: an error case
    assert missing.get("errors") == "1" and missing.find("testcase/error").get("type") == "load"
    assert suites[2].get("name") == "(blank session name)"
    cases = suites[0].findall("testcase")
    # The error entry has no readable timestamp: a case of its own.
    assert cases[0].get("name") == "session (no turn)"
    assert cases[0].find("failure").get("message").startswith("error \\x00")
    first = cases[1].find("failure")
    assert first.get("type") == "denied"  # the denied call: its refusal, counted once
    assert "\t" in first.get("message") or "\\t" in first.get("message")
    # The body is the turn's Markdown as the export writes it (a text it cannot carry as is
    # becomes a json-string block), cut but otherwise whole.
    assert "\n## Turn 1\n" in first.text and "```json-string\n" in first.text
    assert cases[2].find("failure").get("type") == "cancelled"


def test_junit_failure_body_is_capped(archive: Path, write_session: Writer) -> None:
    write_session(
        session_doc(
            "ses_20260817_120000_big001",
            turns=[turn(1, part("tool", name="t", input={}, output="y" * 100_000, is_error=True))],
        )
    )
    out = archive.parent / "r.xml"
    code, _, _ = run(
        "export", "#big001", "--project", str(archive.parent.parent), "-f", "junit",
        "--out", str(out), "--fail-on", "tool-error",
    )  # fmt: skip
    assert code == 1
    body = junit_doc(out).find(".//failure").text
    assert len(body) < junit.BODY_CHARS + 300
    assert re.search(r"… \(9\d,\d{3} more characters of this turn; the Markdown export", body)


def test_xml_escaping_functions() -> None:
    assert (
        junit.xml_text("a&b<c>d\re\x1b\ud800\uffff") == "a&amp;b&lt;c&gt;d&#13;e\\x1b\\ud800\\uffff"
    )
    assert junit.xml_attr('"x"\n\t') == "&quot;x&quot;&#10;&#9;"
    assert junit.visible("ok \u00e9 \U0001f600 \ufdd0") == "ok \u00e9 \U0001f600 \ufdd0"


def _long_session_doc(turns: int) -> dict[str, Any]:
    docs = []
    for i in range(1, turns + 1):
        start = f"2026-08-17T{10 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}+00:00"
        docs.append(
            {
                "index": i,
                "started_at": start,
                "ended_at": start,
                "status": "ok",
                "model": "m",
                "provider": "p",
                "mode": "build",
                "reasoning": False,
                "parts": [
                    {"type": "user", "text": f"step {i}: " + "do it " * 30, "timestamp": start},
                    {"type": "tool", "name": "run_command", "input": {"command": f"make {i}"},
                     "output": f"error {i}\n" + "x" * 1500, "is_error": i % 3 != 0,
                     "timestamp": start},
                ],
            }
        )  # fmt: skip
    return session_doc("ses_20260817_120000_long01", turns=docs)


MEASURE = r"""
import gc, json, re, sys
from pathlib import Path
from publisher import gate
from publisher.loader import read_session, session_from_json
from publisher.render import junit

def status(key):
    text = Path("/proc/self/status").read_text()
    return int(re.search(key + r":\s+(\d+) kB", text).group(1)) * 1024

members = gate.session_tree(read_session(Path(sys.argv[1])))
gc.collect()
Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) starts again from here
before = status("VmHWM")
size = chunks = 0
report = junit.junit_report(members, frozenset(["tool-error"]))
if sys.argv[3] == "joined":  # what a report built as one string would cost
    report = iter(["".join(report)])
with open(sys.argv[2], "w", encoding="utf-8") as handle:
    for chunk in report:
        handle.write(chunk)
        size += len(chunk)
        chunks += 1
print(json.dumps({"growth": status("VmHWM") - before, "size": size, "chunks": chunks}))
"""


def _measure(session: Path, out: Path, how: str) -> dict[str, int]:
    result = subprocess.run(
        [sys.executable, "-c", MEASURE, str(session), str(out), how],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    if result.returncode != 0 and "clear_refs" in result.stderr:
        pytest.skip("this kernel cannot reset the peak RSS (/proc/self/clear_refs)")
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


@pytest.mark.slow
def test_junit_of_a_10000_turn_session_is_streamed(archive: Path, write_session: Writer) -> None:
    path = write_session(_long_session_doc(10_000))
    out = archive.parent / "long.xml"
    streamed = _measure(path, out, "streamed")
    # The peak RSS while the report is written, over the loaded session's: under 4 MB for
    # 17 MB of XML (6,667 failures, each with its turn's Markdown); one test case a chunk.
    assert streamed["size"] > 15_000_000
    assert streamed["chunks"] > 10_000
    assert streamed["growth"] < 4_000_000, streamed
    joined = _measure(path, archive.parent / "joined.xml", "joined")
    assert joined["growth"] > 4 * streamed["size"] // 2, joined  # the measure can tell
    doc = junit_doc(out)
    suite = doc.getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("10000", "6667")
    assert doc.xpath("count(//failure)") == 6667
    # And the same through the command line.
    cli_out = archive.parent / "cli.xml"
    code, _, err = run(
        "export", "#long01", "--project", str(archive.parent.parent), "-f", "junit",
        "--out", str(cli_out), "--fail-on", "tool-error",
    )  # fmt: skip
    assert code == 1
    assert "(and 6666 more tool-error: turn 2.2, turn 4.2," in err
    assert cli_out.read_bytes() == out.read_bytes()


# -- docs/ci.md: every command of the recipes runs on the samples ------------------------------

CI_DOC = ROOT / "docs" / "ci.md"
GH_OVERRIDES = {"SESSION": MAIN, "SITE_URL": "https://example.github.io/repo/"}
GL_OVERRIDES = {"SESSION": MAIN, "CI_PAGES_URL": "https://group.gitlab.io/project"}


def doc_blocks(info: str) -> list[str]:
    tokens = MarkdownIt("commonmark").parse(CI_DOC.read_text(encoding="utf-8"))
    return [t.content for t in tokens if t.type == "fence" and t.info.strip() == info]


class Recipe:
    """A sandbox where the publisher runs as `polyglav` (this checkout) and logs each call."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        self.log = tmp / "calls.log"
        shim = bin_dir / "polyglav"
        shim.write_text(
            f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{self.log}"\n'
            f'exec "{sys.executable}" -m publisher "$@"\n'
        )
        shim.chmod(0o755)
        self.env = {
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(ROOT),
        }

    def workdir(self, name: str) -> Path:
        work = self.tmp / name
        work.mkdir()
        return work

    def run_agent(self, work: Path) -> None:
        """The agent's step: it leaves its sessions (here, the samples) in .polyglav/."""
        sessions = work / ".polyglav" / "sessions"
        sessions.mkdir(parents=True)
        for path in SAMPLES.glob("*.json"):
            shutil.copy(path, sessions / path.name)

    def sh(self, script: str, work: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=work, env={**self.env, **env}, capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


def _copy_paths(src: Path, dst: Path, paths: list[str]) -> None:
    for rel in paths:
        source = src / rel
        assert source.exists(), rel
        if source.is_dir():
            shutil.copytree(source, dst / rel)
        else:
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, dst / rel)


def _doc_command_count(texts: list[str]) -> int:
    return sum(
        1 for text in texts for line in text.splitlines() if line.strip().startswith("polyglav ")
    )


def test_the_github_actions_recipe(tmp_path: Path) -> None:
    [block] = [b for b in doc_blocks("yaml") if "jobs:" in b]
    workflow = yaml.safe_load(block)
    env = {k: str(v) for k, v in workflow["env"].items()}
    env.update(GH_OVERRIDES)
    assert not [v for v in env.values() if "${{" in v]
    sandbox = Recipe(tmp_path)
    summary_file = tmp_path / "step_summary.md"
    summary_file.touch()
    env.update(GITHUB_STEP_SUMMARY=str(summary_file), RUNNER_TEMP=str(tmp_path / "runner"))
    artifact = sandbox.workdir("artifact")
    ran, skipped = [], []

    agent, pages = workflow["jobs"]["agent"], workflow["jobs"]["pages"]
    work = sandbox.workdir("agent")
    for step in agent["steps"]:
        uses, run_text = step.get("uses", ""), step.get("run", "")
        assert "${{" not in run_text
        if step.get("name") == "Install the agent and the publisher":
            assert all(
                line.startswith(
                    ("python -m venv", '"$RUNNER_TEMP/agent/bin/pip" install', "pip install")
                )
                for line in run_text.splitlines()
            )
            skipped.append(step["name"])
        elif step.get("name") == "Run the agent":
            assert '--session-id "$SESSION"' in run_text and step["continue-on-error"] is True
            sandbox.run_agent(work)
            skipped.append(step["name"])
        elif run_text:
            assert step["if"] == "always()"
            result = sandbox.sh(run_text, work, env)
            ran.append((step["name"], result.returncode))
            assert result.returncode == 1, result.stderr  # the samples went wrong: the gate fails
            assert (
                "polyglav: fail-on denied: turn 7.2: permission denied: run_command git push origin main"
                in result.stderr
            )
        elif uses.startswith("actions/upload-artifact@"):
            assert step["with"]["include-hidden-files"] is True
            _copy_paths(work, artifact, step["with"]["path"].split())
        elif uses.startswith("mikepenz/action-junit-report@"):
            doc = junit_doc(work / step["with"]["report_paths"])
            assert doc.xpath("count(//testsuite)") == 3 and doc.xpath("count(//failure)") > 0
        else:
            assert uses.startswith(("actions/checkout@", "actions/setup-python@")), step
    assert skipped == ["Install the agent and the publisher", "Run the agent"]
    assert [name for name, _ in ran] == ["Transcript, test report, job summary, gate"]
    assert (work / "polyglav" / "transcript.html").read_text().startswith("<!DOCTYPE html>")
    text = summary_file.read_text()
    assert text.startswith(f"### Polyglav session `{MAIN}`: failed\n")
    link = f"https://example.github.io/repo/sessions/{MAIN}/index.html#turn-7.2"
    assert f"[turn 7.2]({link})" in text

    site = sandbox.workdir("pages")
    for step in pages["steps"]:
        uses, run_text = step.get("uses", ""), step.get("run", "")
        if step.get("name") == "Install the publisher":
            assert run_text == 'pip install "$POLYGLAV_PUBLISHER"'
        elif run_text:
            result = sandbox.sh(run_text, site, env)
            assert result.returncode == 0, result.stderr
        elif uses.startswith("actions/download-artifact@"):
            [upload] = [s for s in agent["steps"] if "upload-artifact@" in s.get("uses", "")]
            assert step["with"]["name"] == upload["with"]["name"]
            shutil.copytree(artifact, site, dirs_exist_ok=True)
        elif uses.startswith("actions/upload-pages-artifact@"):
            public = site / step["with"]["path"]
            page = (public / "sessions" / MAIN / "index.html").read_text()
            assert 'id="turn-7.2"' in page  # the summary's link lands on a real anchor
        else:
            assert uses.startswith(("actions/setup-python@", "actions/deploy-pages@")), step
    assert pages["needs"] == "agent" and "always()" in pages["if"]
    scripts = [step.get("run", "") for job in (agent, pages) for step in job["steps"]]
    assert len(sandbox.calls()) == _doc_command_count(scripts) == 3


def test_the_gitlab_ci_recipe(tmp_path: Path) -> None:
    [block] = [b for b in doc_blocks("yaml") if "stages:" in b]
    pipeline = yaml.safe_load(block)
    env = {k: str(v) for k, v in pipeline["variables"].items()}
    env.update(GL_OVERRIDES)
    sandbox = Recipe(tmp_path)
    artifact = sandbox.workdir("artifact")
    agent, pages = pipeline["agent"], pipeline["pages"]

    work = sandbox.workdir("agent")
    lines = agent["script"]
    assert lines[0].startswith("python -m venv") and lines[1] == 'pip install "$POLYGLAV_PUBLISHER"'
    assert '--session-id "$SESSION"' in lines[2] and lines[2].endswith(
        '|| echo "the agent exited with status $?"'
    )
    sandbox.run_agent(work)
    codes = [sandbox.sh(line, work, env) for line in lines[3:]]
    assert [c.returncode for c in codes] == [0] * (len(codes) - 1) + [1], codes[-1].stderr
    assert agent["artifacts"]["when"] == "always"
    _copy_paths(work, artifact, agent["artifacts"]["paths"])
    doc = junit_doc(work / agent["artifacts"]["reports"]["junit"])
    assert doc.xpath("count(//failure)") > 0
    text = (work / "polyglav" / "summary.md").read_text()
    assert (
        f"[turn 7.2](https://group.gitlab.io/project/sessions/{MAIN}/index.html#turn-7.2)" in text
    )

    site = sandbox.workdir("pages")
    shutil.copytree(artifact, site, dirs_exist_ok=True)  # needs: [agent] brings its artifacts
    assert pages["needs"] == ["agent"] and pages["rules"][0]["when"] == "always"
    assert pages["script"][0] == 'pip install "$POLYGLAV_PUBLISHER"'
    for line in pages["script"][1:]:
        result = sandbox.sh(line, site, env)
        assert result.returncode == 0, result.stderr
    for rel in pages["artifacts"]["paths"]:
        assert (site / rel / "sessions" / MAIN / "index.html").exists()
    assert len(sandbox.calls()) == _doc_command_count(agent["script"] + pages["script"]) == 3


def test_the_command_reference(tmp_path: Path) -> None:
    [block] = doc_blocks("sh")
    sandbox = Recipe(tmp_path)
    work = sandbox.workdir("here")
    sandbox.run_agent(work)
    results = [sandbox.sh(line, work, {"SESSION": MAIN}) for line in block.splitlines()]
    assert [r.returncode for r in results] == [1, 1, 1, 1], [r.stderr for r in results]
    assert results[0].stdout.startswith(
        f"{MAIN}: failed: --fail-on error,denied matched 3 findings"
    )
    assert results[1].stderr.startswith(
        f"{MAIN}: failed: --fail-on error,denied matched 3 findings"
    )
    assert (work / "summary.md").read_text().startswith(f"### Polyglav session `{MAIN}`: failed")
    assert "Sub-agents" not in (work / "summary.md").read_text()  # --no-sub-sessions
    assert junit_doc(work / "report.xml").xpath("count(//failure)") == 1  # turn 12, running
    # Polyglav's own log records no usage: a budget cannot be checked, and fails.
    assert "polyglav: budget: cost unknown: the log records no usage" in results[3].stderr
    assert len(sandbox.calls()) == _doc_command_count([block]) == 4


def test_the_stderr_example_in_the_doc_is_what_the_samples_print() -> None:
    [example] = [b for b in doc_blocks("text") if "fail-on denied" in b]
    _, _, err = run("check", MAIN, *P, "--fail-on", "error,denied")
    assert fail_lines(err) == example.splitlines()


def test_the_readme_and_the_ci_guide_show_real_output() -> None:
    guide = CI_DOC.read_text(encoding="utf-8")
    marker = re.search(r"^<!-- ci-summary: polyglav (.+) -->\n((?:>.*\n)+)", guide, re.M)
    assert marker is not None
    args = marker.group(1).replace("'#ab12cd'", "#ab12cd").split()
    code, stdout, _ = run(*args)
    assert code == 1
    shown = "".join(
        line[2:] if line.startswith("> ") else "\n" for line in marker.group(2).splitlines(True)
    )
    assert shown == stdout
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"^( *)\$ polyglav (check .+)\n((?:\1\S.*\n)+)\1```", readme, re.M)
    assert block is not None
    code, stdout, err = run(*block.group(2).replace("'#ab12cd'", "#ab12cd").split())
    indent = len(block.group(1))
    assert [line[indent:] for line in block.group(3).splitlines()] == (stdout + err).splitlines()
    assert (ROOT / "docs" / "junit-report.png").stat().st_size > 10_000


def test_attribution_stays_fast_for_many_events_and_calls() -> None:
    import time

    n = 10_000
    stamps = [
        f"2026-08-17T12:{i // 3600 % 60:02d}:{i // 60 % 60:02d}.{i % 60:02d}+00:00"
        for i in range(n)
    ]
    calls = [part("tool", name="t", input={}, output="x", timestamp=s) for s in stamps]
    s = _session(
        turns=[turn(1, *calls, started_at=stamps[0], ended_at=stamps[-1])],
        permissions=[
            {"tool": "t", "action": "deny", "decision": "denied", "path": "", "timestamp": stamp}
            for stamp in stamps
        ],
        errors=[{"code": 1, "message": "m", "timestamp": stamp} for stamp in stamps],
    )
    started = time.perf_counter()
    found = gate.session_findings(s)
    elapsed = time.perf_counter() - started
    assert len(found) == 2 * n
    assert [f.turn for f in found if f.kind == "denied"][:3] == ["1.1", "1.2", "1.3"]
    assert elapsed < 10, elapsed  # quadratic matching would take minutes


#: Bidirectional overrides, isolates and marks, zero-width and invisible characters: a
#: forge shows none of them, and a right-to-left override reverses what a reviewer reads.
FORMAT_CHARS = "\u061c\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2066\u2067\u2068\u2069\ufeff"


@pytest.mark.parametrize("char", list(FORMAT_CHARS), ids=lambda c: f"U+{ord(c):04X}")
def test_summary_shows_invisible_and_bidirectional_characters_as_escapes(char: str) -> None:
    """``git push origin main<U+202E>niam/nigiro`` would read reversed on a forge: every such
    character is shown as ``\\uNNNN`` wherever the summary quotes the session."""
    text = f"run {char}tset{char} ok"
    members = _hostile_members(text)
    for base in (None, SITE):
        out = summary.ci_summary(members, frozenset(gate.KINDS), base)
        assert char not in out
        assert f"\\u{ord(char):04x}" in out
