"""``polyglav site serve``: preview the site over HTTP, rebuilt and reloaded as sessions change.

A :class:`ThreadingHTTPServer` serves the site folder from a background thread while the
calling (main) thread runs the watch loop of :mod:`.watch`. Only files of the site are
served: any path that leaves it (``..`` in any encoding, encoded slashes, backslashes, NUL,
symlinks pointing outside) or names a hidden entry (a segment starting with a dot, such as
a planted ``/.polyglav/``) answers 404.

Live reload: HTML responses get ``<script src="/__polyglav/reload.js" defer>`` inserted
before ``</head>`` on the way out (the files on disk are those of a plain build). The script
listens on ``/__polyglav/events`` (server-sent events); after each build that changed the
site, the server sends one ``reload`` event listing the changed site paths, and a page that
is among them (or uses a changed asset) reloads at the turn the reader was looking at. The
page's Content-Security-Policy allows same-origin scripts only, hence an external script.

Host check: before anything else, every request must name the server by a host it is known
by (:class:`HostPolicy`): a web page whose own host name was pointed at 127.0.0.1 (DNS
rebinding) gets 421 and nothing of the site. No response carries CORS headers, and the
event stream also refuses an ``Origin`` other than the served one.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import queue
import re
import shutil
import socket
import stat
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from .build import BuildOptions
from .watch import WatchOptions, watch_site

RELOAD_SCRIPT_PATH = "/__polyglav/reload.js"
EVENTS_PATH = "/__polyglav/events"
RELOAD_TAG = f'<script src="{RELOAD_SCRIPT_PATH}" defer></script>'.encode()
HEAD_END_RE = re.compile(rb"</head\s*>", re.IGNORECASE)
#: Seconds between keep-alive comments on an idle event stream.
HEARTBEAT_INTERVAL = 15.0

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "application/javascript; charset=utf-8",
    ".mjs": "application/javascript; charset=utf-8",
    ".json": "application/json",
    ".txt": "text/plain; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".xml": "application/xml",
    ".wasm": "application/wasm",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".ico": "image/vnd.microsoft.icon",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
}
"""By file suffix; anything else is ``application/octet-stream``."""

RELOAD_JS_FILE = Path(__file__).with_name("reload.js")
"""The script served at RELOAD_SCRIPT_PATH (a file of the package, never published)."""


@dataclass(frozen=True, slots=True)
class Located:
    """What a request path names in the site: a file to send, or a folder to redirect to."""

    file: Path | None = None
    redirect: str | None = None
    """The folder's URL with its trailing slash (relative links need it)."""


def locate(root: Path, target: str) -> Located | None:
    """The site file that the request target ``target`` names under ``root``, or None (404).

    The target is decoded once; it must be an absolute path without backslashes, NUL,
    encoded slashes, empty segments or segments starting with a dot, and it must resolve
    (symlinks followed) to a regular file inside ``root`` that is not hidden either. A
    folder serves its ``index.html``.
    """
    path = target.split("?", 1)[0].split("#", 1)[0]
    if not path.startswith("/") or re.search(r"[\\\x00]|%(2f|5c|00)", path, re.IGNORECASE):
        return None
    try:
        decoded = unquote(path, errors="strict")
    except UnicodeDecodeError:
        return None
    if "\\" in decoded or "\x00" in decoded:
        return None
    segments = decoded.split("/")[1:]
    slash = segments[-1] == ""
    if slash:
        segments.pop()
    if any(s == "" or s.startswith(".") or ":" in s for s in segments):
        return None
    try:
        real_root = root.resolve(strict=True)
        found = _inside(real_root, real_root.joinpath(*segments))
    except (OSError, RuntimeError):
        return None
    if found is None:
        return None
    if found.is_dir():
        if not slash:
            return Located(redirect="/" + "".join(f"{quote(s)}/" for s in segments))
        return _file(real_root, found / "index.html")
    return _file(real_root, found)


def _inside(real_root: Path, path: Path) -> Path | None:
    """``path`` resolved, when it exists inside ``real_root`` and no part of it is hidden."""
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not real.is_relative_to(real_root):
        return None
    if any(part.startswith(".") for part in real.relative_to(real_root).parts):
        return None
    return real


def _file(real_root: Path, path: Path) -> Located | None:
    real = _inside(real_root, path)
    try:
        regular = real is not None and stat.S_ISREG(real.stat().st_mode)
    except OSError:
        return None
    return Located(file=real) if regular else None


def inject_reload(html: bytes) -> bytes:
    """``html`` with the live-reload script tag before ``</head>`` (at the end without one)."""
    match = HEAD_END_RE.search(html)
    if match is None:
        return html + RELOAD_TAG
    return html[: match.start()] + RELOAD_TAG + html[match.start() :]


# --------------------------------------------------------------------------------------
# Which Host a request may name

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
"""Known by every server, whatever its bind address."""
_NAME_RE = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?")
_PORT_RE = re.compile(r"[0-9]{1,5}")
_ABSOLUTE_FORM_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://([^/?#]*)")
_ORIGIN_RE = re.compile(r"(https?)://([^/?#]*)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Authority:
    """The ``host[:port]`` of a ``Host`` header, an absolute URL or an ``Origin``."""

    host: str
    """Lower case; an IP address in its canonical form, IPv6 without brackets (``::1``)."""
    port: int | None
    """None when the authority gives no port."""


def parse_authority(text: str) -> Authority | None:
    """``text`` (``name``, ``name:port``, ``1.2.3.4[:port]``, ``[v6][:port]``), or None.

    Malformed, hence None: empty, user info (``a@b``), paths, spaces, anything but letters,
    digits, ``-``, ``_`` and dots in a name, empty labels, an IPv6 address without brackets
    or with a zone, an empty or out-of-range port. One trailing dot is kept: ``localhost.``
    parses, and is a different name from ``localhost``.
    """
    host, port = text, None
    if text.startswith("["):
        literal, bracket, rest = text[1:].partition("]")
        if not bracket or "%" in literal:
            return None
        try:
            host = str(ipaddress.IPv6Address(literal))
        except ValueError:
            return None
        if rest:
            if not rest.startswith(":"):
                return None
            port = _port(rest[1:])
            if port is None:
                return None
        return Authority(host, port)
    name, colon, rest = text.partition(":")
    if colon:
        port = _port(rest)
        if port is None:
            return None
    name = name.lower()
    if not name.isascii() or _NAME_RE.fullmatch(name) is None:
        return None
    with contextlib.suppress(ValueError):  # else a name (127.1 too: never a known one)
        name = str(ipaddress.IPv4Address(name))
    return Authority(name, port)


def _port(text: str) -> int | None:
    if _PORT_RE.fullmatch(text) is None or not 0 < int(text) <= 65535:
        return None
    return int(text)


def allowed_host(value: str) -> str:
    """An ``--allow-host`` value in the form the policy compares, or ValueError.

    A host name (``archive.example``, ``box.local``) or an IP address (``192.168.1.5``,
    ``fe80::1`` with or without brackets); no port, which is always the served one.
    """
    with contextlib.suppress(ValueError):
        if "%" not in value:
            return str(ipaddress.IPv6Address(value))
    found = parse_authority(value)
    if found is None:
        raise ValueError(f"--allow-host {value!r}: not a host name or IP address")
    if found.port is not None:
        raise ValueError(
            f"--allow-host {value!r}: give the name without a port (the served port applies)"
        )
    return found.host


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request is refused: its status and a one-line reason for the body."""

    status: HTTPStatus
    reason: str


@dataclass(frozen=True, slots=True)
class HostPolicy:
    """Which ``Host`` (and ``Origin``) the server answers: the one home of that rule.

    A request is answered only if it names the server by a host it is known by: the
    loopback names (``localhost``, ``127.0.0.1``, ``[::1]``), the bind address (as given
    and as bound) and the ``--allow-host`` names; with no port or the served port. Names
    compare case-insensitively and exactly otherwise: ``localhost.`` (trailing dot) is not
    ``localhost`` and other addresses (``127.0.0.2``, ``10.0.0.1``) are foreign. An
    absolute-form request line (``GET http://host/...``) is judged by its host, as well as
    any ``Host`` header. A request without ``Host`` is answered only if it is HTTP/1.0 and
    the server listens on a loopback address. The rule exists against DNS rebinding: a
    page at ``http://evil.example:PORT/`` whose name resolves to 127.0.0.1 is same-origin
    with its own requests as far as the browser knows, but they say ``Host: evil.example``.
    """

    port: int
    """The served port."""
    known: frozenset[str]
    """The known hosts, in the form of :attr:`Authority.host`."""
    loopback: bool
    """Whether the server listens on a loopback address only."""

    @classmethod
    def create(cls, bind: str, address: str, port: int, allowed: Iterable[str] = ()) -> HostPolicy:
        """The policy of a server bound (``--bind bind``) to ``address``:``port``.

        ``allowed`` are ``--allow-host`` values; ValueError if one is not a host.
        """
        known = {*LOOPBACK_HOSTS, *(allowed_host(name) for name in allowed)}
        for name in (bind, address):
            with contextlib.suppress(ValueError):  # --bind "" (every address) names no host
                known.add(allowed_host(name))
        try:
            loopback = ipaddress.ip_address(address).is_loopback
        except ValueError:
            loopback = False
        return cls(port=port, known=frozenset(known), loopback=loopback)

    def check_host(self, target: str, version: str, hosts: Sequence[str]) -> Refusal | None:
        """None if a request for ``target`` with these ``Host`` header values is answered."""
        hosts = _trimmed(hosts)
        if len(hosts) > 1:
            return Refusal(HTTPStatus.BAD_REQUEST, "several Host headers")
        absolute = _ABSOLUTE_FORM_RE.match(target)
        named = [*hosts]
        if absolute is not None:
            if absolute[1].lower() != "http":
                return Refusal(HTTPStatus.BAD_REQUEST, "only http:// URLs are served")
            named.append(absolute[2])
        elif not hosts:
            if version not in ("HTTP/1.0", "HTTP/0.9"):
                return Refusal(HTTPStatus.BAD_REQUEST, "an HTTP/1.1 request needs a Host header")
            if not self.loopback:
                return Refusal(
                    HTTPStatus.MISDIRECTED_REQUEST,
                    "a request without a Host header is answered on a loopback address only",
                )
        for text in named:
            refusal = self._judge(text)
            if refusal is not None:
                return refusal
        return None

    def check_origin(
        self, origins: Sequence[str], target: str, hosts: Sequence[str]
    ) -> Refusal | None:
        """None if a request with these ``Origin`` values comes from the served origin.

        No ``Origin``: answered. Otherwise it must be ``http://`` (or ``https://``, behind a
        TLS proxy) and the host and port the request named (``Host`` or absolute form).
        Call only once :meth:`check_host` accepted the request.
        """
        hosts, origins = _trimmed(hosts), _trimmed(origins)
        if not origins:
            return None
        absolute = _ABSOLUTE_FORM_RE.match(target)
        served = parse_authority(absolute[2] if absolute else hosts[0] if hosts else "")
        match = _ORIGIN_RE.fullmatch(origins[0]) if len(origins) == 1 else None
        origin = parse_authority(match[2]) if match else None
        if served is None or origin is None or origin != served:
            return Refusal(HTTPStatus.FORBIDDEN, "cross-origin requests are refused")
        return None

    def _judge(self, text: str) -> Refusal | None:
        found = parse_authority(text)
        if found is None:
            return Refusal(HTTPStatus.BAD_REQUEST, f"malformed host {_shown(text)}")
        if found.host not in self.known or found.port not in (None, self.port):
            return Refusal(
                HTTPStatus.MISDIRECTED_REQUEST,
                f"this server is not known as {_shown(text)}"
                " (polyglav site serve --allow-host NAME adds names)",
            )
        return None


def _trimmed(values: Sequence[str]) -> list[str]:
    """Header values without the optional white space around them (RFC 9110, 5.5)."""
    return [value.strip(" \t") for value in values]


def _shown(text: str) -> str:
    """``text`` quoted for a one-line reason: printable ASCII, at most 80 characters."""
    return ascii(text[:80] + ("..." if len(text) > 80 else ""))


class Broadcaster:
    """Hands each build notification to every open event stream."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: set[queue.SimpleQueue[bytes | None]] = set()

    def subscribe(self) -> queue.SimpleQueue[bytes | None]:
        client: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        with self._lock:
            self._clients.add(client)
        return client

    def unsubscribe(self, client: queue.SimpleQueue[bytes | None]) -> None:
        with self._lock:
            self._clients.discard(client)

    def publish(self, changed: list[str]) -> None:
        """Send one ``reload`` event naming the changed site paths."""
        data = json.dumps({"changed": changed}, separators=(",", ":"))
        self._send(f"event: reload\ndata: {data}\n\n".encode())

    def close(self) -> None:
        """End every stream (the server is stopping)."""
        self._send(None)

    def _send(self, message: bytes | None) -> None:
        with self._lock:
            clients = list(self._clients)
        for client in clients:
            client.put(message)


class SiteServer(ThreadingHTTPServer):
    """The preview server of one site folder."""

    daemon_threads = True

    def __init__(
        self,
        bind: str,
        port: int,
        root: Path,
        broadcaster: Broadcaster,
        allowed_hosts: Iterable[str] = (),
    ) -> None:
        family, _, _, _, address = socket.getaddrinfo(
            bind, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        self.address_family = family
        self.root = root
        self.broadcaster = broadcaster
        self.reload_js = RELOAD_JS_FILE.read_bytes()
        """The live-reload script, read once."""
        super().__init__((str(address[0]), port), SiteRequestHandler)
        self.policy = HostPolicy.create(
            bind, str(address[0]), self.server_address[1], allowed_hosts
        )
        """Which hosts requests may name (the port is the bound one, also with port 0)."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away is not an error worth a traceback."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else host
        return f"http://[{name}]:{port}/" if ":" in name else f"http://{name}:{port}/"


class SiteRequestHandler(BaseHTTPRequestHandler):
    """GET and HEAD for the site's files, the reload script and the event stream."""

    server: SiteServer
    timeout = 30  # seconds a silent connection may hold its thread

    def version_string(self) -> str:
        return "polyglav"

    def do_GET(self) -> None:
        self._respond(send_body=True)

    def do_HEAD(self) -> None:
        self._respond(send_body=False)

    def log_message(self, format: str, *args: object) -> None:
        """Requests are not logged (the watch loop logs the builds)."""

    def _respond(self, send_body: bool) -> None:
        policy = self.server.policy
        hosts = self.headers.get_all("Host") or []
        path = self.path.split("?", 1)[0]
        refusal = policy.check_host(self.path, self.request_version, hosts)
        if refusal is None and path == EVENTS_PATH:
            refusal = policy.check_origin(self.headers.get_all("Origin") or [], self.path, hosts)
        if refusal is not None:
            self._refuse(refusal, send_body)
            return
        if path == EVENTS_PATH:
            if send_body:
                self._stream_events()
            else:
                self._send(HTTPStatus.OK, "text/event-stream; charset=utf-8", b"", send_body)
            return
        if path == RELOAD_SCRIPT_PATH:
            self._send(HTTPStatus.OK, CONTENT_TYPES[".js"], self.server.reload_js, send_body)
            return
        found = locate(self.server.root, self.path)
        if found is None:
            self._send(HTTPStatus.NOT_FOUND, CONTENT_TYPES[".txt"], b"404 not found\n", send_body)
        elif found.redirect is not None:
            self._send(
                HTTPStatus.MOVED_PERMANENTLY, CONTENT_TYPES[".txt"], b"", send_body, found.redirect
            )
        else:
            assert found.file is not None
            self._send_file(found.file, send_body)

    def _refuse(self, refusal: Refusal, send_body: bool) -> None:
        """The refusal's status and one line of text; the connection is closed."""
        self.close_connection = True
        body = f"{refusal.status.value} {refusal.reason}\n".encode()
        self._headers(refusal.status, CONTENT_TYPES[".txt"], len(body))
        self.send_header("Connection", "close")
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def _headers(self, status: HTTPStatus, content_type: str, length: int | None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        if length is not None:
            self.send_header("Content-Length", str(length))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")

    def _send(
        self,
        status: HTTPStatus,
        content_type: str,
        body: bytes,
        send_body: bool,
        location: str | None = None,
    ) -> None:
        self._headers(status, content_type, len(body))
        if location is not None:
            self.send_header("Location", location)
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def _send_file(self, path: Path, send_body: bool) -> None:
        content_type = CONTENT_TYPES.get(path.suffix.lower(), "application/octet-stream")
        try:
            handle = path.open("rb")
        except OSError:
            self._send(HTTPStatus.NOT_FOUND, CONTENT_TYPES[".txt"], b"404 not found\n", send_body)
            return
        with handle:
            if path.suffix.lower() == ".html":
                self._send(HTTPStatus.OK, content_type, inject_reload(handle.read()), send_body)
                return
            self._headers(HTTPStatus.OK, content_type, os.fstat(handle.fileno()).st_size)
            self.end_headers()
            if send_body:
                shutil.copyfileobj(handle, self.wfile)

    def _stream_events(self) -> None:
        """Server-sent events until the client leaves or the server stops."""
        self.close_connection = True
        client = self.server.broadcaster.subscribe()
        try:
            self._headers(HTTPStatus.OK, "text/event-stream; charset=utf-8", None)
            self.end_headers()
            self.wfile.write(b"retry: 1000\n: connected\n\n")
            while True:
                try:
                    message = client.get(timeout=HEARTBEAT_INTERVAL)
                except queue.Empty:
                    message = b": heartbeat\n\n"
                if message is None:
                    return
                self.wfile.write(message)
        except OSError:
            return  # the client went away
        finally:
            self.server.broadcaster.unsubscribe(client)


def network_warning(bind: str, port: int, redacted: bool) -> str:
    """The warning of a server that listens beyond this machine (a non-loopback ``--bind``)."""
    secrets = (
        "redacted with --redact: secrets it recognises are hidden"
        if redacted
        else "not redacted: any secret in a session is shown; consider --redact"
    )
    return (
        f"--bind {bind}: the archive is readable from the network by anyone who can reach"
        f" port {port} of this machine ({secrets}); other machines must name it with"
        " --allow-host NAME"
    )


def serve_site(
    options: BuildOptions,
    watch: WatchOptions,
    bind: str,
    port: int,
    allowed_hosts: Sequence[str] = (),
) -> None:
    """Serve ``options.out_dir`` on ``bind``:``port`` (0: any free port) while watching.

    Requests must name one of the hosts of :class:`HostPolicy` (``allowed_hosts`` are the
    ``--allow-host`` values, checked beforehand with :func:`allowed_host`). Warns on stderr
    if the server listens beyond this machine, prints the URL on stdout, then runs
    :func:`~.watch.watch_site` (call from the main thread); returns after Ctrl-C or
    SIGTERM, once the server is shut down.
    """
    broadcaster = Broadcaster()
    try:
        server = SiteServer(bind, port, options.out_dir, broadcaster, allowed_hosts)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), f"{bind}:{port}") from None
    thread = threading.Thread(target=server.serve_forever, name="polyglav-serve", daemon=True)
    thread.start()
    if not server.policy.loopback:
        warning = network_warning(bind, server.policy.port, options.redactor is not None)
        print(f"polyglav: warning: {warning}", file=sys.stderr, flush=True)
    print(f"serving {server.url} (Ctrl-C to stop)", flush=True)
    try:
        watch_site(options, replace(watch, on_change=broadcaster.publish))
    finally:
        server.shutdown()
        broadcaster.close()
        server.server_close()
        thread.join()
