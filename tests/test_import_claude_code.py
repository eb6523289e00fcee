"""``polyglav import claude-code``: real and synthetic transcripts, lossless, idempotent,
incremental, sub-agents linked both ways, bad lines reported."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from publisher.loader import SessionLoadError, read_session
from publisher.model import CommandPart, TextualPart, ToolPart
from tests.helpers import ROOT, SAMPLES
from tests.import_helpers import (
    FIXTURES,
    assert_renders,
    contents,
    loaded,
    quiet_copy,
    run_import,
    sessions_dir,
    snapshot,
    write_jsonl,
)

pytestmark = pytest.mark.site

REAL = FIXTURES / "claude_code"
TS = "2026-02-12T16:02:25.284Z"


def line(kind: str, content: Any, uuid: str, **fields: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message["model"] = "claude-opus-4-6"
    return {
        "parentUuid": None,
        "isSidechain": False,
        "sessionId": "s1",
        "cwd": "/w",
        "version": "2.1.39",
        "type": kind,
        "message": message,
        "uuid": uuid,
        "timestamp": TS,
        **fields,
    }


def test_real_sample_imports_links_and_renders(tmp_path: Path) -> None:
    project = tmp_path / "p"
    code, err = run_import("claude-code", REAL, project=project)
    assert code == 0, err
    assert "records mapped" in err and "kept as raw" in err
    sessions = loaded(project)
    main = next(s for s in sessions.values() if s.session_name.startswith("ses_20260212_16"))
    sub = next(s for s in sessions.values() if s.kind == "sub" and s.role == "Explore")
    # linked both ways, and the Task call names its sub-session
    assert main.sub_sessions == [sub.session_name]
    assert sub.parent_id == main.session_name
    task = next(
        p for t in main.turns for p in t.parts if isinstance(p, ToolPart) and p.name == "Task"
    )
    assert task.extra["sub_session"] == sub.session_name
    assert task.output is not None and "Comprehensive Exploration" in task.output
    # the first real prompt, the model and the permission mode of its turn
    first = main.turns[0]
    assert first.model == "claude-opus-4-6" and first.mode == "bypassPermissions"
    assert isinstance(first.parts[0], TextualPart) and first.parts[0].text.startswith(
        "Work on bead"
    )
    # the compaction boundary and its summary are one /compact record
    compact = [
        p for t in main.turns for p in t.parts if isinstance(p, CommandPart) and p.is_compaction
    ]
    assert (
        len(compact) == 1 and compact[0].summary and compact[0].summary.startswith("This session")
    )
    # Its summary record is written 79 ms before the boundary record: the turn's span
    # covers both, and no turn of any session ends before it starts.
    turn = next(t for t in main.turns if compact[0] in t.parts)
    assert (turn.started_at, turn.ended_at) == (
        "2026-02-12T20:30:28.425+00:00",
        "2026-02-12T20:30:28.504+00:00",
    )
    for session in sessions.values():
        for t in session.turns:
            assert t.ended_at >= t.started_at, (session.session_name, t.index)
    # the rejected call had run (it waited on a task): an interrupt, not a declined decision
    rejected = next(
        s for s in sessions.values() if s.extra["imported_from"]["session_id"].startswith("258c")
    )
    assert rejected.permissions == []
    assert [p.name for t in rejected.turns for p in t.parts if getattr(p, "interrupted", 0)] == [
        "TaskOutput"
    ]
    assert main.extra["imported_from"]["agent"] == "claude-code"
    assert_renders(project, tmp_path)


def test_import_twice_is_import_once_and_unchanged_sources_are_skipped(tmp_path: Path) -> None:
    project = tmp_path / "p"
    real = quiet_copy(REAL, tmp_path / "real")
    assert run_import("claude-code", real, project=project)[0] == 0
    first = snapshot(project)
    code, err = run_import("claude-code", real, project=project)
    assert code == 0 and "skipped (source unchanged)" in err and " 2 skipped" in err
    assert snapshot(project) == first
    # a state lost: converted again, the same bytes
    (project / ".polyglav" / "import-state.json").unlink()
    code, err = run_import("claude-code", real, project=project)
    assert code == 0 and "0 session files written" in err
    assert snapshot(project) == first
    assert not any(p.name == "import-state.json" for p in sessions_dir(project).iterdir())


def test_grown_source_updates_the_same_file(tmp_path: Path) -> None:
    source = tmp_path / "src" / "abc.jsonl"
    full = (REAL / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl").read_bytes().splitlines(True)
    source.parent.mkdir()
    source.write_bytes(b"".join(full[:10]))
    project = tmp_path / "p"
    assert run_import("claude-code", source, project=project)[0] == 0
    before = snapshot(project)
    source.write_bytes(b"".join(full))
    assert run_import("claude-code", source, project=project)[0] == 0
    after = snapshot(project)
    assert list(after) == list(before)  # same file name
    assert after != before
    fresh = tmp_path / "q"
    assert run_import("claude-code", source, project=fresh)[0] == 0
    assert snapshot(fresh) == after  # incremental equals importing at once
    assert source.read_bytes() == b"".join(full)  # never written


texts = st.text(st.characters(codec=None, categories=None), max_size=40)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(prompt=texts, answer=texts, thought=texts, command=texts, output=texts, error=st.booleans())
@example(
    prompt="a\r\nb\x00\x1b[31m",
    answer="\ud800",
    thought="",
    command="x\r",
    output="\udfff\n",
    error=True,
)
def test_every_text_input_and_output_survives_byte_for_byte(
    tmp_path: Path, prompt: str, answer: str, thought: str, command: str, output: str, error: bool
) -> None:
    if (
        "<command-name>" in prompt
        or prompt.startswith("<local-command")
        or prompt.startswith("[Request interrupted")
    ):
        prompt = "p" + prompt
    records = [
        line("user", prompt, "u1"),
        line("assistant", [{"type": "thinking", "thinking": thought, "signature": "s"}], "a1"),
        line(
            "assistant",
            [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": command}}],
            "a2",
        ),
        line(
            "user",
            [{"type": "tool_result", "tool_use_id": "t1", "content": output, "is_error": error}],
            "u2",
        ),
        line("assistant", [{"type": "text", "text": answer}], "a3"),
    ]
    folder = tmp_path / f"h{abs(hash((prompt, answer, thought, command, output, error)))}"
    write_jsonl(folder / "src" / "s1.jsonl", records)
    code, err = run_import("claude-code", folder / "src", project=folder)
    assert code == 0, err
    (session,) = loaded(folder).values()
    assert contents(session) == [
        ("user", prompt),
        ("thinking", thought),
        ("tool", ("Bash", {"command": command}, output, error)),
        ("text", answer),
    ]
    shutil.rmtree(folder)


def _convert_claude() -> Any:
    spec = importlib.util.spec_from_file_location(
        "convert_claude", ROOT / "benchmarks" / "convert_claude.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_round_trip_from_polyglav_samples(tmp_path: Path) -> None:
    """Polyglav samples → benchmarks/convert_claude.py → import: the same texts."""
    convert = _convert_claude()
    projects = tmp_path / "claude"
    convert.convert_archive(SAMPLES, projects)
    project = tmp_path / "p"
    assert run_import("claude-code", projects, project=project)[0] == 0
    imported = {s.extra["imported_from"]["session_id"]: s for s in loaded(project).values()}
    checked = 0
    for path in sorted(SAMPLES.glob("*.json")):
        try:
            original = read_session(path)
        except SessionLoadError:
            continue
        uid, _ = convert.convert_session(original)
        back = imported[uid]
        expected: list[Any] = []
        for turn in original.turns:
            for part in turn.parts:
                if isinstance(part, TextualPart):
                    expected.append((part.type, part.text))
                elif isinstance(part, ToolPart):
                    expected.append(
                        ("tool", (part.output, part.is_error if part.output is not None else False))
                    )
                elif isinstance(part, CommandPart):
                    expected.append(("command", part.text if part.summary is None else "/compact"))
        got: list[Any] = []
        for kind, value in contents(back):
            got.append(("tool", (value[2], value[3])) if kind == "tool" else (kind, value))
        assert got == expected, path.name
        summaries = [
            p.summary
            for t in original.turns
            for p in t.parts
            if isinstance(p, CommandPart) and p.summary
        ]
        back_summaries = [
            p.summary
            for t in back.turns
            for p in t.parts
            if isinstance(p, CommandPart) and p.summary
        ]
        assert [b.endswith(s) for b, s in zip(back_summaries, summaries, strict=True)] == [
            True
        ] * len(summaries)
        assert [(e.code, e.message) for e in back.errors] == [
            (e.code, e.message) for e in original.errors
        ]
        checked += 1
    assert checked >= 4


def test_sidechains_in_the_session_file_become_linked_sub_sessions(tmp_path: Path) -> None:
    records = [
        line("user", "do it", "u1"),
        line(
            "assistant",
            [{"type": "tool_use", "id": "t1", "name": "Task", "input": {"prompt": "explore"}}],
            "a1",
        ),
        line("user", "explore", "s1", isSidechain=True),
        line(
            "assistant",
            [{"type": "text", "text": "found it"}],
            "s2",
            isSidechain=True,
            parentUuid="s1",
        ),
        line("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "found it"}], "u2"),
    ]
    write_jsonl(tmp_path / "src" / "x.jsonl", records)
    assert run_import("claude-code", tmp_path / "src", project=tmp_path / "p")[0] == 0
    sessions = loaded(tmp_path / "p")
    (main,) = (s for s in sessions.values() if s.kind == "ses")
    (sub,) = (s for s in sessions.values() if s.kind == "sub")
    assert main.sub_sessions == [sub.session_name] and sub.parent_id == main.session_name
    assert contents(sub) == [("user", "explore"), ("text", "found it")]
    task = main.turns[0].parts[1]
    assert isinstance(task, ToolPart) and task.extra["sub_session"] == sub.session_name


MAIN_LOG = "4d5611e5-241a-462a-8d15-5122611a9569"
"""The real sample whose sub-agent is logged in ``<session>/subagents/``."""


def test_naming_a_sub_agent_log_imports_its_session(tmp_path: Path) -> None:
    whole, named = tmp_path / "whole", tmp_path / "named"
    assert run_import("claude-code", REAL / f"{MAIN_LOG}.jsonl", project=whole)[0] == 0
    (agent,) = (REAL / MAIN_LOG / "subagents").glob("*.jsonl")
    code, err = run_import("claude-code", agent, project=named)
    assert code == 0, err
    assert "1 source sessions, 2 session files written" in err  # (it imported nothing)
    assert snapshot(named) == snapshot(whole)


def test_sub_agent_logs_whose_session_log_is_gone_import_without_a_parent(
    tmp_path: Path,
) -> None:
    # Claude Code deletes old sessions' logs; a session's folder of sub-agent logs may stay.
    src, project = tmp_path / "src", tmp_path / "p"
    shutil.copytree(REAL / MAIN_LOG, src / MAIN_LOG)
    code, err = run_import("claude-code", src, project=project)
    assert code == 0, err
    gone = src / f"{MAIN_LOG}.jsonl"
    assert (
        f"polyglav: note: {gone}: not found: 1 sub-agent log of this session imported without"
        " a parent\n"
    ) in err
    (orphan,) = loaded(project).values()  # no made-up parent session (it was dated 1970)
    assert orphan.kind == "sub" and orphan.parent_id == "" and orphan.turns
    # The log found again: the same sub-session, now with its parent (no second copy).
    shutil.copy(REAL / f"{MAIN_LOG}.jsonl", gone)
    assert run_import("claude-code", src, project=project)[0] == 0
    sessions = loaded(project)
    (main,) = (s for s in sessions.values() if s.kind == "ses")
    assert sorted(sessions) == sorted([main.session_name, orphan.session_name])
    assert sessions[orphan.session_name].parent_id == main.session_name
    assert main.sub_sessions == [orphan.session_name]
    fresh = tmp_path / "fresh"  # what importing the whole session gives
    assert run_import("claude-code", src, project=fresh)[0] == 0
    assert snapshot(project) == snapshot(fresh)


FLAT = FIXTURES / "claude_code_flat"
"""A real Claude Code 2.0.64 project folder: a session's log and, beside it, the logs of
two sub-agents (``agent-<id>.jsonl``, each line naming the session's id)."""
FLAT_SESSION = "4c2ddfdc-b619-4525-8d03-1950fb1b0257"


def test_sub_agent_logs_beside_their_session_log_are_its_sub_sessions(tmp_path: Path) -> None:
    """Before 2.1, Claude Code wrote sub-agents' logs into the project folder: each was
    imported as a session of its own under an empty parent made up and dated 1970."""
    code, err = run_import("claude-code", FLAT, project=tmp_path / "folder")
    assert code == 0, err
    sessions = loaded(tmp_path / "folder")
    (main,) = (s for s in sessions.values() if s.kind == "ses")
    subs = sorted(s.session_name for s in sessions.values() if s.kind == "sub")
    assert len(sessions) == 3 and sorted(main.sub_sessions) == subs
    assert {sessions[name].parent_id for name in subs} == {main.session_name}
    assert main.session_name.startswith("ses_20251210_")
    # Naming the session's log, or one sub-agent's, imports the same files.
    for named in (FLAT / f"{FLAT_SESSION}.jsonl", FLAT / "agent-50243ee8.jsonl"):
        project = tmp_path / named.stem
        assert run_import("claude-code", named, project=project)[0] == 0
        assert snapshot(project) == snapshot(tmp_path / "folder")


def test_sub_agent_logs_beside_a_session_log_that_is_gone(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for agent in FLAT.glob("agent-*.jsonl"):
        shutil.copy(agent, src / agent.name)
    code, err = run_import("claude-code", src, project=tmp_path / "p")
    assert code == 0, err
    assert f"{src / FLAT_SESSION}.jsonl: not found: 2 sub-agent logs of this session" in err
    sessions = loaded(tmp_path / "p")
    assert len(sessions) == 2 and {s.kind for s in sessions.values()} == {"sub"}
    assert {s.parent_id for s in sessions.values()} == {""}


def test_a_log_of_sub_agents_lines_only_makes_up_no_parent(tmp_path: Path) -> None:
    records = [
        line("user", "explore", "s1", isSidechain=True),
        line(
            "assistant",
            [{"type": "text", "text": "found"}],
            "s2",
            isSidechain=True,
            parentUuid="s1",
        ),
    ]
    write_jsonl(tmp_path / "src" / "x.jsonl", records)
    code, err = run_import("claude-code", tmp_path / "src", project=tmp_path / "p")
    assert code == 0, err
    assert "x.jsonl: holds no line of its own: 1 sub-agent log of this session" in err
    (sub,) = loaded(tmp_path / "p").values()  # no empty session dated 1970 above it
    assert sub.kind == "sub" and sub.parent_id == ""


def test_bad_lines_are_reported_and_the_rest_imported(tmp_path: Path) -> None:
    good = [json.dumps(line("user", f"prompt {i}", f"u{i}")).encode() for i in range(4)]
    data = (
        good[0]
        + b"\n"
        + b'{"type": "user", "message": \n'  # not JSON
        + good[1].replace(b"prompt 1", b"prompt \xff1")
        + b"\n"  # invalid UTF-8
        + json.dumps({"type": "mystery", "x": 1}).encode()
        + b"\n"  # unknown type
        + good[2]
        + b"\n"
        + good[3][:20]  # being written
    )
    source = tmp_path / "src" / "bad.jsonl"
    source.parent.mkdir()
    source.write_bytes(data)
    os.chmod(source, 0o444)
    code, err = run_import("claude-code", source, project=tmp_path / "p")
    assert code == 1
    lines = [ln for ln in err.splitlines() if ln.startswith("polyglav: warning:")]
    assert [ln.split(f"{source}:")[1].split(":")[0] for ln in lines] == ["2", "3", "6"]
    assert "not JSON" in lines[0] and "invalid UTF-8" in lines[1] and "being written" in lines[2]
    (session,) = loaded(tmp_path / "p").values()
    assert [t for k, t in contents(session) if k == "user"] == [
        "prompt 0",
        "prompt \ufffd1",
        "prompt 2",
    ]
    raw = [r["record"] for t in session.turns for r in t.extra.get("raw_records", [])]
    assert {"unparsed_line": '{"type": "user", "message": '} in raw and {
        "type": "mystery",
        "x": 1,
    } in raw
    assert source.read_bytes() == data


def test_cli_in_a_subprocess_runs_this_worktree(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "publisher",
            "import",
            "claude-code",
            str(REAL),
            "--project",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "2 source sessions, 4 session files written" in result.stderr
    result = subprocess.run(
        [sys.executable, "-m", "publisher", "import", "nobody"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2


def _progress_entries(session: Any) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """(entry, the tool part it is on, or None) of every progress entry of a session file."""
    found: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    found += [(e, None) for e in session.get("claude_code_progress", [])]
    for turn in session["turns"]:
        found += [(e, None) for e in turn.get("claude_code_progress", [])]
        for part in turn["parts"]:
            found += [(e, part) for e in part.get("claude_code_progress", [])]
    return found


def _restored(entry: dict[str, Any], part: dict[str, Any] | None) -> dict[str, Any]:
    """An entry's ``data`` with the fields left out as duplicates put back (``message``
    stays out: it is checked against the sub-session)."""
    data = dict(entry["data"])
    same = entry.get("same_as", {})
    where = same.get("fullOutput")
    if where is not None:
        assert part is not None
        if where[0] == "output":
            data["fullOutput"] = part["output"][where[1] : where[2]]
        else:
            assert where[0] == "progress"
            later = part["claude_code_progress"][where[1]]["data"]["fullOutput"]
            data["fullOutput"] = later[where[2] : where[3]]
    if "output" in same:
        assert same["output"][0] == "fullOutput"
        data["output"] = data["fullOutput"][same["output"][1] : same["output"][2]]
    if "prompt" in same:
        assert part is not None and same["prompt"] == ["input", "prompt"]
        data["prompt"] = part["input"]["prompt"]
    return data


def test_progress_lines_are_mapped_compactly_and_nothing_is_lost(tmp_path: Path) -> None:
    """Hook, bash and agent progress lines of the real samples are entries on the tool part
    they report on; what they repeat is left out and found again where ``same_as`` says
    (the command output in the part's output or a later snapshot, the sub-agent's message
    in its sub-session); every other field is as in the source."""
    project = tmp_path / "p"
    assert run_import("claude-code", REAL, project=project)[0] == 0
    docs = [json.loads(p.read_bytes()) for p in sessions_dir(project).glob("*.json")]
    by_source: dict[tuple[str, int], tuple[dict[str, Any], dict[str, Any] | None]] = {}
    sub_texts: dict[str, list[str]] = {}
    for doc in docs:
        for entry, part in _progress_entries(doc):
            by_source[(doc["imported_from"]["path"], entry["line"])] = (entry, part)
        for turn in doc["turns"]:
            for p in turn["parts"]:
                uuid = p.get("claude_code", {}).get("uuid")
                if uuid is not None:
                    sub_texts.setdefault(uuid, []).append(p.get("text"))
        raw = [r["record"] for t in doc["turns"] for r in t.get("raw_records", [])]
        assert not [r for r in raw if isinstance(r, dict) and r.get("type") == "progress"]
    seen: dict[str, int] = {}
    left_out: set[str] = set()
    for path in sorted(REAL.rglob("*.jsonl")):
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            record = json.loads(text)
            if record.get("type") != "progress":
                continue
            entry, part = by_source[(str(path.absolute()), number)]
            data = record["data"]
            kind = data["type"]
            seen[kind] = seen.get(kind, 0) + 1
            left_out.update(entry.get("same_as", {}))
            assert entry["uuid"] == record["uuid"] and entry.get("parentUuid") == record.get(
                "parentUuid"
            )
            if part is not None:
                assert part["block"]["id"] == record["parentToolUseID"]
            else:
                assert entry["parentToolUseID"] == record["parentToolUseID"]
            restored = _restored(entry, part)
            message = data.get("message")
            if "message" in entry.get("same_as", {}):
                assert entry["same_as"]["message"] == ["sub_session", message["uuid"]]
                texts = [b["text"] for b in message["message"]["content"] if "text" in b]
                assert texts and all(t in sub_texts[message["uuid"]] for t in texts)
                restored["message"] = message
            assert restored == data, (path.name, number)
    assert seen == {
        "hook_progress": 21,
        "bash_progress": 5,
        "agent_progress": 1,
        "waiting_for_task": 2,
    }
    # the one copy of a sub-agent line here is not exact (a string became a text block): kept
    assert left_out == {"output", "fullOutput", "prompt"}
    # the Bash call whose output grew: earlier snapshots point into the last one
    bash = [
        (e, p)
        for doc in docs
        for e, p in _progress_entries(doc)
        if e["data"]["type"] == "bash_progress"
    ]
    assert [e.get("same_as", {}).get("fullOutput", ["kept"])[0] for e, _ in bash] == [
        "progress",
        "progress",
        "kept",
        "output",
        "output",
    ]


def test_a_sub_agent_message_copied_by_progress_is_kept_once(tmp_path: Path) -> None:
    sub_line = line(
        "assistant", [{"type": "text", "text": "found it"}], "s2", isSidechain=True, agentId="a1"
    )
    progress = {
        "type": "progress",
        "sessionId": "s1",
        "data": {
            "type": "agent_progress",
            "message": {k: sub_line[k] for k in ("type", "message", "uuid", "timestamp")},
            "normalizedMessages": [],
            "prompt": "explore",
            "agentId": "a1",
        },
        "toolUseID": "agent_msg_1",
        "parentToolUseID": "t1",
        "uuid": "p1",
        "timestamp": TS,
    }
    main = [
        line("user", "do it", "u1"),
        line(
            "assistant",
            [{"type": "tool_use", "id": "t1", "name": "Task", "input": {"prompt": "explore"}}],
            "a1",
        ),
        progress,
        line("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "done"}], "u2"),
    ]
    write_jsonl(tmp_path / "src" / "m.jsonl", main)
    write_jsonl(
        tmp_path / "src" / "m" / "subagents" / "agent-a1.jsonl",
        [line("user", "explore", "s1", isSidechain=True, agentId="a1"), sub_line],
    )
    assert run_import("claude-code", tmp_path / "src", project=tmp_path / "p")[0] == 0
    docs = {
        d["parent_id"]: d
        for d in map(json.loads, map(Path.read_bytes, sessions_dir(tmp_path / "p").glob("*.json")))
    }
    task = docs[""]["turns"][0]["parts"][1]
    (entry,) = task["claude_code_progress"]
    assert entry["same_as"] == {"prompt": ["input", "prompt"], "message": ["sub_session", "s2"]}
    assert entry["data"] == {"type": "agent_progress", "normalizedMessages": [], "agentId": "a1"}
    (sub,) = (d for k, d in docs.items() if k)
    (answer,) = (p for t in sub["turns"] for p in t["parts"] if p["type"] == "text")
    assert answer["text"] == "found it" and answer["claude_code"]["uuid"] == "s2"
    assert sub["session_name"] == task["sub_session"]


def test_tool_use_result_strings_repeating_the_call_are_kept_once(tmp_path: Path) -> None:
    new = "new line\n" * 10
    out = "Updated x.py\n" + "stdout " * 20
    result = {"filePath": "/w/x.py", "newString": new, "stdout": out[13:], "originalFile": "o" * 99}
    records = [
        line("user", "edit", "u1"),
        line(
            "assistant",
            [
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "Edit",
                    "input": {"file_path": "/w/x.py", "new_string": new, "old_string": "a"},
                }
            ],
            "a1",
        ),
        line(
            "user",
            [{"type": "tool_result", "tool_use_id": "t1", "content": out}],
            "u2",
            toolUseResult=result,
        ),
    ]
    write_jsonl(tmp_path / "src" / "e.jsonl", records)
    assert run_import("claude-code", tmp_path / "src", project=tmp_path / "p")[0] == 0
    (path,) = sessions_dir(tmp_path / "p").glob("*.json")
    part = json.loads(path.read_bytes())["turns"][0]["parts"][1]
    extra = part["claude_code_result"]
    # short strings stay (a note would be longer); long duplicates are named
    assert extra["toolUseResult"] == {"filePath": "/w/x.py", "originalFile": "o" * 99}
    same = extra["toolUseResult_same_as"]
    assert same == {"newString": ["input", "new_string"], "stdout": ["output", 13, len(out)]}
    assert part["input"][same["newString"][1]] == new
    assert part["output"][same["stdout"][1] : same["stdout"][2]] == result["stdout"]


def write_claude_session(path: Path, turns: int, output_bytes: int) -> int:
    """A Claude Code transcript as the agent writes it (a prompt, a Bash call with its hook
    and bash progress lines, the result, an answer per turn), written line by line; its
    size in bytes."""
    sid = path.stem
    env = {"sessionId": sid, "cwd": "/w", "version": "2.1.39", "isSidechain": False}
    chunk = ("x" * 79 + "\n") * (output_bytes // 80 + 1)
    with path.open("w", encoding="utf-8") as handle:
        for i in range(turns):
            ts = f"2026-02-12T16:{i // 3600 % 60:02d}:{i // 60 % 60:02d}.{i % 60:03d}Z"
            out = f"turn {i}\n" + chunk[:output_bytes]
            tool = f"toolu_{i}"
            records: list[dict[str, Any]] = [
                {**env, "type": "user", "uuid": f"u{i}", "timestamp": ts,
                 "message": {"role": "user", "content": f"step {i}"}},
                {**env, "type": "assistant", "uuid": f"a{i}", "timestamp": ts,
                 "message": {"role": "assistant", "model": "m", "content": [
                     {"type": "tool_use", "id": tool, "name": "Bash", "input": {"command": "make"}}]}},
                {**env, "type": "progress", "uuid": f"h{i}", "timestamp": ts, "toolUseID": tool,
                 "parentToolUseID": tool, "data": {"type": "hook_progress", "hookEvent": "PreToolUse",
                                                   "hookName": "PreToolUse:Bash", "command": "hook.sh"}},
                {**env, "type": "progress", "uuid": f"b{i}", "timestamp": ts, "toolUseID": f"bash-{i}",
                 "parentToolUseID": tool, "data": {"type": "bash_progress", "output": out[-200:],
                                                   "fullOutput": out[: len(out) // 2], "totalLines": 3}},
                {**env, "type": "user", "uuid": f"r{i}", "timestamp": ts,
                 "message": {"role": "user", "content": [
                     {"type": "tool_result", "tool_use_id": tool, "content": out}]}},
                {**env, "type": "assistant", "uuid": f"t{i}", "timestamp": ts,
                 "message": {"role": "assistant", "model": "m", "content": [
                     {"type": "text", "text": f"done {i}"}]}},
            ]  # fmt: skip
            handle.writelines(json.dumps(r) + "\n" for r in records)
    return path.stat().st_size


def import_peak(source: Path, project: Path) -> int:
    """Bytes of peak resident memory importing the Claude Code sessions under ``source``
    adds to a fresh interpreter (its imports done), in that one process (``workers=1``: a
    pool's workers each convert one session at a time the same way)."""
    from tests.test_memory import peak_used

    return peak_used(
        "from pathlib import Path\nfrom publisher.importers import import_sources\n"
        "import publisher.importers.claude_code\n",
        f"import_sources('claude-code', [Path({str(source)!r})], "
        f"Path({str(project)!r}) / '.polyglav' / 'sessions', workers=1)\n",
    )


@pytest.mark.slow
def test_import_memory_is_bounded_by_the_largest_session_not_the_archive(
    tmp_path: Path,
) -> None:
    """Sessions are converted and written one at a time: importing a 19 MB session beside
    60 small ones (another 48 MB) takes about the memory of importing it alone (39 MB both
    ways when written; 51 MB when the file was dumped whole)."""
    big = tmp_path / "big"
    big.mkdir()
    big_size = write_claude_session(big / "big-session.jsonl", 240, 50_000)
    everything = tmp_path / "all"
    shutil.copytree(big, everything)
    rest = sum(
        write_claude_session(everything / f"small-{i:03d}.jsonl", 20, 25_000) for i in range(60)
    )
    alone = import_peak(big, tmp_path / "p1")
    together = import_peak(everything, tmp_path / "p2")
    assert len(list(sessions_dir(tmp_path / "p2").glob("*.json"))) == 61
    print(
        f"big {big_size / 1e6:.1f} MB alone: {alone / 1e6:.1f} MB; "
        f"with {rest / 1e6:.1f} MB more: {together / 1e6:.1f} MB"
    )
    assert alone > big_size  # the session is held while converted (this measures something)
    assert alone < 3 * big_size  # and written piecewise, not held twice more as text and bytes
    assert together < alone + 0.15 * rest, (alone, together, rest)


def test_every_text_input_and_output_of_the_real_samples_is_imported_as_written(
    tmp_path: Path,
) -> None:
    """Each prompt, answer, thinking, tool input and tool output of the real transcripts
    (main sessions and sub-agents) is a part's text, input or output, byte for byte."""
    project = tmp_path / "p"
    assert run_import("claude-code", REAL, project=project)[0] == 0
    texts: set[str] = set()
    inputs: list[Any] = []
    outputs: set[str] = set()
    for session in loaded(project).values():
        for turn in session.turns:
            for p in turn.parts:
                if isinstance(p, ToolPart):
                    inputs.append(p.input)
                    outputs.add(p.output or "")
                elif isinstance(p, CommandPart):
                    texts.update(filter(None, (p.text, p.summary)))
                elif isinstance(p, TextualPart):
                    texts.add(p.text)
                    texts.add(p.text.removeprefix("<local-command-stdout>"))
    checked = 0
    for path in sorted(REAL.rglob("*.jsonl")):
        for text in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(text)
            message = record.get("message")
            if record.get("type") not in ("user", "assistant") or not isinstance(message, dict):
                continue
            content = message["content"]
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            for block in blocks:
                kind = block.get("type")
                if kind == "text" and "<command-name>" not in block["text"]:
                    assert block["text"] in texts, block["text"][:80]
                elif kind == "thinking":
                    assert block["thinking"] in texts
                elif kind == "tool_use":
                    assert block["input"] in inputs, block["name"]
                elif kind == "tool_result" and isinstance(block["content"], str):
                    assert block["content"] in outputs, block["content"][:80]
                else:
                    continue
                checked += 1
    assert checked >= 25, checked
