"""Sizes, durations and times as the CLI reads them (docs/units.md): "8G"
is 8589934592 bytes, "90m" 5400000 ms, "--begin 23:10" its next
occurrence."""

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


_DURATION_UNITS = {"ms": 1, "s": 1000, "m": 60000, "h": 3600000,
                   "d": 86400000, "w": 604800000, "y": 31536000000}
_DURATION_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?(ms|s|m|h|d|w|y)")
MAX_MS = 1 << 53


def parse_duration_ms(v: str) -> int:
    """Milliseconds from a duration ("90m", "1h30m", "500ms"; a plain
    number alone is seconds), as docs/units.md reads it; ValueError for
    anything it rejects."""
    if re.fullmatch(r"[0-9]*(\.[0-9]*)?", v) and re.search(r"[0-9]", v):
        whole, _, frac = v.partition(".")
        total = Fraction(int(whole or "0")) + (
            Fraction(int(frac[:18]), 10 ** len(frac[:18])) if frac[:18] else 0)
        out = int(total * 1000 + Fraction(1, 2))
    else:
        pos, out = 0, 0
        parts = []
        while pos < len(v):
            m = _DURATION_PART.match(v, pos)
            if m is None or (m.group(1) == "" and not m.group(2)):
                raise ValueError("bad duration %r (e.g. 90m, 2h, 1d)" % v)
            whole, frac, unit = m.groups()
            frac = (frac or "")[:18]
            n = Fraction(int(whole or "0")) + (
                Fraction(int(frac), 10 ** len(frac)) if frac else 0)
            out += int(n * _DURATION_UNITS[unit] + Fraction(1, 2))
            parts.append((m.group(0), unit))
            pos = m.end()
        if not parts:
            raise ValueError("bad duration %r" % v)
    if out > MAX_MS:
        raise ValueError("duration %r is above 2^53 ms" % v)
    return out


def parse_limit_ms(v: str) -> int:
    """A time limit (--time): a duration that names its unit, or 0 (none);
    ValueError with the hint for a bare number ("did you mean 90m?")."""
    n = parse_duration_ms(v)
    if n > 0 and re.fullmatch(r"[0-9.]+", v):
        raise ValueError("%s has no unit: did you mean %sm? (90m, 2h, 1d)" % (v, v))
    return n


def parse_begin_ms(v: str, now_ms: int) -> int:
    """When a job may begin (--begin), ms since the epoch: "+DURATION"
    from now_ms, "HH:MM[:SS]" local (its next occurrence), or an ISO date
    or date-time (docs/units.md, "When a job begins"); ValueError else,
    with the hint for a duration without its '+'."""
    import datetime
    import time as _time
    if v.startswith("+"):
        if not re.search(r"[smhdwy]", v[1:]):
            raise ValueError("%s: a duration from now names its unit (+30m)" % v)
        return now_ms + parse_duration_ms(v[1:])
    m = re.fullmatch(r"([0-9]{2}):([0-9]{2})(?::([0-9]{2}))?", v)
    if m:
        h, mi, s = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
        if h > 23 or mi > 59 or s > 59:
            raise ValueError("bad time of day %r" % v)
        now = datetime.datetime.fromtimestamp(now_ms / 1000)
        for days in (0, 1):
            d = now.date() + datetime.timedelta(days=days)
            t = _time.mktime((d.year, d.month, d.day, h, mi, s, 0, 0, -1))
            if int(t) * 1000 > now_ms:
                return int(t) * 1000
        raise ValueError("bad time of day %r" % v)
    m = re.fullmatch(r"([0-9]{4})-([0-9]{2})-([0-9]{2})"
                     r"(?:[Tt ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]+))?)?"
                     r"([Zz]|[+-][0-9]{2}:?[0-9]{2})?)?", v)
    if m:
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
        h, mi, s = int(m.group(4) or 0), int(m.group(5) or 0), int(m.group(6) or 0)
        ms = int(((m.group(7) or "") + "000")[:3])
        try:
            datetime.date(y, mo, d)
        except ValueError:
            raise ValueError("bad date %r" % v)
        if y < 1970 or h > 23 or mi > 59 or s > 59:
            raise ValueError("bad date-time %r" % v)
        zone = m.group(8)
        if zone:
            off = 0
            if zone not in ("Z", "z"):
                sign = -1 if zone[0] == "-" else 1
                digits = zone[1:].replace(":", "")
                oh, om = int(digits[:2]), int(digits[2:])
                if oh > 23 or om > 59:
                    raise ValueError("bad offset in %r" % v)
                off = sign * (oh * 3600 + om * 60)
            secs = (datetime.datetime(y, mo, d, h, mi, s,
                                      tzinfo=datetime.timezone.utc).timestamp() - off)
        else:
            secs = _time.mktime((y, mo, d, h, mi, s, 0, 0, -1))
        return int(secs) * 1000 + ms
    try:
        parse_duration_ms(v)
        hint = bool(re.search(r"[smhdwy]", v))
    except ValueError:
        hint = False
    if hint:
        raise ValueError("%s: did you mean +%s? (a duration from now takes a +)" % (v, v))
    raise ValueError("bad time %r (+30m, 23:10, 2026-12-24T08:00)" % v)
