"""``polyglav compare A B``: two runs aligned turn by turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from publisher.cli import app
from tests.helpers import part, session_doc, turn

pytestmark = pytest.mark.unit

runner = CliRunner()


def two_runs(folder: Path) -> tuple[str, str]:
    a_name, b_name = "job_20260825_110000_aaaaaa", "job_20260826_110000_bbbbbb"
    a = session_doc(
        a_name,
        role="nightly",
        turns=[
            turn(
                1,
                part("user", "run the tests"),
                part("tool", name="sh", input={"cmd": "pytest"}, output="3 passed"),
                started_at="2026-08-25T11:00:00+00:00",
                ended_at="2026-08-25T11:00:10+00:00",
            )
        ],
    )
    b = session_doc(
        b_name,
        role="nightly",
        turns=[
            turn(
                1,
                part("user", "run the tests"),
                part("tool", name="sh", input={"cmd": "pytest"}, output="2 passed\n1 failed"),
                part("tool", name="sh", input={"cmd": "git log -1"}, output="abc"),
                status="error",
                started_at="2026-08-26T11:00:00+00:00",
                ended_at="2026-08-26T11:00:30+00:00",
            )
        ],
        errors=[
            {
                "code": 503,
                "message": "Service Unavailable",
                "timestamp": "2026-08-26T11:00:20+00:00",
            }
        ],
    )
    (folder / f"{a_name}.json").write_text(json.dumps(a))
    (folder / f"{b_name}.json").write_text(json.dumps(b))
    return a_name, b_name


def test_compare_shows_added_call_changed_status_new_error(tmp_path: Path) -> None:
    a, b = two_runs(tmp_path)
    result = runner.invoke(app, ["compare", a, f"session:{b}", "--project", str(tmp_path)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "1 of 1 turns differ" in out
    assert "! turn 1: ok -> error  10.0s -> 30.0s" in out
    assert '+ sh {"cmd":"git log -1"} (added)' in out
    assert "+ error 503: Service Unavailable" in out
    assert '! sh {"cmd":"pytest"} (output differs)' in out
    assert "-3 passed" in out and "+1 failed" in out


def test_compare_unknown_run_is_an_error(tmp_path: Path) -> None:
    a, _ = two_runs(tmp_path)
    result = runner.invoke(app, ["compare", a, "nosuch", "--project", str(tmp_path)])
    assert result.exit_code != 0
