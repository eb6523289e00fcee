"""A build whose key changed (another theme, other code) renders every turn again: no turn
fragment of the last build is reused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import MAIN, SAMPLES, build, fresh_digest, page_of, tree_digest

pytestmark = pytest.mark.site


def test_a_theme_change_reuses_no_turn_fragment(tmp_path: Path) -> None:
    theme = tmp_path / "theme"
    (theme / "templates").mkdir(parents=True)
    turn = (Path(__file__).parent.parent / "themes/default/templates/turn.html").read_text("utf-8")
    marker = "<!-- from the user theme -->"
    (theme / "templates" / "turn.html").write_text(turn + marker + "\n", encoding="utf-8")
    out = tmp_path / "site"
    build(SAMPLES, out, theme=str(theme))
    assert marker in page_of(out, MAIN).read_text(encoding="utf-8")
    build(SAMPLES, out)  # back to the default theme, same site and cache
    assert marker not in page_of(out, MAIN).read_text(encoding="utf-8")
    assert tree_digest(out) == fresh_digest(SAMPLES, tmp_path / "fresh")


def _code_key(package_root: Path) -> str:
    """:func:`publisher.site.staleness.code_key` of the package copied at ``package_root``
    (a fresh interpreter with that copy first on the path)."""
    import os
    import subprocess
    import sys

    probe = "import publisher.site.staleness as s; print(s.__file__); print(s.code_key())"
    result = subprocess.run(
        [sys.executable, "-c", probe],
        env=dict(os.environ, PYTHONPATH=str(package_root)),
        cwd=package_root,
        capture_output=True,
        text=True,
        check=True,
    )
    where, key = result.stdout.split()
    assert Path(where).is_relative_to(package_root), where  # the copy, not this checkout
    return key


@pytest.mark.slow
def test_the_code_key_follows_every_file_of_the_publisher(tmp_path: Path) -> None:
    """A changed renderer (a development checkout, a patched install) must not reuse the
    pages and fragments the old code made: the build key hashes every Python file of the
    package, its path and its bytes."""
    import shutil

    root = Path(__file__).parent.parent
    copy = tmp_path / "copy"
    shutil.copytree(
        root / "publisher", copy / "publisher", ignore=shutil.ignore_patterns("__pycache__")
    )
    first = _code_key(copy)
    assert first == _code_key(copy)  # the same files, the same key
    keys = {first}
    for rel in ("render/markup.py", "site/stages/render.py", "gate.py"):
        path = copy / "publisher" / rel
        original = path.read_bytes()
        path.write_bytes(original + b"\n# changed\n")
        keys.add(_code_key(copy))
        path.write_bytes(original)
    (copy / "publisher" / "render" / "extra_view.py").write_text("X = 1\n")
    keys.add(_code_key(copy))
    assert len(keys) == 5, "each change to the package's files changes the build key"
