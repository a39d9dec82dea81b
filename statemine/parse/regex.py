"""Synoptic-compatible regex log reader: ``-r`` / ``-s`` / ``-m`` with Synoptic's semantics.

The rules follow Synoptic's ``TraceParser`` (Beschastnikh et al., FSE 2011; the public
documentation of its ``-r``, ``-s``, ``-m`` and ``-i`` options), re-implemented here:

* A regex must match the **whole** line; several regexes are tried in order, the first
  that matches wins.  Java named groups ``(?<NAME>...)`` are accepted.  Regexes run on RE2
  (linear time) with Java's meaning; what RE2 cannot do as Java does is refused
  (:mod:`statemine.parse.re2line`).
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

import math
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from ..errors import InputError, UsageError
from ..escape import name_text
from .lines import ordered_map, stat_input
from .re2line import Re2Line, translate
from .timerange import MAX_TIME_S, MAX_TIME_UNITS, first_implausible, time_problem

if TYPE_CHECKING:
    import pyarrow as pa

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
_TOKENS_ONLY = re.compile(r"\^?(?:\(\?<\w+>\))+\$?")
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
    #: The regex in RE2's syntax, compiled (``pattern.pattern`` is its text).
    pattern: Re2Line
    constants: dict[str, str] = field(default_factory=dict)
    pre_inc: list[str] = field(default_factory=list)
    post_inc: list[str] = field(default_factory=list)
    hidden: bool = False
    time_group: str | None = None
    #: Names of the empty groups when the regex is nothing else (``^(?<A>)(?<B>)$``):
    #: the line is then exactly that many whitespace-separated tokens.
    tokens: tuple[str, ...] | None = None


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


def compile_regex(source: str, option: str = "-r", suffix: str = "") -> LineRegex:
    r"""Compile one Synoptic line regex (see the module docstring for the extra syntax),
    given to the command-line ``option`` (named in errors); ``suffix`` is appended to it
    unseen (the separator's hidden counter).

    The regex runs on RE2 (linear time in the line, whatever the pattern): raises
    :class:`UsageError` if it does not compile, needs a backtracking engine
    (back-references, look-around) or would capture differently from Java
    (:func:`statemine.parse.re2line.translate`), has neither a ``TYPE`` group nor
    ``HIDE``, uses ``RELATION``/``STATE`` groups (not supported) or two time groups.

    >>> r = compile_regex("^(?<DTIME>)(?<TYPE>)$")
    >>> r.pattern.fullmatch("12.5 SlowStart")["TYPE"], r.time_group
    ('SlowStart', 'DTIME')
    """
    where = f"{option} regex {source!r}"
    regex = (source + suffix).replace(r"\;\;", ";;")
    constants: dict[str, str] = {}
    for m in _ASSIGN.finditer(regex):
        name, value = m.group(1), m.group(2)
        if name in constants:
            raise UsageError(f"{where}: the field {name} is assigned twice")
        if name in TIME_GROUPS:
            raise UsageError(f"{where}: the time field {name} cannot be assigned")
        if name == "HIDE" and value != "true":
            raise UsageError(f"{where}: HIDE can only be assigned 'true'")
        constants[name] = value
    regex = _ASSIGN.sub("", regex)
    pre_inc = _PRE_INC.findall(regex)
    regex = _PRE_INC.sub("", regex)
    post_inc = _POST_INC.findall(regex)
    regex = _POST_INC.sub("", regex)

    tokens = tuple(_EMPTY_GROUP.findall(regex)) if _TOKENS_ONLY.fullmatch(regex) else None
    count = 0

    def fill(m: re.Match) -> str:
        nonlocal count
        count += 1
        lead = r"\s*" if count == 1 else r"\s+"
        return f"(?:{lead}(?<{m.group(1)}>\\S+)\\s*)"

    regex = _EMPTY_GROUP.sub(fill, regex)
    pattern = Re2Line(translate(_java_to_python(regex), where), where)
    groups = set(pattern.groupindex)
    odd = sorted(g for g in groups | set(constants) if g.startswith(("RELATION", "STATE")))
    if odd:
        raise UsageError(f"{where}: groups {odd} are not supported")
    if "LOGTIME" in groups:
        raise UsageError(f"{where}: LOGTIME cannot be a capture group")
    if "HIDE" in groups:
        raise UsageError(f"{where}: HIDE cannot be a capture group; write (?<HIDE=>true)")
    hidden = constants.get("HIDE") == "true"
    times = [g for g in TIME_GROUPS if g in groups]
    if not hidden:
        if "TYPE" not in groups and "TYPE" not in constants:
            raise UsageError(f"{where} has no TYPE group (e.g. (?<TYPE>\\w+))")
        if len(times) > 1:
            raise UsageError(f"{where} has several time groups: {times}")
        if times and times[0] in ("VTIME", "DATETIME"):
            raise UsageError(f"{where}: {times[0]} (partial order/dates) is not supported")
    return LineRegex(
        source,
        pattern,
        constants,
        pre_inc,
        post_inc,
        hidden,
        times[0] if times and not hidden else None,
        tokens,
    )


#: Most digits of a time :func:`_parse_time` takes without its regexes, per kind: TIME
#: (31 bits) and LTIME (63 bits) stay in range, a decimal stays finite.
_FAST_DIGITS = {"TIME": 9, "LTIME": 18, "DTIME": 300, "FTIME": 300}
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")


def _fast_time(kind: str) -> Callable[[str], bool]:
    """For times of ``kind`` (a key of ``_FAST_DIGITS``): is a time text the common case,
    plain ASCII digits that fit and print as written (an integer without a leading zero;
    a decimal always), whose value is ``float(text)`` and printed text ``text``?"""
    digits = _FAST_DIGITS[kind]
    decimal = kind in ("DTIME", "FTIME")

    def fast(text: str) -> bool:
        return (
            text.isdigit()
            and text.isascii()
            and len(text) <= digits
            and (decimal or text[0] != "0" or text == "0")
        )

    return fast


_FAST_TIME = {kind: _fast_time(kind) for kind in _FAST_DIGITS}


def _parse_time(kind: str | None, text: str | None, line_no: int) -> tuple[float, str]:
    """The time of one event (value, text as Synoptic prints it); ``ValueError`` if bad."""
    if kind is None:
        return float(line_no), str(line_no)
    if text is None:
        raise ValueError("no time")
    fast = _FAST_TIME.get(kind)
    if fast is not None and fast(text):  # without the regexes below
        return float(text), text
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
    number = float(text)
    if not math.isfinite(number):
        raise ValueError("not finite")
    return number, _decimal_text(text)


def _decimal_text(text: str) -> str:
    """Java ``BigDecimal.toString`` of a decimal text: plain text kept, exponents kept."""
    if _PLAIN_DECIMAL.fullmatch(text):
        return text.lstrip("+")
    return str(Decimal(text)).replace("e", "E")


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
    events = read_regex_arrays(
        paths, regexes, separator, mapping, ignore_nonmatching, time_scale, encoding
    )
    # seconds with time_scale; without it the log's own unit, which may be as fine as ns
    # (Synoptic's engine, which reads the arrays, keeps Synoptic's own ranges)
    limit = MAX_TIME_S if time_scale != 1.0 else MAX_TIME_UNITS
    bad = first_implausible(events.times, limit)
    if bad is not None:
        where = events.paths[int(events.files[bad])]
        problem = time_problem(float(events.times[bad]), limit)
        raise InputError(where, int(events.lines[bad]), str(problem))
    return events.to_traceset()


def read_regex_arrays(
    paths: Sequence[str | os.PathLike] | str | os.PathLike,
    regexes: Sequence[str] | str | None = None,
    separator: str | None = None,
    mapping: str | None = None,
    ignore_nonmatching: bool = False,
    time_scale: float = 1.0,
    encoding: str = "utf-8",
) -> RegexEvents:
    """:func:`read_regex` without building the pandas TraceSet: the parsed events as
    sorted numpy arrays (what the Synoptic engine reads; faster on huge logs)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if isinstance(regexes, str):
        regexes = [regexes]
    compiled = [compile_regex(r) for r in (regexes or [DEFAULT_REGEX])]
    if separator is not None:
        compiled.insert(0, compile_regex(separator, "-s", "(?<SEPCOUNT++>)(?<HIDE=>true)"))
    mapping = DEFAULT_MAPPING if mapping is None else _check_mapping(mapping, compiled)
    if separator is not None:
        mapping = mapping + r"\k<SEPCOUNT>"
    kinds = {r.time_group for r in compiled if not r.hidden}
    if len(kinds) > 1:
        raise UsageError(f"the regexes use different time kinds: {sorted(map(str, kinds))}")
    time_kind = kinds.pop() if kinds else None
    by_file = mapping == DEFAULT_MAPPING or (
        separator is not None and mapping == DEFAULT_MAPPING + r"\k<SEPCOUNT>"
    )

    acc = _Accumulator()
    template = _split_template(mapping)
    for path in map(Path, paths):
        stat_input(path)  # a pipe or device would block or never end; a folder fails below
    arrow = _input_bytes(paths) > SMALL_INPUT_BYTES
    for path in map(Path, paths):
        events = _read_file(
            path, compiled, template, time_kind, by_file, ignore_nonmatching, encoding, arrow
        )
        acc.add(events, name_text(str(path)))
    if not acc.n_events:
        raise InputError(
            ", ".join(str(p) for p in paths) or None,
            None,
            "no events parsed (empty input, or every line hidden/ignored)",
        )
    return acc.sorted_events(time_scale)


def _input_bytes(paths: Sequence[str | os.PathLike]) -> int:
    """Total size of the files in bytes (a file that cannot be sized counts as large: the
    read reports it)."""
    total = 0
    for path in paths:
        try:
            total += os.stat(path).st_size
        except OSError:
            return SMALL_INPUT_BYTES + 1
    return total


def _check_mapping(mapping: str, compiled: list[LineRegex]) -> str:
    r"""``mapping`` when every ``\k<name>`` in it is ``FILE`` or a group, constant or
    counter some regex defines; else :class:`UsageError` naming ``-m`` and the name (a
    misspelt name would otherwise put every event in one trace, silently)."""
    known = {"FILE"}
    for r in compiled:
        known |= set(r.pattern.groupindex) | set(r.constants) | set(r.pre_inc) | set(r.post_inc)
    for name in _SUBST_REF.findall(mapping):
        if name not in known:
            raise UsageError(
                f"-m '{mapping}': \\k<{name}> names no group, constant or "
                "counter of the regexes (-r, -s), nor FILE"
            )
    return mapping


def _split_template(template: str) -> list[tuple[str, str | None]]:
    r"""A mapping as (literal, group name or None) parts: ``\k<a>-x`` -> [("", "a"), ("-x", None)]."""
    parts: list[tuple[str, str | None]] = []
    pos = 0
    for m in _SUBST_REF.finditer(template):
        parts.append((template[pos : m.start()], m.group(1)))
        pos = m.end()
    parts.append((template[pos:], None))
    return parts


@dataclass
class _FileEvents:
    """One file's events in line order: ``trace_key`` / ``type_key`` (int64 indices into
    ``names``, the filled-in mappings, and ``types``), ``lines`` (int64, 1-based),
    ``times`` (float64, the log's unit) and ``texts`` (a pyarrow string array, or a numpy
    object array for small inputs: the time as Synoptic prints it)."""

    trace_key: np.ndarray
    names: list[str]
    type_key: np.ndarray
    types: list[str]
    lines: np.ndarray
    times: np.ndarray
    texts: pa.LargeStringArray | np.ndarray


@dataclass
class _Accumulator:
    """Parsed files as chunks of parallel arrays, with the traces and types seen so far."""

    chunks: list[dict[str, Any]] = field(default_factory=list)  # arrays, numpy or pyarrow
    trace_ids: dict[str, int] = field(default_factory=dict)
    partitions: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    type_ids: dict[str, int] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)  # one per chunk: chunk k is file k

    @property
    def n_events(self) -> int:
        return sum(len(c["line"]) for c in self.chunks)

    def add(self, ev: _FileEvents, source: str) -> None:
        """Append one file's events; its new traces get ids in order of first appearance
        (a name seen in an earlier file joins that trace)."""
        base = len(self.trace_ids)
        ids = [self.trace_ids.setdefault(name, len(self.trace_ids)) for name in ev.names]
        new = [name for name, i in zip(ev.names, ids) if i >= base]
        self.partitions += new
        self.sources += [source] * len(new)
        self.paths.append(source)
        types = [self.type_ids.setdefault(t, len(self.type_ids)) for t in ev.types]
        self.chunks.append(
            {
                "trace": np.asarray(ids, dtype=np.int64)[ev.trace_key],
                "type": np.asarray(types, dtype=np.int64)[ev.type_key],
                "line": ev.lines,
                "time": ev.times,
                "text": ev.texts,
            }
        )

    def sorted_events(self, time_scale: float) -> RegexEvents:
        """All events, each trace ordered by time (stable: ties keep line order); type
        codes renumbered in order of first appearance in that order."""
        cat = {
            k: _end_to_end([c[k] for c in self.chunks]) for k in ("trace", "type", "line", "time")
        }
        texts = _concat([c["text"] for c in self.chunks])
        small = np.min_scalar_type(max(len(self.chunks) - 1, 0))  # 1 byte up to 256 files
        sizes = [len(c["line"]) for c in self.chunks]
        cat["file"] = np.repeat(np.arange(len(self.chunks), dtype=small), sizes)
        trace, times = cat["trace"], cat["time"]
        if not _sorted_by_trace_and_time(trace, times):
            order = np.lexsort((np.arange(len(trace)), times, trace))
            cat = {k: v[order] for k, v in cat.items()}
            texts = _take(texts, order)
        codes, first_types = first_seen_codes(cat["type"])
        names = list(self.type_ids)
        return RegexEvents(
            cat["trace"],
            codes,
            [names[t] for t in first_types],
            cat["time"] * time_scale,
            cat["line"],
            texts,
            self.partitions,
            self.sources,
            cat["file"],
            self.paths,
        )


def first_seen_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, uniques)``: int64 codes numbering the distinct values in order of first
    appearance, and those values in that order (``uniques[codes] == values``), as
    ``pandas.factorize(values, sort=False)`` gives (without importing pandas).

    >>> codes, uniques = first_seen_codes(np.array(["b", "a", "b", "c"], dtype=object))
    >>> codes.tolist(), uniques.tolist()
    ([0, 1, 0, 2], ['b', 'a', 'c'])

    Integers in the two orders the reader makes are coded in O(n), without a sort:
    non-decreasing (separator counts: each run of equal values one code) and already
    first-seen codes (each value at most one more than every value before it).

    >>> [c.tolist() for c in first_seen_codes(np.array([3, 3, 5, 9, 9]))]
    [[0, 0, 1, 2, 2], [3, 5, 9]]
    >>> [c.tolist() for c in first_seen_codes(np.array([0, 1, 0, 2, 1]))]
    [[0, 1, 0, 2, 1], [0, 1, 2]]
    """
    if values.dtype.kind in "iu" and len(values):
        new = np.empty(len(values), dtype=bool)
        new[0] = True
        np.not_equal(values[1:], values[:-1], out=new[1:])
        if bool(np.all(values[1:] >= values[:-1])):  # sorted: a code per run
            return np.cumsum(new, dtype=np.int64) - 1, values[new]
        top = np.maximum.accumulate(values)
        first_seen = values[0] == 0 and bool(np.all(values[1:] <= top[:-1] + 1))
        if first_seen and bool(np.all(values >= 0)):  # already first-seen codes
            return values.astype(np.int64), np.arange(int(top[-1]) + 1, dtype=values.dtype)
    uniq, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq))
    return rank[inverse.reshape(-1)], uniq[order]


#: Inputs up to this many bytes in all are read without Arrow, by the line loop, with
#: strings in numpy object arrays: Arrow's first array conversion imports pandas (about
#: 0.2 s), longer than the line loop takes on such a log (~1.6 us a line).
SMALL_INPUT_BYTES = 1 << 20


def _is_arrow(column: Any) -> bool:
    """Is a string column a pyarrow array (else a numpy object array)?"""
    return not isinstance(column, np.ndarray)


def _strings(values: list[str], arrow: bool) -> Any:
    """A string column: a pyarrow large_string array or a numpy object array."""
    if not arrow:
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out
    import pyarrow as pa

    return pa.array(values, pa.large_string())


def _object_array(column: Any) -> np.ndarray:
    """A string column as a numpy object array."""
    if isinstance(column, np.ndarray):
        return column
    return column.to_numpy(zero_copy_only=False)


def _int_texts(numbers: np.ndarray, arrow: bool) -> Any:
    """The decimal texts of integers, as a string column."""
    if not arrow:
        return _strings([str(k) for k in numbers.tolist()], False)
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.cast(pa.array(numbers), pa.large_string())


def _end_to_end(arrays: list[np.ndarray]) -> np.ndarray:
    """``np.concatenate(arrays)``, or the one array itself (not copied: a copy of the
    1e5-event benchmark's four columns cost about 1.4 ms of CPU)."""
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def _concat(columns: list) -> Any:
    """String columns (all pyarrow or all numpy) end to end."""
    if not _is_arrow(columns[0]):
        return _end_to_end(columns)
    import pyarrow as pa

    if len(columns) == 1:
        return columns[0]
    return pa.concat_arrays([c.cast(pa.large_string()) for c in columns])


def _take(column: Any, index: np.ndarray) -> Any:
    """A string column's values at ``index``."""
    if not _is_arrow(column):
        return column[index]
    import pyarrow as pa

    return column.take(pa.array(index))


def _encode(column: Any) -> tuple[np.ndarray, list[str]]:
    """``(codes, names)``: int64 codes of a string column's values numbered in order of
    first appearance, and the values in that order."""
    if not _is_arrow(column):  # small inputs: a dict beats sorting strings
        ids: dict[str, int] = {}
        codes = [ids.setdefault(value, len(ids)) for value in column.tolist()]
        return np.asarray(codes, dtype=np.int64), list(ids)
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(column)
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), (
        encoded.dictionary.to_pylist()
    )


def _join(parts: list) -> Any:
    """Row-wise concatenation of string columns and literal str (at least one column)."""
    if not any(_is_arrow(p) for p in parts if not isinstance(p, str)):
        out = parts[0]
        for part in parts[1:]:
            out = out + part  # object arrays: element-wise str concatenation
        return out
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.binary_join_element_wise(
        *[
            pa.scalar(a, pa.large_string()) if isinstance(a, str) else a.cast(pa.large_string())
            for a in parts
        ],
        pa.scalar("", pa.large_string()),
    )


def _sorted_by_trace_and_time(trace: np.ndarray, times: np.ndarray) -> bool:
    """Are the events already ordered by trace id, then time (no sort needed)?  Element-wise
    masks only (selecting the same-trace times first copied them: ~0.9 ms a call on 1e5
    events against ~0.1 ms)."""
    if not np.all(trace[1:] >= trace[:-1]):
        return False
    behind = ~(times[1:] >= times[:-1])  # below the time before it (or NaN beside it)
    behind &= trace[1:] == trace[:-1]
    return not behind.any()


@dataclass(frozen=True)
class RegexEvents:
    """Parsed events sorted by trace id then time: ``trace`` (int64 Synoptic trace id),
    ``type_codes`` (int64 index into ``type_names``, numbered in order of first
    appearance), ``times`` (float64, seconds after ``time_scale``), ``lines`` (int64,
    1-based), ``time_text`` (the time as Synoptic prints it: a pyarrow string array, or a
    numpy object array for inputs up to ``SMALL_INPUT_BYTES``); per
    trace id: ``partitions`` (the filled-in mapping) and ``sources`` (file of its first
    event); per event ``files`` (unsigned index into ``paths``, the files in reading
    order: with ``lines`` it names an event's place even when ``-m`` joins files)."""

    trace: np.ndarray
    type_codes: np.ndarray
    type_names: list[str]
    times: np.ndarray
    lines: np.ndarray
    time_text: pa.LargeStringArray | np.ndarray
    partitions: list[str]
    sources: list[str]
    files: np.ndarray
    paths: list[str]

    @property
    def types(self) -> np.ndarray:
        """The event type of every event (object array)."""
        return np.asarray(self.type_names, dtype=object)[self.type_codes]

    def to_traceset(self) -> TraceSet:
        """The events as a :class:`TraceSet` (see the module docstring for its columns)."""
        import pandas as pd

        from ..traces import TraceSet, categorical

        ids = [str(i) for i in range(len(self.partitions))]
        ev = pd.DataFrame(
            {
                "trace": categorical(self.trace, ids),  # codes, not text (traces.py)
                "synoptic_trace": self.trace,
                "time": self.times,
                "state": categorical(self.type_codes, self.type_names),
                "line": self.lines,
                "synoptic_time": _object_array(self.time_text),
            }
        )
        traces = pd.DataFrame(
            {
                "trace": ids,
                "source": self.sources,
                "partition": self.partitions,
            }
        )
        return TraceSet.from_events(ev, traces, {"format": "synoptic-regex"})


def _type_problem(etype: str) -> bool:
    """Would this event type clash with the synthetic nodes or break the model files?"""
    return etype in RESERVED_TYPES or bool(_CONTROL.search(etype))


def _type_error(path: Path, line_no: int, etype: str) -> InputError:
    """The error for a type :func:`_type_problem` refuses."""
    return InputError(
        path,
        line_no,
        f"event type {etype!r} is reserved for Synoptic's "
        "synthetic nodes or has control characters (it would break the "
        "model files); change the TYPE group",
    )


def _raise_nonmatching(path: Path, bad: list[tuple[int, str]]) -> None:
    """InputError listing the first few lines no regex matched (if any)."""
    if bad:
        listed = "; ".join(f"line {n}: {text[:80]!r}" for n, text in bad[:MAX_LISTED_LINES])
        more = " (and maybe more)" if len(bad) >= MAX_LISTED_LINES else ""
        raise InputError(
            path,
            bad[0][0],
            f"lines match none of the regexes{more}: {listed} "
            f"(use -i to ignore non-matching lines)",
        )


def _vectorizable(r: LineRegex) -> bool:
    """Can :func:`_scan_vectorized` run this regex: a plain one (no constants or
    counters), or a hidden one whose only constant is HIDE and only counter SEPCOUNT (the
    separator)? Other regexes carry state from line to line (counters): the line loop."""
    if not r.hidden:
        return not (r.constants or r.pre_inc or r.post_inc)
    return set(r.constants) == {"HIDE"} and not r.pre_inc and r.post_inc in ([], ["SEPCOUNT"])


def _read_file(
    path: Path,
    compiled: list[LineRegex],
    template: list[tuple[str, str | None]],
    time_kind: str | None,
    by_file: bool,
    ignore: bool,
    encoding: str,
    arrow: bool = True,
) -> _FileEvents:
    """Parse one file: its lines in blocks of about ``BLOCK_CHARS`` characters, each
    scanned by :func:`_scan_loop` (the reference: Synoptic's rules line by line) or, where
    the regexes allow and it does not decline, by :func:`_scan_vectorized` (the same
    result, faster; tests/test_regex_differential.py compares them); then one way from
    scans to events and errors for both. Blocks are scanned on ``WORKERS`` threads (Arrow
    releases the GIL) when no counter carries state from block to block.  Without
    ``arrow`` the line loop scans every block and strings stay numpy object arrays
    (no pyarrow import: small inputs, see ``SMALL_INPUT_BYTES``)."""
    vectorized = arrow and all(_vectorizable(r) for r in compiled)
    has_sep = any(r.post_inc for r in compiled) and vectorized
    file_name = str(path.resolve())
    pieces = _name_pieces(template, compiled, by_file, has_sep, file_name, vectorized)
    needed = (
        {"TYPE"}
        | ({time_kind} if time_kind else set())
        | {p[1] for p in pieces if isinstance(p, tuple)}
    )
    counters = {name: 0 for r in compiled for name in r.pre_inc + r.post_inc}
    patterns = [r.pattern.pattern for r in compiled]

    def scan_block(text: str) -> _Scan:
        found = None
        if vectorized:
            import pyarrow as pa

            try:
                found = _scan_vectorized(
                    _arrow_lines(text), compiled, patterns, time_kind, ignore, needed
                )
            except pa.ArrowInvalid:  # Arrow's RE2 refuses a pattern: the line loop runs it
                found = None
        if found is None:
            found = _scan_loop(
                _text_lines(text),
                compiled,
                time_kind,
                ignore,
                needed,
                counters,
                arrow,
                _plain_text(text),
            )
        return found

    blocks: list[_Block] = []
    unmatched: list[tuple[int, str]] = []  # (line number, text) of the first few
    first_line, seps_before = 0, 0
    try:
        with open(path, encoding=encoding, errors="replace", newline=None) as fh:
            texts = _text_blocks(fh, BLOCK_CHARS)
            for scan in ordered_map(scan_block, texts, WORKERS if vectorized else 1):
                if not ignore:
                    unmatched += [(first_line + i + 1, t) for i, t in scan.unmatched]
                _raise_first_error(path, unmatched, scan.errors, first_line, time_kind)
                if scan.parts:
                    blocks.append(
                        _block_events(scan, pieces, time_kind, first_line, seps_before, arrow)
                    )
                first_line += len(scan.sep_line)
                seps_before += int(scan.sep_line.sum())
    except OSError as exc:  # InputError is no OSError: only reading errors land here
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    _raise_nonmatching(path, unmatched)
    return _merge_blocks(blocks, pieces, arrow)


def _scan_loop(
    lines: list[str],
    compiled: list[LineRegex],
    time_kind: str | None,
    ignore: bool,
    needed: set[str],
    counters: dict[str, int],
    arrow: bool = True,
    plain_text: bool = False,
) -> _Scan:
    """The regexes tried on each line in order, the first that matches taking it (as
    Synoptic's parser does): what they make of a block of lines (see :class:`_Scan`).

    A hidden line (HIDE) gives no event; counters (``counters``, carried from block to
    block) are incremented before (``++NAME``) or after (``NAME++``) a line that matches;
    a constant is filled in from the line's groups and counters. TYPE defaults to the
    whole line. A time that does not parse stops the parse, or with ``ignore`` lets the
    next regex try the line. ``needed`` groups are kept per event ('' when unset; a
    mapping's counters and constants too, when the regexes have any).  Strings come
    out as pyarrow arrays, or numpy object arrays without ``arrow``; ``plain_text``: every
    line passes :func:`_plain_text` (the matchers skip that test per line)."""
    n = len(lines)
    sep_line = np.zeros(n, dtype=bool)
    unmatched: list[tuple[int, str]] = []
    errors: list[tuple[int, int, str | None]] = []
    hits: list[list] = [[[], {g: [] for g in needed}, [], []] for _ in compiled]
    # per regex: (regex, matcher, plain, its hits, its group columns with their source)
    rules = []
    for r, hit in zip(compiled, hits):
        is_plain = not (r.constants or r.pre_inc or r.post_inc)
        columns = [(g, col, _column_source(g, is_plain, counters)) for g, col in hit[1].items()]
        rules.append((r, _line_matcher(r, plain_text), is_plain, hit, columns))
    fast_time = _FAST_TIME.get(time_kind or "")
    refused: dict[str, bool] = {}  # type -> _type_problem(type), asked once per type
    for i, line in enumerate(lines):
        if len(line) > MAX_LINE_CHARS:
            if len(unmatched) < MAX_LISTED_LINES:
                unmatched.append((i, f"<line of {len(line)} characters: too long>"))
            continue
        for r, matcher, is_plain, (idx, _, times, texts), columns in rules:
            m = matcher(line)
            if m is None:
                continue
            values = m if is_plain else _apply_extras(r, m, counters)
            if values is None:  # hidden
                sep_line[i] = "SEPCOUNT" in r.post_inc
                break
            etype = values.get("TYPE")
            etype = line if etype is None else etype
            bad_type = refused.get(etype)
            if bad_type is None:
                bad_type = refused[etype] = _type_problem(etype)
            if bad_type:
                errors.append((i, 0, etype))
                break
            tval = values.get(time_kind) if time_kind else None
            if tval is not None and fast_time is not None and fast_time(tval):
                t, t_text = float(tval), tval
            else:
                try:
                    t, t_text = _parse_time(time_kind, tval, i + 1)
                except ValueError:
                    if ignore:
                        continue
                    errors.append((i, 1, tval))
                    break
            if not is_plain:
                for name in r.post_inc:
                    counters[name] += 1
            idx.append(i)
            for g, column, source in columns:  # '' when unset
                if source == _FROM_TYPE:
                    column.append(etype)
                elif source == _FROM_MATCH:
                    column.append(m.get(g) or "")
                elif source == _FROM_COUNTER:
                    column.append(str(counters[g]))
                else:
                    column.append(values.get(g) or "")
            times.append(t)
            texts.append(t_text)
            break
        else:
            if len(unmatched) < MAX_LISTED_LINES:
                unmatched.append((i, line))
        if errors:
            break
    parts = []
    for idx, groups, times, texts in hits:
        if idx:
            parts.append(
                (
                    np.asarray(idx, dtype=np.int64),
                    {g: _strings(v, arrow) for g, v in groups.items()},
                    (np.asarray(times, dtype=np.float64), _strings(texts, arrow))
                    if time_kind
                    else None,
                )
            )
    return _Scan(parts, sep_line, unmatched, errors)


#: ASCII characters Python's ``str.split()`` takes as whitespace and Java's ``\s`` does not.
_PY_ONLY_SPACE = re.compile("[\x1c-\x1f]")


def _plain_text(text: str) -> bool:
    r"""Is ``text`` ASCII without the characters Python's ``str.split()`` takes as
    whitespace and Java's ``\s`` does not (where a whitespace split answers as RE2)?

    >>> _plain_text("1 a\n2 b"), _plain_text("1\x1fa"), _plain_text("é a")
    (True, False, False)
    """
    return text.isascii() and _PY_ONLY_SPACE.search(text) is None


def _line_matcher(
    r: LineRegex, plain_text: bool = False
) -> Callable[[str], dict[str, str | None] | None]:
    r"""``r.pattern.fullmatch`` for the line loop, without RE2 where the regex allows: a
    plain literal line without groups (``^--$``) is a string comparison, a regex made only
    of empty groups (``^(?<DTIME>)(?<TYPE>)$``) a whitespace split of lines that pass
    :func:`_plain_text` (Java's ``\s`` is ASCII; other lines go to RE2), tested per line
    unless ``plain_text`` says every line passes.  Same answers (the reader's differential
    tests)."""
    literal = _literal_line(r.pattern.pattern)
    if literal is not None and not r.pattern.groupindex:
        return lambda line: {} if line == literal else None
    tokens = r.tokens
    if tokens is None or set(r.pattern.groupindex) != set(tokens):
        return r.pattern.fullmatch
    full = r.pattern.fullmatch
    n = len(tokens)

    def split(line: str) -> dict[str, str | None] | None:
        if not _plain_text(line):
            return full(line)
        parts = line.split()
        return dict(zip(tokens, parts)) if len(parts) == n else None

    def split_plain(line: str) -> dict[str, str | None] | None:
        parts = line.split()
        return dict(zip(tokens, parts)) if len(parts) == n else None

    return split_plain if plain_text else split


def _name_pieces(
    template: list[tuple[str, str | None]],
    compiled: list[LineRegex],
    by_file: bool,
    has_sep: bool,
    file_name: str,
    vectorized: bool,
) -> list:
    """The mapping as pieces: a str (literal, the file name, or '' for a reference that
    is neither a counter nor a group), None (the separator count) or ("group", name): a
    value each scan keeps per event (:func:`_value`). Where regexes have counters or
    constants (not ``vectorized``) every reference but the file is such a value."""
    groups = {g for r in compiled if not r.hidden for g in r.pattern.groupindex}
    pieces: list = []
    for lit, ref in template:
        pieces.append(lit)
        if ref is None:
            continue
        if ref == "FILE" and by_file:
            pieces.append(file_name)
        elif ref == "SEPCOUNT" and has_sep:
            pieces.append(None)
        elif ref in groups or not vectorized:
            pieces.append(("group", ref))
        else:
            pieces.append("")
    return pieces


#: Lines are scanned in blocks of about this many characters (bounded memory per block).
BLOCK_CHARS = 1 << 21
#: Threads scanning blocks (Arrow's kernels release the GIL).
WORKERS = min(2, os.cpu_count() or 1)


def _text_blocks(fh: TextIO, size: int) -> Iterator[str]:
    r"""The text of an open file (universal newlines) in blocks of whole lines, about
    ``size`` characters each (a longer line is one block); every block but the last ends
    with a newline.

    >>> import io
    >>> list(_text_blocks(io.StringIO("ab\ncd\nef"), 4))
    ['ab\n', 'cd\n', 'ef']
    """
    carry = ""
    while True:
        chunk = fh.read(size)
        if not chunk:
            if carry:
                yield carry
            return
        text = carry + chunk
        end = text.rfind("\n") + 1
        if end == 0:
            carry = text  # no line end yet: read on
            continue
        carry = text[end:]
        yield text[:end]


def _text_lines(text: str) -> list[str]:
    r"""The lines of a block of text, without their ends (as :func:`_arrow_lines`).

    >>> _text_lines("a\n\nb\n"), _text_lines("")
    (['a', '', 'b'], [])
    """
    if not text:
        return []
    return (text.removesuffix("\n")).split("\n")


def _arrow_lines(text: str) -> pa.LargeStringArray:
    """The lines of a file's text (universal newlines already applied) as a pyarrow
    large_string array, without the line ends."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not text:
        return pa.array([], pa.large_string())
    text = text.removesuffix("\n")
    return pc.split_pattern(pa.array([text], type=pa.large_string()), "\n").flatten()


@dataclass
class _Scan:
    """What the regexes made of a block of lines: ``parts`` (per plain regex that matched:
    line indices, the groups needed, and the times as (values, texts)), ``sep_line``
    (bool per line: a separator), ``unmatched`` ((index, text) of the first few lines no
    regex took; a too long line's text says so), ``errors`` ((line index, priority, text)
    of lines that stop the parse: a reserved type (priority 0) or, without -i, a bad time
    (1); the text is the type's or the time's)."""

    parts: list[tuple[np.ndarray, dict, tuple | None]]
    sep_line: np.ndarray
    unmatched: list[tuple[int, str]]
    errors: list[tuple[int, int, str | None]]


def _scan_vectorized(
    lines: pa.LargeStringArray,
    compiled: list[LineRegex],
    patterns: list[str],
    time_kind: str | None,
    ignore: bool,
    needed: set[str],
) -> _Scan | None:
    """:func:`_scan_loop` vectorized (Arrow's RE2 kernels, a regex at a time on the lines
    not yet taken) for plain regexes and the separator (:func:`_vectorizable`); None
    (declined: the line loop scans the block) when a needed group captured an empty
    string (Arrow cannot tell it from a group that did not take part) or Arrow's RE2
    refuses a pattern."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(lines)
    too_long = pc.binary_length(lines).to_numpy(zero_copy_only=False) > MAX_LINE_CHARS
    if too_long.any():
        too_long &= pc.utf8_length(lines).to_numpy(zero_copy_only=False) > MAX_LINE_CHARS
    done = too_long.copy()
    sep_line = np.zeros(n, dtype=bool)
    parts: list[tuple[np.ndarray, dict, tuple | None]] = []
    errors: list[tuple[int, int, str | None]] = []
    for r, pattern in zip(compiled, patterns):
        if r.hidden:
            literal = _literal_line(pattern)
            ok = (
                pc.equal(lines, literal)
                if literal is not None
                else pc.match_substring_regex(lines, f"^(?:{pattern})$")
            ).to_numpy(zero_copy_only=False) & ~done
            done |= ok
            if r.post_inc:
                sep_line |= ok
            continue
        idx, groups = _match(lines, r, pattern, ~done, needed)
        if not idx.size:
            continue
        if not r.tokens:
            for g in needed & set(groups):
                if pc.any(pc.equal(groups[g], "")).as_py():
                    return None
        etype = groups["TYPE"] if "TYPE" in groups else lines.take(pa.array(idx))
        encoded = pc.dictionary_encode(etype)
        bad = [k for k, t in enumerate(encoded.dictionary.to_pylist()) if _type_problem(t)]
        if bad:
            k = int(np.argmax(np.isin(encoded.indices.to_numpy(zero_copy_only=False), bad)))
            errors.append((int(idx[k]), 0, etype[k].as_py()))
        groups["TYPE"] = etype
        when = None
        if time_kind:
            good, values, texts = _arrow_times(time_kind, groups[time_kind])
            if not good.all():
                if not ignore:
                    k = int(np.argmin(good))
                    errors.append((int(idx[k]), 1, groups[time_kind][k].as_py()))
                    done[idx[~good]] = True
                keep = pa.array(np.nonzero(good)[0])
                idx = idx[good]
                groups = {g: v.take(keep) for g, v in groups.items()}
            when = (values, texts)
        done[idx] = True
        parts.append((idx, groups, when))
    unmatched = []
    for i in map(int, np.nonzero(~done | too_long)[0][:MAX_LISTED_LINES]):
        line = lines[i].as_py()
        unmatched.append(
            (i, f"<line of {len(line)} characters: too long>" if too_long[i] else line)
        )
    return _Scan(parts, sep_line, unmatched, errors)


_LITERAL_LINE = re.compile(r"\^?([^.^$*+?{}\[\]\\|()]*)\$?")


def _literal_line(pattern: str) -> str | None:
    """The line a pattern matches when it is a plain literal (``^--$``), else None.

    >>> _literal_line("^--$"), _literal_line("^-+$")
    ('--', None)
    """
    m = _LITERAL_LINE.fullmatch(pattern)
    return m.group(1) if m else None


def _match(
    lines: pa.LargeStringArray, r: LineRegex, pattern: str, open_: np.ndarray, needed: set[str]
) -> tuple[np.ndarray, dict]:
    """Indices of the open lines ``r`` matches, and its needed groups' values there."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(lines)
    subset = None
    if open_.sum() < n // 2:  # few lines left: match only those
        subset = np.nonzero(open_)[0]
        lines = lines.take(pa.array(subset))
        open_ = np.ones(len(subset), dtype=bool)
    if r.tokens:
        trimmed = pc.ascii_trim_whitespace(lines)
        split = pc.ascii_split_whitespace(trimmed)
        ok = pc.list_value_length(split).to_numpy(zero_copy_only=False) == len(r.tokens)
        ok &= pc.binary_length(trimmed).to_numpy(zero_copy_only=False) > 0
        ok &= open_
        idx = np.nonzero(ok)[0]
        first = split.offsets.to_numpy(zero_copy_only=False)[idx]
        groups = {
            name: split.values.take(pa.array(first + k))
            for k, name in enumerate(r.tokens)
            if name in needed
        }
    else:
        found = pc.extract_regex(lines, f"^(?:{pattern})$")  # null where no match
        ok = found.is_valid().to_numpy(zero_copy_only=False) & open_
        idx = np.nonzero(ok)[0]
        keep = pa.array(ok)
        groups = {f.name: found.field(f.name).filter(keep) for f in found.type if f.name in needed}
    return (idx if subset is None else subset[idx]), groups


def _raise_first_error(
    path: Path,
    unmatched: list[tuple[int, str]],
    errors: list[tuple[int, int, str | None]],
    first_line: int,
    time_kind: str | None,
) -> None:
    """Raise what the line loop would, given the first few lines so far that matched
    nothing (line numbers) and a block's ``errors`` (indices from ``first_line``): the
    first line with a reserved type or a bad time, unless ``MAX_LISTED_LINES`` lines
    matching nothing come before it (then those are listed)."""
    if errors:
        at, kind, text = min(errors)
        line_no = first_line + at + 1
        if len(unmatched) < MAX_LISTED_LINES or line_no < unmatched[MAX_LISTED_LINES - 1][0]:
            if kind == 0:  # a reserved type: its text is the type
                raise _type_error(path, line_no, str(text))
            raise InputError(
                path,
                line_no,
                f"cannot parse the {time_kind} time {text!r} (use -i to skip such lines)",
            )
    if len(unmatched) >= MAX_LISTED_LINES:
        _raise_nonmatching(path, unmatched[:MAX_LISTED_LINES])


@dataclass
class _Block:
    """A block's events in line order: ``lines`` (int64, 1-based), ``type_key`` (int64
    index into ``types``), ``times`` (float64), ``texts`` (pyarrow strings: the time as
    Synoptic prints it) and ``trace``: the separator count (int64) when the trace name
    depends on nothing else, else the trace names (pyarrow strings or a numpy object
    array)."""

    lines: np.ndarray
    type_key: np.ndarray
    types: list[str]
    times: np.ndarray
    texts: pa.LargeStringArray | np.ndarray
    trace: np.ndarray | pa.LargeStringArray


def _block_events(
    scan: _Scan,
    pieces: list,
    time_kind: str | None,
    first_line: int,
    seps_before: int,
    arrow: bool = True,
) -> _Block:
    """A block's events from its scan (line ``first_line`` of the file is its first,
    ``seps_before`` separators came before it): the regexes' parts merged in line order,
    the types coded, the trace name (the mapping filled in) or its separator count.
    String columns are pyarrow arrays, or numpy object arrays without ``arrow``."""
    if len(scan.parts) == 1:
        idx, order = scan.parts[0][0], None
    else:
        idx = np.concatenate([p[0] for p in scan.parts])
        order = np.argsort(idx, kind="stable")
        idx = idx[order]
    line_no = idx + (first_line + 1)

    def column(get):
        """One value per event from each part's arrays, in line order."""
        if order is None:
            return get(scan.parts[0])
        return _take(_concat([get(p) for p in scan.parts]), order)

    type_key, types = _encode(column(lambda p: p[1]["TYPE"]))
    if time_kind:
        # with a time group every part has its times (values, texts)
        times = np.concatenate([p[2][0] for p in scan.parts if p[2] is not None])
        times = times if order is None else times[order]
        texts = column(lambda p: p[2][1])
    else:
        times = line_no.astype(np.float64)
        texts = _int_texts(line_no, arrow)
    trace = (np.cumsum(scan.sep_line) - scan.sep_line + seps_before)[idx]
    if any(isinstance(p, tuple) for p in pieces):
        count_text = _int_texts(trace, arrow)
        trace = _join(
            [
                count_text
                if p is None
                else column(
                    lambda part, g=p[1]: (
                        part[1][g] if g in part[1] else _strings([""] * len(part[0]), arrow)
                    )
                )
                if isinstance(p, tuple)
                else p
                for p in pieces
            ]
        )
    return _Block(line_no, type_key, types, times, texts, trace)


def _merge_blocks(blocks: list[_Block], pieces: list, arrow: bool = True) -> _FileEvents:
    """A file's events from its blocks: types and trace names coded once for the file."""
    if not blocks:
        empty = np.zeros(0, dtype=np.int64)
        return _FileEvents(empty, [], empty, [], empty, np.zeros(0), _strings([], arrow))
    type_ids: dict[str, int] = {}
    type_key = np.concatenate(
        [
            np.array([type_ids.setdefault(t, len(type_ids)) for t in b.types], dtype=np.int64)[
                b.type_key
            ]
            for b in blocks
        ]
    )
    names: list[str]
    trace = blocks[0].trace
    if isinstance(trace, np.ndarray) and trace.dtype.kind in "iu":  # separator counts
        trace_key, counts = first_seen_codes(np.concatenate([b.trace for b in blocks]))
        names = _fill_counts(pieces, counts.tolist())
    else:
        trace_key, names = _encode(_concat([b.trace for b in blocks]))
    return _FileEvents(
        np.asarray(trace_key, dtype=np.int64),
        names,
        type_key,
        list(type_ids),
        np.concatenate([b.lines for b in blocks]),
        np.concatenate([b.times for b in blocks]),
        _concat([b.texts for b in blocks]),
    )


def _fill_counts(pieces: list, counts: list[int]) -> list[str]:
    """The mapping filled in for each separator count (``pieces`` has no groups).

    >>> _fill_counts(["/a.log", None, ""], [0, 1])
    ['/a.log0', '/a.log1']
    """
    if pieces.count(None) == 1:
        k = pieces.index(None)
        head, tail = "".join(pieces[:k]), "".join(pieces[k + 1 :])
        return [f"{head}{c}{tail}" for c in counts]
    return ["".join(str(c) if p is None else p for p in pieces) for c in counts]


#: Integer times the vectorized path converts (as printed by Synoptic: no sign, no
#: leading zero, at most 18 digits); others go through :func:`_parse_time`.
_ARROW_CANONICAL_INT = r"^(?:0|-?[1-9]\d{0,17})$"
#: Decimal times printed as written (the rest, e.g. ``1e3``, ``+5``, go through Python).
_ARROW_PLAIN_DECIMAL = r"^-?\d+(?:\.\d+)?$"


def _all_digits(text: pa.LargeStringArray, integer: bool) -> np.ndarray:
    """Which texts are plain digit strings (the quick test before the regexes below;
    for integers: without a leading zero and at most 18 digits)."""
    import pyarrow.compute as pc

    ok = pc.ascii_is_decimal(text).to_numpy(zero_copy_only=False)
    if integer and ok.any():
        size = pc.binary_length(text).to_numpy(zero_copy_only=False)
        ok &= (size <= 18) & (
            (size == 1) | ~pc.starts_with(text, "0").to_numpy(zero_copy_only=False)
        )
    return ok


def _arrow_times(
    kind: str, text: pa.LargeStringArray
) -> tuple[np.ndarray, np.ndarray, pa.LargeStringArray]:
    """Parse time texts (a pyarrow string array) as Synoptic does: (good: bool per text,
    values of the good ones (float64), their printed texts (a pyarrow string array)).
    Common forms are converted with Arrow kernels, the rest with :func:`_parse_time`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    integer = kind in ("TIME", "LTIME")
    simple = _all_digits(text, integer)
    if not simple.all():
        simple = pc.match_substring_regex(
            text, _ARROW_CANONICAL_INT if integer else _ARROW_PLAIN_DECIMAL
        ).to_numpy(zero_copy_only=False)
    if simple.all():
        if integer:
            values = pc.cast(text, pa.int64()).to_numpy(zero_copy_only=False)
            bits = 31 if kind == "TIME" else 63
            good = (values >= -(1 << bits)) & (values < (1 << bits))
            values = values.astype(np.float64)
        else:
            values = pc.cast(text, pa.float64()).to_numpy(zero_copy_only=False)
            good = np.isfinite(values)
        if good.all():
            return good, values, text
        return good, values[good], text.filter(pa.array(good))
    good = np.ones(len(text), dtype=bool)
    values = np.zeros(len(text))
    texts = text.to_pylist()
    for i, t in enumerate(texts):
        try:
            values[i], texts[i] = _parse_time(kind, t, 0)
        except ValueError:
            good[i] = False
    return good, values[good], pa.array([t for t, g in zip(texts, good) if g], pa.large_string())


#: Where the line loop takes a kept group's value from (:func:`_column_source`).
_FROM_TYPE, _FROM_MATCH, _FROM_COUNTER, _FROM_EXTRAS = range(4)


def _column_source(ref: str, plain: bool, counters: dict[str, int]) -> int:
    """Where the value of kept group or mapping reference ``ref`` comes from, for a regex
    without extras (``plain``) or with them: the line's type (TYPE), its match's group, a
    counter's value (a counter wins over a group), or the values of
    :func:`_apply_extras` (groups, counters and constants).

    >>> _column_source("conn", True, {"SEPCOUNT": 0}) == _FROM_MATCH
    True
    >>> _column_source("SEPCOUNT", True, {"SEPCOUNT": 0}) == _FROM_COUNTER
    True
    """
    if ref == "TYPE":
        return _FROM_TYPE
    if not plain:
        return _FROM_EXTRAS
    return _FROM_COUNTER if ref in counters else _FROM_MATCH


def _apply_extras(r: LineRegex, m: dict[str, str | None], counters: dict[str, int]) -> dict | None:
    """Counters and constants of a matched line (``m``: its groups): its values, or None
    for a hidden line (whose post-increments are then applied)."""
    values: dict[str, str | None] = dict(m)
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
