"""What each CLI command does, as plain functions over the library (no typer here)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from .archive import Archive, ArchiveError, default_export_path, find_sessions_dir, read_config
from .gate import (
    KINDS,
    Loader,
    Member,
    counts,
    kind_lines,
    parse_kinds,
    session_findings,
    session_tree,
)
from .model import Session
from .redact import Redactor, identifier_findings, load_values_file, redact_session
from .render import console
from .render.markdown import export_markdown
from .render.text import terminal_safe
from .render.view import plural
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
    gate: GateReport | None = None
    """What ``--fail-on`` / ``--summary`` found, when either was given."""


def export(
    ctx: Context,
    name: str,
    out: str | None,
    fmt: str,
    stdout: TextIO,
    redactor: Redactor | None = None,
    gate: GateOptions | None = None,
) -> ExportResult:
    """Export one session to a file or stdout, redacted first when ``redactor`` is given.

    With ``gate`` (``--fail-on``, ``--summary``), the export is written first, then the
    summary, and the result says what was found; ``fmt == "junit"`` writes the JUnit report.
    """
    if gate is not None and gate.summary == "-" and out == "-":
        raise UsageError("--summary - and --out - cannot both write to stdout")
    session = ctx.archive.resolve(name)
    result = ExportResult(path=None)
    if redactor is not None:
        counter = redactor.fresh()
        session = redact_session(session, counter)
        result.redaction = counter.summary()
        result.warnings = identifier_findings(session, counter)
    members: list[Member] = []
    if fmt == "junit" or (gate is not None and gate.active):
        members = tree(ctx, session, gate is None or gate.sub_sessions, redactor)
    if fmt == "html":
        from .site.single import export_html

        chunks: Iterator[str] = export_html(session, redaction=result.redaction)
        suffix = ".html"
    elif fmt == "junit":
        from .render.junit import junit_report

        kinds = gate.kinds if gate is not None and gate.kinds is not None else frozenset()
        chunks = junit_report(members, kinds)
        suffix = ".xml"
    else:
        chunks = export_markdown(session, redaction=result.redaction)
        suffix = ".md"
    if out == "-":
        for chunk in chunks:
            stdout.write(chunk)
        stdout.flush()
    else:
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
    if gate is not None and gate.active:
        result.gate = run_gate(ctx, members, gate, stdout)
    return result


# -- CI: --fail-on, --summary, --link-base and `check` (issue 16) ---------------------------


@dataclass(slots=True)
class GateOptions:
    """The CI options of ``export`` and ``check``."""

    kinds: frozenset[str] | None = None
    """The ``--fail-on`` kinds, or None when the option was not given (no gate)."""
    sub_sessions: bool = True
    """Count sub-sessions, at any depth, with their parent (``--no-sub-sessions``: not)."""
    summary: str | None = None
    """``--summary FILE`` (``-``: stdout), or None."""
    link_base: str | None = None
    """``--link-base URL``: where the site (or, ending in ``.html``, the page) is published."""

    @property
    def active(self) -> bool:
        """True when there is something to gate on or summarise."""
        return self.kinds is not None or self.summary is not None

    @classmethod
    def parse(
        cls,
        fail_on: str | None,
        sub_sessions: bool = True,
        summary: str | None = None,
        link_base: str | None = None,
        default_kinds: frozenset[str] | None = None,
    ) -> GateOptions:
        """Check the options; :class:`UsageError` (exit 2) names what is wrong."""
        from .render.summary import check_link_base

        try:
            kinds = parse_kinds(fail_on) if fail_on is not None else default_kinds
            if link_base is not None:
                check_link_base(link_base)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if summary == "":
            raise UsageError("--summary: expected a file name or -")
        if link_base is not None and summary is None:
            raise UsageError("--link-base only applies with --summary")
        return cls(kinds, sub_sessions, summary, link_base)


@dataclass(slots=True)
class GateReport:
    """What the gate found, ready for the command line."""

    lines: list[str] = field(default_factory=list)
    """One terminal-safe line per kind found (``denied: turn 7.2: permission denied: …``)."""
    failed: bool = False
    """True when a ``--fail-on`` kind was found (exit status 1)."""
    verdict: str = ""
    """``NAME: failed: …`` or ``NAME: passed: …`` (empty with no ``--fail-on``)."""
    warnings: list[str] = field(default_factory=list)
    """Sub-sessions that could not be loaded, one line each."""
    summary_path: Path | None = None
    """Where the summary was written (None: stdout or no summary)."""


def tree(
    ctx: Context, root: Session, sub_sessions: bool, redactor: Redactor | None
) -> list[Member]:
    """``root`` and, with ``sub_sessions``, its sub-sessions from the archive (redacted too)."""
    if not sub_sessions:
        return session_tree(root)

    def load(name: str) -> Session | str:
        try:
            sub = ctx.archive.resolve(f"session:{name}")
        except ArchiveError as exc:
            return str(exc)
        return redact_session(sub, redactor.fresh()) if redactor is not None else sub

    loader: Loader = load
    return session_tree(root, loader)


def check(
    ctx: Context, name: str, gate: GateOptions, stdout: TextIO, redactor: Redactor | None = None
) -> GateReport:
    """``polyglav check``: the gate (and the summary) without an export."""
    if gate.kinds is None:
        raise UsageError("check: --fail-on is required")
    session = ctx.archive.resolve(name)
    if redactor is not None:
        session = redact_session(session, redactor.fresh())
    return run_gate(ctx, tree(ctx, session, gate.sub_sessions, redactor), gate, stdout)


def run_gate(ctx: Context, members: list[Member], gate: GateOptions, stdout: TextIO) -> GateReport:
    """Write the summary when asked, and say what the gated kinds found in the tree."""
    from .render.summary import ci_summary, show_format_chars

    def safe(text: str) -> str:
        return terminal_safe(show_format_chars(text))

    root = members[0].session
    assert root is not None
    report = GateReport()
    report.warnings = [
        safe(f"sub-session {m.name} of {m.parent}: {m.problem}") for m in members if m.problem
    ]
    if gate.summary is not None:
        text = ci_summary(members, gate.kinds, gate.link_base)
        if gate.summary == "-":
            stdout.write(text)
            stdout.flush()
        else:
            path = Path(gate.summary)
            if is_inside(path, ctx.archive.folder):
                raise ArchiveError(f"{path}: refusing to write inside the sessions folder")
            atomic_write(path, [text])
            report.summary_path = path
    if gate.kinds is None:
        return report
    kinds = gate.kinds
    found = [
        finding
        for member in members
        if member.session is not None
        for finding in session_findings(member.session, kinds)
    ]
    name = root.session_name
    listed = ",".join(kind for kind in KINDS if kind in kinds)
    sessions = plural(sum(1 for m in members if m.session is not None), "session")
    report.lines = [safe(line) for line in kind_lines(found, name)]
    report.failed = bool(found)
    if found:
        tally = ", ".join(f"{n} {kind}" for kind, n in counts(found).items())
        report.verdict = safe(
            f"{name}: failed: --fail-on {listed} matched {plural(len(found), 'finding')} "
            f"({tally}) in {sessions}"
        )
    else:
        report.verdict = safe(f"{name}: passed: nothing matched --fail-on {listed} in {sessions}")
    return report


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
