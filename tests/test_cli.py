"""CLI tests against sample_sessions/ (typer's CliRunner)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from publisher.cli import app
from tests.helpers import ROOT, SAMPLES, Writer, part, python_env, session_doc, turn

pytestmark = pytest.mark.unit

runner = CliRunner()
P = ["--project", str(SAMPLES)]
LINE_RE = re.compile(r"^#(\d+) \[([^\]]+)\] (\S+) (\d+) tools? ?(.*)$")


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_sessions_lists_every_file_with_parents_and_failures() -> None:
    code, out, err = run("sessions", *P)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["KIND", "NAME", "ID", "ROLE", "VERSION", "TURNS", "UPDATED"]
    assert len(lines) == 1 + 7
    sub = next(line for line in lines if line.startswith("sub ") and "cd34ef" in line)
    assert sub.endswith("parent: ses_20260817_120000_ab12cd")
    assert "reviewer" in sub
    flat = next(line for line in lines if "flat01" in line)
    assert "not loaded: legacy flat-messages format" in flat
    assert (
        "ses_20260601_100000_old002.json: written before the session_name/session_id fields" in err
    )


def test_sessions_preview() -> None:
    code, out, _ = run("sessions", "preview", "#cd34ef", *P)
    assert code == 0
    fields = dict(line.split(":", 1) for line in out.splitlines())
    assert fields["turns"].strip() == "1"
    assert fields["parent"].strip() == "ses_20260817_120000_ab12cd"
    assert fields["sub-sessions"].strip() == "sub_20260817_122000_ef56gh"
    assert "delegate ×1" in fields["tools"] and "run_command ×1" in fields["tools"]
    assert "tool ×2" in fields["part kinds"]


def test_history_default_is_last_ten_of_the_latest_session() -> None:
    code, out, _ = run("history", *P)
    assert code == 0
    # The most recently updated session is the nightly job.
    assert out.splitlines()[0].startswith("#1 [ok] 15.0s 2 tools Nightly: run the test suite")
    code, out, _ = run("history", "--run", "#ab12cd", *P)
    assert code == 0
    indexes = [int(LINE_RE.match(line).group(1)) for line in out.splitlines()]  # type: ignore[union-attr]
    assert indexes == list(range(3, 13))


def test_history_all_thoughts() -> None:
    code, out, _ = run("history", "all", "--thoughts", "--run", "#ab12cd", *P)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == (
        "#1 [ok] 18.0s 2 tools The test suite fails on `test_reserve_last_unit` since yesterday's refactor. "
        "Can you find out why?"
    )
    assert (
        lines[1]
        == "    Run the failing test first to see the actual assertion, then read the reservation code."
    )
    assert "#4 [ok] 1.0s 0 tools /model llama3.3:70b" in lines
    assert "#12 [running] - 1 tool Now run the linter." in lines
    statuses = {m.group(2) for m in map(LINE_RE.match, lines) if m}
    assert statuses == {"ok", "error", "truncated", "cancelled", "running"}


def test_history_thoughts_all_prints_whole_thinking() -> None:
    code, out, _ = run("history", "--thoughts", "all", "--run", "#ab12cd", *P)
    assert code == 0
    assert "and that the" in out  # end of the long truncated thinking of turn 10
    code, out, _ = run("history", "3", "--run", "#ab12cd", *P)
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == ["#10", "#11", "#12"]


@pytest.mark.parametrize(
    "target",
    ["#cd34ef", "session:sub_20260817_121500_cd34ef", "sub_20260817_121500_cd34ef", "reviewer"],
)
def test_run_target_forms(target: str) -> None:
    code, out, _ = run("history", "--run", target, *P)
    assert code == 0
    assert out.startswith("#1 [ok] 18.0s 2 tools Review the off-by-one fix")


def test_print_metadata_block_and_parts() -> None:
    code, out, _ = run("print", "4", "--run", "#ab12cd", *P)
    assert code == 0
    assert out.splitlines()[:10] == [
        "index:     #4",
        "status:    ok",
        "duration:  1.0s",
        "tools:     0",
        "started:   2026-08-17T12:02:13+00:00",
        "ended:     2026-08-17T12:02:14+00:00",
        "model:     llama3.3:70b",
        "provider:  ollama",
        "mode:      build",
        "reasoning: off",
    ]
    assert "--- 4.1 Command (2026-08-17T12:02:13+00:00)" in out
    code, out, _ = run("print", "12", "--run", "#ab12cd", *P)
    assert code == 0
    assert "ended:     -" in out and "output:\n-" in out


def test_print_one_part_and_compaction() -> None:
    code, out, _ = run("print", "8.1", "--run", "#ab12cd", *P)
    assert code == 0
    assert out.startswith("--- 8.1 Compaction")
    assert "compact_from: 6" in out and "turns 1–5 only through this summary" in out
    assert "index:" not in out


def test_print_cap_and_full(archive: Path, write_session: Writer) -> None:
    write_session(
        session_doc(turns=[turn(1, part("tool", name="cat", input={}, output="x" * 5000))])
    )
    project = ["--project", str(archive.parent.parent)]
    code, out, _ = run("print", "1.1", "--run", "#ab12cd", *project)
    assert code == 0
    assert "x" * 4000 + "... (1000 more chars, use --full)" in out
    code, out, _ = run("print", "1.1", "--full", "--run", "#ab12cd", *project)
    assert code == 0
    assert "x" * 5000 in out and "more chars" not in out
    (archive.parent / "config.json").write_text(json.dumps({"print_max_chars": 10}))
    _code, out, _ = run("print", "1.1", "--run", "#ab12cd", *project)
    assert "xxxxxxxxxx... (4990 more chars, use --full)" in out


def test_print_escapes_terminal_controls(archive: Path, write_session: Writer) -> None:
    write_session(session_doc(turns=[turn(1, part("user", "\x1b]0;pwned\x07\x1b[2Jhi"))]))
    code, out, _ = run("print", "1.1", "--run", "#ab12cd", "--project", str(archive.parent.parent))
    assert code == 0
    assert "\x1b" not in out and "\\x1b]0;pwned\\x07" in out


def test_bidirectional_controls_show_as_escapes_in_the_terminal(
    archive: Path, write_session: Writer
) -> None:
    """A right-to-left override (U+202E) or an isolate (U+2067) in a prompt or a role
    would reorder what the terminal shows ("Trojan Source"): every command that
    prints them shows escapes; the Markdown export keeps them as written (lossless)."""
    prompt = "approve \u202e}nruter{ if admin \u2067x\u2069 done"
    write_session(session_doc(role="re\u202eviewer", turns=[turn(1, part("user", prompt))]))
    project = ["--project", str(archive.parent.parent)]
    for args in (["print", "1.1", "--run", "#ab12cd"], ["history", "--run", "#ab12cd"],
                 ["sessions"], ["print", "1", "--run", "#ab12cd"]):  # fmt: skip
        code, out, err = run(*args, *project)
        assert code == 0, (args, err)
        assert not re.search("[\u202a-\u202e\u2066-\u2069]", out + err), (args, out)
        assert "\\u202e" in out, (args, out)
    code, out, _ = run("export", "#ab12cd", "--out", "-", *project)
    assert code == 0 and prompt in out


def test_messages_on_stderr_show_controls_in_file_names_as_escapes(
    archive: Path, tmp_path: Path
) -> None:
    """A file name holding an escape sequence or a right-to-left override reaches stderr
    in a warning, an error or a note: shown as escapes, even where click would pass ANSI
    codes through (a terminal: ``color=True`` here)."""
    (archive / "ses_x\x1b]0;pwned\x07.json").write_text('{"broken')
    (archive / "ses_y\u202egnp.json").write_text('{"broken')
    project = ["--project", str(archive.parent.parent)]
    out = tmp_path / "site"
    for args in (
        ["site", "build", *project, "--out", str(out), "--cache-dir", str(tmp_path / "c")],
        ["print", "1", "--run", "ses_x\x1b[2J", *project],
        ["sessions", *project],
    ):
        result = runner.invoke(app, args, color=True)
        shown = result.stdout + result.stderr
        assert not re.search("[\x1b\x07\u202e]", shown), (args, shown)
        assert "\\x1b" in shown or "\\u202e" in shown, (args, shown)


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["print", "x"], 2),
        (["print", "99", "--run", "#ab12cd"], 1),
        (["print", "1.99", "--run", "#ab12cd"], 1),
        (["history", "--thoughts=some"], 2),
        (["history", "many"], 2),
        (["export"], 2),
        (["export", "#ab12cd", "--format", "pdf"], 2),
        (["nonsense"], 2),
    ],
)
def test_exit_codes(args: list[str], code: int) -> None:
    result = runner.invoke(app, [*args, *P])
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output


def _commands() -> list[str]:
    """Every command line of the app, groups included (``site build``…), walked from the
    click tree typer makes: a new command is checked without being named here."""
    import typer.main

    found = []

    def walk(command: object, words: list[str]) -> None:
        found.append(" ".join(words))
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*words, name])

    walk(typer.main.get_command(app), [])
    return found


@pytest.mark.parametrize("command", _commands())
def test_help_ends_with_an_example(command: str) -> None:
    result = runner.invoke(app, [*command.split(), "--help"])
    assert result.exit_code == 0
    lines = result.stdout.rstrip().splitlines()
    example = max(i for i, line in enumerate(lines) if line.strip() == "Example:")
    assert example > 0 and lines[example + 1 :], result.stdout
    assert all(line.strip().startswith("polyglav ") for line in lines[example + 1 :]), lines
    if command:
        assert lines[example + 1].strip().startswith(f"polyglav {command.split()[0]}"), lines


def test_console_script_and_module_entry_points() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "publisher", "sessions", *P],
        env=python_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0 and "ses_20260817_120000_ab12cd" in out.stdout


def test_subprocesses_run_this_checkout(tmp_path: Path) -> None:
    """``python -m publisher`` in a test's subprocess imports this checkout's package from any
    working folder, not another copy installed in editable mode."""
    out = subprocess.run(
        [sys.executable, "-c", "import publisher; print(publisher.__file__)"],
        cwd=tmp_path,
        env=python_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(out.stdout.strip()) == ROOT / "publisher" / "__init__.py"


def test_no_project_and_no_polyglav_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["sessions"])
    assert result.exit_code == 1
    assert "no .polyglav/ folder" in result.stderr


def test_project_found_upwards(
    archive: Path, write_session: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_session(session_doc())
    deep = archive.parent.parent / "src" / "pkg"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    result = runner.invoke(app, ["history"])
    assert result.exit_code == 0
    assert result.stdout == ""  # the session has no turns
    result = runner.invoke(app, ["sessions"])
    assert "ses_20260817_120000_ab12cd" in result.stdout


@pytest.mark.slow
def test_closed_pipe_is_not_an_error(tmp_path: Path) -> None:
    big = tmp_path / "sessions"
    big.mkdir()
    doc = session_doc(turns=[turn(i, part("user", "x" * 10_000)) for i in range(1, 200)])
    (big / "ses_20260817_120000_ab12cd.json").write_text(json.dumps(doc))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "publisher",
            "export",
            "#ab12cd",
            "--project",
            str(big),
            "--out",
            "-",
        ],
        env=python_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(100).startswith(b"# Session")
    proc.stdout.close()  # like `| head`
    err = proc.stderr.read()
    assert proc.wait(timeout=30) == 0
    assert err == b""


def test_a_large_folder_is_listed_by_workers_as_in_one_process(tmp_path: Path) -> None:
    """More than one chunk of files is read by a pool: the same listing, in the same
    order, failures included."""
    from publisher.archive import LIST_CHUNK, Archive

    for i in range(2 * LIST_CHUNK + 5):
        name = f"ses_20260817_12{i:04d}_ab{i:04d}"
        doc = session_doc(name, role=f"r{i % 3}", turns=[turn(1, part("user", str(i)))])
        (tmp_path / f"{name}.json").write_text(json.dumps(doc), encoding="utf-8")
    (tmp_path / "ses_20260817_129999_broken.json").write_text("{", encoding="utf-8")
    one, pool = Archive(tmp_path).listing(workers=1), Archive(tmp_path).listing(workers=2)
    assert pool == one and len(one) == 2 * LIST_CHUNK + 6
    assert [e.loads for e in one].count(False) == 1 and one[-1].failure is not None
    assert Archive(tmp_path).resolve("r2").session_name == max(
        e.session_name for e in one if e.role == "r2"
    )


@pytest.mark.parametrize("target", ["#ab12c", "#ab12cd1"])
def test_an_id_of_other_than_six_characters_is_refused(target: str) -> None:
    code, _, err = run("history", "1", "--run", target, *P)
    assert code == 1
    assert err == f"polyglav: error: {target}: not a session id (six base36 letters and digits)\n"
