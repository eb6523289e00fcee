"""``polyglav export NAME --format html``: one self-contained page (inline CSS, no script).

The page holds the session and, given its tree (:func:`publisher.gate.session_tree`), every
sub-session at any depth, each in a section of its own: a delegate call links to its
sub-session's section, and a sub-session's parent chain links back to the sections above it
and to the call that spawned it, all within the file (a CI artifact that works offline).
The session's own ids are those of its site page (``#turn-3``); a sub-session's ids start
with ``s-<its id>-``, so every id of the file is unique.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

from markupsafe import Markup

from ..audit import Audit, Spawn, delegation_targets, delegations, match_delegations
from ..gate import Member
from ..model import Session, Turn
from ..outcome import Outcome
from ..render import places, view
from ..render.contexts import PageLink, SessionLink, SessionPage, SinglePage
from ..render.html import HtmlRenderer
from ..render.text import encode_display
from ..theme import Theme
from ..write import batches
from .render import decision_counts_of
from .urls import single_file_ids


def export_html(
    session: Session,
    theme: str | None = None,
    redaction: str | None = None,
    members: Sequence[Member] = (),
) -> Iterator[str]:
    """The whole session on one page; long outputs stay inline (collapsed).

    ``members``: the session's tree (the session first, then its sub-sessions in tree
    order, as :func:`publisher.gate.session_tree` gives it); each loaded sub-session gets a
    section of the page, each one that did not load a line saying so."""
    renderer = HtmlRenderer(Theme.load(theme))
    root = members[0].name if members else session.session_name
    included = [m for m in members[1:] if m.session is not None and m.name != root]
    # Sessions are known by their names in the tree (a file's session_name may differ).
    ids = single_file_ids(
        root, [(m.name, m.session.session_id) for m in included if m.session is not None]
    )
    # Where each session's section starts (the session's own is the page's main).
    sections = {root: "#main"} | {name: f"#{prefix[:-1]}" for name, prefix in ids.items()}
    parents = {m.name: m.parent for m in members[1:]}
    roles = {m.name: m.session.role for m in members if m.session is not None}
    owners = [(root, session), *((m.name, m.session) for m in included if m.session is not None)]
    # Which sub-session each delegate call spawned (publisher.audit's delegation rule,
    # against the sub-sessions of the tree), by owner, turn position and part number.
    matched = {name: _matched(s, [m for m in included if m.parent == name]) for name, s in owners}
    targets = {name: delegation_targets(s, matched[name]) for name, s in owners}
    spawned = {
        (name, target): href
        for name, s in owners
        for target, href in _calls(s, ids.get(name, ""), targets[name]).items()
    }
    # Each session's overview (its links in this file), and what each did with the sessions
    # below it in the tree, for its callers' sections.
    overviews = {
        name: places.overview(
            s, Audit.of(s), [f"#{ids.get(name, '')}{a}" for a in view.turn_anchors(s)]
        )
        for name, s in owners
    }
    below: dict[str, Outcome] = {}
    for m in reversed([m for m in members if m.session is not None]):  # (deepest first)
        total = below.get(m.name, Outcome())
        below[m.name] = total
        if m.parent and m.name != root:
            mine = places.own_outcome(m.name, overviews[m.name]).plus(total)
            below[m.parent] = below.get(m.parent, Outcome()).plus(mine)
    outcomes = {
        name: places.own_outcome(name, facts).plus(below.get(name, Outcome()))
        for name, facts in overviews.items()
    }

    def page_of(name: str, s: Session, prefix: str) -> dict[str, object]:
        """The fields a session's section shares between the main page and a sub-page."""
        marks = view.boundaries(s)
        audit = Audit.of(s)
        anchors = [prefix + a for a in view.turn_anchors(s)]
        hrefs = [f"#{anchor}" for anchor in anchors]
        error_places, decision_places = places.section_places(s, audit, hrefs)
        sub_urls = {
            target: sections[target]
            for (owner, target) in spawned
            if owner == name and target in sections and target != name
        }

        def fragment(position: int, turn: Turn) -> Markup:
            errors, decisions = places.turn_notes(s, audit, position)
            rendered = renderer.render_turn(
                s,
                turn,
                marks.get(turn.index, []),
                None,
                externalize=False,
                anchor=anchors[position],
                errors=errors,
                decisions=decisions,
                sub_urls=sub_urls,
                targets=targets[name].get(position, {}),
                sub_outcomes=outcomes,
                previous=s.turns[position - 1] if position else None,
                ids=prefix,
            )
            return Markup(rendered.html)

        lineage = _lineage(name, parents, root)
        parent = lineage[-1] if lineage else ""
        return {
            "session": s,
            "number": 1,
            "pages": [PageLink(number=1, first=1, last=len(s.turns), url="")],
            # Each turn is rendered when the template reaches it and written out with the
            # chunks around it: the page is never held whole.
            "turns_html": (fragment(position, turn) for position, turn in enumerate(s.turns)),
            "lineage": [SessionLink(n, sections.get(n)) for n in lineage]
            if lineage
            else [SessionLink(n, None) for n in ([s.parent_id] if s.parent_id else [])],
            "children": [
                SessionLink(n, sections.get(n) if n != name else None, roles.get(n, ""))
                for n in s.sub_sessions
            ],
            "decision_counts": decision_counts_of(s),
            "tool_calls": s.tool_calls,
            "root": "",
            "redaction": redaction,
            "error_places": error_places,
            "decision_places": decision_places,
            "overview": overviews[name],
            "sub_agents": [
                dataclasses.replace(agent, outcome=outcomes.get(agent.name))
                for agent in places.sub_agents_of(
                    s,
                    matched[name],
                    hrefs,
                    [
                        (n, sections.get(n) if n != name else None, roles.get(n, ""))
                        for n in s.sub_sessions
                    ],
                )
            ],
            "below": below.get(name) if below.get(name, Outcome()).sessions else None,
            "with_below": outcomes[name] if below.get(name, Outcome()).sessions else None,
            "spawned_at": spawned.get((parent, name)) if parent else None,
            "ids": prefix,
        }

    sub_pages = (
        SessionPage(**page_of(m.name, m.session, ids[m.name]))  # type: ignore[arg-type]
        for m in included
        if m.session is not None
    )
    missing = [
        f"Sub-session {m.name} (of {m.parent}): {m.problem or 'does not load'}"
        for m in members[1:]
        if m.session is None
    ]
    parts = renderer.render_single(
        SinglePage(
            **page_of(root, session, ""),  # type: ignore[arg-type]
            inline_css=_inline_css(
                renderer.theme.asset_text("style.css") + renderer.theme.asset_text("session.css")
            ),
            inline_theme_css=_inline_css(renderer.theme.asset_text("theme.css")),
            sub_pages=sub_pages,
            missing=missing,
        )
    )
    for batch in batches(parts, CHUNK_CHARS):
        yield encode_display("".join(batch)).decode("utf-8")


def _matched(session: Session, children: Sequence[Member]) -> list[str]:
    """Which of ``children`` (members of the tree) each delegate call of ``session``
    spawned, in file order ("" for none)."""
    calls = [call for _, _, call in delegations(session)]
    spawns = [
        Spawn(m.name, m.session.role, m.session.created_at)
        for m in children
        if m.session is not None
    ]
    return match_delegations(calls, spawns)


def _calls(session: Session, prefix: str, targets: dict[int, dict[int, str]]) -> dict[str, str]:
    """The link to the first delegate call of each sub-session ``session`` spawned."""
    found: dict[str, str] = {}
    anchors = view.turn_anchors(session)
    for position in sorted(targets):
        for number, target in sorted(targets[position].items()):
            found.setdefault(target, f"#{prefix}{anchors[position]}.{number}")
    return found


def _lineage(name: str, parents: dict[str, str], root: str) -> list[str]:
    """The sessions above ``name`` in the tree, from the root down (cycle-safe: the tree
    holds each session once)."""
    chain: list[str] = []
    seen = {name}
    current = parents.get(name, "")
    while current and current not in seen:
        chain.append(current)
        seen.add(current)
        if current == root:
            break
        current = parents.get(current, "")
    return list(reversed(chain))


def _inline_css(css: str) -> Markup:
    """A style sheet made safe inside ``<style>`` (it cannot close the element)."""
    return Markup(css.replace("</", "<\\/"))


CHUNK_CHARS = 1 << 20
"""The page is written in pieces of about this many characters."""
