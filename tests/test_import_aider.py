"""``polyglav import aider``: a real history (aider's own), synthetic ones, lossless."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from publisher.importers.aider import block_text, thinking_text
from publisher.model import ToolPart
from tests.helpers import build
from tests.import_helpers import (
    FIXTURES,
    assert_renders,
    contents,
    loaded,
    run_import,
    sessions_dir,
    snapshot,
)

pytestmark = pytest.mark.site

REAL = FIXTURES / "aider"


def test_real_history_imports_and_renders(tmp_path: Path) -> None:
    project = tmp_path / "p"
    code, err = run_import("aider", REAL, project=project)  # a folder: its history file
    assert code == 0, err
    sessions = loaded(project)
    assert sorted(n[:19] for n in sessions) == ["ses_20240805_193302", "ses_20240805_193332"]
    edit_session = sessions[max(sessions)]
    kinds = [k for k, _ in contents(edit_session)]
    assert kinds[:4] == ["system", "user", "text", "tool"]
    assert ("command", "/diff") in contents(edit_session)
    edit = next(p for t in edit_session.turns for p in t.parts if isinstance(p, ToolPart))
    assert edit.name == "edit" and edit.input["path"] == "aider/utils.py"
    assert edit.input["search"].startswith("def run_install(cmd):\n")
    assert edit.output == "Applied edit to aider/utils.py"
    assert edit_session.turns[1].model == "claude-3-5-sonnet-20240620"
    first = snapshot(project)
    assert run_import("aider", REAL / ".aider.chat.history.md", project=project)[0] == 0
    assert snapshot(project) == first
    assert_renders(project, tmp_path)


def test_grown_history_updates_the_last_session_only(tmp_path: Path) -> None:
    history = tmp_path / ".aider.chat.history.md"
    history.write_text(
        "\n# aider chat started at 2024-08-05 19:33:02\n\n#### hi  \n\nHello!\n\n", encoding="utf-8"
    )
    project = tmp_path / "p"
    assert run_import("aider", history, project=project)[0] == 0
    before = snapshot(project)
    with history.open("a", encoding="utf-8") as handle:
        handle.write(
            "#### more  \n\nSure.\n\n# aider chat started at 2024-08-06 08:00:00\n\n#### next  \n"
        )
    assert run_import("aider", history, project=project)[0] == 0
    after = snapshot(project)
    assert set(before) < set(after) and len(after) == 2
    (name,) = before
    assert after[name] != before[name]
    assert [t for k, t in contents(loaded(project)[name[:-5]]) if k == "user"] == ["hi", "more"]


lines = st.text(
    st.characters(codec="utf-8", categories=None, exclude_characters="\n\r"), max_size=30
)
block = st.lists(lines, min_size=1, max_size=4).map("\n".join)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(prompt=block, answer=block, output=block)
@example(prompt="a\x00b\x1b[0m", answer="x  \ty", output="")
def test_every_prompt_answer_and_output_survives(
    tmp_path: Path, prompt: str, answer: str, output: str
) -> None:
    # what aider itself writes: input lines "#### x  ", output lines "> x  ", the answer
    # stripped; lines that would read as markers are not what aider writes
    def ok(text: str) -> str:
        return "\n".join(
            "w" + ln if ln.startswith(("#", ">")) or not ln.strip() else ln
            for ln in text.split("\n")
        )

    prompt, output = ok(prompt).rstrip(), ok(output).rstrip()
    answer = ok(answer).strip()
    if prompt.startswith("/"):
        prompt = "w" + prompt
    framed_prompt = "".join(f"#### {ln}  \n" for ln in prompt.split("\n"))
    framed_output = "".join(f"> {ln}  \n" for ln in output.split("\n"))
    text = f"\n# aider chat started at 2024-08-05 19:33:02\n\n{framed_prompt}\n{answer}\n\n{framed_output}\n"
    folder = tmp_path / f"h{abs(hash((prompt, answer, output)))}"
    folder.mkdir()
    (folder / ".aider.chat.history.md").write_text(text, encoding="utf-8", newline="")
    code, err = run_import("aider", folder, project=folder / "p")
    assert code == 0, err
    (session,) = loaded(folder / "p").values()
    got = [(k, v) for k, v in contents(session) if k != "tool"]
    assert got == [("user", prompt), ("text", answer), ("system", output)]
    shutil.rmtree(folder)


def _answers(doc: dict[str, Any]) -> list[str]:
    """Each answer of a session file put back together: its text parts and its edit blocks
    (``block_text``) in order, a prompt, command or output part ending one."""
    answers: list[str] = []
    current: list[str] | None = None
    for turn in doc["turns"]:
        for part in turn["parts"]:
            if part["type"] == "text":
                current = current if current is not None else []
                current.append(part["text"])
            elif part["type"] == "tool" and "aider_edit_block" in part:
                current = current if current is not None else []
                current.append(block_text(part))
            elif part["type"] == "thinking" and "aider_thinking" in part:
                current = current if current is not None else []
                current.append(thinking_text(part))
            elif current is not None:
                answers.append("".join(current))
                current = None
    if current is not None:
        answers.append("".join(current))
    return answers


def test_the_real_answer_is_kept_byte_for_byte_and_its_edit_shown_once(tmp_path: Path) -> None:
    project = tmp_path / "p"
    assert run_import("aider", REAL, project=project)[0] == 0
    history = (REAL / ".aider.chat.history.md").read_text(encoding="utf-8").split("\n")
    path = max(sessions_dir(project).glob("*.json"))
    doc = json.loads(path.read_bytes())
    assert _answers(doc) == ["\n".join(history[21:114])]  # lines 22-114 of the history
    kinds = [p["type"] for t in doc["turns"] for p in t["parts"]]
    assert kinds[:6] == ["system", "user", "text", "tool", "text", "system"]
    # the page: the block once, as a diff; the answer's prose around it
    report = build(sessions_dir(project), tmp_path / "site")
    assert not report.failures
    page = (tmp_path / "site" / "sessions" / path.stem / "index.html").read_text()
    assert "SEARCH" not in page and "REPLACE" not in page
    assert page.count('<pre class="diff"') == 1
    assert page.count('<span class="d-add">+        spinner = Spinner("Installing...")') == 1
    assert page.count("This change replaces the custom spinner") == 1
    body = page.split('<pre class="diff"')[1]
    assert 'class="d-del">-        spinner = itertools.cycle(' in body


blank = st.sampled_from(["", "\n", "\n\n", "\n \n"])


def _imported(folder: Path, history: str) -> dict[str, Any]:
    """The one session file of ``history`` imported from ``folder`` (made for it)."""
    folder.mkdir()
    (folder / ".aider.chat.history.md").write_text(history, encoding="utf-8", newline="")
    assert run_import("aider", folder, project=folder / "p")[0] == 0
    (path,) = sessions_dir(folder / "p").glob("*.json")
    doc: dict[str, Any] = json.loads(path.read_bytes())
    return doc


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    before=block,
    after=block,
    between=blank,
    search=st.lists(lines, max_size=3),
    replace=st.lists(lines, max_size=3),
    fence=st.sampled_from([None, "```", "```python"]),
)
@example(before="", after="", between="", search=[], replace=[], fence=None)
def test_answers_with_edit_blocks_survive_byte_for_byte(
    tmp_path: Path,
    before: str,
    after: str,
    between: str,
    search: list[str],
    replace: list[str],
    fence: str | None,
) -> None:
    def ok(text: str) -> str:
        return "\n".join(
            "w" + ln
            if ln.startswith(("#", ">", "<<<<<<<", "=======", ">>>>>>>", "```")) or not ln.strip()
            else ln
            for ln in text.split("\n")
        )

    edit = "".join(
        [
            "src/a.py\n",
            f"{fence}\n" if fence else "",
            "<<<<<<< SEARCH\n",
            "".join(ok(ln) + "\n" for ln in search),
            "=======\n",
            "".join(ok(ln) + "\n" for ln in replace),
            ">>>>>>> REPLACE",
            "\n```" if fence else "",
        ]
    )
    answer = f"{ok(before).strip()}\n\n{edit}\n{between}{edit}\n\n{ok(after).strip()}".strip()
    text = f"\n# aider chat started at 2024-08-05 19:33:02\n\n#### go  \n\n{answer}\n\n> Applied edit to src/a.py  \n"
    folder = (
        tmp_path / f"h{abs(hash((before, after, between, tuple(search), tuple(replace), fence)))}"
    )
    doc = _imported(folder, text)
    assert _answers(doc) == [answer]
    edits = [p for t in doc["turns"] for p in t["parts"] if p["type"] == "tool"]
    assert [(p["input"]["search"], p["input"]["replace"]) for p in edits] == [
        ("".join(ok(ln) + "\n" for ln in search), "".join(ok(ln) + "\n" for ln in replace))
    ] * 2
    assert all(
        "<<<<<<<" not in p["text"] for t in doc["turns"] for p in t["parts"] if p["type"] == "text"
    )
    shutil.rmtree(folder)


TAG = "thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b"
"""The tags aider writes a reasoning model's thinking between (aider's reasoning_tags.py)."""


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(thought=block, after=block, lead=blank, trail=blank, edit=st.booleans(), twice=st.booleans())
@example(thought="", after="ok", lead="\n\n", trail="\n\n\n", edit=False, twice=False)
def test_thinking_is_a_thinking_part_and_the_answer_survives_byte_for_byte(
    tmp_path: Path, thought: str, after: str, lead: str, trail: str, edit: bool, twice: bool
) -> None:
    """As a real history of aider 0.86 with a reasoning model writes it: the thinking
    between its tags first, then the answer (and its edits)."""

    def ok(text: str) -> str:
        return "\n".join(
            "w" + ln
            if ln.startswith(
                ("#", ">", "<<<<<<<", "=======", ">>>>>>>", "```", "<thinking", "</thinking")
            )
            or not ln.strip()
            else ln
            for ln in text.split("\n")
        )

    thinking = f"<{TAG}>{lead}{ok(thought).strip()}{trail}</{TAG}>"
    block_ = "src/a.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE" if edit else ""
    answer = f"{thinking}\n\n{ok(after).strip()}\n\n{block_}".strip()
    if twice:
        answer = f"{answer}\n\n{thinking}"
    text = f"\n# aider chat started at 2026-04-22 09:06:43\n\n#### go  \n\n{answer}\n\n> done  \n"
    folder = tmp_path / f"h{abs(hash((thought, after, lead, trail, edit, twice)))}"
    doc = _imported(folder, text)
    assert _answers(doc) == [answer]
    parts = [p for t in doc["turns"] for p in t["parts"]]
    thoughts = [p["text"] for p in parts if p["type"] == "thinking"]
    assert thoughts == [ok(thought).strip()] * (2 if twice else 1)
    assert all(TAG not in p.get("text", "") for p in parts)
    shutil.rmtree(folder)
