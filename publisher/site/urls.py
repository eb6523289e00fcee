"""Where each session's pages go: file names safe on Linux, macOS and Windows.

A slug is the session name when that name is already safe everywhere (lowercase letters,
digits, ``_ . -``, no reserved device name, no trailing dot); otherwise a cleaned form
plus a hash of the real name. Two different names therefore never share a slug, even on a
case-insensitive file system, and the slug of a name does not depend on the rest of the
archive (an incremental build can compute it alone).
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..model import CommandPart, Session, TextualPart, ToolPart, Turn

SAFE_NAME_RE = re.compile(r"\A[a-z0-9_][a-z0-9_.-]{0,99}\Z")
UNSAFE_CHAR_RE = re.compile(r"[^A-Za-z0-9_-]+")
WINDOWS_RESERVED = frozenset(
    {"con", "prn", "aux", "nul"} | {f"com{i}" for i in range(10)} | {f"lpt{i}" for i in range(10)}
)


def slug(name: str) -> str:
    """A folder name for the session ``name`` (see module docstring)."""
    stem = name.split(".", 1)[0]
    if SAFE_NAME_RE.match(name) and not name.endswith(".") and stem not in WINDOWS_RESERVED:
        return name
    cleaned = UNSAFE_CHAR_RE.sub("_", name).strip("._- ").lower()[:60] or "session"
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{cleaned}-{digest}"


SESSIONS = "sessions"
"""The site folder holding one folder a session (:func:`session_dir`)."""


def session_dir(name: str) -> str:
    """Site-relative folder of a session's pages."""
    return f"{SESSIONS}/{slug(name)}"


def session_page(name: str, page: int = 1) -> str:
    """Site-relative path of page ``page`` of a session."""
    return f"{session_dir(name)}/{page_file(page)}"


PAGE_TURNS = 150
"""A session page holds at most this many turns."""
PAGE_BYTES = 650_000
"""... and about this many characters of turns (:func:`turn_weight`): about 1 MB of HTML
(measured on real Claude Code sessions: a page is 1.5 times the weight of its turns)."""


@dataclass(frozen=True, slots=True)
class PageLimits:
    """Where a long session is cut into pages (each turn stays whole)."""

    turns: int = PAGE_TURNS
    """At most this many turns a page."""
    bytes: int = PAGE_BYTES
    """About this many characters of turns a page at most (by :func:`turn_weight`)."""


PART_WEIGHT = 600
"""What a part adds to a page beside its text (its markup), in :func:`turn_weight`."""


def turn_weight(turn: Turn) -> int:
    """About how many characters ``turn`` makes on a page: its texts, inputs and outputs (an
    output of more than :data:`~publisher.render.html.EXTERNAL_CHARS` keeps only its
    preview on the page) and some markup per part. A function of the turn alone, so any
    page can tell where another session's turns are without rendering it."""
    from ..render.html import EXTERNAL_CHARS, PREVIEW_CHARS

    return _turn_weight(turn, EXTERNAL_CHARS, PREVIEW_CHARS)


_TEXT_PARTS = (TextualPart, CommandPart)


def _turn_weight(turn: Turn, external: int, preview: int) -> int:
    """:func:`turn_weight`, the output limits given (:func:`page_starts` weighs every turn
    of a session, twice a build: the import and the union of types are made once)."""
    weight = PART_WEIGHT
    for part in turn.parts:
        weight += PART_WEIGHT
        if isinstance(part, _TEXT_PARTS):
            weight += len(part.text)
        elif isinstance(part, ToolPart):
            weight += _json_chars(part.input)
            if part.output is not None:
                size = len(part.output)
                weight += preview if size > external else size
    return weight


def _json_chars(value: object) -> int:
    """Roughly the characters of a JSON value (its strings and a few per item)."""
    if isinstance(value, str):
        return len(value) + 2
    # A loop rather than sum() over a generator, strings counted in place (no call): this
    # runs over every tool input of a session, twice a build (scan and render).
    if isinstance(value, dict):
        total = 2
        for k, v in value.items():
            total += (len(k) if type(k) is str else len(str(k))) + 4
            total += len(v) + 2 if type(v) is str else _json_chars(v)
        return total
    if isinstance(value, list):
        total = 2
        for v in value:
            total += (len(v) + 2 if type(v) is str else _json_chars(v)) + 1
        return total
    return 6


def page_starts(session: Session, limits: PageLimits | None = None) -> tuple[int, ...]:
    """The one home of "which page holds turn N": the positions (0-based, in file order) of
    the first turns of pages 2, 3, …; empty for a session on one page. A page holds at most
    ``limits.turns`` turns and about ``limits.bytes`` of them, each turn whole."""
    from ..render.html import EXTERNAL_CHARS, PREVIEW_CHARS

    limits = limits or PageLimits()
    starts: list[int] = []
    count = size = 0
    for position, turn in enumerate(session.turns):
        weight = _turn_weight(turn, EXTERNAL_CHARS, PREVIEW_CHARS)
        if count and (count >= limits.turns or size + weight > limits.bytes):
            starts.append(position)
            count = size = 0
        count += 1
        size += weight
    return tuple(starts)


def page_number(starts: Sequence[int], position: int) -> int:
    """The page (1-based) holding the turn at ``position``, pages starting at ``starts``."""
    return bisect.bisect_right(starts, position) + 1


def page_file(page: int) -> str:
    """A session page's file name in its folder."""
    return "index.html" if page == 1 else f"page-{page}.html"


def turn_href(starts: Sequence[int], position: int, anchor: str) -> str:
    """The link to ``anchor`` in the turn at ``position``, relative to the session's folder
    (``index.html#turn-3``, ``page-2.html#turn-200.3``)."""
    return f"{page_file(page_number(starts, position))}#{anchor}"


SAFE_ID_RE = re.compile(r"\A[A-Za-z0-9_-]{1,64}\Z")


def single_file_ids(root: str, subs: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Where each sub-session's ids start in a single-file export of ``root``: ``subs`` are
    (name, session id) in tree order; ``s-<session id>-`` when the id is a plain word not
    taken yet, else ``s-<hash of the name>-`` (never a prefix the root's ids can have)."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name, ident in subs:
        if name in out or name == root:
            continue
        word = ident if SAFE_ID_RE.match(ident) else ""
        prefix = f"s-{word}-"
        if not word or prefix in taken:
            digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
            prefix = f"s-{digest[:16]}-"
        taken.add(prefix)
        out[name] = prefix
    return out


# Script-tag row shards (the index's ``rows/*.js``, the archive pages' ``events/*.js``): each
# session's rows are in the shard of its name's hash, so an append rewrites one shard.

ROWS_FOLDER = "rows"
"""The site folder of the index's row shards."""
EVENTS_FOLDER = "events"
"""The site folder of the archive-wide pages' row shards."""


def row_slot(name: str) -> int:
    """The number whose remainder by a shard count is the row shard of session ``name``: a
    hash of its folder (slug), so :func:`.search.shard_of` of the folder is the same shard.
    Stable across builds; kept in the catalog (its ``lane``) so a build does not hash every
    session's name again."""
    digest = hashlib.sha256(slug(name).encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big")


def row_shard_count(sessions: int, per_shard: int, most: int) -> int:
    """The number of row shards: the smallest power of two giving at most ``per_shard``
    sessions a shard, capped at ``most`` (so an append rewrites one shard, and the count
    changes only when the archive doubles). Always a power of two."""
    count = 1
    while count < most and sessions > count * per_shard:
        count *= 2
    return count


def row_shard_path(index: int, count: int) -> str:
    """The site path of the index's row shard ``index`` of ``count``."""
    return f"{ROWS_FOLDER}/rows-{index:04d}-of-{count:04d}.js"


def event_shard_path(page: str, index: int, count: int) -> str:
    """The site path of row shard ``index`` of ``count`` of the archive page ``page``."""
    return f"{EVENTS_FOLDER}/{page}-{index:04d}-of-{count:04d}.js"
