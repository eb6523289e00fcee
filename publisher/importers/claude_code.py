"""Claude Code transcripts: ``~/.claude/projects/<project>/<session>.jsonl``.

One JSON object per line, with ``type`` ``user``, ``assistant``, ``system`` (and
``progress``, ``summary``, ``file-history-snapshot``, ``queue-operation``...). User and
assistant lines carry an Anthropic ``message`` whose ``content`` is a string or blocks
(``text``, ``thinking``, ``tool_use``, ``tool_result``). Sub-agents are written either into
the session file (``isSidechain: true`` lines) or, since 2.x, to
``<session>/subagents/agent-<id>.jsonl``.

The mapping:

=====================================  ==================================================
Claude Code                            Polyglav
=====================================  ==================================================
user line, a prompt                    a new turn with a ``user`` part (``permissionMode``
                                       becomes the turn's ``mode``)
``<command-name>`` user line           a new turn with a ``command`` part (``/model x``)
``<local-command-stdout>``, ``isMeta``  ``system`` part
``text`` / ``thinking`` block          ``text`` / ``thinking`` part
``tool_use`` + its ``tool_result``     one ``tool`` part (``is_error`` kept); a rejected
                                       call also becomes a ``declined`` permission
``compact_boundary`` + summary line    a ``/compact`` command record with the summary
``isApiErrorMessage`` line             an ``errors`` entry; the turn's status ``error``
``[Request interrupted by user]``      ``system`` part; the turn's status ``cancelled``
``progress`` line (hook, bash, agent,   an entry of ``claude_code_progress`` on the tool
``waiting_for_task``)                   part it reports on (else on the turn), without
                                       what the session already carries (see below)
sidechain lines, ``subagents/*.jsonl``  ``sub_`` sessions, linked both ways; the
                                       ``Task`` part names its sub-session
anything else                          kept as written in the turn's ``raw_records``
=====================================  ==================================================

The fields of a line that are not mapped (``uuid``, ``usage``, ``toolUseResult``...) stay
on the part in ``claude_code`` (``claude_code_result`` for a tool result's line), without
the fields every line repeats (``sessionId``, ``cwd``, ``version``...) when they equal the
session's, which are in ``imported_from``.

``progress`` lines are most of a real log's lines (a hook run after every tool call, a
snapshot of a running command's output every second, a copy of each sub-agent message).
Each becomes a compact entry ``{"line", "data", "toolUseID", "uuid", "parentUuid",
"timestamp"}`` on the tool part whose id is its ``parentToolUseID`` (which is then left
out); a field of ``data`` that repeats, exactly, text the session already carries is left
out and named in the entry's ``same_as`` with where to find it again:

- ``bash_progress``: ``output`` (the last lines) → ``["fullOutput", start, end]``;
  ``fullOutput`` → ``["output", start, end]`` (a slice of the tool part's output) or
  ``["progress", j, start, end]`` (a slice of the ``fullOutput`` kept by entry ``j`` of the
  same list);
- ``agent_progress``: ``prompt`` → ``["input", "prompt"]`` (the Task call's prompt);
  ``message`` → ``["sub_session", uuid]`` when the sub-agent's own file holds a line with
  that ``uuid`` and the same values for every field of the copy (its part carries the
  ``uuid`` in ``claude_code``).

Progress of another ``data.type`` is kept raw. Likewise a tool result line's
``toolUseResult`` (in ``claude_code_result``) leaves out a string equal to an input field of
the call (``newString``, ``content``...) or found in its output (``stdout``), named in
``toolUseResult_same_as`` (``["input", key]``, ``["output", start, end]``).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..render.view import plural
from .common import JSON, Counts, Problem, Result, SessionBuilder, iso, iter_jsonl, parse_time

AGENT = "claude-code"
DEFAULT_SOURCE = "~/.claude/projects"

ENVELOPE = (
    "sessionId",
    "cwd",
    "version",
    "gitBranch",
    "userType",
    "slug",
    "isSidechain",
    "agentId",
)
"""Fields repeated on every line; kept once in ``imported_from`` (as first seen) and on a
part only where a line differs."""

INTERRUPTS = ("[Request interrupted by user]", "[Request interrupted by user for tool use]")
INTERRUPTED = "[Request interrupted by user"
"""How a tool result or a line says the person stopped the run."""
REJECTED = "The user doesn't want to proceed with this tool use."
RAN = ("bash_progress", "agent_progress", "waiting_for_task")
"""Progress that shows a call was running (a rejected call that ran was interrupted)."""
NOTICE_TAGS = (
    "ide_opened_file",
    "ide_selection",
    "ide_diagnostics",
    "system-reminder",
    "user-prompt-submit-hook",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "task-notification",
    "bash-stdout",
    "bash-stderr",
)
"""Elements the client writes into a user line (not something the person typed): a text
block made only of them is a ``system`` note of the turn it arrived in."""
NOTICE_OPEN_RE = re.compile(r"\s*<(" + "|".join(map(re.escape, NOTICE_TAGS)) + r")>")
TITLE_TYPES = {
    "custom-title": ("customTitle", "title"),
    "ai-title": ("aiTitle", "title"),
    "summary": ("summary",),
}
"""Lines naming a session, and the fields that may hold the name (custom first, then
summary, then AI title: :meth:`Converter.title`)."""
REPLAY_AGENTS = {"acompact": "compaction", "aside_question": "side question"}
"""Sub-agent logs (``agent-<kind>-<id>.jsonl``) that replay the session they serve, and the
role their sub-session gets."""
LIVE_SECONDS = 3600
"""A log modified less than this long before the import may still be written to: a last
turn waiting on a call reads ``running`` (else ``cancelled``), and the source is read again
at the next import, whatever its stamps."""
COMMAND_RE = re.compile(
    r"\A<command-name>(?P<name>[^<]*)</command-name>\n<command-message>(?P<message>[^<]*)"
    r"</command-message>\n<command-args>(?P<args>.*)</command-args>\Z",
    re.DOTALL,
)
COMMAND_LOOSE_RE = re.compile(r"<command-name>(?P<name>[^<]*)</command-name>")
ARGS_RE = re.compile(r"<command-args>(?P<args>.*?)</command-args>", re.DOTALL)
MESSAGE_RE = re.compile(r"\A\s*<command-message>(?P<message>[\w:.-]{1,200})</command-message>")
"""A skill's line (2.1.x): ``<command-message>name</command-message>`` and its arguments,
without ``<command-name>``."""
API_ERROR_RE = re.compile(r"\AAPI Error: (?P<code>\d{1,3}) (?P<message>.*)\Z", re.DOTALL)
PATH_KEYS = ("file_path", "path", "notebook_path", "command", "url", "pattern")
TASK_TOOLS = ("Task", "Agent")
PROGRESS_TYPES = ("hook_progress", "bash_progress", "agent_progress", "waiting_for_task")
"""``progress`` data types mapped (compactly); others are kept raw."""
PROGRESS = "claude_code_progress"
USAGE_KEYS = (
    ("input", "input_tokens"),
    ("output", "output_tokens"),
    ("cache_read", "cache_read_input_tokens"),
    ("cache_write", "cache_creation_input_tokens"),
    ("cache_write_1h", "ephemeral_1h_input_tokens"),
)
"""A usage entry's counts and the fields of a message's ``usage`` they are
(``ephemeral_1h_input_tokens`` is in its ``cache_creation``)."""
SAME_MIN = 64
"""Shortest string of a ``toolUseResult`` left out as a duplicate (a shorter one costs
less than the note saying where it is)."""
"""The extra field holding a part's (or turn's) progress entries."""


@dataclass(slots=True)
class Unit:
    """One Claude Code session: its file and its sub-agents' files."""

    key: str
    """The state key: the main file's absolute path."""
    main: Path
    """``<session>.jsonl``."""
    subagents: list[Path] = field(default_factory=list)
    """``<session>/**/*.jsonl`` (the ``subagents/`` layout), sorted."""
    orphan: bool = False
    """True when :attr:`main` is missing and only its sub-agents' logs are left (Claude Code
    deletes a session's log after ``cleanupPeriodDays``; its folder may outlive it): they
    are imported as sub-sessions whose parent is not known."""
    titles: dict[str, str] = field(default_factory=dict)
    """``leafUuid`` → title, from the ``summary`` lines the logs of its folder start with
    (Claude Code writes a session's title into another session's log)."""
    title_files: list[Path] = field(default_factory=list)
    """The logs of its folder holding nothing but such titles (read for :attr:`titles`)."""

    @property
    def metas(self) -> list[Path]:
        """The ``agent-<id>.meta.json`` beside its sub-agents' logs (their type and task)."""
        found = (p.with_suffix(".meta.json") for p in self.subagents)
        return [p for p in found if p.is_file()]

    @property
    def files(self) -> list[Path]:
        logs = self.subagents if self.orphan else [self.main, *self.subagents]
        return [*logs, *self.metas, *self.title_files]


def discover(sources: Iterable[Path], problems: list[Problem]) -> list[Unit]:
    """The sessions under ``sources`` (a projects folder, a project folder or files)."""
    units: dict[str, Unit] = {}
    beside: dict[Path, Beside] = {}
    """Folder → the sub-agent logs beside its sessions' (:func:`_beside`)."""
    titled: dict[Path, Titles] = {}
    """Folder → the titles its logs start with (:func:`_titles`)."""
    for source in sources:
        if source.is_file():
            files = [source]
        elif source.is_dir():
            files = sorted(source.rglob("*.jsonl"))
        else:
            problems.append(Problem(str(source), 0, "no such file or folder"))
            continue
        for path in files:
            path = path.absolute()
            owner = _owner(path) or _flat_owner(path, beside)
            if owner is None:
                if path in _titles(path.parent, titled).only:
                    continue  # titles of other sessions: read with them
                units.setdefault(str(path), Unit(str(path), path))
            else:  # a sub-agent's log: read with its session (named or not)
                units.setdefault(str(owner), Unit(str(owner), owner, orphan=not owner.is_file()))
    for unit in units.values():
        folder = unit.main.with_suffix("")
        if folder.is_dir():
            unit.subagents = sorted(p.absolute() for p in folder.rglob("*.jsonl") if p.is_file())
        unit.subagents += _beside(unit.main.parent, beside).by_session.get(unit.main.stem, [])
        titles = _titles(unit.main.parent, titled)
        unit.titles, unit.title_files = titles.by_leaf, titles.only
    return [units[key] for key in sorted(units)]


@dataclass(slots=True)
class Titles:
    """The titles the logs of one folder start with (:func:`_titles`)."""

    by_leaf: dict[str, str] = field(default_factory=dict)
    """``leafUuid`` → the title of the session holding that line (the last in file name
    order wins)."""
    only: list[Path] = field(default_factory=list)
    """The logs holding nothing but ``summary`` lines (absolute, in name order): no session
    of their own."""


TITLE_SCAN_LINES = 200
"""Leading lines of a log read for its ``summary`` lines (they come first)."""


def _titles(folder: Path, found: dict[Path, Titles]) -> Titles:
    """The ``summary`` lines the ``*.jsonl`` logs of ``folder`` start with (read once a
    folder, up to the first other line)."""
    if folder not in found:
        titles = found[folder] = Titles()
        for path in sorted(folder.glob("*.jsonl")):
            lines, only = _leading_summaries(path)
            for leaf, title in lines:
                titles.by_leaf[leaf] = title
            if only and lines:
                titles.only.append(path.absolute())
    return found[folder]


def _leading_summaries(path: Path) -> tuple[list[tuple[str, str]], bool]:
    """The (leafUuid, summary) of the ``summary`` lines ``path`` starts with, and whether
    it holds nothing else."""
    out: list[tuple[str, str]] = []
    try:
        with open(path, "rb") as handle:  # read-only: a source is never written
            for _ in range(TITLE_SCAN_LINES):
                line = handle.readline(1 << 16)
                if not line:
                    return out, True
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    return out, False
                if not isinstance(record, dict) or record.get("type") != "summary":
                    return out, False
                leaf, title = record.get("leafUuid"), record.get("summary")
                if isinstance(leaf, str) and isinstance(title, str):
                    out.append((leaf, title))
    except OSError:
        pass
    return out, False


def _flat_owner(path: Path, beside: dict[Path, Beside]) -> Path | None:
    """The session log an ``agent-<id>.jsonl`` file beside it belongs to (Claude Code
    before 2.1 wrote sub-agents' logs into the project folder, each line naming the
    calling session's id), whether or not that log is still there; None for any other
    file."""
    if not path.name.startswith("agent-"):
        return None
    session = _beside(path.parent, beside).session_of.get(path)
    return path.parent / f"{session}.jsonl" if session else None


@dataclass(slots=True)
class Beside:
    """The ``agent-*.jsonl`` logs of one folder that name a session (:func:`_beside`)."""

    session_of: dict[Path, str] = field(default_factory=dict)
    """Each log (absolute) → the id of the session its first lines name."""
    by_session: dict[str, list[Path]] = field(default_factory=dict)
    """Each session id → its logs, in name order."""


def _beside(folder: Path, found: dict[Path, Beside]) -> Beside:
    """The ``agent-*.jsonl`` logs of ``folder`` by the session id their first lines name
    (read once a folder, into ``found``; a log naming none, or its own name, is left out)."""
    if folder not in found:
        agents = found[folder] = Beside()
        for path in sorted(folder.glob("agent-*.jsonl")):
            session = _first_session_id(path)
            if session and session != path.stem and "/" not in session and session[0] != ".":
                agents.session_of[path.absolute()] = session
                agents.by_session.setdefault(session, []).append(path.absolute())
    return found[folder]


def _first_session_id(path: Path, lines: int = 20) -> str:
    """The ``sessionId`` of the first of the first ``lines`` lines of ``path`` that has one,
    "" when none has (or the file cannot be read)."""
    try:
        with open(path, "rb") as handle:  # read-only: a source is never written
            for _ in range(lines):
                line = handle.readline(1 << 20)
                if not line:
                    break
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                session = record.get("sessionId") if isinstance(record, dict) else None
                if isinstance(session, str) and session:
                    return session
    except OSError:
        pass
    return ""


def _owner(path: Path) -> Path | None:
    """The main session file a ``<session>/.../x.jsonl`` file belongs to (up to four
    folders up: ``<session>/subagents/workflows/<id>/agent-x.jsonl``): one that exists, or
    the ``<session>.jsonl`` of a ``<session>/subagents/`` folder even when it is gone; None
    for a session's own log."""
    folders = [folder for folder in list(path.parents)[:4] if folder.name]
    for folder in folders:
        candidate = folder.parent / f"{folder.name}.jsonl"
        if candidate.is_file():
            return candidate
    for folder in folders:
        if folder.name == "subagents" and folder.parent.name:
            session = folder.parent
            return session.parent / f"{session.name}.jsonl"
    return None


def _texts(content: JSON) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
    return []


def _command(text: str) -> tuple[str, bool]:
    """The command line of a ``<command-name>`` message, and whether the message is exactly
    what that line writes (else the original is kept beside it)."""
    match = COMMAND_RE.match(text)
    if match:
        name, args = match.group("name"), match.group("args")
        line = f"{name} {args}" if args else name
        exact = match.group("message") == name.lstrip("/")
        return line, exact
    loose = COMMAND_LOOSE_RE.search(text)
    skill = MESSAGE_RE.match(text)
    name = loose.group("name") if loose else f"/{skill.group('message')}" if skill else ""
    args_match = ARGS_RE.search(text)
    args = args_match.group("args") if args_match else ""
    return (f"{name} {args}" if args else name), False


def _notice(text: str) -> bool:
    """Whether ``text`` is made only of elements the client injects (:data:`NOTICE_TAGS`)."""
    end = len(text.rstrip())
    position = 0
    while position < end:
        match = NOTICE_OPEN_RE.match(text, position)
        if match is None:
            return False
        close = text.find(f"</{match.group(1)}>", match.end())
        if close < 0:
            return False
        position = close + len(match.group(1)) + 3
    return end > 0


def _image(block: JSON) -> dict[str, JSON] | None:
    """An ``image`` content block with base64 data as the format's image fields
    (``media_type``, ``data``; what else the block holds in ``block``), None for any other
    block."""
    if not isinstance(block, dict) or block.get("type") != "image":
        return None
    source = block.get("source")
    if not (
        isinstance(source, dict)
        and source.get("type") == "base64"
        and isinstance(source.get("media_type"), str)
        and isinstance(source.get("data"), str)
    ):
        return None
    image: dict[str, JSON] = {"media_type": source["media_type"], "data": source["data"]}
    rest: dict[str, JSON] = {k: v for k, v in block.items() if k not in ("type", "source")}
    more = {k: v for k, v in source.items() if k not in ("type", "media_type", "data")}
    if more:
        rest["source"] = more
    if rest:
        image["block"] = rest
    return image


def _payload(record: dict[str, JSON]) -> bytes:
    """A digest of what a line says: a sub-agent log's line replaying the session's has the
    same. A message line's type, message and result, in their order (a replay is the same
    object written again); a ``progress`` line's type, data type and ids (its data is most
    of a log's bytes)."""
    if record.get("type") == "progress":
        data = record.get("data")
        said: list[JSON] = [
            "progress",
            data.get("type") if isinstance(data, dict) else None,
            record.get("parentToolUseID"),
            record.get("toolUseID"),
        ]
    else:
        said = [record.get(key) for key in ("type", "message", "toolUseResult")]
    text = json.dumps(said, ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _count(value: JSON) -> bool:
    """Whether ``value`` is a count (an integer, not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _path_arg(tool_input: JSON) -> str:
    if isinstance(tool_input, dict):
        for key in PATH_KEYS:
            value = tool_input.get(key)
            if isinstance(value, str):
                return value
    return ""


class Converter:
    """Builds one session (or sub-agent session) from its lines."""

    def __init__(
        self,
        builder: SessionBuilder,
        copies: dict[str, dict[str, JSON]] | None = None,
        replays: dict[str, bytes] | None = None,
    ) -> None:
        self.b = builder
        self.replays = replays
        """uuid → :func:`_payload` of the lines of the session this log serves: a line
        saying the same under the same uuid is a replay, not imported twice (None: this is
        the session's own log, whose lines are recorded in :attr:`payloads`)."""
        self.payloads: dict[str, bytes] = {}
        """uuid → :func:`_payload` of this log's lines (a session's own log, when it has
        sub-agents' logs to compare with)."""
        self.track = False
        """Whether :attr:`payloads` is filled."""
        self.replayed: list[int] = []
        """Line numbers of the lines left out as replays."""
        self.uuids: list[str] = []
        """The uuids of the lines imported, in order (which titles name this session)."""
        self.titles: dict[str, str] = {}
        """The last title of each kind a line of this log gave (:data:`TITLE_TYPES`)."""
        self.leaf_titles: dict[str, str] = {}
        """``leafUuid`` → the title a ``summary`` line of this log gives it."""
        self.compactions: list[dict[str, JSON]] = []
        """The ``/compact`` records of compaction boundaries, in order (a compaction's own
        log is linked to the nearest in time: :func:`_link_compactions`)."""
        self.refusals: list[tuple[dict[str, JSON], dict[str, JSON], str]] = []
        """(tool part, its turn, time) of each call the user refused or stopped, decided by
        :meth:`settle` once what ran is known."""
        self.copies: dict[str, dict[str, JSON]] = {} if copies is None else copies
        """uuid → the ``agent_progress`` entry holding a copy of that sub-agent line (the
        main session's, shared with its sub-agents' converters)."""
        self.tools: dict[str, dict[str, JSON]] = {}
        """tool_use id → its tool part (progress lines are placed on it)."""
        self.envelope: dict[str, JSON] = {}
        self.pending: dict[str, dict[str, JSON]] = {}
        """tool_use id → its tool part, until the result arrives."""
        self.tasks: dict[str, dict[str, JSON]] = {}
        """tool_use id → the part of a Task call (its sub-agent is linked later)."""
        self.task_agents: dict[str, str] = {}
        """tool_use id → the agent id its result names."""
        self.compaction: dict[str, JSON] | None = None
        """The ``/compact`` record waiting for its summary line."""
        self.spent: dict[str, dict[str, JSON]] = {}
        """message id → its turn's usage entry: a message is written on one line per
        content block, each repeating its usage, and counts once (shared by the
        converters of one session's logs, :func:`convert`)."""

    # -- helpers --

    def _left(self, record: dict[str, JSON], used: tuple[str, ...]) -> dict[str, JSON]:
        if "sessionId" in record and (
            not self.envelope or any(k in record and k not in self.envelope for k in ENVELOPE)
        ):
            # as first seen; a field first written on a later line (``slug``) joins then
            fresh = {k: record[k] for k in ENVELOPE if k in record and k not in self.envelope}
            self.envelope.update(fresh)
            origin = self.b.origin
            for key in ("cwd", "version", "gitBranch", "slug"):
                if isinstance(fresh.get(key), str):
                    origin.setdefault(key, fresh[key])
            origin["envelope"] = self.envelope
        return {
            k: v
            for k, v in record.items()
            if k not in used and not (k in self.envelope and self.envelope[k] == v)
        }

    @staticmethod
    def _attach(part: dict[str, JSON] | None, key: str, fields: dict[str, JSON]) -> None:
        if part is not None and fields:
            part.setdefault(key, {}).update(fields)

    # -- records --

    def feed(self, number: int, record: JSON, raw_text: str = "") -> None:
        if record is None:
            self.b.keep_raw({"unparsed_line": raw_text}, number)
            return
        if not isinstance(record, dict):
            self.b.keep_raw(record, number)
            return
        uuid = record.get("uuid")
        if isinstance(uuid, str):
            if self.replays is not None and self.replays.get(uuid) == _payload(record):
                self.replayed.append(number)
                return
            if self.track:
                self.payloads[uuid] = _payload(record)
            self.uuids.append(uuid)
        if isinstance(uuid, str) and uuid in self.copies:
            self._copy_of(record, self.copies.pop(uuid))
        kind = record.get("type")
        names = TITLE_TYPES.get(kind, ()) if isinstance(kind, str) else ()
        title = next((v for n in names if isinstance(v := record.get(n), str)), None)
        if isinstance(title, str) and title.strip():
            leaf = record.get("leafUuid")
            if kind != "summary" and isinstance(kind, str):
                self.titles[kind] = title  # (the line is kept raw below, as written)
            elif isinstance(leaf, str):
                self.leaf_titles[leaf] = title
        handled = False
        if kind == "progress":
            handled = self._progress(number, record)
        elif kind == "user":
            handled = self._user(record)
        elif kind == "assistant":
            handled = self._assistant(record)
        elif kind == "system":
            handled = self._system(record)
        if handled:
            self.b.counts.mapped += 1
        else:
            self.b.keep_raw(record, number)
            self.b.seen(iso(record.get("timestamp")))

    def _message(self, record: dict[str, JSON]) -> tuple[JSON, dict[str, JSON]] | None:
        message = record.get("message")
        if not isinstance(message, dict) or "content" not in message:
            return None
        left = self._left(record, ("type", "message", "timestamp"))
        rest = {k: v for k, v in message.items() if k != "content"}
        if rest:
            left["message"] = rest
        return message["content"], left

    def _user(self, record: dict[str, JSON]) -> bool:
        found = self._message(record)
        if found is None:
            return False
        content, left = found
        ts = iso(record.get("timestamp"))
        if record.get("isCompactSummary") is True:
            summary = "\n".join(_texts(content)) if not isinstance(content, str) else content
            part = self.compaction
            if part is None:
                turn = self.b.start_turn(ts)
                part = self.b.part(
                    "command", ts, text="/compact", summary=summary, compact_from=turn["index"]
                )
            else:
                part["summary"] = summary
                self.b.seen(ts)
            self.compaction = None
            if not isinstance(content, str):
                left["content"] = content
            self._attach(part, "claude_code_summary", left)
            return True
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            self._results(content, left, record, ts)
            return True
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            return False
        kinds = [self._user_kind(block, record) for block in blocks]
        if "prompt" in kinds or ("image" in kinds and "command" not in kinds):
            # A prompt (or a pasted image) opens its turn before any part of the line: the
            # notices and images that came with it belong to it.
            turn = self.b.start_turn(ts)
            mode = record.get("permissionMode")
            if isinstance(mode, str):
                turn["mode"] = mode
            thinking = record.get("thinkingMetadata")
            if isinstance(thinking, dict) and isinstance(thinking.get("level"), str):
                turn["reasoning"] = thinking["level"]
        first: dict[str, JSON] | None = None
        for block, kind in zip(blocks, kinds, strict=True):
            part = self._user_block(block, kind, ts)
            first = first or part
        if first is None:
            first = self.b.part("system", ts, text="")
        self._attach(first, "claude_code", left)
        return True

    @staticmethod
    def _user_kind(block: JSON, record: dict[str, JSON]) -> str:
        """What a block of a user line is: ``prompt``, ``image``, ``command``, ``notice``
        (a meta line's text, or text the client injected), ``interrupt`` or ``other``."""
        if _image(block) is not None:
            return "image"
        text = block.get("text") if isinstance(block, dict) else None
        if not (isinstance(block, dict) and block.get("type") == "text" and isinstance(text, str)):
            return "other"
        if record.get("isMeta") is True:
            return "notice"
        if "<command-name>" in text or MESSAGE_RE.match(text):
            return "command"
        if text in INTERRUPTS:
            return "interrupt"
        if text.startswith(("<local-command-stdout>", "<local-command-stderr>")) or _notice(text):
            return "notice"
        return "prompt"

    def _user_block(self, block: JSON, kind: str, ts: str) -> dict[str, JSON]:
        if kind == "image":
            image = _image(block)
            assert image is not None
            return self.b.part("image", ts, **image)
        if kind == "other":
            return self._unknown_block(block, ts)
        assert isinstance(block, dict)
        text = block["text"]
        rest = {k: v for k, v in block.items() if k not in ("type", "text")}
        part: dict[str, JSON]
        if kind == "notice":
            part = self.b.part("system", ts, text=text)
        elif kind == "command":
            line, exact = _command(text)
            self.b.start_turn(ts)
            part = self.b.part("command", ts, text=line)
            if not exact:
                rest["content"] = text
        elif kind == "interrupt":
            turn = self.b.turn(ts)
            refused = self.refusals and self.refusals[-1][1] is turn
            part = self.b.part("system", ts, text=text)
            # After a rejected call, the line says the turn stopped there: an interrupt
            # cancels it, a refusal does not (:meth:`settle` tells which it was).
            if turn["status"] == "ok" and not refused:
                turn["status"] = "cancelled"
        else:
            part = self.b.part("user", ts, text=text)
        self._attach(part, "block", rest)
        return part

    def _unknown_block(self, block: JSON, ts: str) -> dict[str, JSON]:
        """A content block this importer does not map (an image, a document...): a system
        note saying so, the block kept as written."""
        self.b.counts.raw += 1
        kind = block.get("type") if isinstance(block, dict) else None
        label = kind if isinstance(kind, str) else type(block).__name__
        return self.b.part(
            "system", ts, text=f"[{label[:80]} block, kept as written]", claude_code_block=block
        )

    def _results(
        self, content: list[JSON], left: dict[str, JSON], record: dict[str, JSON], ts: str
    ) -> None:
        first: dict[str, JSON] | None = None
        for block in content:
            if not (isinstance(block, dict) and block.get("type") == "tool_result"):
                part = (
                    self.b.part("system", ts, text=block["text"])
                    if isinstance(block, dict)
                    and isinstance(block.get("text"), str)
                    and set(block) <= {"type", "text"}
                    else self._unknown_block(block, ts)
                )
                first = first or part
                continue
            tool_id = block.get("tool_use_id")
            found = self.pending.pop(tool_id, None) if isinstance(tool_id, str) else None
            if found is None:
                part = self.b.tool(ts, "", None)
                part["unmatched_tool_use_id"] = tool_id
            else:
                part = found
            result = block.get("content")
            if isinstance(result, str):
                part["output"] = result
            else:
                part["output"] = "\n".join(_texts(result))
                kept: JSON = result
                if isinstance(result, list):
                    images = [_image(b) for b in result]
                    if any(images):
                        part["images"] = [i for i in images if i is not None]
                        numbers = iter(range(len(part["images"])))
                        # each image block names its entry of ``images`` (no base64 twice)
                        kept = [
                            b if i is None else {"type": "image", "images": next(numbers)}
                            for b, i in zip(result, images, strict=True)
                        ]
                part["result_content"] = kept
            part["is_error"] = block.get("is_error") is True
            rest = {
                k: v
                for k, v in block.items()
                if k not in ("type", "tool_use_id", "content", "is_error")
            }
            if "is_error" in block and not isinstance(block["is_error"], bool):
                rest["is_error"] = block["is_error"]
            self._attach(part, "claude_code_result", rest)
            if first is None:
                first = part
                self._attach(part, "claude_code_result", left)
            if ts:
                part["ended_at"] = ts
            self.b.seen(ts)
            tool_result = record.get("toolUseResult")
            output = part["output"]
            if isinstance(output, str) and output.startswith(INTERRUPTED):
                self._interrupted(part, self.b.turn(ts))
            elif (isinstance(output, str) and output.startswith(REJECTED)) or (
                tool_result == "User rejected tool use"
            ):
                self.refusals.append((part, self.b.turn(ts), ts))
            agent_id = tool_result.get("agentId") if isinstance(tool_result, dict) else None
            if isinstance(agent_id, str) and isinstance(tool_id, str):
                self.task_agents[tool_id] = agent_id

    @staticmethod
    def _interrupted(part: dict[str, JSON], turn: dict[str, JSON]) -> None:
        """The person stopped this call while it ran: an interrupt, the turn cancelled."""
        part["interrupted"] = True
        if turn["status"] in ("ok", "running"):
            turn["status"] = "cancelled"

    @staticmethod
    def _ran(part: dict[str, JSON]) -> bool:
        """Whether the log shows the call running (its progress, a PostToolUse hook, or a
        sub-agent of its own)."""
        if part.get("sub_session"):
            return True
        for entry in part.get(PROGRESS, ()):
            data = entry.get("data") if isinstance(entry, dict) else None
            if isinstance(data, dict) and (
                data.get("type") in RAN
                or (data.get("type") == "hook_progress" and data.get("hookEvent") == "PostToolUse")
            ):
                return True
        return False

    def settle(self) -> None:
        """Each call the user refused or stopped (its result is Claude Code's rejection): an
        interrupt when the log shows it had run, else a ``declined`` permission decision.
        (Claude Code writes the same rejection for both.)"""
        for part, turn, ts in self.refusals:
            if self._ran(part):
                self._interrupted(part, turn)
                continue
            self.b.permissions.append(
                {
                    "tool": part["name"],
                    "action": "ask",
                    "decision": "declined",
                    "path": _path_arg(part["input"]),
                    "timestamp": ts,
                }
            )
        self.refusals = []

    def title(self, titles: dict[str, str]) -> str:
        """The session's title: its last ``custom-title``, else the title of its latest
        line that a ``summary`` line names (in any log of its folder, ``titles``), else
        its last ``ai-title``; "" when none."""
        if "custom-title" in self.titles:
            return self.titles["custom-title"]
        named = {**titles, **self.leaf_titles}
        for uuid in reversed(self.uuids):
            if uuid in named:
                return named[uuid]
        return self.titles.get("ai-title", "")

    def _assistant(self, record: dict[str, JSON]) -> bool:
        found = self._message(record)
        if found is None:
            return False
        content, left = found
        ts = iso(record.get("timestamp"))
        if record.get("isApiErrorMessage") is True:
            text = "\n".join(_texts(content))
            match = API_ERROR_RE.match(text)
            left.pop("isApiErrorMessage", None)
            if match:
                extra: dict[str, JSON] = {"text": text} if left else {}
                self.b.error(int(match.group("code")), match.group("message"), ts, **extra)
            else:
                self.b.error(0, text, ts)
            if left:
                self.b.errors[-1]["claude_code"] = left
            return True
        message = record.get("message")
        model = message.get("model") if isinstance(message, dict) else None
        turn = self.b.turn(ts)
        if isinstance(message, dict):
            self._usage(record, message, turn)
        if isinstance(model, str) and model != "<synthetic>":
            if not turn["model"]:
                turn["model"] = model
                turn["provider"] = "anthropic"
            elif turn["model"] != model:
                models = turn.setdefault("models", [turn["model"]])
                if model not in models:
                    models.append(model)
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            return False
        first: dict[str, JSON] | None = None
        for block in blocks:
            part = self._assistant_block(block, ts)
            first = first or part
        if first is None:
            first = self.b.part("text", ts, text="")
        self._attach(first, "claude_code", left)
        return True

    def _usage(
        self, record: dict[str, JSON], message: dict[str, JSON], turn: dict[str, JSON]
    ) -> None:
        """The message's ``usage`` as a usage entry of its turn, once a message (by its
        ``id``, else the line's ``requestId``): a later line of the same message gives the
        larger of each count (a line may hold the usage as the stream began)."""
        usage = message.get("usage")
        if not isinstance(usage, dict):
            return
        found: dict[str, JSON] = {}
        for name, source in USAGE_KEYS:
            value = usage.get(source)
            if source == "ephemeral_1h_input_tokens":
                creation = usage.get("cache_creation")
                value = creation.get(source) if isinstance(creation, dict) else None
            if value is not None:
                found[name] = value
        if all(isinstance(v, int) and not v for v in found.values()):
            return  # none spent (a synthetic message, an API error)
        key: JSON = message.get("id")
        if not isinstance(key, str) or not key:
            key = record.get("requestId")
        entry = self.spent.get(key) if isinstance(key, str) and key else None
        if entry is not None:
            for name, value in found.items():
                kept = entry.get(name)
                if kept is None or (_count(value) and _count(kept) and value > kept):
                    entry[name] = value
            return
        model = message.get("model")
        entry = {"model": model if isinstance(model, str) else ""}
        entry.update(found)
        turn.setdefault("usage", []).append(entry)
        if isinstance(key, str) and key:
            self.spent[key] = entry

    def _assistant_block(self, block: JSON, ts: str) -> dict[str, JSON]:
        if not isinstance(block, dict):
            return self._unknown_block(block, ts)
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            part = self.b.part("text", ts, text=block["text"])
            self._attach(
                part, "block", {k: v for k, v in block.items() if k not in ("type", "text")}
            )
            return part
        if kind == "thinking" and isinstance(block.get("thinking"), str):
            part = self.b.part("thinking", ts, text=block["thinking"])
            rest = {k: v for k, v in block.items() if k not in ("type", "thinking")}
            self._attach(part, "block", rest)
            return part
        if kind == "tool_use" and isinstance(block.get("name"), str):
            part = self.b.tool(ts, block["name"], block.get("input"))
            rest = {k: v for k, v in block.items() if k not in ("type", "name", "input")}
            self._attach(part, "block", rest)
            tool_id = block.get("id")
            if isinstance(tool_id, str):
                self.pending[tool_id] = part
                self.tools[tool_id] = part
                if block["name"] in TASK_TOOLS:
                    self.tasks[tool_id] = part
            return part
        return self._unknown_block(block, ts)

    def _system(self, record: dict[str, JSON]) -> bool:
        subtype = record.get("subtype")
        ts = iso(record.get("timestamp"))
        if subtype == "compact_boundary":
            left = self._left(record, ("type", "subtype", "timestamp"))
            turn = self.b.start_turn(ts)
            self.compaction = self.b.part(
                "command", ts, text="/compact", summary="", compact_from=turn["index"]
            )
            self._attach(self.compaction, "claude_code", left)
            self.compactions.append(self.compaction)
            return True
        if subtype == "local_command" and isinstance(record.get("content"), str):
            left = self._left(record, ("type", "subtype", "timestamp", "content"))
            part = self.b.part("system", ts, text=record["content"])
            self._attach(part, "claude_code", left)
            return True
        if subtype == "api_error":
            left = self._left(record, ("type", "subtype", "timestamp"))
            error = record.get("error")
            code: JSON = 0
            if isinstance(error, dict) and isinstance(error.get("status"), int):
                code = error["status"]
            content = record.get("content")
            message = content if isinstance(content, str) else ""
            self.b.error(code, message, ts, claude_code=left)
            return True
        return False

    def _progress(self, number: int, record: dict[str, JSON]) -> bool:
        data = record.get("data")
        if not isinstance(data, dict) or data.get("type") not in PROGRESS_TYPES:
            return False
        entry: dict[str, JSON] = {"line": number}
        entry.update(self._left(record, ("type",)))
        entry["data"] = dict(data)
        ts = iso(record.get("timestamp"))
        parent = record.get("parentToolUseID")
        host = self.tools.get(parent) if isinstance(parent, str) else None
        if host is None:
            self.b.attach(PROGRESS, entry)
        else:
            del entry["parentToolUseID"]
            host.setdefault(PROGRESS, []).append(entry)
        if data.get("type") == "agent_progress":
            tool_input = host.get("input") if host is not None else None
            prompt = data.get("prompt")
            if (
                isinstance(prompt, str)
                and isinstance(tool_input, dict)
                and tool_input.get("prompt") == prompt
            ):
                del entry["data"]["prompt"]
                entry.setdefault("same_as", {})["prompt"] = ["input", "prompt"]
            message = data.get("message")
            uuid = message.get("uuid") if isinstance(message, dict) else None
            if isinstance(uuid, str):
                self.copies[uuid] = entry
        self.b.seen(ts)
        return True

    @staticmethod
    def _copy_of(record: dict[str, JSON], entry: dict[str, JSON]) -> None:
        """A sub-agent line whose copy an ``agent_progress`` entry holds: the copy is left
        out when every one of its fields equals the line's."""
        data = entry["data"]
        message = data.get("message")
        if isinstance(message, dict) and all(
            key in record and record[key] == value for key, value in message.items()
        ):
            del data["message"]
            entry.setdefault("same_as", {})["message"] = ["sub_session", record["uuid"]]

    @staticmethod
    def _compact_bash(part: dict[str, JSON]) -> None:
        """Leave out of a tool part's ``bash_progress`` entries the output text that its
        output (or a later entry's) already holds."""
        entries = part.get(PROGRESS)
        if not isinstance(entries, list):
            return
        output = part.get("output")
        kept: list[tuple[int, str]] = []
        """(index, fullOutput) of later entries that keep their fullOutput."""
        for index in range(len(entries) - 1, -1, -1):
            entry = entries[index]
            data = entry["data"]
            if data.get("type") != "bash_progress" or "same_as" in entry:
                continue
            full = data.get("fullOutput")
            if not isinstance(full, str):
                continue
            same: dict[str, JSON] = {}
            tail = data.get("output")
            if isinstance(tail, str) and (start := full.find(tail)) >= 0:
                del data["output"]
                same["output"] = ["fullOutput", start, start + len(tail)]
            if isinstance(output, str) and (start := output.find(full)) >= 0:
                del data["fullOutput"]
                same["fullOutput"] = ["output", start, start + len(full)]
            else:
                for later, text in reversed(kept):
                    if (start := text.find(full)) >= 0:
                        del data["fullOutput"]
                        same["fullOutput"] = ["progress", later, start, start + len(full)]
                        break
                else:
                    kept.append((index, full))
            if same:
                entry["same_as"] = same

    @staticmethod
    def _compact_result(part: dict[str, JSON]) -> None:
        """Leave out of a tool result's ``toolUseResult`` the strings (of 64 characters or
        more) that equal one of the call's input fields (``newString``, ``content``...) or
        are a slice of its output (``stdout``); ``toolUseResult_same_as`` names where."""
        extra = part.get("claude_code_result")
        result = extra.get("toolUseResult") if isinstance(extra, dict) else None
        if not isinstance(extra, dict) or not isinstance(result, dict):
            return
        tool_input = part.get("input")
        output = part.get("output")
        same: dict[str, JSON] = {}
        for key, value in result.items():
            if not isinstance(value, str) or len(value) < SAME_MIN:
                continue
            snake = re.sub(r"(?<=[a-z])([A-Z])", r"_\1", key).lower()
            named = [k for k in dict.fromkeys((key, snake)) if isinstance(tool_input, dict)
                     and tool_input.get(k) == value]  # fmt: skip
            if named:
                same[key] = ["input", named[0]]
            elif isinstance(output, str) and (start := output.find(value)) >= 0:
                same[key] = ["output", start, start + len(value)]
        file = result.get("file")
        data = file.get("base64") if isinstance(file, dict) else None
        images = part.get("images")
        if isinstance(data, str) and isinstance(images, list) and isinstance(file, dict):
            # a Read of an image: its base64 again, as the result's image block has it
            for number, image in enumerate(images):
                if image.get("data") == data:
                    result = {**result, "file": {k: v for k, v in file.items() if k != "base64"}}
                    extra["toolUseResult"] = result
                    same["file.base64"] = ["images", number]
                    break
        if same:
            extra["toolUseResult"] = {k: v for k, v in result.items() if k not in same}
            extra["toolUseResult_same_as"] = same

    def finish(self, live: bool = False) -> None:
        """Close the log: tool results compacted; a call that never returned leaves its
        turn ``cancelled``, or ``running`` when it is the last turn of a ``live`` log."""
        for part in self.tools.values():
            if PROGRESS in part:
                self._compact_bash(part)
            self._compact_result(part)
        turns = self.b.turns
        for tool_id, part in self.pending.items():
            part.setdefault("block", {}).setdefault("id", tool_id)
        if self.pending and turns:
            last = turns[-1]
            for turn in turns:
                waiting = any(
                    p.get("type") == "tool" and p.get("output") is None for p in turn["parts"]
                )
                if waiting and turn["status"] == "ok":
                    turn["status"] = "running" if turn is last and live else "cancelled"


def _live(unit: Unit) -> bool:
    """Whether the session's log was modified in the last :data:`LIVE_SECONDS` (it may
    still be written to)."""
    try:
        modified = max(path.stat().st_mtime for path in unit.files)
    except (OSError, ValueError):
        return False
    return time.time() - modified < LIVE_SECONDS


def _meta(path: Path) -> dict[str, str]:
    """The ``agentType`` and ``description`` of a sub-agent log's ``.meta.json``."""
    try:
        with open(path.with_suffix(".meta.json"), "rb") as handle:
            value = json.loads(handle.read(1 << 20))
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(value, dict):
        return {}
    return {k: v for k in ("agentType", "description") if isinstance(v := value.get(k), str)}


def convert(unit: Unit, problems: list[Problem]) -> Result:
    """Read a session and its sub-agents; the sessions in the session format
    (docs/session-format.md)."""
    main_id = unit.main.stem
    main = SessionBuilder(AGENT, str(unit.main), main_id)
    converter = Converter(main)
    converter.track = bool(unit.subagents)
    sidechains: dict[str, Converter] = {}
    chain_root: dict[str, str] = {}
    for line in () if unit.orphan else iter_jsonl(unit.main, problems):
        record = line.value
        if isinstance(record, dict) and record.get("isSidechain") is True:
            key = _chain_key(record, chain_root)
            sub = sidechains.get(key)
            if sub is None:
                sub = Converter(
                    SessionBuilder(AGENT, str(unit.main), f"{main_id}/{key}", "sub"),
                    converter.copies,
                )
                sub.spent = converter.spent
                sidechains[key] = sub
            sub.feed(line.number, record)
            continue
        converter.feed(line.number, record, line.text)
    subs: list[tuple[str, Converter]] = list(sidechains.items())
    replays: list[JSON] = []
    for path in unit.subagents:
        folder = unit.main.with_suffix("")
        rel = (
            path.relative_to(folder).with_suffix("").as_posix()
            if path.is_relative_to(folder)
            else path.stem  # beside the session's log (before 2.1)
        )
        sub = Converter(
            SessionBuilder(AGENT, str(path), f"{main_id}/{rel}", "sub"),
            converter.copies,
            converter.payloads,
        )
        sub.spent = converter.spent
        for line in iter_jsonl(path, problems):
            sub.feed(line.number, line.value, line.text)
        agent = path.stem.removeprefix("agent-")
        kind = agent.rsplit("-", 1)[0] if "-" in agent else ""
        if kind in REPLAY_AGENTS:
            sub.b.role = REPLAY_AGENTS[kind]
        elif meta := _meta(path):
            sub.b.role = meta.get("agentType", "")
            if "description" in meta:
                sub.b.extra["task"] = {"description": meta["description"]}
        if sub.replayed:
            entry = {"path": str(path), "lines": len(sub.replayed)}
            replays.append(entry)
            sub.b.extra["claude_code_replayed"] = {
                "lines": len(sub.replayed),
                "same_as": "the lines of the parent session with the same uuid",
            }
        subs.append((agent, sub))
    live = _live(unit)
    converter.finish(live)
    by_agent: dict[str, str] = {}
    documents: list[dict[str, JSON]] = []
    counts = Counts()
    counts.add(main.counts)
    sub_docs = []
    subs = [(agent, sub) for agent, sub in subs if sub.b.turns or sub.b.counts.raw]
    # A session log holding nothing but its sub-agents' lines has no session to show: they
    # are imported without a parent, as when the log is gone (no empty parent made up).
    has_main = not unit.orphan and bool(main.turns or main.counts.raw)
    notes = []
    if subs and not has_main:
        why = "not found" if unit.orphan else "holds no line of its own"
        notes.append(
            Problem(
                str(unit.main),
                0,
                f"{why}: {plural(len(subs), 'sub-agent log')} of this session imported"
                " without a parent",
            )
        )
    for agent, sub in subs:
        sub.finish(live)
        if has_main:
            sub.b.parent_id = main.name
        main.sub_sessions.append(sub.b.name)
        agent_id = sub.envelope.get("agentId")
        by_agent.setdefault(agent_id if isinstance(agent_id, str) else agent, sub.b.name)
        by_agent.setdefault(agent, sub.b.name)
        counts.add(sub.b.counts)
        sub_docs.append(sub)
    _link_tasks(converter, subs, by_agent)
    _link_compactions(converter, sub_docs)
    for each in (converter, *sub_docs):
        each.settle()
        each.b.title = each.title(unit.titles)
    if replays:
        main.extra["claude_code_replays"] = replays
    if has_main:
        documents.append(main.document())
    documents.extend(sub.b.document() for sub in sub_docs)
    return Result(documents, counts, notes, live=live and _running(documents))


def _link_compactions(converter: Converter, subs: list[Converter]) -> None:
    """Name on each ``/compact`` record the compaction log it came from (``sub_session``):
    each compaction sub-session goes to the record nearest its last line in time, so its
    request and summary are found where the compaction happened."""
    free = list(converter.compactions)
    for sub in subs:
        end = parse_time(sub.b.last_time)
        if sub.b.role != REPLAY_AGENTS["acompact"] or end is None or not free:
            continue

        def distance(part: dict[str, JSON], end: datetime = end) -> float:
            at = parse_time(part.get("timestamp"))
            if at is None or (at.tzinfo is None) != (end.tzinfo is None):
                return math.inf
            return abs((at - end).total_seconds())

        nearest = min(free, key=distance)
        if distance(nearest) < math.inf:
            nearest["sub_session"] = sub.b.name
            free.remove(nearest)


def _running(documents: list[dict[str, JSON]]) -> bool:
    """Whether a session's last turn reads ``running``."""
    return any(doc["turns"] and doc["turns"][-1]["status"] == "running" for doc in documents)


def _chain_key(record: dict[str, JSON], chain_root: dict[str, str]) -> str:
    """Which sub-agent a sidechain line belongs to: its ``agentId``, else the root of its
    ``parentUuid`` chain."""
    agent = record.get("agentId")
    uuid = record.get("uuid")
    parent = record.get("parentUuid")
    if isinstance(agent, str) and agent:
        key = agent
    elif isinstance(parent, str) and parent in chain_root:
        key = chain_root[parent]
    else:
        key = uuid if isinstance(uuid, str) and uuid else f"chain{len(set(chain_root.values()))}"
    if isinstance(uuid, str):
        chain_root[uuid] = key
    return key


def _link_tasks(
    converter: Converter, subs: list[tuple[str, Converter]], by_agent: dict[str, str]
) -> None:
    """Name each Task call's sub-session on its part (``sub_session``): by the agent id its
    result names, else by its prompt equal to the sub-agent's first prompt."""
    by_prompt: dict[str, list[str]] = {}
    builders = {sub.b.name: sub.b for _, sub in subs}
    for _, sub in subs:
        for turn in sub.b.turns:
            prompts = [p["text"] for p in turn["parts"] if p.get("type") == "user"]
            if prompts:
                by_prompt.setdefault(prompts[0], []).append(sub.b.name)
                break
    taken: set[str] = set()
    for tool_id, part in converter.tasks.items():
        name = by_agent.get(converter.task_agents.get(tool_id, ""))
        if name is None:
            tool_input = part.get("input")
            prompt = tool_input.get("prompt") if isinstance(tool_input, dict) else None
            candidates = (
                [n for n in by_prompt.get(prompt, []) if n not in taken]
                if isinstance(prompt, str)
                else []
            )
            name = candidates[0] if candidates else None
        if name is not None:
            taken.add(name)
            part["sub_session"] = name
            builder = builders.get(name)
            tool_input = part.get("input")
            if builder is not None and isinstance(tool_input, dict):
                role = tool_input.get("subagent_type")
                if isinstance(role, str) and role:
                    builder.role = role  # as the caller named it (before a .meta.json's)
                task = {
                    key: value
                    for key in ("description", "subagent_type")
                    if isinstance(value := tool_input.get(key), str)
                }
                if task:
                    builder.extra["task"] = task
