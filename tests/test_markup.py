"""The escaping path: link schemes, references, JSON highlighting."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from publisher.refs import find as find_refs
from publisher.render.markup import (
    escape_text,
    highlight_json,
    link_allowed,
    render_markdown,
)

pytestmark = pytest.mark.unit

# The plain definition that refs.find implements faster.
REFERENCE = re.compile(r"(?<![\w#/&])(#[0-9a-z]{6}\b|session:[A-Za-z0-9._-]+[A-Za-z0-9_-])")


_PIECES = ["#ab12cd", "session:", "a-", "b.c", "#", " ", "x", "/", "&", "é", "\n"]


@settings(max_examples=200)
@given(
    st.text(st.sampled_from("ab9#_/&:. \nsesion-xyzé"), max_size=80)
    | st.text(max_size=40)
    | st.lists(st.sampled_from(_PIECES), max_size=30).map("".join)
)
def test_find_refs_matches_the_reference_regex(text: str) -> None:
    assert [ref for _, _, ref in find_refs(text)] == [m.group(1) for m in REFERENCE.finditer(text)]


def test_a_reference_blocked_hides_none_that_begins_within_it() -> None:
    # A name's match can hold the next "session:" (a name has no ":"): after a match the
    # scan goes on from its end; after a blocked one (here after "a"), from within it.
    text = " #ab12cd session:a-session:bc asession:x-session:yz x#cd34ef #zz99zz"
    expected = ["#ab12cd", "session:a-session", "session:yz", "#zz99zz"]
    assert [m.group(1) for m in REFERENCE.finditer(text)] == expected
    assert [r for _, _, r in find_refs(text)] == expected
    assert [r for _, _, r in find_refs("x" * 5000 + text * 50)] == expected * 50


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://docs.python.org/3/", True), ("http://x", True), ("mailto:a@b.c", True), ("../x/index.html", True),
        ("#turn-3", True), ("//cdn.example/x", True), ("javascript:alert(1)", False), ("JaVaScRiPt:x", False),
        (" javascript:x", False), ("java\tscript:x", False), ("java\nscript:x", False), ("vbscript:x", False),
        ("data:text/html,x", False), ("file:///etc/passwd", False), ("x:y", False),
    ],
)  # fmt: skip
def test_link_schemes(url: str, ok: bool) -> None:
    assert link_allowed(url) is ok


def test_markdown_refuses_raw_html_and_unsafe_links() -> None:
    html = render_markdown(
        '<script>x</script> [a](javascript:x) ![i](https://e.example/p.png) <b onclick="x">'
    )
    assert "<script>" not in html and "<b " not in html
    assert 'href="javascript' not in html
    assert "<img" not in html and 'class="image-link"' in html


def test_references_become_links_only_when_resolved() -> None:
    resolve = {"#abc123": "../a/index.html", "session:notes": "../notes/index.html"}.get
    html = render_markdown("see #abc123, #zzz999 and session:notes", resolve)
    assert '<a class="session-ref" href="../a/index.html">#abc123</a>' in html
    assert "#zzz999" in html and 'href="../notes/index.html"' in html
    assert (
        escape_text("<#abc123>", resolve)
        == '&lt;<a class="session-ref" href="../a/index.html">#abc123</a>&gt;'
    )


def test_highlight_json_escapes() -> None:
    out = highlight_json('{"<k>": "</span><script>", "n": -1.5e3, "t": true}')
    assert "<script>" not in out and "&lt;/span&gt;&lt;script&gt;" in out
    assert (
        '<span class="j-key">"&lt;k&gt;"</span>' in out
        and '<span class="j-num">-1.5e3</span>' in out
    )


PROSE = st.sampled_from(
    [
        *"ab Z9 .,;:'\"?()/@$%^{}=+-#\n",
        "\n\n",
        "   ",
        "\u00a0",
        "é",
        "\u2028",
        "1.",
        "- ",
        "#x",
        "\t",
        "a_b",
        "`",
        "``",
        "_",
        " `x` ",
        "`a_b`",
        "`` ` ``",
        "é_a",
        "\n  `",
    ]
)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(st.lists(PROSE, max_size=40).map("".join))
def test_plain_prose_fast_path_matches_markdown_it(text: str) -> None:
    from publisher.render.markup import MD, _plain_paragraphs

    fast = _plain_paragraphs(text, False)
    if fast is not None:
        assert fast == MD.render(text)


def test_fast_path_takes_prose_and_leaves_syntax() -> None:
    from publisher.render.markup import _plain_paragraphs

    assert _plain_paragraphs("Run the tests first.\nThen read the code.\n\nDone.", False) == (
        "<p>Run the tests first.\nThen read the code.</p>\n<p>Done.</p>\n"
    )
    assert _plain_paragraphs("Run `make  test` in `` a`b ``, see my_file.\nThen ` x `.", True) == (
        "<p>Run <code>make  test</code> in <code>a`b</code>, see my_file.\n"
        "Then <code>x</code>.</p>\n"
    )
    for syntax in [
        "- item",
        "use `x",
        "a `b\nc` d",
        "_em_",
        "a _b",
        "`x`_y",
        "```\ncode\n```",
        "*em*",
        "# h",
        "a  \nb",
        "> q",
        "1. one",
        "    code",
        "a | b",
        "see #abc123",
    ]:
        assert _plain_paragraphs(syntax, True) is None, syntax


# The plain definitions that the fast scans of tool outputs implement (issue 13).
DIFF_HINT = re.compile(r"^(?:diff --git |--- \S|\*\*\* Begin Patch|@@ -\d)", re.M)
HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@", re.M)


@settings(max_examples=300)
@given(st.lists(st.sampled_from(["@@ -", "1", ",2", " +", " @@", "\n", "diff --git ", "--- a", "x", "*** Begin Patch", "\r", "é"]), max_size=30).map("".join))  # fmt: skip
def test_looks_like_diff_matches_the_reference_regexes(text: str) -> None:
    from publisher.render.tools import looks_like_diff

    head = text[:200_000]
    expected = (HUNK.search(head) is not None and DIFF_HINT.search(head) is not None) or (
        "*** Begin Patch" in head
    )
    assert looks_like_diff(text) == expected


@settings(max_examples=300)
@given(st.text(max_size=60) | st.text(st.characters(max_codepoint=0x7F), max_size=60))
def test_has_controls_matches_the_control_regex(text: str) -> None:
    from publisher.render.text import TERMINAL_CONTROL_RE, has_controls

    # Carriage return is matched by the regex but shown as itself: either answer is right.
    if has_controls(text):
        assert TERMINAL_CONTROL_RE.search(text) is not None
    else:
        assert TERMINAL_CONTROL_RE.search(text.replace("\r", "")) is None


#: highlight_json's token pattern as it was (a key and a string as two alternatives, a
#: string's body one alternation a character): the reference the faster one must match.
_JSON_TOKEN_BEFORE = re.compile(
    r'(?P<key>"(?:[^"\\]|\\.)*"(?=\s*:))|(?P<str>"(?:[^"\\]|\\.)*")|'
    r"(?P<num>-?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|Infinity|NaN))|(?P<lit>true|false|null)"
)


def _highlight_reference(text: str) -> str:
    """highlight_json as it was: tokenise the raw text (with the pattern as it was),
    escape each piece; a control or bidirectional control shown first as its JSON escape."""
    from html import escape

    from publisher.render.markup import HIGHLIGHT_LIMIT, _scrub

    text = re.sub(
        "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]",
        lambda m: f"\\u{ord(m.group()):04x}",
        _scrub(text),
    )
    if len(text) > HIGHLIGHT_LIMIT:
        return escape(text, quote=False)
    out, pos = [], 0
    for match in _JSON_TOKEN_BEFORE.finditer(text):
        out.append(escape(text[pos : match.start()], quote=False))
        out.append(
            f'<span class="j-{match.lastgroup or "str"}">{escape(match.group(0), quote=False)}</span>'
        )
        pos = match.end()
    out.append(escape(text[pos:], quote=False))
    return "".join(out)


@settings(max_examples=300)
@given(
    st.lists(st.sampled_from(['"', "\\\\", "\\\\\"", ":", " ", "1", "-2.5e3", "true", "null", "fal", "se", "<", ">", "&", "lt;", "amp", "gt", "{", "}", "[", ",", "Infinity", "NaN", "x", "é", "\ud800", "\n", "\t", "\u202e", "\x85", "\x1b"]), max_size=40).map("".join)
    | st.text(max_size=60)
)  # fmt: skip
def test_highlight_json_matches_tokenising_before_escaping(text: str) -> None:
    assert highlight_json(text) == _highlight_reference(text)


_HEADINGS = re.compile(r"<h([1-6])>")


@settings(max_examples=200)
@given(
    st.lists(
        st.tuples(st.integers(1, 6), st.sampled_from(["# ", "", "setext"])),
        min_size=1,
        max_size=12,
    )
)
def test_headings_in_a_message_never_skip_a_level(marks: list[tuple[int, str]]) -> None:
    """Under a part's h3, a message's headings start at h4 and each is at most one level
    below the one before (real aider answers went from h3 to h5: the Nu checker's error)."""
    blocks = []
    for depth, style in marks:
        if style == "setext" and depth <= 2:
            blocks.append(f"Title\n{'=' if depth == 1 else '-'}")
        elif style:
            blocks.append(f"{'#' * depth} Title")
        else:
            blocks.append("text")
    levels = [int(n) for n in _HEADINGS.findall(render_markdown("\n\n".join(blocks) + "\n"))]
    previous = 3
    for level in levels:
        assert 4 <= level <= min(6, previous + 1), levels
        previous = level


def test_a_message_opening_on_a_deeper_heading_starts_at_h4() -> None:
    out = render_markdown("## Plan\n\ntext\n\n# Summary\n\n### Detail\n")
    assert [int(n) for n in _HEADINGS.findall(out)] == [4, 4, 5]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("[x.go](pkg/models/x.go)", "x.go (<code>pkg/models/x.go</code>)"),
        ("[pkg/a.go](pkg/a.go)", "<code>pkg/a.go</code>"),
        ("[C](/C:/Users/me/a.txt)", "C (<code>/C:/Users/me/a.txt</code>)"),
        ("[`b.py`](b.py#L3)", "<code>b.py</code> (<code>b.py#L3</code>)"),
        ("[top](#turn-3)", "top (<code>#turn-3</code>)"),
        (
            "![shot](shot.png)",
            '<span class="blocked-image">[image: shot] <code>shot.png</code></span>',
        ),
        ("[**b**](a/<x>.md)", "<strong>b</strong> (<code>a/%3Cx%3E.md</code>)"),
    ],
)
def test_links_into_the_workspace_are_code(text: str, shown: str) -> None:
    """An agent's link to a file of the user's repository or disk is not on the site: code,
    never a broken link; links to the web stay links."""
    html = render_markdown(f"see {text} and [w](https://e.example/)")
    assert f"<p>see {shown} and " in html
    assert html.count("<a ") == 1 and 'href="https://e.example/"' in html


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("see #ab12cd.", ["#ab12cd"]),
        ("see #ab12c.", []),  # five characters: not an id
        ("see #ab12cd1.", []),  # seven: not one either
        ("see #a.", []),
        ("#zzzzzz #99999 #0000000", ["#zzzzzz"]),
    ],
)
def test_a_session_id_is_exactly_six_base36_characters(text: str, found: list[str]) -> None:
    from publisher import refs

    assert [ref for _, _, ref in find_refs(text)] == found
    for candidate in ("ab12c", "ab12cd1", "AB12CD", "ab12c_"):
        assert not refs.is_id(candidate), candidate
    assert refs.is_id("ab12cd") and refs.is_id("000000")
