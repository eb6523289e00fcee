"""The CI summary: a short Markdown account of a run for a job page or a pull-request comment.

It says the gate's outcome, the last turn's status, the duration, the counts of turns, tool
calls, errors and permission decisions, the findings with their turns (linked to the turn
anchors when a link base is given) and the sub-agents with their outcomes. Long lists are
cut with "and N more", so a 10,000-turn run gives a summary of the same size as a short one;
the same input always gives the same text.

**Escaping.** Everything quoted from a session (names, roles, statuses, messages, tool
names, paths) is written as a code span (:func:`publisher.render.text.inline_code`, whose
fence is longer than any backtick run inside, and which shows line breaks, control
characters and ``|`` in their JSON form) after bidirectional and invisible formatting
characters are shown as ``\\uNNNN``. Inside a code span a forge renders no link, image,
mention, emoji, reference or HTML, and a table cell cannot be split. The only links are the
ones built here from ``--link-base`` and the site's own page paths.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

from ..gate import (
    KINDS,
    Finding,
    Member,
    Tally,
    counts,
    fit,
    listed_kinds,
    session_findings,
    spread,
    utc_time,
)
from ..model import KNOWN_STATUSES, Session
from ..site import urls
from ..usage import Prices, Spend, session_spend
from . import view
from .text import inline_code

if TYPE_CHECKING:
    from ..ci import Budget

#: Rows of the findings table before "and N more".
MAX_FINDINGS = 15
#: Rows of the sub-agents table before "and N more".
MAX_SUB_SESSIONS = 10
#: Distinct statuses or decisions named in a count before "and N more".
MAX_COUNTED = 8
#: Characters of a quoted value before it is cut with "…".
QUOTE_CHARS = 100

_FORMAT_CHARS_RE = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
#: Characters kept as they are in a link; every other one is percent-encoded (so a link
#: destination never holds a space, a parenthesis, ``<``, ``>``, a quote or a backtick).
_URL_SAFE = ":/?#[]@!$&*+,;=%-._~"

LAST_TURN_NOTES = {
    "running": "the run never finished",
    "ok": "finished",
    "empty": "finished with no content",
    "error": "the run ended in an error",
    "truncated": "the answer was cut short",
    "cancelled": "the run was cancelled",
}


def show_format_chars(text: str) -> str:
    """``text`` with bidirectional and invisible formatting characters shown as ``\\uNNNN``."""
    return _FORMAT_CHARS_RE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def code(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text`` as an inert code span, cut at ``limit`` characters."""
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return inline_code(show_format_chars(text))


def check_link_base(url: str) -> str:
    """``url`` when it can be a ``--link-base`` (http, https or relative), else ValueError."""
    if not url or any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        raise ValueError(f"--link-base: expected a URL without spaces, got {url!r}")
    scheme = urlsplit(url).scheme.lower()
    if scheme not in ("", "http", "https"):
        raise ValueError(f"--link-base: expected an http(s) or relative URL, got {url!r}")
    return url


@dataclass(slots=True)
class Places:
    """Where the sessions of a tree are published: the pages each is cut into on the site
    (:func:`.urls.page_starts`), and the ids of each sub-session in a single-file export of
    the root (:func:`.urls.single_file_ids`)."""

    starts: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Session name → where its pages 2, 3, … start."""
    prefixes: dict[str, str] = field(default_factory=dict)
    """Sub-session name (as the tree and as its file name it) → its ids' prefix."""

    @classmethod
    def of(cls, members: Sequence[Member]) -> Places:
        starts = {m.session.session_name: urls.page_starts(m.session) for m in members if m.session}
        root = members[0].name if members else ""
        subs = [m for m in members[1:] if m.session is not None]
        ids = urls.single_file_ids(
            root, [(m.name, m.session.session_id) for m in subs if m.session]
        )
        prefixes = dict(ids)
        for m in subs:
            if m.session is not None and m.name in ids:
                prefixes.setdefault(m.session.session_name, ids[m.name])
        return cls(starts, prefixes)


def link_for(
    link_base: str | None,
    root: str,
    session: str,
    turn: str = "",
    position: int | None = None,
    places: Places | None = None,
) -> str | None:
    """Where a turn (or a session page, with ``turn`` empty) is published, or None.

    A base ending in ``.html`` is the single-file export of the root session: links go to
    its turn anchors, and to a sub-session's section and turns in the same file (``places``
    names their ids; without it sub-sessions get none). Any other base is the site's root:
    ``<base>/sessions/<slug>/page-2.html#turn-N[.M]``, the page that holds the turn at
    ``position`` (by ``places``; without them the first page, whose script forwards an
    anchor on a later page to the right one).
    """
    if link_base is None:
        return None
    base = link_base.split("#", 1)[0]
    anchor = f"#turn-{turn}" if turn else ""
    if urlsplit(base).path.endswith(".html"):
        if session == root:
            return quote(base, safe=_URL_SAFE) + anchor
        prefix = places.prefixes.get(session) if places is not None else None
        if prefix is None:
            return None
        target = f"#{prefix}turn-{turn}" if turn else f"#{prefix[:-1]}"
        return quote(base, safe=_URL_SAFE) + target
    page = 1
    if places is not None and position is not None:
        page = urls.page_number(places.starts.get(session, ()), position)
    url = base.rstrip("/") + "/" + urls.session_page(session, page)
    return quote(url, safe=_URL_SAFE) + anchor


def _linked(text: str, url: str | None) -> str:
    return f"[{text}]({url})" if url else text


def _capped(items: list[str], limit: int = MAX_COUNTED) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f", and {len(items) - limit} more" if len(items) > limit else "")


def _duration(session: Session) -> str:
    starts = [utc_time(session.created_at)]
    if session.turns:
        starts.append(utc_time(session.turns[0].started_at))
    ends = [utc_time(session.updated_at)] + [utc_time(t.ended_at) for t in session.turns[-1:]]
    start = min((s for s in starts if s is not None), default=None)
    end = max((e for e in ends if e is not None), default=None)
    if start is None or end is None:
        return "-"
    return view.format_duration((end - start).total_seconds())


def _status_counts(session: Session) -> str:
    tally = Counter(turn.status for turn in session.turns)
    order = [s for s in KNOWN_STATUSES if s in tally] + sorted(
        s for s in tally if s not in KNOWN_STATUSES
    )
    order.sort(key=lambda s: -tally[s])  # stable: most frequent first, then KNOWN_STATUSES' order
    return _capped([f"{tally[s]} {code(s, 40)}" for s in order])


def _kind_counts(found: Sequence[Finding]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in counts(found).items())


def _spend_text(spend: Spend) -> str:
    """``1,234 tokens (input …), $0.0123`` with what was not priced named (as code spans:
    a model's name is the session's text)."""
    assert spend.tokens is not None
    said = f"{view.tokens_line(spend.tokens)} ({view.tokens_detail(spend.tokens)}), "
    said += view.cost_line(spend)
    if spend.unpriced_models:
        names = ", ".join(code(m or "(no model named)", 60) for m in spend.unpriced_models[:5])
        more = (
            f" and {len(spend.unpriced_models) - 5} more" if len(spend.unpriced_models) > 5 else ""
        )
        said += f" ({view.plural(spend.unpriced, 'token')} of {names}{more} unpriced)"
    return said


def _short_spend(spend: Spend) -> str:
    """A table cell: ``1,234 tokens, $0.0123``; ``-`` when no usage was recorded."""
    if spend.tokens is None:
        return "-"
    return f"{view.tokens_line(spend.tokens)}, {view.cost_line(spend)}"


def ci_summary(
    members: Sequence[Member],
    kinds: Collection[str] | None,
    link_base: str | None = None,
    prices: Prices | None = None,
    budget: Budget | None = None,
) -> str:
    """The summary of a session tree (root first); ``kinds`` is ``--fail-on`` (None: no
    gate); ``prices`` prices its usage (the shipped table when None), ``budget`` is
    ``--max-cost`` and ``--max-tokens``."""
    prices = prices or Prices()
    spends = [
        session_spend(m.session, prices) if m.session is not None else Spend() for m in members
    ]
    total = Spend()
    for spent in spends:
        total = total.plus(spent)
    over = budget.over(total) if budget is not None and budget.active else []
    root = members[0].session
    assert root is not None, "the root of a tree is always loaded"
    name = root.session_name
    places = Places.of(members) if link_base is not None else None
    every: list[Finding] = []
    per_member: list[list[Finding]] = []
    for member in members:
        session = member.session
        found = session_findings(session, listed_kinds(kinds)) if session is not None else []
        per_member.append(found)
        every.extend(found)
    gated = [f for f in every if kinds is not None and f.kind in kinds]
    failed = bool(gated or over)
    gating = kinds is not None or (budget is not None and budget.active)
    loaded = sum(1 for member in members if member.session is not None)
    gate_kinds = ",".join(k for k in KINDS if kinds is not None and k in kinds)

    lines: list[str] = []
    if not gating:
        lines.append(f"### Polyglav session {code(name)}")
    else:
        lines.append(f"### Polyglav session {code(name)}: {'failed' if failed else 'passed'}")
    lines.append("")
    if not gating:
        gate = "not set (no `--fail-on`)"
    elif gated:
        gate = (
            f"**failed**: `--fail-on {gate_kinds}` matched {view.plural(len(gated), 'finding')} "
            f"({_kind_counts(gated)}) in {spread(gated, loaded)}"
        )
    elif kinds is not None:
        gate = f"passed: nothing matched `--fail-on {gate_kinds}`"
    else:
        gate = "passed" if not over else "**failed**"
    if budget is not None and budget.active:
        said = "; ".join(code(line, 200) for line in over) if over else "within it"
        gate += f"; budget: {said}"
    lines.append(f"- **Gate:** {gate}")
    transcript = link_for(link_base, name, name)
    about = f"{view.KIND_LABELS[root.kind]}, role {code(root.role, 40)}"
    about += f", Polyglav {code(root.version, 40)}"
    if transcript:
        about += f", {_linked('transcript', transcript)}"
    lines.append(f"- **Session:** {about}")
    if root.turns:
        status = root.last_status
        note = LAST_TURN_NOTES.get(status, "a status this publisher does not know")
        lines.append(f"- **Last turn:** turn {root.turns[-1].index}, {code(status, 40)}: {note}")
    lines.append(f"- **Duration:** {_duration(root)}")
    lines.append(
        f"- **Turns:** {len(root.turns)}" + (f" ({_status_counts(root)})" if root.turns else "")
    )
    calls = Tally.of(per_member[0]).calls_text()
    lines.append(f"- **Tool calls:** {root.tool_calls}" + (f" ({calls})" if calls else ""))
    lines.append(f"- **Errors:** {len(root.errors)}")
    decisions = Counter(p.decision for p in root.permissions)
    decided = _capped([f"{n} {code(d, 40)}" for d, n in sorted(decisions.items())])
    lines.append(
        f"- **Permission decisions:** {len(root.permissions)}"
        + (f" ({decided})" if decided else "")
    )
    if spends[0].tokens is not None:
        lines.append(f"- **Tokens and cost:** {_spend_text(spends[0])}")
    if len(members) > 1:
        lines.append(f"- **Sub-agents:** {len(members) - 1}")
        if total.tokens is not None:
            lines.append(f"- **With its sub-agents:** {_spend_text(total)}")
    if total.tokens is not None:
        lines.append(f"- **Prices:** {code(prices.label, 200)}")
    lines.append("")

    lines.append("#### Findings")
    lines.append("")
    if not every:
        lines.append("No errors, tool errors, refusals, or unfinished turns.")
    else:
        gated_ids = {id(f) for f in gated}
        ordered = gated + [f for f in every if id(f) not in gated_ids]
        header = "| Where | Kind | What |" + (" Gate |" if kinds is not None else "")
        lines.append(header)
        lines.append("|---|---|---|" + ("---|" if kinds is not None else ""))
        for finding in ordered[:MAX_FINDINGS]:
            link = link_for(
                link_base, name, finding.session, finding.turn, finding.position, places
            )
            where = _linked(finding.where, link)
            if finding.session != name:
                where += f" of {code(finding.session, 60)}"
            row = f"| {where} | {finding.kind} | {code(fit(finding.message, QUOTE_CHARS))} |"
            if kinds is not None:
                row += " fails |" if id(finding) in gated_ids else "  |"
            lines.append(row)
        if len(ordered) > MAX_FINDINGS:
            lines.append("")
            lines.append(
                f"…and {len(ordered) - MAX_FINDINGS} more "
                f"({_kind_counts(ordered[MAX_FINDINGS:])}); the transcript has them all."
            )
    if len(members) > 1:
        lines.append("")
        lines.append("#### Sub-agents")
        lines.append("")
        usage = total.tokens is not None  # (a column only when some session records usage)
        lines.append(
            "| Session | Role | Called by | Turns | Last turn | Findings |"
            + (" Tokens, cost |" if usage else "")
        )
        lines.append("|---|---|---|---|---|---|" + ("---|" if usage else ""))
        subs = list(zip(members[1:], per_member[1:], spends[1:], strict=True))
        for member, found, sub_spend in subs[:MAX_SUB_SESSIONS]:
            caller = code(member.parent, 60)
            sub = member.session
            if sub is not None:  # its pages are named after the name the file holds
                link = link_for(link_base, name, sub.session_name, places=places)
                label = _linked(code(member.name, 60), link)
            if sub is None:
                lines.append(
                    f"| {code(member.name, 60)} | - | {caller} | - | - | "
                    f"not loaded: {code(member.problem)} |" + (" - |" if usage else "")
                )
                continue
            found_text = _kind_counts(found) or "none"
            last = code(sub.last_status, 40) if sub.turns else "-"
            lines.append(
                f"| {label} | {code(sub.role, 40)} | {caller} | {len(sub.turns)} | {last} | "
                f"{found_text} |" + (f" {_short_spend(sub_spend)} |" if usage else "")
            )
        if len(subs) > MAX_SUB_SESSIONS:
            lines.append("")
            lines.append(f"…and {len(subs) - MAX_SUB_SESSIONS} more sub-agents.")
    return "\n".join(lines) + "\n"
