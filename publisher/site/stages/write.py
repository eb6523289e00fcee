"""Stage 4, write: the theme's assets, and the removal of what is no longer published.

Files are written atomically and only when their bytes changed (:mod:`publisher.write`).
Outputs of the last build that this one did not produce (a deleted or renamed session, a
page a shorter session no longer has) are removed, with the fragment files of sessions
that are gone. When the cache was lost, the last build's outputs are unknown: a site
folder that holds a site of ours (its ``index.html`` says so) is swept of session pages
and assets this build did not produce, so a lost cache costs time, never stale pages; so
is the site of a build that stopped before committing its catalog (killed, a crash).
State files that earlier versions kept in ``<out>/.polyglav/`` are removed from the site.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

from ...write import is_inside, prepare_target, write_if_changed
from .. import urls
from ..catalog import Catalog
from ..context import LEGACY_STATE, BuildContext
from ..fragments import SUFFIX as FRAGMENT_SUFFIX
from .render import remove_empty_parents

GENERATOR_MARK = b'<meta name="generator" content="polyglav-publisher'
"""How a site folder's ``index.html`` shows the site was built by this publisher."""
OWN_FOLDERS = ("sessions", "assets", "rows", "events")
"""The folders of the site that hold only what a build writes (besides ``search/``, which
the search stage keeps in step itself)."""
TEMP_RE = re.compile(r"\A\..+\.[0-9a-f]{8}\.tmp\Z")
"""A temporary file of :func:`publisher.write.open_temp` (left by a write cut short)."""


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


def must_sweep(ctx: BuildContext, catalog: Catalog) -> bool:
    """Whether :func:`remove_stale` must sweep the site, asked before the build writes
    there: the last build stopped before committing its catalog (the cache's
    :attr:`..context.CachePaths.building` mark: ``ctx.trust_written`` is False), so the site
    may hold files the catalog does not know (its pages, a temporary file of a write cut
    short); or no catalog says what the site holds and the folder holds a site of ours (its
    index page has our mark). A folder of someone else's keeps its files, and a first build
    does not list every folder it made (0.4 s at 20,000 sessions)."""
    if not ctx.trust_written:
        return True
    if not catalog.fresh:
        return False
    try:
        with open(ctx.out / "index.html", "rb") as handle:
            return GENERATOR_MARK in handle.read(4096)
    except OSError:
        return False


def remove_stale(ctx: BuildContext, catalog: Catalog, *, sweep: bool) -> int:
    """Remove what the last build published and this one does not
    (:meth:`..catalog.Catalog.stale_outputs`), and the fragment files of sessions no longer
    published; the number of files removed from the site. ``sweep``: :func:`must_sweep`,
    asked before the build wrote (then every file of our folders the catalog does not
    list is removed too)."""
    out = ctx.out
    removed = 0
    for rel in catalog.stale_outputs():
        removed += _remove(out, out / rel)
        catalog.drop_output(rel)
    if sweep:
        removed += _sweep(out, catalog.has_output)
        _sweep_temporary(ctx.cache.fragments)
    for name in catalog.unpublished_names():
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


def _sweep(out: Path, produced: Callable[[str], bool]) -> int:
    """Remove files under :data:`OWN_FOLDERS` that ``produced`` does not name, and our
    temporary files left at the site's top by a write cut short (the folder holds a site
    of ours: :func:`must_sweep`)."""
    removed = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir(out):
            if TEMP_RE.match(entry.name) and entry.is_file(follow_symlinks=False):
                removed += _remove(out, Path(entry.path))
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
                if not produced(f"{prefix}/{name}"):
                    removed += _remove(out, Path(here, name))
    return removed


def _sweep_temporary(folder: Path) -> None:
    """Remove the temporary files a build cut short left in a folder of the cache (a
    fragment file it was spooling)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if TEMP_RE.match(entry.name) and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


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
