"""Render one session's pages: a pure function of the session and the facts it links to.

:func:`render_session_pages` takes the session file, the theme and a :class:`PageFacts`
(the summaries of the sessions the page names, and how to resolve references) and returns
every file of the session's folder as bytes. It touches no global state, so a build can
run it in worker processes (or, later, on another engine) and get the same bytes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..model import Session, Turn
from ..render import view
from ..render.html import HtmlRenderer
from ..render.text import encode_display
from . import staleness, urls
from .fragments import FragmentSink, FragmentSource, MemoryFragments
from .graph import Graph


@dataclass(frozen=True, slots=True)
class PageLimits:
    """Where a long session is cut into pages (each turn stays whole)."""

    turns: int = 300
    """At most this many turns a page."""
    bytes: int = 2_000_000
    """About this many bytes of turn HTML a page at most."""


@dataclass(slots=True)
class PageFacts:
    """What a session's pages show about other sessions (the page's dependencies)."""

    lineage: list[tuple[str, bool]]
    """Parents from the root down: (name, present in the site)."""
    lineage_cycle: bool
    """True when the parent chain loops."""
    children: list[tuple[str, bool, str]]
    """Sub-sessions: (name, present, role)."""
    refs: dict[str, str]
    """Reference (``#id`` or ``session:name``) → session name, for every reference that resolves."""

    @classmethod
    def from_graph(cls, graph: Graph, session_name: str, ref_candidates: set[str]) -> PageFacts:
        """The facts the pages of ``session_name`` show, for the references it makes."""
        lineage, cycle = graph.lineage(session_name)
        children = []
        for name in graph.children(session_name):
            summary = graph.summaries.get(name)
            children.append((name, summary is not None, summary.role if summary else ""))
        refs = {}
        for ref in sorted(ref_candidates):
            target = graph.refs.resolve(ref)
            if target is not None:
                refs[ref] = target
        return cls(
            lineage=[(n, n in graph.summaries) for n in lineage],
            lineage_cycle=cycle,
            children=children,
            refs=refs,
        )

    def key(self) -> str:
        """:func:`.staleness.facts_key` of these facts."""
        return staleness.facts_key(self.lineage, self.lineage_cycle, self.children, self.refs)


def _rel_session_url(name: str) -> str:
    return f"../{urls.slug(name)}/index.html"


@dataclass(slots=True)
class SessionOutput:
    """Every file of one session's folder, relative to the site root."""

    files: dict[str, bytes] = field(default_factory=dict)
    """The files by path relative to the site root (empty when a sink took them)."""
    pages: int = 1
    """Number of pages."""


def render_session_pages(
    renderer: HtmlRenderer,
    session: Session,
    facts: PageFacts,
    cached: FragmentSource | None = None,
    redaction: str | None = None,
    sink: Callable[[str, bytes], None] | None = None,
    store: FragmentSink | None = None,
    limits: PageLimits | None = None,
) -> SessionOutput:
    """All pages of ``session`` (split when long) and the side files of long outputs.

    ``cached`` holds the turn fragments of an earlier build by cache key; every fragment of
    this render goes to ``store`` (a :class:`~.fragments.FragmentWriter` keeps them on disk,
    and is the next build's cache) and is read back from it when its page is written, so a
    long session is never held as HTML all at once. ``sink`` takes each file as soon as it
    is made; without it they are returned in :attr:`SessionOutput.files`. ``limits``: how
    many turns and bytes of turns a page holds at most.
    """
    limits = limits or PageLimits()
    base = urls.session_dir(session.session_name)
    ref_targets = facts.refs

    def resolve_ref(ref: str) -> str | None:
        target = ref_targets.get(ref)
        return _rel_session_url(target) if target is not None else None

    marks = view.boundaries(session)
    refs_key = staleness.refs_key(facts.refs)
    last_index = view.last_index(session)
    seen: Counter[int] = Counter()
    store = store if store is not None else MemoryFragments()
    rendered: list[tuple[Turn, str, int]] = []  # (turn, fragment key, HTML length)
    for turn in session.turns:
        seen[turn.index] += 1
        anchor = (
            f"turn-{turn.index}"
            if seen[turn.index] == 1
            else f"turn-{turn.index}-dup{seen[turn.index]}"
        )
        key = staleness.turn_key(turn, refs_key, marks.get(turn.index, []), last_index, anchor)
        fragment = cached.get(key) if cached is not None else None
        if fragment is None:
            fragment = renderer.render_turn(
                session, turn, marks.get(turn.index, []), resolve_ref, anchor=anchor
            )
        store.add(key, fragment)
        rendered.append((turn, key, len(fragment.html)))
        del fragment

    # Split into pages by turn count and size, keeping each turn whole.
    groups: list[list[tuple[Turn, str, int]]] = [[]]
    size = 0
    for item in rendered:
        item_size = item[2]
        if groups[-1] and (len(groups[-1]) >= limits.turns or size + item_size > limits.bytes):
            groups.append([])
            size = 0
        groups[-1].append(item)
        size += item_size
    pages: list[dict[str, Any]] = []
    for number, group in enumerate(groups, start=1):
        first = group[0][0].index if group else 0
        last = group[-1][0].index if group else 0
        url = "index.html" if number == 1 else f"page-{number}.html"
        pages.append({"number": number, "first": first, "last": last, "url": url})

    out = SessionOutput(pages=len(groups))
    # With a sink, each page goes out as soon as it is rendered instead of all pages of a
    # long session being held at once (the build's workers write through one).
    emit: Callable[[str, bytes], None] = sink if sink is not None else out.files.__setitem__
    decision_counts = sorted(Counter(p.decision for p in session.permissions).items())
    tool_calls = session.tool_calls  # a pass over every turn: once, not once a page
    lineage = [
        {"name": n, "url": _rel_session_url(n) if present else None} for n, present in facts.lineage
    ]
    children = [
        {"name": n, "url": _rel_session_url(n) if present else None, "role": role}
        for n, present, role in facts.children
    ]
    for page, group in zip(pages, groups, strict=True):
        fragments = [store.read(key) for _, key, _ in group]
        html = renderer.render_session(
            session=session,
            page=page["number"],
            pages=pages,
            page_map={"current": page["number"], "pages": pages} if len(pages) > 1 else None,
            turns_html=[_markup(fragment.html) for fragment in fragments],
            lineage=lineage,
            lineage_cycle=facts.lineage_cycle,
            children=children,
            decision_counts=decision_counts,
            tool_calls=tool_calls,
            root="../../",
            resolve_ref=resolve_ref,
            redaction=redaction,
        )
        emit(f"{base}/{page['url']}", encode_display(html))
        del html
        for fragment in fragments:
            for name, text in fragment.files.items():
                emit(f"{base}/{name}", encode_display(text))
        del fragments
    return out


def _markup(html: str) -> Any:
    from markupsafe import Markup

    return Markup(html)
