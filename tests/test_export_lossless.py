"""The Markdown export is lossless and deterministic (hypothesis property tests)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from publisher.render.markdown import export_markdown
from tests.helpers import parse_session_bytes, part, session_doc, turn

pytestmark = pytest.mark.unit

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
    """(info, recovered text) of every fenced block, by docs/export.md's recovery rule."""
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


@pytest.mark.slow
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


@pytest.mark.slow
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


# ---- permission and error records: the table and the unknown fields -----------------

TABLES = MarkdownIt("commonmark").enable("table")
PERMISSION_FIELDS = ("timestamp", "tool", "action", "decision", "path")  # the table's order
ERROR_FIELDS = ("code", "message", "timestamp")


def section_blocks(markdown: str, heading: str) -> list[tuple[str, str]]:
    """(info, recovered text) of the fenced blocks under the level-2 ``heading``."""
    lines = markdown.split("\n")
    starts = [
        (t.map[0], lines[t.map[0]])
        for t in PARSER.parse(markdown)
        if t.type == "heading_open" and t.tag == "h2" and t.map
    ]
    begin = next(i for i, (_, line) in enumerate(starts) if line == f"## {heading}")
    first = starts[begin][0]
    last = starts[begin + 1][0] if begin + 1 < len(starts) else len(lines)
    return recover_blocks("\n".join(lines[first:last]) + "\n")


def table_rows(markdown: str) -> list[list[str]]:
    """The body rows of the Permissions table, each cell recovered to the value it shows:
    ``-`` is empty, a code span shows its value, as a JSON string when it starts with ``"``
    (a value with a line break, a control character or a ``|``, one that starts with ``"``,
    or one of spaces only). The last column (the
    tool call a decision resolved, ours, not the record's) is left out."""
    section = markdown[markdown.index("## Permissions") : markdown.index("## Errors")]
    rows: list[list[str]] = []
    in_body = False
    for token in TABLES.parse(section):
        if token.type in ("tbody_open", "tbody_close"):
            in_body = token.type == "tbody_open"
        elif token.type == "tr_open" and in_body:
            rows.append([])
        elif token.type == "inline" and in_body:
            children = token.children or []
            if [c.type for c in children] == ["code_inline"]:
                value = children[0].content
                rows[-1].append(json.loads(value) if value.startswith('"') else value)
            else:
                rows[-1].append("" if token.content == "-" else token.content)
    for row in rows:
        call = row.pop()
        assert call == "no matching call" or call.replace(".", "").isdigit(), call
        assert row[0].isdigit(), row
    return rows


def permission(**fields: Any) -> dict[str, Any]:
    return {"tool": "run_command", "action": "ask", "decision": "granted", "path": "", "timestamp": "", **fields}  # fmt: skip


def test_unknown_fields_of_permissions_and_errors_are_recovered() -> None:
    """Fields this version does not know, of permission and error records, are kept in the
    export as JSON blocks that give them back as written (the lossless promise)."""
    first = {"reviewer": {"id": 7, "tags": ["a|b", "`x`"]}, "ttl": 30, "note": "```\n## Errors"}
    third = {"scope": None, "ratio": 0.5}
    err = {"provider": "ollama", "retry_after": 2.5, "raw": {"detail": "x|y\n```"}}
    doc = session_doc(
        permissions=[permission(**first), permission(decision="denied"), permission(**third)],
        errors=[{"code": 500, "message": "boom", "timestamp": "", **err},
                {"code": 0, "message": "plain", "timestamp": ""}],
    )  # fmt: skip
    markdown = roundtrip(doc)
    kept = [json.loads(text) for info, text in section_blocks(markdown, "Permissions")]
    assert same_json(kept, [first, third])
    assert "Other fields of decision 1:" in markdown and "Other fields of decision 3:" in markdown
    blocks = section_blocks(markdown, "Errors")
    assert blocks[:2] == [("text", "boom"), ("json", blocks[1][1])]
    assert same_json(json.loads(blocks[1][1]), err)
    assert blocks[2:] == [("text", "plain")]
    assert h2_lines(markdown) == ["## Permissions", "## Errors"]


extra_fields = st.dictionaries(
    texts.filter(lambda k: k not in PERMISSION_FIELDS + ERROR_FIELDS), json_values, max_size=3
)
cell_texts = st.text(st.sampled_from('a|`\\"-\n *#:'), max_size=8) | texts


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    extras=st.lists(extra_fields, min_size=1, max_size=3),
    error_extra=extra_fields,
    cells=st.lists(cell_texts, min_size=5, max_size=5),
)
def test_permission_table_and_unknown_fields_round_trip(
    extras: list[dict[str, Any]], error_extra: dict[str, Any], cells: list[str]
) -> None:
    """Any value in a table cell (pipes, backticks, line breaks…) stays in its cell and is
    recovered; any unknown fields of any record are recovered."""
    values = dict(zip(PERMISSION_FIELDS, cells, strict=True))
    records = [{**permission(**values), **extra} for extra in extras]
    doc = session_doc(
        permissions=records,
        errors=[{"code": 1, "message": "m", "timestamp": "", **error_extra}],
    )
    markdown = roundtrip(doc)
    rows = table_rows(markdown)
    expected = [[str(i), *cells] for i in range(1, len(records) + 1)]
    assert rows == expected
    kept = [json.loads(text) for _, text in section_blocks(markdown, "Permissions")]
    assert same_json(kept, [e for e in extras if e])
    error_blocks = section_blocks(markdown, "Errors")
    if error_extra:
        assert same_json(json.loads(error_blocks[1][1]), error_extra)
    else:
        assert len(error_blocks) == 1


def test_a_pipe_in_a_table_cell_stays_in_its_cell() -> None:
    """``|`` splits a GFM table row even inside a code span: the export writes it escaped."""
    values = {"tool": "a|b", "path": "x `|` y", "action": "|", "decision": "denied|granted"}
    markdown = roundtrip(session_doc(permissions=[permission(**values)]))
    row = markdown.split("|---|---|---|---|---|---|---|\n", 1)[1].split("\n", 1)[0]
    assert row.count("|") == 8, row  # the seven cells' separators only
    assert table_rows(markdown) == [["1", "", "a|b", "|", "denied|granted", "x `|` y"]]


def test_a_value_that_looks_like_a_json_string_is_not_ambiguous() -> None:
    """A value starting with ``"`` is written in the JSON form too, so the form is never
    mistaken for a value written as is."""
    markdown = roundtrip(
        session_doc(permissions=[permission(tool='"a\\u007cb"'), permission(tool="a|b")])
    )
    rows = table_rows(markdown)
    assert [row[2] for row in rows] == ['"a\\u007cb"', "a|b"]


def test_a_value_of_spaces_only_reads_back() -> None:
    """CommonMark keeps a code span's padding when the content is all spaces: such a value
    is written in the JSON form."""
    rows = table_rows(roundtrip(session_doc(permissions=[permission(path=" ")])))
    assert rows[0][5] == " "
