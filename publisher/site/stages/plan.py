"""Stage 2, plan: the archive's graph, and which sessions to render.

The graph (parents, sub-sessions, reference targets) is made of the summaries alone, so it
costs no file read. A session is rendered when :func:`.staleness.session_stale` says so (its
comparison page reads the previous run of its series: a change there renders it too).
Two files holding the same ``session_name`` would publish to the same pages: the first (by
file name) is published, the other listed as not loaded.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from functools import partial

from ..context import BuildContext
from ..graph import Graph, Summary
from ..manifest import Manifest, SourceState
from ..render import PageFacts
from ..staleness import session_stale
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


@dataclass(slots=True)
class Plan:
    """What the render stage does."""

    sources: dict[str, SourceState]
    """Each file's state (a second file of a session name is now a failure)."""
    graph: Graph
    """The published sessions and their links."""
    graph_key: str
    """:func:`.staleness.graph_key` of :attr:`graph`."""
    jobs: list[RenderJob]
    """The sessions to render, by file name."""


def plan(ctx: BuildContext, previous: Manifest, scanned: Scan) -> Plan:
    """Stage 2 (see the module docstring)."""
    sources = dict(scanned.sources)
    published: dict[str, str] = {}  # session name → file name (the first file wins)
    for name in scanned.names:
        summary = sources[name].summary
        if summary is None:
            continue
        if summary.name in published:
            sources[name] = SourceState(
                sources[name].size,
                sources[name].mtime_ns,
                sources[name].sha256,
                None,
                f"same session_name as {published[summary.name]}; not published twice",
            )
            continue
        published[summary.name] = name
    summaries: dict[str, Summary] = {}
    for session_name, file_name in published.items():
        summary = sources[file_name].summary
        assert summary is not None
        summaries[session_name] = summary
    graph = Graph(summaries=summaries, file_names=scanned.names)
    graph_key = graph.key()
    same_key = previous.key == ctx.key
    same_graph = same_key and previous.graph == graph_key
    out = os.fspath(ctx.out)  # plain strings: a stat per output, no Path objects
    jobs: list[RenderJob] = []
    for name in published.values():
        state = sources[name]
        assert state.summary is not None
        before = graph.series(state.summary.name)[0]
        stale = session_stale(
            same_key=same_key,
            content_changed=name in scanned.changed,
            compared_changed=bool(before) and graph.summaries[before].file_name in scanned.changed,
            same_graph=same_graph,
            facts_then=state.facts_key,
            facts_now=partial(_facts_key, graph, state),
            outputs_present=partial(_outputs_present, out, state),
        )
        if not stale:
            continue
        if name in scanned.holds.names:
            # Cannot render it now: render it once it loads again.
            sources[name] = dataclasses.replace(state, facts_key="")
        else:
            jobs.append(RenderJob(name, state.outputs if same_key else {}, same_key))
    return Plan(sources, graph, graph_key, jobs)


def _outputs_present(out: str, state: SourceState) -> bool:
    return all(os.path.isfile(f"{out}/{rel}") for rel in state.outputs)


def _facts_key(graph: Graph, state: SourceState) -> str:
    """The facts key a session's pages would have now, from cached summaries only."""
    assert state.summary is not None
    return PageFacts.from_graph(graph, state.summary.name, set(state.refs)).key()
