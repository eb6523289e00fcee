"""Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``.

One JSON object per line: ``{"timestamp", "type", "payload"}``, where ``type`` is
``session_meta`` (the session's id, cwd, CLI version, instructions, and for a sub-agent its
``source``), ``turn_context`` (the model, approval policy and reasoning effort of what
follows), ``response_item`` (the model's conversation: ``message``, ``reasoning``,
``function_call`` / ``function_call_output``, ``custom_tool_call`` /
``custom_tool_call_output``, ``local_shell_call``, ``web_search_call``...), ``event_msg``
(what the UI showed: ``user_message``, ``agent_message``, ``exec_command_end`` with the exit
code, ``patch_apply_end``, ``turn_aborted``, ``token_count``...) or ``compacted`` (a
compaction summary). Older rollouts have no envelope: each line is the response item itself.

The mapping (``docs/importers.md`` has the full table):

- A user message that is not injected context (``<environment_context>``, ``AGENTS.md``
  instructions, ``<turn_aborted>``, ``<skill>``...) starts a turn with a ``user`` part;
  injected context, developer and system messages are ``system`` parts (before the first
  prompt, they are placed in the first prompt's turn); the editor's context the VS Code
  extension writes before a request is a ``system`` note before the prompt; assistant
  messages are ``text`` parts; reasoning summaries and contents are ``thinking`` parts.
- A call and its output are one ``tool`` part. Whether it failed is read from everything the
  log says of it (:func:`outcome`): an ``Exit code: N`` or ``Process exited with code N``
  header, a ``{"output", "metadata": {"exit_code"}}`` wrapper (unwrapped: the output is the
  inner text), Codex's own error messages (``apply_patch verification failed``, a sandbox
  denial...), and its ``exec_command_end`` / ``patch_apply_end`` / ``mcp_tool_call_end``
  events. The exit code goes to the part's ``exit_code``, the time to ``duration_seconds``.
  A call and its events are one part (the same ``call_id``): one failure, counted once. A
  process that a ``write_stdin`` call sees exit is the failure of the call that started it.
- A command the user refused (``exec command rejected by user``) is a ``declined``
  permission (not a failed call); ``turn_aborted`` (the user interrupted) makes the turn
  ``cancelled``.
- A sub-agent's rollout (``session_meta.source.subagent``) is a ``sub_`` session, linked
  both ways to its parent's (found among the files imported, or in the same sessions
  folder); its role is the one its spawn gave; the ``spawn_agent`` call names it. History a
  rollout copies from another (a forked sub-agent, a forked or resumed conversation: a
  second ``session_meta``, then that session's records) is kept as written in the session's
  ``codex_inherited`` field and shown as one system note, never as turns of its own.
- The UI's copies of messages (``user_message``, ``agent_message``, ``agent_reasoning``) are
  counted as mapped when their text is already in the turn, and become parts, in place,
  when it is not. ``compacted`` is a ``/compact`` record; ``error`` events go to ``errors``.
  Anything else is kept as written in the turn's ``raw_records``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from itertools import pairwise
from pathlib import Path

from ..audit import utc_time
from .common import (
    JSON,
    Counts,
    Problem,
    Result,
    SessionBuilder,
    iso,
    iter_jsonl,
    link_sub_session,
)

AGENT = "codex"
DEFAULT_SOURCE = "~/.codex/sessions"

CONTEXT_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<skill>",
    "<user_action>",
)
"""User messages that Codex injects rather than the operator types."""
IDE_CONTEXT = "# Context from my IDE setup:"
IDE_REQUEST = "\n## My request for Codex:\n"
"""How the VS Code extension writes a prompt: the editor's context (active file, open tabs,
selection), then the request."""
CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call")
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")
UI_COPIES = {"user_message": "user", "agent_message": "text", "agent_reasoning": "thinking"}
UI_COPY_FIELDS = ("phase",)
"""Fields of a UI copy that say how the message was shown, not what it is (a copy holding
only these and empty lists is a copy)."""
SPAWN_TOOLS = ("spawn_agent",)
"""Calls that start a sub-agent (its thread id is in the output's ``agent_id``)."""
FORKED_PROMPT = "You are the newly spawned agent."
"""How the output Codex writes for the spawn call, last of a forked sub-agent's copied
history, begins."""

HEAD_BYTES = 1 << 20
"""How much of a rollout's first line is read to know its session (and its parent)."""
BURST = timedelta(seconds=1)
"""Codex writes copied history in one go: a pause this long ends it (older rollouts, whose
records name no turn)."""

Outcomes = dict[str, JSON]


@dataclass(slots=True, frozen=True)
class Head:
    """What a rollout's first line says of its session."""

    thread: str = ""
    """The session's (thread's) id."""
    parent: str = ""
    """The thread that spawned it, for a sub-agent's rollout."""


@dataclass(slots=True)
class Unit:
    """One Codex session and the sub-agents it spawned (at any depth)."""

    key: str
    """The state key: the main rollout's absolute path."""
    main: Path
    """The session's rollout."""
    subagents: list[Path] = field(default_factory=list)
    """Its sub-agents' rollouts, sorted."""

    @property
    def files(self) -> list[Path]:
        """The files read."""
        return [self.main, *self.subagents]


def discover(sources: Iterable[Path], problems: list[Problem]) -> list[Unit]:
    """Every ``*.jsonl`` under ``sources`` (a sessions folder, a day folder or files), a
    sub-agent's rollout grouped with its session's. A sub-agent whose parent is not among
    them is looked for in the same sessions folder (``YYYY/MM/DD``), with the rest of that
    family; one whose parent is nowhere is a unit of its own."""
    named: dict[Path, Head] = {}
    for source in sources:
        if source.is_file():
            files = [source]
        elif source.is_dir():
            files = sorted(p for p in source.rglob("*.jsonl") if p.is_file())
        else:
            problems.append(Problem(str(source), 0, "no such file or folder"))
            continue
        for path in files:
            path = path.absolute()
            if path not in named:
                named[path] = head_of(path)
    heads = dict(named)
    by_thread = _threads(heads)
    missing = {h.parent for h in heads.values() if h.parent and h.parent not in by_thread}
    if missing:
        for root in sorted({r for p, h in named.items() if h.parent for r in _tree_of(p)}):
            for path in sorted(root.glob("*/*/*/*.jsonl")):
                path = path.absolute()
                if path not in heads and path.is_file():
                    heads[path] = head_of(path)
        by_thread = _threads(heads)
    top = {path: _top(path, heads, by_thread) for path in heads}
    wanted = {top[path] for path in named}
    units: dict[Path, Unit] = {}
    for path in sorted(heads):
        root = top[path]
        if root not in wanted:
            continue  # found in the sessions folder, but no named rollout's family
        unit = units.setdefault(root, Unit(str(root), root))
        if path != root:
            unit.subagents.append(path)
    return [units[key] for key in sorted(units)]


def head_of(path: Path) -> Head:
    """The session (and parent) a rollout's first line names; an empty :class:`Head` when it
    names none or cannot be read. Only a sub-agent's line is parsed (a session's own is
    looked at, not decoded: an import discovers every rollout each time)."""
    try:
        with open(path, "rb") as handle:  # read-only: a source is never written
            line = handle.readline(HEAD_BYTES)
    except OSError:
        return Head()
    if b'"session_meta"' not in line[:512]:
        return Head()
    if b'"subagent"' not in line and b'"parent_thread_id"' not in line:
        found = _ID_RE.search(line[:1024])
        if found:  # (else the line is decoded below)
            return Head(found.group(1).decode("utf-8", "replace"))
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return _head_in_text(line.decode("utf-8", "replace"))
    payload = record.get("payload") if isinstance(record, dict) else None
    if not isinstance(payload, dict) or record.get("type") != "session_meta":
        return Head()
    thread = payload.get("id")
    return Head(thread if isinstance(thread, str) else "", parent_thread(payload))


_ID_RE = re.compile(rb'"payload" ?: ?\{ ?"id" ?: ?"([^"\\]{1,100})"')
_PARENT_RE = re.compile(r'"parent_thread_id" ?: ?"([^"\\]{1,100})"')


def _head_in_text(text: str) -> Head:
    """:func:`head_of` for a first line longer than :data:`HEAD_BYTES` (instructions of
    megabytes): its ids found in the text read."""
    thread = _ID_RE.search(text.encode("utf-8", "replace")[:1024])
    parent = _PARENT_RE.search(text)
    return Head(
        thread.group(1).decode("utf-8", "replace") if thread else "",
        parent.group(1) if parent else "",
    )


def parent_thread(meta: dict[str, JSON]) -> str:
    """The thread that spawned a sub-agent, from its ``session_meta`` payload ("" when none)."""
    source = meta.get("source")
    subagent = source.get("subagent") if isinstance(source, dict) else None
    spawn = subagent.get("thread_spawn") if isinstance(subagent, dict) else None
    parent = spawn.get("parent_thread_id") if isinstance(spawn, dict) else None
    if not isinstance(parent, str):
        parent = meta.get("parent_thread_id")
    return parent if isinstance(parent, str) else ""


def _threads(heads: dict[Path, Head]) -> dict[str, Path]:
    by_thread: dict[str, Path] = {}
    for path in sorted(heads):
        thread = heads[path].thread
        if thread:
            by_thread.setdefault(thread, path)
    return by_thread


def _top(path: Path, heads: dict[Path, Head], by_thread: dict[str, Path]) -> Path:
    """The rollout at the top of ``path``'s family: its parent's parent's..., as far as
    they are known (cycle-safe)."""
    seen = {path}
    while True:
        parent = by_thread.get(heads[path].parent) if heads[path].parent else None
        if parent is None or parent in seen:
            return path
        seen.add(parent)
        path = parent


def _tree_of(path: Path) -> list[Path]:
    """The sessions folder holding ``path`` as ``YYYY/MM/DD/rollout-….jsonl``, if it does."""
    day, month, year = path.parent, path.parent.parent, path.parent.parent.parent
    dated = (
        len(day.name) == 2
        and day.name.isdigit()
        and len(month.name) == 2
        and month.name.isdigit()
        and len(year.name) == 4
        and year.name.isdigit()
    )
    return [year.parent] if dated else []


# --- what a call's output says of it ---------------------------------------------------

_HEADER_LINES = 8
"""Lines at the start of an output that may be Codex's header (``Exit code: 1``...)."""
_EXIT_RE = re.compile(r"(?:Exit code: |Process exited with code )(-?\d{1,9})")
_RUNNING_RE = re.compile(r"Process running with session ID (\d{1,20})")
_WALL_RE = re.compile(r"Wall time: (\d{1,9}(?:\.\d{1,9})?) seconds")
_DENIED_RE = re.compile(r"failed in sandbox [^\n]{0,80}?, exit code: (-?\d{1,9}),")
FAILURES = (
    "apply_patch verification failed",
    "error: ",  # apply_patch run through shell, before the wrapped outputs
    "execution error:",
    "failed in sandbox",
    "exec_command failed",
    "write_stdin failed",
    "failed to parse function arguments",
    "unsupported call",
)
"""How Codex's own messages for a call that failed begin (its ``FunctionCallError``s)."""
DECLINED = ("exec command rejected", "patch rejected")
"""How the message for a call the user refused begins."""
INTERRUPTED = ("aborted by user", "aborted")
"""A call the user interrupted: ``aborted`` (before 0.60), ``aborted by user after 4.2s``."""


def outcome(text: str) -> Outcomes:
    """What a call's output text says of how it ended: ``exit_code`` (int), ``duration``
    (seconds, of a finished command), ``process`` (the session id of a command still
    running), ``failed``, ``declined`` and ``interrupted`` (True when so). Only the header
    Codex writes before ``Output:`` (or its own messages) is read, never the output of the
    command itself."""
    found: Outcomes = {}
    start = 0
    if text.startswith("Command: "):  # (0.118+; the command line may span lines)
        start = text.find("\nChunk ID: ", 0, HEAD_BYTES) + 1
    lines = text[start : start + 2000].split("\n", _HEADER_LINES)
    body = text if start == 0 else ""
    for number, line in enumerate(lines[:_HEADER_LINES]):
        line = line.rstrip("\r")
        if line.startswith("Output:"):
            body = ""
            break
        exit_code, running = _EXIT_RE.fullmatch(line), _RUNNING_RE.fullmatch(line)
        wall = _WALL_RE.fullmatch(line)
        if exit_code:
            found["exit_code"] = int(exit_code.group(1))
        elif running:
            found["process"] = running.group(1)
        elif wall:
            found["wall"] = float(wall.group(1))
        elif not line.startswith(("Chunk ID: ", "Original token count: ", "Total output lines: ")):
            body = "\n".join(lines[number:]) if start == 0 else ""
            break
    wall = found.pop("wall", None)
    if "exit_code" in found:
        if wall is not None and "process" not in found:
            found["duration"] = wall
        found["failed"] = found["exit_code"] != 0
        return found
    head = body.lstrip()[:200]
    if head.startswith(DECLINED):
        found["declined"] = True
    elif head.startswith(INTERRUPTED):
        found["interrupted"] = True
    elif head.startswith(FAILURES):
        found["failed"] = True
        denied = _DENIED_RE.match(head)
        if denied:  # the sandbox's message says how the command ended
            found["exit_code"] = int(denied.group(1))
    return found


def unwrap(text: str) -> tuple[str, dict[str, JSON]] | None:
    """A wrapped output (``{"output": "...", "metadata": {"exit_code": 1, ...}}``, written by
    ``shell`` before October 2025 and ``apply_patch`` in 0.5x–0.12x): its inner text and the
    rest of the wrapper; None for any other text."""
    if not text.startswith('{"output":') or '"metadata":' not in text:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if (
        not isinstance(value, dict)
        or set(value) != {"output", "metadata"}
        or not isinstance(value["output"], str)
        or not isinstance(value["metadata"], dict)
    ):
        return None
    return value["output"], {"metadata": value["metadata"]}


def _number(value: JSON) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


# --- reading ---------------------------------------------------------------------------


def _texts(content: JSON) -> list[tuple[str, dict[str, JSON]]]:
    """(text, other fields) of each text item of a message's content."""
    if isinstance(content, str):
        return [(content, {})]
    out = []
    if isinstance(content, list):
        for item in content:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                rest = {k: v for k, v in item.items() if k != "text"}
                if rest.get("type") in ("input_text", "output_text", "text", "summary_text"):
                    del rest["type"]
                out.append((item["text"], rest))
    return out


_DATA_URL_RE = re.compile(r"data:(image/[A-Za-z0-9.+-]+);base64,(.*)", re.DOTALL)


def _image(item: JSON) -> dict[str, JSON] | None:
    """An ``input_image`` content item holding its data (a ``data:image/...;base64,`` URL) as
    the format's image fields (``media_type``, ``data``; what else the item holds in
    ``block``), None for any other item (an image by web address stays as written)."""
    if not isinstance(item, dict) or item.get("type") != "input_image":
        return None
    url = item.get("image_url")
    found = _DATA_URL_RE.fullmatch(url) if isinstance(url, str) else None
    if found is None:
        return None
    image: dict[str, JSON] = {"media_type": found.group(1), "data": found.group(2)}
    rest: dict[str, JSON] = {k: v for k, v in item.items() if k not in ("type", "image_url")}
    if rest:
        image["block"] = rest
    return image


def _images(content: JSON) -> list[dict[str, JSON]]:
    """The images of a message's or an output's content items, in order."""
    if not isinstance(content, list):
        return []
    return [image for item in content if (image := _image(item)) is not None]


def _without_images(content: JSON) -> JSON:
    """``content`` as written, each item :func:`_images` took out named by its number among
    them (``{"type": "input_image", "images": 0}``: the base64 is never kept twice)."""
    if not isinstance(content, list):
        return content
    numbers = iter(range(len(content)))
    return [
        item if _image(item) is None else {"type": "input_image", "images": next(numbers)}
        for item in content
    ]


def _output_text(output: JSON) -> tuple[str, bool]:
    """The text of a call's output, and whether that text is the whole of it."""
    if isinstance(output, str):
        return output, True
    if (
        isinstance(output, dict)
        and isinstance(output.get("content"), str)
        and set(output)
        <= {
            "content",
            "success",
        }
    ):
        return output["content"], False
    texts = _texts(output)
    if texts and isinstance(output, list) and len(texts) + len(_images(output)) == len(output):
        return "\n".join(t for t, _ in texts), False
    return json.dumps(output, ensure_ascii=False), False


def _command_of(tool_input: JSON) -> str:
    """The command line a shell call runs (a permission's ``path``)."""
    if not isinstance(tool_input, dict):
        return ""
    for key in ("cmd", "command"):
        value = tool_input.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(word, str) for word in value):
            return " ".join(value)
    return ""


def _uuid7_ms(value: str) -> int | None:
    """The millisecond time a UUIDv7 (Codex's thread and turn ids) was made at, else None."""
    if len(value) != 36 or value[14] != "7" or value[8] != "-" or value[13] != "-":
        return None
    try:
        return int(value[:8] + value[9:13], 16)
    except ValueError:
        return None


@dataclass(slots=True)
class Inherited:
    """History a rollout copies from another session's log, being read."""

    origin: str
    """The id the copied ``session_meta`` names."""
    records: list[tuple[int, JSON]] = field(default_factory=list)
    """(line number, record) of each line copied."""
    last: str = ""
    """The latest timestamp read."""


class Converter:
    """Builds one session from a rollout's lines."""

    def __init__(self, builder: SessionBuilder) -> None:
        self.b = builder
        self.calls: dict[str, dict[str, JSON]] = {}
        """call id → its tool part."""
        self.copies: list[tuple[int, int, int, str, str, dict[str, JSON]]] = []
        """UI copies of messages: (turns so far, parts of the last turn so far, line, part
        type, text, payload)."""
        self.context: dict[str, JSON] | None = None
        """The latest ``turn_context`` payload (applies to the turns that follow)."""
        self.thread = ""
        """This session's (thread's) id, from its ``session_meta``."""
        self.parent = ""
        """The thread that spawned it (a sub-agent)."""
        self.subagent: JSON = None
        """``session_meta.source.subagent`` as written (None for a session of its own)."""
        self.nickname = ""
        """The name Codex gave the sub-agent."""
        self.processes: dict[str, dict[str, JSON]] = {}
        """Session id of a command left running → the part of the call that started it."""
        self.spawns: list[dict[str, JSON]] = []
        """The parts of the calls that spawned sub-agents, in order."""
        self.inherited: Inherited | None = None
        """Copied history being read, if any."""

    def feed(self, number: int, record: JSON, raw_text: str) -> None:
        if record is None:
            self.b.keep_raw({"unparsed_line": raw_text}, number)
            return
        if not isinstance(record, dict):
            self.b.keep_raw(record, number)
            return
        if "payload" in record and isinstance(record.get("type"), str):
            kind, payload = record["type"], record["payload"]
            ts = iso(record.get("timestamp"))
            envelope = {
                k: v for k, v in record.items() if k not in ("type", "payload", "timestamp")
            }
        else:  # older rollouts: the line is the item
            kind, payload, ts = "response_item", record, iso(record.get("timestamp"))
            envelope = {}
        if not isinstance(payload, dict):
            self.b.keep_raw(record, number)
            return
        if self._inherit(kind, payload, ts, number, record):
            return
        handled = False
        if kind == "session_meta":
            handled = self._meta(payload, ts)
        elif kind == "turn_context":
            handled = self._turn_context(payload, ts)
        elif kind == "response_item":
            handled = self._item(payload, ts, number)
        elif kind == "event_msg":
            handled = self._event(payload, ts, number)
        elif kind == "compacted":
            handled = self._compacted(payload, ts)
        if handled:
            self.b.counts.mapped += 1
            if envelope:
                self.b.turn(ts).setdefault("codex_envelopes", []).append(
                    {"line": number, **envelope}
                )
        else:
            self.b.keep_raw(record, number)
            self.b.seen(ts)

    # -- copied history --

    def _inherit(
        self, kind: str, payload: dict[str, JSON], ts: str, number: int, record: JSON
    ) -> bool:
        """Whether the record is history copied from another session's log (kept apart):
        from a ``session_meta`` naming another session, to the output Codex writes last for
        the spawn call of a forked sub-agent (:data:`FORKED_PROMPT`), else to the first
        record of this session's own turns (turn ids made after this session's), else to
        the first pause of :data:`BURST` (the copy is written at once)."""
        copy = self.inherited
        if copy is None:
            other = payload.get("id")
            if (
                kind != "session_meta"
                or self.b.origin.get("meta") is None
                or not isinstance(other, str)
                or other == self.thread
            ):
                return False
            self.inherited = Inherited(other, [(number, record)], last=ts)
            return True
        if self._own(payload, ts, copy.last):
            self._end_inherited()
            return False
        copy.records.append((number, record))
        copy.last = ts or copy.last
        output = payload.get("output") if payload.get("type") in OUTPUT_TYPES else None
        if isinstance(output, str) and output.startswith(FORKED_PROMPT):
            self._end_inherited()
        return True

    def _own(self, payload: dict[str, JSON], ts: str, last: str) -> bool:
        turn = payload.get("turn_id")
        mine = _uuid7_ms(self.thread)
        if isinstance(turn, str) and mine is not None:
            made = _uuid7_ms(turn)
            if made is not None:
                return made >= mine
        before, now = utc_time(last), utc_time(ts)
        return before is not None and now is not None and now - before >= BURST

    def _end_inherited(self) -> None:
        copy = self.inherited
        if copy is None:
            return
        self.inherited = None
        first, last = copy.records[0][0], copy.records[-1][0]
        blocks = self.b.extra.setdefault("codex_inherited", [])
        blocks.append(
            {
                "from": copy.origin,
                "lines": [first, last],
                "records": [{"line": n, "record": r} for n, r in copy.records],
            }
        )
        self.b.counts.mapped += len(copy.records)
        whose = "the parent session" if copy.origin == self._forked_from() else "session"
        text = (
            f"Context inherited from {whose} {copy.origin}: Codex copied"
            f" {len(copy.records)} records of its log into this one (lines {first}–{last})."
            " They are kept as written in this session's codex_inherited field, not shown"
            " again here."
        )
        ts = self.b.last_time or self.b.first_time
        self.b.leading_part("system", ts, text=text, codex_inherited=len(blocks) - 1)

    def _forked_from(self) -> str:
        meta = self.b.origin.get("meta")
        forked = meta.get("forked_from_id") if isinstance(meta, dict) else None
        return forked if isinstance(forked, str) else self.parent

    # -- records --

    def _meta(self, payload: dict[str, JSON], ts: str) -> bool:
        if self.b.origin.get("meta") is not None:
            return False
        self.b.origin["meta"] = payload
        for key in ("cwd", "cli_version", "originator", "model_provider"):
            if isinstance(payload.get(key), str):
                self.b.origin[key] = payload[key]
        if isinstance(payload.get("id"), str) and payload["id"]:
            self.b.origin["codex_id"] = payload["id"]
            self.thread = payload["id"]
        self.parent = parent_thread(payload)
        source = payload.get("source")
        self.subagent = source.get("subagent") if isinstance(source, dict) else None
        spawn = self.subagent.get("thread_spawn") if isinstance(self.subagent, dict) else None
        spawn = spawn if isinstance(spawn, dict) else {}
        for holder in (payload, spawn):
            role, nickname = holder.get("agent_role"), holder.get("agent_nickname")
            if isinstance(role, str) and role and not self.b.role:
                self.b.role = role
            if isinstance(nickname, str) and nickname and not self.nickname:
                self.nickname = nickname
        if isinstance(self.subagent, str) and not self.b.role:
            self.b.role = self.subagent  # "review", "compact"...
        elif isinstance(self.subagent, dict) and not spawn and not self.b.role:
            other = self.subagent.get("other")
            if isinstance(other, str):
                self.b.role = other
        if self.nickname:
            self.b.origin["agent_nickname"] = self.nickname
        self.b.seen(ts or iso(payload.get("timestamp")))
        return True

    def _apply_context(self, turn: dict[str, JSON]) -> None:
        context = self.context
        if context is None:
            return
        model = context.get("model")
        if isinstance(model, str):
            turn["model"] = model
        provider = self.b.origin.get("model_provider")
        turn["provider"] = provider if isinstance(provider, str) else "openai"
        policy = context.get("approval_policy")
        if isinstance(policy, str):
            turn["mode"] = policy
        effort = context.get("effort")
        if isinstance(effort, str):
            turn["reasoning"] = effort

    def _turn_context(self, payload: dict[str, JSON], ts: str) -> bool:
        self.context = payload
        turn = self.b.current
        if turn is not None:
            self._apply_context(turn)
            contexts = turn.setdefault("codex_turn_context", [])
            if payload not in contexts:
                contexts.append(payload)
        else:
            self.b.extra.setdefault("codex_turn_context", []).append(payload)
        self.b.seen(ts)
        return True

    def _place_copies(self) -> None:
        """UI copies whose text is in no part of their turn (or a neighbour: the copy may
        be written before the item that opens the turn) become parts of their own, where
        they were written."""
        turns = self.b.turns
        placed: list[tuple[int, int, dict[str, JSON]]] = []
        written: dict[int, set[tuple[JSON, JSON]]] = {}
        for turn_count, part_count, number, ptype, text, payload in self.copies:
            near = range(max(turn_count - 1, 0), min(turn_count + 1, len(turns)))
            for i in near:
                if i not in written:
                    written[i] = _written(turns[i]["parts"])
            if any((ptype, text) in written[i] for i in near):
                continue
            part: dict[str, JSON] = {"type": ptype, "text": text, "timestamp": ""}
            part["codex_event"] = {"line": number, **payload}
            if not turns:
                self.b.start_turn("")
            where = min(max(turn_count - 1, 0), len(turns) - 1)
            if turn_count == 0:
                at = 0  # written before the first turn: its first part
            elif where == turn_count - 1:
                at = part_count
            else:
                at = len(turns[where]["parts"])
            placed.append((where, at, part))
        for where, at, part in reversed(placed):  # (later positions first: indexes hold)
            turns[where]["parts"].insert(at, part)
        self.copies = []

    def _message(self, payload: dict[str, JSON], ts: str) -> bool:
        role = payload.get("role")
        texts = _texts(payload.get("content"))
        rest = {k: v for k, v in payload.items() if k not in ("type", "role", "content")}
        content = payload.get("content")
        images = _images(content) if role == "user" else []
        if not isinstance(content, (str, list)) or (
            isinstance(content, list) and len(texts) + len(images) != len(content)
        ):
            rest["content"] = _without_images(content)  # anything else, as written
        elif isinstance(content, list) and images:
            order = ["image" if _image(item) is not None else "text" for item in content]
            if order != sorted(order, reverse=True):  # not all text first: the order as written
                rest["content_order"] = order
        if not texts and not images:
            texts = [("", {})]
        first: dict[str, JSON] | None = None
        for text, fields in texts:
            if role == "user" and not text.startswith(CONTEXT_PREFIXES):
                if first is None:
                    turn = self.b.start_turn(ts)
                    self._apply_context(turn)
                cut = text.find(IDE_REQUEST) if text.startswith(IDE_CONTEXT) else -1
                if cut >= 0:  # the editor's context: a note before the request it came with
                    cut += len(IDE_REQUEST)
                    note = self.b.part("system", ts, text=text[:cut])
                    note["codex"] = {"ide_context": True}
                    first = first or note
                    text = text[cut:]
                part = self.b.part("user", ts, text=text)
            elif role == "assistant":
                kind = "thinking" if fields.get("type") == "reasoning" else "text"
                part = self.b.part(kind, ts, text=text)
            else:
                part = self.b.leading_part("system", ts, text=text)
                if role != "user":
                    fields = {"role": role, **fields}
            if fields:
                part["codex"] = fields
            first = first or part
        for image in images:  # a prompt's pasted images, after its text
            if first is None:
                turn = self.b.start_turn(ts)
                self._apply_context(turn)
            part = self.b.part("image", ts, **image)
            first = first or part
        if first is not None and rest:
            first.setdefault("codex", {}).update(rest)
        return True

    def _item(self, payload: dict[str, JSON], ts: str, number: int) -> bool:
        kind = payload.get("type")
        if kind == "message":
            return self._message(payload, ts)
        if kind == "reasoning":
            texts = _texts(payload.get("summary")) + _texts(payload.get("content"))
            rest = {k: v for k, v in payload.items() if k not in ("type", "summary", "content")}
            for key in ("summary", "content"):
                value = payload.get(key)
                if value is not None and not (
                    isinstance(value, list)
                    and all(isinstance(i, dict) and isinstance(i.get("text"), str) for i in value)
                ):
                    rest[key] = value
            if not texts:
                texts = [("", {})]
            for i, (text, fields) in enumerate(texts):
                part = self.b.part("thinking", ts, text=text)
                extra = {**fields, **(rest if i == 0 else {})}
                if extra:
                    part["codex"] = extra
            return True
        if kind in CALL_TYPES:
            return self._call(payload, ts)
        if kind in OUTPUT_TYPES:
            return self._output(payload, ts)
        return False

    def _call(self, payload: dict[str, JSON], ts: str) -> bool:
        kind = payload["type"]
        name = payload.get("name")
        rest = {k: v for k, v in payload.items() if k not in ("name", "arguments", "input")}
        tool_input: JSON
        if kind == "function_call":
            arguments = payload.get("arguments")
            tool_input = arguments
            if isinstance(arguments, str):
                try:
                    tool_input = json.loads(arguments)
                except (ValueError, RecursionError):
                    tool_input = arguments
                else:
                    if (
                        json.dumps(tool_input, ensure_ascii=False, separators=(",", ":"))
                        != arguments
                    ):
                        rest["arguments"] = arguments
        elif kind == "custom_tool_call":
            tool_input = payload.get("input")
        else:  # local_shell_call, web_search_call: the action is the input
            tool_input = payload.get("action")
            rest.pop("action", None)
            name = name or kind.removesuffix("_call")
        if kind != "function_call":
            rest.pop("type", None) if kind == "custom_tool_call" else None
        part = self.b.tool(ts, name if isinstance(name, str) else "", tool_input)
        if rest:
            part["codex"] = rest
        call_id = payload.get("call_id") or payload.get("id")
        if isinstance(call_id, str):
            self.calls[call_id] = part
        if kind == "web_search_call":
            part["output"] = ""
        if name in SPAWN_TOOLS:
            self.spawns.append(part)
        return True

    def _output(self, payload: dict[str, JSON], ts: str) -> bool:
        call_id = payload.get("call_id")
        part = self.calls.get(call_id) if isinstance(call_id, str) else None
        if part is None:
            part = self.b.tool(ts, "", None)
            part["unmatched_call_id"] = call_id
        output = payload.get("output")
        text, whole = _output_text(output)
        rest = {k: v for k, v in payload.items() if k not in ("type", "call_id", "output")}
        wrapped = unwrap(text)
        said: Outcomes = {}
        if wrapped is not None:
            inner, wrapper = wrapped
            rest["output_wrapper"] = wrapper
            again = json.dumps(
                {"output": inner, **wrapper}, ensure_ascii=False, separators=(",", ":")
            )
            if again != text or not whole:
                rest["output"] = output
            text = inner
            meta = wrapper["metadata"]
            code, took = _number(meta.get("exit_code")), _number(meta.get("duration_seconds"))
            if isinstance(code, int):
                self._exit(part, code)
            else:
                said = outcome(inner)
            if took is not None:
                part["duration_seconds"] = took
        else:
            if not whole:
                rest["output"] = output
            said = outcome(text)
        part["output"] = text
        shown = _images(output)
        if shown:  # an image the tool returned (view_image, a screenshot), shown in place
            part["images"] = shown
            if "output" in rest:
                rest["output"] = _without_images(rest["output"])
        if isinstance(output, dict) and output.get("success") is False:
            part["is_error"] = True
        self._judge(part, said, ts)
        rest["timestamp"] = ts
        part.setdefault("codex_output", {}).update(rest)
        self.b.seen(ts)
        return True

    def _exit(self, part: dict[str, JSON], code: int) -> None:
        part["exit_code"] = code
        part["is_error"] = code != 0 or part.get("codex_failed") is True

    def _judge(self, part: dict[str, JSON], said: Outcomes, ts: str) -> None:
        """Mark a call by what its output says (:func:`outcome`)."""
        code = said.get("exit_code")
        process = said.get("process")
        if isinstance(process, str):
            self.processes[process] = part
        tool_input = part.get("input")
        polled = tool_input.get("session_id") if isinstance(tool_input, dict) else None
        owner = self.processes.get(str(polled)) if polled is not None else None
        if isinstance(code, int):
            if part.get("name") == "write_stdin" and owner is not None and owner is not part:
                self._exit(owner, code)  # the command's exit, seen by a poll of it
                part["codex_process_exit"] = code
            elif "exit_code" not in part:
                self._exit(part, code)
        if "duration" in said and "duration_seconds" not in part:
            part["duration_seconds"] = said["duration"]
        if said.get("failed") is True and not (isinstance(code, int) and code != 0):
            part["codex_failed"] = True  # (Codex's message says it failed, whatever the code)
            part["is_error"] = True
        if said.get("declined") is True:
            self._decline(part, ts)

    def _decline(self, part: dict[str, JSON], ts: str) -> None:
        if part.get("codex_declined") is True:
            return
        part["codex_declined"] = True
        self.b.permissions.append(
            {
                "tool": part.get("name") or "",
                "action": "ask",
                "decision": "declined",
                "path": _command_of(part.get("input")),
                "timestamp": ts,
            }
        )

    def _event(self, payload: dict[str, JSON], ts: str, number: int) -> bool:
        kind = payload.get("type")
        if kind in UI_COPIES:
            text_key = "text" if kind == "agent_reasoning" else "message"
            text = payload.get(text_key)
            if not isinstance(text, str):
                return False
            rest = {k: v for k, v in payload.items() if k not in ("type", text_key)}
            meaningful = {
                k: v
                for k, v in rest.items()
                if k not in UI_COPY_FIELDS and v not in ([], None, "", "plain")
            }
            if meaningful:
                return False  # images or more: kept raw
            turns = self.b.turns
            parts = len(turns[-1]["parts"]) if turns else 0
            copy = (len(turns), parts, number, UI_COPIES[kind], text, {"type": kind, **rest})
            self.copies.append(copy)
            self.b.seen(ts)
            return True
        call_id = payload.get("call_id")
        if isinstance(call_id, str) and call_id in self.calls:
            part = self.calls[call_id]
            event = {k: v for k, v in payload.items() if k != "call_id"}
            event["timestamp"] = ts
            part.setdefault("codex_events", []).append(event)
            code = payload.get("exit_code")
            if isinstance(code, int) and not isinstance(code, bool):
                self._exit(part, code)
            if kind == "patch_apply_end" and payload.get("success") is False:
                part["codex_failed"] = True
                part["is_error"] = True
            if kind == "mcp_tool_call_end" and _mcp_failed(payload.get("result")):
                part["codex_failed"] = True
                part["is_error"] = True
            if payload.get("status") == "declined":
                self._decline(part, ts)
            if part.get("output") is None and kind == "exec_command_end":
                output = payload.get("aggregated_output")
                if isinstance(output, str):
                    part["output"] = output
            self.b.seen(ts)
            return True
        if kind == "error":
            message = payload.get("message")
            rest = {k: v for k, v in payload.items() if k not in ("type", "message")}
            self.b.error(0, text_of_message(message), ts, **({"codex": rest} if rest else {}))
            return True
        if kind == "turn_aborted":
            aborted = self.b.turn(ts)
            aborted["status"] = "cancelled"
            aborted["codex_aborted"] = payload
            self.b.seen(ts)
            return True
        return False

    def _compacted(self, payload: dict[str, JSON], ts: str) -> bool:
        message = payload.get("message")
        if not isinstance(message, str):
            return False
        turn = self.b.start_turn(ts)
        part = self.b.part(
            "command", ts, text="/compact", summary=message, compact_from=turn["index"]
        )
        rest = {k: v for k, v in payload.items() if k != "message"}
        if rest:
            part["codex"] = rest
        return True

    def finish(self) -> None:
        self._end_inherited()
        self._place_copies()
        turns = self.b.turns
        for turn in turns:
            waiting = any(
                p.get("type") == "tool" and p.get("output") is None for p in turn["parts"]
            )
            if waiting and turn["status"] == "ok":
                turn["status"] = "running" if turn is turns[-1] else "cancelled"

    def spawned(self, part: dict[str, JSON]) -> tuple[str, str]:
        """(thread id, nickname) of the sub-agent a spawn call started, as its output or its
        ``collab_agent_spawn_end`` event says ("" when they do not)."""
        thread = nickname = ""
        output = part.get("output")
        try:
            value = json.loads(output) if isinstance(output, str) else None
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict):
            agent, name = value.get("agent_id"), value.get("nickname")
            thread = agent if isinstance(agent, str) else ""
            nickname = name if isinstance(name, str) else ""
        events = part.get("codex_events")
        for event in events if isinstance(events, list) else []:
            if isinstance(event, dict) and event.get("type") == "collab_agent_spawn_end":
                agent, name = event.get("new_thread_id"), event.get("new_agent_nickname")
                thread = thread or (agent if isinstance(agent, str) else "")
                nickname = nickname or (name if isinstance(name, str) else "")
        return thread, nickname

    def first_prompt(self) -> str | None:
        for turn in self.b.turns:
            for part in turn["parts"]:
                if part.get("type") == "user":
                    text = part.get("text")
                    return text if isinstance(text, str) else None
        return None


def _written(parts: list[dict[str, JSON]]) -> set[tuple[JSON, JSON]]:
    """(type, text) of each part, and of each prompt as the message that held the editor's
    context wrote it (its note's text and its own, :data:`IDE_CONTEXT`)."""
    out = {(p.get("type"), p.get("text")) for p in parts}
    for note, prompt in pairwise(parts):
        codex = note.get("codex")
        if isinstance(codex, dict) and codex.get("ide_context") is True:
            out.add((prompt.get("type"), f"{note.get('text')}{prompt.get('text')}"))
    return out


def _mcp_failed(result: JSON) -> bool:
    """Whether an ``mcp_tool_call_end`` result says the call failed (``Err``, or a result
    with ``isError``)."""
    if not isinstance(result, dict):
        return False
    if "Err" in result:
        return True
    ok = result.get("Ok")
    return isinstance(ok, dict) and ok.get("isError") is True


def text_of_message(message: JSON) -> str:
    return message if isinstance(message, str) else json.dumps(message, ensure_ascii=False)


def _read(path: Path, kind: str, problems: list[Problem]) -> Converter:
    converter = Converter(SessionBuilder(AGENT, str(path), _source_id(path), kind))
    for line in iter_jsonl(path, problems):
        converter.feed(line.number, line.value, line.text)
    converter.finish()
    codex_id = converter.b.origin.get("codex_id")
    if isinstance(codex_id, str) and codex_id != converter.b.source_id:
        converter.b.origin["file_id"] = converter.b.source_id
        converter.b.source_id = codex_id
    return converter


def convert(unit: Unit, problems: list[Problem]) -> Result:
    """The sessions of a rollout and of its sub-agents' rollouts, linked."""
    family = [_read(path, "ses", problems) for path in unit.files]
    for member in family:
        if member.subagent is not None:
            member.b.kind = "sub"
    by_thread: dict[str, Converter] = {}
    for member in family:
        if member.thread:
            by_thread.setdefault(member.thread, member)
    notes: list[Problem] = []
    order: dict[str, list[Converter]] = {}
    for member in family:  # spawn calls name their sub-sessions, in call order
        spawned: list[Converter] = []
        for part in member.spawns:
            child = _child_of(member, part, by_thread, family, spawned)
            if child is None:
                continue
            spawned.append(child)
            part["sub_session"] = child.b.name
            tool_input = part.get("input")
            role = tool_input.get("agent_type") if isinstance(tool_input, dict) else None
            if not child.b.role and isinstance(role, str):
                child.b.role = role
            _, nickname = member.spawned(part)
            if nickname and not child.nickname:
                child.nickname = nickname
                child.b.origin["agent_nickname"] = nickname
        order[member.thread] = spawned
    for member in family:
        parent = by_thread.get(member.parent) if member.parent else None
        if parent is None or parent is member:
            if member.parent:
                notes.append(
                    Problem(
                        str(member.b.source_path),
                        0,
                        f"the session that spawned this sub-agent ({member.parent}) was not"
                        " found: imported as a sub-session without a parent",
                    )
                )
            continue
        if member not in order.get(parent.thread, []):
            order.setdefault(parent.thread, []).append(member)
    for member in family:
        for child in order.get(member.thread, []) if member.thread else []:
            link_sub_session(member.b, child.b)
    counts = Counts()
    documents = []
    for member in family:
        counts.add(member.b.counts)
        if member.b.turns or member.b.counts.raw or member.b.counts.mapped:
            documents.append(member.b.document())
    return Result(documents, counts, notes)


def _child_of(
    member: Converter,
    part: dict[str, JSON],
    by_thread: dict[str, Converter],
    family: list[Converter],
    taken: list[Converter],
) -> Converter | None:
    """The sub-agent a spawn call started: by the thread id its output names, else the one
    whose first prompt is the call's message."""
    thread, _ = member.spawned(part)
    child = by_thread.get(thread) if thread else None
    if child is not None and child is not member and child.parent == member.thread:
        return child
    tool_input = part.get("input")
    message = tool_input.get("message") if isinstance(tool_input, dict) else None
    if not isinstance(message, str):
        return None
    for other in family:
        if (
            other.parent == member.thread
            and other is not member
            and other not in taken
            and other.first_prompt() == message
        ):
            return other
    return None


def _source_id(path: Path) -> str:
    """The id in a rollout's file name (``rollout-<time>-<uuid>``), else its stem; the
    ``session_meta`` id replaces it when present."""
    stem = path.stem
    parts = stem.split("-")
    if len(parts) >= 6 and stem.startswith("rollout-"):
        return "-".join(parts[-5:])
    return stem
