"""Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``.

One JSON object per line: ``{"timestamp", "type", "payload"}``, where ``type`` is
``session_meta`` (the session's id, cwd, CLI version, instructions), ``turn_context`` (the
model, approval policy and reasoning effort of what follows), ``response_item`` (the
model's conversation: ``message``, ``reasoning``, ``function_call`` /
``function_call_output``, ``custom_tool_call`` / ``custom_tool_call_output``,
``local_shell_call``...), ``event_msg`` (what the UI showed: ``user_message``,
``agent_message``, ``exec_command_end`` with the exit code, ``token_count``...) or
``compacted`` (a compaction summary). Older rollouts have no envelope: each line is the
response item itself.

The mapping: a user message that is not injected context (``<environment_context>``,
``AGENTS.md`` instructions) starts a turn with a ``user`` part; injected context, developer
and system messages are ``system`` parts; assistant messages are ``text`` parts; reasoning
summaries and contents are ``thinking`` parts; a call and its output are one ``tool`` part
(its ``exec_command_*`` / ``patch_apply_*`` events in ``codex_events``, ``is_error`` from a
non-zero exit code); ``compacted`` is a ``/compact`` record; ``error`` events go to
``errors``, ``turn_aborted`` makes the turn ``cancelled``. The UI's copies of messages
(``user_message``, ``agent_message``, ``agent_reasoning``) are counted as mapped when their
text is already in the turn, and become parts when it is not. Anything else is kept as
written in the turn's ``raw_records``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from .common import (
    JSON,
    Problem,
    Result,
    SessionBuilder,
    SourceFile,
    iso,
    iter_jsonl,
)

AGENT = "codex"
DEFAULT_SOURCE = "~/.codex/sessions"

CONTEXT_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<user_shell_command>",
)
"""User messages that Codex injects rather than the operator types."""
CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call")
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")
UI_COPIES = {"user_message": "user", "agent_message": "text", "agent_reasoning": "thinking"}


Unit = SourceFile
"""One rollout file."""


def discover(sources: Iterable[Path], problems: list[Problem]) -> list[Unit]:
    """Every ``*.jsonl`` under ``sources`` (a sessions folder, a day folder or files)."""
    found: dict[str, Unit] = {}
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
            found.setdefault(str(path), Unit(str(path), path))
    return [found[key] for key in sorted(found)]


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
    if texts and isinstance(output, list) and len(texts) == len(output):
        return "\n".join(t for t, _ in texts), False
    return json.dumps(output, ensure_ascii=False), False


def _exit_code(output: str) -> int | None:
    """The exit code in an older shell call's JSON output (``{"output", "metadata"}``)."""
    if not output.startswith("{") or '"exit_code"' not in output:
        return None
    try:
        value = json.loads(output)
    except (ValueError, RecursionError):
        return None
    meta = value.get("metadata") if isinstance(value, dict) else None
    code = meta.get("exit_code") if isinstance(meta, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


class Converter:
    """Builds one session from a rollout's lines."""

    def __init__(self, builder: SessionBuilder) -> None:
        self.b = builder
        self.calls: dict[str, dict[str, JSON]] = {}
        """call id → its tool part."""
        self.copies: list[tuple[int, int, str, str, dict[str, JSON]]] = []
        """UI copies of messages: (turns so far, line, part type, text, payload)."""
        self.context: dict[str, JSON] | None = None
        """The latest ``turn_context`` payload (applies to the turns that follow)."""

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
        be written before the item that opens the turn) become parts of their own."""
        turns = self.b.turns
        for turn_count, number, ptype, text, payload in self.copies:
            near = turns[max(turn_count - 1, 0) : turn_count + 1]
            if any(
                p.get("type") == ptype and p.get("text") == text for t in near for p in t["parts"]
            ):
                continue
            part: dict[str, JSON] = {"type": ptype, "text": text, "timestamp": ""}
            part["codex_event"] = {"line": number, **payload}
            if not turns:
                self.b.start_turn("")
            turns[min(max(turn_count - 1, 0), len(turns) - 1)]["parts"].append(part)
        self.copies = []

    def _message(self, payload: dict[str, JSON], ts: str) -> bool:
        role = payload.get("role")
        texts = _texts(payload.get("content"))
        rest = {k: v for k, v in payload.items() if k not in ("type", "role", "content")}
        content = payload.get("content")
        if not isinstance(content, (str, list)) or (
            isinstance(content, list) and len(texts) != len(content)
        ):
            rest["content"] = content  # images and anything else, as written
        if not texts:
            texts = [("", {})]
        first: dict[str, JSON] | None = None
        for text, fields in texts:
            if role == "user" and not text.startswith(CONTEXT_PREFIXES):
                if first is None:
                    turn = self.b.start_turn(ts)
                    self._apply_context(turn)
                part = self.b.part("user", ts, text=text)
            elif role == "assistant":
                kind = "thinking" if fields.get("type") == "reasoning" else "text"
                part = self.b.part(kind, ts, text=text)
            else:
                part = self.b.part("system", ts, text=text)
                if role != "user":
                    fields = {"role": role, **fields}
            if fields:
                part["codex"] = fields
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
        return True

    def _output(self, payload: dict[str, JSON], ts: str) -> bool:
        call_id = payload.get("call_id")
        part = self.calls.get(call_id) if isinstance(call_id, str) else None
        if part is None:
            part = self.b.tool(ts, "", None)
            part["unmatched_call_id"] = call_id
        output = payload.get("output")
        text, whole = _output_text(output)
        part["output"] = text
        rest = {k: v for k, v in payload.items() if k not in ("type", "call_id", "output")}
        if not whole:
            rest["output"] = output
        if isinstance(output, dict) and output.get("success") is False:
            part["is_error"] = True
        code = _exit_code(text)
        if code is not None:
            part["exit_code"] = code
            part["is_error"] = code != 0
        rest["timestamp"] = ts
        part.setdefault("codex_output", {}).update(rest)
        self.b.seen(ts)
        return True

    def _event(self, payload: dict[str, JSON], ts: str, number: int) -> bool:
        kind = payload.get("type")
        if kind in UI_COPIES:
            text_key = "text" if kind == "agent_reasoning" else "message"
            text = payload.get(text_key)
            if not isinstance(text, str):
                return False
            rest = {k: v for k, v in payload.items() if k not in ("type", text_key)}
            meaningful = {k: v for k, v in rest.items() if v not in ([], None, "", "plain")}
            if meaningful:
                return False  # images or more: kept raw
            turn = len(self.b.turns)
            self.copies.append((turn, number, UI_COPIES[kind], text, {"type": kind, **rest}))
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
                part["exit_code"] = code
                part["is_error"] = code != 0
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
        self._place_copies()
        turns = self.b.turns
        for turn in turns:
            waiting = any(
                p.get("type") == "tool" and p.get("output") is None for p in turn["parts"]
            )
            if waiting and turn["status"] == "ok":
                turn["status"] = "running" if turn is turns[-1] else "cancelled"


def text_of_message(message: JSON) -> str:
    return message if isinstance(message, str) else json.dumps(message, ensure_ascii=False)


def convert(unit: Unit, problems: list[Problem]) -> Result:
    """The session of one rollout file."""
    lines = iter_jsonl(unit.path, problems)
    builder = SessionBuilder(AGENT, str(unit.path), _source_id(unit.path))
    converter = Converter(builder)
    for line in lines:
        converter.feed(line.number, line.value, line.text)
    converter.finish()
    codex_id = builder.origin.get("codex_id")
    if isinstance(codex_id, str) and codex_id != builder.source_id:
        builder.origin["file_id"] = builder.source_id
        builder.source_id = codex_id
    if not builder.turns and not builder.counts.raw and not builder.counts.mapped:
        return Result([], builder.counts)
    return Result([builder.document()], builder.counts)


def _source_id(path: Path) -> str:
    """The id in a rollout's file name (``rollout-<time>-<uuid>``), else its stem; the
    ``session_meta`` id replaces it when present."""
    stem = path.stem
    parts = stem.split("-")
    if len(parts) >= 6 and stem.startswith("rollout-"):
        return "-".join(parts[-5:])
    return stem
