"""The one configured markdown-it-py, and the escaping path from untrusted text to HTML.

- Raw HTML is off: ``<script>`` in a prompt is text.
- Links are allowed by scheme: http, https, mailto and relative ones; nothing else.
- A link that is not to the web (http, https, mailto) points into the agent's workspace: a
  file of the user's repository or disk (``pkg/models/x.go``, ``/C:/Users/…``), which the
  published site does not hold. It becomes code (``pkg/models/x.go``, or ``label
  (pkg/models/x.go)``), never a broken link.
- Images become links (a published page loads nothing from the network); an image of the
  workspace becomes code as such links do.
- Session references (``#<id>``, ``session:<name>``) become links to that session's page,
  through a resolver the caller provides; unknown references stay text.
- Headings in content get no ids, so content cannot clobber the page's own anchors.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from html import escape
from typing import Any
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from .. import refs
from .text import BIDI_CONTROLS, CONTROLS, has_controls
from .tools import visible_controls

#: Resolves a reference (``#ab12cd`` or ``session:name``) to a URL, or None.
RefResolver = Callable[[str], str | None]

SAFE_SCHEMES = frozenset({"http", "https", "mailto"})


_CONTROL_IN_URL = re.compile(r"[\x00-\x20\x7f]")


def link_allowed(url: str) -> bool:
    """True for http(s), mailto and relative URLs (after stripping control characters)."""
    cleaned = _CONTROL_IN_URL.sub("", url)
    if cleaned.startswith("//"):
        return True  # protocol-relative: http(s)
    try:
        scheme = urlsplit(cleaned).scheme.lower()
    except ValueError:
        return False
    if not scheme:
        return ":" not in cleaned.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    return scheme in SAFE_SCHEMES


def links_out(url: str) -> bool:
    """True for a link to the web (http, https, protocol-relative, mailto): one that can
    work on a published page. Any other allowed link is into the agent's workspace."""
    cleaned = _CONTROL_IN_URL.sub("", url)
    return cleaned.startswith("//") or (
        link_allowed(cleaned) and urlsplit(cleaned).scheme.lower() in SAFE_SCHEMES
    )


def _image_as_link(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = self.renderInlineAsText(token.children or [], options, env)
    label = escape(f"image: {alt}" if alt else "image")
    if not link_allowed(src):
        return f'<span class="blocked-image">[{label}]</span>'
    if not links_out(src):
        return f'<span class="blocked-image">[{label}] <code>{escape(src)}</code></span>'
    return f'<a class="image-link" href="{escape(src)}" rel="nofollow noopener noreferrer">[{label}]</a>'


def _link_open(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    if tokens[idx].attrGet("class") != "session-ref":
        tokens[idx].attrSet("rel", "nofollow noopener noreferrer")
    return self.renderToken(tokens, idx, options, env)


def _session_refs(state: StateCore) -> None:
    """Core rule: turn ``#<id>`` / ``session:<name>`` in text into links to their pages."""
    resolver: RefResolver | None = state.env.get("resolve_ref") if state.env else None
    if resolver is None:
        return
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        children: list[Token] = []
        in_link = 0
        for token in block.children:
            if token.type == "link_open":
                in_link += 1
            elif token.type == "link_close":
                in_link -= 1
            found = refs.find(token.content) if token.type == "text" and not in_link else []
            if not found:
                children.append(token)
                continue
            pos = 0
            for start, end, ref in found:
                url = resolver(ref)
                if url is None:
                    continue
                if start > pos:
                    children.append(_text(token.content[pos:start]))
                link = Token("link_open", "a", 1)
                link.attrs = {"class": "session-ref", "href": url}
                children.extend([link, _text(ref), Token("link_close", "a", -1)])
                pos = end
            if pos < len(token.content):
                children.append(_text(token.content[pos:]))
        block.children = children


def _workspace_links(state: StateCore) -> None:
    """Core rule: a link into the agent's workspace (not :func:`links_out`) becomes code,
    its target shown: ``[x.go](pkg/x.go)`` reads ``x.go (`pkg/x.go`)``, a link whose text
    is its target just the code (module docstring)."""
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        if not any(t.type == "link_open" for t in block.children):
            continue
        out: list[Token] = []
        opened: list[tuple[int, str]] = []  # (where its text starts in out, its target)
        for token in block.children:
            if token.type == "link_open":
                href = str(token.attrGet("href") or "")
                if token.attrGet("class") == "session-ref" or links_out(href):
                    opened.append((-1, ""))
                    out.append(token)
                else:
                    opened.append((len(out), href))
                continue
            if token.type == "link_close" and opened:
                start, href = opened.pop()
                if start < 0:
                    out.append(token)
                    continue
                label = "".join(t.content for t in out[start:] if t.type in ("text", "code_inline"))
                if label.strip() in (href, f"<{href}>"):
                    del out[start:]
                    out.append(_code(href))
                else:
                    out.extend([_text(" ("), _code(href), _text(")")])
                continue
            out.append(token)
        block.children = out


def _code(content: str) -> Token:
    token = Token("code_inline", "code", 0)
    token.content = content
    token.markup = "`"
    return token


def _text(content: str) -> Token:
    token = Token("text", "", 0)
    token.content = content
    return token


def make_markdown() -> MarkdownIt:
    """The single configured parser used for every piece of Markdown in a page."""
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.validateLink = link_allowed  # type: ignore[method-assign]
    md.add_render_rule("image", _image_as_link)
    md.add_render_rule("link_open", _link_open)
    md.core.ruler.push("workspace_links", _workspace_links)
    md.core.ruler.push("session_refs", _session_refs)
    md.core.ruler.push("nest_headings_focusable_code", _nest_headings_focusable_code)
    return md


#: A message sits under a part's ``<h3>``: its headings start at ``<h4>`` (``#`` → h4).
HEADING_SHIFT = 3


def _nest_headings_focusable_code(state: StateCore) -> None:
    """One pass over a message's block tokens (a core rule that runs for every message):

    - Heading levels nest under the part that holds the message: the levels it uses, in
      order, become h4, h5, h6 (the deeper ones h6), and no heading is more than one level
      below the one before it (the part's h3 first), so none is skipped: ``## a`` then
      ``# b`` in one message is h4, h4, not h5, h4.
    - Every code block a message holds can scroll: it is focusable (axe
      scrollable-region-focusable), as tool blocks are."""
    headings: list[Token] = []
    for token in state.tokens:
        kind = token.type
        if kind == "heading_open" or kind == "heading_close":
            headings.append(token)
        elif kind == "fence" or kind == "code_block":
            token.attrSet("tabindex", "0")
    if not headings:
        return
    used = sorted({int(t.tag[1:]) for t in headings})
    level = {n: min(6, 1 + HEADING_SHIFT + i) for i, n in enumerate(used)}
    last = HEADING_SHIFT
    for token in headings:
        if token.type == "heading_open":
            last = min(level[int(token.tag[1:])], last + 1)
        token.tag = f"h{last}"  # (a heading_close follows its own open)


MD = make_markdown()


def render_markdown(text: str, resolve_ref: RefResolver | None = None) -> str:
    """Untrusted Markdown to safe HTML."""
    plain = _plain_paragraphs(text, resolve_ref is not None)
    if plain is not None:
        return plain
    env: dict[str, Any] = {"resolve_ref": resolve_ref} if resolve_ref else {}
    out = str(MD.render(_controls_as_text(_scrub(text)), env))
    # The fence renderer puts a fence's attributes on <code>: the scrolling <pre> takes
    # the tabindex (raw HTML is off, so this string is only ever the renderer's own).
    return out.replace('<pre><code tabindex="0"', '<pre tabindex="0"><code')


_CONTROL_RE = re.compile(f"[{CONTROLS}{BIDI_CONTROLS}]")


def _controls_as_text(text: str) -> str:
    """Control characters (but tab and line breaks) and bidirectional controls as visible
    escapes (``\\x1b``, ``\\u202e``), as the CLI shows them: ESC and NUL never reach the
    HTML, nor a character that reorders what the reader sees. A text without any (most) is
    told at C speed (:func:`.text.has_controls`) and returned as it is."""
    if not has_controls(text):
        return text
    return _CONTROL_RE.sub(_control_as_text, text)


def _control_as_text(match: re.Match[str]) -> str:
    return "\\" + match.group(0).encode("unicode_escape").decode()[1:]


def plain_inline(text: str) -> str:
    """One line of untrusted Markdown as the plain text a reader sees: code spans,
    emphasis and links reduced to their text, a leading heading, list or quote marker
    dropped (for previews, where the Markdown is not rendered)."""
    line = re.sub(r"^\s{0,3}(?:#{1,6}\s+|[-+*>]\s+|\d{1,9}[.)]\s+)+", "", text)
    out: list[str] = []
    for block in MD.parseInline(_scrub(line)):
        for token in block.children or []:
            if token.type in ("text", "code_inline"):
                out.append(token.content)
            elif token.type in ("softbreak", "hardbreak"):
                out.append(" ")
    return "".join(out).strip()


#: Characters that can start Markdown syntax anywhere in a line (or need normalising),
#: but for backticks and underscores (code spans and words with underscores are taken
#: by :func:`_plain_inline`).
_MARKUP_CHARS_RE = re.compile(
    r"[\\*\[\]<>&!|~\t\r\ud800-\udfff" + CONTROLS + BIDI_CONTROLS + r"]|  \n|\s(?<![ \n])|```"
)
#: A line start that can open a block: list, quote, heading, rule, setext, fence, code.
_BLOCK_START_RE = re.compile(r"(?:^|\n) *(?:[-+*>#=]|\d{1,9}[.)]|    )")
_BACKTICKS_RE = re.compile("`+")
#: An underscore run not between two ASCII letters or digits: it could open or close
#: emphasis (one between them cannot: CommonMark's flanking rules for ``_``).
_LONE_UNDERSCORE_RE = re.compile(r"(?:\A|[^A-Za-z0-9_])_|_(?:[^A-Za-z0-9_]|\Z)")


def _plain_paragraphs(text: str, link_refs: bool) -> str | None:
    """The HTML markdown-it gives for prose without any Markdown syntax but code spans and
    words with underscores, or None.

    Most of an agent log's prose (prompts, thinking) is plain paragraphs, often with a
    few code spans; building them directly skips the parser. Anything that could be other
    syntax (or a session reference, when references are linked) falls back to
    markdown-it; a property test checks both agree on every text this accepts.
    """
    if _MARKUP_CHARS_RE.search(text) or _BLOCK_START_RE.search(text):
        return None
    if link_refs and ("#" in text or "session:" in text):
        return None
    paragraphs = []
    for block in re.split(r"\n(?: *\n)+", text.strip("\n ")):
        lines = [line.strip(" ") for line in block.split("\n")]
        content = "\n".join(lines).strip(" ")
        if content:
            inline = _plain_inline(content)
            if inline is None:
                return None
            paragraphs.append(f"<p>{inline}</p>\n")
    return "".join(paragraphs)


def _plain_text(text: str) -> str | None:
    """A piece of a paragraph outside code spans as HTML, or None when an underscore in
    it could be emphasis."""
    if "_" in text and _LONE_UNDERSCORE_RE.search(text):
        return None
    return escape(text, quote=True).replace("&#x27;", "'")


def _plain_inline(content: str) -> str | None:
    """A paragraph's text (its lines stripped) with its code spans, as markdown-it renders
    it, or None when it holds a backtick run without its closing run on the same line, or
    an underscore that could be emphasis.

    A code span is a backtick run and the next run of the same length; its content has a
    space stripped from each end when it starts and ends with one (and is not all spaces),
    as markdown-it's ``backtick`` rule does. A span across lines falls back (its line
    break becomes a space there, and the line starts are not stripped)."""
    if "`" not in content:
        return _plain_text(content)
    runs = [(m.start(), m.end()) for m in _BACKTICKS_RE.finditer(content)]
    out: list[str] = []
    pos = i = 0
    while i < len(runs):
        start, end = runs[i]
        size = end - start
        j = i + 1
        while j < len(runs) and runs[j][1] - runs[j][0] != size:
            j += 1
        if j == len(runs):
            return None  # no closing run: the backticks are text (left to markdown-it)
        close_start, close_end = runs[j]
        code = content[end:close_start]
        before = _plain_text(content[pos:start])
        if "\n" in code or before is None:
            return None
        if code.startswith(" ") and code.endswith(" ") and code.strip(" "):
            code = code[1:-1]
        out.append(before)
        out.append(f"<code>{escape(code, quote=True).replace('&#x27;', chr(39))}</code>")
        pos = close_end
        i = j + 1
    rest = _plain_text(content[pos:])
    if rest is None:
        return None
    out.append(rest)
    return "".join(out)


def _scrub(text: str) -> str:
    """Replace lone surrogates (unencodable) with U+FFFD for display."""
    return (
        text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        if _has_surrogate(text)
        else text
    )


_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_surrogate(text: str) -> bool:
    # isascii() reads a word at a time: most texts (shell output, JSON) are ASCII.
    return not text.isascii() and _SURROGATE.search(text) is not None


def escape_text(text: str, resolve_ref: RefResolver | None = None) -> str:
    """Plain untrusted text to HTML (for ``<pre>``), linking session references; control
    characters (but tab and line breaks) are shown as visible escapes."""
    return visible_controls(_escape_text(_scrub(text), resolve_ref))


def _escape_text(text: str, resolve_ref: RefResolver | None) -> str:
    found = refs.find(text) if resolve_ref is not None else []
    if not found:
        return escape(text, quote=False)
    assert resolve_ref is not None
    out: list[str] = []
    pos = 0
    for start, end, ref in found:
        url = resolve_ref(ref)
        if url is None:
            continue
        out.append(escape(text[pos:start], quote=False))
        out.append(f'<a class="session-ref" href="{escape(url)}">{escape(ref)}</a>')
        pos = end
    out.append(escape(text[pos:], quote=False))
    return "".join(out)


#: A JSON token: a string (``str``; a ``key`` when a colon follows: the empty group marks
#: it, so the string is read once), a number, a literal. The string's body is the
#: unrolled loop ``[^"\\]*(?:\\.[^"\\]*)*``: runs of plain characters read by one
#: repeat, not one alternation a character (6 times faster on tool inputs).
_JSON_TOKEN = re.compile(
    r'(?P<str>"[^"\\]*(?:\\.[^"\\]*)*")(?:(?=\s*:)(?P<key>))?|'
    r"(?P<num>-?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|Infinity|NaN))|(?P<lit>true|false|null)"
)
#: Inputs longer than this are shown escaped but not highlighted.
HIGHLIGHT_LIMIT = 200_000


def highlight_json(text: str) -> str:
    """Escaped JSON text with ``<span class="j-…">`` around keys, strings, numbers, literals.

    The text is escaped once, then tokenised: escaping only turns ``&``, ``<`` and ``>``
    into entities made of ``&``, letters and ``;``, none of which starts, ends or continues
    a token (a property test compares this with tokenising first). A control character
    or a bidirectional control (which JSON leaves raw, but for C0) is shown as its JSON
    escape (``\\u202e``): the same value, and nothing reaches the page that a reader
    would not see."""
    text = _scrub(text)
    if has_controls(text):
        text = _CONTROL_RE.sub(_json_escape, text)
    escaped = escape(text, quote=False)
    if len(text) > HIGHLIGHT_LIMIT:
        return escaped
    return _JSON_TOKEN.sub(_json_span, escaped)


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group(0)):04x}"


def _json_span(match: re.Match[str]) -> str:
    return f'<span class="j-{match.lastgroup}">{match.group(0)}</span>'
