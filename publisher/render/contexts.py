"""What each template receives: one typed record per template, fields named, never positions.

A template gets one object and reads its attributes (jinja2's ``page.session`` is Python's
``page.session``):

=========================  ==========  ================================================
template                   variable    record
=========================  ==========  ================================================
``session.html``           ``page``    :class:`SessionPage`
``single.html``            ``page``    :class:`SinglePage` (a :class:`SessionPage`)
``index.html``             ``page``    :class:`IndexPage`
``base.html``              ``page``    whichever of the above extends it (reads ``root``)
``turn.html``              ``t``       :class:`TurnView`
``turn_meta.html``         ``t``       :class:`TurnView` (included by ``turn.html``)
``parts/<kind>.html``      ``p``       the part's :class:`PartView`, beside ``turn.html``'s
                                       ``t`` and ``m`` (``macros.html``), as it includes them
``index_row.html``         ``row``     :class:`IndexRow`
``index_tree.html``        ``tree``    a list of :class:`TreeNode` (the roots)
``compare.html``           ``page``    :class:`ComparePage`
=========================  ==========  ================================================

Every template also sees the renderer's globals (``view``, ``version``, ``human_size``,
``short_time``, ``number``) and filters (``md``, ``pre``, ``jsonhl``, ``to_json``). Session
text in these records is the model's plain ``str``: jinja2 autoescaping and the ``md`` and
``pre`` filters are what turn it into HTML. Only ``turns_html``, ``rows_html`` and
``tree_html`` carry ``Markup``: HTML this renderer made from escaped parts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from ..compare import CallChange, TurnComparison
from ..gate import Tally
from ..images import ImageFacts
from ..model import ErrorEntry, LoadFailure, Part, Permission, Session, Turn
from ..outcome import Outcome
from ..usage import Spend
from .markup import RefResolver
from .tools import ToolView
from .view import Boundary, TurnTimes


@dataclass(slots=True, frozen=True)
class OutputView:
    """How a tool call's output is shown."""

    text: str
    """The text shown inline: the whole output, or its first part when ``file`` is set."""
    chars: int
    """The output's length in characters (all of it, not only what is shown)."""
    lines: int
    """Its number of lines (0 for an empty output)."""
    size: int
    """Its size in bytes, UTF-8 encoded."""
    collapsed: bool
    """True when it is long enough to start collapsed."""
    file: str | None = None
    """The side file holding the full output (relative to the page), when it is too long to
    inline; ``None`` when the page holds all of it."""
    mode: str = "text"
    """How it reads: ``diff`` (a unified diff), ``ansi`` (terminal colours), ``numbered`` (a
    file read with its line numbers, shown in a gutter) or ``text``."""
    head: str = ""
    """For a long output: its first lines, shown (``head + middle + tail == text``)."""
    middle: str = ""
    """Its hidden lines, behind "N lines hidden · show all"; empty when nothing is hidden."""
    tail: str = ""
    """Its last lines, shown (where a failure summary usually is)."""
    hidden: int = 0
    """How many lines ``middle`` holds."""
    indexed_from: int = 0
    """Where, in ``tail``, the lines the search index holds start: its last
    :data:`publisher.render.html.INDEXED_LINES` lines (``tail[indexed_from:]``); the head and
    the rest of the tail are shown but not indexed."""

    @property
    def indexed(self) -> str:
        """What of the output the search index holds (docs/search.md, "What is indexed"): the
        whole of a short output shown open, the last lines of a long one, nothing of an
        output shown collapsed or published beside the page."""
        if self.hidden:
            return self.tail[self.indexed_from :]
        if self.collapsed or self.file is not None:
            return ""
        return self.text


@dataclass(slots=True, frozen=True)
class ImageView:
    """An image a part holds, as ``parts/image.html`` and ``parts/tool.html`` show it."""

    facts: ImageFacts
    """What it is: type, size, digest, and why it is not shown when it is not."""
    src: str | None
    """Where the page finds it (``img-<digest>.png`` beside the page, or a ``data:`` URI
    in the single-file export); None when it is not shown (a placeholder says why)."""
    note: str = ""
    """Why it is not shown, in words (``facts.problem``, or the single file's cap)."""


@dataclass(slots=True, frozen=True)
class ErrorNote:
    """An entry of the session's ``errors`` shown in the turn it was placed in."""

    number: int
    """Its 1-based position in ``errors`` (the Errors section's ``#error-N``)."""
    entry: ErrorEntry
    """The error."""
    rule: str
    """Why it is shown in this turn, in words (:data:`publisher.audit.ERROR_RULES`)."""


@dataclass(slots=True, frozen=True)
class DecisionNote:
    """A permission decision shown on the tool call it resolved."""

    number: int
    """Its 1-based position in ``permissions`` (the table's ``#decision-N``)."""
    permission: Permission
    """The decision."""
    rule: str
    """How it was matched to the call, in words (:data:`publisher.audit.DECISION_RULES`)."""


@dataclass(slots=True, frozen=True)
class PartView:
    """One part of a turn, as ``parts/<kind>.html`` shows it."""

    part: Part
    """The model part (a ``TextualPart``, ``ToolPart``, ``CommandPart`` or ``UnknownPart``)."""
    number: int
    """Its 1-based position in the turn."""
    position: str
    """``3.2``: the turn's index and the part's number, as shown beside the part."""
    anchor: str
    """The part's element id, ``turn-3.2`` (the turn's anchor, a dot, the number)."""
    label: str
    """Its plain-text label (:func:`.view.part_label`), e.g. ``Tool call``."""
    template: str
    """The template that shows it (:func:`.view.part_template`), e.g. ``parts/tool.html``."""
    output: OutputView | None = None
    """A tool call's output; ``None`` for other parts and for a call with no output yet."""
    decisions: list[DecisionNote] = field(default_factory=list)
    """The permission decisions matched to this tool call."""
    friendly: ToolView | None = None
    """A tool call's friendly view (:mod:`.tools`), ``None`` for the generic one."""
    tool_template: str | None = None
    """The theme's ``tools/<name>.html`` for this tool, when it ships one."""
    extra_file: str = ""
    """The turn's side file holding this part's extra fields, when they are too long to
    show inline ("": inline, or none)."""
    sub_session: str = ""
    """The sub-session a delegate call spawned (:func:`publisher.audit.match_delegations`),
    "" for other parts and for a call that spawned none."""
    sub_url: str | None = None
    """The page of the sub-session a delegate call spawned, when it is in the archive."""
    sub_outcome: Outcome | None = None
    """What that sub-session did, with the sessions below it, when it is in the archive."""
    images: list[ImageView] = field(default_factory=list)
    """An image part's image, or the images a tool call's result returned."""


@dataclass(slots=True, frozen=True)
class TurnView:
    """One turn, for ``turn.html`` (rendered on its own and cached as a fragment)."""

    turn: Turn
    """The model turn."""
    anchor: str
    """The turn's element id: ``turn-3``, or ``turn-3-dup2`` for a repeated index."""
    boundaries: list[Boundary]
    """The context boundaries that start at this turn."""
    parts: list[PartView]
    """The turn's parts, in order."""
    last_index: int
    """The session's last turn index (a compaction note names it)."""
    errors: list[ErrorNote] = field(default_factory=list)
    """The session's errors placed in this turn."""
    changed: frozenset[str] = frozenset({"model", "provider", "mode", "reasoning"})
    """Which of model, provider, mode and reasoning differ from the turn before (all of
    them for the first turn): the card shows only those."""
    sections: str = ""
    """The page holding the Errors and Permissions sections (``index.html``), ``""`` when
    it is the page the turn is on (the single-file export)."""
    ids: str = ""
    """What the ids of its session's sections start with (:attr:`SessionPage.ids`)."""
    extra_file: str = ""
    """The side file holding the turn's own extra fields, when too long to show inline."""
    times: TurnTimes | None = None
    """Where its time went (model, tools, waiting on the person)."""
    spend: Spend | None = None
    """What its requests to models spent; None when it records no usage."""


@dataclass(slots=True, frozen=True)
class PageLink:
    """One page of a session split into pages."""

    number: int
    """The page's number, from 1."""
    first: int
    """The index of its first turn."""
    last: int
    """The index of its last turn."""
    url: str
    """Its file name in the session's folder (``index.html``, ``page-2.html``)."""


@dataclass(slots=True, frozen=True)
class SessionLink:
    """Another session a page names: a parent or a sub-session."""

    name: str
    """The session's name."""
    url: str | None
    """Its page relative to this page, or ``None`` when it is not in the archive."""
    role: str = ""
    """Its role (shown for sub-sessions; empty when unknown)."""


@dataclass(slots=True, frozen=True)
class SubAgent:
    """A sub-session as its caller's overview lists it: in the order it was called."""

    name: str
    """Its session name."""
    url: str | None
    """Its page relative to this page, or ``None`` when it is not in the archive."""
    role: str
    """The role it ran as (its ``role``, else the one its call asked for)."""
    task: str
    """The first line of the task its call gave it ("" when no call names it)."""
    call: str | None
    """The link to the call that spawned it, or ``None``."""
    call_label: str = ""
    """That call's place, ``3.2``."""
    outcome: Outcome | None = None
    """What it did, with the sessions below it (``None``: not in the archive)."""


@dataclass(slots=True, frozen=True)
class DecisionCount:
    """How many permission requests got one decision."""

    decision: str
    """The decision as written (``granted``, ``declined``, ``denied`` or other)."""
    count: int
    """How many times."""


@dataclass(slots=True, frozen=True)
class Placed:
    """Where an error or a decision is shown in the turns, for its row in a section."""

    href: str | None
    """The turn or call it is shown in (``#turn-3.2``, ``page-2.html#turn-310``), or
    ``None`` when it is in no turn (no call)."""
    label: str
    """``turn 3`` or ``call 3.2``; empty when ``href`` is None."""
    rule: str
    """The rule that placed it, in words."""


@dataclass(slots=True, frozen=True)
class OutlineEntry:
    """One turn in the overview's outline and timeline."""

    index: int
    """The turn's index."""
    href: str
    """The link to the turn."""
    status: str
    """Its status."""
    duration: str
    """Its work time (:class:`.view.TurnTimes`), as shown."""
    seconds: float
    """Its work time in seconds (0 when unknown), for the timeline."""
    tools: int
    """Its tool calls."""
    prompt: str
    """The first line of its prompt (or command)."""
    errors: int
    """Its ``error`` findings (:func:`publisher.gate.session_findings`)."""
    failed: int
    """Its failed tool calls (``tool-error`` findings: a refused call is not one)."""
    refused: int
    """Its refusals (``denied`` and ``declined`` findings)."""
    idle: float = 0.0
    """Idle seconds before it (after the turn before) and within it."""
    waiting: float = 0.0
    """Seconds waiting on the person before it, when more than
    :data:`.view.IDLE_AFTER` (a break on the timeline)."""
    tokens: int | None = None
    """Its tokens (:attr:`publisher.usage.Tokens.total`), None when it records no usage."""


@dataclass(slots=True, frozen=True)
class FailureLink:
    """One finding, as the overview lists it: where, what kind, what happened."""

    href: str | None
    """The link to the call, the error's note or the turn (None: placed in no turn)."""
    kind: str
    """Its ``--fail-on`` kind (``tool-error``, ``error``, ``denied``…)."""
    where: str
    """``turn 7.2``, or ``no turn``."""
    what: str
    """One line: the tool and the gist of its output, the error's message…"""


@dataclass(slots=True, frozen=True)
class ChangedFile:
    """A file the run changed, with the calls that changed it (the overview's list)."""

    path: str
    """The file as the calls name it."""
    shown: str
    """How the list shows it: relative to the session's working folder when it is inside."""
    calls: list[tuple[str, str, str]]
    """Each call that changed it, in order: (its place ``3.2``, link, action)."""


@dataclass(slots=True, frozen=True)
class Overview:
    """The facts at the top of a session page."""

    outcome: str
    """The last turn's status (empty when there are no turns)."""
    span: str
    """Wall-clock time from the first turn's start to the last turn's end."""
    work: str
    """Work time: the time the turns waited on the model and on tools."""
    idle: str
    """Idle time within and between turns (:data:`.view.IDLE_AFTER`), "" when none."""
    models: list[str]
    """The models used, in order of first use (``model · provider``)."""
    outline: list[OutlineEntry]
    """The turns listed: the first ones, then those with an error or a refusal."""
    outline_hidden: int
    """Turns left out of :attr:`outline` (on the later pages of a long session)."""
    failures: list[FailureLink]
    """Every finding of the session, in page order (:func:`publisher.gate.session_findings`)."""
    tally: Tally
    """The findings counted by kind."""
    tool_errors: int
    """Tool calls that failed (a refused call is its refusal)."""
    calls: int
    """Its tool calls."""
    bars: list[tuple[str, str, str, str]]
    """The timeline: (x, width) in a 1000-wide box as text, status (``idle`` for a gap),
    its title."""
    changes: list[ChangedFile] = field(default_factory=list)
    """The files its tool calls changed (:func:`.tools.changes_of`), by first change."""
    spend: Spend = field(default_factory=Spend)
    """What its own requests to models spent (:mod:`publisher.usage`)."""
    priced_by: str = ""
    """The price table its cost was priced with (:attr:`publisher.usage.Prices.label`)."""
    model_time: str = "-"
    """Of the work time, waiting on the model (:class:`.view.TurnTimes`)."""
    tool_time: str = "-"
    """Of the work time, waiting on tools."""
    waiting: str = "-"
    """Time waiting on the person: permission and parked asks, and from an answer to the
    next prompt."""


@dataclass(slots=True, frozen=True)
class SessionPage:
    """One page of a session, for ``session.html``."""

    session: Session
    """The (possibly redacted) session."""
    number: int
    """This page's number, from 1 (the first page holds permissions and errors)."""
    pages: list[PageLink]
    """Every page of the session (one when it is not split)."""
    turns_html: Iterable[Markup]
    """The rendered ``turn.html`` fragments of this page's turns, in order (iterated once)."""
    lineage: list[SessionLink] = field(default_factory=list)
    """Parents from the root down to the direct parent."""
    lineage_cycle: bool = False
    """True when the parent chain loops (it is cut where it repeats)."""
    children: list[SessionLink] = field(default_factory=list)
    """Sub-sessions."""
    sub_agents: list[SubAgent] = field(default_factory=list)
    """Its sub-sessions in the order they were called (then those no call names), with
    what each did."""
    below: Outcome | None = None
    """What every session below it did, added up (``None`` when it has none)."""
    with_below: Outcome | None = None
    """What it and every session below it did (``None`` when it has none below)."""
    decision_counts: list[DecisionCount] = field(default_factory=list)
    """Permission decisions counted, sorted by decision."""
    tool_calls: int = 0
    """Number of tool calls in the whole session."""
    root: str = "../../"
    """The site root relative to this page (``""`` for a page that stands alone)."""
    resolve_ref: RefResolver | None = None
    """Links ``#id`` and ``session:name`` references in session text (the renderer hands it
    to the ``md`` and ``pre`` filters); ``None`` links none."""
    redaction: str | None = None
    """What redaction replaced (``3 secrets (…)``), or ``None`` when redaction is off."""
    error_places: list[Placed] = field(default_factory=list)
    """Where each entry of ``errors`` is shown in the turns, in order."""
    decision_places: list[Placed] = field(default_factory=list)
    """Which call each entry of ``permissions`` is shown on, in order."""
    overview: Overview | None = None
    """The overview (on the first page)."""
    series_previous: SessionLink | None = None
    """The previous run of its role's series, ``None`` when it is the first (or has no role)."""
    series_next: SessionLink | None = None
    """The next run of its role's series, ``None`` when it is the last (or has no role)."""
    compare_url: str | None = None
    """Its comparison page against the previous run (relative), ``None`` when there is none."""
    spawned_at: str | None = None
    """The link to the delegate call that spawned it, on the page of its direct parent
    that holds the call; ``None`` when unknown."""
    ids: str = ""
    """What every element id of its sections starts with: empty on a site page and for the
    session a single-file export is of; ``s-<id>-`` for each sub-session in that file."""

    @property
    def page_map(self) -> dict[str, Any] | None:
        """Which page holds which turns, for the page's script; ``None`` for one page."""
        if len(self.pages) < 2:
            return None
        pages = [
            {"number": p.number, "first": p.first, "last": p.last, "url": p.url} for p in self.pages
        ]
        return {"current": self.number, "pages": pages}


@dataclass(slots=True, frozen=True, kw_only=True)
class SinglePage(SessionPage):
    """The whole session on one self-contained page, for ``single.html``."""

    inline_css: Markup
    """The theme's ``style.css``, made safe to inline in ``<style>``."""
    inline_theme_css: Markup
    """The theme's ``theme.css``, likewise."""
    sub_pages: Iterable[SessionPage] = ()
    """Its sub-sessions at any depth, each a section of the same file (iterated once)."""
    missing: list[str] = field(default_factory=list)
    """One line for each sub-session that is not in the file (not found, does not load)."""


@dataclass(slots=True, frozen=True)
class Column:
    """A column of the index's sessions table."""

    key: str
    """Its key (``data-key``, read by the table's script)."""
    label: str
    """Its heading."""
    sort: str
    """How it sorts: ``text`` or ``number``."""


@dataclass(slots=True, frozen=True)
class IndexRow:
    """One session's row in the index table, for ``index_row.html``."""

    name: str
    """The session's name."""
    url: str
    """Its first page, relative to the site root."""
    kind: str
    """``ses``, ``job``, ``sub`` or ``named``."""
    session_id: str
    """Its id (empty when it has none)."""
    role: str
    """Its owning role."""
    version: str
    """The Polyglav version that wrote it."""
    created_at: str
    """Creation timestamp as written."""
    updated_at: str
    """Last update timestamp as written."""
    turns: int
    """Number of turns."""
    tool_calls: int
    """Number of tool calls."""
    errors: int
    """Number of error entries."""
    last_status: str
    """Status of the last turn."""
    first_prompt: str
    """First line of the first prompt, as plain text."""
    failures: int = 0
    """Its own failures (failed calls, errors, refusals, cut and interrupted turns:
    :attr:`publisher.gate.Tally.failures`)."""
    failures_below: int = 0
    """The failures of the sessions below it (its sub-sessions, theirs...)."""
    failure_note: str = ""
    """Its failures said in a line, by kind, with those below it (the cell's title)."""
    sub: bool = False
    """It is a sub-session (it names a parent): hidden while the index shows roots only."""
    file_name: str = ""
    """Its file name, when it is not ``<name>.json`` (else empty)."""
    origin: str = ""
    """Where an imported session came from (``agent: source``), empty for a native one."""
    tokens: int | None = None
    """Its own tokens (:attr:`publisher.usage.Tokens.total`), None when it records no
    usage."""
    cost: str = ""
    """Its own cost as shown (:func:`.view.cost_line`: ``$0.0042``, ``unpriced``), "" when
    it records no usage."""
    cost_micro: int | None = None
    """Its own cost in micro-dollars (the column's sort value), None when unknown."""


@dataclass(slots=True, frozen=True)
class TreeNode:
    """A session in the index's delegation tree, for ``index_tree.html``."""

    name: str
    """The session's name."""
    url: str | None
    """Its page relative to the site root, ``None`` when it is not in the archive."""
    role: str
    """Its role (empty when unknown)."""
    cycle: bool
    """True when it was shown higher up this branch already (its children are not repeated)."""
    children: list[TreeNode]
    """Its sub-sessions."""


@dataclass(slots=True, frozen=True)
class DelegationTree:
    """The archive's delegation tree, for ``index_tree.html`` (as ``tree`` and
    ``standalone``)."""

    families: list[TreeNode]
    """Each session that delegates or was delegated to and has no parent in the archive
    (the root of its family), with its sub-sessions at any depth; then the sessions only
    reachable through a cycle."""
    standalone: int
    """The published sessions in no family (no parent, no sub-session): not listed, only
    counted (in an archive of CI runs, nearly all of them)."""


@dataclass(slots=True, frozen=True)
class IndexPage:
    """The archive's index, for ``index.html``."""

    rows_html: list[Markup]
    """The rendered ``index_row.html`` of every session, newest first."""
    tree_html: Markup
    """The rendered ``index_tree.html``."""
    failures: list[LoadFailure]
    """The files that do not load."""
    columns: list[Column]
    """The sessions table's columns."""
    kinds: list[str]
    """The session kinds present, sorted (the kind filter's options)."""
    roles: list[str]
    """The roles present, sorted (the role filter's options)."""
    source_label: str
    """The name of the sessions folder."""
    search_enabled: bool
    """True when the build made a search index."""
    redaction: str | None = None
    """What redaction replaced across the archive, or ``None`` when redaction is off."""
    root: str = ""
    """The site root relative to the page."""
    activity: Activity | None = None
    """The activity chart's :class:`Activity`, or ``None`` when no session has a time."""
    total: int = 0
    """Every published session (``rows_html`` holds the most recent of them)."""
    outcomes: list[tuple[str, int]] = field(default_factory=list)
    """Every published session counted by outcome (its last status: ``ok``, ``error``…,
    :data:`.view.OUTCOMES`), in that order, counts above 0."""
    tree_page: str = ""
    """The delegation tree's own page (``tree.html``) when it is not on the index (a large
    archive: the index's first screen stays small); empty when ``tree_html`` is shown."""
    shards: list[str] = field(default_factory=list)
    """The row shard files (site paths) holding every session's row as data, loaded by the
    table's script when the reader asks for all rows; empty when ``rows_html`` has them all."""


@dataclass(slots=True, frozen=True)
class EventRow:
    """One failure or permission decision on the archive's Failures or Decisions page, for
    ``errors_row.html`` and ``decisions_row.html``."""

    session: str
    """The session's name."""
    session_url: str
    """The session's first page, relative to the site root."""
    url: str
    """The page (relative to the site root) and anchor of its turn or tool call, or of the
    session's errors or permissions when it names no turn."""
    kind: str
    """The session's kind."""
    role: str
    """The session's role."""
    time: str
    """Its timestamp as written."""
    turn: str
    """The turn (``N``) or tool call (``N.M``) it is attributed to, or empty."""
    failure: str = ""
    """What kind of failure it is, as pages name it (``failed call``, ``error``,
    ``denied``, ``interrupted``...: :data:`.view.FINDING_LABELS`)."""
    code: str = ""
    """What failed: an error's code, a failed call's or a refused tool's name."""
    message: str = ""
    """A failure's one-line message (cut)."""
    decision: str = ""
    """A permission's decision."""
    tool: str = ""
    """A permission's tool."""
    action: str = ""
    """A permission's action."""
    path: str = ""
    """A permission's path."""


@dataclass(slots=True, frozen=True)
class ArchivePage:
    """An archive-wide list (``errors.html``, ``decisions.html``)."""

    rows_html: list[Markup]
    """The rendered rows, in the page's order."""
    kinds: list[str]
    """The session kinds present (the kind filter's options)."""
    roles: list[str]
    """The roles present (the role filter's options)."""
    values: list[str]
    """The codes (Errors) or decisions (Decisions) present (the third filter's options)."""
    sessions: int
    """How many sessions the rows come from."""
    counts: dict[str, int] = field(default_factory=dict)
    """How many rows have each of :attr:`values` (the filter's options say it, and the
    Decisions page how many refusals it lists first)."""
    total: int = 0
    """How many rows the page has in all (more than :attr:`rows_html` when sharded)."""
    shards: list[str] = field(default_factory=list)
    """The row shards (site paths) holding every row, empty when the page holds them all."""
    redaction: str | None = None
    """The archive's redaction note (``12 secrets redacted``), None when redaction is off."""
    root: str = ""
    """The site root relative to the page."""


@dataclass(slots=True, frozen=True)
class ActivitySegment:
    """One outcome's part of a day's bar."""

    outcome: str
    """``ok``, ``error``, ... (a session's last status; ``other`` for unknown ones)."""
    count: int
    """Sessions of that day with that outcome."""
    y: float
    """Top of the segment (SVG units)."""
    height: float
    """Its height (SVG units)."""


@dataclass(slots=True, frozen=True)
class ActivityBar:
    """One day of the activity chart (geometry in SVG units)."""

    day: str
    """``YYYY-MM-DD`` (UTC)."""
    x: float
    """Left edge of the day's bars."""
    width: float
    """Their width."""
    segments: list[ActivitySegment]
    """The runs bar, stacked by outcome."""
    failures: int
    """Failures recorded that day (:attr:`..site.graph.Summary.failure_events`)."""
    failures_y: float
    """Top of the failures bar."""
    failures_height: float
    """Its height."""


@dataclass(slots=True, frozen=True)
class ActivityDay:
    """One row of the activity table."""

    day: str
    """``YYYY-MM-DD`` (UTC)."""
    counts: list[int]
    """Runs by outcome, in :attr:`Activity.outcomes`' order."""
    total: int
    """Runs that day."""
    failures: int
    """Failures that day."""


@dataclass(slots=True, frozen=True)
class SpendSegment:
    """One model's part of a day's tokens bar."""

    model: str
    """The model (``other models`` for those not stacked apart)."""
    index: int
    """Its place among the stacked models (its colour: ``m-0``…)."""
    tokens: int
    """Its tokens that day."""
    y: float
    """Top of the segment (SVG units)."""
    height: float
    """Its height (SVG units)."""


@dataclass(slots=True, frozen=True)
class SpendBar:
    """One day of the tokens chart."""

    day: str
    """``YYYY-MM-DD`` (UTC)."""
    x: float
    """Left edge."""
    width: float
    """Its width."""
    segments: list[SpendSegment]
    """Stacked by model."""


@dataclass(slots=True, frozen=True)
class SpendRow:
    """A row of a spend table: a day, a model or a role, its tokens and cost."""

    key: str
    """The day, the model or the role (as written; "" for no role)."""
    tokens: int
    """Its tokens."""
    cost: str
    """Its cost as shown (``$1.2346``, ``unpriced``, ``$1.2346 + unpriced``)."""
    micro: int
    """Its priced cost in micro-dollars (the table's sort value)."""


@dataclass(slots=True, frozen=True)
class SpendActivity:
    """Tokens and cost over the activity chart's days (:mod:`publisher.site.spending`)."""

    tokens: int
    """Tokens in these days."""
    cost: str
    """Their cost as shown."""
    top: int
    """The most tokens of a day (the axis' top)."""
    height: int
    """The chart's height (SVG units)."""
    bars: list[SpendBar]
    """One bar a day that spent tokens, oldest first."""
    models: list[str]
    """The models stacked (the legend), most tokens first."""
    days: list[SpendRow]
    """By day, latest first."""
    by_model: list[SpendRow]
    """By model, most tokens first."""
    by_role: list[SpendRow]
    """By role, most tokens first."""


@dataclass(slots=True, frozen=True)
class Activity:
    """Runs per day by outcome and failures per day, for ``index_activity.html``."""

    first: str
    """The first day shown."""
    last: str
    """The last day shown (the archive's latest)."""
    outcomes: list[str]
    """The outcomes present, in stacking order."""
    days: list[ActivityDay]
    """Every day shown, oldest first."""
    bars: list[ActivityBar]
    """The chart's bars, oldest first."""
    top_runs: int
    """The most runs of a day (the runs axis' top)."""
    top_failures: int
    """The most failures of a day (0: no failures in these days)."""
    runs: int
    """Runs in these days."""
    failures: int
    """Failures in these days."""
    undated: int
    """Sessions without a readable time (not in the chart)."""
    earlier: int
    """Sessions of days before :attr:`first` (not in the chart: the window is the archive's
    last :data:`..site.activity.DAYS` days at most)."""
    since: str
    """The first day of any session (``YYYY-MM-DD``; :attr:`first` when none is earlier)."""
    width: int
    """The SVG's width."""
    runs_height: int
    """Height of the runs chart."""
    failures_height: int
    """Height of the failures chart."""
    spend: SpendActivity | None = None
    """Tokens and cost over these days (None when no session spent any)."""


@dataclass(slots=True, frozen=True)
class TreePage:
    """The delegation tree on its own page (``tree.html``), for a large archive."""

    tree_html: Markup
    """The rendered ``index_tree.html``."""
    total: int
    """Published sessions."""
    root: str = ""
    """The site root relative to the page."""


@dataclass(slots=True, frozen=True)
class DiffLine:
    """One line of a differing output's diff on a comparison page."""

    kind: str
    """``add``, ``del``, ``hunk`` (``@@``), ``file`` (``---``/``+++``) or ``same``."""
    text: str
    """The line as the diff has it (untrusted; escaped by the template)."""


@dataclass(slots=True, frozen=True)
class CompareCall:
    """A tool call of an aligned pair of turns, as a comparison page shows it."""

    call: CallChange
    """The model's call (:mod:`publisher.compare`)."""
    label: str
    """What changed, in words (``added``, ``output differs``, "" when the same)."""
    input: str
    """Its input, cut to a readable length."""
    diff: list[DiffLine]
    """The output's diff (``output`` only), cut to :data:`publisher.site.comparison.DIFF_LINES`."""
    more: int
    """Diff lines left out."""


@dataclass(slots=True, frozen=True)
class CompareTurn:
    """One aligned pair of turns on a comparison page."""

    t: TurnComparison
    """The model's pair (:func:`publisher.compare.compare`)."""
    href: str | None
    """The turn on this run's pages (relative to the comparison page), None when this run has
    no turn at this position."""
    duration_a: str
    """The previous run's duration of the turn, as shown (``-`` when unknown)."""
    duration_b: str
    """This run's likewise."""
    delta: str
    """How much longer (``+20.0s``) or shorter this run's turn took, "" when unknown or
    equal."""
    calls: list[CompareCall]
    """Its tool calls, aligned."""


@dataclass(slots=True, frozen=True)
class ComparePage:
    """``compare.html``: a run of a series against its previous run, turn by turn."""

    previous: SessionLink
    """The previous run (A)."""
    current: SessionLink
    """This run (B)."""
    role: str
    """The series' role."""
    facts: list[tuple[str, str, str]]
    """Whole-run facts: (label, A's value, B's value)."""
    turns: list[CompareTurn]
    """Every aligned pair of turns."""
    changed: int
    """How many pairs differ (durations aside)."""
    unreadable: str | None = None
    """Why the previous run could not be read (then :attr:`turns` is empty)."""
    redaction: str | None = None
    """What redaction replaced in either run, or None when redaction is off."""
    root: str = "../../"
    """The site root relative to the page."""
