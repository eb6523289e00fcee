"""The Markdown export is lossless and deterministic (hypothesis property tests)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from publisher.render.markdown import export_markdown
from tests.conftest import parse_session_bytes, part, session_doc, turn

# Every code point, lone surrogates included.
any_char = st.characters(codec=None, exclude_categories=())
texts = st.text(any_char, max_size=60) | st.sampled_from(
    [
        "",
        "```",
        "````\n```",
        "~~~",
        "\r\n",
        "\r",
        "\x00",
        "  ```\n",
        "\n\n",
        "`",
        "x\n",
        "\ud800",
        "\t```",
        "a\r\nb\r\n",
        "1 failed\r\n```\r\n",
        "\r\n\r\n",
    ]
)
# Text whose line endings are all CRLF: kept as a normal block, the ending in the info.
crlf_texts = st.lists(
    st.text(st.characters(codec="utf-8", exclude_characters="\r\n\x00"), max_size=20),
    min_size=2,
    max_size=6,
).map("\r\n".join)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)

PARSER = MarkdownIt("commonmark")


def recover_blocks(markdown: str) -> list[tuple[str, str]]:
    """(info, recovered text) of every fenced block, by the README's recovery rule."""
    out = []
    for token in PARSER.parse(markdown):
        if token.type != "fence":
            continue
        if token.info == "json-string":
            out.append((token.info, json.loads(token.content)))
        else:
            assert token.content.endswith("\n")
            text = token.content[:-1]
            if "line-ending=crlf" in token.info.split():
                text = text.replace("\n", "\r\n")
            out.append((token.info, text))
    return out


def h2_lines(markdown: str) -> list[str]:
    """The source lines of every level-2 heading a CommonMark parser sees."""
    lines = markdown.split("\n")
    return [
        lines[t.map[0]]
        for t in PARSER.parse(markdown)
        if t.type == "heading_open" and t.tag == "h2" and t.map
    ]


def roundtrip(doc: dict[str, Any]) -> str:
    data = json.dumps(doc, allow_nan=True).encode("utf-8", "surrogatepass")
    session = parse_session_bytes(data, doc["session_name"] + ".json")
    return "".join(export_markdown(session))


def same_json(a: Any, b: Any) -> bool:
    return json.dumps(a, allow_nan=True, sort_keys=False) == json.dumps(
        b, allow_nan=True, sort_keys=False
    )


@settings(max_examples=300, deadline=None)
@given(tool_input=json_values, output=texts, analysis=texts, prompt=texts)
def test_tool_input_and_output_recovered_byte_for_byte(
    tool_input: Any, output: str, analysis: str, prompt: str
) -> None:
    doc = session_doc(
        turns=[
            turn(
                1,
                part("user", prompt),
                part(
                    "tool",
                    name="run_command",
                    input=tool_input,
                    output=output,
                    is_error=False,
                    analysis=analysis,
                ),
            )
        ]
    )
    markdown = roundtrip(doc)
    blocks = recover_blocks(markdown)
    expected = 3 + (1 if analysis else 0)
    assert len(blocks) == expected, markdown
    assert blocks[0][1] == prompt
    assert same_json(json.loads(blocks[1][1]), tool_input)
    assert blocks[2][1] == output
    if analysis:
        assert blocks[3][1] == analysis
    # Nothing in the content can add a level-2 heading: Errors stays the last one.
    assert h2_lines(markdown) == ["## Turn 1", "## Permissions", "## Errors"]


@settings(max_examples=100, deadline=None)
@given(text=texts, name=texts, model=texts)
def test_export_is_deterministic_and_encodable(text: str, name: str, model: str) -> None:
    doc = session_doc(
        role=name,
        turns=[
            turn(
                1,
                part("text", text),
                part("tool", name=name, input={name: text}, output=text),
                model=model,
            )
        ],
        errors=[{"code": 0, "message": text, "timestamp": name}],
        permissions=[
            {"tool": name, "action": "ask", "decision": "declined", "path": text, "timestamp": ""}
        ],
    )
    first = roundtrip(doc)
    assert first == roundtrip(doc)
    first.encode("utf-8")  # no lone surrogate reaches the file
    assert h2_lines(first) == ["## Turn 1", "## Permissions", "## Errors"]


@settings(max_examples=200, deadline=None)
@given(output=crlf_texts | texts)
def test_crlf_text_stays_a_normal_block_and_lossless(output: str) -> None:
    doc = session_doc(turns=[turn(1, part("tool", name="run", input={}, output=output))])
    blocks = recover_blocks(roundtrip(doc))
    assert blocks[1][1] == output
    uniform = output.count("\r\n") == output.count("\n") == output.count("\r") > 0
    if uniform and "\x00" not in output and not any(0xD800 <= ord(c) <= 0xDFFF for c in output):
        assert blocks[1][0] == "text line-ending=crlf"


def test_two_exports_of_a_file_are_byte_identical() -> None:
    doc = session_doc(turns=[turn(1, part("user", "hi"), part("text", "## Errors\nfake"))])
    assert roundtrip(doc).encode() == roundtrip(doc).encode()
