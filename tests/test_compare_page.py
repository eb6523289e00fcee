"""A run's comparison page against the previous run of its series: what it depends on, and
what an append or a new run rewrites."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from publisher.redact import Redactor
from publisher.render.html import HtmlRenderer
from publisher.site.comparison import render_compare_page
from publisher.site.context import Tunables
from publisher.theme import Theme
from tests.helpers import (
    OLD_NS,
    build,
    fresh_digest,
    parse_session_bytes,
    part,
    session_doc,
    tree_digest,
    turn,
    write_json,
)

pytestmark = pytest.mark.site

RUNS = [f"job_2026010{i}_000000_run00{i}" for i in range(1, 5)]


def run_doc(i: int, turns: int = 2, status: str = "ok") -> dict[str, Any]:
    return session_doc(
        RUNS[i],
        role="nightly",
        created_at=f"2026-01-0{i + 1}T00:00:00Z",
        turns=[
            turn(
                n + 1,
                part("user", f"step {n + 1}"),
                part("tool", name="sh", input={"cmd": f"make {n + 1}"}, output=f"done {i}"),
                status=status,
            )
            for n in range(turns)
        ],
    )


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {rel for rel in {*before, *after} if before.get(rel) != after.get(rel)}


def test_every_run_but_the_first_links_its_comparison(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for i in range(3):
        write_json(sessions / f"{RUNS[i]}.json", run_doc(i), OLD_NS)
    out = tmp_path / "site"
    build(sessions, out)
    assert not (out / "sessions" / RUNS[0] / "compare.html").exists()
    assert (
        "compare with previous run" not in (out / "sessions" / RUNS[0] / "index.html").read_text()
    )
    for name, previous in ((RUNS[1], RUNS[0]), (RUNS[2], RUNS[1])):
        page = (out / "sessions" / name / "index.html").read_text()
        assert '<a class="compare-link" href="compare.html">compare with previous run</a>' in page
        compare = (out / "sessions" / name / "compare.html").read_text()
        assert f'<a href="../{previous}/index.html"><code>{previous}</code></a>' in compare
        assert '<a class="small" href="index.html#turn-2">' in compare
        # Times as every page shows them (UTC, no "T" or offset).
        day = int(name[11])
        created = f"<td>2026-01-0{day - 1} 00:00:00</td><td>2026-01-0{day} 00:00:00</td>"
        assert created in compare


def test_an_append_rewrites_the_run_and_the_next_runs_comparison(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for i in range(3):
        write_json(sessions / f"{RUNS[i]}.json", run_doc(i), OLD_NS)
    out = tmp_path / "site"
    build(sessions, out)
    before = tree_digest(out)
    write_json(sessions / f"{RUNS[1]}.json", run_doc(1, turns=3))
    report = build(sessions, out)
    after = tree_digest(out)
    assert after == fresh_digest(sessions, tmp_path / "fresh")
    sessions_changed = {rel for rel in changed(before, after) if rel.startswith("sessions/")}
    assert sessions_changed == {
        f"sessions/{RUNS[1]}/index.html",
        f"sessions/{RUNS[1]}/compare.html",
        f"sessions/{RUNS[2]}/compare.html",
    }
    assert report.sessions_rendered == 2  # the run, and the next run's comparison
    compare = (out / "sessions" / RUNS[2] / "compare.html").read_text()
    assert "(no turn)" in compare  # the previous run has a third turn now, this one has not

    # A new run: its pages, and the previous last run's "next" link, nothing else.
    before = after
    write_json(sessions / f"{RUNS[3]}.json", run_doc(3, status="error"))
    build(sessions, out)
    after = tree_digest(out)
    assert after == fresh_digest(sessions, tmp_path / "fresh2")
    sessions_changed = {rel for rel in changed(before, after) if rel.startswith("sessions/")}
    assert sessions_changed == {
        f"sessions/{RUNS[2]}/index.html",
        f"sessions/{RUNS[3]}/index.html",
        f"sessions/{RUNS[3]}/compare.html",
    }


def test_an_unreadable_previous_run_is_said_not_fatal(tmp_path: Path) -> None:
    """The previous run is read when the comparison is made; when it cannot be (it broke
    after the scan), the page says so and the run still publishes."""
    renderer = HtmlRenderer(Theme.load(None))
    current = parse_session_bytes(json.dumps(run_doc(1)).encode(), f"{RUNS[1]}.json")
    html = render_compare_page(
        renderer,
        None,
        current,
        ["index.html#turn-1", "index.html#turn-2"],
        previous_name=RUNS[0],
        previous_url=f"../{RUNS[0]}/index.html",
        unreadable="not valid JSON",
    )
    assert "The previous run could not be read: not valid JSON" in html


def test_a_run_kept_from_its_render_compares_as_one_read_again(tmp_path: Path) -> None:
    """The render keeps a run it rendered for the comparison page of its series' next run
    (Tunables.keep_runs_bytes) rather than reading it again: the site is the same, redacted
    alike, as with nothing kept; and the kept run is the one rendered (a file broken after
    its render does not break the next run's comparison, as a read would)."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for i in range(4):
        doc = run_doc(i, turns=2 + i % 2)
        doc["turns"][0]["parts"][1]["output"] = f"key AKIA{'ABCDEFGHIJKLMNO'}{i} done {i}"
        write_json(sessions / f"{RUNS[i]}.json", doc, OLD_NS)
    redactor = Redactor.create()
    kept = fresh_digest(sessions, tmp_path / "kept", redactor=redactor)
    read = fresh_digest(
        sessions, tmp_path / "read", redactor=redactor, tunables=Tunables(keep_runs_bytes=0)
    )
    assert kept == read
    compare = (tmp_path / "kept" / "sessions" / RUNS[2] / "compare.html").read_text()
    assert "[REDACTED:aws-access-key]" in compare and "AKIA" not in compare

    def break_first_run(stage: str, done: int, total: int) -> None:
        if stage == "render" and done == 1:  # RUNS[0] is rendered, RUNS[1] not yet
            (sessions / f"{RUNS[0]}.json").write_text("{ not json")

    build(sessions, tmp_path / "broken", progress=break_first_run)
    compare = (tmp_path / "broken" / "sessions" / RUNS[1] / "compare.html").read_text()
    assert "could not be read" not in compare
    assert f"<code>{RUNS[0]}</code>" in compare
    write_json(sessions / f"{RUNS[0]}.json", run_doc(0), OLD_NS)
    build(
        sessions,
        tmp_path / "broken-read",
        progress=break_first_run,
        tunables=Tunables(keep_runs_bytes=0),
    )
    compare = (tmp_path / "broken-read" / "sessions" / RUNS[1] / "compare.html").read_text()
    assert "The previous run could not be read" in compare


def test_a_kept_run_goes_once_a_later_file_is_rendered_here(tmp_path: Path) -> None:
    """A worker keeps a rendered run for its series' next run only until it renders a file
    that sorts after that next run's file: a worker gets its jobs in file-name order, so
    that next run went to another worker, and the kept run would only hold memory (7,700
    small sessions a worker at 20,000). The next run's own file is not past it."""
    from publisher.site.render import PageLimits
    from publisher.site.stages import worker
    from publisher.site.stages.render import RenderSetup, SessionRenderer

    theme = Theme.load(None)
    setup = RenderSetup(
        theme=theme,
        folder=tmp_path,
        out=tmp_path,
        fragments=tmp_path,
        redactor=None,
        limits=PageLimits(100, 1 << 20),
        keep_runs_bytes=1 << 20,
    )
    here = SessionRenderer(setup, HtmlRenderer(theme), worker.Kept(0))
    run: Any = object()  # what is kept is not looked into
    here._keep_run("a", 10, run, "c.json")  # its next run: c
    here._keep_run("b", 10, run, "")  # the last of its series: not kept
    assert list(here.runs) == ["a"] and here.runs_bytes == 10
    here._forget_runs("c.json")  # rendering c: a is asked for now
    assert list(here.runs) == ["a"]
    here._forget_runs("d.json")  # past c: c was rendered elsewhere
    assert here.runs == {} and here.runs_bytes == 0
