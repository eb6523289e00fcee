"""Helpers shared by the site tests."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

from publisher.site.build import BuildOptions, BuildReport, build_site
from publisher.site.context import CachePaths

DEFAULTS: dict[str, object] = {"search": False, "workers": 1}
"""What :func:`build` passes unless told otherwise (a fixture may set ``tunables``)."""


def build(sessions: Path, out: Path, **options: object) -> BuildReport:
    values: dict[str, object] = dict(DEFAULTS)
    values.update(options)
    return build_site(BuildOptions(sessions_dir=sessions, out_dir=out, **values))  # type: ignore[arg-type]


def cache_of(out: Path) -> CachePaths:
    """The default cache folder of the site folder ``out``."""
    return CachePaths.of(BuildOptions(sessions_dir=out, out_dir=out))


def iter_site_files(out: Path) -> Iterator[Path]:
    """Every file under ``out``, sorted."""
    for path in sorted(out.rglob("*")):
        if path.is_file():
            yield path


def tree_digest(out: Path) -> dict[str, str]:
    """Relative path → sha256 of every file under ``out`` (all of it is published)."""
    return {
        p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in iter_site_files(out)
    }
