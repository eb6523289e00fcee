"""What real Claude Code logs hold that pages and ``polyglav check`` must say truly (issue
28, 31): replays of compaction and side-question logs published once, images in place,
titles, interrupts apart from refusals, client notices, empty thinking, a result without
its call, a sub-session's role, a log abandoned while a call ran. Each fixture is named in
tests/data/import/README.md (real logs where public ones exist, else built from the
format)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from publisher.gate import counts, findings
from publisher.importers.claude_code import LIVE_SECONDS
from publisher.loader import read_session
from publisher.model import ImagePart, Session, TextualPart, ToolPart
from tests.helpers import build, fresh_digest, tree_digest
from tests.import_helpers import FIXTURES, loaded, quiet_copy, run_import, runner, sessions_dir

pytestmark = pytest.mark.site

REAL = FIXTURES / "claude_code"
REPLAY = FIXTURES / "claude_code_replay"
SPOTTER = FIXTURES / "claude_code_spotter"
TITLES = FIXTURES / "claude_code_titles"
BUILT = FIXTURES / "claude_code_built"


def imported(source: Path, tmp: Path, name: str = "p") -> dict[str, Session]:
    """The sessions importing a quiet copy of ``source`` writes (a log written to long ago)."""
    project = tmp / name
    code, err = run_import("claude-code", quiet_copy(source, tmp / f"{name}-src"), project=project)
    assert code == 0, err
    return loaded(project)


def by_role(sessions: dict[str, Session]) -> dict[str, Session]:
    return {s.role: s for s in sessions.values()}


def tool_parts(session: Session) -> list[ToolPart]:
    return [p for t in session.turns for p in t.parts if isinstance(p, ToolPart)]


def source_lines(folder: Path) -> list[dict[str, Any]]:
    return [
        json.loads(text)
        for path in sorted(folder.rglob("*.jsonl"))
        for text in path.read_text(encoding="utf-8").splitlines()
        if text.strip()
    ]


def export(project: Path, name: str, fmt: str = "md") -> str:
    args = ["export", f"session:{name}", "--project", str(project), "--out", "-"]
    result = runner.invoke(app_(), [*args, "--format", fmt] if fmt != "md" else args)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def app_() -> Any:
    from publisher.cli import app

    return app


# --- 5. replays ----------------------------------------------------------------------


def test_compaction_and_side_question_logs_replaying_the_session_are_published_once(
    tmp_path: Path,
) -> None:
    """Newer Claude Code logs a compaction (``agent-acompact-*``) and a side question
    (``agent-aside_question-*``) under ``subagents/``, replaying the session's lines under
    the same uuids: each failed call showed and counted three times (6 tool errors for 2)."""
    sessions = imported(REPLAY, tmp_path)
    roles = by_role(sessions)
    main, compaction, aside = roles[""], roles["compaction"], roles["side question"]
    assert sorted(main.sub_sessions) == sorted([compaction.session_name, aside.session_name])
    # What each adds, and nothing else: the request and the summary; the question and its
    # answer.
    assert [p.type for t in compaction.turns for p in t.parts] == ["user", "text"]
    assert compaction.turns[0].parts[0].text.startswith("Your task is to create a detailed")  # type: ignore[attr-defined]
    assert [(p.type, p.text) for t in aside.turns for p in t.parts] == [  # type: ignore[attr-defined]
        ("user", "Which of the two failures blocks the push?"),
        (
            "text",
            "The push failed on its own (no upstream branch); the test failure does not block it.",
        ),
    ]
    assert aside.extra["claude_code_replayed"]["lines"] == 6
    assert [e["lines"] for e in main.extra["claude_code_replays"]] == [6, 6]
    # The log holds two failed calls: check finds two, not six.
    found = findings(main, load=lambda name: sessions[name])
    assert counts(found) == {"tool-error": 2}
    # No uuid of a session's line is published twice.
    uuids = [
        p.extra["claude_code"]["uuid"]
        for s in sessions.values()
        for t in s.turns
        for p in t.parts
        if isinstance(p.extra.get("claude_code"), dict) and "uuid" in p.extra["claude_code"]
    ]
    assert len(uuids) == len(set(uuids)) > 0


def test_the_2_1_39_compaction_log_is_a_short_sub_session_of_what_it_adds(
    tmp_path: Path,
) -> None:
    """Claude Code 2.1.39 wrote a compaction's log without replaying: the hook context it
    sent, the request and the summary (real log, marot/spotter)."""
    sessions = imported(REAL, tmp_path)
    compaction = by_role(sessions)["compaction"]
    kinds = [p.type for t in compaction.turns for p in t.parts]
    assert kinds == ["system", "system", "user", "text"]
    assert "<analysis>" in compaction.turns[-1].parts[-1].text  # type: ignore[attr-defined]
    # ...and named where the compaction happened, on the session's /compact record
    (main,) = (s for s in sessions.values() if s.session_name == compaction.parent_id)
    (record,) = (p for t in main.turns for p in t.parts if p.type == "command")
    assert record.extra["sub_session"] == compaction.session_name
    assert not build(sessions_dir(tmp_path / "p"), tmp_path / "site").failures
    page = (tmp_path / "site" / "sessions" / main.session_name / "index.html").read_text()
    assert f"the sub-session <code>{compaction.session_name}</code>" in page


# --- 31.4 interrupts apart from refusals ---------------------------------------------


def test_a_call_the_person_stopped_is_an_interrupt_not_a_declined_permission(
    tmp_path: Path,
) -> None:
    """Real 2.1.39 log: a TaskOutput waited 2.5 minutes on a background task (its
    ``waiting_for_task`` progress), the person pressed Esc; Claude Code wrote its rejection
    text. It read as a declined permission and a tool error."""
    sessions = imported(REAL, tmp_path)
    (session,) = (
        s
        for s in sessions.values()
        if s.kind == "ses" and s.extra["imported_from"]["session_id"][:4] == "258c"
    )
    (stopped,) = (p for p in tool_parts(session) if p.interrupted)
    assert stopped.name == "TaskOutput" and stopped.is_error
    assert stopped.interrupted and not stopped.failed
    assert session.permissions == []
    turn = next(t for t in session.turns if stopped in t.parts)
    assert turn.status == "cancelled"
    found = findings(session)
    assert [f.kind for f in found if f.turn.startswith(f"{turn.index}")] == ["cancelled"]


def test_interrupts_and_refusals_are_told_apart_and_counted_once(tmp_path: Path) -> None:
    """A sub-agent stopped after it ran (its progress) is an interrupt: the call and the
    turn cancelled, once; an Edit refused at the prompt (nothing ran) is a declined
    decision, once (its turn is not also cancelled)."""
    sessions = imported(BUILT, tmp_path)
    main, explore = by_role(sessions)[""], by_role(sessions)["Explore"]
    task = next(p for p in tool_parts(main) if p.name == "Task")
    edit = next(p for p in tool_parts(main) if p.name == "Edit")
    assert task.interrupted and not edit.interrupted
    assert [(p.tool, p.decision) for p in main.permissions] == [("Edit", "declined")]
    assert [t.status for t in main.turns] == ["cancelled", "ok", "ok", "ok"]
    found = findings(main, load=lambda name: sessions[name])
    # turn 1 cancelled (the Task), the Edit declined, the result without its call failed;
    # the sub-agent's own turn cancelled by its "[Request interrupted by user]".
    assert counts(found) == {"tool-error": 1, "declined": 1, "cancelled": 2}
    assert explore.turns[-1].status == "cancelled"


# --- 31.3 roles ------------------------------------------------------------------------


def test_a_sub_session_has_the_role_and_task_its_caller_gave(tmp_path: Path) -> None:
    sessions = imported(REAL, tmp_path)
    subs = [s for s in sessions.values() if s.kind == "sub" and s.role != "compaction"]
    assert [s.role for s in subs] == ["Explore"]
    assert subs[0].extra["task"]["subagent_type"] == "Explore"
    assert subs[0].extra["task"]["description"]
    report = build(sessions_dir(tmp_path / "p"), tmp_path / "site")
    assert not report.failures
    page = (tmp_path / "site" / "sessions" / subs[0].session_name / "index.html").read_text()
    assert "Explore" in page


# --- 6. images -------------------------------------------------------------------------


PNG_NAME_RE = re.compile(r'src="(img-[0-9a-f]{32}\.png)"')


def test_images_are_parts_and_tool_results_published_beside_the_page(tmp_path: Path) -> None:
    """A screenshot pasted with a prompt was a system note "[image block, kept as written]"
    at the end of the previous turn; a Read of a PNG showed "Output (0 B)"."""
    sessions = imported(BUILT, tmp_path)
    main = by_role(sessions)[""]
    first = main.turns[0]
    kinds = [p.type for p in first.parts]
    assert kinds[:3] == ["system", "user", "image"]  # the notice, the prompt, the image
    image = first.parts[2]
    assert isinstance(image, ImagePart) and image.image.media_type == "image/png"
    read = next(p for p in tool_parts(main) if p.name == "Read")
    assert read.output == "" and len(read.images) == 1
    result = read.extra["claude_code_result"]
    assert result["toolUseResult_same_as"] == {"file.base64": ["images", 0]}  # base64 once
    assert "base64" not in result["toolUseResult"]["file"]
    site = tmp_path / "site"
    assert not build(sessions_dir(tmp_path / "p"), site).failures
    folder = site / "sessions" / main.session_name
    page = (folder / "index.html").read_text(encoding="utf-8")
    shown = PNG_NAME_RE.findall(page)
    assert len(set(shown)) == 2
    for rel in shown:
        data = (folder / rel).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
        assert rel == f"img-{hashlib.sha256(data).hexdigest()[:32]}.png"
    assert "base64," not in page and len(page) < 200_000  # never inline on the site
    # hostile images: placeholders, never markup, never a file
    assert page.count("Image not shown:") == 3
    assert "<svg xmlns" not in page and "alert(" not in page
    assert sorted(p.name for p in folder.glob("img-*")) == sorted(set(shown))
    assert "img-src 'self' data:" in page


def test_the_single_file_export_inlines_images_and_the_markdown_names_them(
    tmp_path: Path,
) -> None:
    sessions = imported(BUILT, tmp_path)
    main = by_role(sessions)[""]
    html = export(tmp_path / "p", main.session_name, "html")
    assert html.count('<img src="data:image/png;base64,iVBORw0KGgo') == 2
    assert html.count("Image not shown:") == 3 and "<svg xmlns" not in html
    markdown = export(tmp_path / "p", main.session_name)
    lines = [ln for ln in markdown.splitlines() if ln.startswith(("Image:", "**Image 1"))]
    assert len(lines) == 5
    assert all(re.search(r"image/[a-z+]+, [\d,]+ bytes, sha256 [0-9a-f]{64}", ln) for ln in lines)
    assert "(not shown: an SVG image (it may hold script))" in markdown
    assert "iVBORw0KGgo" not in markdown  # named, not dumped


# --- 7. the smaller ones -----------------------------------------------------------------


def test_a_log_of_titles_names_the_session_it_titles_and_makes_no_session(
    tmp_path: Path,
) -> None:
    """Real 1.0.98 logs: a log holding only a ``summary`` line (the title of another
    session, by ``leafUuid``) was an empty session dated 1970."""
    sessions = imported(TITLES, tmp_path)
    (session,) = sessions.values()
    assert not session.session_name.startswith("ses_1970")
    assert session.title == "Empty Repo Setup: CLAUDE.md Foundation Created"
    site = tmp_path / "site"
    assert not build(sessions_dir(tmp_path / "p"), site).failures
    page = (site / "sessions" / session.session_name / "index.html").read_text()
    assert "<h1>Empty Repo Setup: CLAUDE.md Foundation Created" in page
    index = (site / "index.html").read_text() + "".join(
        p.read_text() for p in (site / "rows").glob("*.js")
    )
    assert "Empty Repo Setup: CLAUDE.md Foundation Created" in index
    markdown = export(tmp_path / "p", session.session_name)
    assert "- **Title:** `Empty Repo Setup: CLAUDE.md Foundation Created`\n" in markdown


def test_a_custom_title_names_the_session(tmp_path: Path) -> None:
    main = by_role(imported(BUILT, tmp_path))[""]
    assert main.title == "Fix the checkout button"


def test_client_notices_are_notes_of_their_turn_never_a_turn_of_their_own(
    tmp_path: Path,
) -> None:
    main = by_role(imported(BUILT, tmp_path))[""]
    prompts = [p.text for t in main.turns for p in t.parts if p.type == "user"]  # type: ignore[attr-defined]
    assert not any(text.startswith("<") for text in prompts)
    assert len(main.turns) == 4  # a system-reminder line opened no turn
    # a skill's line (2.1.x: no <command-name>) is a command, its expansion a note
    skill = main.turns[3].parts
    assert [(p.type, getattr(p, "text", "")[:30]) for p in skill[:2]] == [
        ("command", "/review-css src/Checkout.css"),
        ("system", "Review the stylesheet named in"),
    ]
    notes = [p.text for p in main.turns[0].parts if p.type == "system"]  # type: ignore[attr-defined]
    assert notes[0].startswith("<ide_opened_file>") and notes[1].startswith("<system-reminder>")


def test_empty_thinking_is_a_quiet_note_and_ansi_is_rendered(tmp_path: Path) -> None:
    sessions = imported(BUILT, tmp_path, "b")
    main = by_role(sessions)[""]
    sessions = imported(SPOTTER, tmp_path, "s")
    for name in ("b", "s"):
        assert not build(sessions_dir(tmp_path / name), tmp_path / f"site-{name}").failures
    page = (tmp_path / "site-b" / "sessions" / main.session_name / "index.html").read_text()
    assert "(0 characters)" not in page
    assert page.count("Thinking not in the log") == 2
    (spotter,) = (
        s for s in sessions.values() if s.extra["imported_from"]["session_id"][:4] == "ae4a"
    )
    page = (tmp_path / "site-s" / "sessions" / spotter.session_name / "index.html").read_text()
    stdout = next(
        p
        for t in spotter.turns
        for p in t.parts
        if isinstance(p, TextualPart) and p.text.startswith("<local-command-stdout>")
    )
    assert "\x1b[2m" in stdout.text  # the log holds the escapes...
    assert (
        "\x1b" not in page and "\\x1b" not in page and "[2m" not in page
    )  # ...the page shows none
    assert "Compacted (ctrl+o to see full summary)\n" in page  # dim: no colour to show


def test_a_result_without_its_call_says_so(tmp_path: Path) -> None:
    sessions = imported(BUILT, tmp_path)
    main = by_role(sessions)[""]
    assert not build(sessions_dir(tmp_path / "p"), tmp_path / "site").failures
    page = (tmp_path / "site" / "sessions" / main.session_name / "index.html").read_text()
    assert "The call of this result is not in the log" in page
    assert "Tool result" in page and '<code class="tool-name"></code>' not in page


def test_no_provider_stands_for_a_model(tmp_path: Path) -> None:
    for source in (REAL, TITLES, BUILT, SPOTTER):
        for session in imported(source, tmp_path, source.name).values():
            assert all(t.model or not t.provider for t in session.turns), session.session_name


def test_a_log_abandoned_while_a_call_ran_is_cancelled_a_live_one_running(
    tmp_path: Path,
) -> None:
    """The last turn of the real 2.1.39 sample waits on a call (the log was cut there): it
    read "running" whatever the log's age. It is running only while the log was written to
    in the last hour; such a source is converted again at the next import."""
    old = imported(REAL, tmp_path, "old")
    waiting = next(s for s in old.values() if s.role == "Explore")  # its last Read never returned
    assert waiting.last_status == "cancelled"
    fresh = tmp_path / "fresh-src"
    quiet_copy(REAL, fresh, age=0)
    project = tmp_path / "fresh"
    assert run_import("claude-code", fresh, project=project)[0] == 0
    live = next(s for s in loaded(project).values() if s.role == "Explore")
    assert live.last_status == "running"
    code, err = run_import("claude-code", fresh, project=project)
    assert code == 0 and " 1 skipped" in err  # the other one is skipped, this one read again
    stamp = time.time() - LIVE_SECONDS - 60
    for path in fresh.rglob("*.jsonl"):
        os.utime(path, (stamp, stamp))
    assert run_import("claude-code", fresh, project=project)[0] == 0
    again = read_session(sessions_dir(project) / f"{live.session_name}.json")
    assert again.last_status == "cancelled"


# --- lossless, and check counts what the logs hold ---------------------------------------


@pytest.mark.parametrize("source", [REAL, REPLAY, SPOTTER, TITLES, BUILT], ids=lambda p: p.name)
def test_every_text_of_the_real_logs_is_in_the_export(tmp_path: Path, source: Path) -> None:
    sessions = imported(source, tmp_path)
    exports = "".join(export(tmp_path / "p", name) for name in sessions)
    checked = 0
    for record in source_lines(source):
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks or []:
            texts = []
            if block.get("type") == "text":
                texts = [block["text"]]
            elif block.get("type") == "thinking":
                texts = [block["thinking"]]
            elif block.get("type") == "tool_result" and isinstance(block.get("content"), str):
                texts = [block["content"]]
            for text in texts:
                for line in text.splitlines():
                    assert line.strip() == "" or line in exports, line[:100]
                    checked += 1
    assert checked > 5


def test_check_counts_what_the_logs_hold(tmp_path: Path) -> None:
    """Every failure a log records counts once, counted from the source by another route
    (its lines, each uuid once): a failed call (an ``is_error`` result that is not Claude
    Code's rejection) is one tool error; each rejection is one declined decision or one
    interrupt (never both, never a tool error too)."""
    for source in (REAL, REPLAY, SPOTTER, TITLES, BUILT):
        sessions = imported(source, tmp_path, source.name)
        roots = [s for s in sessions.values() if not s.parent_id]
        got = counts(f for root in roots for f in findings(root, load=sessions.__getitem__))
        failed: set[tuple[str, str]] = set()
        rejected: set[tuple[str, str]] = set()
        for record in source_lines(source):
            if record.get("type") != "user" or not isinstance(record.get("message"), dict):
                continue
            content = record["message"]["content"]
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_result" and block.get("is_error") is True:
                    key = (record["uuid"], block["tool_use_id"])
                    text = json.dumps(block.get("content"))
                    (rejected if "doesn't want to proceed" in text else failed).add(key)
        interrupted = sum(p.interrupted for s in sessions.values() for p in tool_parts(s))
        assert got.get("tool-error", 0) == len(failed), (source.name, got)
        assert got.get("declined", 0) + interrupted == len(rejected), (source.name, got)


def test_an_incremental_build_publishes_and_removes_images_as_a_full_one(tmp_path: Path) -> None:
    """Images are files of the published folder: a changed image replaces its file, a
    removed one's file goes, and the site equals a fresh full build's, file by file."""
    sessions = imported(BUILT, tmp_path)
    main = by_role(sessions)[""]
    folder = sessions_dir(tmp_path / "p")
    site = tmp_path / "site"
    assert not build(folder, site).failures
    images = site / "sessions" / main.session_name
    before = sorted(p.name for p in images.glob("img-*"))
    assert len(before) == 2
    (images / before[0]).unlink()  # deleted by hand: the next build writes it again
    assert not build(folder, site).failures
    assert (images / before[0]).is_file()
    path = folder / f"{main.session_name}.json"
    doc = json.loads(path.read_bytes())
    read = next(p for t in doc["turns"] for p in t["parts"] if p.get("name") == "Read")
    del read["images"]  # the Read's image gone
    shot = next(p for p in doc["turns"][0]["parts"] if p["type"] == "image")
    red = base64.b64decode(shot["data"]).replace(b"IDAT", b"IDAT", 1)
    shot["data"] = base64.b64encode(red + b"\x00").decode()  # another image (a byte more)
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert not build(folder, site).failures
    after = sorted(p.name for p in images.glob("img-*"))
    assert len(after) == 1 and not set(after) & set(before)
    assert tree_digest(site) == fresh_digest(folder, tmp_path / "fresh")
