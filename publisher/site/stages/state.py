"""The build state: the catalog opened before the scan, committed as the last stage.

The catalog (:mod:`..catalog`) is in the cache folder. One made for another site folder (a
cache folder shared by mistake), of another schema or damaged is not used: a lost or
foreign state costs a full build, never a wrong page.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
from pathlib import Path

from ..catalog import Catalog, Meta
from ..context import BuildContext


def site_id(out: Path) -> str:
    """How a catalog names the site folder it describes."""
    return os.path.abspath(out)


def open_state(ctx: BuildContext) -> Catalog:
    """The catalog of this site folder (a new one when there is none usable), its build
    transaction begun. What builds before the catalog kept in the cache is removed."""
    for legacy in ctx.cache.legacy:
        if legacy.is_dir() and not legacy.is_symlink():
            shutil.rmtree(legacy, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                legacy.unlink()
    catalog = Catalog.open(
        ctx.cache.catalog, site=site_id(ctx.out), sessions=os.path.abspath(ctx.folder)
    )
    catalog.begin()
    return catalog


def save_state(
    ctx: BuildContext, catalog: Catalog, *, graph_key: str, scanned_at_ns: int, index: str
) -> None:
    """Commit this build: its rows, and what the next build compares with (the build key,
    the graph key, when its scan began, the index's options)."""
    catalog.commit(
        Meta(
            key=ctx.key,
            graph=graph_key,
            scanned_at_ns=scanned_at_ns,
            generation=catalog.gen,
            index=index,
            sessions=os.path.abspath(ctx.folder),
            redacted=ctx.options.redactor is not None,
            files=catalog.count_files(),
            code=ctx.warm.code,
        )
    )


def saved_outputs(path: Path) -> dict[str, str]:
    """Every file of the site (path → sha256), as the catalog at ``path`` records them:
    what a build's report lists when asked after the build
    (:attr:`..build.BuildReport.outputs`)."""
    return _read(path, "SELECT path, sha256 FROM outputs ORDER BY path", ())


def saved_changes(path: Path, generation: int) -> list[str]:
    """The site files whose bytes build ``generation`` changed, made or removed, sorted, as
    the catalog at ``path`` records them ([] when a later build committed since)."""
    found = _read(
        path,
        "SELECT path, '' FROM outputs WHERE changed = ?1 AND (SELECT value FROM meta"
        " WHERE name = 'generation') = ?2 UNION SELECT path, '' FROM removed"
        " WHERE (SELECT value FROM meta WHERE name = 'generation') = ?2",
        (generation, str(generation)),
    )
    return sorted(found)


def _read(path: Path, sql: str, params: tuple[object, ...]) -> dict[str, str]:
    """The (key, value) rows of a read-only query of the catalog at ``path``."""
    try:
        found = Catalog.rows(path, sql, params)
    except sqlite3.Error:
        return {}
    return {str(k): str(v) for k, v in found}
