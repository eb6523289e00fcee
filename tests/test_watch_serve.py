"""``site watch`` and ``site serve`` driven for real: a subprocess, real files, real sockets.

Every test starts ``python -m publisher site watch|serve`` on a temporary sessions folder,
rewrites, truncates and deletes files as an agent (or a careless user) would, waits with
bounded timeouts for the pages to change, and stops the process with a signal. All
network traffic goes to 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, TypeVar

import pytest

from publisher.site.serve import RELOAD_TAG, inject_reload
from publisher.site.watch import Debouncer, HoldPolicy
from tests.browser import chromium
from tests.helpers import (
    JOB,
    MAIN,
    NOTES,
    ROOT,
    SAMPLES,
    copy_samples,
    fresh_digest,
    page_of,
    python_env,
    tree_digest,
)

if TYPE_CHECKING:
    from playwright.sync_api import ConsoleMessage, Page

T = TypeVar("T")

TIMEOUT = 10.0


# --------------------------------------------------------------------------------------
# Helpers


class Running:
    """A ``polyglav site …`` subprocess; its stdout and stderr lines are collected."""

    def __init__(self, cwd: Path, *args: str) -> None:
        env = python_env(PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "publisher", "site", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        assert self.proc.stdout is not None and self.proc.stderr is not None
        for stream, lines in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=_collect, args=(stream, lines), daemon=True).start()

    def until(self, check: Callable[[], T | None], what: str, timeout: float = TIMEOUT) -> T:
        """Poll ``check`` until it returns a true value; fail on timeout or if the process ends."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"the process ended ({self.proc.returncode}) before {what}\n{self.log()}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout} s waiting for {what}\n{self.log()}"
                )
            time.sleep(0.05)

    def line(self, needle: str, *, after: int = 0, stream: str = "err") -> str:
        """The first line (of stderr, or stdout) from index ``after`` on that contains ``needle``."""
        lines = self.err if stream == "err" else self.out

        def found() -> str | None:
            return next((line for line in lines[after:] if needle in line), None)

        return self.until(found, f"a line with {needle!r}")

    def stop(self, sig: int = signal.SIGINT, timeout: float = 5.0) -> tuple[int, float]:
        """Send ``sig``; returns the exit code and how long the process took to end."""
        started = time.monotonic()
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=timeout)
        return code, time.monotonic() - started

    def log(self) -> str:
        return "stdout:\n" + "".join(self.out) + "stderr:\n" + "".join(self.err)


def _collect(stream: IO[str], lines: list[str]) -> None:
    for line in stream:
        lines.append(line)


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., Running]]:
    """Starts ``polyglav site <args>`` (in ``tmp_path``); anything left running is killed."""
    started: list[Running] = []

    def run(*args: str) -> Running:
        running = Running(tmp_path, *args)
        started.append(running)
        return running

    yield run
    for running in started:
        if running.proc.poll() is None:
            running.proc.kill()
            running.proc.wait()


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    return copy_samples(tmp_path / "sessions", [MAIN, NOTES], old=False)


def edited(name: str, marker: str) -> bytes:
    """The sample session ``name`` with ``marker`` appended to its first prompt."""
    doc = json.loads((SAMPLES / f"{name}.json").read_text(encoding="utf-8"))
    doc["turns"][0]["parts"][0]["text"] += f" {marker}"
    return json.dumps(doc, indent=1).encode()


def has(path: Path, text: str) -> bool:
    try:
        return text.encode() in path.read_bytes()
    except OSError:
        return False


def watch_args(sessions: Path, out: Path, *extra: str) -> list[str]:
    return [
        "watch",
        "--project",
        str(sessions),
        "--out",
        str(out),
        "--no-search",
        "--quiet-window",
        "0.1",
        *extra,
    ]


# --------------------------------------------------------------------------------------
# Pure parts


@pytest.mark.unit
def test_debounce_quiet_window_and_cap() -> None:
    debounce = Debouncer(quiet_window=0.3, max_delay=2.0)
    assert debounce.due() is None
    debounce.note(10.0)
    assert debounce.due() == pytest.approx(10.3)
    debounce.note(10.2)
    assert debounce.due() == pytest.approx(10.5)
    for i in range(30):  # a burst that never pauses is built 2 s after it started
        debounce.note(10.2 + i * 0.1)
    assert debounce.due() == pytest.approx(12.0)
    debounce.clear()
    assert debounce.due() is None


@pytest.mark.unit
def test_hold_policy_releases_after_the_limit() -> None:
    now = [0.0]
    hold = HoldPolicy(limit=30.0, clock=lambda: now[0])
    assert hold("a.json", "truncated JSON")
    now[0] = 29.0
    assert hold("a.json", "truncated JSON")
    now[0] = 30.5
    assert not hold("a.json", "truncated JSON")
    hold.settle([])  # the build did not hold it: it starts afresh next time
    assert hold("a.json", "truncated JSON")


@pytest.mark.unit
def test_reload_tag_goes_before_head_end() -> None:
    page = b"<html><head><title>x</title></HEAD ><body></body></html>"
    assert inject_reload(page) == page.replace(b"</HEAD >", RELOAD_TAG + b"</HEAD >")
    assert inject_reload(b"<p>no head</p>") == b"<p>no head</p>" + RELOAD_TAG


# --------------------------------------------------------------------------------------
# watch


@pytest.mark.site
@pytest.mark.slow
def test_watch_follows_writes_renames_deletes_and_the_theme(
    tmp_path: Path, sessions: Path, start: Callable[..., Running]
) -> None:
    out = tmp_path / "site"
    theme = tmp_path / "theme"
    (theme / "assets").mkdir(parents=True)
    (theme / "assets" / "extra.css").write_text("body { color: red; }\n")
    watch = start(*watch_args(sessions, out, "--theme", str(theme)))
    watch.line("built in")
    assert page_of(out, MAIN).is_file() and page_of(out, NOTES).is_file()

    (sessions / f"{NOTES}.json").write_bytes(edited(NOTES, "FIRST-EDIT"))
    watch.until(lambda: has(page_of(out, NOTES), "FIRST-EDIT"), "the edited page")

    shutil.copy2(SAMPLES / f"{JOB}.json", sessions / f"{JOB}.json")
    watch.until(lambda: page_of(out, JOB).is_file(), "the new session's page")
    watch.until(lambda: has(out / "index.html", JOB), "the index listing the new session")

    (sessions / f"{JOB}.json").unlink()
    watch.until(lambda: not page_of(out, JOB).exists(), "the deleted session's page to go")

    (theme / "assets" / "extra.css").write_text("body { color: blue; }\n")
    watch.until(lambda: has(out / "assets" / "extra.css", "blue"), "the theme change")

    code, took = watch.stop(signal.SIGINT)
    assert code == 0 and took < 5, watch.log()
    assert "Traceback" not in watch.log()
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh", theme=str(theme))


@pytest.mark.site
@pytest.mark.slow
def test_watch_restores_a_page_deleted_by_hand_at_its_rescan(
    tmp_path: Path, sessions: Path, start: Callable[..., Running]
) -> None:
    """Builds started by events look only at the files the events name and trust the site's
    folders; the rescan (every 5 s) checks every folder: a page deleted by hand while
    edits keep coming is written again."""
    out = tmp_path / "site"
    watch = start(*watch_args(sessions, out))
    watch.line("built in")
    page_of(out, MAIN).unlink()
    deadline = time.monotonic() + 8
    edits = 0
    while not page_of(out, MAIN).is_file():
        assert time.monotonic() < deadline, watch.log()
        edits += 1
        (sessions / f"{NOTES}.json").write_bytes(edited(NOTES, f"EDIT-{edits}"))
        time.sleep(0.5)
    watch.until(lambda: has(page_of(out, NOTES), f"EDIT-{edits}"), "the last edit")
    code, _ = watch.stop(signal.SIGINT)
    assert code == 0 and "Traceback" not in watch.log()
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh")


@pytest.mark.site
@pytest.mark.slow
def test_watch_with_search_writes_pages_first_then_indexes(
    tmp_path: Path, sessions: Path, start: Callable[..., Running]
) -> None:
    """With search on, a change's pages are written (and open pages reloaded) before the
    search index is brought up to date; the site ends as a full build with search makes it."""
    out = tmp_path / "site"
    args = [a for a in watch_args(sessions, out) if a != "--no-search"]
    watch = start(*args)
    built = watch.line("built in")
    assert "search pending" in built
    watch.line("search built 1/1 bundles")
    assert (out / "search" / "index.js").is_file()

    after = len(watch.err)
    (sessions / f"{NOTES}.json").write_bytes(edited(NOTES, "SEARCHABLE-MARKER"))
    watch.until(lambda: has(page_of(out, NOTES), "SEARCHABLE-MARKER"), "the edited page")
    build_line = watch.line("built in", after=after)
    search_line = watch.line("search built", after=after)
    assert "search pending" in build_line
    assert watch.err.index(build_line, after) < watch.err.index(search_line, after)
    assert watch.stop()[0] == 0
    assert "Traceback" not in watch.log()
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh", search=True)


@pytest.mark.site
@pytest.mark.slow
def test_watch_keeps_the_last_good_page_of_a_half_written_file(
    tmp_path: Path, sessions: Path, start: Callable[..., Running]
) -> None:
    out = tmp_path / "site"
    watch = start(*watch_args(sessions, out))
    watch.line("built in")
    good = page_of(out, NOTES).read_bytes()
    whole = edited(NOTES, "SECOND-VERSION")

    after = len(watch.err)
    (sessions / f"{NOTES}.json").write_bytes(whole[: len(whole) // 2])  # the agent is writing
    watch.line(f"{NOTES}.json does not load yet", after=after)
    assert page_of(out, NOTES).read_bytes() == good
    assert has(out / "index.html", f"sessions/{NOTES}/index.html")

    (sessions / f"{NOTES}.json").write_bytes(whole)  # done writing
    watch.until(lambda: has(page_of(out, NOTES), "SECOND-VERSION"), "the finished page")
    assert watch.stop()[0] == 0
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "fresh")


@pytest.mark.site
@pytest.mark.slow
def test_watch_never_drops_a_page_while_a_careless_writer_rewrites(
    tmp_path: Path, sessions: Path, start: Callable[..., Running]
) -> None:
    out = tmp_path / "site"
    watch = start(*watch_args(sessions, out))
    watch.line("built in")
    versions = [edited(MAIN, f"VERSION-{i}") for i in range(2)]
    target = sessions / f"{MAIN}.json"
    stop = threading.Event()

    def careless_writer() -> None:
        """Rewrite in place: truncate, write half, pause (longer than the quiet window or
        shorter), write the rest, pause again. Builds see half-written files."""
        schedule = [(0.25, 0.12), (0.02, 0.05), (0.25, 0.0), (0.06, 0.14)]
        i = 0
        while not stop.is_set():
            data, (mid, after) = versions[i % 2], schedule[i % len(schedule)]
            with target.open("wb") as handle:
                handle.write(data[: len(data) // 2])
                handle.flush()
                time.sleep(mid)
                handle.write(data[len(data) // 2 :])
            time.sleep(after)
            i += 1

    writer = threading.Thread(target=careless_writer)
    writer.start()
    try:
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            assert page_of(out, MAIN).is_file(), watch.log()
            time.sleep(0.01)
    finally:
        stop.set()
        writer.join()
    assert f"{MAIN}.json does not load yet" in watch.log()  # the writer was caught halfway
    target.write_bytes(versions[0])
    watch.until(lambda: has(page_of(out, MAIN), "VERSION-0"), "the final version")
    fresh = fresh_digest(sessions, tmp_path / "fresh")
    watch.until(lambda: tree_digest(out) == fresh, "the site to equal a fresh build")
    assert watch.stop()[0] == 0
    assert "polyglav: error" not in watch.log(), watch.log()


@pytest.mark.site
@pytest.mark.slow
def test_watch_survives_the_folder_deleted_and_recreated(
    tmp_path: Path, sessions: Path, start: Callable[..., Running]
) -> None:
    out = tmp_path / "site"
    watch = start(*watch_args(sessions, out))
    watch.line("built in")
    after = len(watch.err)
    shutil.rmtree(sessions)
    watch.line("does not exist; waiting for it", after=after)
    assert page_of(out, MAIN).is_file()  # the site is left as it was

    sessions.mkdir()
    shutil.copy2(SAMPLES / f"{JOB}.json", sessions)
    watch.until(lambda: page_of(out, JOB).is_file(), "the page of the recreated folder's session")
    watch.until(lambda: not page_of(out, MAIN).exists(), "the pages of the old folder to go")
    # Events, not the 5 s rescan, bring this edit: the new folder is watched.
    (sessions / f"{JOB}.json").write_bytes(edited(JOB, "AFTER-RECREATION"))
    watch.until(lambda: has(page_of(out, JOB), "AFTER-RECREATION"), "an edit", timeout=3)

    shutil.rmtree(sessions)  # at once this time (the inode may well be reused)
    sessions.mkdir()
    shutil.copy2(SAMPLES / f"{NOTES}.json", sessions)
    watch.until(lambda: page_of(out, NOTES).is_file(), "the page after a quick recreation")
    (sessions / f"{NOTES}.json").write_bytes(edited(NOTES, "QUICK-RECREATION"))
    watch.until(lambda: has(page_of(out, NOTES), "QUICK-RECREATION"), "an edit", timeout=3)
    code, took = watch.stop(signal.SIGTERM)
    assert code == 0 and took < 5, watch.log()


@pytest.mark.site
@pytest.mark.slow
def test_watch_redacts_like_build(
    tmp_path: Path, sessions: Path, start: Callable[..., Running]
) -> None:
    out = tmp_path / "site"
    values = tmp_path / "values.txt"
    values.write_text("hunter2-watch-secret\n")
    watch = start(*watch_args(sessions, out, "--redact-values", str(values)))
    watch.line("built in")
    (sessions / f"{NOTES}.json").write_bytes(edited(NOTES, "REDACT-EDIT hunter2-watch-secret"))
    watch.until(lambda: has(page_of(out, NOTES), "REDACT-EDIT"), "the edited page")
    assert not has(page_of(out, NOTES), "hunter2-watch-secret")
    assert has(page_of(out, NOTES), "[REDACTED:")
    assert watch.stop()[0] == 0


# --------------------------------------------------------------------------------------
# serve


def http(port: int, target: bytes, method: bytes = b"GET") -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP/1.0 request (the target is sent as is, never normalised)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(method + b" " + target + b" HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for header in header_lines:
        name, _, value = header.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body


@pytest.fixture
def served(
    tmp_path: Path, sessions: Path, start: Callable[..., Running]
) -> tuple[Running, int, Path]:
    """``site serve --port 0`` after its first build: (process, port, site folder)."""
    out = tmp_path / "site"
    server = start("serve", *watch_args(sessions, out)[1:], "--port", "0")
    url = server.line("serving http://127.0.0.1:", stream="out")
    server.line("built in")
    port = int(url.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
    return server, port, out


@pytest.mark.site
@pytest.mark.slow
def test_serve_pages_headers_and_injected_script(
    tmp_path: Path, sessions: Path, served: tuple[Running, int, Path]
) -> None:
    server, port, out = served
    status, headers, body = http(port, f"/sessions/{MAIN}/".encode())
    assert status == 200
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["cache-control"] == "no-store"
    assert int(headers["content-length"]) == len(body)
    assert body.count(RELOAD_TAG + b"</head>") == 1
    on_disk = page_of(out, MAIN).read_bytes()
    assert b"__polyglav" not in on_disk and body.replace(RELOAD_TAG, b"") == on_disk
    assert tree_digest(out) == fresh_digest(sessions, tmp_path / "plain")

    assert http(port, b"/")[2] == inject_reload((out / "index.html").read_bytes())
    status, headers, _ = http(port, f"/sessions/{MAIN}".encode())
    assert status == 301 and headers["location"] == f"/sessions/{MAIN}/"
    status, headers, body = http(port, f"/sessions/{MAIN}/index.html".encode(), b"HEAD")
    assert status == 200 and body == b"" and int(headers["content-length"]) > len(on_disk)
    assert http(port, b"/assets/style.css")[1]["content-type"] == "text/css; charset=utf-8"
    (out / "notes.txt").write_text("plain\n")
    (out / "blob.pf_index").write_bytes(b"\0")
    assert http(port, b"/notes.txt")[1]["content-type"] == "text/plain; charset=utf-8"
    assert http(port, b"/blob.pf_index")[1]["content-type"] == "application/octet-stream"
    status, headers, body = http(port, b"/__polyglav/reload.js")
    assert status == 200 and headers["content-type"].startswith("application/javascript")
    assert b"EventSource" in body and b"sessionStorage" in body
    assert server.stop(signal.SIGINT)[0] == 0


@pytest.mark.site
@pytest.mark.slow
def test_serve_answers_404_outside_the_site(
    tmp_path: Path, served: tuple[Running, int, Path]
) -> None:
    server, port, out = served
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET\n")
    (out / "link.txt").symlink_to(secret)
    (out / "linkdir").symlink_to(tmp_path, target_is_directory=True)
    (out / ".polyglav").mkdir(exist_ok=True)  # a hidden folder planted in the site
    (out / ".polyglav" / "notes.json").write_text("TOP-SECRET sources\n")
    (out / "state").symlink_to(out / ".polyglav", target_is_directory=True)
    (out / "sessions" / ".hidden").write_text("TOP-SECRET\n")
    absolute = str(secret).encode()
    targets = [
        b"/..",
        b"/../secret.txt",
        b"/sessions/../../secret.txt",
        b"/assets/./../../secret.txt",
        b"/%2e%2e/secret.txt",
        b"/%2E%2E/secret.txt",
        b"/.%2e/secret.txt",
        b"/%2e%2e%2fsecret.txt",
        b"/..%2fsecret.txt",
        b"/sessions%2f..%2f..%2fsecret.txt",
        b"/%252e%252e/secret.txt",
        b"/%2f" + absolute[1:],
        b"/" + absolute,
        absolute,
        b"secret.txt",
        b"http://127.0.0.1/../secret.txt",
        b"/..\\secret.txt",
        b"/sessions\\..\\..\\secret.txt",
        b"/%5c..%5csecret.txt",
        b"/index.html%00.txt",
        b"/index.html\x00.txt",
        b"/C:/secret.txt",
        b"/%ff",
        b"/link.txt",
        b"/linkdir/secret.txt",
        b"/linkdir/",
        b"/state/notes.json",
        b"/.polyglav/notes.json",
        b"/.polyglav/",
        b"/%2epolyglav/notes.json",
        b"/sessions/.hidden",
    ]
    answers = {target: http(port, target) for target in targets}
    wrong = {t: status for t, (status, _, _) in answers.items() if status != 404}
    assert wrong == {}, wrong
    assert not any(b"TOP-SECRET" in body or b"sources" in body for _, _, body in answers.values())
    assert http(port, b"/index.html")[0] == 200  # the server is still fine
    assert server.stop()[0] == 0


@pytest.mark.site
@pytest.mark.slow
def test_serve_sends_an_event_after_each_build_that_changed_files(
    sessions: Path, served: tuple[Running, int, Path]
) -> None:
    server, port, out = served
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.sendall(b"GET /__polyglav/events HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        stream = sock.makefile("rb")
        assert b" 200 " in stream.readline()
        head = b"".join(iter(stream.readline, b"\r\n")).lower()
        assert b"content-type: text/event-stream" in head
        assert stream.readline() == b"retry: 1000\n"

        (sessions / f"{NOTES}.json").write_bytes(edited(NOTES, "LIVE-EDIT"))
        while (line := stream.readline()) != b"event: reload\n":
            assert line, "the stream ended"
        assert has(page_of(out, NOTES), "LIVE-EDIT")  # written before the event was sent
        data = json.loads(stream.readline().removeprefix(b"data: "))
        assert f"sessions/{NOTES}/index.html" in data["changed"]
        assert stream.readline() == b"\n"

        os.utime(sessions / f"{NOTES}.json")  # touched, same bytes: a build that changes nothing
        sock.settimeout(1.5)
        with pytest.raises(TimeoutError):
            stream.readline()

        code, took = server.stop(signal.SIGTERM)  # with the stream still open
        assert code == 0 and took < 5, server.log()


# --------------------------------------------------------------------------------------
# live reload in a browser


def is_error(message: ConsoleMessage) -> bool:
    """A console error, but for the favicon.ico Chromium asks for (the site has none)."""
    return message.type == "error" and not message.location.get("url", "").endswith("/favicon.ico")


@pytest.mark.browser
def test_browser_reloads_changed_pages_at_the_same_turn(
    sessions: Path, served: tuple[Running, int, Path]
) -> None:
    server, port, _ = served
    shutil.copy2(SAMPLES / f"{JOB}.json", sessions)
    server.until(lambda: http(port, f"/sessions/{JOB}/".encode())[0] == 200, "the job's page")
    problems: list[str] = []
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1100, "height": 700})

        def open_page(path: str) -> Page:
            page = context.new_page()
            page.on("pageerror", lambda exc: problems.append(str(exc)))
            page.on("response", lambda r: problems.append(r.url) if r.status >= 400 else None)
            page.on("console", lambda m: problems.append(m.text) if is_error(m) else None)
            page.goto(f"http://127.0.0.1:{port}{path}")
            page.evaluate("window.__before = true")
            return page

        main = open_page(f"/sessions/{MAIN}/")
        other = open_page(f"/sessions/{JOB}/")
        main.evaluate("document.getElementById('turn-7').scrollIntoView()")
        top = main.evaluate("document.getElementById('turn-7').getBoundingClientRect().top")
        time.sleep(0.5)  # let the event streams open

        with main.expect_event("load", timeout=TIMEOUT * 1000):
            (sessions / f"{MAIN}.json").write_bytes(edited(MAIN, "RELOADED-IN-BROWSER"))
        assert main.evaluate("window.__before") is None
        assert "RELOADED-IN-BROWSER" in main.content()
        first_visible = main.evaluate(
            """() => [...document.querySelectorAll('section.turn')]
                 .find(s => s.getBoundingClientRect().bottom > 0)"""
            """.getAttribute('aria-labelledby')"""
        )
        assert first_visible == "turn-7"
        now = main.evaluate("document.getElementById('turn-7').getBoundingClientRect().top")
        assert abs(now - top) < 2
        assert other.evaluate("window.__before") is True  # not changed: not reloaded
    assert problems == []
    assert server.stop()[0] == 0


@pytest.mark.site
@pytest.mark.slow
def test_soak_several_careless_writers_every_few_milliseconds(
    tmp_path: Path, sessions: Path, start: Callable[..., Running]
) -> None:
    """Three sessions rewritten in place every few ms for 4 s while watch runs: it never
    crashes, every page on disk is always a complete page of one written version, and once
    the writers stop the site equals a fresh full build."""
    shutil.copy2(SAMPLES / f"{JOB}.json", sessions)
    names = [MAIN, NOTES, JOB]
    out = tmp_path / "site"
    watch = start(*watch_args(sessions, out))
    watch.line("built in")
    stop = threading.Event()
    written: dict[str, int] = dict.fromkeys(names, 0)

    def writer(name: str, pause: float) -> None:
        path = sessions / f"{name}.json"
        i = 0
        while not stop.is_set():
            data = edited(name, f"SOAK-{name[:3]}-{i}")
            with path.open("wb") as handle:  # truncate, then write in two pieces
                handle.write(data[: len(data) // 3])
                handle.flush()
                time.sleep(pause / 2)
                handle.write(data[len(data) // 3 :])
            written[name] = i
            i += 1
            time.sleep(pause / 2)

    threads = [
        threading.Thread(target=writer, args=(n, p))
        for n, p in zip(names, (0.004, 0.007, 0.011), strict=True)
    ]
    for thread in threads:
        thread.start()
    try:
        deadline = time.monotonic() + 4.0
        while time.monotonic() < deadline:
            for name in names:
                html = page_of(out, name).read_text(encoding="utf-8")
                assert html.rstrip().endswith("</html>")
            assert watch.proc.poll() is None, watch.log()
            time.sleep(0.02)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert all(count > 20 for count in written.values()), written
    for name in names:
        watch.until(
            lambda n=name: has(page_of(out, n), f"SOAK-{n[:3]}-{written[n]}"),
            f"the last version of {name}",
        )
    fresh = fresh_digest(sessions, tmp_path / "fresh")
    watch.until(lambda: tree_digest(out) == fresh, "the site to equal a fresh build")
    assert watch.stop()[0] == 0
    assert "Traceback" not in watch.log() and "polyglav: error" not in watch.log(), watch.log()


@pytest.mark.site
def test_watch_follows_another_agents_logs_through_the_importer(
    tmp_path: Path, start: Callable[..., Running]
) -> None:
    """``--import claude-code:DIR``: a Claude Code session being written shows live, like a
    Polyglav one (imported before each build, the folder watched)."""
    logs = tmp_path / "claude" / "-home-me-app"
    logs.mkdir(parents=True)
    source = ROOT / "tests" / "data" / "import" / "claude_code"
    transcript = logs / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    lines = (source / transcript.name).read_bytes().splitlines(keepends=True)
    transcript.write_bytes(lines[0])
    project, out = tmp_path / "proj", tmp_path / "site"
    project.mkdir()
    watch = start(
        "watch", "--project", str(project), "--out", str(out), "--no-search",
        "--quiet-window", "0.1", "--import", f"claude-code:{tmp_path / 'claude'}",
    )  # fmt: skip
    watch.line("built in")
    sessions = project / ".polyglav" / "sessions"
    (name,) = [p.stem for p in sessions.glob("*.json")]
    page = out / "sessions" / name / "index.html"
    watch.until(page.is_file, "the imported session's page")
    assert 'id="turn-2"' not in page.read_text()
    marker = "LIVE-FROM-CLAUDE-CODE"
    record = json.loads(lines[0])
    record["uuid"], record["parentUuid"] = "live-1", record.get("uuid")
    record["message"] = {"role": "user", "content": f"a second prompt {marker}"}
    with transcript.open("ab") as handle:  # the agent appends a line
        handle.write((json.dumps(record) + "\n").encode())
    watch.until(lambda: has(page, marker), "the appended prompt on the page")
    assert 'id="turn-2"' in page.read_text()
    code, _ = watch.stop(signal.SIGINT)
    assert code == 0 and "Traceback" not in watch.log()
    bad = start("watch", "--project", str(project), "--out", str(out), "--import", "nobody:x")
    assert bad.proc.wait(timeout=20) == 2
    assert "unknown agent 'nobody'" in "".join(bad.err)


@pytest.mark.unit
def test_only_a_created_deleted_or_moved_file_makes_the_next_build_list_the_folder(
    tmp_path: Path,
) -> None:
    """A write to a session file keeps the last build's listing (``Warm.relist`` False);
    a file created, deleted or moved (an editor's atomic save included) lists it again."""
    import queue

    from watchdog.events import (
        FileClosedEvent,
        FileCreatedEvent,
        FileDeletedEvent,
        FileModifiedEvent,
        FileMovedEvent,
    )

    from publisher.site.watch import Change, _Forward

    changes: queue.SimpleQueue[Change] = queue.SimpleQueue()
    forward = _Forward(tmp_path, lambda path: path.suffix == ".json", changes)
    a, b = str(tmp_path / "a.json"), str(tmp_path / "b.json")
    expected = {
        FileModifiedEvent(a): False,
        FileClosedEvent(a): False,
        FileCreatedEvent(a): True,
        FileDeletedEvent(a): True,
        FileMovedEvent(str(tmp_path / ".a.json.tmp"), a): True,
        FileMovedEvent(a, b): True,
    }
    for event, relist in expected.items():
        forward.on_any_event(event)
        change = changes.get_nowait()
        assert change.relist is relist, event
    forward.on_any_event(FileModifiedEvent(str(tmp_path / "notes.txt")))  # not a session file
    assert changes.empty()


@pytest.mark.unit
def test_full_checks_take_a_bounded_share_of_the_watchers_time() -> None:
    """The periodic full check (dropped events, pages deleted by hand) runs at the interval
    asked, or less often when it is slow: at most RESCAN_SHARE of the time."""
    from publisher.site.watch import RESCAN_SHARE, rescan_interval

    assert rescan_interval(5.0, 0.02) == 5.0  # a small archive: as asked
    assert rescan_interval(5.0, 0.4) == pytest.approx(0.4 / RESCAN_SHARE)  # 20,000 sessions
    assert rescan_interval(0.5, 2.0) / 2.0 == pytest.approx(1 / RESCAN_SHARE)
    assert rescan_interval(60.0, 2.0) == 60.0


@pytest.mark.unit
def test_the_watch_log_shows_controls_in_file_names_as_escapes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What the watch loop says names files of the watched folder: an escape sequence or a
    right-to-left override in a name is shown as an escape, never sent to the terminal."""
    from publisher.site.watch import _log

    _log("warning: ses_x\x1b]0;pwned\x07\u202egnp.json: truncated JSON")
    err = capsys.readouterr().err
    assert err == "polyglav: warning: ses_x\\x1b]0;pwned\\x07\\u202egnp.json: truncated JSON\n"
