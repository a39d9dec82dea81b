"""Parser for statemine log lines (docs/log-format.md).

``STATEMINE t=<s> conn=<id> [role=<r>] state=<Name>|event=<Name> [key=value ...]``
found anywhere in a line, after any prefix. Each ``(conn, role)`` of a file is one trace.

The file is read in blocks of whole lines (bounded memory) and each block is tokenized by
the compiled :mod:`statemine.parse._linescan` scanner into integer-coded columns. The
scanner keeps, across blocks, the codes of traces and names and each trace's last time,
so it checks time order while streaming. :class:`LogScan` gives one file's blocks;
:func:`scan_files` gives many files' rows through one scanner, many small files gathered
into one block (for streaming statistics, :mod:`statemine.stats.stream`, and for
:func:`read_statemine_logs`, which joins them into one :class:`TraceSet` in one pass).
"""

from __future__ import annotations

import functools
import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, overload

import numpy as np

from ..errors import InputError
from ..escape import name_text, name_texts
from ._linescan import Scanner
from .lines import (
    DEFAULT_CHUNK_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    ReadDigests,
    iter_blocks,
    read_ahead,
)
from .timerange import MAX_TIME_S, time_problem

if TYPE_CHECKING:
    import pandas as pd

    from ..traces import TraceSet

#: ``kind`` codes of :class:`ScannedBlock` and the names they stand for.
KINDS = ("state", "event")
#: Error codes of the scanner (statemine/parse/_linescan.c).
(
    _E_NOMEM,
    _E_LONG_LINE,
    _E_NOT_UTF8,
    _E_MALFORMED,
    _E_NUMBER,
    _E_TIME_FINITE,
    _E_BACKWARDS,
    _E_TWICE,
    _E_OUT_OF_PLACE,
    _E_NOT_KV,
) = range(1, 11)
#: Status codes of ``Scanner.feed_files`` (statemine/parse/_linescan.c).
_FF_OK, _FF_FALLBACK, _FF_ERROR, _FF_NO_LINES = range(4)
#: The numeric fields in the scanner's order (= ``traces.NUMERIC_FIELDS``, which loads pandas).
NUMERIC_KEYS = ("cwnd", "inflight", "ssthresh", "srtt")


#: ``file_starts`` of one file's blocks.
_ONE_FILE = np.zeros(1, np.int64)


class ScannedBlock(NamedTuple):
    """The statemine lines of one block, as columns (one entry per line, file order).

    ``line``: 1-based line number; ``time``: seconds; ``trace``: trace code (index of
    :meth:`LogScan.traces`); ``kind``: index into :data:`KINDS`; ``name``: index into
    :meth:`LogScan.names`; ``numeric``: ``cwnd``, ``inflight``, ``ssthresh`` (bytes),
    ``srtt`` (seconds), NaN where absent; ``extra_rows``/``extra_text``: the rows that carry
    other ``key=value`` pairs and those pairs, space separated; ``names``: the file's names
    so far (codes never change, new names are appended).
    """

    line: np.ndarray
    time: np.ndarray
    trace: np.ndarray
    kind: np.ndarray
    name: np.ndarray
    numeric: dict[str, np.ndarray]
    extra_rows: np.ndarray
    extra_text: list[str]
    names: list[str]
    #: The first trace code of each file begun so far (ascending; :func:`scan_files`).
    file_starts: np.ndarray = _ONE_FILE

    def file_of(self, trace: int) -> int:
        """Index of the file that holds trace code ``trace``."""
        return int(np.searchsorted(self.file_starts, trace, side="right")) - 1


class ScanEnd(NamedTuple):
    """End of :func:`scan_files`, per trace code of all files: ``last_time`` (seconds of its
    last line), ``close_time`` (of its ``event=Close`` line, NaN if none), ``n_events``;
    ``file_starts``: the first trace code of each file; ``n_files``: the files read (fewer
    than given when a ``sniff`` stopped the scan)."""

    last_time: np.ndarray
    close_time: np.ndarray
    n_events: np.ndarray
    file_starts: np.ndarray
    n_files: int = -1


#: Bytes a ``sniff`` of :func:`scan_files` sees of each file (as format detection does).
SNIFF_BYTES = 65536
_GZIP_MAGIC = b"\x1f\x8b"
#: ``sniff(path, head)`` of :func:`scan_files`: whether the file is a statemine log, given
#: its first :data:`SNIFF_BYTES` bytes (None when it cannot be opened or read). It is not
#: asked of a plain (not gzip, not Parquet) file under SNIFF_BYTES holding ``STATEMINE t=``:
#: :func:`scan_files` takes such a file as a statemine log (in C, ``Scanner.feed_files``).
Sniff = Callable[[Path, "bytes | None"], bool]

#: The scanner's packed per-trace record (Scanner.traces, Scanner.info).
_INFO = np.dtype([("last", "f8"), ("close", "f8"), ("line", "i8"), ("n", "i8")])
#: :func:`scan_files` hands over the rows it has gathered once they reach this many (at a
#: block's end, so a block of a big file is never split).
GATHER_ROWS = 1 << 16


class TraceTable(NamedTuple):
    """Per trace code: ``conn``, ``role`` (None when the lines had none), ``last_time``
    (seconds of its last line), ``close_time`` (of its ``event=Close`` line, NaN if none),
    ``n_events`` (lines)."""

    conn: list[str]
    role: list[str | None]
    last_time: np.ndarray
    close_time: np.ndarray
    n_events: np.ndarray


class LogScan:
    """One pass over a statemine log: iterate it for :class:`ScannedBlock` s (in file order,
    each block's arrays are new), then ask for the names and traces seen.

    Raises :class:`InputError` naming the line for a malformed statemine line, a
    non-numeric number, time going backwards within a connection, a line over
    ``max_line_bytes`` or a line that is not UTF-8.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        on_progress: Callable[[int], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self._scanner = Scanner(max_time=MAX_TIME_S)
        self._chunk_bytes = chunk_bytes
        self._max_line_bytes = max_line_bytes
        self._on_progress = on_progress

    def __iter__(self) -> Iterator[ScannedBlock]:
        blocks = iter_blocks(
            self.path,
            chunk_bytes=self._chunk_bytes,
            max_line_bytes=self._max_line_bytes,
            on_progress=self._on_progress,
            line_number=lambda: self._scanner.next_line,
        )
        for block in blocks:
            out = self._scanner.scan(block, self._max_line_bytes)
            if "error" in out:
                raise _input_error(self.path, out, self._max_line_bytes)
            yield _scanned(out, self._scanner.names())

    def names(self) -> list[str]:
        """State and event names, indexed by the blocks' ``name`` codes."""
        return self._scanner.names()

    def traces(self) -> TraceTable:
        """The traces seen so far, indexed by the blocks' ``trace`` codes."""
        conns, roles, info = self._scanner.traces()
        packed = np.frombuffer(info, _INFO)
        return TraceTable(
            conns, roles, packed["last"].copy(), packed["close"].copy(), packed["n"].copy()
        )


def _scanned(out: dict, names: list[str], file_starts: np.ndarray = _ONE_FILE) -> ScannedBlock:
    """The scanner's columns (bytes of native arrays) as a :class:`ScannedBlock`."""
    return ScannedBlock(
        line=np.frombuffer(out["line"], np.int64),
        time=np.frombuffer(out["time"], np.float64),
        trace=np.frombuffer(out["trace"], np.int32),
        kind=np.frombuffer(out["kind"], np.uint8),
        name=np.frombuffer(out["name"], np.int32),
        numeric={k: np.frombuffer(out[k], np.float64) for k in NUMERIC_KEYS},
        extra_rows=np.frombuffer(out["extra_row"], np.int64),
        extra_text=out["extra_text"],
        names=names,
        file_starts=file_starts,
    )


def read_statemine_log(
    path: str | Path,
    *,
    source: str | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    on_progress: Callable[[int], None] | None = None,
) -> TraceSet:
    """Read one log file of statemine lines into a :class:`~statemine.traces.TraceSet`.

    ``source`` names the file in trace ids (default: the file name). Trace ids are
    ``"<source>#<conn>"``, with ``"/<role>"`` appended when the line has a role. The
    traces frame gets ``conn``, ``role`` and ``end`` (the time of an ``event=Close``
    line, NaN when there is none). Errors as for :class:`LogScan`, and a file with no
    statemine line.
    """
    scan = LogScan(
        path, chunk_bytes=chunk_bytes, max_line_bytes=max_line_bytes, on_progress=on_progress
    )
    rows = _Rows()
    for b in scan:
        rows.add(b, lambda _trace: path)
    if not rows.n:
        raise no_lines_error(path)
    path = Path(path)
    table = scan.traces()
    ids = trace_ids(source or name_text(path.name), table)
    return _to_traceset(rows, scan.names(), table, ids, [name_text(str(path))] * len(ids))


def read_statemine_logs(
    paths: Sequence[Path],
    sources: Sequence[str],
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    on_progress: Callable[[int], None] | None = None,
) -> TraceSet:
    """Read log files of statemine lines into one :class:`~statemine.traces.TraceSet` in
    one pass (one scanner, columns gathered across files, one validation): the same set
    as joining :func:`read_statemine_log` of each (``sources[i]`` naming ``paths[i]``)
    with :func:`statemine.traces.concat`. Errors as :func:`read_statemine_log`, naming
    the file."""
    if len(paths) == 1:
        return read_statemine_log(
            paths[0],
            source=sources[0],
            chunk_bytes=chunk_bytes,
            max_line_bytes=max_line_bytes,
            on_progress=on_progress,
        )
    ts, _ = read_statemine_run(
        paths,
        sources,
        chunk_bytes=chunk_bytes,
        max_line_bytes=max_line_bytes,
        on_progress=on_progress,
    )
    assert ts is not None  # without a sniff every file is read
    return ts


def read_statemine_run(
    paths: Sequence[str | Path],
    sources: Sequence[str],
    sniff: Sniff | None = None,
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    on_progress: Callable[[int], None] | None = None,
) -> tuple[TraceSet | None, int]:
    """The leading files of ``paths`` that ``sniff`` takes for statemine logs (all of them
    without a sniff) as one :class:`~statemine.traces.TraceSet`, as
    :func:`read_statemine_logs` reads them (:func:`read_statemine_log` for one file), and
    how many files that is (None and 0 when the first is not one). The sniff sees each
    file's head from the scan's own read: a small file is opened and read once."""
    scanner = Scanner(max_time=MAX_TIME_S)
    rows = _Rows()
    end: ScanEnd | None = None
    for item in scan_files(
        paths,
        on_progress,
        chunk_bytes=chunk_bytes,
        max_line_bytes=max_line_bytes,
        scanner=scanner,
        sniff=sniff,
    ):
        if isinstance(item, ScanEnd):
            end = item
        else:
            rows.add(item, functools.partial(_path_of, paths, item))
    assert end is not None  # scan_files ends with one
    n_files = end.n_files
    if not n_files:
        return None, 0
    conns, roles, info = scanner.traces()
    packed = np.frombuffer(info, _INFO)
    table = TraceTable(conns, roles, packed["last"], packed["close"], packed["n"])
    if n_files == 1:  # as read_statemine_log: the file's own categories
        ids = trace_ids(name_text(sources[0]), table)
        return _to_traceset(
            rows, scanner.names(), table, ids, [name_text(str(paths[0]))] * len(ids)
        ), 1
    counts = np.diff(np.r_[end.file_starts, len(conns)])
    file_of_trace = np.repeat(np.arange(n_files), counts)
    file_list = file_of_trace.tolist()
    names = name_texts(sources[:n_files])  # once a file, not once a trace
    ids = [
        f"{names[f]}#{c}" + (f"/{r}" if r is not None else "")
        for f, c, r in zip(file_list, conns, roles)
    ]
    source = name_texts(list(map(str, paths[:n_files])))
    ts = _to_traceset(
        rows,
        scanner.names(),
        table,
        ids,
        [source[f] for f in file_list],
        file_of_trace=file_of_trace,
    )
    return ts, n_files


class _Rows:
    """Blocks' columns kept compactly until joined: line as int32, no all-NaN metrics."""

    def __init__(self) -> None:
        self.columns: dict[str, list[np.ndarray]] = {
            c: [] for c in ("trace", "time", "kind", "name", "line")
        }
        self.numeric: dict[str, list[np.ndarray | None]] = {k: [] for k in NUMERIC_KEYS}
        self.fields: list[tuple[np.ndarray, list[str]]] = []
        self.n = 0

    def add(self, b: ScannedBlock, path_of: Callable[[int], str | Path]) -> None:
        """Keep block ``b``; ``path_of(trace code)`` names the file in errors."""
        self.columns["trace"].append(b.trace)
        self.columns["time"].append(b.time)
        self.columns["kind"].append(b.kind)
        self.columns["name"].append(b.name)
        self.columns["line"].append(_int32_lines(b, path_of))
        for k in NUMERIC_KEYS:
            self.numeric[k].append(None if np.isnan(b.numeric[k]).all() else b.numeric[k])
        if b.extra_text:
            self.fields.append((b.extra_rows + self.n, b.extra_text))
        self.n += len(b.time)


def _path_of(paths: Sequence[str | Path], block: ScannedBlock, trace: int) -> str | Path:
    """The file of trace code ``trace`` of ``block``."""
    return paths[block.file_of(trace)]


def _int32_lines(b: ScannedBlock, path_of: Callable[[int], str | Path]) -> np.ndarray:
    """Line numbers as int32 (the TraceSet's dtype), or an error past 2^31 - 1 lines."""
    line = b.line
    if len(line) and line.max() > np.iinfo(np.int32).max:
        where = path_of(int(b.trace[np.argmax(line > np.iinfo(np.int32).max)]))
        raise InputError(where, None, "more than 2^31 - 1 lines: use statemine store add")
    return line.astype(np.int32)


def no_lines_error(path: str | Path) -> InputError:
    """The error for a file without a single statemine line."""
    return InputError(
        path, None, "no statemine lines ('STATEMINE t=...') found; is this the right --format?"
    )


def scan_files(
    files: Sequence[str | Path],
    on_progress: Callable[[int], None] | None = None,
    depth: int = 4,
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    scanner: Scanner | None = None,
    sniff: Sniff | None = None,
    digests: ReadDigests | None = None,
) -> Iterator[ScannedBlock | ScanEnd]:
    """The rows of all ``files`` as :class:`ScannedBlock` s, then one :class:`ScanEnd`.

    One scanner reads every file (one reused buffer), so trace codes run over all files
    (in file order, then first line) and name codes are shared; rows of many small files
    are gathered into one block of at least :data:`GATHER_ROWS` rows (the last block may
    be shorter), a big file's rows come block by block. The files are scanned ahead on a
    background thread (the tokenizer runs without the GIL), at most ``depth`` blocks ahead,
    so scanning overlaps whatever the caller does with the blocks (or imports) and memory
    stays bounded. It starts at once. Errors as :class:`LogScan`, and a file without a
    statemine line; ``scanner`` (a new :class:`Scanner`) is the one used, for its traces
    once the scan has ended. ``sniff``: the scan stops before the first file it refuses
    (:attr:`ScanEnd.n_files` says how many were read); a small file is read once for both.
    Small plain files are opened, read and scanned in C (``Scanner.feed_files``, without
    the GIL, many files a call); the rest (big, gzip or unreadable) one by one here.
    ``digests``: the sha256 of each file scanned to its end, from the bytes as read
    (:class:`~statemine.parse.lines.ReadDigests`; a small plain file's from the bytes C
    read and handed back; not for a gzip file over one block).
    """
    scan = Scanner(max_time=MAX_TIME_S) if scanner is None else scanner

    def produce() -> Iterator[ScannedBlock | ScanEnd]:
        buffer = bytearray(chunk_bytes + max_line_bytes + 1)
        starts: list[int] = []  # first trace code per file (an array per handed-over block)
        n_files = len(files)
        i = 0
        while i < n_files:
            # small plain files: opened, read, sniffed and scanned in C, many a call (their
            # bytes handed back for the digests: not read again)
            fed = i
            i, status, begun, sizes, detail, data = scan.feed_files(
                files,
                fed,
                max_line_bytes,
                chunk_bytes,
                sniff is not None,
                GATHER_ROWS,
                digests is not None,
            )
            starts.extend(np.frombuffer(begun, np.int64).tolist())
            if on_progress is not None or data:
                lengths = np.frombuffer(sizes, np.int64).tolist()
                if data and digests is not None:  # the bytes of files[fed:...], in order
                    digests.add_read(files[fed : fed + len(lengths)], data, lengths)
                if on_progress is not None:
                    for size in lengths:
                        on_progress(size)  # the file's bytes, as iter_blocks counts
            if isinstance(detail, dict):  # status _FF_ERROR
                raise _input_error(Path(files[i]), detail, max_line_bytes)
            if status == _FF_NO_LINES:
                raise no_lines_error(files[i])
            if scan.n_rows >= GATHER_ROWS:
                yield _scanned(scan.take(), scan.names(), np.array(starts, np.int64))
            if status == _FF_OK:
                continue
            path = files[i]  # left to us: big, gzip, Parquet, unreadable or not a statemine log
            i += 1
            if detail is None:  # not read: open it here, and say why when it fails
                head, whole = _head(path, chunk_bytes)
            else:  # its head, as C read it (to the end when under SNIFF_BYTES)
                head, whole = detail, _whole(detail, chunk_bytes)
            if sniff is not None and not sniff(Path(path), head):
                n_files = i - 1
                break
            if starts:
                scan.next_file()
            starts.append(scan.n_traces)
            if whole is not None:
                if digests is not None and head is not None:  # the file's bytes, read whole
                    digests.begin(path)
                    digests.update(head)
                    digests.end()
                blocks = _whole_blocks(path, whole, max_line_bytes, lambda: scan.next_line)
                if on_progress is not None:
                    on_progress(len(head or b""))  # the file's bytes, as iter_blocks counts
            else:
                blocks = iter_blocks(
                    path,
                    chunk_bytes=chunk_bytes,
                    max_line_bytes=max_line_bytes,
                    on_progress=on_progress,
                    line_number=lambda: scan.next_line,
                    buffer=buffer,
                    digests=digests,
                )
            for block in blocks:
                error = scan.feed(block, max_line_bytes)
                if error is not None:
                    raise _input_error(Path(path), error, max_line_bytes)
                if scan.n_rows >= GATHER_ROWS:
                    yield _scanned(scan.take(), scan.names(), np.array(starts, np.int64))
            if scan.n_traces == starts[-1]:
                raise no_lines_error(path)
        if scan.n_rows:
            yield _scanned(scan.take(), scan.names(), np.array(starts, np.int64))
        packed = np.frombuffer(scan.info(), _INFO)
        yield ScanEnd(
            packed["last"].copy(),
            packed["close"].copy(),
            packed["n"].copy(),
            np.array(starts, np.int64),
            n_files,
        )

    return read_ahead(produce(), depth)


def _head(path: str | Path, chunk_bytes: int) -> tuple[bytes | None, bytes | None]:
    """The first :data:`SNIFF_BYTES` bytes of ``path`` (None when it cannot be opened or
    read) and, when that is the whole file and its content (decompressed from gzip) fits
    one block of ``chunk_bytes``, that content (else None: the scan reads it again)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None, None
    try:
        head = os.read(fd, SNIFF_BYTES)
        whole = len(head) < SNIFF_BYTES and not os.read(fd, 1)
    except OSError:
        return None, None
    finally:
        os.close(fd)
    return head, _whole(head, chunk_bytes) if whole else None


def _whole(data: bytes, chunk_bytes: int) -> bytes | None:
    """A file's content from all its bytes ``data`` (decompressed from gzip) when it is
    under :data:`SNIFF_BYTES` and fits one block of ``chunk_bytes``, else None."""
    if len(data) >= SNIFF_BYTES:
        return None
    if data[:2] == _GZIP_MAGIC:
        return _gunzip(data, chunk_bytes)
    return data if len(data) <= chunk_bytes else None


def _gunzip(data: bytes, limit: int) -> bytes | None:
    """A small gzip file's content (every member), or None when it is over ``limit``
    bytes or anything is amiss (cut off, damaged, trailing bytes): then the block reader
    reads it, and says what is wrong."""
    out: list[bytes] = []
    size = 0
    try:
        while data:
            if data[:2] != _GZIP_MAGIC:
                return None
            unzip = zlib.decompressobj(31)
            out.append(unzip.decompress(data, limit + 1 - size))
            size += len(out[-1])
            if not unzip.eof or size > limit:
                return None
            data = unzip.unused_data
    except zlib.error:
        return None
    return b"".join(out)


def _whole_blocks(
    path: str | Path, data: bytes, max_line_bytes: int, line_number: Callable[[], int]
) -> Iterator[memoryview]:
    """A file read whole as :func:`~statemine.parse.lines.iter_blocks` gives it when it fits
    one block: its lines up to the last newline, then the unfinished last line (refused
    past ``max_line_bytes``)."""
    view = memoryview(data)
    cut = data.rfind(b"\n") + 1
    if cut:
        yield view[:cut]
    if len(data) - cut > max_line_bytes:
        raise InputError(path, line_number(), f"line longer than {max_line_bytes} bytes")
    if len(data) > cut:
        yield view[cut:]


def trace_ids(source: str, table: TraceTable) -> list[str]:
    """``"<source>#<conn>"`` plus ``"/<role>"`` when there is one, per trace code."""
    return [
        f"{source}#{c}" + (f"/{r}" if r is not None else "") for c, r in zip(table.conn, table.role)
    ]


def events_frame(
    rows: _Rows, names: list[str], ids: list[str], file_of_trace: np.ndarray
) -> pd.DataFrame:
    """The events frame :func:`read_statemine_logs` builds of ``rows`` (scanned from several
    files: ``file_of_trace``), trace ``ids`` per trace code, before validation."""
    return _to_traceset(rows, names, None, ids, [], file_of_trace)


@overload
def _to_traceset(
    rows: _Rows,
    names: list[str],
    table: TraceTable,
    ids: list[str],
    sources: list[str],
    file_of_trace: np.ndarray | None = None,
) -> TraceSet: ...
@overload
def _to_traceset(
    rows: _Rows,
    names: list[str],
    table: None,
    ids: list[str],
    sources: list[str],
    file_of_trace: np.ndarray | None = None,
) -> pd.DataFrame: ...
def _to_traceset(
    rows: _Rows,
    names: list[str],
    table: TraceTable | None,
    ids: list[str],
    sources: list[str],
    file_of_trace: np.ndarray | None = None,
) -> TraceSet | pd.DataFrame:
    """Group the rows (per column, one array per block) by trace (stable: log order within
    a trace) into a TraceSet; ``ids`` and ``sources`` per trace code. Each column's blocks
    are joined, reordered and released one column at a time, so the peak is the finished
    columns plus one column's copies. ``file_of_trace`` (rows of several files): the
    categories and columns :func:`statemine.traces.concat` gives the files' sets. ``table``
    None: the events frame alone (not validated)."""
    import pandas as pd

    from ..arrays import group_order
    from ..traces import TraceSet, categorical

    columns, numeric = rows.columns, rows.numeric

    def take(blocks: list) -> np.ndarray:
        joined = np.concatenate(blocks)
        blocks.clear()
        return joined[order]

    sizes = [len(b) for b in columns["trace"]]
    codes = np.concatenate(columns["trace"])
    columns["trace"].clear()
    file_of_row = None if file_of_trace is None else file_of_trace[codes]
    # rows grouped by trace already (e.g. files of one connection each): no sort, no gathers
    order: np.ndarray | slice = _WHOLE if _grouped(codes) else group_order(codes)
    codes = codes[order]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    seq = (np.arange(len(codes)) - np.repeat(starts, np.diff(np.r_[starts, len(codes)]))).astype(
        np.int32
    )
    name_codes = np.concatenate(columns["name"])
    columns["name"].clear()
    if file_of_row is None:
        trace = pd.Categorical.from_codes(codes, categories=pd.Index(ids, dtype=str))
        state = pd.Categorical.from_codes(name_codes[order], categories=pd.Index(names, dtype=str))
    else:  # as concat: categories that differ between the files become sorted text
        trace = categorical(codes, ids)
        shared = _shared_names(file_of_row, name_codes, len(names))
        state = (
            categorical(name_codes[order], names)
            if shared is None
            else pd.Categorical.from_codes(
                _rank(shared, len(names))[name_codes[order]],
                categories=pd.Index([names[c] for c in shared], dtype=str),
            )
        )
    del name_codes
    events = pd.DataFrame(
        {
            "trace": trace,
            "seq": seq,
            "time": take(columns["time"]),
            "kind": pd.Categorical.from_codes(
                take(columns["kind"]), categories=pd.Index(KINDS, dtype=str)
            ),
            "state": state,
            "line": take(columns["line"]),
        },
        copy=False,
    )
    extra: dict[str, np.ndarray] = {}
    for k in NUMERIC_KEYS:
        blocks = numeric[k]
        if any(b is not None for b in blocks):
            extra[k] = take([np.full(m, np.nan) if b is None else b for b, m in zip(blocks, sizes)])
        blocks.clear()
    if rows.fields:
        text = np.full(len(codes), None, dtype=object)
        for at, values in rows.fields:
            text[at] = values
        extra["fields"] = text[order]
    for k in _column_order(extra, file_of_row, order):
        events[k] = extra[k]
    if table is None:
        return events
    traces = pd.DataFrame(
        {
            "trace": pd.Series(ids, dtype=str),
            "source": sources,
            "end": table.close_time,
            "conn": pd.Series(table.conn, dtype=str),
            "role": pd.Series(table.role, dtype=object),
        }
    )
    return TraceSet.from_events(events, traces, {"format": "statemine"})


#: The identity ``order`` of :func:`_to_traceset` (a view, no copy).
_WHOLE = slice(None)


def _grouped(codes: np.ndarray) -> bool:
    """Whether ``codes`` never decrease (rows already grouped by trace, in code order)."""
    return len(codes) < 2 or bool((codes[1:] >= codes[:-1]).all())


def _shared_names(
    file_of_row: np.ndarray, name_codes: np.ndarray, n_names: int
) -> list[int] | None:
    """When every file has the same names (in any order), the name codes in the first
    file's order of first appearance (pandas' concat keeps the first set's categories
    then), else None (concat makes them sorted text)."""
    n_files = int(file_of_row[-1]) + 1
    present = np.zeros(n_files * n_names, bool)
    present[file_of_row.astype(np.int64) * n_names + name_codes] = True
    if not present.all():  # a file lacks a name
        return None
    in_first = name_codes[: np.searchsorted(file_of_row, 1)]  # rows are in file order
    return in_first[np.sort(np.unique(in_first, return_index=True)[1])].tolist()


def _rank(codes: list[int], n: int) -> np.ndarray:
    """Position of each code in ``codes`` (which holds every code below ``n`` once)."""
    rank = np.empty(n, np.int64)
    rank[codes] = np.arange(len(codes))
    return rank


def _column_order(
    extra: dict[str, np.ndarray], file_of_row: np.ndarray | None, order: np.ndarray | slice
) -> list[str]:
    """The optional columns in the order concat gives them: the union of each file's own
    (a metric where that file logs it, then ``fields``) in order of first appearance."""
    if file_of_row is None:
        return list(extra)
    grouped = file_of_row[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    seen: dict[str, int] = {}
    for k, values in extra.items():
        present = ~np.isnan(values) if k != "fields" else values != None  # noqa: E711
        files = np.flatnonzero(np.logical_or.reduceat(present, starts))
        seen[k] = int(files[0]) if len(files) else len(starts)
    return sorted(extra, key=lambda k: (seen[k], list(extra).index(k)))


def _input_error(path: Path, err: dict, max_line_bytes: int) -> InputError:
    """The scanner's error dict as an InputError with a readable reason."""
    code, token = err["error"], err["token"].decode("utf-8", "replace")
    if code == _E_LONG_LINE:
        return InputError(path, err["line"], f"line longer than {max_line_bytes} bytes")
    if code == _E_NOT_UTF8:
        return InputError(path, err["line"], "statemine line is not UTF-8 text")
    if code == _E_MALFORMED:
        return InputError(path, err["line"], f"malformed statemine line: {_show(token)}")
    if code == _E_NUMBER:
        what = "time t=" if err["key"] < 0 else f"{NUMERIC_KEYS[err['key']]}="
        return InputError(path, err["line"], f"{what} is not a number: {_show(token)}")
    if code == _E_TIME_FINITE:  # not finite, or beyond MAX_TIME_S
        reason = time_problem(float(token)) or "time out of range"
        return InputError(path, err["line"], f"t={_show(token)}: {reason}")
    if code == _E_BACKWARDS:
        return InputError(
            path,
            err["line"],
            f"time goes backwards within connection: t={err['time']!r} after "
            f"t={err['previous_time']!r} (line {err['previous_line']})",
        )
    if code == _E_TWICE:
        return InputError(path, err["line"], f"{token}= given twice")
    if code == _E_OUT_OF_PLACE:
        return InputError(path, err["line"], f"{token}= out of place or given twice")
    if code == _E_NOT_KV:
        return InputError(path, err["line"], f"expected key=value, found {_show(token)}")
    raise AssertionError(
        f"unknown scanner error {err}"
    )  # pragma: no cover - the C side's codes are all above


def _show(value: str, limit: int = 80) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")
