"""One large statemine log into one store data file in bounded memory (docs/store.md).

A data file holds each trace's rows together, in log order, but a log interleaves its
connections from first line to last. So the log is read twice over:

1. *spill*: the scanner's blocks (16 MiB of log each) are sorted by trace code (stable,
   so log order stays within a trace) and appended to one raw file per column in a
   hidden temporary folder beside the data; only the block sizes stay in memory.
2. *gather*: the traces are taken in code order (first seen first, as
   :func:`statemine.read` orders them) in batches of at most ``batch_rows`` events (a
   longer trace alone); for each batch, each spilled block's rows of those traces are
   one contiguous slice (the block is sorted: found by binary search in the mapped codes
   file, a few pages per block), read with ``np.fromfile``; the batch is sorted by trace
   (stable) and written as one row group. A trace longer than
   ``batch_rows`` is written slice by slice as it is read.

Memory: one block (about 60 bytes per event of the block) while spilling, one batch
(``batch_rows`` events, about 80 bytes each as arrays and an Arrow table) while
gathering, and the per-trace table (conn, role, times: about 150 bytes per trace).
Temporary disk: 57 bytes per event. Time: one pass over the log, then each spilled row
read once, plus a binary search per block and batch.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

from .parse.statemine_log import KINDS, NUMERIC_KEYS, LogScan, TraceTable, no_lines_error

if TYPE_CHECKING:
    import pyarrow as pa

#: The spilled columns and their dtypes (as the scanner gives them).
_SPILL = {
    "trace": np.int32,
    "time": np.float64,
    "kind": np.uint8,
    "name": np.int32,
    "line": np.int64,
    **{k: np.float64 for k in NUMERIC_KEYS},
}


@dataclass(frozen=True)
class Spill:
    """A log spilled by :func:`spill`: the folder of column files, the row count of each
    block (in order), the state/event names and the trace table (indexed by the codes)."""

    folder: Path
    blocks: tuple[int, ...]
    names: list[str]
    table: TraceTable


def spill(path: Path, folder: Path, chunk_bytes: int | None = None) -> Spill:
    """Scan the statemine log ``path`` block by block into column files in ``folder``,
    each block's rows sorted by trace code. Raises what :class:`LogScan` raises, and
    :func:`no_lines_error` for a log without statemine lines."""
    scan = LogScan(path) if chunk_bytes is None else LogScan(path, chunk_bytes=chunk_bytes)
    blocks = (
        {
            "trace": block.trace,
            "time": block.time,
            "kind": block.kind,
            "name": block.name,
            "line": block.line,
            **block.numeric,
        }
        for block in scan
    )
    sizes = spill_columns(blocks, folder, _SPILL, _by_trace)
    if not sum(sizes):
        raise no_lines_error(path)
    return Spill(folder, sizes, scan.names(), scan.traces())


def _by_trace(columns: dict[str, np.ndarray]) -> np.ndarray:
    """Rows grouped by trace code, log order within a trace (stable)."""
    return np.argsort(columns["trace"], kind="stable")


def spill_columns(
    blocks: Iterable[dict[str, np.ndarray]],
    folder: Path,
    dtypes: Mapping[str, Any],
    order: Callable[[dict[str, np.ndarray]], np.ndarray],
) -> tuple[int, ...]:
    """Append each block of columns (``dtypes``' names; the first is the grouping code),
    its rows in ``order(block)`` (sorted by that code first), to one raw file per column
    in ``folder``. Returns the row count of each block; only one block is in memory."""
    sizes = []
    with contextlib.ExitStack() as stack:
        handles = {c: stack.enter_context(_opened(folder / f"{c}.bin")) for c in dtypes}
        for block in blocks:
            rows = order(block)
            for name, values in block.items():
                _append(handles[name], values[rows].astype(dtypes[name], copy=False))
            sizes.append(len(rows))
    return tuple(sizes)


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[BinaryIO]:
    """``path`` open for writing; an OS error on it (opening, writing, closing) becomes a
    one-line error naming the file and the cause (e.g. No space left on device)."""
    from .fileio import os_error

    try:
        with open(path, "wb") as handle:
            yield handle
    except OSError as exc:
        raise os_error(path, exc) from None


def _append(handle: BinaryIO, values: np.ndarray) -> None:
    """Append ``values``' bytes to ``handle`` through Python's file object (numpy's
    ``tofile`` reports a full disk as "N requested and M written", without the cause)."""
    handle.write(np.ascontiguousarray(values).data)


def batches(counts: np.ndarray, batch_rows: int) -> Iterator[tuple[int, int]]:
    """Consecutive trace code ranges ``[first, stop)`` of at most ``batch_rows`` events
    (``counts`` per code), a trace with more alone.

    >>> list(batches(np.array([3, 3, 8, 1]), 6))
    [(0, 2), (2, 3), (3, 4)]
    """
    first, total = 0, 0
    for code, n in enumerate(counts.tolist()):
        if code > first and total + n > batch_rows:
            yield first, code
            first, total = code, 0
        total += n
    if len(counts):
        yield first, len(counts)


def gather(sp: Spill, first: int, stop: int, flush_rows: int) -> Iterator[dict[str, np.ndarray]]:
    """The spilled rows of traces ``first .. stop-1``, grouped by trace in log order: one
    dict of columns, or (a single trace past ``flush_rows`` rows) several in order."""
    return gather_columns(sp.folder, sp.blocks, _SPILL, first, stop, flush_rows, _by_trace)


def gather_columns(
    folder: Path,
    blocks: tuple[int, ...],
    dtypes: Mapping[str, Any],
    first: int,
    stop: int,
    flush_rows: int | None,
    order: Callable[[dict[str, np.ndarray]], np.ndarray],
) -> Iterator[dict[str, np.ndarray]]:
    """The rows of codes ``first .. stop-1`` (the first column of ``dtypes``) spilled by
    :func:`spill_columns` in ``blocks``, in ``order`` (which must give the blocks' own
    order among rows of one block: the file order is kept among equal keys). One dict of
    columns, or for a single code past ``flush_rows`` rows (None: never) several, each in
    order (the blocks' own order is already right for one code)."""
    key = next(iter(dtypes))
    pieces: list[dict[str, np.ndarray]] = []
    held = 0
    offset = 0
    # binary search in the mapped codes: a few pages per block, not the whole spill
    mapped = np.memmap(folder / f"{key}.bin", np.dtype(dtypes[key]), mode="r")
    for size in blocks:
        lo, hi = np.searchsorted(mapped[offset : offset + size], [first, stop])
        if hi > lo:
            pieces.append(
                {c: _read(folder, c, dtypes[c], offset + int(lo), int(hi - lo)) for c in dtypes}
            )
            held += int(hi - lo)
        offset += size
        if flush_rows is not None and stop - first == 1 and held >= flush_rows:
            yield _joined(pieces)  # one long trace: already in order
            pieces, held = [], 0
    del mapped
    if pieces:
        joined = _joined(pieces)
        if stop - first > 1 or len(pieces) > 1:
            rows = order(joined)
            joined = {c: v[rows] for c, v in joined.items()}
        yield joined


def _read(folder: Path, column: str, kind: Any, start: int, count: int) -> np.ndarray:
    dtype = np.dtype(kind)
    return np.fromfile(folder / f"{column}.bin", dtype, count, offset=start * dtype.itemsize)


def _joined(pieces: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {c: np.concatenate([p[c] for p in pieces]) for c in pieces[0]}


def rows_table(
    rows: dict[str, np.ndarray],
    seq_start: np.ndarray,
    ids: list[str],
    sp: Spill,
    source: str,
    schema: pa.Schema,
) -> pa.Table:
    """One batch (or slice) of gathered rows in the store's schema; ``seq_start[code]`` is
    the seq of the trace's first row here (advanced in place past these rows)."""
    import pyarrow as pa

    from .store import dictionary_array

    code = rows["trace"]
    new = np.r_[True, code[1:] != code[:-1]]
    starts = np.flatnonzero(new)
    runs = np.diff(np.r_[starts, len(code)])
    seq = np.arange(len(code)) - np.repeat(starts - seq_start[code[starts]], runs)
    np.add.at(seq_start, code[starts], runs)
    used, trace_codes = np.unique(code, return_inverse=True)
    names, name_codes = np.unique(rows["name"], return_inverse=True)
    columns = {
        "trace": dictionary_array(trace_codes, [ids[i] for i in used.tolist()]),
        "seq": pa.array(seq, pa.int64()),
        "time": pa.array(rows["time"]),
        "kind": dictionary_array(rows["kind"].astype(np.int32), KINDS),
        "state": dictionary_array(name_codes, [sp.names[i] for i in names.tolist()]),
        "line": pa.array(rows["line"]),
        **{k: pa.array(rows[k], from_pandas=True) for k in NUMERIC_KEYS},
        "source": dictionary_array(np.zeros(len(code), np.int32), [source]),
        "end": pa.array(sp.table.close_time[code]),
    }
    return pa.table(columns).cast(schema)


def spill_folder(beside: Path) -> tempfile.TemporaryDirectory:
    """A hidden temporary folder in ``beside`` (the store: same file system; readers skip
    names starting with ``.``), removed when closed."""
    beside.mkdir(parents=True, exist_ok=True)
    return tempfile.TemporaryDirectory(prefix=".spill-", dir=beside)
