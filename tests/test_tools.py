"""Tool-aware rendering (publisher/render/tools.py): the registry, diffs, ANSI colours,
control characters, long outputs, and a theme's own tools/<name>.html."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jinja2 import Environment, Template
from markupsafe import Markup, escape

from publisher.loader import session_from_json
from publisher.model import ToolPart
from publisher.render import html, tools
from publisher.render.markup import escape_text, render_markdown
from publisher.theme import Theme
from tests.helpers import MAIN, build, page_of, part, session_doc, turn, write_json

pytestmark = pytest.mark.unit

EVIL = '<script>alert(1)</script>"\x1b[2J\x00'


def _tool(name: str, inp: object, output: str | None = "ok") -> ToolPart:
    doc = session_doc(turns=[turn(1, part("tool", name=name, input=inp, output=output))])
    found = session_from_json(doc, "x.json").turns[0].parts[0]
    assert isinstance(found, ToolPart)
    return found


def test_registry_reads_the_known_tools() -> None:
    assert tools.friendly(_tool("run_command", {"command": "ls -la"})) == tools.ToolView(
        "shell", command="ls -la"
    )
    assert tools.friendly(_tool("shell", {"command": ["bash", "-lc", "git status"]})).command == (  # type: ignore[union-attr]
        "git status"
    )
    read = tools.friendly(_tool("Read", {"file_path": "a.py", "offset": 10, "limit": 5}))
    assert read is not None and (read.path, read.lines) == ("a.py", "lines 10–14")
    edit = tools.friendly(
        _tool("Edit", {"file_path": "a.py", "old_string": "x\n", "new_string": "y\n"})
    )
    assert edit is not None and "-x" in edit.diff and "+y" in edit.diff
    multi = tools.friendly(
        _tool("MultiEdit", {"file_path": "a", "edits": [{"old_string": "1", "new_string": "2"}]})
    )
    assert multi is not None and "+2" in multi.diff
    assert tools.friendly(_tool("Write", {"file_path": "n.py", "content": "x"})).kind == "write"  # type: ignore[union-attr]
    patch = "*** Begin Patch\n*** Update File: a\n@@\n-a\n+b\n*** End Patch"
    assert tools.friendly(_tool("apply_patch", {"input": patch})).diff == patch  # type: ignore[union-attr]
    aider = tools.friendly(_tool("edit", {"path": "f", "search": "a", "replace": "b"}))
    assert aider is not None and aider.kind == "diff"
    task = _tool("delegate", {"role": "reviewer"}, "Delegated to sub_1 (role reviewer).")
    assert tools.friendly(task) == tools.ToolView("delegate", role="reviewer", target="sub_1")
    assert tools.friendly(_tool("my_tool", {"x": 1})) is None  # the generic view
    assert tools.friendly(_tool("run_command", [1, {}])) is None  # odd input: generic


def test_registry_reads_searches_questions_plans_and_to_do_lists() -> None:
    """The inputs as real Claude Code and Codex logs write them."""
    view = tools.friendly
    grep = {"pattern": "port|http:", "path": "/w", "glob": "config/*.exs"}
    assert view(_tool("Grep", grep)) == tools.ToolView(
        "search", pattern="port|http:", path="/w", files="config/*.exs"
    )
    assert view(_tool("Glob", {"pattern": "**/mix.exs"})) == tools.ToolView(
        "find", pattern="**/mix.exs"
    )
    assert view(_tool("WebSearch", {"query": "mix_audit"})) == tools.ToolView(
        "web_search", query="mix_audit"
    )
    fetch = {"url": "https://hexdocs.pm/x", "prompt": "What does setup/1 take?"}
    assert view(_tool("WebFetch", fetch)) == tools.ToolView(
        "fetch", url="https://hexdocs.pm/x", task="What does setup/1 take?"
    )
    option = {"label": "spotter", "description": "Use 'spotter' as the prefix"}
    asked = {"question": "Which rig?", "header": "Rig", "options": [option], "multiSelect": False}
    assert view(_tool("AskUserQuestion", {"questions": [asked]})) == tools.ToolView(
        "ask",
        questions=(
            tools.Question(
                "Which rig?", "Rig", (tools.Option("spotter", "Use 'spotter' as the prefix"),)
            ),
        ),
    )
    plan = view(_tool("ExitPlanMode", {"plan": "# Plan\n\n1. Read"}))
    assert plan == tools.ToolView("plan", content="# Plan\n\n1. Read")
    todos = [{"content": "Write it", "status": "completed", "activeForm": "Writing it"}]
    assert view(_tool("TodoWrite", {"todos": todos})) == tools.ToolView(
        "todos", todos=(tools.Todo("Write it", "completed"),)
    )
    codex = {"explanation": "Two steps", "plan": [{"step": "Read", "status": "in_progress"}]}
    assert view(_tool("update_plan", codex)) == tools.ToolView(
        "todos", task="Two steps", todos=(tools.Todo("Read", "in_progress"),)
    )
    cmd = {"cmd": "rg -n compact .", "workdir": "/w", "yield_time_ms": 1000}  # Codex 0.125
    assert view(_tool("exec_command", cmd)) == tools.ToolView("shell", command="rg -n compact .")
    poll = {"session_id": 48230, "chars": "", "yield_time_ms": 1000}
    assert view(_tool("write_stdin", poll)) == tools.ToolView("stdin", target="48230")
    ctrl_c = {"session_id": 20936, "chars": "\u0003"}
    assert view(_tool("write_stdin", ctrl_c)) == tools.ToolView(
        "stdin", target="20936", content="\u0003"
    )
    waited = {"task_id": "bd0afab", "block": True, "timeout": 120000}  # Claude Code 2.1
    assert view(_tool("TaskOutput", waited)) == tools.ToolView(
        "task_output", target="bd0afab", timeout="120 s"
    )
    read = view(_tool("BashOutput", {"bash_id": "b1"}))
    assert read == tools.ToolView("task_output", target="b1")
    skill = {"skill": "elixir:hex-docs-search", "args": "opentelemetry_bandit setup"}
    assert view(_tool("Skill", skill)) == tools.ToolView(
        "skill", target="elixir:hex-docs-search", content="opentelemetry_bandit setup"
    )
    # What they do not recognise keeps the generic view (the input as written).
    assert view(_tool("write_stdin", {"chars": "y"})) is None
    assert view(_tool("TaskOutput", {"block": True})) is None
    huge = view(_tool("TaskOutput", {"task_id": "t", "block": True, "timeout": 10**400 + 1500}))
    assert huge is not None and huge.timeout == "1" + "0" * 396 + "1.5 s"  # no float overflow
    assert view(_tool("ExitPlanMode", {})) is None  # (newer versions keep the plan elsewhere)
    assert view(_tool("AskUserQuestion", {"questions": [{"header": "no question"}]})) is None
    assert view(_tool("TodoWrite", {"todos": ["not an item"]})) is None
    assert view(_tool("Grep", {"path": "/w"})) is None


def test_the_new_views_escape_what_they_show(tmp_path: Path) -> None:
    evil = EVIL + "{{ 7*7 }}"
    calls = [
        ("Grep", {"pattern": evil, "path": evil, "glob": evil}),
        ("Glob", {"pattern": evil, "path": evil}),
        ("WebSearch", {"query": evil}),
        ("WebFetch", {"url": "javascript:alert(1)", "prompt": evil}),
        ("AskUserQuestion", {"questions": [{"question": evil, "header": evil,
                                            "options": [{"label": evil, "description": evil}]}]}),
        ("ExitPlanMode", {"plan": evil + "\n\n[x](javascript:alert(1)) <img src=x onerror=y>"}),
        ("TodoWrite", {"todos": [{"content": evil, "status": evil}]}),
        ("write_stdin", {"session_id": evil, "chars": evil}),
        ("TaskOutput", {"task_id": evil, "block": True, "timeout": 5000}),
        ("Skill", {"skill": evil, "args": evil}),
    ]  # fmt: skip
    parts = [part("tool", name=name, input=inp, output="ok") for name, inp in calls]
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    write_json(sessions / f"{MAIN}.json", session_doc(turns=[turn(1, *parts)]))
    build(sessions, tmp_path / "site")
    page = page_of(tmp_path / "site", MAIN).read_text()
    friendly = re.findall(r'<div class="friendly friendly-([a-z_]+)">(.*?)\n</div>', page, re.S)
    assert [kind for kind, _ in friendly] == [
        "search", "find", "web_search", "fetch", "ask", "plan", "todos", "stdin",
        "task_output", "skill",
    ]  # fmt: skip
    for _, shown in friendly:
        assert "<script" not in shown and "<img" not in shown
        assert 'href="javascript:' not in shown and "onerror=y>" not in shown
        assert "&lt;script&gt;" in shown and "\x1b" not in shown and "\x00" not in shown
        assert "{{ 7*7 }}" in shown  # shown as written, never evaluated


def test_diff_lines_are_classed_and_escaped() -> None:
    out = tools.diff_html(f"--- a\n+++ b\n@@ -1 +1 @@\n-{EVIL}\n+new\n ctx")
    assert '<span class="d-del">-&lt;script&gt;' in out and '<span class="d-add">+new</span>' in out
    assert "<script>" not in out and "\x1b" not in out and "\x00" not in out
    assert '<span class="ctl">\\x1b</span>' in out
    assert tools.looks_like_diff("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
    assert not tools.looks_like_diff("- a list\n+ not a diff\n")


def test_ansi_colours_become_classes_and_other_escapes_stay_visible() -> None:
    out = tools.ansi_html(f"\x1b[1;31mFAIL\x1b[0m ok \x1b[32m{EVIL}\x1b[0m\x1b]0;title\x07")
    assert '<span class="ansi-bold ansi-fg-1">FAIL</span>' in out
    assert '<span class="ansi-fg-2">&lt;script&gt;' in out
    assert "\x1b" not in out and "\x07" not in out and "\x00" not in out
    assert "<script>" not in out


def test_control_characters_never_reach_html_raw() -> None:
    for rendered in (escape_text("a\x1b[0mb\x00c"), render_markdown("# t\n\na\x1bb\x00 *c*")):
        assert "\x1b" not in rendered and "\x00" not in rendered
        assert "x1b" in rendered


def test_bidirectional_controls_never_reach_html_raw() -> None:
    """Embedding, override and isolate controls are shown as escapes in every HTML path
    (prose, plain or parsed; tool output; ANSI output); the joiners and marks that
    Persian and emoji need stay as written."""
    evil = "access \u202e}nruter{\u202c and \u2066x\u2069"
    for rendered in (
        escape_text(evil),
        render_markdown(evil),  # the plain-paragraph path
        render_markdown(f"# t\n\n*{evil}*"),  # the parser's
        tools.ansi_html(f"\x1b[31m{evil}\x1b[0m"),
    ):
        assert not re.search("[\u202a-\u202e\u2066-\u2069]", rendered), rendered
        assert "\\u202e}nruter{\\u202c" in rendered.replace('<span class="ctl">', "").replace(
            "</span>", ""
        ), rendered
    kept = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645 \U0001f468\u200d\U0001f469 \u200f."
    assert kept in render_markdown(kept) and kept in escape_text(kept)


def test_markdown_headings_nest_under_the_part_and_code_is_focusable() -> None:
    out = render_markdown("# One\n\n### Three\n\n```\ncode\n```\n\n    indented\n")
    assert "<h4>One</h4>" in out and "<h5>Three</h5>" in out and "<h1>" not in out
    assert out.count('<pre tabindex="0">') == 2


def test_long_output_keeps_head_and_tail_and_every_byte() -> None:
    text = "".join(f"line {i}\r\n" if i % 7 == 0 else f"line {i}\n" for i in range(100))
    head, middle, tail, hidden = html._head_tail(text, text.count("\n"))
    assert head + middle + tail == text
    assert head.startswith("line 0") and tail.endswith("line 99\n")
    assert hidden == 100 - html.HEAD_LINES - html.TAIL_LINES
    assert html._head_tail("short\n", 1) == ("short\n", "", "", 0)


@pytest.mark.parametrize("end", ["\n", "", "\r\n", "\n\n"])
@pytest.mark.parametrize("count", [17, 18, 19, 20, 40])
def test_hidden_lines_are_the_line_breaks_of_the_middle(end: str, count: int) -> None:
    # _head_tail counts the middle's line breaks from the text's (not by counting again).
    text = "\n".join(f"l{i}" for i in range(count)) + end
    head, middle, tail, hidden = html._head_tail(text, text.count("\n"))
    assert head + middle + tail == text
    assert hidden == middle.count("\n")


@pytest.mark.parametrize("end", ["\n", "", "\r\n"])
def test_the_indexed_part_of_a_tail_is_its_last_lines(end: str) -> None:
    tail = "".join(f"t{i}\n" for i in range(11)) + "t11" + end
    start = html._last_lines_start(tail, html.INDEXED_LINES)
    assert tail[start:] == "t6\nt7\nt8\nt9\nt10\nt11" + end
    assert html._last_lines_start("a\nb\n", 6) == 0
    assert html._last_lines_start("", 6) == 0


def test_a_long_outputs_view_marks_its_last_lines_for_the_index() -> None:
    output = "".join(f"line {i}\n" for i in range(100))
    doc = session_doc(turns=[turn(1, part("tool", name="run_command", input={}, output=output))])
    session = session_from_json(doc, "x.json")
    view = html.output_view(session.turns[0], 1, output, False, {})
    assert view.head + view.middle + view.tail == output
    assert view.tail[view.indexed_from :] == "".join(f"line {i}\n" for i in range(94, 100))


def test_a_theme_template_renders_its_own_tool(tmp_path: Path) -> None:
    theme = tmp_path / "mytheme"
    (theme / "templates" / "tools").mkdir(parents=True)
    (theme / "templates" / "tools" / "deploy.html").write_text(
        '<p class="deploy">Deploy to {{ p.part.input.env }}</p>\n', encoding="utf-8"
    )
    doc = session_doc(
        turns=[turn(1, part("tool", name="deploy", input={"env": EVIL}, output="done"))]
    )
    session = session_from_json(doc, "x.json")
    renderer = html.HtmlRenderer(Theme.load(str(theme)))
    out = renderer.render_turn(session, session.turns[0], [], None).html
    assert '<p class="deploy">Deploy to &lt;script&gt;' in out
    assert "As written: the input" in out  # the full input stays reachable


def _diff_html_reference(text: str) -> str:
    """diff_html as it was: each line escaped and its controls made visible on its own."""
    from html import escape

    out = []
    for line in text.split("\n"):
        shown = tools.visible_controls(escape(line, quote=False))
        if line.startswith(("+++", "---", "diff --git", "*** ", "index ")):
            out.append(f'<span class="d-file">{shown}</span>')
        elif line.startswith("@@"):
            out.append(f'<span class="d-hunk">{shown}</span>')
        elif line.startswith("+"):
            out.append(f'<span class="d-add">{shown}</span>')
        elif line.startswith("-"):
            out.append(f'<span class="d-del">{shown}</span>')
        else:
            out.append(shown)
    return "\n".join(out)


@settings(max_examples=500)
@given(st.lists(st.sampled_from(["+", "-", "@@ -1 +1 @@", "+++ a", "--- b", "diff --git", "*** ", "index ", "<", ">", "&", "\n", "x", " ", "\x1b[31m", "\x00", "\r", "\ud800", "é", "\t"]), max_size=30).map("".join))  # fmt: skip
def test_diff_html_escapes_once_as_line_by_line(text: str) -> None:
    assert tools.diff_html(text) == _diff_html_reference(text)


class _Html:
    """A value that renders itself (``__html__``), as a plugin's object may."""

    def __html__(self) -> str:
        return "<b>safe & sound</b>"


_PRINTED = st.one_of(
    st.text(),
    st.text(alphabet=st.sampled_from("<>&\"'\x1b\x00\r\n\t\x7f\x85\ud800 aé")),
    st.text().map(Markup),
    st.integers(),
    st.floats(allow_nan=True),
    st.none(),
    st.booleans(),
    st.just(_Html()),
    st.lists(st.text(max_size=3), max_size=3),
)


@pytest.fixture(scope="module")
def printing() -> tuple[Template, Template]:
    """:data:`_PRINTING` compiled by the renderer, and by a plain jinja2 environment with
    the same autoescaping and ``finalize``."""
    renderer = html.HtmlRenderer(Theme.load(None))
    reference = Environment(autoescape=True, finalize=html.visible_text)
    return renderer.env.from_string(_PRINTING), reference.from_string(_PRINTING)


@settings(max_examples=300)
@given(_PRINTED)
def test_a_printed_value_is_what_jinja2_escape_and_finalize_make(
    printing: tuple[Template, Template], value: object
) -> None:
    # The renderer's templates print {{ value }} with html.emit (one call) instead of
    # jinja2's escape(environment.finalize(value)): the same characters, for every kind of
    # value and every way a template prints.
    assert html.emit(value) == str(escape(html.visible_text(value)))
    ours, theirs = printing
    for flag in (True, False):
        assert ours.render(v=value, flag=flag) == theirs.render(v=value, flag=flag)


#: Every way a template prints: plain, in a {% set %} block, in a macro, with autoescape
#: off and with autoescape decided at run time.
_PRINTING = (
    "[{{ v }}|{{ v }}]{% set b %}<{{ v }}>{% endset %}{{ b }}"
    "{% macro mm(a) %}({{ a }}){% endmacro %}{{ mm(v) }}"
    "{% autoescape false %}[{{ v }}]{% endautoescape %}"
    "{% autoescape flag %}[{{ v }}]{% endautoescape %}"
)


def test_templates_print_through_emit_only() -> None:
    renderer = html.HtmlRenderer(Theme.load(None))
    source = renderer.env.loader.get_source(renderer.env, "parts/tool.html")[0]  # type: ignore[union-attr]
    code = renderer.env.compile(source, "parts/tool.html", raw=True)
    assert "environment.emit(" in code
    assert "escape(" not in code.replace("environment.emit(", "")


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**300, max_value=10**400)
    | st.floats()
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
_KEYS = ["command", "cmd", "questions", "question", "options", "label", "todos", "plan", "step",
         "status", "content", "pattern", "path", "glob", "query", "url", "prompt", "session_id",
         "chars", "file_path", "old_string", "new_string", "edits", "role", "task", "task_id",
         "block", "timeout", "skill", "args", "bash_id", "type", "queries", "agent_type",
         "message"]  # fmt: skip
_INPUTS = st.recursive(
    _JSON,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=4)
    ),
    max_leaves=16,
)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(tools.REGISTRY)), value=_INPUTS, key=st.sampled_from(_KEYS))
def test_any_input_of_a_known_tool_renders_escaped(name: str, value: object, key: str) -> None:
    """Whatever a known tool's input holds (inputs shaped like the real ones, every value of
    any type), its call renders: a friendly view or the generic one, never an error and
    never raw markup."""
    evil_value = {**value, key: EVIL} if isinstance(value, dict) else value
    doc = session_doc(turns=[turn(1, part("tool", name=name, input=evil_value, output=EVIL))])
    session = session_from_json(doc, "x.json")
    out = html.HtmlRenderer(Theme.load(None)).render_turn(session, session.turns[0], [], None).html
    assert "<script>" not in out and "\x1b" not in out and "\x00" not in out


def test_the_files_a_run_changed_are_listed_with_their_calls(tmp_path: Path) -> None:
    """Edits, writes and patches that returned without an error, each file with the calls
    that changed it; a failed edit changed nothing the log vouches for."""
    patch = (
        "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Add File: src/new.py\n+z\n"
        "*** Delete File: old.txt\n*** Update File: src/b.py\n*** Move to: src/c.py\n"
        "*** End Patch\n"
    )
    cwd = "/home/me/app"
    doc = session_doc(
        imported_from={"agent": "claude-code", "cwd": cwd},
        turns=[
            turn(
                1,
                part("user", "go"),
                part("tool", name="Edit", output="ok",
                     input={"file_path": f"{cwd}/src/a.py", "old_string": "x", "new_string": "y"}),
                part("tool", name="Write", output="ok",
                     input={"file_path": "/etc/hosts", "content": "127.0.0.1 x\n"}),
                part("tool", name="Edit", output="no match", is_error=True,
                     input={"file_path": f"{cwd}/src/z.py", "old_string": "q", "new_string": "r"}),
                part("tool", name="apply_patch", output="Done", input={"input": patch}),
                part("tool", name="Edit", output=None,
                     input={"file_path": f"{cwd}/src/p.py", "old_string": "q", "new_string": "r"}),
            ),
        ],
    )  # fmt: skip
    session = session_from_json(doc, f"{MAIN}.json")
    assert [(c.path, c.action, c.number) for c in tools.changes_of(session)] == [
        (f"{cwd}/src/a.py", "edited", 2),
        ("/etc/hosts", "written", 3),
        ("src/a.py", "patched", 5),
        ("src/new.py", "added", 5),
        ("old.txt", "deleted", 5),
        ("src/b.py", "patched", 5),
        ("src/c.py", "moved", 5),
    ]
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    write_json(sessions / f"{MAIN}.json", doc)
    build(sessions, tmp_path / "site")
    page = page_of(tmp_path / "site", MAIN).read_text(encoding="utf-8")
    listed = page[
        page.index('<ul class="change-list">') : page.index(
            "</ul>", page.index('<ul class="change-list">')
        )
    ]
    assert "Files changed (7)" in page
    assert f'<code title="{cwd}/src/a.py">src/a.py</code>' in listed  # inside the workspace
    assert '<a href="#turn-1.2">edited 1.2</a>' in listed
    assert '<code title="/etc/hosts">/etc/hosts</code>' in listed
    assert "src/z.py" not in listed and "src/p.py" not in listed
