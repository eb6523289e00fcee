"""The build state: loaded before the scan, saved as the last stage.

The manifest (:mod:`..manifest`) is in the cache folder. One made for another site folder
(a cache folder shared by mistake) is not used: a lost or foreign state costs a full
build, never a wrong page.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ... import __version__
from ..context import BuildContext
from ..index import row_shard_count
from ..manifest import Manifest, Sources, save_manifest
from ..memory import Freezer


def site_id(out: Path) -> str:
    """How a manifest names the site folder it describes."""
    return os.path.abspath(out)


def load_state(ctx: BuildContext, freezer: Freezer | None = None) -> Manifest:
    """The last build's manifest for this site folder, or an empty one (its objects frozen
    by ``freezer`` before the collector sees them)."""
    manifest = Manifest.load(ctx.cache.manifest, ctx.warm, freezer.freeze if freezer else None)
    return manifest if manifest.site == site_id(ctx.out) else Manifest()


def shard_count(ctx: BuildContext, sessions: int) -> int:
    """How many shard files the manifest of ``sessions`` published sessions has: as many as
    the index has row shards (a session's shard is its row shard: an append's are one
    file)."""
    return row_shard_count(sessions, ctx.tunables.rows_per_shard, ctx.tunables.max_row_shards)


def save_state(
    ctx: BuildContext,
    previous: Manifest,
    *,
    graph_key: str,
    scanned_at_ns: int,
    sources: Sources,
    extra_outputs: Mapping[str, str],
    loaded: int,
) -> None:
    """Write this build's manifest (the shards and lines of unchanged sources reused).
    ``loaded``: how many of the sources load (their sessions are published)."""
    briefs = sources.briefs()
    save_manifest(
        ctx.cache.manifest,
        previous,
        key=ctx.key,
        site=site_id(ctx.out),
        graph=graph_key,
        scanned_at_ns=scanned_at_ns,
        publisher=__version__,
        sources=sources,
        extra_outputs=extra_outputs,
        briefs=briefs,
        fresh=sources.fresh,
        shard_count=shard_count(ctx, loaded),
        # Kept decoded for the next build of a long-running caller only (a CLI's ends).
        warm=ctx.warm if ctx.lasting else None,
        same_names=sources.same_names,
    )


def saved_outputs(path: Path) -> dict[str, str]:
    """Every file of the site (path → sha256), as the manifest saved at ``path`` records
    them (every shard decoded): what a build's report lists when asked after the build
    (:attr:`..build.BuildReport.outputs`). Not from the build's own states: those it did not
    use were to be read from the last build's shard files, which its save may have replaced."""
    return Manifest.load(path).outputs
