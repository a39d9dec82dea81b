"""Shared by the qlog reader's modules: warnings of one read, value helpers."""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

from ...errors import InputError

_MAX_LISTED = 20  # warnings of one kind listed one by one; the rest are counted


class NoCongestionData(InputError):
    """A readable qlog file without any usable congestion state (a folder may skip it)."""


class _Report:
    """Warnings of one read, each ``"FILE:LINE: reason"``; repeated kinds are counted."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.messages: list[str] = []
        self.built: list[str] = []  # warnings of building traces, listed after the parse's
        self.building = False  # set while a connection is built (between parse steps)
        self._counts: Counter = Counter()

    def warn(self, line: int | None, reason: str, kind: str | None = None) -> None:
        """Add a warning; at most ``_MAX_LISTED`` of one ``kind`` are listed one by one."""
        if kind is not None:
            self._counts[kind] += 1
            if self._counts[kind] > _MAX_LISTED:
                return
        where = f"{self.path}:{line}" if line is not None and line > 0 else str(self.path)
        (self.built if self.building else self.messages).append(f"{where}: {reason}")

    def finish(self) -> list[str]:
        """All warnings, with a count line for every kind that overflowed."""
        extra = [
            f"{self.path}: {n - _MAX_LISTED} more warnings like '{kind}' not listed"
            for kind, n in self._counts.items()
            if n > _MAX_LISTED
        ]
        return self.messages + self.built + extra


def _object_at(record: dict, key: str) -> dict:
    """``record[key]`` when it is a JSON object, else an empty one."""
    value = record.get(key)
    return value if isinstance(value, dict) else {}


def _num(value: object) -> float:
    """A JSON number or numeric string as float; NaN for anything else (bools included)."""
    if type(value) is float:
        return value
    if type(value) is int:
        return float(value) if -(2**1000) < value < 2**1000 else math.copysign(math.inf, value)
    if type(value) is str:
        try:
            return float(value)
        except ValueError:
            return math.nan
    return math.nan


def _token(value: object) -> str:
    """A value for the ``fields`` column: no white space (replaced by ``_``)."""
    return re.sub(r"\s+", "_", str(value).strip())


def _field(key: str, value: object) -> str:
    """``key=value`` for the ``fields`` column, or ``""`` when the value is missing or empty."""
    if value is None or isinstance(value, (dict, list)):
        return ""
    token = _token(value)
    return f"{key}={token}" if token else ""
