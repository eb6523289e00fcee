"""What a new user tripped on, each one fixed and kept fixed; and the site folder holding
exactly what is published, with the build's cache outside it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from publisher.archive import ArchiveError, NotFoundError
from publisher.cli import app
from publisher.site.context import CachePaths
from tests.helpers import SAMPLES, build, cache_of, part, session_doc, tree_digest, turn

pytestmark = pytest.mark.site

runner = CliRunner()
P = ["--project", str(SAMPLES)]


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


# --------------------------------------------------------------------------------------
# The CLI.


@pytest.mark.parametrize("command", [["history", "2"], ["print", "1"]])
def test_history_and_print_say_which_session_they_read(command: list[str]) -> None:
    code, _, err = run(*command, *P)
    assert code == 0
    assert "reading job_20260826_110230_7f3k2a, the most recently updated session" in err
    code, _, err = run(*command, "--run", "#ab12cd", *P)
    assert code == 0 and "reading" not in err


def test_a_polyglav_folder_without_sessions_is_not_taken_for_a_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default export of a bare folder makes ./.polyglav/exports/: the commands run
    there afterwards say where they looked, instead of showing an empty archive."""
    monkeypatch.chdir(tmp_path)
    code, _, _ = run("export", "#ab12cd", *P)
    assert code == 0 and (tmp_path / ".polyglav" / "exports").is_dir()
    for command in (["sessions"], ["history"], ["site", "build", "--no-search"]):
        code, out, err = run(*command)
        assert code == 1, (command, out, err)
        assert f"{tmp_path / '.polyglav'} holds no sessions/" in err, err
        assert "--project" in err and err.count("\n") == 1


def test_a_bare_id_suggests_the_hash_form() -> None:
    code, _, err = run("export", "ab12cd", "--out", "-", *P)
    assert code == 1
    assert "did you mean '#ab12cd'" in err


def test_a_session_file_path_works_as_the_name(tmp_path: Path) -> None:
    path = str(SAMPLES / "ses_20260817_120000_ab12cd.json")
    code, out, _ = run("export", path, "--out", "-")
    assert code == 0 and out.startswith("# Session `ses_20260817_120000_ab12cd`")
    code, out, _ = run("print", "1", "--run", path)
    assert code == 0 and out.startswith("index:     #1")
    code, out, _ = run("sessions", "preview", path)
    assert code == 0 and out.startswith("name:         ses_20260817_120000_ab12cd")
    other = tmp_path / "proj" / ".polyglav" / "sessions"
    other.mkdir(parents=True)
    code, _, err = run("export", path, "--out", "-", "--project", str(tmp_path / "proj"))
    assert code == 1
    assert "not a file of" in err and "--project" in err


def test_debug_is_accepted_after_the_command() -> None:
    code, _, err = run("export", "#zzzzzz", "--out", "-", *P)
    assert code == 1 and err.startswith("polyglav: error: #zzzzzz") and "Traceback" not in err
    for args in (
        ["export", "#zzzzzz", "--out", "-", *P, "--debug"],
        ["--debug", "export", "#zzzzzz", "--out", "-", *P],
        ["history", "--run", "#zzzzzz", *P, "--debug"],
    ):
        result = runner.invoke(app, args)
        assert isinstance(result.exception, NotFoundError), args


def test_site_out_naming_a_file_names_the_path_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("afile").write_text("x")
    code, _, err = run("site", "build", *P, "--out", "afile", "--no-search")
    assert code == 1
    assert err == "polyglav: error: afile: not a folder (the site folder)\n"


def test_a_file_name_that_is_not_the_session_name_is_shown_and_warned_about(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    doc = session_doc("ses_20260101_000000_inner1", turns=[turn(1, part("user", "hi"))])
    (folder / "ses_20260101_000000_outer1.json").write_text(json.dumps(doc))
    code, out, err = run("sessions", "--project", str(folder))
    assert code == 0
    row = out.splitlines()[1]
    assert row.split()[1] == "ses_20260101_000000_outer1"
    assert "session_name: ses_20260101_000000_inner1" in row
    assert "ses_20260101_000000_outer1.json: its session_name is" in err
    # #id resolves by file name, as docs/session-format.md says.
    code, out, err = run("export", "#outer1", "--out", "-", "--project", str(folder))
    assert code == 0 and "its session_name is" in err
    report = build(folder, tmp_path / "site")
    assert any("its session_name is" in w for w in report.warnings)


# --------------------------------------------------------------------------------------
# The site folder and the cache.


def test_the_site_folder_holds_only_what_is_published(tmp_path: Path) -> None:
    out = tmp_path / "site"
    build(SAMPLES, out)
    assert sorted(p.name for p in out.iterdir()) == [
        "assets",
        "decisions.html",
        "errors.html",
        "index.html",
        "sessions",
    ]
    assert not list(out.rglob(".*"))
    cache = cache_of(out)
    assert cache.catalog.is_file() and cache.fragments.is_dir()
    assert cache.root.parent == tmp_path / "xdg-cache" / "polyglav"
    assert not cache.root.is_relative_to(out)


def test_two_builds_and_incremental_against_fresh_are_byte_identical(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    shutil.copytree(SAMPLES, sessions)
    first, second = tmp_path / "a", tmp_path / "b"
    build(sessions, first)
    build(sessions, second)
    assert tree_digest(first) == tree_digest(second)
    doc = json.loads((sessions / "release-notes.json").read_text())
    doc["turns"].append(turn(len(doc["turns"]) + 1, part("user", "one more")))
    (sessions / "release-notes.json").write_text(json.dumps(doc))
    (sessions / "sub_20260817_122000_ef56gh.json").unlink()
    report = build(sessions, first)
    assert report.files_read == 1 and report.files_removed >= 1
    build(sessions, tmp_path / "fresh")
    assert tree_digest(first) == tree_digest(tmp_path / "fresh")


def test_a_lost_cache_costs_only_time(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    shutil.copytree(SAMPLES, sessions)
    out = tmp_path / "site"
    build(sessions, out)
    shutil.rmtree(cache_of(out).root)
    (sessions / "sub_20260817_122000_ef56gh.json").unlink()  # its pages must go
    # Strays in the site's own folders go too (a nested file, a dangling link); a link to
    # a folder outside the site is neither followed nor touched.
    (out / "sessions" / "stray" / "deep").mkdir(parents=True)
    (out / "sessions" / "stray" / "deep" / "x.html").write_text("stray")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("not the site's")
    (out / "sessions" / "link").symlink_to(elsewhere, target_is_directory=True)
    (out / "assets" / "dangling").symlink_to(out / "assets" / "gone.css")
    report = build(sessions, out)
    assert report.files_read == len(list(sessions.glob("*.json")))
    assert not (out / "sessions" / "stray").exists()
    assert not (out / "assets" / "dangling").is_symlink()
    assert (elsewhere / "keep.txt").read_text() == "not the site's"
    (out / "sessions" / "link").unlink()
    build(sessions, tmp_path / "fresh")
    assert tree_digest(out) == tree_digest(tmp_path / "fresh")


def test_a_cache_shared_by_two_site_folders_never_gives_a_wrong_page(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    shutil.copytree(SAMPLES, sessions)
    cache = tmp_path / "cache"
    build(sessions, tmp_path / "a", cache_dir=cache)
    build(sessions, tmp_path / "b", cache_dir=cache)
    (sessions / "release-notes.json").unlink()
    build(sessions, tmp_path / "a", cache_dir=cache)
    build(sessions, tmp_path / "fresh")
    assert tree_digest(tmp_path / "a") == tree_digest(tmp_path / "fresh")


def test_the_cache_folder_is_refused_inside_the_site_or_the_sessions(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    shutil.copytree(SAMPLES, sessions)
    out = tmp_path / "site"
    with pytest.raises(ArchiveError, match="must not be inside the site folder"):
        build(sessions, out, cache_dir=out / "cache")
    with pytest.raises(ArchiveError, match="inside the sessions folder"):
        build(sessions, out, cache_dir=sessions / "cache")
    assert not (sessions / "cache").exists()
    code, _, err = run(
        "site", "build", "--project", str(sessions), "--out", str(out), "--cache-dir",
        str(out / "c"), "--no-search",
    )  # fmt: skip
    assert code == 1 and "must not be inside the site folder" in err


def test_the_state_of_earlier_versions_leaves_the_site(tmp_path: Path) -> None:
    out = tmp_path / "site"
    legacy = out / ".polyglav"
    (legacy / "fragments").mkdir(parents=True)
    (legacy / "fragments" / "x.frag").write_text("old")
    (legacy / "manifest.jsonl").write_text("old")
    (legacy / "search.json").write_text("{}")
    build(SAMPLES, out)
    assert not legacy.exists()
    (legacy).mkdir()
    (legacy / "mine.txt").write_text("not ours")  # a file we never wrote stays
    build(SAMPLES, out)
    assert (legacy / "mine.txt").read_text() == "not ours"


def test_the_default_cache_follows_xdg_and_the_site_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from publisher.site.context import BuildOptions, default_cache_dir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    a = default_cache_dir(tmp_path / "a")
    assert a.parent == tmp_path / "x" / "polyglav" and a.name.startswith("site-")
    assert default_cache_dir(tmp_path / "b") != a
    monkeypatch.chdir(tmp_path)
    assert default_cache_dir(Path("a")) == a  # the absolute path decides
    monkeypatch.delenv("XDG_CACHE_HOME")
    home = Path(os.path.expanduser("~"))
    assert default_cache_dir(tmp_path / "a").parent == home / ".cache" / "polyglav"
    named = BuildOptions(sessions_dir=tmp_path, out_dir=tmp_path / "a", cache_dir=tmp_path / "c")
    assert CachePaths.of(named).root == tmp_path / "c"


def test_a_build_under_another_key_removes_a_gone_sessions_pages_and_says_so(
    tmp_path: Path,
) -> None:
    """A build whose key changed (here: redaction turned on) reads every file again and
    finds the last build's pages a shard of its manifest at a time, without keeping them
    (``States.outputs_of``): the pages of a session deleted meanwhile are removed and
    reported changed, and the build does not fall back to starting over (which would report
    every asset as changed and not the gone pages)."""
    from publisher.redact import Redactor

    sessions = tmp_path / "sessions"
    shutil.copytree(SAMPLES, sessions)
    out = tmp_path / "site"
    build(sessions, out)
    gone = "sub_20260817_122000_ef56gh"
    (sessions / f"{gone}.json").unlink()
    report = build(sessions, out, redactor=Redactor.create(["never-in-these-files"]))
    assert not (out / "sessions" / gone).exists()
    assert f"sessions/{gone}/index.html" in report.changed
    assert not any(rel.startswith("assets/") for rel in report.changed)
    assert report.files_removed >= 1
    build(sessions, tmp_path / "fresh", redactor=Redactor.create(["never-in-these-files"]))
    assert tree_digest(out) == tree_digest(tmp_path / "fresh")
