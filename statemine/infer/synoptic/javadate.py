"""Java ``SimpleDateFormat`` patterns (Synoptic's ``--dateFormat`` for ``DATETIME``
groups), for parsing only.

Supported pattern letters (from the ``java.text.SimpleDateFormat`` documentation):

====  ==========================================================================
y     year (``yy``: two digits, 2000-2099 window as ``70``-``69`` -> 1970-2069; else the number)
M, L  month: ``M``/``MM`` number, ``MMM`` English abbreviation, ``MMMM`` full name
d     day of month;  D  day of year
H     hour 0-23;  k  hour 1-24;  K  hour 0-11;  h  hour 1-12 (with ``a``)
a     AM/PM marker
m     minute;  s  second;  S  milliseconds (the digits as a number, as Java reads them)
E, u  day name (``E``, checked to be a day name, not used) / day number (``u``, not used)
Z, X  zone offset ``+0100``, ``+01:00``, ``Z`` (X);  z  ``UTC``, ``GMT``, ``GMT+01:00``
====  ==========================================================================

Text in single quotes is literal (``''`` is a quote); other non-letters are literal.
Other letters (``G``, ``w``, ``W``, ``F``, ``Y``) are refused.  Parsing is strict: the
whole field must match.  A date without a zone is read as UTC (Java would use the JVM's
default time zone).  The value is milliseconds since 1970-01-01T00:00:00Z, as Java's
``Date.getTime()``.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

_MONTHS = [calendar.month_name[i].lower() for i in range(1, 13)]
_MONTHS_ABBR = [calendar.month_abbr[i].lower() for i in range(1, 13)]
_DAYS = [d.lower() for d in calendar.day_name] + [d.lower() for d in calendar.day_abbr]
_NUMERIC = {
    "y": "year",
    "d": "day",
    "D": "yday",
    "H": "H",
    "k": "k",
    "K": "K",
    "h": "h",
    "m": "minute",
    "s": "second",
    "S": "ms",
    "u": "wday",
}


def _is_numeric(letter: str, count: int) -> bool:
    return letter in _NUMERIC or (letter in "ML" and count < 3)


def _field_regex(letter: str, count: int, index: int, abutting: bool = False) -> str:
    """The regex of one pattern field (a named group ``f<index>``); a numeric field
    directly followed by another numeric field takes exactly ``count`` digits (Java's
    abutting-field rule)."""
    name = f"f{index}"
    if letter in "ML" and count >= 3:
        return rf"(?P<{name}>[A-Za-z]+)"
    if _is_numeric(letter, count):
        if abutting or (letter == "y" and count == 2):
            return rf"(?P<{name}>\d{{{count}}})"
        return rf"(?P<{name}>[+-]?\d+)" if letter == "y" else rf"(?P<{name}>\d+)"
    if letter == "a":
        return rf"(?P<{name}>[AaPp][Mm])"
    if letter == "E":
        return rf"(?P<{name}>[A-Za-z]+)"
    if letter in "ZX":
        return rf"(?P<{name}>Z|[+-]\d{{2}}(?::?\d{{2}})?)"
    if letter == "z":
        return rf"(?P<{name}>(?:UTC|GMT)(?:[+-]\d{{1,2}}(?::?\d{{2}})?)?|[+-]\d{{2}}:?\d{{2}})"
    raise ValueError(
        f"pattern letter {letter!r} is not supported (supported: y M L d D H k K "
        "h a m s S E u Z X z)"
    )


def compile_date_format(pattern: str) -> Callable[[str], int]:
    """A parser for ``pattern``: text -> milliseconds since the epoch; ``ValueError``
    naming the pattern when the text does not match it or is not a valid date.

    >>> parse = compile_date_format("dd/MMM/yyyy:HH:mm:ss")
    >>> parse("10/Oct/2000:13:55:36")
    971186136000
    >>> compile_date_format("yyyy-MM-dd'T'HH:mm:ss.SSSXXX")("2024-02-29T23:59:59.250+01:00")
    1709247599250
    """
    parts: list[str] = []
    fields: list[tuple[str, int]] = []
    k = 0
    while k < len(pattern):
        c = pattern[k]
        if c == "'":
            end = k + 1
            literal = ""
            while end < len(pattern):
                if pattern[end] == "'":
                    if end + 1 < len(pattern) and pattern[end + 1] == "'":
                        literal += "'"
                        end += 2
                        continue
                    break
                literal += pattern[end]
                end += 1
            if end >= len(pattern) and k + 1 < len(pattern) and pattern[k + 1] != "'":
                raise ValueError(f"date format {pattern!r}: unterminated quote")
            parts.append(re.escape(literal if literal or end > k + 1 else "'"))
            k = end + 1
            continue
        if c.isalpha():
            run = k
            while run < len(pattern) and pattern[run] == c:
                run += 1
            nxt = pattern[run] if run < len(pattern) else ""
            nxt_count = len(pattern[run:]) - len(pattern[run:].lstrip(nxt)) if nxt else 0
            abutting = nxt.isalpha() and _is_numeric(nxt, nxt_count) and _is_numeric(c, run - k)
            parts.append(_field_regex(c, run - k, len(fields), abutting))
            fields.append((c, run - k))
            k = run
            continue
        parts.append(re.escape(c))
        k += 1
    matcher = re.compile("".join(parts) + r"\Z")

    def parse(text: str) -> int:
        m = matcher.match(text)
        if not m:
            raise ValueError(f"{text!r} does not match the date format {pattern!r}")
        return _to_millis(m, fields, text, pattern)

    return parse


def _to_millis(m: re.Match, fields: list[tuple[str, int]], text: str, pattern: str) -> int:
    v = {"year": 1970, "month": 1, "day": 1, "hour": 0, "minute": 0, "second": 0, "ms": 0}
    pm, offset, yday = None, timedelta(0), None
    for i, (letter, count) in enumerate(fields):
        s = m.group(f"f{i}")
        if letter in "ML":
            low = s.lower()
            if count >= 3:
                names = _MONTHS if count >= 4 else _MONTHS_ABBR
                if low not in names:
                    raise ValueError(
                        f"{text!r}: {s!r} is not a month name (date format {pattern!r})"
                    )
                v["month"] = names.index(low) + 1
            else:
                v["month"] = int(s)
        elif letter == "y":
            year = int(s)
            v["year"] = (2000 + year if year < 70 else 1900 + year) if count == 2 else year
        elif letter == "D":
            yday = int(s)
        elif letter in "Hk":
            v["hour"] = int(s) % 24 if letter == "k" else int(s)
        elif letter in "Kh":
            v["hour"] = int(s) % 12
        elif letter == "a":
            pm = s.lower() == "pm"
        elif letter == "E":
            if s.lower() not in _DAYS:
                raise ValueError(f"{text!r}: {s!r} is not a day name (date format {pattern!r})")
        elif letter in "ZXz":
            offset = _offset(s)
        elif letter in _NUMERIC and _NUMERIC[letter] in v:
            v[_NUMERIC[letter]] = int(s)
    if pm:
        v["hour"] += 12
    try:
        if yday is not None:
            base = datetime(v["year"], 1, 1, tzinfo=UTC) + timedelta(days=yday - 1)
            v["month"], v["day"] = base.month, base.day
        when = datetime(
            v["year"],
            v["month"],
            v["day"],
            v["hour"],
            v["minute"],
            v["second"],
            tzinfo=UTC,
        )
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"{text!r} is not a valid date under {pattern!r}: {exc}") from None
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    return (when - epoch - offset) // timedelta(milliseconds=1) + v["ms"]


def _offset(s: str) -> timedelta:
    """A zone offset text (``Z``, ``+0100``, ``-05:30``, ``GMT+1``, ``UTC``) as a timedelta."""
    body = re.sub(r"^(?:UTC|GMT)", "", s)
    if body in ("", "Z"):
        return timedelta(0)
    sign = -1 if body[0] == "-" else 1
    digits = body[1:].replace(":", "")
    hours = int(digits[:-2] or 0) if len(digits) > 2 else int(digits)
    minutes = int(digits[-2:]) if len(digits) > 2 else 0
    return sign * timedelta(hours=hours, minutes=minutes)
