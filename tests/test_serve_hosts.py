"""``site serve`` answers only requests that name it by a host it is known by (issue 15).

DNS rebinding: a page at ``http://evil.example:PORT/`` whose name the attacker points at
127.0.0.1 is same-origin with the served archive as far as the browser knows; only the
``Host`` header tells. The rule itself (:class:`HostPolicy`) is tested directly with many
forms.
"""

from __future__ import annotations

from http import HTTPStatus

import pytest

from publisher.site.serve import HostPolicy, Refusal, allowed_host

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
