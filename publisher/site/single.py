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
    fragments = [
        Markup(
            renderer.render_turn(
                session, turn, marks.get(turn.index, []), None, externalize=False
            ).html
        )
        for turn in session.turns
    ]
    css = renderer.theme.asset_text("style.css")
    html = renderer.template("single.html").render(
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
        root="",
        resolve_ref=None,
        redaction=redaction,
        inline_css=Markup(css.replace("</", "<\\/")),
        inline_theme_css=Markup(renderer.theme.asset_text("theme.css").replace("</", "<\\/")),
    )
    yield encode_display(html).decode("utf-8")
