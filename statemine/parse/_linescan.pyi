"""Types of the C log scanner (``_linescan.c``), for mypy."""

from collections.abc import Sequence
from os import PathLike
from typing import Any

from typing_extensions import Buffer

class Scanner:
    """Scans blocks of whole statemine log lines into native column arrays."""

    #: 1-based number of the line the next block starts with.
    next_line: int
    #: Number of traces seen (all files).
    n_traces: int
    #: Number of rows fed and not yet taken.
    n_rows: int

    def __init__(self, max_time: float = ...) -> None:
        """``max_time``: largest ``abs(t)`` accepted, seconds (default: any finite t)."""
    def scan(self, block: Buffer, max_line_bytes: int, /) -> dict[str, Any]:
        """Columns of the block (name -> bytes of a native array), or a dict with an
        'error' code and where it is."""

    def feed(self, block: Buffer, max_line_bytes: int, /) -> dict[str, Any] | None:
        """Scan the next block into the pending rows; None, or a dict with an 'error'."""

    def take(self) -> dict[str, Any]:
        """The columns of the rows fed since the last take (as scan's)."""

    def feed_files(
        self,
        files: Sequence[str | bytes | PathLike[str]],
        start: int,
        max_line_bytes: int,
        chunk_bytes: int,
        sniff: bool,
        max_rows: int,
        keep: bool = False,
        /,
    ) -> tuple[int, int, bytes, bytes, dict[str, Any] | bytes | None, bytes | None]:
        """Open, read and feed whole small files from ``files[start]`` on (next_file() +
        feed() each; without the GIL): (next file, status: 0 fed up to
        it, 1 it is for the Python side, 2 it has a bad line, 3 it has no statemine line;
        per file fed its first trace code and its bytes, int64; detail: for 2 the error
        dict, for 1 the file's first 64 KiB as read (all of it when shorter), or None when
        it could not be read; with ``keep`` the bytes of the files fed, one after another,
        else None: a call stops once they reach ``chunk_bytes``)."""

    def next_file(self) -> None:
        """The next block starts another file: line 1, its connections new traces."""

    def info(self) -> bytes:
        """The packed per-trace records of traces(), alone."""

    def names(self) -> list[str]:
        """State and event names, indexed by name code."""

    def traces(self) -> tuple[list[str], list[str | None], bytes]:
        """Per trace code: connection ids, roles, and the packed (last_time, close_time,
        last_line, n_events) records."""

class PairSums:
    """Running float64 sums per int64 key (a hash table; the loop runs without the GIL).
    Each sum adds its values one by one in arrival order."""

    def __init__(self, n_values: int) -> None:
        """``n_values``: how many sums per key (1 to 4)."""
    def add(self, keys: Any, values: list[Any], /) -> None:  # numpy arrays (buffers)
        """Add ``values[i][j]`` (1 where ``values[i]`` is None) to sum ``i`` of ``keys[j]``;
        keys int64, values float64 arrays as long as keys."""
    def take(self, keys_out: Any, sums_out: Any, /) -> None:  # numpy arrays (buffers)
        """Copy the distinct keys (first-arrival order) into ``keys_out`` (int64, ``len()``)
        and their sums into ``sums_out`` (float64, ``n_values x len()``), then empty."""
    def __len__(self) -> int: ...

def trim_heap() -> bool:
    """Return the C heap's free pages to the system (glibc's malloc_trim; else a no-op):
    whether any were released."""
