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
from ..manifest import Manifest, Sources, SourceState
from ..render import PageFacts
from ..staleness import disturbed_folders, graph_unchanged, session_stale, stale_candidates
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


def plan(ctx: BuildContext, previous: Manifest, scanned: Scan) -> Plan:
    """Stage 2 (see the module docstring)."""
    sources = scanned.sources.copy()
    all_briefs = sources.briefs()
    published: dict[str, str] = {}  # session name → file name (the first file wins)
    for name, brief in all_briefs.items():
        if not brief.loaded:
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
            continue
        published[brief.name] = name
    briefs = {session: all_briefs[name] for session, name in published.items()}
    graph = Graph(summaries=Published(sources, published), file_names=scanned.names, briefs=briefs)
    same_key = previous.key == ctx.key
    old = previous.sources
    changes = (  # a generator: not every summary held in a list
        (old[name].summary if same_key and name in old else None, state.summary)
        for name, state in sources.fresh.items()
    )
    if graph_unchanged(
        same_key=same_key,
        last_graph=previous.graph,
        same_files=previous.briefs.keys() == all_briefs.keys(),
        changes=changes,
    ):
        graph_key = previous.graph
    else:
        graph_key = graph.key()  # a pass over every summary (each decoded)
    same_graph = same_key and previous.graph == graph_key
    # Runs whose previous run changed: their comparison pages show it.
    next_of_changed = set()
    for name in scanned.changed:
        brief = sources.brief(name)
        if brief.loaded and published.get(brief.name) == name:
            next_of_changed.add(graph.series(brief.name)[1])
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
            (sources.brief(name).name for name in scanned.changed), next_of_changed, disturbed
        ),
    )
    jobs: list[RenderJob] = []
    for session, name in published.items():
        if candidates is not None and session not in candidates:
            continue
        stale = session_stale(
            same_key=same_key,
            content_changed=name in scanned.changed,
            compared_changed=session in next_of_changed,
            same_graph=same_graph,
            facts_then="" if same_graph else sources[name].facts_key,
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
                RenderJob(name, state.outputs if same_key else {}, same_key, ctx.trust_written)
            )
    return Plan(sources, graph, graph_key, jobs)


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


def _facts_key(graph: Graph, sources: Mapping[str, SourceState], name: str) -> str:
    """The facts key a session's pages would have now, from cached summaries only."""
    state = sources[name]
    assert state.summary is not None
    return PageFacts.from_graph(graph, state.summary.name, set(state.refs)).key()
