"""The typed model of a Polyglav session file.

Only :mod:`publisher.loader` builds these objects from JSON; every renderer reads them.
Every class keeps the fields it does not know in ``extra`` (a newer Polyglav may write
them), so they can still be shown and nothing in a file is dropped on the way to a page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: JSON value as produced by :func:`json.loads`.
JSON = Any

#: The statuses a turn may have (docs/session-format.md); anything else still renders,
#: marked unknown.
KNOWN_STATUSES = ("running", "ok", "error", "truncated", "empty", "cancelled")

#: The session kinds told apart by the file name prefix.
KINDS = {"ses": "session", "job": "job", "sub": "sub-agent"}

PARKED_ASK_RE = re.compile(r"\A\[answer to parked ask #([^\]\s]+)\] ?")
NOISE_MARKER_RE = re.compile(
    r"\A\[(?P<tool>[^\]\n]{1,200}) result excluded from log, see tool call above for parameters\]\Z"
)
TRUNCATION_RE = re.compile(r"… \(truncated from (?P<chars>\d+) chars\)\Z")


@dataclass(slots=True)
class Part:
    """One entry of a turn's ``parts`` list."""

    type: str
    """The part type as written (``user``, ``text``, ``thinking``, ``tool``, ``command``, ``system``, ``image`` or unknown)."""
    timestamp: str = ""
    """ISO 8601 UTC timestamp as written; empty when missing."""
    extra: dict[str, JSON] = field(default_factory=dict)
    """Fields this version does not know, kept in file order."""


@dataclass(slots=True)
class TextualPart(Part):
    """A part whose payload is one ``text`` field: user, text, thinking, system."""

    text: str = ""
    """The text, verbatim (may hold Markdown, HTML, control characters, lone surrogates)."""

    @property
    def parked_ask_id(self) -> str | None:
        """The ask id when this is a user part answering a parked ask, else ``None``."""
        if self.type != "user":
            return None
        match = PARKED_ASK_RE.match(self.text)
        return match.group(1) if match else None


@dataclass(slots=True)
class Image:
    """An image as a log holds it: its declared media type and its bytes in base64 (an
    extension of the format: a prompt's ``image`` part, a tool result's ``images``)."""

    media_type: str = ""
    """The media type as written (``image/png``); untrusted: the bytes may say otherwise."""
    data: str = ""
    """The image's bytes in base64, as written (may be broken, huge or not an image)."""
    extra: dict[str, JSON] = field(default_factory=dict)
    """Fields this version does not know."""


@dataclass(slots=True)
class ImagePart(Part):
    """An image given with a prompt (a pasted screenshot): part type ``image``."""

    image: Image = field(default_factory=Image)
    """The image (the part's ``media_type`` and ``data``)."""


@dataclass(slots=True)
class ToolPart(Part):
    """One tool call and its result, co-located in one record."""

    name: str = ""
    """The tool's name."""
    input: JSON = None
    """The parsed argument object (any JSON value)."""
    output: str | None = None
    """The result as persisted; ``None`` while the call has not returned (a running turn)."""
    is_error: bool = False
    """True when the result was an error."""
    analysis: str = ""
    """The optional one-line model insight on the result."""
    images: list[Image] = field(default_factory=list)
    """Images the result returned (a Read of a ``.png``), in order: an extension of the
    format (``images``)."""
    interrupted: bool = False
    """True when the person stopped the call while it ran (an interrupt, not a refusal:
    the turn is ``cancelled``); an extension of the format (``interrupted``)."""
    ended_at: str = ""
    """When its result was written (ISO 8601), as the log says; empty when it does not
    (Polyglav's own format: the part's ``timestamp`` is when the call was made). An
    extension of the format (``ended_at``)."""

    @property
    def failed(self) -> bool:
        """True when the call returned an error result (``is_error``) that is not the
        person stopping it (:attr:`interrupted`: its turn is ``cancelled``)."""
        return self.output is not None and self.is_error and not self.interrupted

    @property
    def noise_excluded(self) -> bool:
        """True when the output is the ``noise_tools`` marker written at serialization time."""
        return self.output is not None and NOISE_MARKER_RE.match(self.output) is not None

    @property
    def truncated_from(self) -> int | None:
        """The original length when ``session_tool_max_chars`` truncated the output."""
        if self.output is None:
            return None
        match = TRUNCATION_RE.search(self.output[-80:])
        return int(match.group("chars")) if match else None


@dataclass(slots=True)
class CommandPart(Part):
    """A slash command; a compaction record when ``summary`` is set."""

    text: str = ""
    """The command line as typed, e.g. ``/compact``."""
    summary: str | None = None
    """The compaction summary, or ``None`` for an ordinary command."""
    compact_from: int | None = None
    """The turn index where the kept portion starts (compaction records only)."""

    @property
    def is_compaction(self) -> bool:
        """True for a ``/compact`` record carrying a summary."""
        return self.summary is not None


@dataclass(slots=True)
class UnknownPart(Part):
    """A part of a type this version does not know; every field is in ``extra``."""


USAGE_FIELDS = ("input", "output", "cache_read", "cache_write", "cache_write_1h", "reasoning")
"""The token counts of a :class:`Usage` entry, in the order they are written."""


@dataclass(slots=True)
class Usage:
    """The tokens one request to a model spent: an entry of a turn's ``usage`` (an
    extension of the format, ``docs/format-extensions.md``). Counts are whole numbers of
    tokens; ``cache_write_1h`` is part of ``cache_write`` and ``reasoning`` part of
    ``output``. An entry that does not count has a :attr:`problem` and counts as zero."""

    model: str = ""
    """The model that spent them, as written; empty when the entry names none (the turn's
    :attr:`Turn.model` then)."""
    input: int = 0
    """Input tokens neither read from nor written to the prompt cache."""
    output: int = 0
    """Output tokens, reasoning included."""
    cache_read: int = 0
    """Input tokens read from the prompt cache."""
    cache_write: int = 0
    """Input tokens written to the prompt cache."""
    cache_write_1h: int = 0
    """Of :attr:`cache_write`, those cached for an hour (priced apart by some providers)."""
    reasoning: int = 0
    """Of :attr:`output`, reasoning tokens (0 when the log does not say them apart)."""
    problem: str = ""
    """Why the entry does not count (a count that is not a whole number from 0 to
    :data:`publisher.loader.MAX_TOKENS`, an entry that is not an object...); "" when it
    counts."""


@dataclass(slots=True)
class Turn:
    """One operator prompt (or slash command) and the agent's response."""

    index: int
    """1-based position in the log, as written (``/history`` and ``/print`` use it)."""
    status: str = ""
    """``running``, ``ok``, ``error``, ``truncated``, ``empty``, ``cancelled`` or something newer."""
    started_at: str = ""
    """ISO 8601 UTC start, empty when missing."""
    ended_at: str = ""
    """ISO 8601 UTC end, empty while running."""
    model: str = ""
    """Model that served the turn."""
    provider: str = ""
    """Provider that served the turn."""
    mode: str = ""
    """Agent mode in effect (build, plan or custom)."""
    reasoning: str = ""
    """The reasoning config value, normalised to text (``false`` becomes ``"false"``)."""
    parts: list[Part] = field(default_factory=list)
    """The ordered parts."""
    extra: dict[str, JSON] = field(default_factory=dict)
    """Fields this version does not know."""
    usage: list[Usage] = field(default_factory=list)
    """The tokens its requests to models spent, one entry a request (an extension of the
    format, ``usage``); empty when the log records none (Polyglav's own format)."""
    usage_written: JSON = None
    """The ``usage`` field as written (None when absent): what the Markdown export shows,
    so nothing of it is lost, even the entries that do not count."""

    @property
    def tool_count(self) -> int:
        """Number of tool parts in the turn."""
        return sum(1 for part in self.parts if isinstance(part, ToolPart))


@dataclass(slots=True)
class ErrorEntry:
    """One turn-level failure from the ``errors`` array."""

    code: int | float | str
    """HTTP status where one exists, otherwise 0 (kept as written if not an integer)."""
    message: str = ""
    """The error message."""
    timestamp: str = ""
    """When it happened."""
    extra: dict[str, JSON] = field(default_factory=dict)
    """Fields this version does not know."""


@dataclass(slots=True)
class Permission:
    """One tool permission resolution from the ``permissions`` audit log."""

    tool: str = ""
    """The tool name."""
    action: str = ""
    """The resolved policy action: allow, ask or deny."""
    decision: str = ""
    """The outcome: granted, declined or denied."""
    path: str = ""
    """The tool's path argument, when it has one."""
    timestamp: str = ""
    """When it was resolved."""
    extra: dict[str, JSON] = field(default_factory=dict)
    """Fields this version does not know."""


@dataclass(slots=True)
class Session:
    """A whole session file, loaded."""

    session_name: str
    """The session name (the file name without ``.json`` for well-formed files)."""
    session_id: str = ""
    """Six-character base36 id; empty for explicit names."""
    created_at: str = ""
    """ISO 8601 UTC creation time."""
    updated_at: str = ""
    """ISO 8601 UTC time of the last appended part."""
    parent_id: str = ""
    """Name of the session this one was spawned from, empty for roots."""
    role: str = ""
    """Role that owns the session, empty for a plain root."""
    version: str = ""
    """Polyglav version that created the file, empty for older files."""
    sub_sessions: list[str] = field(default_factory=list)
    """Names of sessions spawned from this one."""
    turns: list[Turn] = field(default_factory=list)
    """The conversation log."""
    errors: list[ErrorEntry] = field(default_factory=list)
    """Turn-level errors."""
    permissions: list[Permission] = field(default_factory=list)
    """The permission audit log."""
    extra: dict[str, JSON] = field(default_factory=dict)
    """Top-level fields this version does not know."""
    file_name: str = ""
    """The file name it was read from (may differ from ``session_name`` in odd files)."""
    title: str = ""
    """A title naming the session (an imported log's, e.g. Claude Code's ``summary`` or
    ``custom-title``); an extension of the format, empty when it has none."""

    @property
    def kind(self) -> str:
        """``ses``, ``job``, ``sub`` or ``named`` (explicit name), from the name's prefix."""
        return kind_of(self.session_name)

    @property
    def tool_calls(self) -> int:
        """Total tool parts over all turns."""
        return sum(turn.tool_count for turn in self.turns)

    @property
    def last_status(self) -> str:
        """Status of the last turn, empty when there are none."""
        return self.turns[-1].status if self.turns else ""

    def turn(self, index: int) -> Turn | None:
        """The turn whose ``index`` field equals ``index`` (first one if duplicated)."""
        for turn in self.turns:
            if turn.index == index:
                return turn
        return None


def kind_of(name: str) -> str:
    """The kind of a session name: ``ses``, ``job``, ``sub`` or ``named``."""
    prefix, sep, _ = name.partition("_")
    return prefix if sep and prefix in KINDS else "named"


@dataclass(slots=True, frozen=True)
class LoadFailure:
    """A file of the sessions folder that does not load, and why."""

    file_name: str
    """The file's name inside the sessions folder."""
    reason: str
    """One line saying why, e.g. ``legacy flat-messages format (no turns)``."""
    size: int = 0
    """Size in bytes (0 when it could not be read)."""
    mtime: float = 0.0
    """Modification time, for ordering."""

    @property
    def name(self) -> str:
        """The session name the file would have (file name without ``.json``)."""
        return self.file_name[:-5] if self.file_name.endswith(".json") else self.file_name
