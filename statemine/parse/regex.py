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
from decimal import Decimal
from pathlib import Path
from typing import Sequence

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
        pattern = re.compile(_java_to_python(regex), re.ASCII)
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


_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")


def _parse_time(kind: str | None, text: str | None, line_no: int) -> tuple[float, str]:
    """The time of one event (value, text as Synoptic prints it); ``ValueError`` if bad."""
    if kind is None:
        return float(line_no), str(line_no)
    if text is None:
        raise ValueError("no time")
    text = text.strip()
    if kind in ("TIME", "LTIME"):
        if not _INTEGER.fullmatch(text):
            raise ValueError("not an integer")
        value = int(text)
        bits = 31 if kind == "TIME" else 63
        if not -(1 << bits) <= value < (1 << bits):
            raise ValueError("time out of range")
        return float(value), str(value)
    if not _DECIMAL.fullmatch(text):
        raise ValueError("not a number")
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("not finite")
    return value, _decimal_text(text, Decimal(text))


def _decimal_text(text: str, dec: Decimal) -> str:
    """Java ``BigDecimal.toString`` of a parsed decimal: plain text kept, exponents kept."""
    if _PLAIN_DECIMAL.fullmatch(text):
        return text.lstrip("+")
    return str(dec).replace("e", "E")


_PLAIN_DECIMAL = re.compile(r"[+-]?\d+(\.\d+)?")


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
    return read_regex_arrays(paths, regexes, separator, mapping, ignore_nonmatching,
                             time_scale, encoding).to_traceset()


def read_regex_arrays(
    paths: Sequence[str | os.PathLike] | str | os.PathLike,
    regexes: Sequence[str] | str | None = None,
    separator: str | None = None,
    mapping: str | None = None,
    ignore_nonmatching: bool = False,
    time_scale: float = 1.0,
    encoding: str = "utf-8",
) -> "RegexEvents":
    """:func:`read_regex` without building the pandas TraceSet: the parsed events as
    sorted numpy arrays (what the Synoptic engine reads; faster on huge logs)."""
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

    acc = _Accumulator()
    template = _split_template(mapping)
    for path in paths:
        if not _read_file_fast(Path(path), compiled, template, time_kind, by_file,
                               ignore_nonmatching, encoding, acc):
            _read_file(Path(path), compiled, template, time_kind, by_file, ignore_nonmatching,
                       encoding, acc)
    if not acc.n_events:
        raise InputError(", ".join(str(p) for p in paths) or None, None,
                         "no events parsed (empty input, or every line hidden/ignored)")
    return acc.sorted_events(time_scale)


def _split_template(template: str) -> list[tuple[str, str | None]]:
    r"""A mapping as (literal, group name or None) parts: ``\k<a>-x`` -> [("", "a"), ("-x", None)]."""
    parts: list[tuple[str, str | None]] = []
    pos = 0
    for m in _SUBST_REF.finditer(template):
        parts.append((template[pos:m.start()], m.group(1)))
        pos = m.end()
    parts.append((template[pos:], None))
    return parts


@dataclass
class _Accumulator:
    """Parsed events as per-file chunks of parallel arrays, plus the traces seen so far."""

    chunks: list[dict[str, np.ndarray]] = field(default_factory=list)
    trace_ids: dict[str, int] = field(default_factory=dict)
    partitions: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    @property
    def n_events(self) -> int:
        return sum(len(c["line"]) for c in self.chunks)

    def trace_id(self, name: str, source: str) -> int:
        """The id of trace ``name`` (new ids in order of first appearance)."""
        tid = self.trace_ids.get(name)
        if tid is None:
            tid = self.trace_ids[name] = len(self.partitions)
            self.partitions.append(name)
            self.sources.append(source)
        return tid

    def add(self, names: Sequence[str], source: str, types: Sequence[str], lines, times,
            texts) -> None:
        """Append one file's events (in line order) with their trace names."""
        inverse, uniq = pd.factorize(np.asarray(names, dtype=object), sort=False)
        ids = np.array([self.trace_id(str(u), source) for u in uniq], dtype=np.int64)
        self.chunks.append({
            "trace": ids[inverse] if len(uniq) else np.zeros(0, dtype=np.int64),
            "type": np.asarray(types, dtype=object),
            "line": np.asarray(lines, dtype=np.int64),
            "time": np.asarray(times, dtype=np.float64),
            "text": np.asarray(texts, dtype=object)})

    def sorted_events(self, time_scale: float) -> "RegexEvents":
        """All events, each trace ordered by time (stable: ties keep line order)."""
        cat = {k: np.concatenate([c[k] for c in self.chunks]) for k in self.chunks[0]}
        n = len(cat["line"])
        order = np.lexsort((np.arange(n), cat["time"], cat["trace"]))
        return RegexEvents(cat["trace"][order], cat["type"][order],
                           cat["time"][order] * time_scale, cat["line"][order],
                           cat["text"][order], self.partitions, self.sources)


@dataclass(frozen=True)
class RegexEvents:
    """Parsed events sorted by trace id then time: ``trace`` (int64 Synoptic trace id),
    ``types`` (object), ``times`` (float64, seconds after ``time_scale``), ``lines``
    (int64, 1-based), ``time_text`` (object: the time as Synoptic prints it); per trace id:
    ``partitions`` (the filled-in mapping) and ``sources`` (file of its first event)."""

    trace: np.ndarray
    types: np.ndarray
    times: np.ndarray
    lines: np.ndarray
    time_text: np.ndarray
    partitions: list[str]
    sources: list[str]

    def to_traceset(self) -> TraceSet:
        """The events as a :class:`TraceSet` (see the module docstring for its columns)."""
        ev = pd.DataFrame({"synoptic_trace": self.trace, "time": self.times,
                           "state": self.types, "line": self.lines,
                           "synoptic_time": self.time_text})
        ev.insert(0, "trace", ev["synoptic_trace"].astype(str))
        ev["kind"] = "state"
        ev["seq"] = ev.groupby("synoptic_trace", sort=False).cumcount().astype("int64")
        traces = pd.DataFrame({"trace": [str(i) for i in range(len(self.partitions))],
                               "source": self.sources, "partition": self.partitions})
        return TraceSet.from_events(ev, traces, {"format": "synoptic-regex"})


def _check_type(etype: str, path: Path, line_no: int) -> None:
    if etype in RESERVED_TYPES or _CONTROL.search(etype):
        raise InputError(path, line_no, f"event type {etype!r} is reserved for Synoptic's "
                         "synthetic nodes or has control characters (it would break the "
                         "model files); change the TYPE group")


def _read_file(path: Path, compiled: list[LineRegex], template: list[tuple[str, str | None]],
               time_kind: str | None, by_file: bool, ignore: bool, encoding: str,
               acc: _Accumulator) -> None:
    """Parse one file, appending its events (and new traces) to ``acc``."""
    file_name = str(path.resolve())
    source = str(path)
    counters: dict[str, int] = {}
    for r in compiled:
        for name in r.pre_inc + r.post_inc:
            counters[name] = 0
    # Plain regexes (no constants or counters) take a fast path: no dict per line.
    plain = [not (r.constants or r.pre_inc or r.post_inc) for r in compiled]
    bad: list[tuple[int, str]] = []
    seen_types: set[str] = set()
    try:
        fh = open(path, encoding=encoding, errors="replace", newline=None)
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    names: list[str] = []
    types: list[str] = []
    lines: list[int] = []
    times: list[float] = []
    texts: list[str] = []
    append_name, append_type = names.append, types.append
    append_line, append_time, append_text = lines.append, times.append, texts.append
    with fh:
        for line_no, raw in enumerate(fh, start=1):
            line = raw[:-1] if raw.endswith("\n") else raw
            if len(line) > MAX_LINE_CHARS:
                if not ignore:
                    bad.append((line_no, f"<line of {len(line)} characters: too long>"))
                continue
            for k, r in enumerate(compiled):
                m = r.pattern.fullmatch(line)
                if m is None:
                    continue
                if plain[k]:
                    etype = m.group("TYPE") if "TYPE" in r.pattern.groupindex else None
                    tval = m.group(time_kind) if time_kind else None
                    values = None
                else:
                    values = _apply_extras(r, m, counters)
                    if values is None:
                        break  # hidden line
                    etype = values.get("TYPE")
                    tval = values.get(time_kind) if time_kind else None
                if etype is None:
                    etype = line
                if etype not in seen_types:
                    _check_type(etype, path, line_no)
                    seen_types.add(etype)
                try:
                    t, t_text = _parse_time(time_kind, tval, line_no)
                except ValueError:
                    if ignore:
                        continue
                    raise InputError(path, line_no, f"cannot parse the {time_kind} time "
                                     f"{tval!r} (use -i to skip such lines)") from None
                if values is not None:
                    for name in r.post_inc:
                        counters[name] += 1
                append_name("".join(
                    lit + (_value(ref, m, values, counters, file_name if by_file else None)
                           if ref else "") for lit, ref in template))
                append_type(etype)
                append_line(line_no)
                append_time(t)
                append_text(t_text)
                break
            else:
                if not ignore:
                    bad.append((line_no, line))
                    if len(bad) >= MAX_LISTED_LINES:
                        break
    _raise_nonmatching(path, bad)
    acc.add(names, source, types, lines, times, texts)


def _raise_nonmatching(path: Path, bad: list[tuple[int, str]]) -> None:
    """InputError listing the first few lines no regex matched (if any)."""
    if bad:
        listed = "; ".join(f"line {n}: {text[:80]!r}" for n, text in bad[:MAX_LISTED_LINES])
        more = " (and maybe more)" if len(bad) >= MAX_LISTED_LINES else ""
        raise InputError(path, bad[0][0],
                         f"lines match none of the regexes{more}: {listed} "
                         f"(use -i to ignore non-matching lines)")


#: Files up to this size are parsed whole with Arrow's vectorized regex engine (RE2).
FAST_MAX_BYTES = 256 << 20


def _fast_eligible(r: LineRegex) -> bool:
    """Can the vectorized path run this regex: a plain one (no constants or counters), or
    a hidden one whose only constant is HIDE and only counter SEPCOUNT (the separator)?"""
    if not r.hidden:
        return not (r.constants or r.pre_inc or r.post_inc)
    return set(r.constants) == {"HIDE"} and not r.pre_inc and r.post_inc in ([], ["SEPCOUNT"])


def _read_file_fast(path: Path, compiled: list[LineRegex],
                    template: list[tuple[str, str | None]], time_kind: str | None,
                    by_file: bool, ignore: bool, encoding: str, acc: _Accumulator) -> bool:
    """Parse one file with pyarrow.compute (RE2, vectorized) when the regexes allow it:
    plain regexes, hidden ones and the separator only.  Returns False (nothing done) when
    they do not, when RE2 rejects a pattern, or when a group needed is empty (RE2 cannot
    tell an empty match from a group that did not take part); the line loop then runs."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not all(_fast_eligible(r) for r in compiled):
        return False
    try:
        if path.stat().st_size > FAST_MAX_BYTES:
            return False
        text = path.read_text(encoding=encoding, errors="replace")
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    if not text:
        return True
    if text.endswith("\n"):
        text = text[:-1]
    lines = pc.split_pattern(pa.array([text], type=pa.large_string()), "\n").flatten()
    n = len(lines)
    claimed = np.zeros(n, dtype=bool)
    sep_line = np.zeros(n, dtype=bool)
    parts = []  # (line index array, {group: values}) per plain regex
    try:
        for r in compiled:
            anchored = f"^(?:{r.pattern.pattern})$"
            if r.hidden:
                ok = pc.match_substring_regex(lines, anchored).to_numpy(zero_copy_only=False)
                ok &= ~claimed
                claimed |= ok
                if r.post_inc:
                    sep_line |= ok
                continue
            found = pc.extract_regex(lines, anchored)  # null where the line does not match
            ok = found.is_valid().to_numpy(zero_copy_only=False) & ~claimed
            idx = np.nonzero(ok)[0]
            if not idx.size:
                continue
            keep_ok = pa.array(ok)
            groups = {f.name: found.field(f.name).filter(keep_ok) for f in found.type}
            if time_kind:
                tval = pc.utf8_trim_whitespace(groups[time_kind])
                good = _arrow_time_ok(time_kind, tval)
                if not good.all():
                    if not ignore:
                        k = int(np.argmin(good))
                        raise InputError(path, int(idx[k]) + 1,
                                         f"cannot parse the {time_kind} time "
                                         f"{tval[k].as_py()!r} (use -i to skip such lines)")
                    keep = pa.array(np.nonzero(good)[0])
                    idx = idx[good]
                    groups = {g: v.take(keep) for g, v in groups.items()}
                    tval = tval.take(keep)
                groups[time_kind] = tval
            claimed[idx] = True
            parts.append((r, idx, groups))
    except pa.ArrowInvalid:
        return False
    needed = {ref for _, ref in template if ref} | {"TYPE"} | ({time_kind} if time_kind else set())
    for r, idx, groups in parts:
        for g in needed & set(groups):
            if pc.any(pc.equal(groups[g], "")).as_py():
                return False
    if not ignore and not claimed.all():
        miss = np.nonzero(~claimed)[0][:MAX_LISTED_LINES]
        _raise_nonmatching(path, [(int(i) + 1, lines[int(i)].as_py()) for i in miss])
    if not parts:
        return True
    sepcount = np.cumsum(sep_line) - sep_line  # separators strictly before each line
    file_name = str(path.resolve())
    idx_all, types, names, tvals = [], [], [], []
    for r, idx, groups in parts:
        etype = groups["TYPE"] if "TYPE" in groups else lines.take(pa.array(idx))
        pieces: list = []
        for lit, ref in template:
            if lit:
                pieces.append(lit)
            if ref == "FILE" and by_file:
                pieces.append(file_name)
            elif ref == "SEPCOUNT":
                pieces.append(pc.cast(pa.array(sepcount[idx]), pa.string()))
            elif ref and ref in groups:
                pieces.append(groups[ref])
        if any(not isinstance(p, str) for p in pieces):
            name = pc.binary_join_element_wise(
                *[pa.scalar(p) if isinstance(p, str) else p.cast(pa.string()) for p in pieces],
                "")
        else:
            name = pa.array(["".join(pieces)] * len(idx))
        idx_all.append(idx)
        types.append(etype.cast(pa.large_string()))
        names.append(name.cast(pa.large_string()))
        tvals.append(groups[time_kind].cast(pa.large_string()) if time_kind else None)
    idx = np.concatenate(idx_all)
    order_np = np.argsort(idx, kind="stable")
    order = pa.array(order_np)
    idx = idx[order_np]
    types = pa.concat_arrays(types).take(order).to_numpy(zero_copy_only=False)
    for t in pd.unique(types):
        _check_type(t, path, int(idx[np.argmax(types == t)]) + 1)
    line_no = idx + 1
    if time_kind:
        times, texts = _arrow_times(time_kind, pa.concat_arrays(tvals).take(order))
    else:
        times, texts = line_no.astype(np.float64), line_no.astype(str).astype(object)
    names = pa.concat_arrays(names).take(order).to_numpy(zero_copy_only=False)
    acc.add(names, str(path), types, line_no, times, texts)
    return True


_ARROW_DECIMAL = r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$"
_ARROW_PLAIN = r"^[+-]?\d+(?:\.\d+)?$"


def _arrow_time_ok(kind: str, text) -> np.ndarray:
    """Which time texts (a pyarrow string array) parse as Synoptic would for ``kind``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if kind in ("TIME", "LTIME"):
        ok = pc.match_substring_regex(text, r"^[+-]?\d{1,19}$").to_numpy(zero_copy_only=False)
        if ok.any():
            bits = 31 if kind == "TIME" else 63
            sel = np.nonzero(ok)[0]
            vals = [int(t) for t in text.take(pa.array(sel)).to_pylist()]
            ok[sel] = [-(1 << bits) <= v < (1 << bits) for v in vals]
        return ok
    ok = pc.match_substring_regex(text, _ARROW_DECIMAL).to_numpy(zero_copy_only=False)
    if ok.any():
        sel = np.nonzero(ok)[0]
        vals = pc.cast(pc.utf8_ltrim(text.take(pa.array(sel)), "+"), pa.float64())
        ok[sel] = np.isfinite(vals.to_numpy(zero_copy_only=False))
    return ok


def _arrow_times(kind: str, text) -> tuple[np.ndarray, np.ndarray]:
    """(values, Synoptic's printed texts) of valid time texts (a pyarrow string array)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    unsigned = pc.utf8_ltrim(text, "+")
    if kind in ("TIME", "LTIME"):
        ints = pc.cast(unsigned, pa.int64())
        return (ints.to_numpy(zero_copy_only=False).astype(np.float64),
                pc.cast(ints, pa.string()).to_numpy(zero_copy_only=False))
    values = pc.cast(unsigned, pa.float64()).to_numpy(zero_copy_only=False)
    texts = unsigned.to_numpy(zero_copy_only=False)
    plain = pc.match_substring_regex(text, _ARROW_PLAIN).to_numpy(zero_copy_only=False)
    raw = text.to_pylist() if not plain.all() else None
    for i in np.nonzero(~plain)[0]:
        texts[i] = _decimal_text(raw[i], Decimal(raw[i]))
    return values, texts


def _value(ref: str, m: re.Match, values: dict | None, counters: dict[str, int],
           file_name: str | None) -> str:
    """The value of mapping reference ``ref`` for the current line ('' when unset)."""
    if ref == "FILE" and file_name is not None:
        return file_name
    if values is not None:
        return values.get(ref) or ""
    if ref in counters:
        return str(counters[ref])
    if ref in m.re.groupindex:
        return m.group(ref) or ""
    return ""


def _apply_extras(r: LineRegex, m: re.Match, counters: dict[str, int]) -> dict | None:
    """Counters and constants of a matched line: its values, or None for a hidden line
    (whose post-increments are then applied)."""
    values: dict[str, str | None] = m.groupdict()
    for name in r.pre_inc:
        counters[name] += 1
    for name, value in counters.items():
        values[name] = str(value)
    for name, template in r.constants.items():
        filled = substitute(template, values)
        if name in counters:
            counters[name] = int(filled) if _INTEGER.fullmatch(filled) else 0
        values.setdefault(name, filled)
    if values.get("HIDE") is not None:
        for name in r.post_inc:
            counters[name] += 1
        return None
    return values

