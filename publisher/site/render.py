"""Render one session's pages: a pure function of the session and the facts it links to.

:func:`render_session_pages` takes the session file, the theme and a :class:`PageFacts`
(the summaries of the sessions the page names, and how to resolve references) and hands
every file of the session's folder, as bytes, to a sink. It touches no global state, so a
build can run it in worker processes (or, later, on another engine) and get the same bytes.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from markupsafe import Markup

from .. import images
from ..audit import Audit, delegation_targets
from ..model import Session
from ..outcome import Outcome
from ..render import places, view
from ..render.contexts import DecisionCount, PageLink, SessionLink, SessionPage
from ..render.html import HtmlRenderer
from ..render.markup import RefResolver
from ..render.places import own_outcome, sub_agents_of
from ..render.text import encode_display
from ..usage import Prices, turn_spend
from . import comparison, staleness, urls
from .fragments import FragmentSink, FragmentSource
from .graph import Graph
from .urls import PageLimits

__all__ = ["PageFacts", "PageLimits", "decision_counts_of", "render_session_pages"]


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
    series: tuple[str, str] = ("", "")
    """The previous and next run of its role's series (:meth:`.graph.Graph.series`)."""
    spawned_at: str = ""
    """The call that spawned it in its parent (:meth:`.graph.Graph.spawned_at`), or ""."""
    delegated: tuple[str, ...] = ()
    """The sub-session each of its delegate calls spawned, in file order, "" for none
    (:meth:`.graph.Graph.delegated`)."""
    outcomes: tuple[tuple[str, Outcome], ...] = ()
    """What each sub-session in the archive did, with those below it, by name
    (:meth:`.graph.Graph.outcome`)."""
    below: Outcome = field(default_factory=Outcome)
    """What every session below it did (:meth:`.graph.Graph.below`)."""

    @classmethod
    def from_graph(cls, graph: Graph, session_name: str, ref_candidates: set[str]) -> PageFacts:
        """The facts the pages of ``session_name`` show, for the references it makes."""
        lineage, cycle = graph.lineage(session_name)
        children = []
        for name in graph.children(session_name):
            node = graph.node(name)
            children.append((name, node is not None, node.role if node is not None else ""))
        refs = {}
        for ref in sorted(ref_candidates):
            target = graph.resolve(ref)
            if target is not None:
                refs[ref] = target
        return cls(
            lineage=[(n, graph.present(n)) for n in lineage],
            lineage_cycle=cycle,
            children=children,
            refs=refs,
            series=graph.series(session_name),
            spawned_at=graph.spawned_at(session_name),
            delegated=graph.delegated(session_name),
            outcomes=tuple((n, graph.outcome(n)) for n, present, _ in children if present),
            below=graph.below(session_name) if children else Outcome(),
        )

    def key(self) -> str:
        """:func:`.staleness.facts_key` of these facts."""
        return staleness.facts_key(
            self.lineage,
            self.lineage_cycle,
            self.children,
            self.refs,
            self.series,
            self.spawned_at,
            self.delegated,
            self.outcomes,
            self.below,
        )


@dataclass(frozen=True, slots=True)
class PreviousRun:
    """The previous run of a session's series, for its comparison page
    (:mod:`.comparison`)."""

    name: str
    """Its session name."""
    session: Session | None
    """The run, prepared as for its own pages; None when it could not be read."""
    redaction: str | None = None
    """What redaction replaced in it (None when redaction is off)."""
    unreadable: str | None = None
    """Why it could not be read."""


def _rel_session_url(name: str) -> str:
    return f"../{urls.slug(name)}/index.html"


@dataclass(slots=True, frozen=True)
class _Fragment:
    """A rendered turn of the session being paged."""

    turn_index: int
    """The turn's index."""
    key: str
    """Its fragment's key in the store."""


def render_session_pages(
    renderer: HtmlRenderer,
    session: Session,
    facts: PageFacts,
    cached: FragmentSource | None = None,
    redaction: str | None = None,
    *,
    sink: Callable[[str, bytes], None],
    store: FragmentSink,
    limits: PageLimits | None = None,
    previous_run: PreviousRun | None = None,
    prices: Prices | None = None,
    audit: Audit | None = None,
) -> None:
    """All pages of ``session`` (split when long) and the side files of long outputs.

    ``cached`` holds the turn fragments of an earlier build by cache key; every fragment of
    this render goes to ``store`` (a :class:`~.fragments.FragmentWriter` keeps them on disk,
    and is the next build's cache) and is read back from it when its page is written, so a
    long session is never held as HTML all at once. ``sink`` takes each file (its path
    relative to the site root, its bytes) as soon as it is made. ``limits``: how many turns
    and bytes of turns a page holds at most. ``previous_run``: the previous run of its
    series, when it has one: a comparison page is made against it. ``prices``: the table
    its usage is priced with (the shipped one when None). ``audit``: the session's
    :class:`~publisher.audit.Audit` when the caller made it (the build's render gives the
    search's record the same one).
    """
    limits = limits or PageLimits()
    base = urls.session_dir(session.session_name)
    ref_targets = facts.refs

    def link_ref(ref: str) -> str | None:
        target = ref_targets.get(ref)
        return _rel_session_url(target) if target is not None else None

    # No reference of the session resolves (most sessions): nothing is linked, and without
    # a resolver no text is scanned for references (a scan of every output, which would
    # find nothing to link: a reference that does not resolve is shown as text either way).
    resolve_ref: RefResolver | None = link_ref if ref_targets else None

    marks = view.boundaries(session)
    audit = audit or Audit.of(session)
    prices = prices or Prices()
    spends = [turn_spend(session, turn, prices) for turn in session.turns]
    times = places.turn_times(session, audit)
    anchors: list[str] = []
    sub_urls = {name: _rel_session_url(name) for name, present, _ in facts.children if present}
    calls_by_turn = delegation_targets(session, facts.delegated)
    outcomes = dict(facts.outcomes)
    refs_key = staleness.refs_key(facts.refs)
    last_index = view.last_index(session)
    seen: Counter[int] = Counter()
    rendered: list[_Fragment] = []
    previous = None
    for position, turn in enumerate(session.turns):
        seen[turn.index] += 1
        anchor = (
            f"turn-{turn.index}"
            if seen[turn.index] == 1
            else f"turn-{turn.index}-dup{seen[turn.index]}"
        )
        anchors.append(anchor)
        errors, decisions = places.turn_notes(session, audit, len(anchors) - 1)
        # The sub-sessions its delegate calls link to (present in the site or not).
        targets = calls_by_turn.get(len(anchors) - 1, {})
        spawned = {target: sub_urls.get(target) for target in targets.values()}
        key = staleness.turn_key(
            turn,
            refs_key,
            marks.get(turn.index, []),
            last_index,
            anchor,
            (
                errors,
                decisions,
                [
                    (number, target, outcomes.get(target))
                    for number, target in sorted(targets.items())
                ],
                sorted(spawned.items()),
                sorted(view.meta_changes(previous, turn)),
                times[position],
                spends[position].key,
            ),
        )
        fragment = cached.get(key) if cached is not None else None
        if fragment is None:
            fragment = renderer.render_turn(
                session,
                turn,
                marks.get(turn.index, []),
                resolve_ref,
                anchor=anchor,
                errors=errors,
                decisions=decisions,
                sections="index.html",
                sub_urls={k: v for k, v in spawned.items() if v is not None},
                targets=targets,
                sub_outcomes=outcomes,
                previous=previous,
                spend=spends[position],
                times=times[position],
            )
        previous = turn
        store.add(key, fragment)
        rendered.append(_Fragment(turn.index, key))
        del fragment

    # Split into pages by turn count and size, keeping each turn whole (urls.page_starts:
    # the same pages every other page links to).
    starts = urls.page_starts(session, limits)
    starts_set = set(starts)
    groups: list[list[_Fragment]] = []
    for position, item in enumerate(rendered):
        if not groups or (starts and position in starts_set):
            groups.append([])
        groups[-1].append(item)
    if not groups:
        groups.append([])
    pages = [
        PageLink(
            number=number,
            first=group[0].turn_index if group else 0,
            last=group[-1].turn_index if group else 0,
            url="index.html" if number == 1 else f"page-{number}.html",
        )
        for number, group in enumerate(groups, start=1)
    ]

    # Where each turn is: its anchor, on its page (the sections are on the first page).
    hrefs = [
        f"#{anchor}"
        if urls.page_number(starts, position) == 1
        else urls.turn_href(starts, position, anchor)
        for position, anchor in enumerate(anchors)
    ]
    error_places, decision_places = places.section_places(session, audit, hrefs)
    summary = places.overview(session, audit, hrefs, spends, prices.label, times)
    decision_counts = decision_counts_of(session)
    tool_calls = session.tool_calls  # a pass over every turn: once, not once a page
    lineage = [
        SessionLink(n, _rel_session_url(n) if present else None) for n, present in facts.lineage
    ]
    parent = facts.lineage[-1][0] if facts.lineage else ""
    spawned_at = f"../{urls.slug(parent)}/{facts.spawned_at}" if facts.spawned_at else None
    children = [
        SessionLink(n, _rel_session_url(n) if present else None, role)
        for n, present, role in facts.children
    ]
    sub_agents = sub_agents_of(
        session, facts.delegated, hrefs, [(link.name, link.url, link.role) for link in children]
    )
    sub_agents = [
        dataclasses.replace(agent, outcome=outcomes.get(agent.name)) for agent in sub_agents
    ]
    before, after = facts.series
    series_previous = SessionLink(before, _rel_session_url(before)) if before else None
    series_next = SessionLink(after, _rel_session_url(after)) if after else None
    compare_url = comparison.PAGE if previous_run is not None else None
    # Each page goes to the sink as soon as it is rendered: the pages of a long session are
    # never held at once.
    for page, group in zip(pages, groups, strict=True):
        fragments = [store.read(item.key) for item in group]
        html = renderer.render_session(
            SessionPage(
                session=session,
                number=page.number,
                pages=pages,
                turns_html=[Markup(fragment.html) for fragment in fragments],
                lineage=lineage,
                lineage_cycle=facts.lineage_cycle,
                children=children,
                sub_agents=sub_agents,
                below=facts.below if facts.below.sessions else None,
                with_below=own_outcome(session.session_name, summary).plus(facts.below)
                if facts.below.sessions
                else None,
                decision_counts=decision_counts,
                tool_calls=tool_calls,
                root="../../",
                resolve_ref=resolve_ref,
                redaction=redaction,
                error_places=error_places,
                decision_places=decision_places,
                overview=summary,
                series_previous=series_previous,
                series_next=series_next,
                compare_url=compare_url,
                spawned_at=spawned_at,
            )
        )
        sink(f"{base}/{page.url}", encode_display(html))
        del html
        for fragment in fragments:
            for name, text in fragment.files.items():
                sink(f"{base}/{name}", encode_display(text))
        del fragments
    for name, data in images.published(session):
        sink(f"{base}/{name}", data)
    if previous_run is not None:
        html = comparison.render_compare_page(
            renderer,
            previous_run.session,
            session,
            [h if not h.startswith("#") else f"index.html{h}" for h in hrefs],
            previous_name=previous_run.name,
            previous_url=_rel_session_url(previous_run.name),
            redaction=_either_redaction(redaction, previous_run.redaction),
            unreadable=previous_run.unreadable,
        )
        sink(f"{base}/{comparison.PAGE}", encode_display(html))


def _either_redaction(current: str | None, previous: str | None) -> str | None:
    """The comparison page's redaction note: None when redaction is off."""
    if current is None and previous is None:
        return None
    return f"this run: {current or 'nothing'}; previous run: {previous or 'nothing'}"


def decision_counts_of(session: Session) -> list[DecisionCount]:
    """The session's permission decisions counted, sorted by decision."""
    counts = Counter(p.decision for p in session.permissions)
    return [DecisionCount(decision, count) for decision, count in sorted(counts.items())]
