"""Convert a Polyglav archive to Claude Code's transcript format, for the peer tools.

``claude-code-log`` and ``claude-code-transcripts`` read Claude Code's JSONL transcripts,
``~/.claude/projects/<project>/<session>.jsonl``: one JSON object per line, each with
``type`` (``user``, ``assistant``, ``system``, ``summary``), ``uuid``/``parentUuid`` (a
chain), ``sessionId``, ``timestamp``, ``cwd``, ``version``, ``userType``, ``isSidechain``
and, for user/assistant lines, an Anthropic ``message`` whose ``content`` holds blocks
(``text``, ``thinking``, ``tool_use``, ``tool_result``).

Every Polyglav session that loads becomes one ``<uuid>.jsonl`` in one project folder (the
archive is one project; sub-sessions become sessions of their own, as each has its own
page on the Polyglav site):

========================  ============================================================
Polyglav                  Claude Code JSONL
========================  ============================================================
``user`` part             ``user`` line, ``message.content`` = the prompt (string)
``thinking`` part         ``assistant`` line with a ``thinking`` block
``text`` part             ``assistant`` line with a ``text`` block
``tool`` part             ``assistant`` line with a ``tool_use`` block, then a ``user``
                          line with the ``tool_result`` block (output, ``is_error``);
                          tool names mapped to Claude's (``run_command`` → ``Bash``,
                          ``file_read`` → ``Read``, ``delegate`` → ``Task``...)
``system`` part           ``user`` line with ``isMeta: true``
``/compact`` record       ``system`` line (``subtype: compact_boundary``) and a ``user``
                          line with ``isCompactSummary: true`` holding the summary
other ``command``         ``user`` line ``<command-name>/model</command-name>...``
``errors`` entries        ``assistant`` lines with ``isApiErrorMessage: true``
``permissions``           no counterpart in a Claude Code transcript (left out)
========================  ============================================================

Real transcripts also repeat every tool output in ``toolUseResult``; that copy is left out
so the peers read no more bytes than the content needs. Files that do not load in Polyglav
have no counterpart (counted in the report).

Usage::

    python benchmarks/convert_claude.py SESSIONS_DIR PROJECTS_DIR
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, os.environ.get("BENCH_SOURCE") or str(Path(__file__).resolve().parent.parent))

from publisher.loader import SessionLoadError, read_session
from publisher.model import CommandPart, Session, TextualPart, ToolPart

NAMESPACE = uuid.UUID("5b0d3a3e-1f7c-4a52-9a43-2f1c7c0b7e11")
PROJECT = "-home-dana-src-bench"
CWD = "/home/dana/src/bench"
CLAUDE_VERSION = "2.0.14"

TOOL_NAMES = {
    "run_command": "Bash",
    "file_read": "Read",
    "file_write": "Write",
    "edit": "Edit",
    "grep": "Grep",
    "list_dir": "LS",
    "web_search": "WebSearch",
    "http_get": "WebFetch",
    "delegate": "Task",
}


def _tool_input(name: str, value: Any) -> dict[str, Any]:
    """Polyglav tool input → the input shape of the matching Claude Code tool."""
    inp = dict(value) if isinstance(value, dict) else {"value": value}
    if name == "run_command":
        return {"command": inp.get("command", ""), "description": f"Run in {inp.get('cwd', CWD)}"}
    if name == "file_read":
        return {"file_path": inp.get("path", "")}
    if name == "file_write":
        return {"file_path": inp.get("path", ""), "content": inp.get("content", "")}
    if name == "edit":
        return {
            "file_path": inp.get("path", ""),
            "old_string": inp.get("old", ""),
            "new_string": inp.get("new", ""),
        }
    if name == "grep":
        return {"pattern": inp.get("pattern", ""), "path": inp.get("path", "")}
    if name == "delegate":
        return {
            "description": f"Delegate to {inp.get('role', '')}",
            "prompt": inp.get("task", ""),
            "subagent_type": inp.get("role", "general-purpose"),
        }
    if name == "http_get":
        return {"url": inp.get("url", ""), "prompt": "Fetch"}
    return inp


def _stamp(value: str) -> str:
    """``2026-08-17T12:00:05+00:00`` → ``2026-08-17T12:00:05.000Z`` (Claude Code's form)."""
    if value.endswith("+00:00"):
        return value[:-6] + ".000Z"
    return value or "2026-01-01T00:00:00.000Z"


class Lines:
    """Accumulates the JSONL lines of one session, chaining ``parentUuid``."""

    def __init__(self, session: Session) -> None:
        self.name = session.session_name
        self.session_id = str(uuid.uuid5(NAMESPACE, session.session_name))
        self.parent: str | None = None
        self.count = 0
        self.lines: list[str] = []
        self.model = "claude-sonnet-4-20250514"

    def add(self, entry_type: str, timestamp: str, **fields: Any) -> str:
        self.count += 1
        uid = str(uuid.uuid5(NAMESPACE, f"{self.name}:{self.count}"))
        entry: dict[str, Any] = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": CWD,
            "sessionId": self.session_id,
            "version": CLAUDE_VERSION,
            "gitBranch": "main",
            "type": entry_type,
            **fields,
            "uuid": uid,
            "timestamp": _stamp(timestamp),
        }
        self.lines.append(json.dumps(entry, ensure_ascii=False))
        self.parent = uid
        return uid

    def user(self, timestamp: str, content: Any, **fields: Any) -> None:
        self.add("user", timestamp, message={"role": "user", "content": content}, **fields)

    def assistant(self, timestamp: str, block: dict[str, Any], model: str, **fields: Any) -> None:
        message = {
            "id": f"msg_{uuid.uuid5(NAMESPACE, f'{self.name}:m{self.count}').hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": model or self.model,
            "content": [block],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 4, "cache_read_input_tokens": 12000, "output_tokens": 180},
        }
        self.add(
            "assistant", timestamp, message=message, requestId=f"req_{self.count:020d}", **fields
        )


def convert_session(session: Session) -> tuple[str, str]:
    """(session uuid, JSONL text) of one session."""
    out = Lines(session)
    for turn in session.turns:
        model = turn.model
        for number, part in enumerate(turn.parts, start=1):
            ts = part.timestamp or turn.started_at
            if isinstance(part, TextualPart):
                if part.type == "user":
                    out.user(ts, part.text)
                elif part.type == "thinking":
                    out.assistant(
                        ts, {"type": "thinking", "thinking": part.text, "signature": ""}, model
                    )
                elif part.type == "text":
                    out.assistant(ts, {"type": "text", "text": part.text}, model)
                else:  # system note
                    out.user(ts, part.text, isMeta=True)
            elif isinstance(part, ToolPart):
                tool_id = f"toolu_{uuid.uuid5(NAMESPACE, f'{session.session_name}:{turn.index}.{number}').hex[:24]}"
                block = {
                    "type": "tool_use",
                    "id": tool_id,
                    "name": TOOL_NAMES.get(part.name, part.name),
                    "input": _tool_input(part.name, part.input),
                }
                out.assistant(ts, block, model)
                if part.output is not None:
                    result = {
                        "tool_use_id": tool_id,
                        "type": "tool_result",
                        "content": part.output,
                        "is_error": part.is_error,
                    }
                    out.user(ts, [result])
            elif isinstance(part, CommandPart):
                if part.summary is not None:
                    out.add(
                        "system",
                        ts,
                        content="Conversation compacted",
                        subtype="compact_boundary",
                        level="info",
                        isMeta=False,
                        compactMetadata={"trigger": "manual", "preTokens": 90000},
                    )
                    text = (
                        "This session is being continued from a previous conversation that ran out "
                        f"of context. The conversation is summarized below:\n{part.summary}"
                    )
                    out.user(ts, text, isCompactSummary=True, isVisibleInTranscriptOnly=True)
                else:
                    name, _, args = part.text.partition(" ")
                    out.user(
                        ts,
                        f"<command-name>{name}</command-name>\n<command-message>{name.lstrip('/')}"
                        f"</command-message>\n<command-args>{args}</command-args>",
                    )
    for error in session.errors:
        out.assistant(
            error.timestamp,
            {"type": "text", "text": f"API Error: {error.code} {error.message}"},
            "<synthetic>",
            isApiErrorMessage=True,
        )
    return out.session_id, "\n".join(out.lines) + "\n"


def convert_archive(sessions_dir: Path, projects_dir: Path) -> dict[str, Any]:
    """Write ``projects_dir/<project>/<uuid>.jsonl`` for every session that loads."""
    project = projects_dir / PROJECT
    project.mkdir(parents=True, exist_ok=True)
    converted = skipped = written = 0
    for path in sorted(sessions_dir.glob("*.json")):
        try:
            session = read_session(path, sessions_dir)
        except SessionLoadError:
            skipped += 1
            continue
        session_id, text = convert_session(session)
        data = text.encode("utf-8", "surrogatepass")
        (project / f"{session_id}.jsonl").write_bytes(data)
        converted += 1
        written += len(data)
    return {
        "project_dir": str(project),
        "sessions": converted,
        "not_loaded": skipped,
        "bytes": written,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Convert a Polyglav archive to Claude Code JSONL transcripts."
    )
    parser.add_argument("sessions_dir", type=Path)
    parser.add_argument(
        "projects_dir", type=Path, help="written as <projects_dir>/" + PROJECT + "/*.jsonl"
    )
    args = parser.parse_args(argv)
    print(json.dumps(convert_archive(args.sessions_dir, args.projects_dir), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
