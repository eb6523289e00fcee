"""Text helpers shared by the renderers: literal blocks, code spans, terminal safety."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from ..model import JSON

#: Characters a CommonMark code block cannot carry byte for byte (normalised or unencodable).
UNCARRIABLE_RE = re.compile("[\r\x00\ud800-\udfff]")
BACKTICKS_RE = re.compile("`+")
SURROGATE_RE = re.compile("[\ud800-\udfff]")
FIRST_LINE_RE = re.compile(r"[^\s][^\n\r]*")
#: The bidirectional embedding, override and isolate controls (U+202A-U+202E,
#: U+2066-U+2069): they reorder the characters a reader sees around them, so that text
#: shows other than it reads ("Trojan Source", CVE-2021-42574). Shown as escapes wherever
#: text is shown (the terminal, the HTML pages); kept in the Markdown export, which is
#: lossless. Marks that only order neutral characters (U+200E, U+200F, U+061C) and the
#: joiners (U+200C, U+200D: Persian words, emoji) stay as they are.
BIDI_CONTROLS = "\u202a-\u202e\u2066-\u2069"
#: The control characters (a character class's body): all C0 but tab and the line
#: breaks, DEL, C1. The classes below and the renderers' are made of it.
CONTROLS = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
#: What a terminal would interpret or a reader be misled by: :data:`CONTROLS`, carriage
#: return, lone surrogates and :data:`BIDI_CONTROLS`.
TERMINAL_CONTROL_RE = re.compile(f"[{CONTROLS}\r\ud800-\udfff{BIDI_CONTROLS}]")
#: The ASCII characters :data:`TERMINAL_CONTROL_RE` does not match, and carriage return
#: (which it matches but shows as itself): deleted by ``bytes.translate``, what is left
#: of an ASCII text is the controls it holds.
_PLAIN_ASCII = bytes(range(0x20, 0x7F)) + b"\t\n\r"


def has_controls(text: str) -> bool:
    """True when ``text`` may hold a character :data:`TERMINAL_CONTROL_RE` shows as an
    escape (carriage return aside). An ASCII text is checked at C speed (``isascii``,
    then ``bytes.translate``: about 10 times faster than the regex on tool output)."""
    if text.isascii():
        return bool(text.encode("ascii").translate(None, _PLAIN_ASCII))
    return TERMINAL_CONTROL_RE.search(text) is not None


def longest_backtick_run(text: str) -> int:
    """Length of the longest run of backticks in ``text`` (linear time)."""
    longest = 0
    for match in BACKTICKS_RE.finditer(text):
        longest = max(longest, match.end() - match.start())
    return longest


def is_carriable(text: str) -> bool:
    """True when a fenced code block reproduces ``text`` exactly."""
    return UNCARRIABLE_RE.search(text) is None


#: Added to a block's info string when the text's line endings were all CRLF: each ``\n``
#: of the block's content (but the final one) stands for ``\r\n``.
CRLF_INFO = "line-ending=crlf"


def is_uniform_crlf(text: str) -> bool:
    """True when every line break of ``text`` is CRLF (one at least) and, those made LF,
    a code block carries it exactly."""
    crlf = text.count("\r\n")
    return (
        crlf > 0
        and crlf == text.count("\n") == text.count("\r")
        and is_carriable(text.replace("\r\n", "\n"))
    )


def code_block(text: str, info: str) -> Iterator[str]:
    """A fenced code block whose content is ``text`` plus one newline.

    The fence is one backtick longer than any run inside, so nothing can close it early.
    Text a code block cannot carry (CR, NUL, lone surrogates) is written as a JSON string
    literal in a block whose info string is ``json-string``: ``json.loads`` of its content
    gives the text back, except text whose line endings are all CRLF (and carriable but
    for them): a normal block, its lines LF, with ``line-ending=crlf`` added to the info
    string. Recovery rule: content minus its final newline (then each ``\n`` as ``\r\n``
    when the info string says ``line-ending=crlf``), or json.loads.
    """
    if not is_carriable(text):
        if is_uniform_crlf(text):
            info = f"{info} {CRLF_INFO}"
            text = text.replace("\r\n", "\n")
        else:
            info = "json-string"
            text = json.dumps(text, ensure_ascii=True)
    fence = "`" * max(3, longest_backtick_run(text) + 1)
    yield f"{fence}{info}\n"
    yield text
    yield f"\n{fence}\n"


def json_text(value: JSON) -> str:
    """Pretty JSON for a value, keeping non-ASCII readable unless it holds surrogates."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    if SURROGATE_RE.search(text):
        text = json.dumps(value, indent=2, ensure_ascii=True)
    return text


def inline_code(value: str) -> str:
    """A CommonMark code span showing ``value``; odd values are shown as a JSON string.

    Values with line breaks, control characters, surrogates or a table pipe are shown as
    their JSON string form (with ``|`` as ``\\u007c``), which is unambiguous and safe in a
    table cell. So are values that start with ``"`` (which would read as that form) and
    values of spaces only (which a code span cannot hold: CommonMark strips its padding only
    around other content). A code span whose content starts with ``"`` is always the form.
    """
    if value == "":
        return "-"
    if (
        value.startswith('"')
        or value.strip(" ") == ""
        or TERMINAL_CONTROL_RE.search(value)
        or "\n" in value
        or "\t" in value
        or "|" in value
    ):
        value = json.dumps(value, ensure_ascii=bool(SURROGATE_RE.search(value))).replace(
            "|", "\\u007c"
        )
    ticks = "`" * (longest_backtick_run(value) + 1)
    pad = (
        " "
        if value.startswith("`")
        or value.endswith("`")
        or (value.startswith(" ") and value.endswith(" "))
        else ""
    )
    return f"{ticks}{pad}{value}{pad}{ticks}"


def terminal_safe(text: str) -> str:
    """Text with terminal control characters and surrogates shown as escapes."""
    if text.isascii() and text.isprintable():  # (no control: C speed, most texts)
        return text
    return TERMINAL_CONTROL_RE.sub(
        lambda m: (
            m.group(0).encode("unicode_escape").decode("ascii")
            if not ("\ud800" <= m.group(0) <= "\udfff")
            else f"\\u{ord(m.group(0)):04x}"
        ),
        text,
    )


def first_line(text: str, limit: int = 80) -> str:
    """The first non-blank line, cut to ``limit`` characters with an ellipsis."""
    match = FIRST_LINE_RE.search(text)
    if match is None:
        return ""
    line = match.group(0).strip()
    return line if len(line) <= limit else line[: limit - 1] + "…"


def encode_display(text: str) -> bytes:
    """UTF-8 bytes for display output (HTML): lone surrogates become U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode("utf-8")
