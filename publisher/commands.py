"""What each CLI command does, as plain functions over the library (no typer here).

The renderers and the redaction rules are imported by the functions that use them: the
read commands (``sessions``, ``history``, ``print``) start without them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from .archive import (
    Archive,
    ArchiveError,
    default_export_path,
    find_sessions_dir,
    listing_text,
    project_root,
    read_config,
)
from .errors import UsageError
from .model import Session
from .render import console
from .write import atomic_write, is_inside

if TYPE_CHECKING:
    from .ci import GateOptions, GateReport
    from .redact import Redactor
    from .usage import Prices, Spend

PRINT_TARGET_RE = re.compile(r"\A(\d+)(?:\.(\d+))?\Z")


@dataclass(slots=True)
class Context:
    """What every command needs: the archive it works on."""

    archive: Archive

    @classmethod
    def open(cls, project: Path | None) -> Context:
        folder = find_sessions_dir(project)
        return cls(Archive(folder, partial(default_catalog, folder)))

    def session(self, target: str | None) -> Session:
        return self.archive.resolve(target) if target else self.archive.latest()


def open_run(project: Path | None, run: str | None) -> tuple[Context, Session]:
    """The archive and the session ``--run`` names (the latest one without it)."""
    if run is None:
        ctx = Context.open(project)
        return ctx, ctx.archive.latest()
    ctx, target = open_target(project, run)
    return ctx, ctx.archive.resolve(target)


def open_target(project: Path | None, name: str) -> tuple[Context, str]:
    """The archive to read and the target in it, for a command naming one session.

    ``name`` may also be the path of a session file: without ``--project`` its folder is
    the archive; with ``--project`` it must be a file of that archive."""
    path = Path(name)
    if name.endswith(".json") and ("/" in name or "\\" in name) and path.is_file():
        if project is None:
            return Context(Archive(path.parent, partial(default_catalog, path.parent))), path.name
        ctx = Context.open(project)
        if path.resolve().parent != ctx.archive.folder.resolve():
            raise ArchiveError(
                f"{name}: not a file of {ctx.archive.folder} (--project); give its name, "
                "or the file without --project"
            )
        return ctx, path.name
    return Context.open(project), name


def site_out(sessions_dir: Path, out: Path | None) -> Path:
    """The site folder: ``--out``, else ``.polyglav/site/`` of the project (of the current
    folder for a bare folder of session files, which is never written to)."""
    if out is not None:
        return out
    root = project_root(sessions_dir)
    if root == sessions_dir:
        return Path(".polyglav") / "site"
    return root / ".polyglav" / "site"


def default_catalog(sessions_dir: Path) -> Path:
    """The catalog the CLI reads for a sessions folder: the one a ``polyglav site build``
    of it keeps with its default options (its site folder :func:`site_out`, that folder's
    default cache folder). A site built into another ``--out`` or ``--cache-dir`` keeps its
    catalog elsewhere: the CLI then reads the files (docs/catalog.md)."""
    from .site.context import CachePaths, default_cache_dir

    return CachePaths(default_cache_dir(site_out(sessions_dir, None))).catalog


def make_redactor(redact: bool, values_file: Path | None) -> Redactor | None:
    """The redactor for ``--redact`` / ``--redact-values FILE`` (which implies it), or None."""
    if not redact and values_file is None:
        return None
    from .redact import Redactor, load_values_file

    try:
        return Redactor.create(load_values_file(values_file) if values_file else ())
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def make_prices(path: Path | None) -> Prices:
    """The price table of ``--prices FILE`` (the shipped one without it); a file that
    cannot be used is a :class:`UsageError` naming it and why."""
    from .usage import PriceFileError, Prices, load_price_file

    if path is None:
        return Prices()
    try:
        return Prices(load_price_file(path))
    except PriceFileError as exc:
        raise UsageError(f"--prices: {exc}") from None


@dataclass(slots=True)
class ExportResult:
    """Where an export went and what redaction did."""

    path: Path | None
    """The written file, or None when printed to stdout."""
    redaction: str | None = None
    """``3 secrets redacted (…)`` when redaction was on."""
    warnings: list[str] = field(default_factory=list)
    """What prepare says of the session: a file name that is not its session name, secrets
    found in identifiers (kept as written)."""
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
    from .prepare import prepare
    from .render.markdown import export_markdown

    if gate is not None and gate.summary == "-" and out == "-":
        raise UsageError("--summary - and --out - cannot both write to stdout")
    prepared = prepare(ctx.archive.resolve(name), redactor)
    session = prepared.session
    prices = gate.prices if gate is not None else None
    result = ExportResult(
        path=None, redaction=prepared.redaction_note, warnings=list(prepared.warnings)
    )
    members = []
    if fmt == "junit" or (gate is not None and gate.active):
        from .ci import tree

        members = tree(ctx, session, gate is None or gate.sub_sessions, redactor)
    if fmt == "html":
        from .ci import tree
        from .site.single import export_html

        # The sub-sessions at any depth go into the same file (unless --no-sub-sessions).
        if not members:  # else the gate's: it says which did not load
            members = tree(ctx, session, gate is None or gate.sub_sessions, redactor)
            result.warnings.extend(
                f"sub-session {m.name} of {m.parent}: {m.problem}" for m in members if m.problem
            )
        chunks: Iterator[str] = export_html(
            session, redaction=result.redaction, members=members, prices=prices
        )
        suffix = ".html"
    elif fmt == "junit":
        from .render.junit import junit_report

        kinds = gate.kinds if gate is not None and gate.kinds is not None else frozenset()
        chunks = junit_report(members, kinds, prices, gate.budget if gate is not None else None)
        suffix = ".xml"
    else:
        chunks = export_markdown(session, redaction=result.redaction, prices=prices)
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
        from .ci import run_gate

        result.gate = run_gate(ctx, members, gate, stdout)
    return result


def parse_history_args(args: list[str]) -> tuple[int | None, str | None]:
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
    return history_count(count), thoughts


def history_count(count: str | None) -> int | None:
    """``N`` or ``all`` (None: every turn); 10 when not given."""
    if count is None:
        return 10
    if count == "all":
        return None
    if count.isdigit():
        return int(count)
    raise UsageError(f"history: expected a number or 'all', got {count!r}")


def history(
    session: Session, count: int | None, thoughts: str | None, color: bool
) -> Iterator[str]:
    """The ``/history`` lines of the last ``count`` turns (None: all)."""
    if thoughts not in (None, "excerpt", "all"):
        raise UsageError(f"--thoughts takes no value or 'all', got {thoughts!r}")
    yield from console.history_lines(session, count, thoughts, color)


def parse_print_target(target: str) -> tuple[int, int | None]:
    """``N`` or ``N.M`` → (turn index, part number or None)."""
    match = PRINT_TARGET_RE.match(target)
    if not match:
        raise UsageError(f"print: expected N or N.M, got {target!r}")
    return int(match.group(1)), int(match.group(2)) if match.group(2) else None


def print_turn(ctx: Context, session: Session, target: str, full: bool) -> Iterator[str]:
    index, part = parse_print_target(target)
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
    """The listing lines, and one warning line per file that does not load (or whose
    session_name is not its name). A file the site build's catalog knows as it is now is
    listed from there (:meth:`.archive.Archive.shown`), the others read."""
    names, known = ctx.archive.shown()
    read = iter(ctx.archive.listed([n for n, k in zip(names, known, strict=True) if k is None]))
    listings: list[str] = []
    warnings: list[str] = []
    for shown in known:
        if shown is None:
            entry = next(read)
            listings.append(listing_text(console.listing_row(entry)))
            warnings.extend(console.listing_warnings(entry))
        else:
            listings.append(shown[0])
            warnings.extend(shown[1])
    if not names:
        warnings.append(f"{ctx.archive.folder}: no session files")
    return console.sessions_table(listings), warnings


def sessions_json(ctx: Context, prices: Prices) -> tuple[list[str], list[str]]:
    """``polyglav sessions --format json``: a JSON array, one object a session (a line
    each, ``docs/usage.md`` has the schema), and one warning line per file that does not
    load."""
    import json

    from .gate import FAILURE_KINDS
    from .usage import Spend

    entries = ctx.archive.listing(prices=prices)
    loaded = {e.session_name: e for e in entries if e.loads and e.facts is not None}
    found: dict[str, list[str]] = {}
    for e in sorted(loaded.values(), key=lambda e: e.session_name):
        if e.parent_id:
            found.setdefault(e.parent_id, []).append(e.session_name)

    def children(name: str) -> list[str]:
        facts = loaded[name].facts
        declared = list(facts.sub_sessions) if facts is not None else []
        return list(dict.fromkeys([*declared, *found.get(name, [])]))

    def tree_spend(name: str) -> Spend:
        total, seen, stack = Spend(), {name}, [name]
        while stack:
            here = loaded[stack.pop()]
            assert here.facts is not None
            total = total.plus(here.facts.spend)
            for child in children(here.session_name):
                if child in loaded and child not in seen:
                    seen.add(child)
                    stack.append(child)
        return total

    lines, warnings = [], []
    for e in entries:
        if e.failure is not None:
            warnings.append(f"{e.file_name}: {e.failure.reason}")
            item: dict[str, object] = {
                "file": e.file_name,
                "name": e.failure.name,
                "error": e.failure.reason,
            }
        else:
            facts = e.facts
            assert facts is not None
            own, total = facts.spend, tree_spend(e.session_name)
            findings = dict(facts.findings)
            item = {
                "name": e.session_name,
                "file": e.file_name,
                "id": e.session_id,
                "kind": e.kind,
                "role": e.role,
                "version": e.version,
                "title": facts.title,
                "parent": e.parent_id,
                "sub_sessions": children(e.session_name),
                "created_at": facts.created_at,
                "updated_at": e.updated_at,
                "turns": e.turns,
                "tool_calls": facts.tool_calls,
                "errors": facts.errors,
                "findings": findings,
                "failures": sum(n for k, n in findings.items() if k in FAILURE_KINDS),
                "tokens": own.tokens.as_dict() if own.tokens is not None else None,
                "tokens_total": total.tokens.as_dict() if total.tokens is not None else None,
                "cost_usd": own.cost_usd,
                "cost_usd_total": total.cost_usd,
                "unpriced_models": list(own.unpriced_models),
                "unpriced_models_total": list(total.unpriced_models),
                "prices": prices.label if total.tokens is not None else None,
            }
        lines.append(json.dumps(item, ensure_ascii=True))
    if not entries:
        warnings.append(f"{ctx.archive.folder}: no session files")
    body = [
        ("[" if i == 0 else " ") + line + ("," if i < len(lines) - 1 else "")
        for i, line in enumerate(lines)
    ]
    return ([*body, "]"] if body else ["[]"]), warnings


def preview(ctx: Context, name: str) -> Iterator[str]:
    session = ctx.archive.resolve(name)
    children = sorted(
        e.session_name
        for e in ctx.archive.listing()
        if e.loads and e.parent_id == session.session_name
    )
    yield from console.preview_lines(session, children)


@dataclass(slots=True)
class RedactReport:
    """What ``polyglav redact-report`` found."""

    lines: list[str]
    """One terminal-safe line per secret: session, turn, field, kind, masked preview."""
    summary: str
    """``12 secrets in 3 of 40 sessions (…)`` or ``no secret found in 40 sessions``."""
    warnings: list[str] = field(default_factory=list)
    """Files that do not load (with ``--all``), one line each."""


def redact_report(ctx: Context, target: str | None, redactor: Redactor) -> RedactReport:
    """Every secret ``redactor`` would replace in the session ``target`` (None: in every
    session file of the archive), with where it is and a masked preview."""
    from .loader import SessionLoadError
    from .render.text import terminal_safe
    from .secret_report import describe, secret_findings

    warnings: list[str] = []
    if target is not None:
        sessions = [ctx.archive.resolve(target)]
    else:
        sessions = []
        for path in ctx.archive.files():
            try:
                sessions.append(ctx.archive.read(path))
            except SessionLoadError as exc:
                warnings.append(terminal_safe(f"{exc.file_name}: does not load: {exc.reason}"))
    found = [f for session in sessions for f in secret_findings(session, redactor)]
    lines = []
    for f in found:
        kept = " (kept as written by --redact: a session identifier)" if f.kept else ""
        lines.append(terminal_safe(f"{f.session} {f.where} {f.field}: {f.kind}{kept}: {f.preview}"))
    return RedactReport(lines, describe(found, len(sessions)), warnings)
