"""A run's comparison page (``sessions/<slug>/compare.html``): the run against the previous
run of its series (:meth:`.graph.Graph.series`), turn by turn.

The comparison itself is :func:`publisher.compare.compare`, the model ``polyglav compare``
prints: this module only lays it out for ``compare.html``. The page depends on both runs'
files, so a run is rendered again when its previous run's content changes (the rule is
:func:`.staleness.session_stale`'s ``compared_changed``).
"""

from __future__ import annotations

from ..compare import CALL_LABELS, TurnComparison, compare, duration
from ..model import Session
from ..render.contexts import CompareCall, ComparePage, CompareTurn, DiffLine, SessionLink
from ..render.html import HtmlRenderer, short_time
from ..render.text import first_line

PAGE = "compare.html"
"""The comparison page's file name in a run's folder."""
DIFF_LINES = 200
"""A differing output's diff is cut to this many lines on the page."""
INPUT_CHARS = 300
"""A call's input is cut to this many characters on the page."""


def _diff_kind(line: str) -> str:
    if line.startswith(("---", "+++")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    return {"+": "add", "-": "del"}.get(line[:1], "same")


def _turn(t: TurnComparison, href: str | None) -> CompareTurn:
    calls = [
        CompareCall(
            call=c,
            label=CALL_LABELS[c.change],
            input=first_line(c.input, INPUT_CHARS),
            diff=[DiffLine(_diff_kind(line), line) for line in c.diff[:DIFF_LINES]],
            more=max(0, len(c.diff) - DIFF_LINES),
        )
        for c in t.calls
    ]
    delta = ""
    if t.seconds_a is not None and t.seconds_b is not None and t.seconds_a != t.seconds_b:
        delta = f"{t.seconds_b - t.seconds_a:+.1f}s"
    return CompareTurn(t, href, duration(t.seconds_a), duration(t.seconds_b), delta, calls)


def render_compare_page(
    renderer: HtmlRenderer,
    previous: Session | None,
    current: Session,
    hrefs: list[str],
    *,
    previous_name: str,
    previous_url: str,
    redaction: str | None = None,
    unreadable: str | None = None,
) -> str:
    """``compare.html`` of ``current`` against ``previous`` (None when it could not be read:
    ``unreadable`` says why). ``hrefs``: where each of ``current``'s turns is, relative to
    the page."""
    turns: list[CompareTurn] = []
    facts: list[tuple[str, str, str]] = []
    changed = 0
    if previous is not None:
        pairs = compare(previous, current)
        changed = sum(t.changed for t in pairs)
        turns = [
            _turn(t, hrefs[t.position - 1] if t.position <= len(hrefs) else None) for t in pairs
        ]
        facts = [
            ("Turns", str(len(previous.turns)), str(len(current.turns))),
            ("Tool calls", str(previous.tool_calls), str(current.tool_calls)),
            ("Errors", str(len(previous.errors)), str(len(current.errors))),
            ("Last status", previous.last_status or "-", current.last_status or "-"),
            ("Created", short_time(previous.created_at), short_time(current.created_at)),
        ]
    page = ComparePage(
        previous=SessionLink(previous_name, previous_url),
        current=SessionLink(current.session_name, "index.html"),
        role=current.role,
        facts=facts,
        turns=turns,
        changed=changed,
        unreadable=unreadable,
        redaction=redaction,
    )
    return str(renderer.template(PAGE).render(page=page))
