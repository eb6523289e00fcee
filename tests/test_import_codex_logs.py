"""Issue 28, Codex half: real Codex CLI rollouts read truly.

Each class of the issue against the real logs kept in ``tests/data/import/codex`` (origin,
commit and licence in its README): failed calls (an ``Exit code: N`` header, a
``{"output", "metadata"}`` wrapper, ``Process exited with code N``, Codex's own error
messages) marked failed with their exit code and counted once, wherever they are counted;
wrapped outputs unwrapped and still recoverable; the tools that had no view; sub-agents
linked to their parents, their copied history kept apart; interrupts as cancelled turns.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree
from typer.testing import CliRunner

from publisher import gate
from publisher.cli import app
from publisher.importers import codex
from publisher.model import Session, TextualPart, ToolPart
from publisher.render import tools
from publisher.render.html import HtmlRenderer
from publisher.theme import Theme
from tests.helpers import build, export_markdown_text, page_of
from tests.import_helpers import FIXTURES, loaded, run_import, sessions_dir, write_jsonl

pytestmark = pytest.mark.site

CODEX = FIXTURES / "codex"
FAMILY = CODEX / "sessions" / "2026" / "03" / "20"
runner = CliRunner()
OUTPUTS = ("function_call_output", "custom_tool_call_output")

#: Every call whose log says it failed, per real rollout: (tool, exit code or None when the
#: log gives none), in order. Read from the rollouts by hand (the README says what each is).
FAILED: dict[str, list[tuple[str, int | None]]] = {
    # Codex CLI 0.79: "Exit code: N" headers, a failed patch, a command the user refused.
    "019ba1f0-504b-7643-82d5-364d9e886114": [
        ("shell_command", 2),
        ("shell_command", 1),
        ("shell_command", 1),
        ("shell_command", 127),
        ("apply_patch", None),
        ("shell_command", 128),
        ("shell_command", 2),
    ],
    # Codex Desktop 0.108 (PowerShell, ANSI colours), three calls then aborted by the user.
    "019cc1e9-6537-70a3-a8cd-d2957e043dd4": [("shell_command", 1), ("shell_command", 1)],
    # Codex 0.42 in VS Code: the shell's wrapped outputs, {"output", "metadata"}.
    "0199955b-5deb-72e2-9988-4b1b799e1206": [("shell", 127)] * 4,
    # Codex 0.50: wrapped outputs, apply_patch run through the shell.
    "019a24c9-ea2a-7dd0-bce4-6965486ab43d": [("shell", 2), ("shell", 1)],
    # Codex 0.111: unified exec ("Process exited with code N"); a poll that sees the exit of
    # a command started earlier is that command's failure; a poll of a closed stdin.
    "019cc379-79d6-7c21-885e-132b8a0c295f": [
        ("exec_command", 1),
        ("write_stdin", None),
        ("exec_command", 255),
    ],
    # Codex 0.36: a command the macOS sandbox denied ("…, exit code: 1, stdout: …").
    "9cd28a74-da7e-4458-a91a-fffec2be9d7a": [("shell", 1)],
    # The same session forked (0.36): its copied history holds the failure above, which is
    # not counted again; its own turns hold one more.
    "613a9a68-8816-40b2-a2d4-041ade599da6": [("shell", 1)],
}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("codex") / "p"
    code, err = run_import("codex", CODEX, project=project)
    assert code == 0, err
    return project


def by_codex_id(project: Path) -> dict[str, Session]:
    return {s.extra["imported_from"]["session_id"]: s for s in loaded(project).values()}


def calls(session: Session) -> list[ToolPart]:
    return [p for t in session.turns for p in t.parts if isinstance(p, ToolPart)]


@pytest.mark.parametrize("codex_id", sorted(FAILED))
def test_every_call_whose_log_says_it_failed_is_failed_with_its_exit_code(
    imported: Path, codex_id: str
) -> None:
    session = by_codex_id(imported)[codex_id]
    failed = [(p.name, p.extra.get("exit_code")) for p in calls(session) if p.is_error]
    assert failed == FAILED[codex_id]
    # a call that succeeded keeps its exit code too, and is not failed
    for part in calls(session):
        if part.extra.get("exit_code") == 0:
            assert not part.is_error


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("codex_id", sorted(FAILED))
def test_check_fails_such_a_run_and_every_report_gives_the_same_count(
    imported: Path, codex_id: str, tmp_path: Path
) -> None:
    """``check --fail-on tool-error`` fails the run; the session page, the Markdown export,
    the summary, the JUnit report and the findings give the same number of failed calls, and
    the index row the same number of calls."""
    session = by_codex_id(imported)[codex_id]
    name = session.session_name
    expected = len(FAILED[codex_id])
    project = ["--project", str(imported), "--no-sub-sessions"]
    code, out, err = run("check", name, "--fail-on", "tool-error", *project, "--summary", "-")
    assert code == 1, (out, err)
    assert f"matched {expected} finding{'s' if expected > 1 else ''} ({expected} tool-error)" in err
    assert f"- **Tool calls:** {session.tool_calls} ({expected} failed" in out  # (, 1 refused)
    findings = gate.session_findings(session, ["tool-error"])
    assert len(findings) == expected
    report = tmp_path / "report.xml"
    code, _, err = run(
        "export",
        name,
        *project,
        "--format",
        "junit",
        "--out",
        str(report),
        "--fail-on",
        "tool-error",
    )
    assert code == 1, err
    suite = etree.parse(str(report)).xpath("//testsuite")[0]
    said = suite.xpath("string(system-out)")
    assert said.count("tool error: ") == expected, said
    code, markdown, err = run("export", name, *project, "--out", "-")
    assert code == 0, err
    assert f"- **Tool calls:** {session.tool_calls} ({expected} failed" in markdown
    site = tmp_path / "site"
    assert not build(sessions_dir(imported), site).failures
    page = page_of(site, name).read_text(encoding="utf-8")
    assert re.search(
        rf"<dt>Tool calls</dt><dd>{session.tool_calls} <span class=\"dim\">\({expected} failed[,)]",
        page,
    ), name
    index = (site / "index.html").read_text(encoding="utf-8")
    rows = "".join(p.read_text(encoding="utf-8") for p in sorted((site / "rows").glob("*.js")))
    row = re.search(
        rf'{re.escape(name)}.*?data-label="Tool calls" class="num c-tools">(\d+)<',
        index + rows,
        re.S,
    )
    assert row is not None and int(row.group(1)) == session.tool_calls


def test_a_failure_reported_by_the_call_and_by_its_events_is_one_failure(imported: Path) -> None:
    """Codex 0.118 writes ``exec_command_end`` (exit code 101) and the output (``Process exited
    with code 101``) of one call; a poll (``write_stdin``) of a command started earlier sees
    the exit its ``exec_command_end`` reports too: one failed call each time."""
    sessions = by_codex_id(imported)
    parent = sessions["019d0ab0-0100-7a01-8b02-c03d04e05f06"]
    worker = sessions["019d0ab0-9d40-7e01-8b02-c03d04e05f06"]
    assert [(p.name, p.extra.get("exit_code")) for p in calls(parent) if p.is_error] == [
        ("exec_command", 101)
    ]
    assert [(p.name, p.extra.get("exit_code")) for p in calls(worker) if p.is_error] == [
        ("apply_patch", None),
        ("exec_command", 101),
    ]
    poll = next(p for p in calls(worker) if p.name == "write_stdin")
    assert not poll.is_error and poll.extra["codex_process_exit"] == 101
    # the command's card says how it ended, though its own output is its first chunk
    # ("Process running with session ID 7311")
    html = HtmlRenderer(Theme.load(None)).render_turn(worker, worker.turns[0], [], None).html
    assert html.count('<span class="badge tool-error">error, exit 101</span>') == 1
    assert html.count('<span class="badge tool-error">error</span>') == 1  # the patch
    markdown = export_markdown_text(worker)
    assert "### 1.5 Tool call `exec_command` — **error** (exit 101)\n" in markdown


def recovered(part: ToolPart) -> str | None:
    kept = part.extra.get("codex_output", {})
    if isinstance(kept.get("output"), str):
        return str(kept["output"])
    wrapper = kept["output_wrapper"]
    return json.dumps({"output": part.output, **wrapper}, ensure_ascii=False, separators=(",", ":"))


def test_wrapped_outputs_are_unwrapped_and_the_original_recoverable(imported: Path) -> None:
    """``{"output": "...", "metadata": {"exit_code": 1, "duration_seconds": 0.2}}`` (the shell
    of Codex 0.42 and 0.50, apply_patch of 0.50–0.118): the output is the inner text, the
    exit code and duration are the part's; writing the wrapper again gives the source."""
    sources: dict[str, str] = {}
    for path in CODEX.rglob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            payload = json.loads(line).get("payload") or {}
            kind = payload.get("type")
            if kind in OUTPUTS and str(payload.get("output")).startswith('{"output":'):
                sources[payload["call_id"]] = payload["output"]
    seen = 0
    for session in loaded(imported).values():
        for part in calls(session):
            call_id = part.extra.get("codex", {}).get("call_id")
            if call_id not in sources:
                continue
            source = json.loads(sources[call_id])
            assert part.output == source["output"]
            assert part.extra.get("exit_code") == source["metadata"].get("exit_code")
            assert part.extra.get("duration_seconds") == source["metadata"].get("duration_seconds")
            assert part.is_error == (source["metadata"].get("exit_code") != 0)
            assert recovered(part) == sources[call_id]
            assert not part.output.startswith('{"output":')
            seen += 1
    assert seen >= 20, seen
    # check's messages quote the inner text, not escaped JSON
    session = by_codex_id(imported)["0199955b-5deb-72e2-9988-4b1b799e1206"]
    messages = [f.message for f in gate.session_findings(session, ["tool-error"])]
    assert (
        messages[0] == "tool error: shell: /bin/bash: line 1: ./specify: No such file or directory"
    )


def view_of(session: Session, name: str, n: int = 0) -> tools.ToolView | None:
    return tools.friendly([p for p in calls(session) if p.name == name][n])


def test_codex_tools_without_a_view_have_one(imported: Path) -> None:
    sessions = by_codex_id(imported)
    command = view_of(sessions["019ba1f0-504b-7643-82d5-364d9e886114"], "shell_command")
    assert command == tools.ToolView("shell", command="ls")
    # apply_patch run through the shell, as an argument (0.50) and a here-document (0.36)
    argv = view_of(sessions["019a24c9-ea2a-7dd0-bce4-6965486ab43d"], "shell", 1)
    assert argv is not None and argv.kind == "diff"
    assert argv.diff.startswith("*** Begin Patch\n*** Add File: context/README.md\n")
    heredoc = view_of(sessions["9cd28a74-da7e-4458-a91a-fffec2be9d7a"], "shell", 1)
    assert heredoc is not None and heredoc.kind == "diff"
    assert heredoc.diff.startswith("*** Begin Patch\n*** Add File: tests/test_status_")
    assert heredoc.diff.endswith("*** End Patch")
    searches = [tools.friendly(p) for p in calls(sessions["019d0ab0-0100-7a01-8b02-c03d04e05f06"])]
    page = "https://docs.rs/nom/latest/nom/bytes/complete/fn.escaped_transform.html"
    assert searches[:4] == [
        tools.ToolView("web_search", query="rust string literal escape parsing nom"),
        tools.ToolView("fetch", url=page),
        tools.ToolView("search", pattern="control_char", path=page),
        None,  # an open_page naming no page: the generic view
    ]
    spawn = searches[4]
    assert spawn is not None and (spawn.kind, spawn.role) == ("delegate", "explorer")
    assert spawn.target.startswith("sub_20260320_100020_")


def test_a_here_document_that_does_more_than_apply_a_patch_stays_a_command() -> None:
    script = "apply_patch <<'PATCH'\n*** Begin Patch\n*** End Patch\nPATCH\nrm -rf build\n"
    part = ToolPart(type="tool", name="shell", input={"command": ["bash", "-lc", script]})
    assert tools.friendly(part) == tools.ToolView("shell", command=script)


def test_sub_agents_are_sub_sessions_linked_both_ways_with_their_roles(imported: Path) -> None:
    sessions = by_codex_id(imported)
    parent = sessions["019d0ab0-0100-7a01-8b02-c03d04e05f06"]
    explorer = sessions["019d0ab0-4f20-7c01-8b02-c03d04e05f06"]
    worker = sessions["019d0ab0-9d40-7e01-8b02-c03d04e05f06"]
    assert parent.kind == "ses" and parent.sub_sessions == [
        explorer.session_name,
        worker.session_name,
    ]
    for child, role, nickname in ((explorer, "explorer", "Euclid"), (worker, "worker", "Noether")):
        assert child.session_name.startswith("sub_")
        assert child.parent_id == parent.session_name
        assert child.role == role
        assert child.extra["imported_from"]["agent_nickname"] == nickname
    spawns = [p for p in calls(parent) if p.name == "spawn_agent"]
    assert [p.extra["sub_session"] for p in spawns] == parent.sub_sessions


def test_history_a_fork_copies_is_kept_apart_not_read_as_prompts(imported: Path) -> None:
    """A forked sub-agent's rollout holds its parent's log (a second ``session_meta``, then
    the parent's records): one system note says so, the records are kept as written, and the
    parent's prompt is not a prompt of the sub-session."""
    sessions = by_codex_id(imported)
    worker = sessions["019d0ab0-9d40-7e01-8b02-c03d04e05f06"]
    prompts = [
        p.text
        for t in worker.turns
        for p in t.parts
        if isinstance(p, TextualPart) and p.type == "user"
    ]
    assert prompts == ["Fix the failing escape test in tests/strings.rs; keep the change minimal."]
    assert len(worker.turns) == 1
    note = worker.turns[0].parts[0]
    assert isinstance(note, TextualPart) and note.type == "system"
    assert note.text.startswith(
        "Context inherited from the parent session 019d0ab0-0100-7a01-8b02-c03d04e05f06:"
        " Codex copied 17 records of its log into this one (lines 2–18)."
    )
    (block,) = worker.extra["codex_inherited"]
    source = FAMILY / "rollout-2026-03-20T11-00-40-019d0ab0-9d40-7e01-8b02-c03d04e05f06.jsonl"
    lines = source.read_text(encoding="utf-8").splitlines()
    assert [entry["record"] for entry in block["records"]] == [json.loads(x) for x in lines[1:18]]
    # a conversation forked in Codex 0.36 (no sub-agent): its copy ends where its own turns
    # start (the first pause after the copy is written at once)
    forked = sessions["613a9a68-8816-40b2-a2d4-041ade599da6"]
    assert [
        p.text
        for t in forked.turns
        for p in t.parts
        if isinstance(p, TextualPart) and p.type == "user"
    ] == [
        "等下再继续，目前每个命令的描述风格似乎不一致",
        "可以",
        "可以直接放在docstring",
    ]
    assert forked.extra["codex_inherited"][0]["lines"] == [2, 64]


def test_commentary_with_no_response_item_shows_in_place(imported: Path) -> None:
    explorer = by_codex_id(imported)["019d0ab0-4f20-7c01-8b02-c03d04e05f06"]
    (turn,) = explorer.turns
    kinds = [
        (
            p.type,
            p.text if isinstance(p, TextualPart) else p.name if isinstance(p, ToolPart) else "",
        )
        for p in turn.parts
    ]
    assert kinds[-4:] == [
        (
            "user",
            "Find where the parser handles backslash escapes in string literals; report file and function names only.",
        ),
        ("text", "Looking for the escape handling in the lexer first."),
        ("tool", "exec_command"),
        ("text", "Escapes are parsed in src/lexer.rs, fn string_literal (via unescape)."),
    ]
    raws = [
        r["record"]["payload"]["type"]
        for t in explorer.turns
        for r in t.extra.get("raw_records", [])
    ]
    assert "agent_message" not in raws


def test_the_editor_context_vs_code_sends_is_a_note_not_the_prompt(imported: Path) -> None:
    """Codex in VS Code writes the editor's context (active file, open tabs) and then the
    request, as one message: the context is a note of the turn, the request its prompt (the
    index's preview, /history), and the two put together are the message as written."""
    session = by_codex_id(imported)["0199955b-5deb-72e2-9988-4b1b799e1206"]
    note, prompt = session.turns[0].parts[2:4]
    assert isinstance(note, TextualPart) and note.type == "system"
    assert isinstance(prompt, TextualPart) and prompt.type == "user"
    assert note.text.startswith("# Context from my IDE setup:\n\n## Active file: .kiro/")
    assert note.text.endswith("\n## My request for Codex:\n")
    assert prompt.text == "/specify --help\n"
    source = CODEX / "rollout-2025-09-29T17-33-37-0199955b-5deb-72e2-9988-4b1b799e1206.jsonl"
    written = [json.loads(x) for x in source.read_text(encoding="utf-8").splitlines()]
    message = next(
        r for r in written if "IDE setup" in json.dumps(r) and r["type"] == "response_item"
    )
    assert note.text + prompt.text == message["payload"]["content"][0]["text"]
    # the UI's copy of the message is the same message: no part of its own
    texts = [p.text for p in session.turns[0].parts if isinstance(p, TextualPart)]
    assert message["payload"]["content"][0]["text"] not in texts


def test_interrupts_are_cancelled_turns_never_refusals(imported: Path) -> None:
    """Codex Desktop: three calls ``aborted by user``, a ``<turn_aborted>`` notice and a
    ``turn_aborted`` event: the turn is cancelled, the calls neither failed nor refused, and
    the notice is a note of the turn, not a prompt."""
    desktop = by_codex_id(imported)["019cc1e9-6537-70a3-a8cd-d2957e043dd4"]
    (turn,) = desktop.turns
    assert turn.status == "cancelled" and desktop.permissions == []
    aborted = [p for p in calls(desktop) if p.output == "Wall time: 6.4 seconds\naborted by user"]
    assert len(aborted) == 3 and not any(p.is_error for p in aborted)
    last = turn.parts[-1]
    assert isinstance(last, TextualPart) and last.type == "system"
    assert last.text.startswith("<turn_aborted>")
    kinds = {f.kind for f in gate.session_findings(desktop)}
    assert kinds == {"tool-error", "cancelled"}
    # a command the user refused at the prompt is a declined decision, the call not failed
    refusing = by_codex_id(imported)["019ba1f0-504b-7643-82d5-364d9e886114"]
    (decision,) = refusing.permissions
    assert (decision.tool, decision.decision, decision.path) == (
        "shell_command",
        "declined",
        "git fetch --all --prune",
    )
    refused = [p for p in calls(refusing) if p.output == "exec command rejected by user"]
    assert len(refused) == 1 and not refused[0].is_error


def test_naming_a_sub_agent_rollout_imports_its_family(tmp_path: Path) -> None:
    """A sub-agent's rollout named alone: its parent is found in the same sessions folder
    (``YYYY/MM/DD``), and the whole family is imported, linked."""
    root = tmp_path / "sessions"
    shutil.copytree(CODEX / "sessions", root)
    child = (
        root / "2026/03/20/rollout-2026-03-20T11-00-20-019d0ab0-4f20-7c01-8b02-c03d04e05f06.jsonl"
    )
    project = tmp_path / "p"
    code, err = run_import("codex", child, project=project)
    assert code == 0, err
    sessions = loaded(project)
    assert sorted(n[:4] for n in sessions) == ["ses_", "sub_", "sub_"]
    (parent,) = [s for s in sessions.values() if s.kind == "ses"]
    assert len(parent.sub_sessions) == 2


def test_a_sub_agent_whose_parent_is_gone_is_imported_without_one(tmp_path: Path) -> None:
    source = tmp_path / "rollout-2026-03-20T11-00-20-019d0ab0-4f20-7c01-8b02-c03d04e05f06.jsonl"
    shutil.copy(FAMILY / source.name, source)
    project = tmp_path / "p"
    code, err = run_import("codex", source, project=project)
    assert code == 0, err
    assert "was not found: imported as a sub-session without a parent" in err
    (session,) = loaded(project).values()
    assert session.kind == "sub" and session.parent_id == "" and session.role == "explorer"


def test_an_earlier_import_of_a_sub_agent_as_a_session_is_replaced(tmp_path: Path) -> None:
    """Importing again after this mapping changed: the sub-agent's rollout, once imported as
    a ``ses_`` session of its own (importer 3), is now its parent's ``sub_``; the old file is
    removed, and importing once more changes nothing."""
    project = tmp_path / "p"
    assert run_import("codex", FAMILY, project=project)[0] == 0
    folder = sessions_dir(project)
    names = sorted(p.name for p in folder.glob("*.json"))
    child = FAMILY / "rollout-2026-03-20T11-00-20-019d0ab0-4f20-7c01-8b02-c03d04e05f06.jsonl"
    old = json.loads(next(folder.glob("sub_20260320_100020_*.json")).read_text(encoding="utf-8"))
    old.update(session_name="ses_20260320_100020_oldold", parent_id="", kind="ses")
    old["imported_from"]["importer_version"] = 3
    (folder / "ses_20260320_100020_oldold.json").write_text(json.dumps(old), encoding="utf-8")
    state_path = project / ".polyglav" / "import-state.json"
    state = json.loads(state_path.read_text(encoding="utf-8"))
    state["sources"][str(child)] = {
        "files": [[str(child), 0, 0, ""]],
        "sessions": ["ses_20260320_100020_oldold"],
        "importer_version": 3,
    }
    for entry in state["sources"].values():
        entry["importer_version"] = 3
    state_path.write_text(json.dumps(state), encoding="utf-8")
    code, err = run_import("codex", FAMILY, project=project)
    assert code == 0 and "1 session files of an earlier import removed" in err, err
    assert sorted(p.name for p in folder.glob("*.json")) == names
    code, err = run_import("codex", FAMILY, project=project)
    assert code == 0 and "earlier import" not in err and "1 skipped" in err, err


def test_a_file_of_someone_else_is_never_removed(tmp_path: Path) -> None:
    """Only files this import wrote from these sources are removed: a native session named
    in a stale entry stays."""
    project = tmp_path / "p"
    assert run_import("codex", FAMILY, project=project)[0] == 0
    folder = sessions_dir(project)
    native: dict[str, Any] = {"session_name": "ses_20260101_000000_native", "turns": []}
    (folder / "ses_20260101_000000_native.json").write_text(json.dumps(native), encoding="utf-8")
    state_path = project / ".polyglav" / "import-state.json"
    state = json.loads(state_path.read_text(encoding="utf-8"))
    for entry in state["sources"].values():
        entry["sessions"].append("ses_20260101_000000_native")
        entry["importer_version"] = 3
    state_path.write_text(json.dumps(state), encoding="utf-8")
    assert run_import("codex", FAMILY, project=project)[0] == 0
    assert (folder / "ses_20260101_000000_native.json").exists()


def test_hostile_headers_and_wrappers_never_break_an_import(tmp_path: Path) -> None:
    """Outputs that look like Codex's headers or wrappers but are not (huge numbers, a wrapper
    with more keys, a header after the output): read as text, never an error."""
    ts = "2026-01-01T00:00:00.000Z"
    odd = [
        "Exit code: 99999999999999999999\nWall time: 1e9 seconds\nOutput:\n",
        '{"output":"x","metadata":{"exit_code":1},"more":1}',
        '{"output":"x","metadata":{"exit_code":true,"duration_seconds":"fast"}}',
        "Output:\nExit code: 1\n",
        "Process exited with code 1",
    ]
    records: list[dict[str, Any]] = [
        {"timestamp": ts, "type": "session_meta", "payload": {"id": "odd", "cwd": "/w"}},
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "go"}],
            },
        },
    ]
    for i, text in enumerate(odd):
        records.append(
            {
                "timestamp": ts,
                "type": "response_item",
                "payload": {
                    "type": "function_call",
                    "name": "shell",
                    "arguments": "{}",
                    "call_id": f"c{i}",
                },
            }
        )
        records.append(
            {
                "timestamp": ts,
                "type": "response_item",
                "payload": {"type": "function_call_output", "call_id": f"c{i}", "output": text},
            }
        )
    write_jsonl(tmp_path / "src" / "rollout-odd.jsonl", records)
    project = tmp_path / "p"
    code, err = run_import("codex", tmp_path / "src", project=project)
    assert code == 0, err
    (session,) = loaded(project).values()
    parts = calls(session)
    assert [p.output for p in parts] == [odd[0], odd[1], "x", odd[3], odd[4]]
    assert [p.is_error for p in parts] == [False, False, False, False, True]
    assert [p.extra.get("exit_code") for p in parts] == [None, None, None, None, 1]


HEADERS = [
    (
        "Exit code: 2\nWall time: 0.1 seconds\nOutput:\n",
        {"exit_code": 2, "duration": 0.1, "failed": True},
    ),
    (
        "Exit code: 0\nWall time: 1.3 seconds\nTotal output lines: 8923\nOutput:\n",
        {"exit_code": 0, "duration": 1.3, "failed": False},
    ),
    (
        "Chunk ID: 85a42f\nWall time: 0.4117 seconds\nProcess exited with code 1\n"
        "Original token count: 12\nOutput:\n",
        {"exit_code": 1, "duration": 0.4117, "failed": True},
    ),
    (
        "Chunk ID: a21e41\nWall time: 1.0037 seconds\nProcess running with session ID 48230\n"
        "Original token count: 0\nOutput:\n",
        {"process": "48230"},
    ),
    (
        "Command: /bin/zsh -lc 'cat <<EOF\nOutput:\nEOF'\nChunk ID: 9\nWall time: 0.0 seconds\n"
        "Process exited with code -1\nOriginal token count: 1\nOutput:\n",
        {"exit_code": -1, "duration": 0.0, "failed": True},
    ),
]


@pytest.mark.parametrize(("header", "said"), HEADERS)
@settings(max_examples=25, deadline=None)
@given(body=st.text(max_size=300))
def test_only_codex_header_is_read_never_the_command_output(
    header: str, said: dict[str, Any], body: str
) -> None:
    """What a call's output says of it comes from the header Codex writes before
    ``Output:``; whatever the command printed (an ``Exit code: 1`` of its own, a Codex error
    message, anything) changes nothing."""
    assert codex.outcome(header + body) == said


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "apply_patch verification failed: Failed to find expected lines in a.py",
            {"failed": True},
        ),
        ("error: Failed to find expected lines in a.py:\n", {"failed": True}),
        ("write_stdin failed: stdin is closed for this session", {"failed": True}),
        ('execution error: Io(Os { code: 2, kind: NotFound, message: "x" })', {"failed": True}),
        (
            "failed in sandbox MacosSeatbelt with execution error: sandbox denied exec error, "
            "exit code: 128, stdout: , stderr: fatal",
            {"failed": True, "exit_code": 128},
        ),
        ("exec command rejected by user", {"declined": True}),
        ("patch rejected by user", {"declined": True}),
        ("aborted", {"interrupted": True}),
        ("Wall time: 6.4 seconds\naborted by user", {"interrupted": True}),
        ("Plan updated", {}),
        ('{"agent_id":"019c"}', {}),
        ("Success. Updated the following files:\nM a.py\n", {}),
    ],
)
def test_codex_messages_say_how_a_call_ended(text: str, said: dict[str, Any]) -> None:
    assert codex.outcome(text) == said


def test_a_rollout_is_known_by_its_first_line_however_long(tmp_path: Path) -> None:
    """Discovery reads only a rollout's first line: a sub-agent's whose instructions make
    it longer than what is read (1 MiB) still names its parent, and a ``session_meta``
    whose id is not its first key is decoded."""
    parent, child = "019d0000-0000-7000-8000-000000000001", "019d0000-0001-7000-8000-000000000002"
    spawn = {"subagent": {"thread_spawn": {"parent_thread_id": parent, "depth": 1}}}
    long = {"id": child, "source": spawn, "base_instructions": {"text": "x" * (2 << 20)}}
    path = write_jsonl(tmp_path / "child.jsonl", [{"type": "session_meta", "payload": long}])
    assert codex.head_of(path) == codex.Head(child, parent)
    odd = {"cwd": "/w", "source": spawn, "id": child}
    path = write_jsonl(tmp_path / "odd.jsonl", [{"type": "session_meta", "payload": odd}])
    assert codex.head_of(path) == codex.Head(child, parent)
    plain = {"cwd": "/w", "id": parent, "source": "cli"}
    path = write_jsonl(tmp_path / "plain.jsonl", [{"type": "session_meta", "payload": plain}])
    assert codex.head_of(path) == codex.Head(parent, "")
    path = write_jsonl(tmp_path / "old.jsonl", [{"id": parent, "instructions": "x"}])
    assert codex.head_of(path) == codex.Head()
