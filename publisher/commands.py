"""What each CLI command does, as plain functions over the library (no typer here)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from .archive import Archive, ArchiveError, default_export_path, find_sessions_dir, read_config
from .model import Session
from .redact import Redactor, identifier_findings, load_values_file, redact_session
from .render import console
from .render.markdown import export_markdown
from .write import atomic_write, is_inside

PRINT_TARGET_RE = re.compile(r"\A(\d+)(?:\.(\d+))?\Z")


class UsageError(Exception):
    """A command line that is well-formed for the parser but means nothing (exit 2)."""


@dataclass(slots=True)
class Context:
    """What every command needs: the archive it works on."""

    archive: Archive

    @classmethod
    def open(cls, project: Path | None) -> Context:
        return cls(Archive(find_sessions_dir(project)))

    def session(self, target: str | None) -> Session:
        return self.archive.resolve(target) if target else self.archive.latest()


def make_redactor(redact: bool, values_file: Path | None) -> Redactor | None:
    """The redactor for ``--redact`` / ``--redact-values FILE`` (which implies it), or None."""
    if not redact and values_file is None:
        return None
    try:
        return Redactor.create(load_values_file(values_file) if values_file else ())
    except ValueError as exc:
        raise UsageError(str(exc)) from None


@dataclass(slots=True)
class ExportResult:
    """Where an export went and what redaction did."""

    path: Path | None
    """The written file, or None when printed to stdout."""
    redaction: str | None = None
    """``3 secrets redacted (…)`` when redaction was on."""
    warnings: list[str] = field(default_factory=list)
    """Secrets found in identifiers (kept as written)."""


def export(
    ctx: Context,
    name: str,
    out: str | None,
    fmt: str,
    stdout: TextIO,
    redactor: Redactor | None = None,
) -> ExportResult:
    """Export one session to a file or stdout, redacted first when ``redactor`` is given."""
    session = ctx.archive.resolve(name)
    result = ExportResult(path=None)
    if redactor is not None:
        counter = redactor.fresh()
        session = redact_session(session, counter)
        result.redaction = counter.summary()
        result.warnings = identifier_findings(session, counter)
    if fmt == "html":
        from .site.single import export_html

        chunks: Iterator[str] = export_html(session, redaction=result.redaction)
        suffix = ".html"
    else:
        chunks = export_markdown(session, redaction=result.redaction)
        suffix = ".md"
    if out == "-":
        for chunk in chunks:
            stdout.write(chunk)
        stdout.flush()
        return result
    if out is None:
        path = default_export_path(ctx.archive.folder, session.session_name)
        if suffix != ".md":
            path = path.with_suffix(suffix)
    else:
        path = Path(out)
    if is_inside(path, ctx.archive.folder):
        raise ArchiveError(f"{path}: refusing to write inside the sessions folder")
    atomic_write(path, chunks)
    result.path = path
    return result


def parse_history_args(args: list[str]) -> tuple[str | None, str | None]:
    """Split ``[n|all] [--thoughts [all]]`` in either order (``all`` after --thoughts binds to it)."""
    count: str | None = None
    thoughts: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--thoughts":
            thoughts = "excerpt"
            if i + 1 < len(args) and args[i + 1] == "all":
                thoughts = "all"
                i += 1
        elif arg.startswith("--thoughts="):
            value = arg.split("=", 1)[1]
            if value != "all":
                raise UsageError(f"--thoughts takes no value or 'all', got {value!r}")
            thoughts = "all"
        elif arg.startswith("-"):
            raise UsageError(f"history: no such option: {arg}")
        elif count is None:
            count = arg
        else:
            raise UsageError(f"history: unexpected argument {arg!r}")
        i += 1
    return count, thoughts


def history(
    ctx: Context, count: str | None, thoughts: str | None, run: str | None, color: bool
) -> Iterator[str]:
    if count is None:
        n: int | None = 10
    elif count == "all":
        n = None
    elif count.isdigit():
        n = int(count)
    else:
        raise UsageError(f"history: expected a number or 'all', got {count!r}")
    if thoughts not in (None, "excerpt", "all"):
        raise UsageError(f"--thoughts takes no value or 'all', got {thoughts!r}")
    session = ctx.session(run)
    yield from console.history_lines(session, n, thoughts, color)


def print_turn(ctx: Context, target: str, full: bool, run: str | None) -> Iterator[str]:
    match = PRINT_TARGET_RE.match(target)
    if not match:
        raise UsageError(f"print: expected N or N.M, got {target!r}")
    index = int(match.group(1))
    part = int(match.group(2)) if match.group(2) else None
    session = ctx.session(run)
    turn = session.turn(index)
    if turn is None:
        last = session.turns[-1].index if session.turns else 0
        raise ArchiveError(f"{session.session_name}: no turn #{index} (turns 1–{last})")
    if part is not None and not 1 <= part <= len(turn.parts):
        raise ArchiveError(
            f"{session.session_name}: turn #{index} has no part {part} ({len(turn.parts)} parts)"
        )
    limit = 0 if full else print_max_chars(ctx)
    yield from console.print_lines(session, turn, part, limit)


def print_max_chars(ctx: Context) -> int:
    value = read_config(ctx.archive.folder).get("print_max_chars", console.DEFAULT_PRINT_MAX_CHARS)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return console.DEFAULT_PRINT_MAX_CHARS


def sessions(ctx: Context) -> tuple[list[str], list[str]]:
    """The listing lines, and one warning line per file that does not load."""
    entries = ctx.archive.entries()
    warnings = [f"{e.file_name}: {e.failure.reason}" for e in entries if e.failure is not None]
    return list(console.sessions_table(entries)), warnings


def preview(ctx: Context, name: str) -> Iterator[str]:
    session = ctx.archive.resolve(name)
    children = sorted(
        e.session.session_name
        for e in ctx.archive.entries()
        if e.session is not None and e.session.parent_id == session.session_name
    )
    yield from console.preview_lines(session, children)
