"""Bad names, bad outputs, JSON traps, arbitrary input, reproducible bytes."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markupsafe import escape
from typer.testing import CliRunner

from publisher.cli import app
from publisher.loader import SessionLoadError
from publisher.render.html import HtmlRenderer
from publisher.render.markdown import export_markdown
from publisher.site import urls
from publisher.site.fragments import FragmentWriter
from publisher.site.graph import Graph
from publisher.site.render import PageFacts, render_session_pages
from publisher.site.summary import Summary
from publisher.theme import Theme
from tests.helpers import (
    SAMPLES,
    build,
    parse_session_bytes,
    part,
    python_env,
    session_doc,
    tree_digest,
    turn,
)

runner = CliRunner()

HOSTILE_NAMES = [
    "../../x", "/etc/x", "a\\b", "NUL", "con", "CON.txt", "Case", "case", "x" * 300, "trailing.", "trailing ",
    "rtl\u202egnp.exe", "sp ace", "dot..dot", ".hidden", "émoji😀", "com1", "lpt9.log", "a:b", 'q"uote', "<tag>",
]  # fmt: skip


@pytest.mark.site
def test_hostile_names_stay_inside_and_are_portable(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for i, name in enumerate(HOSTILE_NAMES):
        doc = session_doc(
            f"ses_x_{i}", session_name=name, turns=[turn(1, part("user", f"hello {name}"))]
        )
        (sessions / f"file{i}.json").write_text(json.dumps(doc))
    out = tmp_path / "site"
    report = build(sessions, out)
    assert report.sessions == len(HOSTILE_NAMES), report.warnings
    slugs = {urls.slug(n) for n in HOSTILE_NAMES}
    assert len({s.lower() for s in slugs}) == len(HOSTILE_NAMES)  # distinct even case-insensitively
    for path in out.rglob("*"):
        assert path.resolve().is_relative_to(out.resolve())
        rel = path.relative_to(out).as_posix()
        for component in rel.split("/"):
            assert len(component) <= 120
            assert not component.endswith((".", " "))
            assert component.split(".")[0].lower() not in {
                "con",
                "nul",
                "prn",
                "aux",
                "com1",
                "lpt9",
            }
            assert all(c.isascii() and (c.isalnum() or c in "._-") for c in component), rel
    for name in HOSTILE_NAMES:
        page = out / urls.session_page(name)
        assert page.is_file()
        html = page.read_text(encoding="utf-8")
        # The real name is shown, a bidirectional control in it as an escape (\u202e).
        shown = re.sub("[\u202a-\u202e\u2066-\u2069]", lambda m: f"\\u{ord(m[0]):04x}", name)
        assert str(escape(shown)) in html
        assert not re.search("[\u202a-\u202e\u2066-\u2069]", html)
    assert not (tmp_path / "x").exists() and not Path("/etc/x").exists()


@pytest.mark.site
def test_symlink_planted_at_output_is_replaced(tmp_path: Path) -> None:
    out = tmp_path / "site"
    build(SAMPLES, out)
    victim_file = tmp_path / "victim.html"
    victim_file.write_text("keep me")
    victim_dir = tmp_path / "victim_dir"
    victim_dir.mkdir()
    (out / "index.html").unlink()
    (out / "index.html").symlink_to(victim_file)
    shutil.rmtree(out / "sessions")
    (out / "sessions").symlink_to(victim_dir, target_is_directory=True)
    build(SAMPLES, out)
    assert victim_file.read_text() == "keep me"
    assert list(victim_dir.iterdir()) == []
    assert not (out / "index.html").is_symlink() and not (out / "sessions").is_symlink()
    fresh = tmp_path / "fresh"
    build(SAMPLES, fresh)
    assert tree_digest(out) == tree_digest(fresh)


@pytest.mark.site
def test_output_files_have_ordinary_permissions(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        build(SAMPLES, tmp_path / "site")
    finally:
        os.umask(old)
    for path in (tmp_path / "site").rglob("*"):
        if path.is_file():
            assert stat.S_IMODE(path.stat().st_mode) == 0o644, path


@pytest.mark.site
@pytest.mark.parametrize("failure", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_unwritable_output_one_clear_error_no_leftovers(
    failure: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "site"
    real_fdopen = os.fdopen
    budget = {"writes": 3}

    class Failing:
        """A file whose writes fail once the budget is spent; otherwise the file."""

        def __init__(self, handle: Any) -> None:
            self.handle = handle

        def __getattr__(self, name: str) -> Any:
            return getattr(self.handle, name)

        def __enter__(self) -> Failing:
            return self

        def __exit__(self, *exc: object) -> None:
            self.handle.close()

        def write(self, data: bytes) -> int:
            budget["writes"] -= 1
            if budget["writes"] < 0:
                self.handle.write(data[: len(data) // 2])
                raise OSError(failure, os.strerror(failure))
            return int(self.handle.write(data))

    monkeypatch.setattr(
        "publisher.write.os.fdopen", lambda fd, mode: Failing(real_fdopen(fd, mode))
    )
    result = runner.invoke(
        app, ["site", "build", "--project", str(SAMPLES), "--out", str(out), "--no-search", "-q"]
    )
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("polyglav: error:")]
    assert len(errors) == 1 and os.strerror(failure) in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    leftovers = [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []
    for path in out.rglob("*.html"):
        assert path.read_text(encoding="utf-8").rstrip().endswith("</html>")  # never half a page


JSON_TRAPS: dict[str, bytes] = {
    "nan": b'{"session_name": "nan", "session_id": "", "turns": [{"index": 1, "parts": [{"type": "tool", '
    b'"name": "t", "input": {"x": NaN, "y": -Infinity}, "output": "o"}]}]}',
    "dupkeys": b'{"session_name": "dupkeys", "session_id": "", "session_id": "", "turns": [], "role": "a", "role": "b"}',
    "bignum": b'{"session_name": "bignum", "session_id": "", "turns": [], "n": '
    + b"7" * 5000
    + b"}",
    "deep": b'{"session_name": "deep", "session_id": "", "turns": '
    + b"[" * 100_000
    + b"]" * 100_000
    + b"}",
    "utf8": b'{"session_name": "utf8", "session_id": "", "turns": [], "role": "\xc3\x28"}',
    "surrogate": b'{"session_name": "surrogate", "session_id": "", "turns": [{"index": 1, "parts": '
    b'[{"type": "user", "text": "\\ud800\\udfff\\udc00"}]}]}',
    "bom": b'\xef\xbb\xbf{"session_name": "bom", "session_id": "", "turns": []}',
    "trailing": b'{"session_name": "trailing", "session_id": "", "turns": []} []',
    "longline": b'{"session_name": "longline", "session_id": "", "turns": [{"index": 1, "parts": [{"type": "tool", '
    b'"name": "cat", "input": {}, "output": "' + b"y" * 10_000_000 + b'"}]}]}',
    "brackets": b'{"session_name": "brackets", "session_id": "", "turns": [{"index": 1, "parts": '
    b'[{"type": "user", "text": "' + b"[" * 100_000 + b'"}]}]}',
    "deepinput": b'{"session_name": "deepinput", "session_id": "", "turns": [{"index": 1, "parts": [{"type": '
    b'"tool", "name": "t", "input": ' + b"[" * 500 + b"]" * 500 + b"}]}]}",
}
EXPECTED_FAILURES = {"deep", "utf8", "trailing", "deepinput"}


@pytest.mark.site
@pytest.mark.slow
def test_json_traps_render_or_fail_clearly(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for name, data in JSON_TRAPS.items():
        (sessions / f"{name}.json").write_bytes(data)
    shutil.copy(SAMPLES / "release-notes.json", sessions)
    report = build(sessions, tmp_path / "site")
    failed = {f.file_name[:-5]: f.reason for f in report.failures}
    assert set(failed) == EXPECTED_FAILURES, failed
    assert all("\n" not in reason and reason for reason in failed.values())
    assert report.sessions == len(JSON_TRAPS) - len(EXPECTED_FAILURES) + 1
    for name in set(JSON_TRAPS) - EXPECTED_FAILURES:
        assert (tmp_path / "site" / urls.session_page(name)).is_file()
    huge = (tmp_path / "site" / urls.session_dir("longline") / "output-1.1.txt").stat().st_size
    assert huge == 10_000_000
    for name in set(JSON_TRAPS) - EXPECTED_FAILURES:
        result = runner.invoke(app, ["export", name, "--project", str(sessions), "--out", "-"])
        assert result.exit_code == 0, (name, result.stderr)


# ---- property tests over arbitrary and near-valid documents -------------------------

scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20)
)
anything = st.recursive(scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
                        max_leaves=8)  # fmt: skip
text = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
maybe = lambda s: st.one_of(s, anything)  # noqa: E731  (a valid value, or anything at all)
part_doc = st.fixed_dictionaries(
    {"type": maybe(st.sampled_from(["user", "text", "thinking", "tool", "command", "system", "other"]))},
    optional={
        "text": maybe(text), "timestamp": maybe(text), "name": maybe(text), "input": anything,
        "output": maybe(text), "is_error": maybe(st.booleans()), "analysis": maybe(text), "summary": maybe(text),
        "compact_from": maybe(st.integers(-3, 9)), "extra": anything,
    },
)  # fmt: skip
turn_doc = st.fixed_dictionaries(
    {"index": maybe(st.integers(0, 5)), "parts": maybe(st.lists(part_doc, max_size=4))},
    optional={
        "status": maybe(text),
        "model": maybe(text),
        "started_at": maybe(text),
        "ended_at": maybe(text),
    },
)
session_strategy = st.fixed_dictionaries(
    {"session_name": maybe(text), "session_id": maybe(text), "turns": maybe(st.lists(turn_doc, max_size=3))},
    optional={
        "parent_id": maybe(text), "sub_sessions": maybe(st.lists(text, max_size=2)), "role": maybe(text),
        "errors": maybe(st.lists(st.fixed_dictionaries({"code": maybe(st.integers()), "message": maybe(text)}))),
        "permissions": maybe(st.lists(st.fixed_dictionaries({"tool": maybe(text), "decision": maybe(text)}))),
    },
)  # fmt: skip


class Balance(HTMLParser):
    VOID = frozenset({"meta", "link", "br", "hr", "input", "img"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.ok = True

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.ok = False


RENDERER = HtmlRenderer(Theme.load(None))


@pytest.mark.unit
@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=session_strategy, cut=st.none() | st.integers(0, 400))
def test_loader_and_renderers_never_crash(doc: dict[str, Any], cut: int | None) -> None:
    data = json.dumps(doc, allow_nan=True).encode("utf-8", "surrogatepass")
    if cut is not None:
        data = data[:cut]
    try:
        session = parse_session_bytes(data, "x.json")
    except SessionLoadError as exc:
        assert exc.reason and "\n" not in exc.reason
        return
    markdown = "".join(export_markdown(session))
    markdown.encode("utf-8")
    assert markdown.rstrip().rsplit("\n## ", 1)[-1].startswith("Errors")
    graph = Graph.of({session.session_name: Summary.of(session)}, ["x.json"])
    files: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = FragmentWriter(Path(tmp) / "fragments")
        facts = PageFacts.from_graph(graph, session.session_name, set())
        render_session_pages(RENDERER, session, facts, sink=files.__setitem__, store=store)
        store.abort()
    for rel, page in files.items():
        if rel.endswith(".html"):
            checker = Balance()
            checker.feed(page.decode("utf-8"))
            checker.close()
            assert checker.ok and checker.stack == [], rel


@pytest.mark.site
@pytest.mark.slow
def test_reproducible_across_environments(tmp_path: Path) -> None:
    digests = []
    for i, env in enumerate(
        [
            {"PYTHONHASHSEED": "0", "TZ": "UTC", "LANG": "C"},
            {
                "PYTHONHASHSEED": "4242",
                "TZ": "Asia/Kathmandu",
                "LANG": "tr_TR.UTF-8",
                "LC_ALL": "tr_TR.UTF-8",
            },
        ]
    ):
        sessions = tmp_path / f"env{i}" / "sessions"
        sessions.mkdir(parents=True)
        files = sorted(
            SAMPLES.glob("*.json"), reverse=bool(i)
        )  # a different creation (directory) order
        for path in files:
            shutil.copy(path, sessions / path.name)
        out = tmp_path / f"site{i}"
        subprocess.run(
            [sys.executable, "-m", "publisher", "site", "build", "--project", str(sessions), "--out", str(out),
             "--no-search", "-q"],
            env=python_env(**env), check=True, capture_output=True,
        )  # fmt: skip
        digests.append(tree_digest(out))
    assert digests[0] == digests[1]
