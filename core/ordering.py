"""Ordering ids the way people read them, shared by the apps and by the pure statistics."""

from __future__ import annotations

import re

_DIGIT_RUNS = re.compile(r"([0-9]+)")


def natural_key(value: str) -> tuple[tuple[int, int | str], ...]:
    """Sort ids the way people read them: '10_2' after '9_12', '[10]' after '[9]', 'p3:120' after 'p3:9'.

    Runs of digits compare as numbers and the text between them as text; each part is tagged so a
    number is never compared with text. '-' reads as '_', as in iKAT turn ids written either way.
    """
    return tuple(
        # The runs split out are ASCII digits; '²' alone passes isdigit() but is no number int() reads.
        (0, int(part)) if _DIGIT_RUNS.fullmatch(part) else (1, part)
        for part in _DIGIT_RUNS.split(value.replace("-", "_"))
        if part
    )


def natural_order_bytes(value: str) -> bytes:
    """`natural_key` of `value` as bytes that sort the same way compared byte by byte (as PostgreSQL
    compares `bytea`), so that a column holding them lets the database order ids as people read them and
    read a page of them through an index.

    Each part of the key is written so that no part's bytes are a prefix of another's: a number as 0x01,
    the length of its digits (four bytes, big-endian) and its digits without leading zeros; a text as
    0x02, its UTF-8 and a 0x00, which no text stored in PostgreSQL holds and which sorts before any byte
    of it. A number's tag before a text's, and a key that ends before another, sort first, as in the tuples.
    """
    encoded = bytearray()
    for tag, part in natural_key(value):
        if tag == 0:
            digits = str(part).encode("ascii")
            encoded += b"\x01" + len(digits).to_bytes(4, "big") + digits
        else:
            encoded += b"\x02" + str(part).encode("utf-8", "surrogatepass") + b"\x00"
    return bytes(encoded)
