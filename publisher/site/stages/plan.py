"""Stage 2, plan: the archive's graph, and which sessions to render.

The graph (parents, sub-sessions, reference targets) is made of the summaries alone, so it
costs no file read. A session is rendered when :func:`.staleness.session_stale` says so (its
comparison page reads the previous run of its series: a change there renders it too).
Two files holding the same ``session_name`` would publish to the same pages: the first (by
file name) is published, the other listed as not loaded.
"""

from __future__ import annotations

import dataclasses
import operator
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from itertools import chain

from .. import urls
from ..context import BuildContext
from ..graph import Graph, Summary
from ..manifest import Brief, Manifest, Sources, SourceState
from ..render import PageFacts
from ..staleness import (
    BriefChanges,
    disturbed_folders,
    graph_unchanged,
    session_stale,
    stale_candidates,
)
from .scan import Scan


@dataclass(frozen=True, slots=True)
class RenderJob:
    """One session to render."""

    file_name: str
    """Its file in the sessions folder."""
    previous_outputs: dict[str, str]
    """What its last render produced (path → sha256): files with the same bytes are not
    written again."""
    reuse_fragments: bool = True
    """False when the build key changed (another theme, other code): the last build's turn
    fragments were made by other templates and are not read."""
    trust_written: bool = True
    """:attr:`..context.BuildContext.trust_written`: False when a page with the hash of
    :attr:`previous_outputs` may hold other bytes (compared before it is skipped)."""
    size: int = 0
    """Its file's size when scanned (what keeping the session after its render costs:
    :attr:`..context.Tunables.keep_runs_bytes`)."""


@dataclass(slots=True)
class Plan:
    """What the render stage does."""

    sources: Sources
    """Each file's state (a second file of a session name is now a failure)."""
    graph: Graph
    """The published sessions and their links."""
    graph_key: str
    """:func:`.staleness.graph_key` of :attr:`graph`."""
    jobs: list[RenderJob]
    """The sessions to render, by file name."""
    census: Census
    """Which files are published and which fail (before the render)."""


@dataclass(slots=True)
class Census:
    """Which files are published and which fail, from every source's brief: made in one
    pass, or (``site watch``) from the last build's by the briefs that changed."""

    names: list[str]
    """The listing it was made for (the scan's :attr:`.scan.Scan.names`)."""
    published: dict[str, str]
    """Session name → file name, in file name order (the first file of a name wins)."""
    briefs: dict[str, Brief]
    """Each published session's brief, by session name, in the same order."""
    failed: list[str]
    """The files that do not load, in file name order (a second file of a session name
    included)."""
    warned: dict[str, list[str]]
    """A published file → what its user is told each build (only those with warnings),
    in file name order."""
    changes: BriefChanges | None = None
    """What changed since the last build's briefs (:func:`.staleness.brief_changes`), when
    it was brought up to date from them (:meth:`update`); None: not known here."""

    @classmethod
    def of(cls, sources: Sources, names: list[str]) -> Census:
        """Every source looked at once; a second file of a session name becomes a failure
        in ``sources``."""
        published: dict[str, str] = {}
        failed: list[str] = []
        warned: dict[str, list[str]] = {}
        for name, brief in sources.briefs().items():
            if not brief.loaded:
                failed.append(name)
                continue
            if brief.name in published:
                state = sources[name]
                sources[name] = SourceState(
                    state.size,
                    state.mtime_ns,
                    state.sha256,
                    None,
                    f"same session_name as {published[brief.name]}; not published twice",
                )
                failed.append(name)
                continue
            published[brief.name] = name
            if brief.warnings:
                warned[name] = brief.warnings
        all_briefs = sources.briefs()
        briefs = {session: all_briefs[name] for session, name in published.items()}
        return cls(names, published, briefs, failed, warned)

    def update(self, sources: Sources, previous: Manifest) -> Census | None:
        """This census brought to ``sources``, a build over the very files it was made
        for whose changed briefs (:attr:`.manifest.Sources.fresh`) each keep their file's
        "loads" and session name, else None (then :meth:`of`). ``previous``: the manifest
        of the build it was made by."""
        if sources.names is not self.names or sources.base is not previous.sources:
            return None
        old = previous.briefs
        briefs, warned = dict(self.briefs), dict(self.warned)
        new: dict[str, Brief] = {}
        gone: dict[str, Brief] = {}
        for name in sources.fresh:
            brief, was = sources.brief(name), old.get(name)
            if was is None or (brief.loaded, brief.name) != (was.loaded, was.name):
                return None
            if not brief.loaded:
                continue
            if briefs[brief.name] is not was:  # (not settled by the last build)
                return None
            briefs[brief.name] = brief
            if brief is not was:
                new[brief.name], gone[brief.name] = brief, was
            if brief.warnings:
                warned[name] = brief.warnings
            else:
                warned.pop(name, None)
        if warned.keys() != self.warned.keys():
            warned = dict(sorted(warned.items()))
        changes = BriefChanges(new=new, old=gone)
        return Census(self.names, self.published, briefs, self.failed, warned, changes)

    def graph(self, sources: Sources) -> Graph:
        """The graph of the sessions this census publishes, their summaries read from
        ``sources`` when used."""
        return Graph(Published(sources, self.published), self.names, self.briefs)

    def settle(self, sources: Sources) -> None:
        """Take the final briefs of the sources set this build (their folders' stamps
        recorded after the render): each published session's brief is then the very one
        the manifest saved, as :meth:`update` requires."""
        for name in sources.fresh:
            brief = sources.brief(name)
            if brief.loaded and self.published.get(brief.name) == name:
                self.briefs[brief.name] = brief


def plan(ctx: BuildContext, previous: Manifest, scanned: Scan) -> Plan:
    """Stage 2 (see the module docstring)."""
    sources = scanned.sources.copy()
    kept = ctx.warm.census if previous.remembered else None
    census = kept.update(sources, previous) if kept is not None else None
    if census is None:
        census = Census.of(sources, scanned.names)
    ctx.warm.census = census  # dropped by the build when a render fails (:mod:`..build`)
    published, briefs = census.published, census.briefs
    graph = census.graph(sources)
    same_key = previous.key == ctx.key
    old_briefs = previous.briefs
    changes = (
        (old_briefs.get(name) if same_key else None, sources.brief(name)) for name in sources.fresh
    )
    if graph_unchanged(
        same_key=same_key,
        last_graph=previous.graph,
        same_files=sources.same_names or previous.briefs.keys() == sources.known,
        changes=changes,
    ):
        graph_key = previous.graph
    else:
        graph_key = graph.key()  # a pass over every brief
    same_graph = same_key and previous.graph == graph_key
    graph.memo = ctx.warm.shape_memo(graph_key)  # nothing of it was made yet
    # Runs whose previous run changed: their comparison pages show it.
    next_of_changed = set()
    for name in scanned.changed:
        brief = sources.brief(name)
        if brief.loaded and published.get(brief.name) == name:
            next_of_changed.add(graph.series(brief.name)[1])
    # Sessions above a changed one: their pages show what it did.
    above_changed: set[str] = set()
    for name in scanned.changed:
        brief = sources.brief(name)
        if brief.loaded and published.get(brief.name) == name:
            above_changed |= graph.ancestors(brief.name)
    # One stat a session folder (none when the key changed: every session is rendered),
    # and the rule asked only of the sessions it may concern.
    disturbed = (
        disturbed_folders(
            os.path.join(ctx.out, urls.SESSIONS),
            (
                (session, urls.slug(session), brief.site_ino, brief.site_mtime_ns)
                for session, brief in briefs.items()
            ),
            watched=scanned.watched,
        )
        if same_key
        else set()
    )
    candidates = stale_candidates(
        same_key=same_key,
        same_graph=same_graph,
        touched=chain(
            (sources.brief(name).name for name in scanned.changed),
            next_of_changed,
            above_changed,
            disturbed,
        ),
    )
    jobs: list[RenderJob] = []
    # Those the rule may find stale, in file name order (an append: a few, not a pass).
    asked = (
        published.items()
        if candidates is None
        else sorted(
            ((s, published[s]) for s in candidates if s in published), key=operator.itemgetter(1)
        )
    )
    for session, name in asked:
        stale = session_stale(
            same_key=same_key,
            content_changed=name in scanned.changed,
            compared_changed=session in next_of_changed,
            below_changed=session in above_changed,
            same_graph=same_graph,
            facts_then=(
                sources.brief(name).facts_key if not same_graph or session in above_changed else ""
            ),
            facts_now=partial(_facts_key, graph, sources, name),
            outputs_present=partial(operator.not_, session in disturbed),
        )
        if not stale:
            continue
        state = sources[name]
        if name in scanned.holds.names:
            # Cannot render it now: render it once it loads again.
            sources[name] = dataclasses.replace(state, facts_key="")
        else:
            jobs.append(
                RenderJob(
                    name, state.outputs if same_key else {}, same_key, ctx.trust_written, state.size
                )
            )
    return Plan(sources, graph, graph_key, jobs, census)


class Published(Mapping[str, Summary]):
    """The published sessions' summaries by session name, each read from its state when
    used (the manifest decodes it then)."""

    def __init__(self, sources: Mapping[str, SourceState], published: dict[str, str]) -> None:
        self.sources = sources
        self.published = published
        """Session name → file name."""

    def __getitem__(self, name: str) -> Summary:
        summary = self.sources[self.published[name]].summary
        assert summary is not None
        return summary

    def __contains__(self, name: object) -> bool:
        return name in self.published

    def __iter__(self) -> Iterator[str]:
        return iter(self.published)

    def __len__(self) -> int:
        return len(self.published)


def _facts_key(graph: Graph, sources: Sources, name: str) -> str:
    """The facts key a session's pages would have now, from the briefs only."""
    session = sources.brief(name).name
    return PageFacts.from_graph(graph, session, graph.ref_candidates(session)).key()
