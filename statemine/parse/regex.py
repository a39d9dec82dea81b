"""Synoptic-compatible regex log reader: ``-r`` / ``-s`` / ``-m`` with Synoptic's semantics.

The rules follow Synoptic's ``TraceParser`` (Beschastnikh et al., FSE 2011; the public
documentation of its ``-r``, ``-s``, ``-m`` and ``-i`` options), re-implemented here:

* A regex must match the **whole** line; several regexes are tried in order, the first
  that matches wins.  Java named groups ``(?<NAME>...)`` are accepted.
* An *empty* group ``(?<NAME>)`` stands for a whitespace-delimited token: the first empty
  group of a regex becomes ``(?:\\s*(?<NAME>\\S+)\\s*)``, every later one
  ``(?:\\s+(?<NAME>\\S+)\\s*)``.
* ``(?<NAME=>value)`` assigns a constant (``\\k<g>`` back-references are filled in);
  ``(?<HIDE=>true)`` makes matching lines produce no event; ``(?<NAME++>)`` /
  ``(?<++NAME>)`` are post-/pre-incremented counters (reset per file).
* The event type is the ``TYPE`` group (the whole line when the group did not take part).
* Time: ``TIME`` (int), ``LTIME`` (long), ``FTIME``/``DTIME`` (decimal); without a time
  group, the line number is the time.  One time kind for all regexes.
* Traces: the mapping ``-m`` (default ``\\k<FILE>``) is filled per event; with a separator
  ``-s`` (tried before the other regexes, hidden, incrementing ``SEPCOUNT``) the mapping
  gets ``\\k<SEPCOUNT>`` appended.  Trace ids 0, 1, ... in order of first appearance;
  events of a trace are ordered by time (stable, ties keep line order).
* A line no regex matches is an error (the first few are listed, with line numbers) unless
  ``ignore_nonmatching`` (``-i``); with ``-i`` a line whose time does not parse is skipped.

Output: a :class:`~statemine.traces.TraceSet` with kind ``state`` for every event, ``time``
in seconds (``time_scale`` times the parsed time), ``line`` the 1-based source line, and the
extra columns ``synoptic_time`` (the time text as Synoptic prints it in ``model.json``) and
``synoptic_trace`` (int trace id); ``traces`` has ``trace`` (the id as text), ``source``
and ``partition`` (the filled-in mapping string).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from ..errors import InputError, UsageError
from ..traces import TraceSet

#: Synoptic's default partition mapping: one trace per input file.
DEFAULT_MAPPING = r"\k<FILE>"
#: Synoptic's default line regex (``-r`` absent): the whole line is the event type.
DEFAULT_REGEX = r"^\s*(?<TYPE>.*)\s*$"
#: Time groups a regex may carry (one kind per parse).
TIME_GROUPS = ("TIME", "LTIME", "FTIME", "DTIME", "VTIME", "DATETIME")
#: How many non-matching lines an error message lists.
MAX_LISTED_LINES = 5
#: Lines longer than this are reported, not matched (bounded work per line).
MAX_LINE_CHARS = 1 << 20

_ASSIGN = re.compile(r"\(\?<(\w*)=>([^)]*)\)")
_PRE_INC = re.compile(r"\(\?<\+\+(\w*)>\)")
_POST_INC = re.compile(r"\(\?<(\w*)\+\+>\)")
_EMPTY_GROUP = re.compile(r"\(\?<((?:\w|\*|-)*)>\)")
_JAVA_NAMED = re.compile(r"(?<!\\)\(\?<([A-Za-z][A-Za-z0-9_]*)>")
_JAVA_BACKREF = re.compile(r"\\k<([A-Za-z][A-Za-z0-9_]*)>")
_SUBST_REF = re.compile(r"\\k<(\w+)>")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
#: Event types that would clash with Synoptic's synthetic start and end nodes.
RESERVED_TYPES = ("INITIAL", "TERMINAL")


@dataclass
class LineRegex:
    """One compiled ``-r`` (or separator) regex with its Synoptic extras."""

    source: str
    pattern: re.Pattern
    constants: dict[str, str] = field(default_factory=dict)
    pre_inc: list[str] = field(default_factory=list)
    post_inc: list[str] = field(default_factory=list)
    hidden: bool = False
    time_group: str | None = None


def substitute(template: str, values: dict[str, str | None]) -> str:
    r"""Fill ``\k<name>`` references of a Synoptic mapping/constant (missing names: empty).

    >>> substitute(r"\k<ip>-\k<SEPCOUNT>", {"ip": "1.2.3.4", "SEPCOUNT": "2"})
    '1.2.3.4-2'
    """
    return _SUBST_REF.sub(lambda m: values.get(m.group(1)) or "", template)


def _java_to_python(regex: str) -> str:
    """Rewrite Java named groups and ``\\k<name>`` back-references into Python syntax."""
    regex = _JAVA_NAMED.sub(lambda m: f"(?P<{m.group(1)}>", regex)
    return _JAVA_BACKREF.sub(lambda m: f"(?P={m.group(1)})", regex)


def compile_regex(source: str) -> LineRegex:
    r"""Compile one Synoptic line regex (see the module docstring for the extra syntax).

    Raises :class:`UsageError` if it does not compile, has neither a ``TYPE`` group nor
    ``HIDE``, uses ``RELATION``/``STATE`` groups (not supported) or two time groups.

    >>> r = compile_regex("^(?<DTIME>)(?<TYPE>)$")
    >>> r.pattern.fullmatch("12.5 SlowStart").group("TYPE"), r.time_group
    ('SlowStart', 'DTIME')
    """
    regex = source.replace(r"\;\;", ";;")
    constants: dict[str, str] = {}
    for m in _ASSIGN.finditer(regex):
        name, value = m.group(1), m.group(2)
        if name in constants:
            raise UsageError(f"regex {source!r}: the field {name} is assigned twice")
        if name in TIME_GROUPS:
            raise UsageError(f"regex {source!r}: the time field {name} cannot be assigned")
        if name == "HIDE" and value != "true":
            raise UsageError(f"regex {source!r}: HIDE can only be assigned 'true'")
        constants[name] = value
    regex = _ASSIGN.sub("", regex)
    pre_inc = _PRE_INC.findall(regex)
    regex = _PRE_INC.sub("", regex)
    post_inc = _POST_INC.findall(regex)
    regex = _POST_INC.sub("", regex)

    count = 0

    def fill(m: re.Match) -> str:
        nonlocal count
        count += 1
        lead = r"\s*" if count == 1 else r"\s+"
        return f"(?:{lead}(?<{m.group(1)}>\\S+)\\s*)"

    regex = _EMPTY_GROUP.sub(fill, regex)
    try:
        pattern = re.compile(_java_to_python(regex))
    except (re.error, OverflowError, RecursionError) as exc:
        raise UsageError(f"regex {source!r} does not compile: {exc}") from None
    groups = set(pattern.groupindex)
    odd = sorted(g for g in groups | set(constants) if g.startswith(("RELATION", "STATE")))
    if odd:
        raise UsageError(f"regex {source!r}: groups {odd} are not supported")
    if "LOGTIME" in groups:
        raise UsageError(f"regex {source!r}: LOGTIME cannot be a capture group")
    hidden = constants.get("HIDE") == "true"
    times = [g for g in TIME_GROUPS if g in groups]
    if not hidden:
        if "TYPE" not in groups and "TYPE" not in constants:
            raise UsageError(f"regex {source!r} has no TYPE group (e.g. (?<TYPE>\\w+))")
        if len(times) > 1:
            raise UsageError(f"regex {source!r} has several time groups: {times}")
        if times and times[0] in ("VTIME", "DATETIME"):
            raise UsageError(f"regex {source!r}: {times[0]} (partial order/dates) is not supported")
    return LineRegex(source, pattern, constants, pre_inc, post_inc, hidden,
                     times[0] if times and not hidden else None)


@dataclass
class _Event:
    trace: int
    etype: str
    line: int
    time: float
    time_text: str
    source: str


def _parse_time(kind: str | None, text: str | None, line_no: int) -> tuple[float, str]:
    """The time of one event (value, text as Synoptic prints it); ``ValueError`` if bad."""
    if kind is None:
        return float(line_no), str(line_no)
    if text is None:
        raise ValueError("no time")
    text = text.strip()
    if kind in ("TIME", "LTIME"):
        value = int(text, 10)
        bits = 31 if kind == "TIME" else 63
        if not -(1 << bits) <= value < (1 << bits):
            raise ValueError("time out of range")
        return float(value), str(value)
    try:
        dec = Decimal(text)
    except InvalidOperation:
        raise ValueError("not a number") from None
    if not dec.is_finite():
        raise ValueError("not finite")
    return float(dec), _decimal_text(text, dec)


def _decimal_text(text: str, dec: Decimal) -> str:
    """Java ``BigDecimal.toString`` of a parsed decimal: plain text kept, exponents kept."""
    if re.fullmatch(r"[+-]?\d+(\.\d+)?", text):
        return text.lstrip("+")
    return str(dec).replace("e", "E")


def read_regex(
    paths: Sequence[str | os.PathLike] | str | os.PathLike,
    regexes: Sequence[str] | str | None = None,
    separator: str | None = None,
    mapping: str | None = None,
    ignore_nonmatching: bool = False,
    time_scale: float = 1.0,
    encoding: str = "utf-8",
) -> TraceSet:
    r"""Read logs the way Synoptic's ``-r REGEX... -s SEP -m MAP [-i]`` does.

    ``paths``: log files (one trace per file unless ``mapping``/``separator`` say
    otherwise); ``regexes``: tried in order (default: the whole line is the type);
    ``time_scale``: seconds per unit of the parsed time (1.0 keeps the log's numbers).
    Raises :class:`InputError` (file, line, reason) for lines no regex matches (listing
    the first few) or a time that does not parse, :class:`UsageError` for bad regexes.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.log"
    >>> _ = p.write_text("1 Init\n2 SlowStart\n--\n3 Init\n")
    >>> ts = read_regex([p], ["^(?<DTIME>)(?<TYPE>)$"], separator="^--$")
    >>> ts.events[["trace", "state", "line"]].values.tolist()
    [['0', 'Init', 1], ['0', 'SlowStart', 2], ['1', 'Init', 4]]
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if isinstance(regexes, str):
        regexes = [regexes]
    compiled = [compile_regex(r) for r in (regexes or [DEFAULT_REGEX])]
    mapping = DEFAULT_MAPPING if mapping is None else mapping
    if separator is not None:
        compiled.insert(0, compile_regex(separator + "(?<SEPCOUNT++>)(?<HIDE=>true)"))
        mapping = mapping + r"\k<SEPCOUNT>"
    kinds = {r.time_group for r in compiled if not r.hidden}
    if len(kinds) > 1:
        raise UsageError(f"the regexes use different time kinds: {sorted(map(str, kinds))}")
    time_kind = kinds.pop() if kinds else None
    by_file = mapping == DEFAULT_MAPPING or (separator is not None
                                             and mapping == DEFAULT_MAPPING + r"\k<SEPCOUNT>")

    trace_ids: dict[str, int] = {}
    partitions: list[str] = []
    trace_source: list[str] = []
    events: list[_Event] = []
    for path in paths:
        _read_file(Path(path), compiled, mapping, time_kind, by_file, ignore_nonmatching,
                   encoding, trace_ids, partitions, trace_source, events)
    if not events:
        raise InputError(", ".join(str(p) for p in paths) or None, None,
                         "no events parsed (empty input, or every line hidden/ignored)")
    return _to_traceset(events, partitions, trace_source, time_scale)


def _read_file(path: Path, compiled: list[LineRegex], mapping: str, time_kind: str | None,
               by_file: bool, ignore: bool, encoding: str, trace_ids: dict[str, int],
               partitions: list[str], trace_source: list[str], events: list[_Event]) -> None:
    """Parse one file, appending its events (and new traces) to the accumulators."""
    file_name = str(path.resolve())
    counters: dict[str, int] = {}
    for r in compiled:
        for name in r.pre_inc + r.post_inc:
            counters[name] = 0
    bad: list[tuple[int, str]] = []
    try:
        fh = open(path, encoding=encoding, errors="replace", newline=None)
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    with fh:
        for line_no, raw in enumerate(fh, start=1):
            line = raw.rstrip("\n")
            if len(line) > MAX_LINE_CHARS:
                if not ignore:
                    bad.append((line_no, f"line of {len(line)} characters is too long"))
                continue
            ev = _parse_line(line, line_no, compiled, counters, time_kind, ignore, path)
            if ev is None:
                continue
            if ev is _NO_MATCH:
                if not ignore:
                    bad.append((line_no, line))
                    if len(bad) >= MAX_LISTED_LINES:
                        break
                continue
            values, etype, t, t_text = ev
            if by_file:
                values["FILE"] = file_name
            pname = substitute(mapping, values)
            tid = trace_ids.get(pname)
            if tid is None:
                tid = trace_ids[pname] = len(partitions)
                partitions.append(pname)
                trace_source.append(str(path))
            events.append(_Event(tid, etype, line_no, t, t_text, str(path)))
    if bad:
        listed = "; ".join(f"line {n}: {text[:80]!r}" for n, text in bad)
        more = " (and maybe more)" if len(bad) >= MAX_LISTED_LINES else ""
        raise InputError(path, bad[0][0],
                         f"lines match none of the regexes{more}: {listed} "
                         f"(use -i to ignore non-matching lines)")


_NO_MATCH = object()


def _parse_line(line: str, line_no: int, compiled: list[LineRegex], counters: dict[str, int],
                time_kind: str | None, ignore: bool, path: Path):
    """One line: ``None`` (hidden/skipped), ``_NO_MATCH``, or (values, type, time, text)."""
    for r in compiled:
        m = r.pattern.fullmatch(line)
        if m is None:
            continue
        values: dict[str, str | None] = m.groupdict()
        for name in r.pre_inc:
            counters[name] += 1
        for name, value in counters.items():
            values[name] = str(value)
        for name, template in r.constants.items():
            filled = substitute(template, values)
            if name in counters:
                counters[name] = int(filled) if re.fullmatch(r"-?\d+", filled) else 0
            values.setdefault(name, filled)
        if values.get("HIDE") is not None:
            for name in r.post_inc:
                counters[name] += 1
            return None
        etype = values.get("TYPE")
        if etype is None:
            etype = line
        if etype in RESERVED_TYPES or _CONTROL.search(etype):
            raise InputError(path, line_no, f"event type {etype!r} is reserved for Synoptic's "
                             "synthetic nodes or has control characters (it would break the "
                             "model files); change the TYPE group")
        try:
            t, t_text = _parse_time(time_kind, values.get(time_kind) if time_kind else None,
                                    line_no)
        except ValueError:
            if ignore:
                continue
            raise InputError(path, line_no, f"cannot parse the {time_kind} time "
                             f"{values.get(time_kind)!r} (use -i to skip such lines)") from None
        for name in r.post_inc:
            counters[name] += 1
        return values, etype, t, t_text
    return _NO_MATCH


def _to_traceset(events: list[_Event], partitions: list[str], sources: list[str],
                 time_scale: float) -> TraceSet:
    """Assemble the parsed events into a TraceSet (per-trace time order, stable)."""
    n = len(events)
    trace = np.fromiter((e.trace for e in events), dtype=np.int64, count=n)
    time = np.fromiter((e.time for e in events), dtype=np.float64, count=n)
    order = np.lexsort((np.arange(n), time, trace))
    ev = pd.DataFrame({
        "synoptic_trace": trace[order],
        "time": time[order] * time_scale,
        "state": np.array([e.etype for e in events], dtype=object)[order],
        "line": np.fromiter((e.line for e in events), dtype=np.int64, count=n)[order],
        "synoptic_time": np.array([e.time_text for e in events], dtype=object)[order],
    })
    ev.insert(0, "trace", ev["synoptic_trace"].astype(str))
    ev["kind"] = "state"
    ev["seq"] = ev.groupby("synoptic_trace", sort=False).cumcount().astype("int64")
    traces = pd.DataFrame({"trace": [str(i) for i in range(len(partitions))],
                           "source": sources, "partition": partitions})
    # traces frame in trace-id order (ids are strings; keep numeric order explicit)
    ts = TraceSet.from_events(ev, traces, {"format": "synoptic-regex"})
    return ts


def synoptic_traces(ts: TraceSet) -> list[pd.DataFrame]:
    """The traces of ``ts`` in Synoptic trace-id order (``synoptic_trace`` when present)."""
    ev = ts.events
    key = ev["synoptic_trace"] if "synoptic_trace" in ev.columns else ev["trace"]
    return [g for _, g in ev.groupby(key, sort=True)]


def iter_types(ts: TraceSet) -> Iterable[str]:
    """Event types of ``ts`` in order of first appearance."""
    return pd.unique(ts.events["state"])
