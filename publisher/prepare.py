"""The prepare step: a loaded session as every output uses it.

Between loading (:mod:`.loader`) and rendering, one function turns a session into what the
renderers take: the session redacted when redaction is on, what redaction replaced, the
references it writes to other sessions, and the warnings a user must see about it (a
secret in a name that is not redacted, a file name that does not match the session
name). ``polyglav export``, the site build's scan and its render all go through
:func:`prepare`, so redaction cannot be forgotten at one entry point, and the site warns
as the export does.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from . import refs
from .loader import parse_session_bytes, read_session, read_session_bytes
from .model import Session
from .redact import RedactionRecord, Redactor, describe_counts, identifier_findings, redact_recorded


@dataclass(frozen=True, slots=True)
class Prepared:
    """A session ready to render."""

    session: Session
    """The session, redacted when redaction is on."""
    redacted: Counter[str] | None
    """Secrets replaced, by kind; None when redaction is off."""
    refs: frozenset[str]
    """Every ``#id`` / ``session:name`` reference written in its texts."""
    warnings: tuple[str, ...] = field(default=())
    """Lines for the user, each starting with the file name."""
    record: RedactionRecord | None = None
    """What redaction replaced, to redact the same file again without looking for
    anything (:func:`prepare_file`); None when redaction is off."""

    @property
    def redaction_note(self) -> str | None:
        """``3 secrets redacted (2 openai, 1 jwt)``, or None when redaction is off."""
        return None if self.redacted is None else describe_counts(self.redacted)

    @property
    def redacted_total(self) -> int:
        """How many secrets were replaced (0 when redaction is off)."""
        return sum(self.redacted.values()) if self.redacted is not None else 0


def prepare(
    session: Session,
    redactor: Redactor | None,
    source: str = "",
    record: RedactionRecord | None = None,
) -> Prepared:
    """Redact ``session`` (when ``redactor`` is given), find its references, collect its
    warnings. ``source``: the SHA-256 of the bytes of the file ``session`` was parsed from;
    ``record``: what redacting those bytes replaced before (then nothing is looked for:
    :func:`.redact.redact_recorded`)."""
    warnings = name_warnings(session)
    counts: Counter[str] | None = None
    done: RedactionRecord | None = None
    if redactor is not None:
        session, done = redact_recorded(session, redactor, source, record)
        counts = Counter(done.counts)
        warnings.extend(
            f"{session.file_name}: {finding}" for finding in identifier_findings(session, redactor)
        )
    return Prepared(session, counts, frozenset(session_refs(session)), tuple(warnings), done)


def prepare_file(
    path: Path, folder: Path, redactor: Redactor | None, record: RedactionRecord | None = None
) -> Prepared:
    """:func:`prepare` of the session file ``path`` of the sessions folder ``folder``;
    raises :class:`~.loader.SessionLoadError` when it does not load. ``record``: what
    redacting the file replaced when it was read before (used if its bytes are the same)."""
    if redactor is None:
        return prepare(read_session(path, folder), None)
    data = read_session_bytes(path, folder)
    source = hashlib.sha256(data).hexdigest() if record is not None else ""
    return prepare(parse_session_bytes(data, path.name), redactor, source, record)


def session_refs(session: Session) -> set[str]:
    """Every reference written in the session's texts: prompts, answers, thinking, system
    notes, tool outputs and analyses, commands and compaction summaries, error messages."""
    from .model import CommandPart, TextualPart, ToolPart

    texts: list[str | None] = []
    for turn in session.turns:
        for part in turn.parts:
            if isinstance(part, TextualPart):
                texts.append(part.text)
            elif isinstance(part, ToolPart):
                texts.append(part.output)
                texts.append(part.analysis)
            elif isinstance(part, CommandPart):
                texts.append(part.text)
                texts.append(part.summary)
    texts.extend(error.message for error in session.errors)
    return refs.find_all(texts)


class Named(Protocol):
    """A session, or what a listing keeps of one (:class:`.archive.Listed`)."""

    @property
    def file_name(self) -> str: ...

    @property
    def session_name(self) -> str: ...


def name_warnings(session: Named) -> list[str]:
    """A warning when the file name is not ``<session_name>.json``: ``#id`` and
    ``session:<name>`` resolve by file name, so the two names must both be shown."""
    if session.file_name == f"{session.session_name}.json":
        return []
    return [
        f"{session.file_name}: its session_name is {session.session_name!r}, not the file "
        "name; references resolve by file name"
    ]
