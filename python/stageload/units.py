"""Sizes as the CLI reads them (docs/units.md): "8G" is 8589934592 bytes."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Union

_UNITS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5, "e": 6}
_SIZE = re.compile(r"^([0-9]*)(?:\.([0-9]*))?([kmgtpeKMGTPE]?)(i?)([bB]?)$")
MAX_BYTES = 1 << 53


def parse_size(v: Union[int, str]) -> int:
    """Bytes from an int or a size string ("512M", "1.5G", "8GiB");
    ValueError for anything docs/units.md rejects."""
    if isinstance(v, bool):
        raise ValueError("a size, not a bool")
    if isinstance(v, int):
        if v < 0 or v > MAX_BYTES:
            raise ValueError("size %d out of range 0..2^53" % v)
        return v
    if not isinstance(v, str):
        raise ValueError("a size is an int or a string like '8G'")
    m = _SIZE.match(v)
    if m is None or (m.group(1) == "" and not m.group(2)):
        raise ValueError("bad size %r (e.g. 8G, 512M, 1.5G)" % v)
    whole, frac, unit, i, b = m.groups()
    if i and not unit:
        raise ValueError("bad size %r" % v)
    frac = (frac or "")[:18]
    n = Fraction(int(whole or "0")) + (Fraction(int(frac), 10 ** len(frac)) if frac else 0)
    if not unit and n.denominator != 1:
        raise ValueError("bad size %r: a fraction of a byte" % v)
    n *= 1024 ** _UNITS[unit.lower()]
    out = int(n + Fraction(1, 2))  # the nearest byte, halves up
    if out > MAX_BYTES:
        raise ValueError("size %r is above 2^53 bytes" % v)
    return out


def format_size(n: int) -> str:
    """"8.0G", "512M", "100B": as the CLI prints sizes (proto/units.c)."""
    if n < 1000:
        return "%dB" % n
    v = n / 1024
    u = 0
    while v >= 999.5 and u < 5:
        v /= 1024
        u += 1
    return ("%.1f%s" if v < 9.95 else "%.0f%s") % (v, "KMGTPE"[u])
