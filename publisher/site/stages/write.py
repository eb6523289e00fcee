"""Stage 4, write: the theme's assets, and the removal of what is no longer published.

Files are written atomically and only when their bytes changed (:mod:`publisher.write`).
Outputs of the last build that this one did not produce (a deleted or renamed session, a
page a shorter session no longer has) are removed, with the fragment files of sessions
that are gone. When the cache was lost, the last build's outputs are unknown: a site
folder that holds a site of ours (its ``index.html`` says so) is swept of session pages
and assets this build did not produce, so a lost cache costs time, never stale pages.
State files that earlier versions kept in ``<out>/.polyglav/`` are removed from the site.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Collection, Mapping
from pathlib import Path

from ...write import is_inside, prepare_target, write_if_changed
from .. import urls
from ..context import LEGACY_STATE, BuildContext
from ..fragments import SUFFIX as FRAGMENT_SUFFIX
from ..manifest import Manifest, Sources
from .render import remove_empty_parents

GENERATOR_MARK = b'<meta name="generator" content="polyglav-publisher'
"""How a site folder's ``index.html`` shows the site was built by this publisher."""
OWN_FOLDERS = ("sessions", "assets", "rows", "events")
"""The folders of the site that hold only what a build writes (besides ``search/``, which
the search stage keeps in step itself)."""


def write_files(
    ctx: BuildContext, files: Mapping[str, bytes], previous: Mapping[str, str]
) -> tuple[dict[str, str], int]:
    """Write ``files`` (site path → bytes); their hashes, and how many were written.

    A file the last build wrote with the same hash (``previous``) and still there is not
    even read (unless the last build stopped before saving its state:
    :attr:`..context.BuildContext.trust_written`)."""
    produced: dict[str, str] = {}
    written = 0
    trusted = previous if ctx.trust_written else {}
    for rel, data in files.items():
        digest = hashlib.sha256(data).hexdigest()
        produced[rel] = digest
        target = prepare_target(ctx.out, rel)
        if trusted.get(rel) == digest and target.is_file() and not target.is_symlink():
            continue
        if write_if_changed(target, data):
            written += 1
    return produced, written


def assets(ctx: BuildContext) -> dict[str, bytes]:
    """The theme's assets, as site files."""
    return {f"assets/{rel}": path.read_bytes() for rel, path in ctx.theme.assets().items()}


def last_outputs(previous: Manifest, sources: Sources) -> dict[str, str]:
    """The last build's files that this build may have changed or made stale (path →
    sha256): those of the sources set this build and of the gone ones, and its files of no
    source. An unchanged source produced what it produced last time (its state is the last
    build's), and no two sessions share a page (their folders are their names'). Made once,
    before the manifest is saved (its shard files are then replaced)."""
    last = dict(previous.extra_outputs)
    # When this build's states are read over the last build's (the same key), the shards
    # decoded stay decoded: ``site watch`` keeps their unchanged members for its next build
    # (:func:`..manifest.save_manifest`), as any use of a state leaves them.
    reused = sources.base is previous.sources
    for _, outputs in previous.sources.outputs_of(_touched(previous, sources), keep=reused):
        last.update(outputs)
    return last


def _touched(previous: Manifest, sources: Sources) -> list[str]:
    """The last build's sources set this build or gone (the others are unchanged)."""
    old, known = previous.briefs, sources.known
    # (the last build's names kept by ``site watch``: none is gone, no pass to find out)
    gone = [] if sources.same_names else sorted(old.keys() - known)
    return [name for name in sources.fresh if name in old] + gone


def must_sweep(ctx: BuildContext, previous: Manifest) -> bool:
    """Whether :func:`remove_stale` must sweep the site, asked before the build writes
    there: no manifest says what the site holds, and the folder holds a site of ours (its
    index page has our mark) or one a build of ours stopped writing (the cache's
    :attr:`..context.CachePaths.building` mark: ``ctx.trust_written`` is False). A folder
    of someone else's keeps its files, and a first build does not list every folder it made
    (0.4 s at 20,000 sessions)."""
    if previous.sources.briefs or previous.extra_outputs:
        return False
    if not ctx.trust_written:
        return True
    try:
        with open(ctx.out / "index.html", "rb") as handle:
            return GENERATOR_MARK in handle.read(4096)
    except OSError:
        return False


def remove_stale(
    ctx: BuildContext,
    previous: Manifest,
    sources: Sources,
    extra: Mapping[str, str],
    published: Collection[str],
    last: Mapping[str, str],
    *,
    sweep: bool,
) -> int:
    """Remove what the last build published and this one does not (``last``:
    :func:`last_outputs`), and the fragment files of sessions no longer published
    (``published``: session names); the number of files removed from the site.
    ``sweep``: :func:`must_sweep`, asked before the build wrote."""
    out = ctx.out
    removed = 0
    old = previous.sources
    touched = _touched(previous, sources)
    old_outputs = set(last)
    kept = set(extra)
    for name in sources.fresh:
        kept.update(sources[name].outputs)
    for rel in sorted(old_outputs - kept):
        removed += _remove(out, out / rel)
    if sweep:
        produced = {
            rel for name in sources if name not in sources.fresh for rel in sources[name].outputs
        }
        produced |= kept  # (every state set this build's outputs)
        removed += _sweep(out, produced)
    # A session name no longer published was published by a file set this build or gone.
    old_names = {old.briefs[n].name for n in touched if old.briefs[n].loaded}
    for name in sorted(name for name in old_names if name not in published):
        with contextlib.suppress(OSError):
            (ctx.cache.fragments / f"{urls.slug(name)}{FRAGMENT_SUFFIX}").unlink()
    _remove_legacy_state(out)
    return removed


def _remove(out: Path, target: Path) -> int:
    if is_inside(target, out) and (target.is_file() or target.is_symlink()):
        target.unlink()
        remove_empty_parents(target.parent, out)
        return 1
    return 0


def _sweep(out: Path, produced: set[str]) -> int:
    """Remove files under :data:`OWN_FOLDERS` that ``produced`` does not name (the folder
    holds a site of ours: :func:`must_sweep`)."""
    removed = 0
    for folder in OWN_FOLDERS:
        root = out / folder
        if root.is_symlink() or not root.is_dir():
            continue
        # A folder at a time, deepest first, from the names the walk lists (no stat of
        # each file, and never a list of every path of the site in memory).
        for here, folders, files in os.walk(root, topdown=False):
            prefix = Path(here).relative_to(out).as_posix()
            links = [name for name in folders if os.path.islink(os.path.join(here, name))]
            for name in sorted(files + links, reverse=True):
                if f"{prefix}/{name}" not in produced:
                    removed += _remove(out, Path(here, name))
    return removed


def _remove_legacy_state(out: Path) -> None:
    """The build state of earlier versions, ``<out>/.polyglav/``: out of the site."""
    legacy = out / ".polyglav"
    if legacy.is_symlink() or not legacy.is_dir():
        return
    for name in LEGACY_STATE:
        with contextlib.suppress(OSError):
            (legacy / name).unlink()
    for name in ("fragments", "search-tmp"):
        folder = legacy / name
        if folder.is_dir() and not folder.is_symlink() and is_inside(folder, out):
            shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError):
        legacy.rmdir()  # only when nothing else is there
