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
