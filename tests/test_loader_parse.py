"""The loader's two JSON readers agree: msgspec's decoder (the fast path, on the bytes) and
the standard library's (``json.loads`` on the decoded text, the path every file msgspec
refuses takes). Whatever text the fast path accepts, the standard path reads to the same
values, of the same types, with the keys in the same order; whatever it refuses goes the
standard path, so a file that does not load says why exactly as before."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from publisher import loader
from publisher.loader import SessionLoadError, parse_session_bytes, parse_session_text
from tests.helpers import ROOT, part, session_doc, turn
from tests.test_loader_bad_files import BAD_FILES

pytestmark = pytest.mark.unit


def _standard(data: bytes) -> object:
    """What the standard path reads (the loader's decode and ``json.loads``)."""
    return loader._loads(loader._decode_text(data))


def _fast(data: bytes) -> object:
    """What the fast path reads, or ``REFUSED``."""
    try:
        return loader.fast_values(data)
    except Exception:
        return REFUSED


REFUSED = object()


def same(a: object, b: object) -> bool:
    """Equal values of the same types, keys in the same order, floats' signs alike."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        assert isinstance(b, list)
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        assert isinstance(b, float)
        return (a == b and math.copysign(1, a) == math.copysign(1, b)) or (
            math.isnan(a) and math.isnan(b)
        )
    return a == b


# JSON texts written in many ways: escapes of any character (lone surrogates included),
# every kind of number literal, JSON's four whitespace characters and others, duplicate keys.
_SPACE = st.text(alphabet=" \t\n\r", max_size=3)
_NUMBER = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.integers(min_value=2**62, max_value=2**66).map(str),
    st.integers(min_value=-(2**66), max_value=-(2**62)).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.builds(
        lambda sign, whole, frac, e, exp: f"{sign}{whole}{frac}{e}{exp}",
        st.sampled_from(["", "-"]),
        st.sampled_from(["0", "1", "9", "123456789012345678901234567890"]),
        st.sampled_from(["", ".0", ".5", ".000000000000000000001", ".1234567890123456789"]),
        st.sampled_from(["", "e", "E"]),
        st.sampled_from(["", "0", "5", "+5", "-5", "308", "309", "-324", "-400", "400"]),
    ),
    st.sampled_from(
        [
            "-0",
            "-0.0",
            "1e400",
            "NaN",
            "Infinity",
            "-Infinity",
            "01",
            "1.",
            ".5",
            "+1",
            "1" * 4400,
            "-" + "9" * 5000,
            "2.2250738585072011e-308",
        ]
    ),
)
_CHAR = st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF)


def _string_piece(c: str) -> st.SearchStrategy[str]:
    escape = {
        '"': '\\"',
        "\\": "\\\\",
        "\n": "\\n",
        "\t": "\\t",
        "\b": "\\b",
        "\f": "\\f",
        "\r": "\\r",
        "/": "\\/",
    }
    forms = [f"\\u{ord(c):04x}" if ord(c) < 0x10000 else c, escape.get(c, c)]
    if ord(c) >= 0x10000:  # a pair of escapes
        high, low = divmod(ord(c) - 0x10000, 0x400)
        forms.append(f"\\u{0xD800 + high:04X}\\u{0xDC00 + low:04x}")
    return st.sampled_from(forms)


_STRING = st.lists(_CHAR.flatmap(_string_piece), max_size=6).map(lambda p: '"' + "".join(p) + '"')
_SCALAR = st.one_of(_NUMBER, _STRING, st.sampled_from(["true", "false", "null"]))


def _array(items: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.builds(
        lambda xs, s: "[" + s + ",".join(xs) + s + "]", st.lists(items, max_size=4), _SPACE
    )


def _object(items: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    keys = st.one_of(_STRING, st.sampled_from(['"a"', '"b"', '"\\u0061"']))  # duplicates
    pair = st.builds(lambda k, s, v: f"{k}{s}:{s}{v}", keys, _SPACE, items)
    return st.builds(lambda xs: "{" + ",".join(xs) + "}", st.lists(pair, max_size=4))


_VALUE = st.recursive(
    _SCALAR, lambda inner: st.one_of(_array(inner), _object(inner)), max_leaves=12
)
_ODD = st.sampled_from(["\x0b", "\x0c", "\u00a0", "\x00", ",", " x", "\u2028"])
"""What JSON does not allow around a value."""
_DOCUMENT = st.builds(
    lambda bom, s1, v, s2: bom + (s1 + v + s2).encode("utf-8", "surrogatepass"),
    st.sampled_from([b"", b"\xef\xbb\xbf"]),
    st.one_of(_SPACE, _SPACE, _SPACE, _ODD),
    _VALUE,
    st.one_of(_SPACE, _SPACE, _SPACE, _ODD),
)


@settings(max_examples=300)
@given(_DOCUMENT)
@example(b"[18446744073709551616, -9223372036854775809, 5e-324, -0.0, -0]")
@example(b"[1e400]")
@example(b'{"a": 1, "b": 2, "a": 3}')
@example('"\\ud800 \\udc00 \\ud83d\\ude00 \u2028"'.encode())
def test_the_fast_reader_accepts_only_what_the_standard_one_reads_alike(data: bytes) -> None:
    fast = _fast(data)
    if fast is REFUSED:
        return  # the standard path reads it, or says why it does not load
    assert same(fast, _standard(data))


@settings(max_examples=300)
@given(_DOCUMENT, st.integers(min_value=0), st.integers(min_value=0, max_value=255))
def test_a_byte_changed_anywhere_changes_nothing_of_that(data: bytes, at: int, byte: int) -> None:
    if data:
        at %= len(data)
        data = data[:at] + bytes([byte]) + data[at + 1 :]
    fast = _fast(data)
    if fast is REFUSED:
        return
    assert same(fast, _standard(data))


@pytest.mark.parametrize(
    "text",
    [
        '"\\ud800"',  # a lone surrogate escape
        "NaN",
        "1e400",
        "1" * 4400,  # a number beyond msgspec's range, within the loader's
        '{"a": 1} x',
        "[" * 2000 + "]" * 2000,
    ],
)
def test_what_the_fast_reader_refuses(text: str) -> None:
    assert _fast(text.encode("utf-8", "surrogatepass")) is REFUSED


def _session_files() -> list[Path]:
    return sorted(
        [
            *(ROOT / "sample_sessions").glob("*.json"),
            *(ROOT / "tests" / "data").rglob("*.json"),
        ]
    )


def _hostile_session(ascii_only: bool) -> bytes:
    """A session holding every injection payload in prompts, answers, tool inputs and
    outputs, with integers beyond 64 bits and floats of every kind."""
    payloads = (ROOT / "tests" / "data" / "payloads.txt").read_text("utf-8").splitlines()
    payloads += ["\u2028\u2029\x00\x1f\x7f", "😀\U0010ffff", "a\u0301", "\ufeff"]
    turns = [
        turn(
            i,
            part("user", text),
            part("text", text[::-1]),
            part(
                "tool",
                name=text,
                input={"x": text, "n": [2**64, -(2**70), 1.5e300, -0.0]},
                output=text * 3,
            ),
        )
        for i, text in enumerate(payloads, start=1)
    ]
    doc = session_doc("ses_20260817_120000_ab12cd", turns=turns)
    return json.dumps(doc, ensure_ascii=ascii_only, indent=1).encode("utf-8")


@pytest.mark.parametrize(
    ("name", "data"),
    [
        *((p.name, p.read_bytes()) for p in _session_files()),
        ("hostile-ascii.json", _hostile_session(True)),
        ("hostile.json", _hostile_session(False)),
        ("hostile-bom.json", b"\xef\xbb\xbf" + _hostile_session(False)),
        ("lone-surrogate.json", _hostile_session(True).replace(b"\\ud83d", b"\\ud800x", 1)),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_every_session_reads_alike_both_ways(name: str, data: bytes) -> None:
    try:
        slow = parse_session_text(loader.decode_session_bytes(data, name), name)
    except SessionLoadError as exc:
        with pytest.raises(SessionLoadError) as fast_exc:
            parse_session_bytes(data, name)
        assert fast_exc.value.reason == exc.reason
        return
    assert parse_session_bytes(data, name) == slow


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_file_that_does_not_load_says_why_as_before(name: str) -> None:
    data, reason = BAD_FILES[name]
    with pytest.raises(SessionLoadError) as exc:
        parse_session_bytes(data, "x.json")
    assert reason in exc.value.reason
