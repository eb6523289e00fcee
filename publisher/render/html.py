"""Model → HTML through the theme's jinja2 templates (autoescaped) and one markdown-it.

Each template receives one typed record of :mod:`.contexts` (``page``, ``t``, ``row``,
``tree``) holding model objects, and the shared labels of :mod:`.view`; every piece of
session text reaches HTML escaped, by autoescaping or as ``Markup`` made by :mod:`.markup`
(the ``md`` and ``pre`` filters, which link references through the ``resolve_ref`` the
renderer puts beside the record). A turn is rendered on its own (``turn.html``, which
includes ``parts/<kind>.html`` for each part) so a build can reuse the fragment of a turn
whose content did not change.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from types import FunctionType
from typing import Any

from jinja2 import (
    ChoiceLoader,
    Environment,
    FileSystemBytecodeCache,
    FileSystemLoader,
    StrictUndefined,
    pass_context,
)
from jinja2.compiler import CodeGenerator, Frame
from jinja2.nodes import Expr
from jinja2.runtime import Context
from markupsafe import Markup, escape

from .. import __version__, images
from ..model import Image, Session, ToolPart, Turn
from ..outcome import Outcome
from ..theme import Theme
from ..usage import Spend
from . import markup, tools, view
from .contexts import (
    DecisionNote,
    DelegationTree,
    ErrorNote,
    ImageView,
    IndexPage,
    IndexRow,
    OutputView,
    PartView,
    SessionPage,
    SinglePage,
    TurnView,
)
from .places import error_code
from .text import TERMINAL_CONTROL_RE, json_text

#: A part's or turn's extra fields whose JSON is longer than this (characters) are published
#: in the turn's side file (``fields-3.json``, linked), not inline: the raw records an
#: importer keeps were four fifths of the HTML of a real Claude Code session's page.
EXTRA_INLINE_CHARS = 600
#: Tool outputs longer than this (characters) or with more lines start collapsed.
COLLAPSE_CHARS = 3000
COLLAPSE_LINES = 40
#: Outputs longer than this go to a separate text file, linked, with a preview inline.
EXTERNAL_CHARS = 400_000
PREVIEW_CHARS = 20_000


@dataclass(slots=True)
class RenderedTurn:
    """A turn's HTML fragment and the side files it needs (long outputs)."""

    html: str
    files: dict[str, str] = field(default_factory=dict)
    """File name (relative to the session folder) → text content."""


def human_size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    value = float(count)
    for unit in ("KB", "MB", "GB"):
        value /= 1024
        if value < 1024 or unit == "GB":
            return f"{value:.1f} {unit}"
    return f"{count} B"  # pragma: no cover


#: The common UTC forms, formatted by slicing once ``parse_time`` accepted them.
_UTC_RE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|\+00:00)")


def short_time(value: str) -> str:
    """``2026-08-17T12:00:05+00:00`` as ``2026-08-17 12:00:05`` (UTC); other text as is."""
    if _UTC_RE.fullmatch(value) and view.parse_time(value) is not None:
        return f"{value[:10]} {value[11:19]}"
    parsed = view.parse_time(value)
    if parsed is None or parsed.utcoffset() is None or parsed.utcoffset().total_seconds() != 0:  # type: ignore[union-attr]
        return value or "-"
    return parsed.strftime("%Y-%m-%d %H:%M:%S")


def _number(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return str(value)


try:  # MarkupSafe 3: the C escaping of a str, giving a str (what escape() wraps in Markup)
    from markupsafe._speedups import _escape_inner as _escape_str
except ImportError:  # pragma: no cover - MarkupSafe < 3, or without its C speedups

    def _escape_str(s: str, /) -> str:
        return str(escape(s))


def emit(value: Any) -> str:
    """What a template prints for ``{{ value }}``: ``escape(visible_text(value))``, as
    jinja2 would compute it, in one call and without wrapping the result in ``Markup``.

    A template's output is only ever joined (``concat``; a macro or a ``{% set %}`` block
    wraps its joined output in ``Markup`` itself), so a plain string of the same characters
    is the same page. jinja2's own expression makes three Python calls per printed value
    and copies every filter's output (a long tool output included) into a new ``Markup``."""
    if type(value) is str:
        if not value.isprintable() and TERMINAL_CONTROL_RE.search(value):
            value = TERMINAL_CONTROL_RE.sub(_escape_control, value)
        return _escape_str(value)
    if type(value) is Markup:
        return value
    if hasattr(value, "__html__"):
        return Markup(value)
    return _escape_str(str(value))  # visible_text leaves a value that is not a str as it is


class _CodeGenerator(CodeGenerator):
    """jinja2's compiler, printing ``{{ value }}`` with :func:`emit` (one call) where it
    would write ``escape(environment.finalize(value))``; everything else as jinja2 does."""

    @staticmethod
    def _one_call(frame: Frame, finalize: CodeGenerator._FinalizeInfo) -> bool:
        return (
            not frame.eval_ctx.volatile
            and frame.eval_ctx.autoescape
            and finalize.src == "environment.finalize("
        )

    def _output_child_pre(
        self, node: Expr, frame: Frame, finalize: CodeGenerator._FinalizeInfo
    ) -> None:
        if self._one_call(frame, finalize):
            self.write("environment.emit(")
        else:  # {% autoescape false %}, or decided at run time: as jinja2 does
            super()._output_child_pre(node, frame, finalize)

    def _output_child_post(
        self, node: Expr, frame: Frame, finalize: CodeGenerator._FinalizeInfo
    ) -> None:
        if self._one_call(frame, finalize):
            self.write(")")
        else:
            super()._output_child_post(node, frame, finalize)


class _Context(Context):
    """jinja2's context, calling a plain function without jinja2's ``pass_*`` mark (the
    renderer's globals: ``short_time``, ``view.…``) directly, as ``Context.call`` ends up
    doing after asking the function and its ``__call__`` for the mark."""

    def call(__self, __obj: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if type(__obj) is FunctionType and not hasattr(__obj, "jinja_pass_arg"):
            if kwargs:
                kwargs.pop("_block_vars", None)
                kwargs.pop("_loop_vars", None)
            try:
                return __obj(*args, **kwargs)
            except StopIteration:
                return __self.environment.undefined(
                    "value was undefined because a callable raised a StopIteration exception"
                )
        return super().call(__obj, *args, **kwargs)


class _Environment(Environment):
    """jinja2's environment with each template's globals a plain dict, values printed by
    :func:`emit` (``code_generator_class``, ``emit``) and plain functions called directly
    (``context_class``).

    jinja2 gives every template a ``ChainMap`` over the environment's globals, and reads it
    at each render (``dict(globals)`` for the new context), at each ``{% import %}`` (a set
    difference of its keys) and at each lookup of a global: Python-level ``ChainMap``
    methods, about 4 % of a build. The renderer sets its globals once, before it loads any
    template, so a copy made when a template is loaded holds the same names."""

    code_generator_class = _CodeGenerator
    context_class = _Context

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # An instance attribute: the compiled templates' ``environment.emit(...)`` finds a
        # plain function, no bound method made at every printed value.
        self.emit = emit

    def make_globals(self, d: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
        return {**self.globals, **(d or {})}


class HtmlRenderer:
    """Renders session pages, turn fragments and the index with a theme."""

    def __init__(self, theme: Theme) -> None:
        self.theme = theme
        self.env = _Environment(
            loader=ChoiceLoader([FileSystemLoader(d) for d in theme.template_dirs]),
            autoescape=True,
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
            # A renderer lives for one theme state (see site.build.renderer_for): no mtime
            # checks of every template at every render.
            auto_reload=False,
            # The theme's templates are a few dozen: kept in a dict, not jinja2's LRU cache
            # (a lock and a deque reordered at every include and import).
            cache_size=-1,
            # Compiled templates are kept in jinja2's private per-user temp folder (0700,
            # owner checked, keyed by each template's source): a CLI run skips recompiling.
            # The file names carry how templates are compiled (with ``finalize``, printing
            # through :func:`emit`): code compiled otherwise is never read.
            bytecode_cache=FileSystemBytecodeCache(pattern="__polyglav_emit1_%s.cache"),
            # Session text printed as is ({{ p.tool }}, a role, a timestamp) shows control
            # characters as visible escapes, in text and attribute values alike: raw ESC or
            # NUL are forbidden in HTML.
            finalize=visible_text,
        )
        self.env.globals.update(
            view=view,
            version=__version__,
            human_size=human_size,
            number=_number,
            short_time=short_time,
            error_code=error_code,
            tools=tools,
        )
        self.env.filters.update(
            md=_md_filter,
            pre=_pre_filter,
            jsonhl=_json_filter,
            to_json=_to_json,
            diff=_diff_filter,
            ansi=_ansi_filter,
            output=_output_filter,
        )
        # A theme's tools/<name>.html renders that tool's friendly view (tools.py).
        self.tool_templates = frozenset(
            name[len("tools/") : -len(".html")]
            for name in self.env.list_templates(extensions=["html"])
            if name.startswith("tools/")
        )

    def template(self, name: str) -> Any:
        return self.env.get_template(name)

    def render_turn(
        self,
        session: Session,
        turn: Turn,
        boundaries: list[view.Boundary],
        resolve_ref: markup.RefResolver | None,
        externalize: bool = True,
        anchor: str | None = None,
        errors: list[ErrorNote] | None = None,
        decisions: dict[int, list[DecisionNote]] | None = None,
        sections: str = "",
        sub_urls: dict[str, str] | None = None,
        targets: dict[int, str] | None = None,
        sub_outcomes: dict[str, Outcome] | None = None,
        previous: Turn | None = None,
        ids: str = "",
        spend: Spend | None = None,
        times: view.TurnTimes | None = None,
    ) -> RenderedTurn:
        """``turn.html`` for one turn, and the side files of its long outputs.

        ``errors`` and ``decisions`` (by part number) are the session's errors and
        permission decisions placed in this turn (:func:`.places.turn_notes`); ``sections``
        the page that holds the Errors and Permissions sections (``""``: this one);
        ``sub_urls`` the pages of the sub-sessions its delegate calls spawned, by name, and
        ``targets`` which sub-session each call spawned, by part number
        (:func:`publisher.audit.match_delegations`), and ``sub_outcomes`` what each of those
        did (by name);
        ``ids`` what the ids of the session's sections start with (a single-file export's
        sub-session); ``spend`` what its requests to models spent (:mod:`publisher.usage`),
        None when the caller does not say; ``times`` where its time went
        (:func:`.places.turn_times`; made here from its decisions when not given)."""
        files: dict[str, str] = {}
        anchor = anchor or f"turn-{turn.index}"
        side = _SideFields(f"fields-{anchor.removeprefix('turn-')}.json", externalize)
        parts = []
        for number, part in enumerate(turn.parts, start=1):
            output = None
            spawned = ""
            if isinstance(part, ToolPart):
                if part.output is not None:
                    output = output_view(turn, number, part.output, externalize, files)
                spawned = (
                    targets.get(number, "") if targets is not None else tools.delegate_target(part)
                )
            parts.append(
                PartView(
                    part=part,
                    number=number,
                    position=f"{turn.index}.{number}",
                    anchor=f"{anchor}.{number}",
                    label=view.part_label(part),
                    template=view.part_template(part),
                    output=output,
                    decisions=(decisions or {}).get(number, []),
                    friendly=tools.friendly(part) if isinstance(part, ToolPart) else None,
                    tool_template=(
                        f"tools/{part.name}.html"
                        if isinstance(part, ToolPart) and part.name in self.tool_templates
                        else None
                    ),
                    sub_session=spawned,
                    extra_file=side.add(str(number), part.extra),
                    sub_url=sub_urls.get(spawned) if sub_urls and spawned else None,
                    sub_outcome=(sub_outcomes or {}).get(spawned) if spawned else None,
                    images=[_image_view(image, externalize) for image in images.of_part(part)],
                )
            )
        turn_extra_file = side.add("turn", turn.extra)
        side.write(files)
        context = TurnView(
            turn=turn,
            extra_file=turn_extra_file,
            anchor=anchor,
            boundaries=boundaries,
            parts=parts,
            last_index=view.last_index(session),
            errors=errors or [],
            sections=sections,
            ids=ids,
            changed=view.meta_changes(previous, turn),
            times=times
            or view.TurnTimes.of(
                turn,
                [
                    d.permission.timestamp
                    for found in (decisions or {}).values()
                    for d in found
                    if d.permission.action == "ask"
                ],
                previous.ended_at if previous is not None else "",
            ),
            spend=spend if spend is not None and (spend.recorded or spend.uncounted) else None,
        )
        html = self.template("turn.html").render(t=context, resolve_ref=resolve_ref)
        return RenderedTurn(html, files)

    def render_session(self, page: SessionPage) -> str:
        """``session.html`` for one page of a session."""
        return str(self.template("session.html").render(page=page, resolve_ref=page.resolve_ref))

    def render_single(self, page: SinglePage) -> Iterator[str]:
        """``single.html`` in pieces, as the template reaches them (``turns_html`` is read
        lazily, so a long session is never held as one string)."""
        return iter(self.template("single.html").generate(page=page, resolve_ref=page.resolve_ref))

    def render_index_row(self, row: IndexRow) -> str:
        """``index_row.html`` for one session, without surrounding newlines."""
        return str(self.template("index_row.html").render(row=row)).strip("\n")

    def render_index_tree(self, tree: DelegationTree) -> str:
        """``index_tree.html`` of the delegation tree."""
        template = self.template("index_tree.html")
        return str(template.render(tree=tree.families, standalone=tree.standalone))

    def render_index(self, page: IndexPage) -> str:
        """``index.html``."""
        return str(self.template("index.html").render(page=page))


def visible_text(value: Any) -> Any:
    """``value`` as a template prints it: plain text with its control characters (but tab
    and line breaks) and lone surrogates as visible escapes (``\\x1b``, ``\\ud800``);
    markup (a filter's output) and non-text values as they are."""
    # isprintable() is false for every character the pattern matches (and for line breaks):
    # the common short printable value costs no regex search.
    if type(value) is str and not value.isprintable() and TERMINAL_CONTROL_RE.search(value):
        return TERMINAL_CONTROL_RE.sub(_escape_control, value)
    return value


def _escape_control(match: re.Match[str]) -> str:
    char = match.group(0)
    if char == "\r":
        return char
    if "\ud800" <= char <= "\udfff":
        return f"\\u{ord(char):04x}"
    return char.encode("unicode_escape").decode("ascii")


@dataclass(slots=True)
class _SideFields:
    """The extra fields of a turn's parts (and of the turn) too long to show inline
    (:data:`EXTRA_INLINE_CHARS`), gathered for the turn's side file ``name``."""

    name: str
    """The side file's name in the session folder (``fields-3.json``)."""
    externalize: bool
    """False for a page that stands alone (the single-file export): all stay inline."""
    fields: dict[str, Any] = field(default_factory=dict)
    """Part number (or ``turn``) → its extra fields, as written."""

    def add(self, key: str, extra: dict[str, Any]) -> str:
        """The side file's name when ``extra`` goes to it, else "" (shown inline)."""
        if not (self.externalize and extra) or len(json_text(extra)) <= EXTRA_INLINE_CHARS:
            return ""
        self.fields[key] = extra
        return self.name

    def write(self, files: dict[str, str]) -> None:
        if self.fields:
            files[self.name] = json_text(self.fields) + "\n"


def output_view(
    turn: Turn, number: int, output: str, externalize: bool, files: dict[str, str]
) -> OutputView:
    """How tool part ``number`` shows ``output``; a long one goes to ``files`` (when
    ``externalize``), the page keeping its start."""
    breaks = output.count("\n")
    lines = breaks + (0 if output.endswith("\n") else 1) if output else 0
    # An ASCII text (told in constant time) is as many bytes as characters: no encoding.
    size = len(output) if output.isascii() else len(output.encode("utf-8", "surrogatepass"))
    collapsed = len(output) > COLLAPSE_CHARS or lines > COLLAPSE_LINES
    mode = (
        "diff"
        if tools.looks_like_diff(output)
        else "ansi"
        if tools.has_ansi(output)
        else "numbered"
        if tools.looks_numbered(output)
        else "text"
    )
    if externalize and len(output) > EXTERNAL_CHARS:
        name = f"output-{turn.index}.{number}.txt"
        files[name] = output
        return OutputView(
            output[:PREVIEW_CHARS], len(output), lines, size, collapsed, name, mode=mode
        )
    if lines > LONG_LINES:
        head, middle, tail, hidden = _head_tail(output, breaks)
        if hidden:
            return OutputView(
                output,
                len(output),
                lines,
                size,
                collapsed=False,
                mode=mode,
                head=head,
                middle=middle,
                tail=tail,
                hidden=hidden,
                indexed_from=_last_lines_start(tail, INDEXED_LINES),
            )
    return OutputView(output, len(output), lines, size, collapsed, mode=mode)


def indexed_output(output: str) -> str:
    """What of a tool output the search index holds: :attr:`.contexts.OutputView.indexed`
    of :func:`output_view` (published pages: long outputs externalized), made without the
    rest of the view (no scan for diffs or colours)."""
    if len(output) > EXTERNAL_CHARS:
        return ""
    # More than LONG_LINES lines: the view hides some (LONG_LINES > HEAD_LINES + TAIL_LINES)
    # and the index holds the tail's last lines, the output's. Told by finding the line
    # break that makes it so, not by counting every one (tool output is most of the bytes).
    cut = -1
    for _ in range(LONG_LINES + 1 if output.endswith("\n") else LONG_LINES):
        cut = output.find("\n", cut + 1)
        if cut < 0:
            break
    else:
        return output[_last_lines_start(output, INDEXED_LINES) :]
    if len(output) > COLLAPSE_CHARS:  # (LONG_LINES lines or fewer: fewer than COLLAPSE_LINES)
        return ""
    return output


#: An output of more lines than this shows its first HEAD_LINES and last TAIL_LINES lines
#: (where a failure summary usually is); the ones between are one click away.
LONG_LINES = 24
HEAD_LINES = 6
TAIL_LINES = 12
#: Of a long output, the search index holds only its last INDEXED_LINES lines (where a
#: failure summary or an error usually is): indexing time follows the text indexed,
#: and tool output is most of a coding agent's bytes (README, "What is indexed").
INDEXED_LINES = 6


def _image_view(image: Image, externalize: bool) -> ImageView:
    """How a page shows ``image``: a file beside the page (``externalize``: the site, which
    writes it, :func:`publisher.images.published`) or a ``data:`` URI (the single-file
    export, up to :data:`publisher.images.MAX_INLINE_BYTES`); a placeholder when it is not
    a raster image its bytes confirm, or is too big."""
    facts, data = images.examine(image)
    if data is None or facts.file_name is None:
        return ImageView(facts, None, facts.problem)
    if externalize:
        return ImageView(facts, facts.file_name)
    if len(data) > images.MAX_INLINE_BYTES:
        cap = images.MAX_INLINE_BYTES // 1024
        return ImageView(facts, None, f"larger than the {cap:,} KB a single-file export holds")
    return ImageView(facts, images.data_uri(facts.checked_type, data))


def _last_lines_start(text: str, count: int) -> int:
    """Where the last ``count`` lines of ``text`` start (a final line break ends the last
    line, it does not start one more); 0 when it has no more lines than that."""
    cut = len(text) - 1 if text.endswith("\n") else len(text)
    for _ in range(count):
        cut = text.rfind("\n", 0, cut)
        if cut < 0:
            return 0
    return cut + 1


def _head_tail(text: str, breaks: int) -> tuple[str, str, str, int]:
    """(head, middle, tail, lines in middle) of ``text``, cut after line breaks; ``breaks``
    is how many line breaks it holds (the middle's are those but the head's and the
    tail's, not counted again)."""
    cut = -1
    for _ in range(HEAD_LINES):
        cut = text.find("\n", cut + 1)
        if cut < 0:
            return text, "", "", 0
    head_end = cut + 1
    end = len(text) - 1 if text.endswith("\n") else len(text)
    cut = end
    for _ in range(TAIL_LINES):
        cut = text.rfind("\n", 0, cut)
        if cut < head_end:
            return text, "", "", 0
    tail_start = cut + 1
    middle = text[head_end:tail_start]
    # The head holds HEAD_LINES line breaks, the tail one for each of its lines but the
    # last, and one more when the text ends with one.
    hidden = breaks - HEAD_LINES - (TAIL_LINES - 1) - (1 if text.endswith("\n") else 0)
    return text[:head_end], middle, text[tail_start:], hidden


@pass_context
def _md_filter(ctx: Context, text: str) -> Markup:
    return Markup(markup.render_markdown(text, ctx.get("resolve_ref")))


@pass_context
def _pre_filter(ctx: Context, text: str) -> Markup:
    return Markup(markup.escape_text(text, ctx.get("resolve_ref")))


def _diff_filter(text: str) -> Markup:
    return Markup(tools.diff_html(text))


def _ansi_filter(text: str) -> Markup:
    return Markup(tools.ansi_html(text))


@pass_context
def _output_filter(ctx: Context, text: str, mode: str = "text") -> Markup:
    """A tool output (or a piece of one) read as ``mode`` (:class:`OutputView`): a diff
    shown as one, ANSI colours as classes, else plain text."""
    if mode == "diff":
        return Markup(tools.diff_html(text))
    if mode == "ansi":
        return Markup(tools.ansi_html(text))
    if mode == "numbered":
        return Markup(tools.numbered_html(text))
    return Markup(markup.escape_text(text, ctx.get("resolve_ref")))


def _json_filter(value: Any) -> Markup:
    return Markup(markup.highlight_json(json_text(value)))


def _to_json(value: Any) -> Markup:
    """JSON for a ``<script type="application/json">`` block: ``<``, ``>``, ``&`` escaped."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=True)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))
