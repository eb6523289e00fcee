"""``polyglav import codex``: real and synthetic rollouts, lossless, idempotent, incremental."""

from __future__ import annotations

import json
import shutil
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from publisher.model import ToolPart
from tests.import_helpers import (
    FIXTURES,
    assert_renders,
    contents,
    loaded,
    run_import,
    snapshot,
    write_jsonl,
)

pytestmark = pytest.mark.site

REAL = FIXTURES / "codex"


def test_real_samples_import_and_render(tmp_path: Path) -> None:
    project = tmp_path / "p"
    code, err = run_import("codex", REAL, project=project)
    assert code == 0, err
    sessions = {s.extra["imported_from"]["session_id"]: s for s in loaded(project).values()}
    real = sessions["019b64e5-57fa-7463-b644-fba7e456f905"]
    assert real.turns[-1].model == "gpt-5.2-codex" and real.turns[-1].mode == "on-request"
    # The instructions and environment Codex injects before the prompt are notes of the
    # prompt's turn, not a turn of their own.
    assert len(real.turns) == 1
    assert [p.type for p in real.turns[0].parts[:3]] == ["system", "system", "user"]
    assert ("user", real.turns[0].parts[2].text) == contents(real)[2]
    synthetic = sessions["11111111-1111-4111-8111-111111111111"]
    kinds = [k for k, _ in contents(synthetic)]
    assert kinds == ["user", "thinking", "tool", "tool", "tool", "text"]
    tools = [p for t in synthetic.turns for p in t.parts if isinstance(p, ToolPart)]
    assert tools[0].input == {"cmd": "find . -maxdepth 1 -type f"}
    assert tools[0].output == "./alpha.txt\n./beta.txt"
    assert tools[1].name == "apply_patch" and tools[1].output == "Done!"
    raw = [r["record"]["type"] for t in synthetic.turns for r in t.extra.get("raw_records", [])]
    assert raw == ["future_synthetic_record"]
    first = snapshot(project)
    assert run_import("codex", REAL, project=project)[0] == 0
    assert snapshot(project) == first
    assert_renders(project, tmp_path)


def test_codex_0_125_calls_read_as_commands_waits_plans_and_searches(tmp_path: Path) -> None:
    """A real Codex CLI 0.125 rollout (``exec_command`` takes ``cmd``, ``write_stdin``
    polls a running command): each call has its friendly view on the page."""
    from publisher.render import tools

    project = tmp_path / "p"
    source = REAL / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
    code, err = run_import("codex", source, project=project)
    assert code == 0, err
    (session,) = loaded(project).values()
    calls = [p for t in session.turns for p in t.parts if isinstance(p, ToolPart)]
    views: dict[str, tools.ToolView | None] = {}
    for call in calls:  # the first call of each tool
        views.setdefault(call.name, tools.friendly(call))
    assert sorted(views) == [
        "apply_patch",
        "exec_command",
        "update_plan",
        "web_search",
        "write_stdin",
    ]
    shell, stdin = views["exec_command"], views["write_stdin"]
    assert shell is not None and shell.command.startswith("sed -n '1,180p' /Users/Sample_User/")
    assert stdin == tools.ToolView("stdin", target="48230")
    plan, search = views["update_plan"], views["web_search"]
    assert plan is not None and [t.status for t in plan.todos] == [
        "in_progress",
        "pending",
        "pending",
    ]
    assert search is not None and search.query.startswith("OpenCode config compact context")
    assert views["apply_patch"] is not None and views["apply_patch"].kind == "diff"
    assert_renders(project, tmp_path)


texts = st.text(st.characters(codec=None, categories=None), max_size=40)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    prompt=texts, answer=texts, reasoning=texts, command=texts, output=texts, code=st.integers(0, 3)
)
@example(prompt="a\r\nb\x07", answer="\ud800", reasoning="", command="ls\r", output="\x00", code=2)
def test_every_text_input_and_output_survives(
    tmp_path: Path, prompt: str, answer: str, reasoning: str, command: str, output: str, code: int
) -> None:
    if prompt.startswith(("<", "#")):
        prompt = "p" + prompt
    ts = "2025-10-29T00:59:38.317Z"
    records = [
        {"timestamp": ts, "type": "session_meta", "payload": {"id": "abc", "cwd": "/w"}},
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": prompt}],
            },
        },
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": reasoning}],
            },
        },
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "shell",
                "arguments": json.dumps({"command": ["bash", "-lc", command]}),
                "call_id": "c1",
            },
        },
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "c1", "output": output},
        },
        {
            "timestamp": ts,
            "type": "event_msg",
            "payload": {
                "type": "exec_command_end",
                "call_id": "c1",
                "exit_code": code,
                "aggregated_output": output,
            },
        },
        {
            "timestamp": ts,
            "type": "event_msg",
            "payload": {"type": "agent_message", "message": answer},
        },
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": answer}],
            },
        },
    ]
    folder = tmp_path / f"h{abs(hash((prompt, answer, reasoning, command, output, code)))}"
    write_jsonl(folder / "src" / "rollout-x.jsonl", records)
    status, err = run_import("codex", folder / "src", project=folder)
    assert status == 0, err
    (session,) = loaded(folder).values()
    assert contents(session) == [
        ("user", prompt),
        ("thinking", reasoning),
        ("tool", ("shell", {"command": ["bash", "-lc", command]}, output, code != 0)),
        ("text", answer),
    ]
    shutil.rmtree(folder)


def test_an_archive_mixing_all_four_sources_builds(tmp_path: Path) -> None:
    from tests.helpers import SAMPLES, build

    project = tmp_path / "p"
    folder = project / ".polyglav" / "sessions"
    folder.mkdir(parents=True)
    for path in SAMPLES.glob("*.json"):
        if "flat01" not in path.name and "old002" not in path.name:  # those do not load
            shutil.copy(path, folder / path.name)
    for agent, source in (("claude-code", "claude_code"), ("codex", "codex"), ("aider", "aider")):
        code, err = run_import(agent, FIXTURES / source, project=project)
        assert code == 0, err
    report = build(folder, tmp_path / "site")
    agents = {s.extra.get("imported_from", {}).get("agent") for s in loaded(project).values()}
    assert agents == {None, "claude-code", "codex", "aider"}
    assert report.sessions == len(loaded(project))
    assert not report.failures


def test_grown_rollout_updates_the_same_file(tmp_path: Path) -> None:
    """A rollout being written: imported half, then whole, it is the same file, as if
    imported at once; the source is never written."""
    name = "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"
    full = (REAL / name).read_bytes().splitlines(True)
    source = tmp_path / "src" / name
    source.parent.mkdir()
    source.write_bytes(b"".join(full[:6]))
    project = tmp_path / "p"
    assert run_import("codex", source, project=project)[0] == 0
    before = snapshot(project)
    source.write_bytes(b"".join(full))
    code, err = run_import("codex", source, project=project)
    assert code == 0 and "1 session files written" in err, err
    after = snapshot(project)
    assert list(after) == list(before) and after != before
    (session,) = loaded(project).values()
    assert [k for k, _ in contents(session)] == ["user", "thinking", "tool", "tool", "tool", "text"]
    fresh = tmp_path / "q"
    assert run_import("codex", source, project=fresh)[0] == 0
    assert snapshot(fresh) == after
    code, err = run_import("codex", source, project=project)
    assert code == 0 and "1 skipped (source unchanged)" in err
    assert source.read_bytes() == b"".join(full)


def recovered_output(part: ToolPart) -> str | None:
    """A call's output as the rollout wrote it: the part's output, or the wrapper it was
    unwrapped from (``{"output", "metadata"}``) written again, or the original kept as
    written when writing it again would not give the same text."""
    kept = part.extra.get("codex_output", {})
    if isinstance(kept.get("output"), str):
        return str(kept["output"])
    wrapper = kept.get("output_wrapper")
    if isinstance(wrapper, dict):
        return json.dumps(
            {"output": part.output, **wrapper}, ensure_ascii=False, separators=(",", ":")
        )
    return part.output


def test_every_message_call_and_output_of_the_real_samples_is_imported_as_written(
    tmp_path: Path,
) -> None:
    """Each message text, reasoning summary, call input and call output of the rollouts is a
    part's text, input or output, byte for byte (a wrapped output: its inner text, the rest
    of the wrapper beside it; a VS Code prompt: the note of the editor's context and the
    prompt after it), or, when the rollout copied it from another session's log, a record
    kept as written in ``codex_inherited``."""
    project = tmp_path / "p"
    assert run_import("codex", REAL, project=project)[0] == 0
    texts: set[str] = set()
    inputs: list[Any] = []
    outputs: set[str | None] = set()
    copied: list[Any] = []
    for session in loaded(project).values():
        for turn in session.turns:
            for part in turn.parts:
                if isinstance(part, ToolPart):
                    inputs.append(part.input)
                    outputs.add(recovered_output(part))
        texts.update(value for kind, value in contents(session) if kind != "tool")
        for turn in session.turns:  # a prompt and the editor's context before it (VS Code)
            for note, prompt in pairwise(turn.parts):
                if note.extra.get("codex", {}).get("ide_context") is True:
                    texts.add(getattr(note, "text", "") + getattr(prompt, "text", ""))
        for block in session.extra.get("codex_inherited", []):
            copied.extend(entry["record"] for entry in block["records"])
    checked = inherited = 0
    for path in sorted(REAL.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            payload = item.get("payload") or {}
            if item.get("type") != "response_item":
                continue
            if item in copied:
                inherited += 1
                continue
            kind = payload.get("type")
            if kind == "message":
                for block in payload["content"]:
                    if "text" in block:
                        assert block["text"] in texts, block["text"][:80]
                        checked += 1
            elif kind == "reasoning":
                for block in payload.get("summary", []):
                    assert block["text"] in texts
                    checked += 1
            elif kind == "function_call":
                assert json.loads(payload["arguments"]) in inputs
                checked += 1
            elif kind == "custom_tool_call":
                assert payload["input"] in inputs  # apply_patch: the patch text as input
                checked += 1
            elif kind in ("function_call_output", "custom_tool_call_output"):
                out = payload["output"]
                text = out if isinstance(out, str) else "".join(b["text"] for b in out)
                assert text in outputs, text[:80]
                checked += 1
    assert checked >= 10, checked
    assert inherited >= 3, inherited


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def test_pasted_and_returned_images_are_shown_in_place(tmp_path: Path) -> None:
    """Codex writes a pasted screenshot as an ``input_image`` of the prompt and an image a
    tool returned (``view_image``) as one of its output's items, each a ``data:`` URL (the
    OpenAI Responses API's content items; no public rollout holding one was found, so this
    log is made in that shape). Both become images in the turn; an image by web address
    and the interleaving of text and images stay as written."""
    ts = "2025-10-29T00:59:38.317Z"
    url = f"data:image/png;base64,{PNG}"
    records = [
        {"timestamp": ts, "type": "session_meta", "payload": {"id": "img", "cwd": "/w"}},
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_image", "image_url": url, "detail": "high"},
                    {"type": "input_text", "text": "what is wrong on this screen?"},
                    {"type": "input_image", "image_url": "https://example.test/a.png"},
                ],
            },
        },
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "view_image",
                "arguments": json.dumps({"path": "/w/shot.png"}),
                "call_id": "c1",
            },
        },
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {
                "type": "function_call_output",
                "call_id": "c1",
                "output": [
                    {"type": "input_text", "text": "shot.png"},
                    {"type": "input_image", "image_url": url},
                ],
            },
        },
    ]
    project = tmp_path / "p"
    write_jsonl(tmp_path / "src" / "rollout-x.jsonl", records)
    status, err = run_import("codex", tmp_path / "src", project=project)
    assert status == 0, err
    (session,) = loaded(project).values()
    parts = session.turns[0].parts
    from publisher.model import ImagePart

    images = [p for p in parts if isinstance(p, ImagePart)]
    assert len(images) == 1 and images[0].image.media_type == "image/png"
    assert images[0].image.data == PNG
    # The web address and the order of the items are kept with the prompt, as written.
    raw = json.dumps([p.__dict__ if hasattr(p, "__dict__") else str(p) for p in parts], default=str)
    assert "https://example.test/a.png" in raw
    call = next(p for p in parts if isinstance(p, ToolPart))
    assert call.output == "shot.png" and len(call.images) == 1
    assert call.images[0].data == PNG and PNG not in json.dumps(call.extra, default=str)
    assert_renders(project, tmp_path)
    site = tmp_path / "site"
    from tests.helpers import build

    build(project / ".polyglav" / "sessions", site)
    page = next(site.glob("sessions/*/index.html")).read_text()
    assert page.count("<img ") == 2 and "base64" not in page
