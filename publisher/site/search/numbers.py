"""The digits of the index's postings: numbers ≥ 0 as base-64 digits, 5 bits a digit, least
significant first, each but the last with 32 added (so a number below 32, as an impact, is
one digit). The client decodes them (``search.js``: ``numbers``)."""

from __future__ import annotations

from collections.abc import Iterable

DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_"
"""The 64 digits (none needs escaping in a JSON string)."""


def encode_number(value: int, out: list[str]) -> None:
    """Append ``value`` (≥ 0) in the postings' digits."""
    while value >= 32:
        out.append(DIGITS[32 + (value & 31)])
        value >>= 5
    out.append(DIGITS[value])


def encode_numbers(values: Iterable[int]) -> str:
    """Numbers ≥ 0, one after the other, in the postings' digits."""
    out: list[str] = []
    for value in values:
        encode_number(value, out)
    return "".join(out)


def encode_shifted(low: int, high_digits: str) -> str:
    """The digits of ``high * 32 + low`` (``0 <= low < 32``), given ``high``'s digits
    (:func:`encode_numbers`; "" for 0): ``low``'s digit, with 32 added when ``high`` is not
    0, then ``high``'s. (A turn's posting, its position times 32 plus its impact, for every
    impact of the turn with the position encoded once.)"""
    return DIGITS[32 + low] + high_digits if high_digits else DIGITS[low]


def decode_numbers(text: str) -> list[int]:
    """The numbers of :func:`encode_numbers` (the client's decoder, for tests)."""
    out, value, shift = [], 0, 0
    for char in text:
        digit = DIGITS.index(char)
        value |= (digit & 31) << shift
        if digit >= 32:
            shift += 5
        else:
            out.append(value)
            value, shift = 0, 0
    return out
