"""Themes: a chain of folders (a user theme, then the built-in default it falls back to).

A theme folder holds ``templates/`` (jinja2) and ``assets/`` (copied to the site's
``assets/``). A user theme (``--theme DIR``) needs only the files it changes; every other
file comes from ``default``. A built-in theme is named by its folder under ``themes/``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import publisher


class ThemeError(Exception):
    """An unknown theme name or a theme folder that cannot be used."""


def builtin_themes_dir() -> Path:
    """The installed ``publisher/themes`` folder, or ``themes/`` of a source checkout."""
    package = Path(publisher.__file__).resolve().parent
    for candidate in (package / "themes", package.parent / "themes"):
        if (candidate / "default" / "templates").is_dir():
            return candidate
    raise ThemeError("the built-in themes are not installed (no themes/default/templates)")


def builtin_theme_names() -> list[str]:
    base = builtin_themes_dir()
    return sorted(
        p.name for p in base.iterdir() if (p / "templates").is_dir() or (p / "theme.toml").is_file()
    )


@dataclass(slots=True)
class Theme:
    """The folders of a theme, most specific first, ending with ``default``."""

    name: str
    """The theme's name (a built-in name or the user folder's name)."""
    dirs: list[Path] = field(default_factory=list)
    """Theme folders, searched in order."""

    @classmethod
    def load(cls, spec: str | Path | None) -> Theme:
        """``None`` or a built-in name, or a folder holding templates/assets overrides."""
        base = builtin_themes_dir()
        default = base / "default"
        if spec is None or str(spec) == "default":
            return cls("default", [default])
        candidate = Path(spec)
        if (base / str(spec)).is_dir() and "/" not in str(spec) and "\\" not in str(spec):
            chosen = base / str(spec)
        elif candidate.is_dir():
            chosen = candidate.resolve()
        else:
            names = ", ".join(builtin_theme_names())
            raise ThemeError(f"{spec}: no such theme (built-in: {names}; or give a folder)")
        if not (chosen / "templates").is_dir() and not (chosen / "assets").is_dir():
            raise ThemeError(f"{spec}: a theme folder holds templates/ and/or assets/")
        return cls(chosen.name, [chosen, default] if chosen != default else [default])

    @property
    def template_dirs(self) -> list[str]:
        return [str(d / "templates") for d in self.dirs if (d / "templates").is_dir()]

    def assets(self) -> dict[str, Path]:
        """Relative asset path → the file that provides it (the most specific theme wins)."""
        found: dict[str, Path] = {}
        for folder in reversed(self.dirs):
            root = folder / "assets"
            if not root.is_dir():
                continue
            for path in sorted(root.rglob("*")):
                if path.is_file():
                    found[path.relative_to(root).as_posix()] = path
        return dict(sorted(found.items()))

    def asset_text(self, name: str) -> str:
        path = self.assets().get(name)
        if path is None:
            raise ThemeError(f"theme {self.name}: no asset {name}")
        return path.read_text(encoding="utf-8")

    def files(self) -> list[tuple[str, Path]]:
        """Every file of every folder of the theme, as (``<folder index>/<relative path>``,
        path), in a stable order: what the theme's cache key is made of."""
        found = []
        for number, folder in enumerate(self.dirs):
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    found.append((f"{number}/{path.relative_to(folder).as_posix()}", path))
        return found
