"""Helpers shared by the site tests."""

from __future__ import annotations

import hashlib
from pathlib import Path

from publisher.site.build import BuildOptions, BuildReport, build_site, iter_site_files


def build(sessions: Path, out: Path, **options: object) -> BuildReport:
    values: dict[str, object] = {"search": False, "workers": 1}
    values.update(options)
    return build_site(BuildOptions(sessions_dir=sessions, out_dir=out, **values))  # type: ignore[arg-type]


def tree_digest(out: Path) -> dict[str, str]:
    """Relative path → sha256 of every published file (build state excluded)."""
    return {
        p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in iter_site_files(out)
    }
