"""Stage 2, plan: which files are published, the archive's graph, which sessions to render.

The census is one statement over the catalog (:meth:`..catalog.Catalog.publish`): two files
holding the same ``session_name`` would publish to the same pages, so the first (by file
name) is published and the other listed as not loaded. The graph (parents, sub-sessions,
reference targets) is asked of the catalog, so it costs no file read. A session is rendered
when :func:`.staleness.session_stale` says so (its comparison page reads the previous run of
its series, its overview what the sessions below it did: a change there renders it too); the rule is asked only of the sessions a
change may concern (:func:`.staleness.stale_candidates`), unless the build key or the
archive's shape changed. The sessions to render go into the catalog's scratch ``jobs``: a
full build holds no list of them.
"""

from __future__ import annotations

import json
import operator
import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from .. import urls
from ..catalog import Catalog
from ..context import BuildContext
from ..graph import Graph
from ..pool import child_result, fork_child, forking, reap_child
from ..render import PageFacts
from ..staleness import disturbed_folders, graph_unchanged, session_stale, stale_candidates
from .scan import Scan


@dataclass(slots=True)
class Plan:
    """What the render stage does (the sessions to render are the catalog's ``jobs``)."""

    graph: Graph
    """The published sessions and their links."""
    graph_key: str
    """:func:`.staleness.graph_key` of :attr:`graph`."""
    jobs: int
    """How many sessions to render."""
    same_key: bool
    """The catalog was made under this build's key: its outputs may be reused."""


def plan(
    ctx: BuildContext, catalog: Catalog, scanned: Scan, folders: FolderCheck | None = None
) -> Plan:
    """Stage 2 (see the module docstring). ``folders``: the site folders' check started
    before the scan (:class:`FolderCheck`), when there is one."""
    same_key = scanned.same_key
    meta = catalog.meta
    catalog.publish(everything=not same_key)
    graph = Graph(catalog)
    if graph_unchanged(
        same_key=same_key,
        last_graph=meta.graph,
        same_files=scanned.same_files,
        changes=catalog.shape_changes(),
    ):
        graph_key = meta.graph
    else:
        graph_key = graph.key()  # a pass over every published session
    same_graph = same_key and meta.graph == graph_key
    if not same_key:
        catalog.add_all_jobs()  # every session: nothing of the last build is reused
        return Plan(graph, graph_key, catalog.job_count(), same_key)
    changed = catalog.changed_content()
    # Runs whose previous run changed: their comparison pages show it.
    next_of_changed = {graph.series(name)[1] for _, name in changed}
    next_of_changed.discard("")
    # Sessions above a changed one: their pages show what it did.
    above_changed: set[str] = set()
    for _, name in changed:
        above_changed |= graph.ancestors(name)
    # One stat a session folder (in a process of its own, started before the scan, when
    # the archive is large), and the rule asked only of the sessions it may concern.
    sessions = os.path.join(ctx.out, urls.SESSIONS)
    found = folders.result() if folders is not None else None
    if found is None:
        disturbed = disturbed_folders(sessions, catalog.folders(), watched=scanned.watched)
    else:  # (the sessions this build set were not the last build's: checked here)
        disturbed = found | disturbed_folders(sessions, catalog.folders(set_now=True))
    changed_files = {file_name for file_name, _ in changed}
    candidates = stale_candidates(
        same_key=same_key,
        same_graph=same_graph,
        touched=[*(name for _, name in changed), *next_of_changed, *above_changed, *disturbed],
    )
    asked = (
        catalog.published_files()  # every session (a cursor)
        if candidates is None
        else iter(sorted((f, n, k, size) for n, (f, k, size) in _present(candidates, catalog)))
    )
    held: list[str] = []
    for file_name, name, facts_then, size in asked:
        stale = session_stale(
            same_key=same_key,
            content_changed=file_name in changed_files,
            compared_changed=name in next_of_changed,
            below_changed=name in above_changed,
            same_graph=same_graph,
            facts_then=facts_then if not same_graph or name in above_changed else "",
            facts_now=partial(_facts_key, graph, name),
            outputs_present=partial(operator.not_, name in disturbed),
        )
        if not stale:
            continue
        if file_name in scanned.holds.names:
            held.append(file_name)
        else:
            catalog.add_job(file_name, size)
    for file_name in held:  # cannot render it now: render it once it loads again
        catalog.set_facts_key(file_name, "")
    return Plan(graph, graph_key, catalog.job_count(), same_key)


class FolderCheck:
    """The check of the site's session folders (:func:`.staleness.disturbed_folders`) of the
    sessions the last build published, in a process forked before the build opens its
    catalog, while this one lists and stats the sessions folder: the two passes of one
    ``stat`` a session that every build pays (about 4 µs each here) run on two cores. The
    child reads the committed catalog read-only (:meth:`..catalog.Catalog.recorded_folders`)
    and sends back the names it found disturbed; the sessions this build sets are checked by
    the build itself."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self.fd = fd

    @classmethod
    def start(cls, ctx: BuildContext) -> FolderCheck | None:
        """Fork the check when it pays (a catalog of at least ``Tunables.fork_check_bytes``)
        and this process may fork (no other thread runs, an OS with ``fork``); else None:
        the plan checks in this process."""
        path = ctx.cache.catalog
        try:
            size = path.stat().st_size
        except OSError:
            return None
        if size < ctx.tunables.fork_check_bytes or not forking() or not hasattr(os, "fork"):
            return None
        child = fork_child(partial(_disturbed, os.path.join(ctx.out, urls.SESSIONS), path, ctx.key))
        return cls(*child) if child is not None else None

    def result(self) -> set[str] | None:
        """The session names the child found disturbed; None when it failed (the plan
        checks in this process then)."""
        data = child_result(self.pid, self.fd)
        if data is None:
            return None
        try:
            names = json.loads(data)
        except ValueError:
            return None
        return {str(name) for name in names}

    def close(self) -> None:
        """Reap the child when the build stops before asking its result."""
        reap_child(self.pid, self.fd)


def _disturbed(sessions_folder: str, catalog: Path, key: str) -> bytes:
    """The child's work: the disturbed folders' session names, as JSON."""
    found = disturbed_folders(sessions_folder, Catalog.recorded_folders(catalog, key))
    return json.dumps(sorted(found), ensure_ascii=True).encode("ascii")


def _present(names: set[str], catalog: Catalog) -> list[tuple[str, tuple[str, str, int]]]:
    """Those of ``names`` that are published, with (file name, facts key, size)."""
    found = []
    for name in names:
        row = catalog.published_file(name)
        if row is not None:
            found.append((name, row))
    return found


def _facts_key(graph: Graph, name: str) -> str:
    """The facts key a session's pages would have now, asked of the catalog."""
    return PageFacts.from_graph(graph, name, graph.ref_candidates(name)).key()
