"""Columns spilled to disk in bounded memory: blocks of rows appended to one raw file per
column, each block sorted by a grouping code, then gathered back a range of codes at a
time (a binary search per block in the mapped code file). The statemine-log path of the
store (:mod:`statemine.store_stream`) and the ftrace reader (:mod:`statemine.parse.ftrace`)
use it; docs/store.md describes the passes and their cost.

Memory: one block while spilling, one gathered range while gathering. Disk: the columns'
bytes, in a folder the caller makes and removes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np


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
    from ..fileio import os_error

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
