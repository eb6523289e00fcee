"""The Nu Html Checker (vnu.jar from npm) reports no error on the pages we publish."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import (
    MAIN,
    SAMPLES,
    Writer,
    build,
    friendly_tools,
    page_of,
    part,
    require,
    session_doc,
    turn,
    two_runs,
)

pytestmark = [pytest.mark.site, pytest.mark.slow]

VNU = Path(__file__).parent / "node_modules" / "vnu-jar" / "build" / "dist" / "vnu.jar"


def vnu_errors(files: list[Path]) -> list[str]:
    require(VNU.is_file(), "vnu-jar is not installed (bash scripts/setup-tests.sh)")
    require(shutil.which("java") is not None, "Java, for the Nu Html Checker, is not installed")
    result = subprocess.run(
        ["java", "-jar", str(VNU), "--errors-only", "--format", "json", *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    messages = json.loads(result.stderr or result.stdout or '{"messages": []}')["messages"]
    return [
        f"{m.get('url', '')}:{m.get('lastLine')}: {m['message']}"
        for m in messages
        if m["type"] == "error"
    ]


def test_demo_site_and_odd_sessions_are_valid_html(
    tmp_path: Path, archive: Path, write_session: Writer
) -> None:
    hostile = '<b>"x"</b> & </pre></code><script>alert(1)</script> \ud800 ](javascript:x)'
    write_session(
        session_doc(
            role=hostile,
            turns=[
                turn(
                    1,
                    part("user", hostile),
                    part("text", "# H1\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n![img](x.png)"),
                ),
                turn(
                    1, part("tool", name=hostile, input={"k": [1, None, 2.5]}), status=hostile
                ),  # duplicate index
                turn(
                    2,
                    {"type": "future", "x": 1},
                    part("command", "/compact", summary=hostile, compact_from=9),
                ),
                turn(3, *friendly_tools(hostile)),
            ],
            errors=[{"code": "E42", "message": hostile, "timestamp": hostile}],
            permissions=[
                {"tool": hostile, "action": "ask", "decision": hostile, "path": "", "timestamp": ""}
            ],
            extra_top={"a": hostile},
        )
    )
    odd = tmp_path / "odd"
    build(archive, odd)
    demo = tmp_path / "demo"
    build(SAMPLES, demo)
    single = tmp_path / "single.html"
    from publisher.archive import Archive
    from publisher.site.single import export_html

    single.write_text("".join(export_html(Archive(SAMPLES).resolve("#ab12cd"))), encoding="utf-8")
    runs = tmp_path / "runs"
    runs.mkdir()
    two_runs(runs)
    compared = tmp_path / "compared"
    build(runs, compared)
    compare_pages = sorted(compared.glob("sessions/*/compare.html"))
    assert len(compare_pages) == 1
    files = [
        *sorted(demo.rglob("*.html")),
        *compare_pages,
        odd / "index.html",
        page_of(odd, MAIN),
        single,
    ]
    assert vnu_errors(files) == []
