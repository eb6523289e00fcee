"""``site serve`` answers only requests that name it by a host it is known by (issue 15).

DNS rebinding: a page at ``http://evil.example:PORT/`` whose name the attacker points at
127.0.0.1 is same-origin with the served archive as far as the browser knows; only the
``Host`` header tells. The rule itself (:class:`HostPolicy`) is tested directly with many
forms; then ``python -m publisher site serve`` is driven over raw sockets (arbitrary
``Host`` headers, absolute-form request lines, HTTP/1.0 without ``Host``) and in Chromium,
whose resolver is told to map ``evil.example`` to 127.0.0.1. All traffic goes to 127.0.0.1.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from http import HTTPStatus
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from publisher.site.serve import HostPolicy, Refusal, allowed_host, inject_reload
from tests.browser import CHROMIUM, CHROMIUM_ARGS
from tests.helpers import ROOT
from tests.test_watch_serve import MAIN, NOTES, Running, edited, watch_args

pytestmark = pytest.mark.site

PORT = 8791
LOCAL = HostPolicy.create("127.0.0.1", "127.0.0.1", PORT)
OK, BAD, MISDIRECTED, FORBIDDEN = (
    None,
    HTTPStatus.BAD_REQUEST,
    HTTPStatus.MISDIRECTED_REQUEST,
    HTTPStatus.FORBIDDEN,
)


def status_of(refusal: Refusal | None) -> HTTPStatus | None:
    return None if refusal is None else refusal.status


def host_status(
    host: str | None, policy: HostPolicy = LOCAL, target: str = "/", version: str = "HTTP/1.1"
) -> HTTPStatus | None:
    return status_of(policy.check_host(target, version, [] if host is None else [host]))


# --------------------------------------------------------------------------------------
# The rule


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "127.0.0.1:8791",
        "localhost",
        "localhost:8791",
        "LOCALHOST:8791",
        "LocalHost",
        "[::1]",
        "[::1]:8791",
        "[0:0:0:0:0:0:0:1]:8791",  # the same address, spelt out
        " localhost:8791\t",  # optional white space around a header value
    ],
)
def test_known_hosts_are_answered(host: str) -> None:
    assert host_status(host) is OK


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:8791",
        "EVIL.EXAMPLE:8791",
        "evil.example.",
        "evil.example.:8791",
        "localhost.",  # a trailing dot makes another name: not stripped, not known
        "localhost.:8791",
        "127.0.0.1.",
        "sub.localhost:8791",
        "localhost.evil.example:8791",
        "127.0.0.2:8791",  # loopback, but not an address the server is known by
        "10.0.0.1",
        "10.0.0.1:8791",
        "0.0.0.0:8791",  # not the bound address here
        "127.1:8791",  # a short form browsers would have normalised: a name, unknown
        "2130706433:8791",
        "[::2]:8791",
        "[2001:db8::1]",
        "[::ffff:127.0.0.1]:8791",
        "localhost:8792",  # a port must be the served one
        "127.0.0.1:80",
        "[::1]:1",
    ],
)
def test_foreign_hosts_are_misdirected(host: str) -> None:
    assert host_status(host) is MISDIRECTED
    refusal = LOCAL.check_host("/", "HTTP/1.1", [host])
    assert refusal is not None and "\n" not in refusal.reason and "--allow-host" in refusal.reason


@pytest.mark.parametrize(
    "host",
    [
        "",
        " ",
        "a@localhost",
        "evil.example@127.0.0.1:8791",
        "user:pass@localhost:8791",
        "localhost/evil",
        "localhost evil",
        "localhost,evil.example",
        "local\x00host",
        "lócalhost",
        "::1",  # an IPv6 address needs brackets
        "::1:8791",
        "[::1",
        "[::1]x",
        "[::1]:",
        "[::1%lo]:8791",
        "[v1.x]",
        "[evil.example]",
        "localhost:",
        "localhost:0",
        "localhost:99999",
        "localhost:+80",
        "localhost:80:80",
        "localhost:http",
        "lo..calhost",
        ".localhost",
        "*",
    ],
)
def test_malformed_hosts_are_bad_requests(host: str) -> None:
    assert host_status(host) is BAD
    refusal = LOCAL.check_host("/", "HTTP/1.1", [host])
    assert refusal is not None and refusal.reason.isascii() and refusal.reason.isprintable()


def test_a_long_host_is_cut_short_in_the_reason() -> None:
    refusal = LOCAL.check_host("/", "HTTP/1.1", ["x" * 5000])
    assert refusal is not None and refusal.status is MISDIRECTED and len(refusal.reason) < 200


def test_several_host_headers_are_bad_even_when_each_is_known() -> None:
    assert status_of(LOCAL.check_host("/", "HTTP/1.1", ["localhost", "localhost"])) is BAD
    assert status_of(LOCAL.check_host("/", "HTTP/1.0", ["127.0.0.1", "evil.example"])) is BAD


def test_no_host_header_only_http_1_0_on_a_loopback_bind() -> None:
    assert host_status(None, version="HTTP/1.0") is OK
    assert host_status(None, version="HTTP/1.1") is BAD
    wide = HostPolicy.create("0.0.0.0", "0.0.0.0", PORT)
    assert host_status(None, wide, version="HTTP/1.0") is MISDIRECTED


@pytest.mark.parametrize(
    ("target", "host", "expected"),
    [
        ("http://127.0.0.1:8791/index.html", "127.0.0.1:8791", OK),
        ("HTTP://LOCALHOST:8791/", None, OK),
        ("http://127.0.0.1/../secret.txt", "127.0.0.1", OK),  # the path is judged later (404)
        ("http://evil.example:8791/index.html", "127.0.0.1:8791", MISDIRECTED),
        ("http://evil.example/index.html", None, MISDIRECTED),
        ("http://127.0.0.2:8791/", "127.0.0.1:8791", MISDIRECTED),
        ("http://localhost.:8791/", "localhost:8791", MISDIRECTED),
        ("http://127.0.0.1:8791/", "evil.example:8791", MISDIRECTED),  # both are judged
        ("http://a@127.0.0.1:8791/", "127.0.0.1:8791", BAD),
        ("http:///index.html", "127.0.0.1:8791", BAD),
        ("https://127.0.0.1:8791/", "127.0.0.1:8791", BAD),
        ("ftp://127.0.0.1:8791/", "127.0.0.1:8791", BAD),
    ],
)
def test_an_absolute_form_request_line_is_judged_by_its_host(
    target: str, host: str | None, expected: HTTPStatus | None
) -> None:
    assert host_status(host, target=target) is expected


def test_allowed_names_and_the_bind_address() -> None:
    policy = HostPolicy.create(
        "0.0.0.0", "0.0.0.0", PORT, ["Archive.Example", "192.168.1.5", "[fe80::1]", "2001:db8::7"]
    )
    assert not policy.loopback
    for host in (
        "archive.example",
        "ARCHIVE.EXAMPLE:8791",
        "192.168.1.5:8791",
        "[fe80::1]:8791",
        "[2001:db8::7]",
        "0.0.0.0:8791",
        "localhost:8791",
    ):
        assert host_status(host, policy) is OK, host
    for host in ("archive.example.", "x.archive.example", "192.168.1.6:8791", "[fe80::2]"):
        assert host_status(host, policy) is MISDIRECTED, host
    assert host_status("archive.example:8000", policy) is MISDIRECTED

    lan = HostPolicy.create("192.168.1.5", "192.168.1.5", PORT)
    assert not lan.loopback and host_status("192.168.1.5:8791", lan) is OK
    assert host_status("192.168.1.6:8791", lan) is MISDIRECTED
    named = HostPolicy.create("localhost", "127.0.0.1", PORT)
    assert named.loopback and host_status("localhost:8791", named) is OK
    v6 = HostPolicy.create("::1", "::1", PORT)
    assert v6.loopback and host_status("[::1]:8791", v6) is OK
    assert not HostPolicy.create("::", "::", PORT).loopback


@pytest.mark.parametrize(
    "value",
    ["", " ", "a b", "a/b", "http://box", "box:80", "[::1]:80", "a@b", "*.local", "fe80::1%eth0"],
)
def test_allow_host_rejects_what_is_not_a_host(value: str) -> None:
    with pytest.raises(ValueError, match="--allow-host"):
        allowed_host(value)
    with pytest.raises(ValueError):
        HostPolicy.create("127.0.0.1", "127.0.0.1", PORT, [value])


def test_allow_host_normalises() -> None:
    assert allowed_host("Box.Local") == "box.local"
    assert allowed_host("[FE80::0001]") == allowed_host("fe80::1") == "fe80::1"
    assert allowed_host("box.local.") == "box.local."  # exactly that name


@pytest.mark.parametrize(
    ("origins", "host", "expected"),
    [
        ([], "127.0.0.1:8791", OK),
        (["http://127.0.0.1:8791"], "127.0.0.1:8791", OK),
        (["http://LOCALHOST:8791"], "localhost:8791", OK),
        (["http://[::1]:8791"], "[::1]:8791", OK),
        (["https://archive.example"], "archive.example", OK),  # behind a TLS proxy
        (["http://localhost:8791"], "127.0.0.1:8791", FORBIDDEN),  # another origin
        (["http://evil.example:8791"], "127.0.0.1:8791", FORBIDDEN),
        (["http://127.0.0.1:8792"], "127.0.0.1:8791", FORBIDDEN),
        (["http://127.0.0.1"], "127.0.0.1:8791", FORBIDDEN),
        (["null"], "127.0.0.1:8791", FORBIDDEN),
        (["ws://127.0.0.1:8791"], "127.0.0.1:8791", FORBIDDEN),
        (["http://127.0.0.1:8791/"], "127.0.0.1:8791", FORBIDDEN),
        ([""], "127.0.0.1:8791", FORBIDDEN),
        (["http://127.0.0.1:8791", "http://127.0.0.1:8791"], "127.0.0.1:8791", FORBIDDEN),
        (["http://127.0.0.1:8791"], None, FORBIDDEN),  # HTTP/1.0 without Host
    ],
)
def test_origin_must_be_the_served_one(
    origins: list[str], host: str | None, expected: HTTPStatus | None
) -> None:
    hosts = [] if host is None else [host]
    assert status_of(LOCAL.check_origin(origins, "/__polyglav/events", hosts)) is expected


# --------------------------------------------------------------------------------------
# The server


def raw(port: int, head: bytes, timeout: float = 5) -> tuple[int, dict[str, str], bytes]:
    """Send ``head`` (request line and headers, as is) and read the answer until the
    server closes the connection (a stream it wrongly opened times out)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head + b"\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head_part, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head_part.decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body


def get(
    port: int, target: str, host: str | None, *extra: str, method: str = "GET", version: str = "1.0"
) -> tuple[int, dict[str, str], bytes]:
    lines = [f"{method} {target} HTTP/{version}"]
    if host is not None:
        lines.append(f"Host: {host}")
    lines += [*extra, "Connection: close"]
    return raw(port, "".join(f"{line}\r\n" for line in lines).encode("latin-1"))


class Server:
    """A ``site serve --port 0`` subprocess after its first build."""

    def __init__(self, running: Running, out: Path) -> None:
        self.running = running
        self.out = out
        url = running.line("serving http://", stream="out")
        self.port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
        running.line("built in")


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Starts ``site serve`` on a copy of two sample sessions, with more arguments."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    for name in (MAIN, NOTES):
        (folder / f"{name}.json").write_bytes(edited(name, "SERVED"))
    started: list[Running] = []

    def run(*extra: str, search: bool = False) -> Server:
        out = tmp_path / f"site{len(started)}"
        args = watch_args(folder, out)[1:]
        if search:
            args.remove("--no-search")
        running = Running(tmp_path, "serve", *args, "--port", "0", *extra)
        started.append(running)
        return Server(running, out)

    yield run
    for running in started:
        if running.proc.poll() is None:
            running.proc.kill()
            running.proc.wait()


def assert_refused(answer: tuple[int, dict[str, str], bytes], method: str = "GET") -> None:
    """4xx, one line of plain text (none of the site), the connection closed."""
    status, headers, body = answer
    assert 400 <= status < 500, answer
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert headers["connection"] == "close"
    assert not any(name.startswith("access-control-") for name in headers)
    if method == "HEAD":
        assert body == b""
        return
    assert body.startswith(f"{status} ".encode()) and body.endswith(b"\n"), body
    assert body.count(b"\n") == 1 and len(body) < 200, body
    assert b"SERVED" not in body and b"<" not in body and b"retry:" not in body


def test_serve_refuses_foreign_hosts_on_every_kind_of_path(serve: Callable[..., Server]) -> None:
    server = serve(search=True)
    server.running.line("search built")
    port, out = server.port, server.out
    chunk = sorted((out / "search").rglob("t-*.js"))[0].relative_to(out).as_posix()
    targets = [
        "/",
        "/index.html",
        f"/sessions/{MAIN}/",
        "/assets/style.css",
        "/search/index.js",
        f"/{chunk}",
        "/__polyglav/reload.js",
        "/__polyglav/events",
        "/no-such-page",
    ]
    for target in targets:  # the paths serve as they should with a known host
        expected = 404 if target == "/no-such-page" else 200
        if target != "/__polyglav/events":
            assert get(port, target, f"127.0.0.1:{port}")[0] == expected, target
    foreign = [
        "evil.example",
        f"evil.example:{port}",
        f"EVIL.EXAMPLE:{port}",
        f"evil.example.:{port}",
        "evil.example.",
        f"localhost.:{port}",
        f"10.0.0.1:{port}",
        "10.0.0.1",
        f"127.0.0.2:{port}",
        f"[2001:db8::1]:{port}",
        "[::2]",
        f"a@127.0.0.1:{port}",
        f"localhost:{port + 1 if port < 65535 else 1}",
    ]
    for host in foreign:
        for target in targets:
            assert_refused(get(port, target, host))
        assert_refused(get(port, "/index.html", host, method="HEAD"), "HEAD")
        assert_refused(get(port, "/index.html", host, version="1.1"))
    # Absolute-form request lines are judged by their host, whatever the Host header says.
    for target in ("/index.html", "/__polyglav/events", f"/{chunk}"):
        assert_refused(get(port, f"http://evil.example:{port}{target}", f"127.0.0.1:{port}"))
        assert_refused(get(port, f"http://evil.example{target}", None))
    # Several Host headers, even known ones; HTTP/1.1 without Host.
    assert_refused(get(port, "/index.html", f"127.0.0.1:{port}", "Host: evil.example"))
    assert_refused(get(port, "/index.html", "localhost", f"Host: 127.0.0.1:{port}"))
    assert_refused(get(port, "/index.html", None, version="1.1"))
    assert server.running.stop()[0] == 0
    assert "Traceback" not in server.running.log()


def test_serve_answers_localhost_and_127_0_0_1(serve: Callable[..., Server]) -> None:
    server = serve()
    port, out = server.port, server.out
    page = inject_reload((out / "index.html").read_bytes())
    for host in (
        f"127.0.0.1:{port}",
        "127.0.0.1",
        f"localhost:{port}",
        f"LocalHost:{port}",
        f"[::1]:{port}",
        None,  # HTTP/1.0 without Host, on a loopback bind
    ):
        status, headers, body = get(port, "/index.html", host)
        assert (status, body) == (200, page), host
        assert not any(name.startswith("access-control-") for name in headers)
    assert get(port, "/index.html", f"localhost:{port}", version="1.1")[0] == 200
    assert get(port, f"http://localhost:{port}/", f"localhost:{port}")[0] == 404  # as before
    assert "readable from the network" not in server.running.log()
    assert server.running.stop()[0] == 0


def test_serve_allow_host_adds_names(serve: Callable[..., Server]) -> None:
    server = serve("--allow-host", "archive.example", "--allow-host", "Box.Local")
    port = server.port
    for host in ("archive.example", f"ARCHIVE.example:{port}", f"box.local:{port}", "localhost"):
        assert get(port, "/index.html", host)[0] == 200, host
    for host in ("other.example", f"x.archive.example:{port}", f"box.local.:{port}"):
        assert_refused(get(port, "/index.html", host))
    assert server.running.stop()[0] == 0


@pytest.mark.parametrize("value", ["", "a b", "a/b", "box:80", "http://box"])
def test_serve_allow_host_that_is_not_a_host_is_a_usage_error(tmp_path: Path, value: str) -> None:
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    result = subprocess.run(
        [sys.executable, "-m", "publisher", "site", "serve", "--allow-host", value],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2, result
    assert result.stderr.startswith("polyglav: error: --allow-host")
    assert result.stderr.count("\n") == 1 and result.stdout == ""


def test_serve_event_stream_refuses_other_origins_and_sends_no_cors(
    serve: Callable[..., Server],
) -> None:
    server = serve()
    port = server.port
    here = f"127.0.0.1:{port}"
    for origin in (f"http://evil.example:{port}", f"http://localhost:{port}", "null"):
        answer = get(port, "/__polyglav/events", here, f"Origin: {origin}")
        assert answer[0] == 403, answer
        assert_refused(answer)
    # The served origin (or none) gets the stream.
    for extra in ([f"Origin: http://{here}"], []):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            head = f"GET /__polyglav/events HTTP/1.1\r\nHost: {here}\r\n"
            sock.sendall((head + "".join(f"{e}\r\n" for e in extra) + "\r\n").encode())
            stream = sock.makefile("rb")
            assert b" 200 " in stream.readline()
            headers = b"".join(iter(stream.readline, b"\r\n")).lower()
            assert b"text/event-stream" in headers and b"access-control-" not in headers
            assert stream.readline() == b"retry: 1000\n"
    # Cross-origin reads of anything else are left to the browser: no CORS header allows them.
    origin = "Origin: http://evil.example"
    for answer in (
        get(port, "/index.html", here, origin),
        get(port, "/assets/style.css", here, origin),
        get(port, "/__polyglav/reload.js", here, origin),
        get(
            port,
            "/index.html",
            here,
            origin,
            "Access-Control-Request-Method: GET",
            method="OPTIONS",
        ),
    ):
        assert not any(name.startswith("access-control-") for name in answer[1]), answer
    assert server.running.stop()[0] == 0


@pytest.mark.parametrize("redact", [False, True])
def test_serve_warns_when_bound_beyond_loopback(serve: Callable[..., Server], redact: bool) -> None:
    server = serve("--bind", "0.0.0.0", *(["--redact"] if redact else []))
    warning = server.running.line("polyglav: warning: --bind 0.0.0.0")
    assert "readable from the network" in warning and f"port {server.port}" in warning
    assert ("redacted with --redact" in warning) is redact
    assert ("not redacted" in warning) is not redact
    assert server.running.err.index(warning) == 0  # before the first build's line
    port = server.port
    assert get(port, "/index.html", f"127.0.0.1:{port}")[0] == 200
    assert get(port, "/index.html", f"0.0.0.0:{port}")[0] == 200  # the bound address
    assert_refused(get(port, "/index.html", f"evil.example:{port}"))
    assert_refused(get(port, "/index.html", None))  # no Host: only on a loopback bind
    assert server.running.stop()[0] == 0


# --------------------------------------------------------------------------------------
# In a browser: the rebinding itself


def test_browser_on_a_rebound_name_gets_nothing_of_the_site(serve: Callable[..., Server]) -> None:
    """Chromium resolves evil.example to 127.0.0.1, as after a DNS rebinding: the page, its
    script and its event stream are refused; the same server at 127.0.0.1 still serves."""
    server = serve()
    port = server.port
    assert Path(CHROMIUM).exists(), "Debian's chromium is needed: bash scripts/setup-tests.sh"
    rules = "--host-resolver-rules=MAP evil.example 127.0.0.1"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, rules])
        page = browser.new_page()
        response = page.goto(f"http://evil.example:{port}/sessions/{MAIN}/")
        assert response is not None and response.status == 421
        assert "SERVED" not in page.content() and "not known as" in page.inner_text("body")
        stolen = page.evaluate(
            """async () => Promise.all(
                 ['/index.html', '/__polyglav/reload.js', '/sessions/'].map(
                   path => fetch(path).then(r => r.status + ' ' + r.headers.get('content-type'))))"""
        )
        assert all(s.startswith("421 text/plain") for s in stolen), stolen
        response = page.goto(f"http://127.0.0.1:{port}/sessions/{MAIN}/")
        assert response is not None and response.status == 200 and "SERVED" in page.content()
        browser.close()
    assert server.running.stop()[0] == 0
