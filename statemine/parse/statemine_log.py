"""Parser for statemine log lines (docs/log-format.md).

``STATEMINE t=<s> conn=<id> [role=<r>] state=<Name>|event=<Name> [key=value ...]``
found anywhere in a line, after any prefix. Each ``(conn, role)`` of a file is one trace.

The file is read in blocks of whole lines (bounded memory) and each block is parsed
column-wise with one Arrow regular expression that matches the canonical token order the
instrument patches print; the rare line whose optional fields come in another order, or
that carries extra ``key=value`` pairs, goes through a per-line fallback with the same
meaning.
"""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InputError
from ..traces import NUMERIC_FIELDS, TraceSet
from .lines import DEFAULT_CHUNK_BYTES, DEFAULT_MAX_LINE_BYTES, iter_chunks

MARKER = b"STATEMINE t="
_NUM = "|".join(NUMERIC_FIELDS)
_V = r"[^ \r\n]+"
#: The canonical line, as the patches print it; groups after ``name`` are optional.
_LINE_RE = (
    rf"STATEMINE t=(?P<t>[^ \r\n]*) conn=(?P<conn>{_V})(?: role=(?P<role>{_V}))?"
    rf" (?P<kind>state|event)=(?P<name>{_V})"
    + "".join(rf"(?: {k}=(?P<{k}>{_V}))?" for k in NUMERIC_FIELDS)
    + r"(?P<rest>[^\r\n]*)"
)
_KEY_OK = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


def read_statemine_log(
    path: str | Path,
    *,
    source: str | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    on_progress: Callable[[int], None] | None = None,
    workers: int | None = None,
) -> TraceSet:
    """Read one log file of statemine lines into a :class:`TraceSet`.

    ``source`` names the file in trace ids (default: the file name). Trace ids are
    ``"<source>#<conn>"``, with ``"/<role>"`` appended when the line has a role. The
    traces frame gets ``conn``, ``role`` and ``end`` (the time of an ``event=Close``
    line, NaN when there is none). Raises :class:`InputError` naming the line for a
    malformed statemine line, a non-numeric number, time going backwards within a
    connection, a line over ``max_line_bytes``, or a file with no statemine line.
    Blocks of ``chunk_bytes`` are parsed on ``workers`` threads (default: one per CPU;
    Arrow's kernels release the GIL), at most ``workers + 1`` blocks in memory at once.
    """
    path = Path(path)
    source = source or path.name
    blocks = iter_chunks(path, chunk_bytes=chunk_bytes, max_line_bytes=max_line_bytes, on_progress=on_progress)
    parts = _parse_blocks(path, blocks, workers or os.cpu_count() or 1)
    table = pa.concat_tables(parts) if parts else None
    if table is None or table.num_rows == 0:
        raise InputError(path, None, "no statemine lines ('STATEMINE t=...') found; is this the right --format?")
    return _to_traceset(path, source, table)


def _parse_blocks(path: Path, blocks: Iterable[tuple[int, bytes]], workers: int) -> list[pa.Table]:
    """Parse blocks in order on a thread pool; the first error (in file order) is raised."""
    if workers <= 1:
        return [_parse_block(path, block, first) for first, block in blocks]
    parts: list[pa.Table] = []
    with ThreadPoolExecutor(workers) as pool:
        pending: deque = deque()
        for first, block in blocks:
            pending.append(pool.submit(_parse_block, path, block, first))
            if len(pending) > workers:
                parts.append(pending.popleft().result())
        parts.extend(future.result() for future in pending)
    return parts


def _parse_block(path: Path, block: bytes, first_line: int) -> pa.Table:
    """Parse the statemine lines of one block of whole lines into an Arrow table."""
    nl = np.flatnonzero(np.frombuffer(block, np.uint8) == 10)
    offsets = np.empty(len(nl) + 2, np.int64)
    offsets[0] = 0
    offsets[1:-1] = nl + 1
    offsets[-1] = len(block)
    n_lines = len(nl) + (0 if block.endswith(b"\n") else 1)
    lines = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n_lines, [None, pa.py_buffer(offsets[: n_lines + 1]), pa.py_buffer(block)]
    )
    hit = pc.match_substring(lines, MARKER)
    idx = np.flatnonzero(hit.to_numpy(zero_copy_only=False))
    if idx.size == 0:
        return _empty_table()
    line_no = idx.astype(np.int64) + first_line
    raw = lines.take(pa.array(idx))
    text = _as_utf8(path, raw, line_no)
    parts = pc.extract_regex(text, _LINE_RE)
    if parts.null_count:
        bad = int(np.flatnonzero(parts.is_null().to_numpy(zero_copy_only=False))[0])
        raise InputError(path, int(line_no[bad]), f"malformed statemine line: {_show(text[bad].as_py())}")
    cols = {name: parts.field(name) for name in ("t", "conn", "kind", "name", "rest")}
    cols["role"] = _empty_to_null(parts.field("role"))
    nums = {k: _empty_to_null(parts.field(k)) for k in NUMERIC_FIELDS}
    fields = pa.nulls(len(idx), pa.string())
    rest = cols["rest"]
    has_rest = pc.not_equal(pc.utf8_length(pc.utf8_rtrim_whitespace(rest)), 0).to_numpy(zero_copy_only=False)
    if has_rest.any():
        nums, fields = _parse_rest(path, line_no, rest, has_rest, nums, cols["kind"])
    time = _to_float(path, line_no, cols["t"], "time t=")
    numeric = {k: _to_float(path, line_no, v, f"{k}=") for k, v in nums.items()}
    return pa.table(
        {
            "line": pa.array(line_no),
            "time": time,
            "conn": cols["conn"].cast(pa.string()),
            "role": cols["role"].cast(pa.string()),
            "kind": cols["kind"].cast(pa.string()),
            "state": cols["name"].cast(pa.string()),
            **numeric,
            "fields": fields,
        }
    )


def _empty_to_null(values: pa.Array) -> pa.Array:
    """Arrow gives "" for an optional group that did not take part; make it null."""
    return pc.if_else(pc.equal(values, ""), pa.scalar(None, values.type), values)


def _empty_table() -> pa.Table:
    schema = {"line": pa.int64(), "time": pa.float64(), "conn": pa.string(), "role": pa.string(),
              "kind": pa.string(), "state": pa.string(), **{k: pa.float64() for k in NUMERIC_FIELDS},
              "fields": pa.string()}
    return pa.table({k: pa.array([], t) for k, t in schema.items()})


def _as_utf8(path: Path, raw: pa.Array, line_no: np.ndarray) -> pa.Array:
    try:
        return raw.cast(pa.large_string())
    except pa.ArrowInvalid:
        for i, value in enumerate(raw.to_pylist()):
            try:
                value.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(path, int(line_no[i]), "statemine line is not UTF-8 text") from None
        raise


def _to_float(path: Path, line_no: np.ndarray, values: pa.Array, what: str) -> pa.Array:
    """Cast strings to float64 (null stays null); an unparsable one is an InputError."""
    try:
        return pc.cast(values, pa.float64())
    except pa.ArrowInvalid:
        for i, value in enumerate(values.to_pylist()):
            if value is None:
                continue
            try:
                float(value)
            except ValueError:
                raise InputError(path, int(line_no[i]), f"{what} is not a number: {_show(value)}") from None
        raise


def _parse_rest(
    path: Path,
    line_no: np.ndarray,
    rest: pa.Array,
    has_rest: np.ndarray,
    nums: dict[str, pa.Array],
    kind: pa.Array,
) -> tuple[dict[str, pa.Array], pa.Array]:
    """Per-line fallback for lines with tokens after the canonical ones."""
    cols = {k: v.to_pylist() for k, v in nums.items()}
    fields: list[str | None] = [None] * len(rest)
    rest_list = rest.to_pylist()
    for i in np.flatnonzero(has_rest):
        extra = []
        for token in rest_list[i].split():
            key, eq, value = token.partition("=")
            if not eq or not key or not set(key) <= _KEY_OK:
                raise InputError(path, int(line_no[i]), f"expected key=value, found {_show(token)}")
            if key in cols:
                if cols[key][i] is not None:
                    raise InputError(path, int(line_no[i]), f"{key}= given twice")
                cols[key][i] = value
            elif key in ("t", "conn", "role", "state", "event"):
                raise InputError(path, int(line_no[i]), f"{key}= out of place or given twice")
            else:
                extra.append(token)
        fields[i] = " ".join(extra) or None
    return {k: pa.array(v, pa.string()) for k, v in cols.items()}, pa.array(fields, pa.string())


def _categorical(column: pa.ChunkedArray, order: np.ndarray) -> pd.Categorical:
    """A string column as a pandas Categorical, rows taken in ``order``."""
    encoded = pc.dictionary_encode(column.combine_chunks())
    categories = pd.Index(encoded.dictionary.to_pylist(), dtype=str)
    return pd.Categorical.from_codes(encoded.indices.to_numpy()[order], categories=categories)


def _show(value: str, limit: int = 80) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")


def _to_traceset(path: Path, source: str, table: pa.Table) -> TraceSet:
    """Group rows into traces (conn, role), check time order, build the TraceSet."""
    conn = table.column("conn").combine_chunks()
    role = table.column("role").combine_chunks()
    key = pc.binary_join_element_wise(conn, pc.fill_null(role, ""), "\x00")
    codes = pc.dictionary_encode(key).indices.to_numpy().astype(np.int64)
    order = np.argsort(codes, kind="stable")
    codes = codes[order]
    time = table.column("time").to_numpy()[order]
    line = table.column("line").to_numpy()[order]
    same = codes[1:] == codes[:-1]
    back = np.flatnonzero(same & (np.diff(time) < 0))
    if back.size:
        i = int(back[0]) + 1
        raise InputError(
            path, int(line[i]),
            f"time goes backwards within connection: t={time[i]!r} after t={time[i - 1]!r} (line {int(line[i - 1])})",
        )
    starts = np.flatnonzero(np.r_[True, ~same])
    seq = np.arange(len(codes)) - np.repeat(starts, np.diff(np.r_[starts, len(codes)]))

    first_rows = order[starts]
    t_conn = conn.take(pa.array(first_rows)).to_pylist()
    t_role = role.take(pa.array(first_rows)).to_pylist()
    ids = [f"{source}#{c}" + (f"/{r}" if r else "") for c, r in zip(t_conn, t_role)]

    events = pd.DataFrame(
        {
            "trace": pd.Categorical.from_codes(codes, categories=pd.Index(ids, dtype=str)),
            "seq": seq.astype(np.int64),
            "time": time,
            "kind": _categorical(table.column("kind"), order),
            "state": _categorical(table.column("state"), order),
            "line": line,
        },
        copy=False,
    )
    for k in NUMERIC_FIELDS:
        values = table.column(k).to_numpy()[order]
        if not np.isnan(values).all():
            events[k] = values
    fields = table.column("fields")
    if fields.null_count < len(fields):
        events["fields"] = np.asarray(fields.to_pandas(), dtype=object)[order]

    is_close = np.asarray((events["kind"] == "event") & (events["state"] == "Close"))
    end = np.full(len(ids), -np.inf)
    np.maximum.at(end, codes[is_close], time[is_close])
    end[np.isneginf(end)] = np.nan
    traces = pd.DataFrame(
        {"trace": pd.Series(ids, dtype=str), "source": str(path), "end": end,
         "conn": pd.Series(t_conn, dtype=str), "role": pd.Series(t_role, dtype=object)}
    )
    return TraceSet.from_events(events, traces, {"format": "statemine"})
