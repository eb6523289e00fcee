"""``polyglav import aider``: a real history (aider's own), synthetic ones, lossless."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from publisher.model import ToolPart
from tests.import_helpers import FIXTURES, assert_renders, contents, loaded, run_import, snapshot

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
