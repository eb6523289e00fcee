"""``polyglav compare A B``: two runs aligned turn by turn."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from publisher.cli import app
from tests.helpers import two_runs

pytestmark = pytest.mark.unit

runner = CliRunner()


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
