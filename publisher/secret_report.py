"""Where a session's secrets are: ``polyglav redact-report`` and ``--fail-on secret``.

:func:`secret_findings` walks every string of a session (as :func:`.redact.redact_session`
does: fields found generically, tool inputs and ``extra`` at any depth, keys included)
and lists each span a redactor would replace: its kind, where it is (the turn and part,
numbered as ``/print N.M`` and the pages number them; an error or a permission decision
placed in a turn by the rules of :mod:`.audit`) and a preview of its line with every
secret in it masked (:func:`mask`), so a person can review what redaction will hide
before sharing, and a CI gate can say where an unredacted credential is without
printing it.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .audit import Audit
from .model import JSON, Part, Session, Turn
from .redact import IDENTIFIER_FIELDS, Redactor

PREVIEW_BEFORE = 40
"""Characters of context shown before a secret (its line only)."""
PREVIEW_AFTER = 24
"""Characters of context shown after it."""
PATH_KEY_CHARS = 40
"""Longest JSON key shown in a finding's field path."""


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """One secret in a session."""

    session: str
    """The session's name."""
    kind: str
    """What it is, as its marker would say (``github``, ``npm-access-token``…)."""
    turn: str
    """``N`` (turn index N), ``N.M`` (part M of it) or ``""`` (in no turn)."""
    field: str
    """Which string: ``output``, ``input.env.TOKEN``, ``errors[2].message``, ``role``…"""
    preview: str
    """Its line, one line long, every secret in it masked."""
    position: int | None = None
    """0-based position of the turn in :attr:`Session.turns` (None when in no turn)."""
    part: int | None = None
    """1-based number of the part in the turn, when in a part."""
    kept: bool = False
    """In a session identifier, which redaction keeps as written (it names pages)."""

    @property
    def where(self) -> str:
        """``turn 7.2``, or ``no turn``."""
        return f"turn {self.turn}" if self.turn else "no turn"


def mask(secret: str) -> str:
    """``ghp_…(40 chars)``: the first four characters of a secret of 16 or more (which
    tell a provider's prefix, not the secret), else none, and its length."""
    shown = 4 if len(secret) >= 16 else 0
    return f"{secret[:shown]}…({len(secret)} chars)"


def preview(text: str, start: int, spans: list[tuple[int, int, str]]) -> str:
    """The line of ``text`` around the span starting at ``start``, cut to a few words on
    each side, with every span of ``spans`` in it masked; control characters shown as
    ``\\n``-style escapes."""
    floor = max(0, start - PREVIEW_BEFORE - 1)
    line_start = text.rfind("\n", floor, start) + 1 or floor
    span_end = next(end for s, end, _ in spans if s == start)
    line_end = text.find("\n", span_end, span_end + PREVIEW_AFTER + 1)
    line_end = min(len(text), span_end + PREVIEW_AFTER + 1) if line_end < 0 else line_end
    left = max(line_start, start - PREVIEW_BEFORE)
    right = min(line_end, span_end + PREVIEW_AFTER)
    pieces = ["…" if left > 0 and text[left - 1] != "\n" else ""]
    pos = left
    for s, e, _ in spans:
        if e <= left or s >= right:
            continue
        pieces.append(text[pos : max(pos, s)])
        pieces.append(mask(text[s:e]))
        pos = max(pos, e)
    pieces.append(text[pos:right] if pos < right else "")
    pieces.append("…" if right < len(text) and text[right] != "\n" else "")
    shown = "".join(pieces)
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in shown)


def secret_findings(session: Session, redactor: Redactor) -> list[SecretFinding]:
    """Every secret ``redactor`` finds in ``session``, in the order of the session's
    fields (session fields, turns and their parts, errors, permission decisions)."""
    found: list[SecretFinding] = []
    for where, field, text in _strings(session, redactor):
        spans = redactor.spans(text)
        for start, _, kind in spans:
            position, part = where
            turn = ""
            if position is not None:
                index = session.turns[position].index
                turn = f"{index}.{part}" if part is not None else str(index)
            found.append(
                SecretFinding(
                    session.session_name,
                    kind,
                    turn,
                    field,
                    preview(text, start, spans),
                    position,
                    part,
                    kept=field in IDENTIFIER_FIELDS,
                )
            )
    return found


Where = tuple[int | None, int | None]


def _strings(session: Session, redactor: Redactor) -> Iterator[tuple[Where, str, str]]:
    """((turn position, part number), field, text) of every string of ``session``."""
    walk = _Walk(redactor)
    nowhere: Where = (None, None)
    for f in dataclasses.fields(session):
        if f.name in ("turns", "errors", "permissions"):
            continue
        yield from walk.values(getattr(session, f.name), f.name, nowhere)
    for position, turn in enumerate(session.turns):
        yield from walk.turn(turn, position)
    placed = Audit.of(session)
    for i, (error, place) in enumerate(zip(session.errors, placed.errors, strict=True)):
        yield from walk.object(error, f"errors[{i}]", (place.position, None))
    for i, (permission, decided) in enumerate(
        zip(session.permissions, placed.decisions, strict=True)
    ):
        yield from walk.object(permission, f"permissions[{i}]", (decided.position, decided.part))


@dataclass(frozen=True, slots=True)
class _Walk:
    """The strings of a session's objects with the path of each. A JSON key in a path is
    shown redacted (a key may be a secret), and cut at :data:`PATH_KEY_CHARS`."""

    redactor: Redactor

    def turn(self, turn: Turn, position: int) -> Iterator[tuple[Where, str, str]]:
        for f in dataclasses.fields(turn):
            if f.name != "parts":
                yield from self.values(getattr(turn, f.name), f.name, (position, None))
        for number, part in enumerate(turn.parts, start=1):
            yield from self.object(part, "", (position, number))

    def object(
        self, obj: Part | Any, prefix: str, where: Where
    ) -> Iterator[tuple[Where, str, str]]:
        for f in dataclasses.fields(obj):
            name = f"{prefix}.{f.name}" if prefix else f.name
            yield from self.values(getattr(obj, f.name), name, where)

    def values(self, value: Any, path: str, where: Where) -> Iterator[tuple[Where, str, str]]:
        """The strings of a field's value: itself, or those of a JSON value at any depth
        (keys too), walked with an explicit stack."""
        stack: list[tuple[JSON, str]] = [(value, path)]
        while stack:
            item, at = stack.pop()
            if isinstance(item, str):
                yield where, at, item
            elif isinstance(item, dict):
                entries = list(item.items())
                for key, child in reversed(entries):
                    stack.append((child, f"{at}.{self.key(key)}"))
                for key, _ in reversed(entries):
                    stack.append((key, f"{at} (a key)"))
            elif isinstance(item, list):
                indexed = list(enumerate(item))
                stack.extend((child, f"{at}[{i}]") for i, child in reversed(indexed))

    def key(self, key: str) -> str:
        shown = self.redactor.redact_text(key)
        if len(shown) > PATH_KEY_CHARS:
            shown = shown[: PATH_KEY_CHARS - 1] + "…"
        return "".join(ch if ch.isprintable() else "?" for ch in shown)


def describe(found: list[SecretFinding], searched: int) -> str:
    """``12 secrets in 3 of 40 sessions (5 github-pat, …)`` or ``no secret found in 40
    sessions``."""
    noun = "session" if searched == 1 else "sessions"
    if not found:
        return f"no secret found in {searched:,} {noun}"
    sessions = len({f.session for f in found})
    tally = Counter(f.kind for f in found)
    kinds = ", ".join(
        f"{n} {kind}" for kind, n in sorted(tally.items(), key=lambda x: (-x[1], x[0]))
    )
    what = f"{len(found):,} secret{'s' if len(found) != 1 else ''}"
    where = f"{sessions:,} of {searched:,} {noun}" if searched != 1 else "1 session"
    return f"{what} in {where} ({kinds})"
