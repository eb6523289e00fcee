"""CI: what ``--fail-on`` gates on, the ``--summary`` for a job page, and ``polyglav check``
(issue 16; docs/ci.md). The findings themselves are :mod:`.gate`; the summary and the JUnit
report are :mod:`.render.summary` and :mod:`.render.junit`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from .archive import ArchiveError
from .commands import Context
from .errors import UsageError
from .gate import (
    KINDS,
    Loader,
    Member,
    counts,
    kind_lines,
    parse_kinds,
    session_findings,
    session_tree,
    spread,
)
from .model import Session
from .prepare import prepare
from .render.text import terminal_safe
from .render.view import plural
from .write import atomic_write, is_inside

if TYPE_CHECKING:
    from .redact import Redactor
    from .usage import Prices, Spend

MAX_BUDGET_USD = 10**9
"""The largest ``--max-cost`` taken (dollars)."""


@dataclass(slots=True, frozen=True)
class Budget:
    """``--max-cost`` and ``--max-tokens``: what a run (with its sub-sessions) may spend."""

    max_micro_usd: int | None = None
    """``--max-cost``, in micro-dollars (None: not given)."""
    max_tokens: int | None = None
    """``--max-tokens`` (None: not given)."""

    @property
    def active(self) -> bool:
        return self.max_micro_usd is not None or self.max_tokens is not None

    @classmethod
    def parse(cls, max_cost: str | None, max_tokens: int | None) -> Budget:
        """Check the options; :class:`UsageError` (exit 2) names what is wrong."""
        from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

        micro = None
        if max_cost is not None:
            try:
                amount = Decimal(max_cost.strip().removeprefix("$"))
                ok = amount.is_finite() and 0 <= amount <= MAX_BUDGET_USD
            except InvalidOperation:
                ok = False
            if not ok:
                raise UsageError(
                    f"--max-cost: expected an amount of dollars from 0 to {MAX_BUDGET_USD:,}, "
                    f"got {max_cost!r}"
                )
            micro = int((amount * 10**6).to_integral_value(rounding=ROUND_HALF_EVEN))
        if max_tokens is not None and max_tokens < 0:
            raise UsageError(f"--max-tokens: expected a count from 0, got {max_tokens}")
        return cls(micro, max_tokens)

    def over(self, spend: Spend) -> list[str]:
        """One line per limit ``spend`` passes, or cannot be checked against (no usage
        recorded; a cost with unpriced tokens): such a run fails, never passes unseen."""
        from .render.view import count, unpriced_note, usd

        lines = []
        if self.max_tokens is not None:
            limit = f"--max-tokens {count(self.max_tokens)}"
            if spend.tokens is None:
                lines.append(f"tokens unknown: the log records no usage ({limit})")
            elif spend.tokens.total > self.max_tokens:
                lines.append(f"{count(spend.tokens.total)} tokens, over {limit}")
        if self.max_micro_usd is not None:
            limit = f"--max-cost {usd(self.max_micro_usd)}"
            micro = spend.micro_usd
            if spend.tokens is None:
                lines.append(f"cost unknown: the log records no usage ({limit})")
            elif micro is None:
                lines.append(f"cost unknown: {unpriced_note(spend)} ({limit}; --prices FILE)")
            elif micro > self.max_micro_usd:
                lines.append(f"cost {usd(micro)}, over {limit}")
        return lines


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
    budget: Budget = field(default_factory=Budget)
    """``--max-cost`` and ``--max-tokens``."""
    prices: Prices | None = None
    """The price table (``--prices``; the shipped one when None)."""

    @property
    def active(self) -> bool:
        """True when there is something to gate on or summarise."""
        return self.kinds is not None or self.summary is not None or self.budget.active

    def budget_text(self) -> str:
        """``--max-cost $1.0000, --max-tokens 1,000,000`` (the limits given)."""
        from .render.view import count, usd

        said = []
        if self.budget.max_micro_usd is not None:
            said.append(f"--max-cost {usd(self.budget.max_micro_usd)}")
        if self.budget.max_tokens is not None:
            said.append(f"--max-tokens {count(self.budget.max_tokens)}")
        return ", ".join(said)

    @classmethod
    def parse(
        cls,
        fail_on: str | None,
        sub_sessions: bool = True,
        summary: str | None = None,
        link_base: str | None = None,
        default_kinds: frozenset[str] | None = None,
        budget: Budget | None = None,
        prices: Prices | None = None,
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
        return cls(kinds, sub_sessions, summary, link_base, budget or Budget(), prices)


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
    budget: list[str] = field(default_factory=list)
    """One terminal-safe line per ``--max-cost`` / ``--max-tokens`` limit passed (or that
    could not be checked)."""
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
        return prepare(sub, redactor).session

    loader: Loader = load
    return session_tree(root, loader)


def check(
    ctx: Context, name: str, gate: GateOptions, stdout: TextIO, redactor: Redactor | None = None
) -> GateReport:
    """``polyglav check``: the gate (and the summary) without an export."""
    if gate.kinds is None:
        raise UsageError("check: --fail-on is required")
    session = prepare(ctx.archive.resolve(name), redactor).session
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
    prices = gate.prices or _shipped()
    if gate.summary is not None:
        text = ci_summary(members, gate.kinds, gate.link_base, prices, gate.budget)
        if gate.summary == "-":
            stdout.write(text)
            stdout.flush()
        else:
            path = Path(gate.summary)
            if is_inside(path, ctx.archive.folder):
                raise ArchiveError(f"{path}: refusing to write inside the sessions folder")
            atomic_write(path, [text])
            report.summary_path = path
    over = gate.budget.over(tree_spend(members, prices)) if gate.budget.active else []
    if gate.kinds is None and not over:
        if gate.budget.active:
            report.verdict = safe(f"{root.session_name}: passed: within {gate.budget_text()}")
        return report
    kinds = gate.kinds or frozenset()
    found = [
        finding
        for member in members
        if member.session is not None
        for finding in session_findings(member.session, kinds)
    ]
    name = root.session_name
    listed = ",".join(kind for kind in KINDS if kind in kinds)
    searched = sum(1 for m in members if m.session is not None)
    report.lines = [safe(line) for line in kind_lines(found, name)]
    report.budget = [safe(line) for line in over]
    report.failed = bool(found or over)
    said = []
    if found:
        tally = ", ".join(f"{n} {kind}" for kind, n in counts(found).items())
        said.append(
            f"--fail-on {listed} matched {plural(len(found), 'finding')} "
            f"({tally}) in {spread(found, searched)}"
        )
    said.extend(over)
    if said:
        report.verdict = safe(f"{name}: failed: " + "; ".join(said))
    else:
        sessions = plural(searched, "session")
        within = f", within {gate.budget_text()}" if gate.budget.active else ""
        gated = f"nothing matched --fail-on {listed} in {sessions}" if gate.kinds else sessions
        report.verdict = safe(f"{name}: passed: {gated}{within}")
    return report


def tree_spend(members: list[Member], prices: Prices) -> Spend:
    """What a tree of sessions spent, each loaded session once (:mod:`.usage`)."""
    from .usage import Spend, session_spend

    total = Spend()
    for member in members:
        if member.session is not None:
            total = total.plus(session_spend(member.session, prices))
    return total


def _shipped() -> Prices:
    from .usage import Prices

    return Prices()
