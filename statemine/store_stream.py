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
Temporary disk: 69 bytes per event plus its ``fields`` text (a row's offset and length
into one text file). Time: one pass over the log, then each spilled row read once, plus a
binary search per block and batch.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from .fileio import os_errors
from .parse.spill import gather_columns, spill_columns
from .parse.statemine_log import NUMERIC_KEYS, LogScan, TraceTable, no_lines_error

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
    "fields_at": np.int64,  # byte offset of the row's fields in FIELDS_FILE, -1: none
    "fields_len": np.int32,  # their length in bytes (UTF-8)
}
#: The spilled ``fields`` text of every row that has some, one after another (UTF-8).
FIELDS_FILE = "fields.txt"


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
    text = folder / FIELDS_FILE
    with os_errors(text):
        out = open(text, "wb")  # noqa: SIM115 (closed below, its errors named)
    try:
        written = [0]
        blocks = (
            {
                "trace": block.trace,
                "time": block.time,
                "kind": block.kind,
                "name": block.name,
                "line": block.line,
                **block.numeric,
                **_spill_fields(block.extra_rows, block.extra_text, len(block.time), out, written),
            }
            for block in scan
        )
        sizes = spill_columns(blocks, folder, _SPILL, _by_trace)
    finally:
        with os_errors(text):
            out.close()
    if not sum(sizes):
        raise no_lines_error(path)
    return Spill(folder, sizes, scan.names(), scan.traces())


def _spill_fields(
    rows: np.ndarray, text: list[str], n: int, out: BinaryIO, written: list[int]
) -> dict[str, np.ndarray]:
    """The ``fields`` of one block's ``n`` rows (``text`` of ``rows``) appended to ``out``
    (``written[0]`` bytes so far, advanced); returns each row's offset (-1: none) and
    length, the spilled columns ``fields_at`` and ``fields_len``."""
    at = np.full(n, -1, np.int64)
    length = np.zeros(n, np.int32)
    if text:
        encoded = [t.encode() for t in text]
        sizes = np.fromiter(map(len, encoded), np.int64, len(encoded))
        at[rows] = written[0] + np.r_[0, np.cumsum(sizes)[:-1]]
        length[rows] = sizes
        with os_errors(out.name):
            out.write(b"".join(encoded))
        written[0] += int(sizes.sum())
    return {"fields_at": at, "fields_len": length}


def fields_column(sp: Spill, at: np.ndarray, length: np.ndarray) -> pa.Array:
    """The ``fields`` of gathered rows (their spilled ``fields_at``, ``fields_len``) as an
    Arrow string array, null where a row has none."""
    import pyarrow as pa

    has = at >= 0
    if not has.any():
        return pa.nulls(len(at), pa.string())
    sizes = np.where(has, length, 0).astype(np.int64)
    ends = np.cumsum(sizes)
    starts = ends - sizes
    data = np.zeros(0, np.uint8)
    if ends[-1]:
        blob = np.memmap(sp.folder / FIELDS_FILE, np.uint8, mode="r")
        # every byte's index in the spilled text: each row's run at its offset
        index = np.repeat(at[has] - starts[has], sizes[has]) + np.arange(int(ends[-1]))
        data = np.asarray(blob[index])
        del blob
    offsets = np.r_[0, ends]
    kind, width = (pa.string(), np.int32) if ends[-1] < 2**31 else (pa.large_string(), np.int64)
    valid = np.packbits(has, bitorder="little")
    return pa.Array.from_buffers(
        kind,
        len(at),
        [pa.py_buffer(valid), pa.py_buffer(offsets.astype(width)), pa.py_buffer(data)],
        null_count=int((~has).sum()),
    ).cast(pa.string())


def _by_trace(columns: dict[str, np.ndarray]) -> np.ndarray:
    """Rows grouped by trace code, log order within a trace (stable)."""
    return np.argsort(columns["trace"], kind="stable")


def gather(sp: Spill, first: int, stop: int, flush_rows: int) -> Iterator[dict[str, np.ndarray]]:
    """The spilled rows of traces ``first .. stop-1``, grouped by trace in log order: one
    dict of columns, or (a single trace past ``flush_rows`` rows) several in order."""
    return gather_columns(sp.folder, sp.blocks, _SPILL, first, stop, flush_rows, _by_trace)


def spill_folder(beside: Path) -> tempfile.TemporaryDirectory:
    """A hidden temporary folder in ``beside`` (the store: same file system; readers skip
    names starting with ``.``), removed when closed."""
    beside.mkdir(parents=True, exist_ok=True)
    return tempfile.TemporaryDirectory(prefix=".spill-", dir=beside)
