"""What every importer shares: reading sources safely, building a session document in the
turn format (docs/session-format.md), naming it, writing it atomically and
deterministically, and the stamp store that lets an unchanged source be skipped.

Sources are untrusted and never written: they are opened read-only, line by line, with a
cap on a line's length. A line that cannot be read becomes a :class:`Problem` (one line
naming the file and the line) and, where anything of it could be read, a raw record kept
in the session, so nothing is lost silently.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..audit import utc_time
from ..loader import MAX_INT_DIGITS
from ..write import WriteError, atomic_write

#: JSON value as produced by :func:`json.loads`.
JSON = Any

IMPORTER_VERSION = 6
"""Bumped when a mapping changes, so that sources imported by an older mapping are
imported again although their stamps did not change."""

MAX_LINE_BYTES = 64 * 1024 * 1024
"""Longest source line read (a larger line is reported and skipped, never held)."""

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_NO_TIME = "19700101_000000"


@dataclass(slots=True, frozen=True)
class Problem:
    """Something of a source that could not be imported as it is."""

    path: str
    """The source file."""
    line: int
    """1-based line number, 0 when the problem is about the whole file."""
    reason: str
    """One line saying what was wrong and what was done with it."""

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.reason}"


@dataclass(slots=True)
class Counts:
    """How many source records went where."""

    mapped: int = 0
    """Records turned into parts, errors, permissions or session fields."""
    raw: int = 0
    """Records (or blocks of records) not understood, kept as written in extra fields."""

    def add(self, other: Counts) -> None:
        self.mapped += other.mapped
        self.raw += other.raw


@dataclass(slots=True)
class Result:
    """The sessions converted from one source."""

    documents: Iterable[dict[str, JSON]]
    """The session documents, a main session before its sub-agents (may be produced one
    at a time: read ``counts`` after iterating)."""
    counts: Counts
    """Records mapped and kept raw, over all of them."""
    notes: list[Problem] = field(default_factory=list)
    """What the user should know of an import that did not fail, one line each (a
    sub-agent's log imported without its session's, which is gone)."""
    live: bool = False
    """True when a session reads ``running`` because its source was written to recently:
    the source is converted again at the next import, whatever its stamps."""


# --- names and times -------------------------------------------------------------------


@dataclass(slots=True)
class SourceFile:
    """A source that is one file (a Codex rollout, an aider history)."""

    key: str
    """The state key: the file's absolute path."""
    path: Path
    """The file."""

    @property
    def files(self) -> list[Path]:
        """The files read: the source itself."""
        return [self.path]


def id6(agent: str, source_id: str) -> str:
    """Six base36 characters derived from the agent and the source's own session id: the
    same source always gets the same Polyglav id (``publisher/refs.py``: ``[0-9a-z]{6}``)."""
    digest = hashlib.sha256(f"{agent}\x00{source_id}".encode("utf-8", "surrogatepass")).digest()
    number = int.from_bytes(digest[:8], "big") % 36**6
    chars = []
    for _ in range(6):
        number, rest = divmod(number, 36)
        chars.append(_BASE36[rest])
    return "".join(reversed(chars))


def parse_time(value: JSON) -> datetime | None:
    """An ISO 8601 time (``Z`` accepted), or None."""
    if not isinstance(value, str) or not value or len(value) > 64:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00", 1))
    except ValueError:
        return None


def iso(value: JSON) -> str:
    """A source timestamp in the format's form: ``...Z`` becomes ``...+00:00``; a time that is
    not ISO 8601 is kept as written (text), a missing one is empty."""
    if value is None:
        return ""
    if not isinstance(value, str):
        return json.dumps(value)
    if value.endswith("Z") and parse_time(value) is not None:
        return value[:-1] + "+00:00"
    return value


def _earlier(a: str, b: str) -> bool:
    """True when time ``a`` is known to be before time ``b`` (:func:`..audit.utc_time`:
    naive times read as UTC); False when either is not a time."""
    first, second = utc_time(a), utc_time(b)
    return first is not None and second is not None and first < second


def name_time(value: str) -> str:
    """``YYYYMMDD_HHMMSS`` (UTC) of a timestamp for a session name; naive times are taken as
    written; ``19700101_000000`` when there is none."""
    moment = parse_time(value)
    if moment is None:
        return _NO_TIME
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y%m%d_%H%M%S")


def session_name(kind: str, first_time: str, ident: str) -> str:
    """``ses_20260817_120000_ab12cd`` (or ``sub_...``)."""
    return f"{kind}_{name_time(first_time)}_{ident}"


# --- reading sources -------------------------------------------------------------------


@dataclass(slots=True)
class Line:
    """One line of a JSONL source."""

    number: int
    """1-based line number."""
    value: JSON
    """The parsed JSON value, or None when the line did not parse (see ``text``)."""
    text: str = ""
    """The line's text when it did not parse (kept raw), else empty."""


def _parse_int(digits: str) -> int | float:
    if len(digits) > MAX_INT_DIGITS:
        return float(digits)
    return int(digits)


def _decoder() -> json.JSONDecoder:
    """A decoder for one file's lines (integers too long for ``int`` read as floats)."""
    return json.JSONDecoder(parse_int=_parse_int)


def iter_jsonl(path: Path, problems: list[Problem]) -> Iterator[Line]:
    """The lines of a JSONL file, read one at a time (memory bounded by the longest line).

    Blank lines are skipped. A line over :data:`MAX_LINE_BYTES` is skipped and reported;
    invalid UTF-8 is replaced (U+FFFD) and reported; a line that is not JSON is reported and
    yielded with ``value=None`` and its text, so the caller keeps it raw; a last line without
    a newline that does not parse is reported as being written and not yielded (it is
    imported once complete)."""
    where = str(path)
    try:
        handle = open(path, "rb")  # noqa: SIM115  (read-only: a source is never written)
    except OSError as exc:
        problems.append(Problem(where, 0, f"cannot read: {exc.strerror or exc}"))
        return
    decoder = _decoder()
    with handle:
        number = 0
        while True:
            try:
                data = handle.readline(MAX_LINE_BYTES + 1)
            except OSError as exc:
                problems.append(Problem(where, number + 1, f"cannot read: {exc.strerror or exc}"))
                return
            if not data:
                return
            number += 1
            if len(data) > MAX_LINE_BYTES and not data.endswith(b"\n"):
                while data and not data.endswith(b"\n"):
                    data = handle.readline(1 << 20)
                problems.append(
                    Problem(where, number, f"line longer than {MAX_LINE_BYTES} bytes, skipped")
                )
                continue
            complete = data.endswith(b"\n")
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                text = data.decode("utf-8", "replace")
                problems.append(
                    Problem(where, number, f"invalid UTF-8 at byte {exc.start}, replaced by U+FFFD")
                )
            text = text.removeprefix("\ufeff") if number == 1 else text
            if not text.strip():
                continue
            try:
                value = decoder.decode(text)
            except (ValueError, RecursionError) as exc:
                if not complete:
                    problems.append(
                        Problem(where, number, "truncated last line (being written?), not imported")
                    )
                    return
                reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deep"
                problems.append(Problem(where, number, f"not JSON ({reason}), kept as raw text"))
                yield Line(number, None, text.rstrip("\r\n"))
                continue
            yield Line(number, value)


# --- building a session document -------------------------------------------------------


def text_of(value: JSON) -> str:
    """A value shown as text: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


@dataclass(slots=True)
class SessionBuilder:
    """Accumulates one session in the turn format (docs/session-format.md), as plain JSON
    values in a fixed key order (the file is deterministic)."""

    agent: str
    """Importer name (``claude-code``, ``codex``, ``aider``)."""
    source_path: str
    """The source file, absolute."""
    source_id: str
    """The source's own id of this session (its file name id, a uuid...)."""
    kind: str = "ses"
    """``ses`` or ``sub``."""
    origin: dict[str, JSON] = field(default_factory=dict)
    """More of ``imported_from`` (cwd, version, ...)."""
    extra: dict[str, JSON] = field(default_factory=dict)
    """Other top-level fields (after ``imported_from``)."""
    turns: list[dict[str, JSON]] = field(default_factory=list)
    """The turns built so far."""
    errors: list[dict[str, JSON]] = field(default_factory=list)
    """The ``errors`` array."""
    permissions: list[dict[str, JSON]] = field(default_factory=list)
    """The ``permissions`` array."""
    parent_id: str = ""
    """Name of the parent session (sub-agents)."""
    role: str = ""
    """The role that owns the session (a sub-agent's, as its caller named it)."""
    title: str = ""
    """A title the source gives the session (written only when not empty)."""
    sub_sessions: list[str] = field(default_factory=list)
    """Names of the sub-agent sessions."""
    counts: Counts = field(default_factory=Counts)
    """Records mapped and kept raw."""
    first_time: str = ""
    """The first record's timestamp (the session name's time)."""
    last_time: str = ""
    """The latest record's timestamp."""
    _before: list[JSON] = field(default_factory=list)
    """Raw records seen before the first turn."""
    _early: dict[str, list[JSON]] = field(default_factory=dict)
    """Entries of turn lists (:meth:`attach`) seen before the first turn."""
    _waiting: list[dict[str, JSON]] = field(default_factory=list)
    """Parts (:meth:`leading_part`) written before the first turn, waiting for it."""

    @property
    def ident(self) -> str:
        """The six-character Polyglav id of this session."""
        return id6(self.agent, self.source_id)

    @property
    def name(self) -> str:
        """The session name (and file name without ``.json``)."""
        return session_name(self.kind, self.first_time, self.ident)

    @property
    def current(self) -> dict[str, JSON] | None:
        """The turn being built, if any."""
        return self.turns[-1] if self.turns else None

    def seen(self, timestamp: str) -> None:
        """Note a record's time: the session's first time (its name's) and latest time, and
        the turn's span, which covers every record of the turn: logs write some records
        out of time order (Claude Code's compaction summary, a few ms before the command
        that asked for it), and a turn must not end before it starts."""
        if not timestamp:
            return
        if not self.first_time:
            self.first_time = timestamp
        if not _earlier(timestamp, self.last_time):
            self.last_time = timestamp
        turn = self.current
        if turn is not None:
            started = str(turn["started_at"] or "")
            if not started or _earlier(timestamp, started):
                turn["started_at"] = timestamp
            if not _earlier(timestamp, str(turn["ended_at"] or "")):
                turn["ended_at"] = timestamp

    def start_turn(self, timestamp: str, **fields: JSON) -> dict[str, JSON]:
        """Open a new turn (the previous one is complete)."""
        turn: dict[str, JSON] = {
            "index": len(self.turns) + 1,
            "started_at": timestamp,
            "ended_at": timestamp,
            "status": "ok",
            "model": "",
            "provider": "",
            "mode": "",
            "reasoning": "",
            "parts": [],
        }
        turn.update(fields)
        self.turns.append(turn)
        if self._before:
            turn["raw_records"] = self._before
            self._before = []
        for key, entries in self._early.items():
            turn[key] = entries
        self._early = {}
        if self._waiting:
            turn["parts"].extend(self._waiting)
            self._waiting = []
        self.seen(timestamp)
        return turn

    def turn(self, timestamp: str) -> dict[str, JSON]:
        """The current turn, opening one (without a prompt) when there is none."""
        return self.current or self.start_turn(timestamp)

    def part(self, ptype: str, timestamp: str, **fields: JSON) -> dict[str, JSON]:
        """Append a part to the current turn; ``fields`` after ``type``, then the time."""
        part: dict[str, JSON] = {"type": ptype}
        part.update(fields)
        part["timestamp"] = timestamp
        parts = self.turn(timestamp)["parts"]
        parts.append(part)
        self.seen(timestamp)
        return part

    def leading_part(self, ptype: str, timestamp: str, **fields: JSON) -> dict[str, JSON]:
        """A part that comes with the turn about to start (what an agent's client injects
        before the first prompt: instructions, the environment, inherited context): appended
        to the current turn when there is one, else kept and placed first in the next turn
        opened, so that it never makes a turn of its own (unless no turn ever opens)."""
        if self.current is not None:
            return self.part(ptype, timestamp, **fields)
        part: dict[str, JSON] = {"type": ptype}
        part.update(fields)
        part["timestamp"] = timestamp
        self._waiting.append(part)
        self.seen(timestamp)
        return part

    def tool(self, timestamp: str, name: str, tool_input: JSON) -> dict[str, JSON]:
        """A tool part waiting for its result (``output`` null until it arrives)."""
        return self.part(
            "tool",
            timestamp,
            name=name,
            input=tool_input,
            output=None,
            is_error=False,
            analysis="",
        )

    def keep_raw(self, record: JSON, line: int) -> None:
        """Keep a record that is not mapped, as written, in the turn's ``raw_records``."""
        self.counts.raw += 1
        entry = {"line": line, "record": record}
        turn = self.current
        if turn is None:
            self._before.append(entry)
        else:
            turn.setdefault("raw_records", []).append(entry)

    def attach(self, key: str, entry: JSON) -> None:
        """Append ``entry`` to the current turn's ``key`` list (an extra field); before the
        first turn, to the first turn's (or the session's, when no turn ever starts)."""
        turn = self.current
        if turn is None:
            self._early.setdefault(key, []).append(entry)
        else:
            turn.setdefault(key, []).append(entry)

    def error(self, code: JSON, message: str, timestamp: str, **extra: JSON) -> None:
        """Append an ``errors`` entry; the current turn's status becomes ``error``."""
        entry: dict[str, JSON] = {"code": code, "message": message, "timestamp": timestamp}
        entry.update(extra)
        self.errors.append(entry)
        turn = self.current
        if turn is not None:
            turn["status"] = "error"
        self.seen(timestamp)

    def document(self) -> dict[str, JSON]:
        """The session file's JSON value."""
        if self._waiting:
            self.start_turn(str(self._waiting[0]["timestamp"] or ""))
        if self._before:
            self.extra.setdefault("raw_records", []).extend(self._before)
            self._before = []
        for key, entries in self._early.items():
            self.extra.setdefault(key, []).extend(entries)
        self._early = {}
        origin: dict[str, JSON] = {
            "agent": self.agent,
            "path": self.source_path,
            "session_id": self.source_id,
        }
        origin.update(self.origin)
        origin["importer_version"] = IMPORTER_VERSION
        doc: dict[str, JSON] = {
            "created_at": self.first_time,
            "errors": self.errors,
            "parent_id": self.parent_id,
            "permissions": self.permissions,
            "role": self.role,
            "session_id": self.ident,
            "session_name": self.name,
            "sub_sessions": self.sub_sessions,
        }
        if self.title:
            doc["title"] = self.title
        doc |= {
            "turns": self.turns,
            "updated_at": self.last_time,
            "version": "",
            "imported_from": origin,
        }
        for key, value in self.extra.items():
            doc.setdefault(key, value)
        return doc


def link_sub_session(parent: SessionBuilder, sub: SessionBuilder) -> None:
    """Link a sub-agent's session to its parent's both ways (the format's ``parent_id`` and
    ``sub_sessions``); call once both names are final (their first times are known)."""
    sub.parent_id = parent.name
    if sub.name not in parent.sub_sessions:
        parent.sub_sessions.append(sub.name)


# --- writing ---------------------------------------------------------------------------


def dump(doc: dict[str, JSON]) -> bytes:
    """Deterministic JSON bytes of a session (UTF-8, trailing newline): one top-level field
    a line, and each turn, error and permission on a line of its own, written compactly.
    (An indented dump goes through the json module's pure-Python encoder: it was two thirds
    of an import's time, and indentation a fifth of the file.) Lone surrogates (legal in
    JSON, not in UTF-8) are written as ``\\udXXX`` escapes."""
    return b"".join(dump_chunks(doc))


def dump_chunks(doc: dict[str, JSON]) -> list[bytes]:
    """:func:`dump`'s bytes as a list of pieces (a line each), so a large session is never
    held twice over as one text and its bytes."""
    try:
        return list(_layout(doc, "utf-8", ascii_only=False))
    except UnicodeEncodeError:
        return list(_layout(doc, "ascii", ascii_only=True))


def _layout(doc: dict[str, JSON], encoding: str, ascii_only: bool) -> Iterator[bytes]:
    def compact(value: JSON) -> str:
        return json.dumps(value, ensure_ascii=ascii_only, separators=(",", ":"))

    yield b"{\n"
    last = len(doc) - 1
    for number, (key, value) in enumerate(doc.items()):
        end = ",\n" if number < last else "\n"
        if isinstance(value, list) and value:
            yield f"  {compact(key)}: [\n".encode(encoding)
            final = len(value) - 1
            for index, item in enumerate(value):
                yield f"    {compact(item)}{',' if index < final else ''}\n".encode(encoding)
            yield f"  ]{end}".encode(encoding)
        else:
            yield f"  {compact(key)}: {compact(value)}{end}".encode(encoding)
    yield b"}\n"


def _holds(path: Path, chunks: list[bytes]) -> bool:
    """Whether the file ``path`` holds exactly the bytes of ``chunks`` (read piecewise)."""
    try:
        if path.is_symlink() or path.stat().st_size != sum(map(len, chunks)):
            return False
        with open(path, "rb") as handle:
            return all(handle.read(len(chunk)) == chunk for chunk in chunks)
    except OSError:
        return False


def origin_of(path: Path) -> dict[str, JSON] | None:
    """The ``imported_from`` of an existing session file, None when it has none (a native
    Polyglav session) or cannot be read."""
    try:
        with open(path, "rb") as handle:
            value = json.loads(handle.read())
    except (OSError, ValueError, RecursionError):
        return None
    origin = value.get("imported_from") if isinstance(value, dict) else None
    return origin if isinstance(origin, dict) else None


def write_session(folder: Path, doc: dict[str, JSON]) -> bool:
    """Write ``doc`` as ``<session_name>.json`` unless the file already holds exactly these
    bytes; True when written. Refuses (``WriteError``) to replace a file that was not
    imported from the same source (a native session, or an id collision)."""
    path = folder / f"{doc['session_name']}.json"
    chunks = dump_chunks(doc)
    if _holds(path, chunks):
        return False
    if path.exists() or path.is_symlink():
        mine = doc["imported_from"]
        theirs = origin_of(path)
        if theirs is None or (theirs.get("agent"), theirs.get("session_id")) != (
            mine["agent"],
            mine["session_id"],
        ):
            raise WriteError(
                f"{path}: exists and was not imported from {mine['agent']} session "
                f"{mine['session_id']!r}; left unchanged"
            )
    atomic_write(path, chunks)
    return True


# --- the stamp store -------------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class Stamp:
    """What identifies a source file's content cheaply."""

    path: str
    """The file, absolute."""
    size: int
    """Size in bytes."""
    mtime_ns: int
    """Modification time in nanoseconds."""
    sha256: str = ""
    """Hash of the content (computed only when size or time changed)."""

    @classmethod
    def of(cls, path: Path) -> Stamp:
        st = os.stat(path)
        return cls(str(path), st.st_size, st.st_mtime_ns)

    def same_file_state(self, other: Stamp) -> bool:
        return (self.path, self.size, self.mtime_ns) == (other.path, other.size, other.mtime_ns)

    def with_hash(self) -> Stamp:
        digest = hashlib.sha256()
        with open(self.path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        return Stamp(self.path, self.size, self.mtime_ns, digest.hexdigest())


@dataclass(slots=True)
class SourceState:
    """What the previous import of one source recorded."""

    stamps: list[Stamp]
    """The stamps of the files the source was read from."""
    sessions: list[str]
    """The session names it produced."""
    importer_version: int = IMPORTER_VERSION
    """The mapping version that produced them."""


class StateStore:
    """``import-state.json``: per source key, the stamps of its files and the sessions it
    produced. Kept beside the sessions folder (``.polyglav/import-state.json``), never among
    its ``*.json`` files (each of which is a session); in a bare folder of sessions, as a
    hidden file (which :func:`publisher.loader.is_session_file` skips)."""

    def __init__(self, sessions_dir: Path) -> None:
        if sessions_dir.name == "sessions" and sessions_dir.parent.name == ".polyglav":
            self.path = sessions_dir.parent / "import-state.json"
        else:
            self.path = sessions_dir / ".polyglav-import-state.json"
        self.sources: dict[str, SourceState] = {}
        self._load()

    def _load(self) -> None:
        try:
            with open(self.path, "rb") as handle:
                doc = json.loads(handle.read())
            for key, entry in doc["sources"].items():
                self.sources[str(key)] = SourceState(
                    stamps=[
                        Stamp(str(s[0]), int(s[1]), int(s[2]), str(s[3])) for s in entry["files"]
                    ],
                    sessions=[str(name) for name in entry["sessions"]],
                    importer_version=int(entry.get("importer_version", 0)),
                )
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
            self.sources = {}

    def save(self) -> None:
        doc = {
            "version": 1,
            "sources": {
                key: {
                    "files": [[s.path, s.size, s.mtime_ns, s.sha256] for s in state.stamps],
                    "sessions": state.sessions,
                    "importer_version": state.importer_version,
                }
                for key, state in sorted(self.sources.items())
            },
        }
        atomic_write(self.path, [json.dumps(doc, ensure_ascii=False, indent=1) + "\n"])
