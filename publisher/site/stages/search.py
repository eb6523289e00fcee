"""Stage 6, search: the Pagefind index, re-indexed per shard of sessions whose pages changed
(:mod:`..search`). ``site watch`` defers it (:attr:`.context.BuildOptions.defer_search`) so
open pages reload before the index follows.

A build that does not defer it starts it before the render (:func:`start_search`): each
shard whose sessions are all rendered is indexed at once, beside the render workers
(:class:`..search.EarlyIndex`); :func:`search` then indexes what is left and checks the
rest, so ``site build`` still returns with a complete index.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..catalog import Catalog
from ..context import BuildContext, ProgressHook, Tunables
from ..search import PAGE_RE, EarlyIndex, SearchPaths, remove_search, update_search
from .plan import Plan
from .render import Rendered

UNAVAILABLE = "unavailable: Pagefind is not installed (pip install 'pagefind[bin]')"


@dataclass(slots=True)
class PendingSearch:
    """What :func:`finish_search` needs to bring the search index up to date."""

    out_dir: Path
    """The site folder."""
    produced: dict[str, str]
    """Every file of the site (path → sha256)."""
    workers: int
    """Pagefind runs at a time."""
    key: str
    """The build key."""
    paths: SearchPaths
    """Where search keeps its state (the cache folder)."""
    tunables: Tunables
    """Shard sizes."""
    early: EarlyIndex | None = None
    """The shards indexed while the render ran."""


def search_paths(ctx: BuildContext) -> SearchPaths:
    return SearchPaths(state=ctx.cache.search_state, tmp=ctx.cache.search_tmp)


class EarlySearch:
    """The search index started before the render (:func:`start_search`)."""

    def __init__(self, index: EarlyIndex) -> None:
        self.index = index

    def rendered(self, result: Rendered) -> None:
        """The render stage's hook: one more session's files are written."""
        folder = next(
            (m[1] for rel in result.outputs if (m := PAGE_RE.match(rel)) is not None), None
        )
        self.index.rendered(
            folder if result.error is None else None,
            result.outputs if result.error is None else None,
        )

    def close(self) -> None:
        """Wait for the Pagefind runs started (a build that stops early)."""
        self.index.finish()


def start_search(ctx: BuildContext, catalog: Catalog, planned: Plan) -> EarlySearch | None:
    """The search index, started before the render when the build indexes (not deferred,
    Pagefind installed) and renders at least one session."""
    if not ctx.options.search or ctx.options.defer_search or not planned.jobs:
        return None
    if not pagefind_available():
        return None
    expected: dict[str, dict[str, str] | None] = {}
    for folder, file_name, rendering in catalog.published_outputs():
        expected[folder] = None if rendering else catalog.outputs_of(file_name)
    index = EarlyIndex(
        ctx.out,
        expected,
        workers=ctx.workers,
        key=ctx.key,
        paths=search_paths(ctx),
        tunables=ctx.tunables,
    )
    return EarlySearch(index)


def search(
    ctx: BuildContext, produced: Mapping[str, str], early: EarlySearch | None = None
) -> tuple[str, PendingSearch | None]:
    """Stage 6: what the build report says of search, and the work left when deferred;
    ``early``: the shards :func:`start_search` indexed while the render ran."""
    if not ctx.options.search:
        remove_search(ctx.out, search_paths(ctx))
        return "off", None
    if not pagefind_available():
        return UNAVAILABLE, None
    pending = PendingSearch(
        ctx.out,
        dict(produced),
        ctx.workers,
        ctx.key,
        search_paths(ctx),
        ctx.tunables,
        early.index if early is not None else None,
    )
    if ctx.options.defer_search:
        return "pending", pending
    return finish_search(pending, ctx.options.progress), None


def finish_search(pending: PendingSearch, progress: ProgressHook | None = None) -> str:
    """Re-index the shards a build changed; what the build report would say."""
    return update_search(
        pending.out_dir,
        pending.produced,
        workers=pending.workers,
        key=pending.key,
        paths=pending.paths,
        tunables=pending.tunables,
        progress=progress,
        early=pending.early,
    ).describe()


def pagefind_available() -> bool:
    """True when Pagefind's binary package is installed."""
    try:
        import pagefind_bin  # type: ignore[import-untyped,import-not-found,unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True
