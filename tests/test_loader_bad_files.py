"""Every kind of file that does not load: one clear line, exit 1, no traceback, untouched."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from publisher.archive import Archive
from publisher.cli import app
from tests.helpers import Writer, part, session_doc, turn

pytestmark = pytest.mark.unit

runner = CliRunner()

BAD_FILES: dict[str, tuple[bytes, str]] = {
    "flat": (
        json.dumps({"name": "x", "messages": [{"role": "user", "content": "hi"}]}).encode(),
        "legacy flat-messages format",
    ),
    "prerename": (
        json.dumps({"name": "x", "id": "abc", "turns": [], "created_at": ""}).encode(),
        "before the session_name/session_id fields",
    ),
    "invalid": (b'{"session_name": "x", "turns": [,]}', "invalid JSON"),
    "truncated": (json.dumps(session_doc("ses_1_aaaaaa")).encode()[:-40], "truncated JSON"),
    "empty": (b"", "empty file"),
    "wrongtype": (
        json.dumps(session_doc("ses_1_bbbbbb", turns={"index": 1})).encode(),
        "$.turns: expected an array, got object",
    ),
    "parttype": (
        json.dumps(session_doc("ses_1_cccccc", turns=[turn(1, "oops")])).encode(),
        "$.turns[0].parts[0]: expected an object, got string",
    ),
    "toplevel": (b"[1, 2, 3]", "expected a JSON object at the top level"),
    "utf8": (b'{"session_name": "\xff\xfe", "turns": []}', "invalid UTF-8 at byte 18"),
    "deep": (
        b'{"session_name": "x", "session_id": "", "turns": '
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}",
        "nested too deep",
    ),
    "trailing": (json.dumps(session_doc("ses_1_dddddd")).encode() + b" {}", "trailing data"),
    "bigint": (
        b'{"session_name": "x", "session_id": "", "turns": [], "n": ' + b"9" * 30_000 + b"}",
        "integer literal of 30000 digits",
    ),
}


@pytest.mark.parametrize("key", sorted(BAD_FILES))
def test_bad_file_one_line_exit_1(key: str, archive: Path, write_session: Writer) -> None:
    data, reason = BAD_FILES[key]
    name = f"ses_20260101_000000_{key[:6]:0<6}"
    path = write_session(data, name)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    result = runner.invoke(
        app, ["export", name, "--project", str(archive.parent.parent), "--out", "-"]
    )
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"{name}.json" in lines[0] and reason in lines[0]
    assert "Traceback" not in result.stderr
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before  # never touched

    # Listed by `sessions` with the reason, and the listing still succeeds.
    listing = runner.invoke(app, ["sessions", "--project", str(archive.parent.parent)])
    assert listing.exit_code == 0
    assert name in listing.stdout and reason in listing.stdout
    assert f"{name}.json: " in listing.stderr


def test_debug_shows_traceback(archive: Path, write_session: Writer) -> None:
    write_session(b"{", "ses_20260101_000000_zzzzzz")
    result = runner.invoke(
        app,
        [
            "--debug",
            "export",
            "ses_20260101_000000_zzzzzz",
            "--project",
            str(archive.parent.parent),
            "--out",
            "-",
        ],
    )
    assert result.exit_code == 1
    assert result.exception is not None  # raised, so a traceback is shown


def test_symlink_out_of_folder_is_refused(tmp_path: Path, archive: Path) -> None:
    outside = tmp_path / "secret.json"
    outside.write_text(json.dumps(session_doc("ses_20260101_000000_linked")))
    os.symlink(outside, archive / "ses_20260101_000000_linked.json")
    result = runner.invoke(
        app,
        [
            "export",
            "ses_20260101_000000_linked",
            "--project",
            str(archive.parent.parent),
            "--out",
            "-",
        ],
    )
    assert result.exit_code == 1
    assert "symlink leading out of the sessions folder" in result.stderr
    assert "Traceback" not in result.stderr


def test_symlink_inside_folder_loads(archive: Path, write_session: Writer) -> None:
    write_session(session_doc("ses_20260101_000000_target"))
    os.symlink("ses_20260101_000000_target.json", archive / "alias.json")
    entries = {e.file_name: e for e in Archive(archive).listing()}
    assert entries["alias.json"].loads
    assert entries["alias.json"].session_name == "ses_20260101_000000_target"


ODD = {
    "surrogate": session_doc(
        "ses_20260101_000000_odd001",
        turns=[
            turn(
                1,
                part("user", "bad \ud800 surrogate"),
                part("tool", name="t\udfff", input={"k": "\udc00"}, output="o\ud83d"),
            )
        ],
    ),
    "nan": session_doc(
        "ses_20260101_000000_odd002",
        turns=[
            turn(
                1,
                part(
                    "tool", name="calc", input={"x": float("nan"), "y": float("inf")}, output="inf"
                ),
            )
        ],
    ),
    "empty_turn": session_doc("ses_20260101_000000_odd003", turns=[turn(1, status="empty")]),
    "no_output": session_doc(
        "ses_20260101_000000_odd004",
        turns=[
            turn(
                1,
                part("tool", name="run_command", input={"cmd": "sleep 100"}),
                status="running",
                ended_at="",
            )
        ],
    ),
    "status": session_doc(
        "ses_20260101_000000_odd005", turns=[turn(1, part("user", "hi"), status="exploded")]
    ),
    "compact": session_doc(
        "ses_20260101_000000_odd006",
        turns=[turn(1, part("command", "/compact", summary="S", compact_from=99))],
    ),
    "orphan": session_doc("sub_20260101_000000_odd007", parent_id="ses_nowhere_xxxxxx"),
    "cycle_a": session_doc("sub_20260101_000000_cyc00a", parent_id="sub_20260101_000000_cyc00b"),
    "cycle_b": session_doc("sub_20260101_000000_cyc00b", parent_id="sub_20260101_000000_cyc00a"),
    "unknown": session_doc(
        "ses_20260101_000000_odd008",
        future_field={"a": 1},
        turns=[
            turn(
                1,
                {"type": "hologram", "url": "x.png", "timestamp": "t"},
                part("user", "hi", mood="calm"),
                weather="sunny",
            )
        ],
    ),
}


@pytest.mark.parametrize("key", sorted(ODD))
def test_odd_content_still_exports(key: str, archive: Path, write_session: Writer) -> None:
    doc = ODD[key]
    write_session(doc)
    result = runner.invoke(
        app, ["export", doc["session_name"], "--project", str(archive.parent.parent), "--out", "-"]
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout.rstrip().split("\n## ")[-1].startswith("Errors")


def test_bom_loads(archive: Path, write_session: Writer) -> None:
    write_session(
        b"\xef\xbb\xbf" + json.dumps(session_doc("ses_20260101_000000_bom001")).encode(),
        "ses_20260101_000000_bom001",
    )
    assert Archive(archive).resolve("#bom001").session_name == "ses_20260101_000000_bom001"


def test_unknown_fields_are_kept_and_shown(archive: Path, write_session: Writer) -> None:
    write_session(ODD["unknown"])
    out = runner.invoke(
        app, ["export", "#odd008", "--project", str(archive.parent.parent), "--out", "-"]
    ).stdout
    for needle in (
        '"future_field"',
        '"weather": "sunny"',
        '"mood": "calm"',
        "Unknown part `hologram`",
        '"url": "x.png"',
    ):
        assert needle in out


def test_ambiguous_id_lists_candidates(archive: Path, write_session: Writer) -> None:
    write_session(session_doc("ses_20260101_000000_same11"))
    write_session(session_doc("job_20260101_000000_same11"))
    result = runner.invoke(
        app, ["history", "--run", "#same11", "--project", str(archive.parent.parent)]
    )
    assert result.exit_code == 1
    assert "ambiguous id" in result.stderr
    assert (
        "job_20260101_000000_same11.json" in result.stderr
        and "ses_20260101_000000_same11.json" in result.stderr
    )


@pytest.mark.parametrize("target", ["#nope00", "session:nobody", "nobody", "#3"])
def test_not_found(target: str, archive: Path, write_session: Writer) -> None:
    write_session(session_doc())
    result = runner.invoke(
        app, ["print", "1", "--run", target, "--project", str(archive.parent.parent)]
    )
    assert result.exit_code == 1
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("name", ["../../etc/passwd", "/etc/passwd", "a/b", "..", "a\\b"])
def test_names_cannot_leave_the_folder(name: str, archive: Path, write_session: Writer) -> None:
    result = runner.invoke(
        app, ["export", name, "--project", str(archive.parent.parent), "--out", "-"]
    )
    assert result.exit_code == 1
    assert "Traceback" not in result.stderr


def test_export_refuses_to_write_into_sessions_folder(archive: Path, write_session: Writer) -> None:
    write_session(session_doc())
    result = runner.invoke(
        app,
        [
            "export",
            "#ab12cd",
            "--project",
            str(archive.parent.parent),
            "--out",
            str(archive / "x.md"),
        ],
    )
    assert result.exit_code == 1
    assert not (archive / "x.md").exists()


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("interrupted", "yes", "$.turns[0].parts[0].interrupted: expected a boolean, got string"),
        ("images", 5, "$.turns[0].parts[0].images: expected an array, got number"),
        ("images", [1], "$.turns[0].parts[0].images[0]: expected an object, got number"),
        (
            "images",
            [{"media_type": ["x"]}],
            "$.turns[0].parts[0].images[0].media_type: expected a string, got array",
        ),
    ],
)
def test_a_tool_part_s_images_and_interrupt_are_checked(
    field: str, value: object, reason: str
) -> None:
    from publisher.loader import SessionLoadError, parse_session_text

    doc = session_doc(turns=[turn(1, part("tool", name="Read", **{field: value}))])
    with pytest.raises(SessionLoadError) as caught:
        parse_session_text(json.dumps(doc), "x.json")
    assert caught.value.reason == reason


def test_images_interrupts_and_a_title_load() -> None:
    from publisher.loader import session_from_json
    from publisher.model import ImagePart, ToolPart

    doc = session_doc(
        title="A title",
        turns=[
            turn(
                1,
                {"type": "image", "media_type": "image/png", "data": "QQ==", "x": 1},
                part(
                    "tool",
                    name="Task",
                    interrupted=True,
                    images=[{"media_type": "image/gif", "data": "", "y": 2}],
                ),
            )
        ],
    )
    session = session_from_json(doc, "x.json")
    image, tool = session.turns[0].parts
    assert session.title == "A title" and "title" not in session.extra
    assert isinstance(image, ImagePart) and (image.image.media_type, image.image.data) == (
        "image/png",
        "QQ==",
    )
    assert image.extra == {"x": 1}
    assert isinstance(tool, ToolPart) and tool.interrupted and not tool.failed
    assert [(i.media_type, i.extra) for i in tool.images] == [("image/gif", {"y": 2})]
