"""``polyglav export NAME --format html``: one self-contained page (inline CSS, no script)."""

from __future__ import annotations

from collections.abc import Iterator

from markupsafe import Markup

from ..audit import Audit
from ..model import Session, Turn
from ..render import places, view
from ..render.contexts import PageLink, SessionLink, SinglePage
from ..render.html import HtmlRenderer
from ..render.text import encode_display
from ..theme import Theme
from .render import decision_counts_of


def export_html(
    session: Session, theme: str | None = None, redaction: str | None = None
) -> Iterator[str]:
    """The whole session on one page; long outputs stay inline (collapsed)."""
    renderer = HtmlRenderer(Theme.load(theme))
    marks = view.boundaries(session)
    audit = Audit.of(session)
    anchors = view.turn_anchors(session)
    hrefs = [f"#{anchor}" for anchor in anchors]
    error_places, decision_places = places.section_places(session, audit, hrefs)

    def fragment(position: int, turn: Turn) -> Markup:
        errors, decisions = places.turn_notes(session, audit, position)
        rendered = renderer.render_turn(
            session,
            turn,
            marks.get(turn.index, []),
            None,
            externalize=False,
            anchor=anchors[position],
            errors=errors,
            decisions=decisions,
            previous=session.turns[position - 1] if position else None,
        )
        return Markup(rendered.html)

    # Each turn is rendered when the template reaches it and written out with the chunks
    # around it: the page is never held whole (a 100 MB session stays a 100 MB session).
    fragments = (fragment(position, turn) for position, turn in enumerate(session.turns))
    parts = renderer.render_single(
        SinglePage(
            session=session,
            number=1,
            pages=[PageLink(number=1, first=1, last=len(session.turns), url="")],
            turns_html=fragments,
            lineage=[
                SessionLink(n, None) for n in ([session.parent_id] if session.parent_id else [])
            ],
            children=[SessionLink(n, None) for n in session.sub_sessions],
            decision_counts=decision_counts_of(session),
            tool_calls=session.tool_calls,
            root="",
            redaction=redaction,
            error_places=error_places,
            decision_places=decision_places,
            overview=places.overview(session, audit, hrefs),
            inline_css=_inline_css(
                renderer.theme.asset_text("style.css") + renderer.theme.asset_text("session.css")
            ),
            inline_theme_css=_inline_css(renderer.theme.asset_text("theme.css")),
        )
    )
    buffer: list[str] = []
    size = 0
    for part in parts:
        buffer.append(part)
        size += len(part)
        if size >= CHUNK_CHARS:
            yield encode_display("".join(buffer)).decode("utf-8")
            buffer, size = [], 0
    yield encode_display("".join(buffer)).decode("utf-8")


def _inline_css(css: str) -> Markup:
    """A style sheet made safe inside ``<style>`` (it cannot close the element)."""
    return Markup(css.replace("</", "<\\/"))


CHUNK_CHARS = 1 << 20
"""The page is written in pieces of about this many characters."""
