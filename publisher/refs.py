"""Session references, in one place: how they are written, found in text and resolved.

The session format (docs/session-format.md) names a session two ways besides its file name:

- ``#<id>``: the six-character base36 id minted at creation and embedded as the last
  ``_``-separated component of an auto name (``ses_20260817_120000_ab12cd`` is
  ``#ab12cd``). It resolves by a filename glob, ``*_<id>.json``: no file is read. An id
  that matches two files resolves to nothing (the CLI says it is ambiguous).
- ``session:<name>``: an explicit name, the file ``<name>.json``.

The CLI resolves a target given on the command line (:func:`parse`); the site links every
reference written in a text (:func:`find`) to the page of the session it resolves to
(:class:`RefIndex`), with exactly the same rules, so a link on a page goes where
``polyglav print --run`` would go.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

ID_PATTERN = "[0-9a-z]{6}"
"""A session id: six base36 characters (lower-case letters and digits)."""
ID_RE = re.compile(rf"\A{ID_PATTERN}\Z")
NAME_PREFIX = "session:"
"""The prefix of a reference by explicit name."""

_ID_IN_TEXT_RE = re.compile(rf"#{ID_PATTERN}\b")
_NAME_IN_TEXT_RE = re.compile(r"session:[A-Za-z0-9._-]+[A-Za-z0-9_-]")
#: A reference preceded by one of these is part of something else: ``a#abcdef`` (a word),
#: ``x/#abcdef`` (a URL fragment), ``&#abcdef`` (an entity), ``##abcdef``.
_BLOCKER_RE = re.compile(r"[\w#/&]")


@dataclass(frozen=True, slots=True)
class Ref:
    """A reference to a session, as written."""

    kind: Literal["id", "name"]
    """``id`` for ``#<id>``, ``name`` for ``session:<name>``."""
    value: str
    """The id or the name, without its prefix."""

    @property
    def text(self) -> str:
        """The reference as written: ``#ab12cd`` or ``session:release-notes``."""
        return f"#{self.value}" if self.kind == "id" else f"{NAME_PREFIX}{self.value}"


def parse(target: str) -> Ref | None:
    """The reference ``target`` is written as (``#<anything>``, ``session:<anything>``), or
    None for a plain name. The value is not checked here: see :func:`is_id`."""
    if target.startswith("#"):
        return Ref("id", target[1:])
    if target.startswith(NAME_PREFIX):
        return Ref("name", target[len(NAME_PREFIX) :])
    return None


def is_id(value: str) -> bool:
    """True for a well-formed session id (six base36 characters)."""
    return ID_RE.match(value) is not None


def find(text: str) -> list[tuple[int, int, str]]:
    """The references written in ``text``, as (start, end, reference as written), in order.

    ``#<id>`` followed by a word boundary and ``session:<name>``, not preceded by a word
    character, ``#``, ``/`` or ``&`` (a reference so preceded is not one, and hides none
    that begins within it: ``x#ab12cd`` is nothing, ``asession:b-session:cd`` is
    ``session:cd``). Two literal-prefixed scans are ~10× faster than one alternation;
    texts without ``#`` or ``session:`` are not scanned at all.
    """
    found: list[tuple[int, int, str]] = []
    for literal, regex in (("#", _ID_IN_TEXT_RE), (NAME_PREFIX, _NAME_IN_TEXT_RE)):
        if literal in text:
            found.extend((m.start(), m.end(), m.group(0)) for m in _matches(text, regex))
    found.sort()
    return found


def _matches(text: str, regex: re.Pattern[str]) -> Iterator[re.Match[str]]:
    """The matches of ``regex`` in ``text`` that no blocker precedes, in order: after one,
    the next is looked for from its end, after a blocked one from its second character
    (``finditer`` would go on from its end, and miss a reference that begins within it)."""
    blocked, search = _BLOCKER_RE.match, regex.search
    found = search(text)
    while found is not None:
        start = found.start()
        if start and blocked(text, start - 1):
            found = search(text, start + 1)
        else:
            yield found
            found = search(text, found.end())


def find_all(texts: Iterable[str | None]) -> set[str]:
    """Every distinct reference written in ``texts`` (None entries skipped)."""
    refs: set[str] = set()
    for text in texts:
        if text and ("#" in text or NAME_PREFIX in text):
            refs.update(ref for _, _, ref in find(text))
    return refs


def id_of_file(file_name: str) -> str | None:
    """The id a session file answers to as ``#<id>``: the last ``_`` component of its stem
    when that is a well-formed id (``ses_20260817_120000_ab12cd.json`` → ``ab12cd``)."""
    stem = file_name[:-5] if file_name.endswith(".json") else file_name
    if "_" not in stem:
        return None
    ident = stem.rsplit("_", 1)[1]
    return ident if is_id(ident) else None


def id_glob(ident: str) -> str:
    """The filename glob that finds ``#<ident>`` (the format's resolution rule)."""
    return f"*_{ident}.json"


@dataclass(slots=True)
class RefIndex:
    """Resolves references against the files of a sessions folder, as the CLI does."""

    file_names: list[str]
    """Every session file name of the folder, loaded or not: an ``#id`` that matches two
    files is ambiguous even when one of them does not load."""
    published: dict[str, str] = field(default_factory=dict)
    """File name → session name, for the files that load (the link targets)."""
    _by_id: dict[str, list[str]] = field(init=False, repr=False)
    """Id → the file names answering to it."""

    def __post_init__(self) -> None:
        self._by_id = {}
        for file_name in self.file_names:
            ident = id_of_file(file_name)
            if ident is not None:
                self._by_id.setdefault(ident, []).append(file_name)

    def resolve(self, ref: str) -> str | None:
        """``#id`` or ``session:name`` (as written) → the name of the session it opens, or
        None: ``session:<name>`` is the file ``<name>.json``, ``#<id>`` the one file
        matching ``*_<id>.json``; either must load."""
        parsed = parse(ref)
        if parsed is None:
            return None
        if parsed.kind == "name":
            return self.published.get(f"{parsed.value}.json")
        matches = self._by_id.get(parsed.value, [])
        return self.published.get(matches[0]) if len(matches) == 1 else None
