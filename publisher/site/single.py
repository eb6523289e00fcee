"""``polyglav export NAME --format html``: one self-contained page (inline CSS, no script)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from markupsafe import Markup

from ..model import Session
from ..render import view
from ..render.html import HtmlRenderer
from ..render.text import encode_display
from ..theme import Theme


def export_html(
    session: Session, theme: str | None = None, redaction: str | None = None
) -> Iterator[str]:
    """The whole session on one page; long outputs stay inline (collapsed)."""
    renderer = HtmlRenderer(Theme.load(theme))
    marks = view.boundaries(session)
    # Each turn is rendered when the template reaches it and written out with the chunks
    # around it: the page is never held whole (a 100 MB session stays a 100 MB session).
    fragments = (
        Markup(
            renderer.render_turn(
                session, turn, marks.get(turn.index, []), None, externalize=False
            ).html
        )
        for turn in session.turns
    )
    css = renderer.theme.asset_text("style.css")
    parts = renderer.template("single.html").generate(
        session=session,
        page=1,
        pages=[{"number": 1, "first": 1, "last": len(session.turns), "url": ""}],
        page_map=None,
        turns_html=fragments,
        lineage=[
            {"name": n, "url": None} for n in ([session.parent_id] if session.parent_id else [])
        ],
        lineage_cycle=False,
        children=[{"name": n, "url": None, "role": ""} for n in session.sub_sessions],
        decision_counts=sorted(Counter(p.decision for p in session.permissions).items()),
        tool_calls=session.tool_calls,
        root="",
        resolve_ref=None,
        redaction=redaction,
        inline_css=Markup(css.replace("</", "<\\/")),
        inline_theme_css=Markup(renderer.theme.asset_text("theme.css").replace("</", "<\\/")),
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


CHUNK_CHARS = 1 << 20
"""The page is written in pieces of about this many characters."""
