"""Stage 6, search: the Pagefind index, re-indexed per shard of sessions whose pages changed
(:mod:`..search`). ``site watch`` defers it (:attr:`.context.BuildOptions.defer_search`) so
open pages reload before the index follows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..context import BuildContext, ProgressHook, Tunables
from ..search import SearchPaths, remove_search, update_search

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


def search_paths(ctx: BuildContext) -> SearchPaths:
    return SearchPaths(state=ctx.cache.search_state, tmp=ctx.cache.search_tmp)


def search(ctx: BuildContext, produced: Mapping[str, str]) -> tuple[str, PendingSearch | None]:
    """Stage 6: what the build report says of search, and the work left when deferred."""
    if not ctx.options.search:
        remove_search(ctx.out, search_paths(ctx))
        return "off", None
    if not pagefind_available():
        return UNAVAILABLE, None
    pending = PendingSearch(
        ctx.out, dict(produced), ctx.workers, ctx.key, search_paths(ctx), ctx.tunables
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
    ).describe()


def pagefind_available() -> bool:
    """True when Pagefind's binary package is installed."""
    try:
        import pagefind_bin  # type: ignore[import-untyped,import-not-found,unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True
