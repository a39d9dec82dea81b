"""A trace store: a Hive-partitioned Parquet dataset of events (schema in docs/store.md).

Layout: ``STORE/_statemine_store.json`` (format and partition keys, in order), then one
folder level per key, ``KEY=VALUE``, holding ``part-<id>.parquet`` files, one per input
file added. Every file has the columns of :func:`_schema` (the partition labels live only
in the folder names). Beside them, under the same partition folders: the per-trace
labels of each data file in ``STORE/_labels/.../labels-<id>.parquet``
(:func:`_labels_schema`) and the readers' full-resolution metrics table (qlog) in
``STORE/_metrics/.../metrics-<id>.parquet`` (:func:`_metrics_schema`). pyarrow
(``pyarrow.dataset.dataset(STORE, partitioning="hive")``) and DuckDB
(``read_parquet('STORE/**/part-*.parquet', hive_partitioning=true)``) read the events
unchanged; names starting with ``.`` or ``_`` are skipped by pyarrow.

:func:`store_add` streams a statemine log within the file (:mod:`statemine.store_stream`:
bounded memory whatever its size), adds a qlog file in spilled slices of its connections
and an ftrace file in spilled batches of whole sockets (:func:`_pieces_batch`), and reads any other
input (a saved trace set, Synoptic-style input) one file's trace set at a time. Every file
is written beside its final name and renamed in; then the add publishes the next version
of the store (:mod:`statemine.store_log`), which lists them. Readers read the files of the
latest version only (:func:`store_files`, :func:`store_info`, :func:`published_files`), so
they see an add whole or not at all; :func:`store_vacuum` removes what a killed add left
and :func:`store_migrate` publishes a store of an older format.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import re
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InputError, StatemineError, UsageError
from .escape import name_text
from .fileio import atomic_path, os_error, os_errors, write_json
from .store_log import (
    IDENT,
    LOG_DIR,
    Entry,
    Version,
    commit,
    crash_point,
    latest,
    version_numbers,
)
from .store_meta import META_NAME

if TYPE_CHECKING:  # the command line loads this module: numeric libraries load on use
    import tempfile

    import numpy as np
    import pandas as pd
    import pyarrow as pa

    from .parse.inputs import ReadOptions
    from .store_stream import Spill
    from .traces import TracePart, TraceSet

#: 1: data files only; 2: also ``_labels`` (required) and ``_metrics`` (when logged);
#: 3: metrics files may have the segment columns (ftrace) and their columns listed;
#: 4: the files are those of the latest version (:mod:`statemine.store_log`).
STORE_FORMAT = 4
#: Seconds an unreferenced file must be old before ``store vacuum`` removes it (a running
#: add's files are unreferenced until it publishes).
VACUUM_GRACE = 24 * 3600.0
#: Folders (at the store's top) of the per-trace labels and of the metrics tables.
LABELS_DIR, METRICS_DIR = "_labels", "_metrics"
#: Events gathered per row group when a statemine log is streamed (store_stream.gather).
STREAM_BATCH_ROWS = 1 << 18
#: Statemine logs up to this size (bytes) are gathered with their neighbours into one
#: data file, up to :data:`GATHER_BYTES` together (issue 29: one data file per small
#: file cost about 16 ms of CPU each).
GATHER_FILE_BYTES = 1 << 20
GATHER_BYTES = 16 << 20
#: Rows per Parquet row group (bounds a reader's memory per group).
ROW_GROUP = 1 << 20
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
#: A partition value: a letter or digit first (never ``.``/``_``, which readers skip), then
#: letters, digits and ``. _ + - @ : ~``; no ``/``, ``=``, ``%`` (Hive escapes), NUL or space.
_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+@:~-]*\Z")
_MAX_LABEL = 200
#: Longest partition folder name ``KEY=VALUE`` (NAME_MAX of Linux and macOS file systems).
_MAX_FOLDER = 255


def _schema(fields: bool = True) -> pa.Schema:
    """The columns of every data file (see docs/store.md); ``fields=False``: without
    ``fields`` (files written before it; read as all null)."""
    import pyarrow as pa

    text = pa.dictionary(pa.int32(), pa.string())
    return pa.schema(
        [
            ("trace", text),
            ("seq", pa.int64()),
            ("time", pa.float64()),
            ("kind", text),
            ("state", text),
            ("line", pa.int64()),
            ("cwnd", pa.float64()),
            ("inflight", pa.float64()),
            ("ssthresh", pa.float64()),
            ("srtt", pa.float64()),
            *([("fields", pa.string())] if fields else []),
            ("source", text),
            ("end", pa.float64()),
        ]
    )


def _labels_schema() -> pa.Schema:
    """The per-trace labels of one data file: one row per trace and label (a reader's
    ``traces`` columns other than trace, source and end, e.g. ``conn``, ``role``)."""
    import pyarrow as pa

    text = pa.dictionary(pa.int32(), pa.string())
    return pa.schema([("trace", text), ("key", text), ("value", text)])


#: The float64 columns of a metrics file (format 2 files lack the last two).
METRICS_COLUMNS = (
    "time",
    "cwnd",
    "inflight",
    "ssthresh",
    "srtt",
    "pacing_rate",
    "bandwidth",
    "cwnd_segments",
    "ssthresh_segments",
)
#: Schema metadata keys: a labels file's label dtypes, a metrics file's logged columns.
_LABEL_TYPES, _LOGGED = b"statemine.label_types", b"statemine.metrics_columns"
#: Labels-file metadata key: ``1`` when its data file has a metrics file, ``0`` when not
#: (files written before it have neither: their metrics file cannot be missed).
_HAS_METRICS = b"statemine.metrics_file"


def _metrics_schema(columns: Sequence[str] = METRICS_COLUMNS) -> pa.Schema:
    """The metrics table of one data file (``TraceSet.metrics``: every update, full
    resolution; null where an update does not log a value). ``columns``: format 2's
    subset for checking older files."""
    import pyarrow as pa

    return pa.schema(
        [("trace", pa.dictionary(pa.int32(), pa.string()))] + [(c, pa.float64()) for c in columns]
    )


def _metrics_schemas() -> tuple[pa.Schema, ...]:
    """The schemas a metrics file may have: this format's, then format 2's."""
    return (_metrics_schema(), _metrics_schema(METRICS_COLUMNS[:7]))


@dataclass(frozen=True)
class PartitionInfo:
    """One partition: its labels (key -> value), data files, traces, events (rows), the
    per-trace label keys its traces carry, and its metrics rows."""

    labels: dict[str, str]
    files: int
    traces: int
    events: int
    trace_labels: tuple[str, ...] = ()
    metrics: int = 0


@dataclass(frozen=True)
class StoreInfo:
    """A store's partition keys and partitions (sorted by their folder path)."""

    keys: tuple[str, ...]
    partitions: tuple[PartitionInfo, ...]
    version: int = 0

    @property
    def traces(self) -> int:
        """Traces in all partitions."""
        return sum(p.traces for p in self.partitions)

    @property
    def events(self) -> int:
        """Events (rows) in all partitions."""
        return sum(p.events for p in self.partitions)


@dataclass(frozen=True)
class AddOutput:
    """What :func:`store_add` wrote: the partition folder, files, traces and events, and
    the version that published them."""

    partition: Path
    files: tuple[Path, ...]
    traces: int
    events: int
    version: int = 0
    #: Lab runs met in two input folders, added once (one note per pair of folders).
    notes: tuple[str, ...] = ()


def parse_labels(items: Sequence[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict, each checked to be a safe partition folder name.

    >>> parse_labels(["implementation=quic-go", "version=v0.63.0"])
    {'implementation': 'quic-go', 'version': 'v0.63.0'}
    """
    labels: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--label takes KEY=VALUE, not {item!r}")
        check_label(key, value)
        if key in labels:
            raise UsageError(f"--label {key} given twice")
        labels[key] = value
    return labels


def check_label(key: str, value: str) -> None:
    """Raise :class:`UsageError` unless ``key=value`` can name a partition folder."""
    if not _KEY.match(key) or len(key) > _MAX_LABEL:
        raise UsageError(
            f"--label key {key!r} cannot name a partition: use a letter, then letters, digits or _"
        )
    if key in _schema().names:
        raise UsageError(f"--label key {key!r} is a column of the store; choose another name")
    if not _VALUE.match(value) or ".." in value or len(value) > _MAX_LABEL:
        raise UsageError(
            f"--label {key}: value {value!r} cannot name a partition: use a letter or digit, "
            "then letters, digits or . _ + - @ : ~ (no '/', '=', '..', spaces; not empty; "
            f"at most {_MAX_LABEL} characters)"
        )
    if len(key) + 1 + len(value) > _MAX_FOLDER:
        raise UsageError(
            f"--label {key}: KEY=VALUE is {len(key) + 1 + len(value)} characters, longer "
            f"than a folder name can be ({_MAX_FOLDER})"
        )


def store_add(
    logs: Sequence[str | os.PathLike],
    store: str | os.PathLike,
    labels: Mapping[str, str] | None = None,
    read: ReadOptions | None = None,
    *,
    batch_rows: int = STREAM_BATCH_ROWS,
) -> AddOutput:
    """Append the events of ``logs`` (any format :func:`statemine.read` reads) to the
    partition of ``labels`` in ``store``, one data file per input file, with its per-trace
    labels and metrics table beside it. A lab run met again in another input folder (same
    run id, same log) is added once, as :func:`statemine.read` reads it
    (:func:`statemine.parse.repeats.drop_repeated_runs`: ``AddOutput.notes`` names both
    folders); two different runs under one id are an :class:`InputError` naming both
    files, before anything is written.

    A new store takes the label keys (in the given order) as its partition keys; an
    existing one needs the same keys. A statemine log is streamed (memory bounded by
    ``batch_rows``, whatever the file's size); an ftrace file is added in batches of at
    most ``batch_rows`` lines (a busier socket alone) and a qlog file in parts of at most
    ``batch_rows`` (and 16,384) rows of one connection, spilled first
    (:func:`statemine.parse.qlog.read_qlog_parts`), their metrics ``batch_rows`` rows at a
    time; other inputs are read one file's
    trace set at a time. Each file is written beside its final name and renamed in, then
    the add publishes one new version listing them all (``AddOutput.version``): a failure
    or signal removes them and publishes nothing, a kill leaves them unpublished (for
    :func:`store_vacuum`).
    """
    from .parse import expand_paths
    from .parse.inputs import ReadOptions, read_files
    from .parse.repeats import drop_repeated_runs

    labels = dict(labels or {})
    for key, value in labels.items():
        check_label(key, value)
    root = Path(store)
    created = not root.exists()
    keys = _store_keys(root, tuple(labels))
    new = not (root / META_NAME).exists()
    where = [f"{k}={labels[k]}" for k in keys]
    read = read or ReadOptions()
    files, notes = drop_repeated_runs(expand_paths(list(logs)))  # as statemine.read does
    if read.fmt == "regex" or read.regex:  # Synoptic's options read the files as one log
        groups: list[list[Path]] = [files]
    else:
        groups = _add_groups(files, read)
    entries: list[Entry] = []
    traces = events = 0
    with _undone_on_error(root, new, created, entries, where):
        if new:  # a new store's keys first: a kill from here on leaves an empty store
            write_json(root / META_NAME, {"format": STORE_FORMAT, "partition_keys": list(keys)})
            crash_point("metadata written")
        for group in groups:
            fmt = _streamed_format(group, read)
            if len(group) > 1 and not (read.fmt == "regex" or read.regex):
                batch = _traceset_batch(_small_logs(group))
            elif fmt == "statemine":
                batch = _stream_batch(group[0], root, batch_rows)
            elif fmt is not None:
                batch = _pieces_batch(group[0], fmt, read, root, batch_rows)
            else:
                batch = _traceset_batch(read_files(group, read))
            entries.append(_write_batch(root, where, batch))
            traces += batch.traces
            events += batch.events
        if new and not (root / META_NAME).exists():  # a racing first add that failed took it
            write_json(root / META_NAME, {"format": STORE_FORMAT, "partition_keys": list(keys)})
        version = commit(root, entries, _partition_check(keys))
    written = tuple(e.data(root) for e in entries)
    return AddOutput(root.joinpath(*where), written, traces, events, version, tuple(notes))


def _add_groups(files: list[Path], read: ReadOptions) -> list[list[Path]]:
    """The inputs of an add, one group per data file: consecutive small statemine logs
    (each at most :data:`GATHER_FILE_BYTES`, together at most :data:`GATHER_BYTES`, no two
    of one name) in one group, read in one pass; any other file alone."""

    groups: list[list[Path]] = []
    run: list[Path] = []
    names: set[str] = set()
    size = 0
    for f in files:
        small = _small_log(f, read)
        if small is None or size + small > GATHER_BYTES or f.name in names:
            if run:
                groups.append(run)
            run, names, size = [], set(), 0
        if small is None:
            groups.append([f])
            continue
        run.append(f)
        names.add(f.name)
        size += small
    if run:
        groups.append(run)
    return groups


def _small_log(path: Path, read: ReadOptions) -> int | None:
    """The size of ``path`` (bytes) when it is a statemine log small enough to gather
    with others into one data file, else None."""
    from .parse import file_format

    if read.fmt not in ("auto", "statemine"):
        return None
    try:
        size = path.stat().st_size
    except OSError:
        return None  # read alone: its reader names the problem
    if size > GATHER_FILE_BYTES:
        return None
    if read.fmt == "auto" and file_format(path) != "statemine":
        return None
    return size


def _small_logs(group: list[Path]) -> TraceSet:
    """Small statemine logs read in one pass (trace ids named by file name, as the
    streamed add of each names them)."""
    from .parse.statemine_log import read_statemine_logs

    return read_statemine_logs(group, [f.name for f in group])


@contextlib.contextmanager
def _undone_on_error(
    root: Path, new: bool, created: bool, entries: list[Entry], where: list[str]
) -> Iterator[None]:
    """On an error (or Ctrl-C, SIGTERM) before the add is published, remove the files of
    its ``entries`` (no version lists them) and the folders that leaves empty; for a
    ``new`` store (no metadata file before) that still has no version, its metadata file,
    and the folder itself when this add ``created`` it: a new store appears with its
    first version only. (A kill skips this: what it leaves is unreferenced, and
    ``statemine store vacuum`` removes it.)"""
    try:
        yield
    except BaseException:
        for entry in entries:
            for path in entry.files(root):
                path.unlink(missing_ok=True)
        for top in ("", LABELS_DIR, METRICS_DIR):
            folder = root.joinpath(top, *where) if top else root.joinpath(*where)
            while folder != root and _rmdir_if_empty(folder):
                folder = folder.parent
        if new and root.is_dir() and not version_numbers(root):
            (root / META_NAME).unlink(missing_ok=True)
            _rmdir_if_empty(root / LOG_DIR)
            if created:
                _rmdir_if_empty(root)
        raise


def _rmdir_if_empty(folder: Path) -> bool:
    """Remove ``folder`` if it is empty; whether it did."""
    try:
        folder.rmdir()
    except OSError:
        return False
    return True


@dataclass(frozen=True)
class _Batch:
    """One input's tables: ``write(path)`` writes the data file, ``metrics(path)`` the
    metrics file (None when the input logs none); the labels are a whole table.
    ``discard()`` removes what the batch holds on disk (its spill folder) when it is not
    written after all."""

    write: Callable[[Path], object]
    labels: pa.Table
    metrics: Callable[[Path], object] | None
    traces: int
    events: int
    discard: Callable[[], object] = lambda: None


def _streamed_format(group: list[Path], read: ReadOptions) -> str | None:
    """The format of a one-file input that is read in pieces (statemine, qlog, ftrace),
    else None (read whole: a saved trace set, Synoptic-style input, any input with -r)."""
    from .parse import detect_format

    if len(group) != 1 or read.regex or read.fmt not in ("auto", "statemine", "qlog", "ftrace"):
        return None  # -r: a Synoptic-style log, as the readers take it
    fmt = detect_format(group[0]) if read.fmt == "auto" else read.fmt
    return fmt if fmt in ("statemine", "qlog", "ftrace") else None


def _pieces(
    path: Path, fmt: str, read: ReadOptions, folder: Path, rows: int
) -> Iterator[TracePart]:
    """The trace set of one qlog or ftrace file, as its reader's consecutive parts (both
    spill to ``folder``; ftrace: pieces of whole traces, ``rows`` lines a batch; qlog:
    slices of at most ``rows`` rows of one connection)."""
    from .parse import _source_names
    from .traces import TracePart

    source = _source_names([path])[path]
    if fmt == "ftrace":
        from .parse.ftrace import read_ftrace_batches

        pieces = read_ftrace_batches(
            path,
            folder,
            batch_rows=rows,
            source=source,
            ignore_nonmatching=read.ignore_nonmatching,
        )
        return (TracePart.whole(ts) for ts in pieces)
    from .parse.qlog import read_qlog_parts

    names = None
    if read.names_file is not None:
        from .parse.statenames import load_names

        names = load_names(read.names_file)
    return read_qlog_parts(
        path,
        folder,
        names=names,
        implementation=read.implementation,
        derive_states=read.derive_states,
        source=source,
        slice_rows=rows,
    )


def _pieces_batch(path: Path, fmt: str, read: ReadOptions, root: Path, rows: int) -> _Batch:
    """The tables of one qlog or ftrace file read part by part (:func:`_pieces`): each
    part's events and metrics (in slices of ``rows``) are appended as row groups to a
    data and a metrics file in a hidden folder of ``root``, moved in by ``_write_batch``;
    the per-trace labels are gathered (about 100 bytes per trace). Memory: one part and
    its tables."""
    labels: list[pa.Table] = []
    traces = events = 0
    with _spill_folder(root) as folder, contextlib.ExitStack() as stack:
        tmp = Path(folder.name)
        data, metrics = tmp / "data.parquet", tmp / "metrics.parquet"
        out = _FileWriter(data, _schema())
        stack.callback(out.close)
        extra = None
        for part in _spilled(_pieces(path, fmt, read, tmp, rows), tmp):
            if part.events is not None:
                out.write(events_table(part.events, part.traces))
                events += len(part.events)
            if part.first:
                labels.append(labels_table(part.traces))
                traces += len(part.traces)
            for piece in _slices(part.metrics, rows):
                table = metrics_table(piece)
                if extra is None:
                    extra = _FileWriter(metrics, table.schema)
                    stack.callback(extra.close)
                extra.write(table)
            del part
            crash_point("a part written")

    def move(source: Path) -> Callable[[Path], None]:
        def write(target: Path) -> None:
            with atomic_path(target) as swap:
                os.replace(source, swap)
                crash_point(f"{source.name} moved beside {target.name}")

        return write

    def write_data(target: Path) -> None:
        try:
            move(data)(target)
        finally:
            folder.cleanup()

    return _Batch(
        write_data,
        _joined_labels(labels),
        move(metrics) if metrics.exists() else None,
        traces,
        events,
        folder.cleanup,
    )


#: errnos that only a write gives (a full disk or quota, a file too big, a read-only disk).
_WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS)


def _spilled(parts: Iterator[TracePart], folder: Path) -> Iterator[TracePart]:
    """``parts``, with a write error of the reader's spill files that names no file (a
    full disk) named by the spill ``folder`` it writes in."""
    while True:
        try:
            part = next(parts)
        except StopIteration:
            return
        except OSError as exc:
            if exc.filename is None and exc.errno in _WRITE_ERRNOS:
                raise os_error(folder, exc) from None
            raise
        yield part


class _FileWriter:
    """A Parquet file written row group by row group (zstd, at most :data:`ROW_GROUP`
    rows each); an OS error names the file and the cause (e.g. a full disk)."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        import pyarrow.parquet as pq

        self.path = path
        with os_errors(path):
            self._writer = pq.ParquetWriter(path, schema, compression="zstd")

    def write(self, table: pa.Table) -> None:
        with os_errors(self.path):
            self._writer.write_table(table, ROW_GROUP)

    def close(self) -> None:
        with os_errors(self.path):
            self._writer.close()


def _slices(frame: pd.DataFrame | None, rows: int) -> Iterator[pd.DataFrame]:
    """``frame`` in consecutive slices of at most ``rows`` rows (none for None)."""
    for first in range(0, 0 if frame is None else len(frame), rows):
        assert frame is not None
        yield frame.iloc[first : first + rows]


def _joined_labels(tables: list[pa.Table]) -> pa.Table:
    """The labels tables of consecutive pieces as one, their label dtypes merged (a key
    whose dtype differs between pieces is text)."""
    import json

    import pyarrow as pa

    types: dict[str, str] = {}
    for table in tables:
        for key, kind in json.loads(table.schema.metadata[_LABEL_TYPES]).items():
            types[key] = kind if types.get(key, kind) == kind else "str"
    joined = pa.concat_tables([t.replace_schema_metadata(None) for t in tables])
    return joined.replace_schema_metadata({_LABEL_TYPES: json.dumps(types).encode()})


def _traceset_batch(ts: TraceSet) -> _Batch:
    """The tables of one trace set read whole."""
    table = to_table(ts)
    metrics = None if ts.metrics is None else metrics_table(ts.metrics)
    return _Batch(
        lambda path: _write_table(table, path),
        labels_table(ts.traces),
        None if metrics is None else lambda path: _write_table(metrics, path),
        int(ts.events["trace"].nunique()),
        len(ts.events),
    )


@contextlib.contextmanager
def _spill_folder(root: Path) -> Iterator[tempfile.TemporaryDirectory]:
    """A hidden spill folder in the store ``root``
    (:func:`statemine.store_stream.spill_folder`), kept on success (the batch's writer
    cleans it up); on an error it is removed, and so is ``root`` when this call created it
    (a new store appears with its first file only)."""
    from .store_stream import spill_folder

    created = not root.exists()
    folder = spill_folder(root)
    try:
        yield folder
    except BaseException:
        folder.cleanup()
        if created:
            root.rmdir()
        raise


def _stream_batch(path: Path, root: Path, batch_rows: int) -> _Batch:
    """The tables of one statemine log, its data file written by streaming (spilled to a
    hidden folder in ``root`` first, to learn its traces)."""
    import numpy as np
    import pandas as pd

    from .parse.statemine_log import trace_ids
    from .store_stream import spill

    with _spill_folder(root) as folder:
        sp = spill(path, Path(folder.name))
        crash_point("log spilled")
    ids = trace_ids(path.name, sp.table)
    traces = pd.DataFrame(
        {"trace": ids, "conn": sp.table.conn, "role": pd.Series(sp.table.role, dtype=object)}
    )

    def write(target: Path) -> None:
        try:
            _write_streamed(sp, ids, name_text(str(path)), target, batch_rows)
        finally:
            folder.cleanup()

    return _Batch(
        write,
        labels_table(traces),
        None,
        int((sp.table.n_events > 0).sum()),
        int(np.sum(sp.blocks)),
        folder.cleanup,
    )


def _write_streamed(sp: Spill, ids: list[str], source: str, target: Path, rows: int) -> None:
    """The data file of a spilled log: its traces in code order, ``rows`` events per row
    group (a longer trace in several)."""
    import numpy as np
    import pyarrow.parquet as pq

    from .parse.spill import batches
    from .store_stream import gather

    schema = _schema()
    seq_start = np.zeros(len(ids), np.int64)
    with atomic_path(target) as tmp, pq.ParquetWriter(tmp, schema, compression="zstd") as out:
        for first, stop in batches(sp.table.n_events, rows):
            for part in gather(sp, first, stop, rows):
                out.write_table(rows_table(part, seq_start, ids, sp, source, schema), rows)
                crash_point("a row group written")


def labels_table(traces: pd.DataFrame) -> pa.Table:
    """The per-trace labels (``traces`` columns but trace, source and end) as rows
    ``trace, key, value`` (:func:`_labels_schema`), values as text (``str``; a float's
    shortest repr, so it reads back exactly); a missing value (None, NaN) has no row. The
    schema metadata keeps every key, in order, with its dtype (``bool``, ``int64``,
    ``float64`` or ``str``) for :func:`trace_labels`."""
    import json

    import pandas as pd
    import pyarrow as pa

    keys = [c for c in traces.columns if c not in ("trace", "source", "end")]
    long = traces.melt(id_vars="trace", value_vars=keys, var_name="key")
    long = long[long["value"].notna()]
    columns = {
        c: dictionary_array(*_codes(pd.Series(long[c].astype(str).to_numpy(), dtype=object)))
        for c in ("trace", "key", "value")
    }
    kinds = {"b": "bool", "i": "int64", "u": "int64", "f": "float64"}
    types = {k: kinds.get(traces[k].dtype.kind, "str") for k in keys}
    table = pa.table(columns).cast(_labels_schema())
    return table.replace_schema_metadata({_LABEL_TYPES: json.dumps(types).encode()})


def metrics_table(metrics: pd.DataFrame) -> pa.Table:
    """``TraceSet.metrics`` in :func:`_metrics_schema` (a column it lacks is null; one
    outside :data:`METRICS_COLUMNS` is not stored). The schema metadata lists the
    columns it has, in its order, for :func:`file_metrics`."""
    import json

    import pyarrow as pa

    schema = _metrics_schema()
    columns = {"trace": dictionary_array(*_codes(metrics["trace"]))}
    for f in schema:
        if f.name != "trace":
            columns[f.name] = (
                pa.array(metrics[f.name].to_numpy(float), from_pandas=True)
                if f.name in metrics.columns
                else pa.nulls(len(metrics), f.type)
            )
    logged = [c for c in metrics.columns if c in METRICS_COLUMNS]
    table = pa.table(columns).cast(schema)
    return table.replace_schema_metadata({_LOGGED: json.dumps(logged).encode()})


def _write_batch(root: Path, where: list[str], batch: _Batch) -> Entry:
    """Write one input's files: labels, metrics, then the data file (each atomically; if
    a later one fails, the earlier ones are removed). Returns its entry for the next
    version (no reader sees the files before it is published)."""
    ident = f"{time.time_ns():x}-{os.getpid()}-{secrets.token_hex(4)}"
    entry = Entry(tuple(where), ident, batch.events, batch.metrics is not None)
    meta = {
        **(batch.labels.schema.metadata or {}),
        _HAS_METRICS: b"%d" % (batch.metrics is not None),
    }
    first: list[tuple[Path, Callable[[Path], object]]] = [
        (
            entry.labels(root),
            lambda path: _write_table(batch.labels.replace_schema_metadata(meta), path),
        )
    ]
    if batch.metrics is not None:
        first.append((entry.metrics_file(root), batch.metrics))
    done: list[Path] = []
    try:
        for path, write in first:
            write(path)
            done.append(path)
            crash_point(f"{path.name} renamed in")
        batch.write(entry.data(root))
        crash_point("data file renamed in")
    except BaseException:
        for path in done:
            path.unlink(missing_ok=True)
        batch.discard()
        raise
    return entry


def to_table(ts: TraceSet) -> pa.Table:
    """The events of ``ts`` in the store's schema (:func:`events_table`)."""
    return events_table(ts.events, ts.traces)


def events_table(ev: pd.DataFrame, traces: pd.DataFrame) -> pa.Table:
    """Events rows (columns as ``TraceSet.events``) in the store's schema (:func:`_schema`),
    with their traces' ``source`` and ``end`` from ``traces`` repeated on every row
    (Parquet's dictionary and run-length encoding make the repeats nearly free). Metric
    columns a reader does not give are null."""
    import pandas as pd
    import pyarrow as pa

    schema = _schema()
    per_trace = traces.set_index("trace")
    trace_codes, trace_ids = _codes(ev["trace"])
    columns = {}
    for f in schema:
        if f.name in ("source", "end"):  # per trace, indexed by the trace codes
            values = per_trace[f.name].reindex(trace_ids.astype(str)).to_numpy()
            if f.name == "source":
                codes, names = _codes(pd.Series(values, dtype=object).astype(str))
                columns[f.name] = dictionary_array(codes[trace_codes], names)
            else:
                columns[f.name] = pa.array(values.astype("float64")[trace_codes])
        elif pa.types.is_dictionary(f.type):
            columns[f.name] = dictionary_array(*_codes(ev[f.name]))
        elif f.name == "fields" and f.name in ev.columns:
            columns[f.name] = fields_array(ev[f.name])
        elif f.name in ev.columns:
            columns[f.name] = pa.array(ev[f.name].to_numpy(), type=f.type, from_pandas=True)
        else:
            columns[f.name] = pa.nulls(len(ev), f.type)
    return pa.table(columns).cast(schema)


def fields_array(column: pd.Series) -> pa.Array:
    """A ``fields`` column (text, missing as None or NaN) as an Arrow string array, null
    where missing."""
    import pyarrow as pa

    values = column.astype(object).to_numpy()
    return pa.array(values, type=pa.string(), from_pandas=True)


def _codes(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes (int32) and the distinct values (as str) of a text column."""
    import numpy as np
    import pandas as pd

    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy().astype("int32"), column.cat.categories.astype(
            str
        ).to_numpy()
    codes, uniques = pd.factorize(column, sort=False)
    return codes.astype("int32"), np.asarray(uniques, dtype=object).astype(str)


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
    import numpy as np
    import pyarrow as pa

    from .parse.statemine_log import KINDS, NUMERIC_KEYS
    from .store_stream import fields_column

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
        "fields": fields_column(sp, rows["fields_at"], rows["fields_len"]),
        "source": dictionary_array(np.zeros(len(code), np.int32), [source]),
        "end": pa.array(sp.table.close_time[code]),
    }
    return pa.table(columns).cast(schema)


def dictionary_array(codes: np.ndarray, values: Sequence[str] | np.ndarray) -> pa.DictionaryArray:
    """An Arrow dictionary array of int32 ``codes`` into the str ``values``."""
    import pyarrow as pa

    return pa.DictionaryArray.from_arrays(
        pa.array(codes, pa.int32()), pa.array(values, pa.string())
    )


def _write_table(table: pa.Table, path: Path) -> Path:
    import pyarrow.parquet as pq

    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd", row_group_size=ROW_GROUP)
        crash_point(f"{path.name} written, not renamed")
    return path


def _store_keys(root: Path, given: tuple[str, ...]) -> tuple[str, ...]:
    """The partition keys of the store at ``root`` (``given`` for a new one); an existing
    store must be given the same set of keys."""
    if root.exists() and not root.is_dir():
        raise StatemineError(f"{root}: exists and is not a folder (a store is a folder)")
    meta = root / META_NAME
    if not meta.exists():
        if root.exists() and any(not n.startswith(".") for n in os.listdir(root)):
            raise StatemineError(f"{root}: not a statemine store (no {META_NAME}) and not empty")
        return given
    keys = _read_meta(root)
    if set(keys) != set(given):
        raise UsageError(
            f"{root}: the store is partitioned by {', '.join(keys) or 'nothing'}; "
            f"give exactly those labels (given: {', '.join(given) or 'none'})"
        )
    return keys


def _read_meta(root: Path) -> tuple[str, ...]:
    return _read_meta_doc(root)[0]


def _read_meta_doc(root: Path, *, old_ok: bool = False) -> tuple[tuple[str, ...], int]:
    """The store's partition keys and format, checked; a store of an older format is an
    error naming the command that migrates it (unless ``old_ok``)."""
    meta = root / META_NAME
    try:
        doc = json.loads(meta.read_text(encoding="utf-8"))
        keys = tuple(str(k) for k in doc["partition_keys"])
        version = int(doc["format"])
    except FileNotFoundError:
        raise InputError(root, None, f"not a statemine store (no {META_NAME})") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(meta, None, f"damaged store metadata: {exc}") from None
    if version > STORE_FORMAT:
        raise InputError(meta, None, f"written by a newer statemine (store format {version})")
    if not all(_KEY.match(k) for k in keys):
        raise InputError(meta, None, "damaged store metadata: a partition key is not a name")
    if version < STORE_FORMAT and not old_ok:
        raise InputError(
            root,
            None,
            f"a store of format {version}, without versions (older statemine): run "
            f"`statemine store migrate --store {root}` once, then use it",
        )
    return keys, version


def _partition_check(keys: tuple[str, ...]) -> Callable[[Sequence[str]], bool]:
    """Whether folder names are a partition of a store with ``keys``: ``KEY=VALUE`` per
    key, in order, each value a label value (so no path leaves the store)."""

    def ok(parts: Sequence[str]) -> bool:
        if len(parts) != len(keys):
            return False
        for part, key in zip(parts, keys):
            k, sep, value = part.partition("=")
            if k != key or not sep or not _VALUE.match(value) or ".." in value:
                return False
        return True

    return ok


def _published(root: Path) -> tuple[tuple[str, ...], Version]:
    """The store's partition keys and its latest published version."""
    keys = _read_meta(root)
    return keys, latest(root, _partition_check(keys))


def _store_order(entry: Entry) -> tuple[tuple[str, ...], str]:
    """Store order: partition folders by name level by level, then data files by name."""
    return entry.partition, entry.data(Path()).name


def store_info(store: str | os.PathLike) -> StoreInfo:
    """List the partitions of the latest version of ``store`` with their files, traces
    and events, checking each listed file: the data file's schema and rows, its labels
    file (and metrics file when it has one) and their schemas. Raises
    :class:`InputError` naming the file otherwise."""
    root = Path(store)
    keys, version = _published(root)
    groups: dict[tuple[str, ...], list[Entry]] = {}
    for entry in sorted(version.entries, key=_store_order):
        groups.setdefault(entry.partition, []).append(entry)
    parts = [_partition_info(root, keys, part, entries) for part, entries in groups.items()]
    return StoreInfo(keys, tuple(parts), version.number)


def _partition_info(
    root: Path, keys: tuple[str, ...], partition: tuple[str, ...], entries: list[Entry]
) -> PartitionInfo:
    """One partition's files, traces, events, trace label keys and metrics rows."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    traces: set[str] = set()
    label_keys: set[str] = set()
    events = metrics = 0
    for entry in entries:
        path = entry.data(root)
        events += _check_data(root, entry)
        try:
            ids = pq.read_table(path, columns=["trace"])["trace"].cast(pa.string())
            traces.update(pc.unique(ids).to_pylist())
        except (pa.ArrowException, OSError) as exc:
            raise InputError(path, None, f"not a readable Parquet file: {exc}") from None
        _check_sidecars(root, entry)
        label_keys |= _label_keys(entry.labels(root))
        if entry.metrics:
            metrics += _check_schema(entry.metrics_file(root), *_metrics_schemas())
    labels = dict(zip(keys, (p.partition("=")[2] for p in partition)))
    return PartitionInfo(
        labels, len(entries), len(traces), events, tuple(sorted(label_keys)), metrics
    )


def _check_data(root: Path, entry: Entry) -> int:
    """The rows of the data file of ``entry``, checked: there, the store's schema, and
    the rows its version lists."""
    path = entry.data(root)
    if not path.exists():
        raise InputError(path, None, "listed by the store's version but missing (missing files)")
    rows = _check_schema(path, _schema(), _schema(fields=False))
    if rows != entry.rows:
        raise InputError(
            path, None, f"{rows} rows where the store's version lists {entry.rows} (replaced?)"
        )
    return rows


def _label_keys(labels: Path) -> set[str]:
    """The label names in a labels file (its ``key`` column only)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        found = pq.read_table(labels, columns=["key"])["key"].cast(pa.string())
    except (pa.ArrowException, OSError, KeyError) as exc:
        raise InputError(labels, None, f"not a readable Parquet file: {exc}") from None
    return {str(k) for k in pc.unique(found).to_pylist()}


def _check_sidecars(root: Path, entry: Entry) -> None:
    """An :class:`InputError` naming the data file of ``entry`` when its labels file is
    not there, or its metrics file is not there although the version lists one ("missing
    files"); the labels file's schema is checked."""
    data, labels, metrics = entry.data(root), entry.labels(root), entry.metrics_file(root)
    if not labels.exists():
        raise InputError(data, None, f"its labels file is missing (missing files): {labels}")
    _check_schema(labels, _labels_schema())
    if entry.metrics and not metrics.exists():
        raise InputError(data, None, f"its metrics file is missing (missing files): {metrics}")


def _labels_meta(path: Path) -> dict[bytes, bytes]:
    """The schema metadata of a (schema-checked) labels file (its footer only)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return dict(pq.read_schema(path).metadata or {})
    except (pa.ArrowException, OSError) as exc:
        raise InputError(path, None, f"not a readable Parquet file: {exc}") from None


def _check_schema(path: Path, schema: pa.Schema, *others: pa.Schema) -> int:
    """The rows of the Parquet file ``path``; an :class:`InputError` unless it has
    ``schema`` (or one of ``others``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        found, rows = pf.schema_arrow, pf.metadata.num_rows
    except (pa.ArrowException, OSError) as exc:
        raise InputError(path, None, f"not a readable Parquet file: {exc}") from None
    if not any(found.equals(s) for s in (schema, *others)):
        raise InputError(
            path,
            None,
            f"schema differs from the store's (mixed schemas): {schema_difference(found, schema)}",
        )
    return rows


def schema_difference(found: pa.Schema, want: pa.Schema) -> str:
    """How ``found`` differs from ``want``, in a few words (at most five names per kind):
    columns missing, extra, of another type; else the columns as found.

    >>> import pyarrow as pa
    >>> want = pa.schema([("trace", pa.string()), ("time", pa.float64())])
    >>> schema_difference(pa.schema([("time", pa.string()), ("x", pa.int64())]), want)
    'missing trace; not in the store: x; time is string, not double'
    """
    names, wanted = found.names, want.names

    def listed(items: list[str]) -> str:
        return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")

    parts = []
    if missing := [n for n in wanted if n not in names]:
        parts.append(f"missing {listed(missing)}")
    if extra := [n for n in names if n not in wanted]:
        parts.append(f"not in the store: {listed(extra)}")
    retyped = [
        f"{n} is {found.field(n).type}, not {want.field(n).type}"
        for n in wanted
        if n in names and names.count(n) == 1 and not found.field(n).type.equals(want.field(n).type)
    ]
    if retyped:
        parts.append(listed(retyped))
    if not parts:
        parts.append(
            f"the columns (repeated, in another order or of another nullability): {listed(names)}"
        )
    return "; ".join(parts)


def _partition_folders(root: Path, keys: tuple[str, ...]) -> list[Path]:
    """The partition folders (depth ``len(keys)``), sorted, each level named ``KEY=VALUE``."""
    level = [root]
    for key in keys:
        below = []
        for folder in level:
            for entry in sorted(_visible(folder)):
                path = folder / entry
                k, sep, value = entry.partition("=")
                if not path.is_dir() or not sep or k != key or not _VALUE.match(value):
                    raise InputError(
                        path, None, f"not a partition folder {key}=VALUE of this store"
                    )
                below.append(path)
        level = below
    return level


def _visible(folder: Path) -> list[str]:
    return [n for n in os.listdir(folder) if not n.startswith((".", "_"))]


def _folder_labels(root: Path, folder: Path, keys: tuple[str, ...]) -> dict[str, str]:
    """The labels (key -> value) of the partition folder ``folder`` of the store ``root``."""
    return dict(zip(keys, (p.partition("=")[2] for p in folder.relative_to(root).parts)))


def _data_files(folder: Path, *, empty_ok: bool = False) -> list[tuple[Path, int]]:
    """The data files of one partition folder of a store of format 1-3 (sorted by name)
    and their rows, checking each: a Parquet file (its footer only) with the store's
    schema; no other files, and at least one ("missing files") unless ``empty_ok``."""
    schema, old = _schema(), _schema(fields=False)
    names = sorted(_visible(folder))
    files = [n for n in names if n.endswith(".parquet")]
    stray = [n for n in names if n not in files]
    if stray:
        raise InputError(folder / stray[0], None, "not a data file of the store (*.parquet)")
    if not files and not empty_ok:
        raise InputError(folder, None, "a partition without data files (missing files)")
    return [(folder / name, _check_schema(folder / name, schema, old)) for name in files]


def label_names(store: str | os.PathLike) -> set[str]:
    """Every trace label a trace of ``store`` can carry: its partition keys and the label
    names of the latest version's labels files (their ``key`` column only; no events
    read). Raises :class:`InputError` naming a damaged metadata, version or labels file."""
    root = Path(store)
    keys, version = _published(root)
    names = set(keys)
    for entry in version.entries:
        names |= _label_keys(entry.labels(root))
    return names


@dataclass(frozen=True)
class StoreFile:
    """One data file of a store: its path, rows, and its partition's labels (key -> value)."""

    path: Path
    rows: int
    labels: dict[str, str]


def store_files(
    store: str | os.PathLike, where: Mapping[str, str] | None = None
) -> list[StoreFile]:
    """The data files of the latest version of ``store`` in store order (partition
    folders sorted by path, files by name) whose partition labels equal ``where`` (key
    -> value; the pruning is a pyarrow dataset filter on the partition columns, so no
    other partition's files are opened). Checks the kept files' schemas and rows and that
    their labels and metrics files are there (:func:`_check_sidecars`). Raises
    :class:`UsageError` for a key that is not a partition key, or when no partition
    matches."""
    root = Path(store)
    keys, version = _published(root)
    if not version.entries:
        raise InputError(root, None, "the store has no partitions (missing files)")
    where = dict(where or {})
    unknown = [k for k in where if k not in keys]
    if unknown:
        raise UsageError(
            f"{root}: the traces have no label {unknown[0]!r} (labels: {', '.join(keys) or 'none'})"
        )
    entries = sorted(version.entries, key=_store_order)
    folders = list(dict.fromkeys(root.joinpath(*e.partition) for e in entries))
    labels = {folder: _folder_labels(root, folder, keys) for folder in folders}
    kept = set(_pruned(root, keys, folders, where) if where else folders)
    if not kept:
        values = {k: sorted({lab[k] for lab in labels.values()})[:8] for k in where}
        shown = " ".join(f"{k}={v}" for k, v in where.items())
        raise UsageError(f"{root}: no trace matches {shown} (values: {values})")
    files = []
    for entry in entries:
        folder = root.joinpath(*entry.partition)
        if folder in kept:
            files.append(StoreFile(entry.data(root), _check_data(root, entry), labels[folder]))
            _check_sidecars(root, entry)
    return files


def published_files(store: str | os.PathLike, kind: str = "data") -> list[Path]:
    """The ``kind`` files (``data``, ``labels`` or ``metrics``) of the latest version of
    ``store``, in store order: what a reader of one version reads (docs/store.md shows
    them given to pyarrow, DuckDB, Spark and Polars)."""
    root = Path(store)
    _, version = _published(root)
    entries = sorted(version.entries, key=_store_order)
    if kind == "data":
        return [e.data(root) for e in entries]
    if kind == "labels":
        return [e.labels(root) for e in entries]
    if kind == "metrics":
        return [e.metrics_file(root) for e in entries if e.metrics]
    raise UsageError(f"kind must be data, labels or metrics, not {kind!r}")


@dataclass(frozen=True)
class MigrateOutput:
    """What :func:`store_migrate` did: the format it found, the version it published and
    the data files that version lists."""

    format: int
    version: int
    files: int


def store_migrate(store: str | os.PathLike) -> MigrateOutput:
    """Publish the data files of a store of an older format (1-3: the files in its
    folders were the store) as a version, then mark the store format 4. Checks the old
    layout as its readers did (folder names, schemas, each data file's labels file and
    metrics file); empty partition folders and labels or metrics files without a data
    file (a killed add's) are left to :func:`store_vacuum`. A format 1 store gets an
    empty labels file per data file. Run again after an interruption."""
    root = Path(store)
    keys, fmt = _read_meta_doc(root, old_ok=True)
    if fmt == STORE_FORMAT:
        raise UsageError(f"{root}: already of store format {STORE_FORMAT}; nothing to migrate")
    check = _partition_check(keys)
    entries = []
    for folder in _partition_folders(root, keys):
        parts = folder.relative_to(root).parts
        for path, rows in _data_files(folder, empty_ok=True):
            ident = path.name[len("part-") : -len(".parquet")]
            if not path.name.startswith("part-") or not IDENT.match(ident) or ".." in ident:
                raise InputError(path, None, "not a data file of the store (part-<id>.parquet)")
            entry = Entry(parts, ident, rows, entry_metrics := _metrics_of(root, parts, ident))
            if fmt == 1:
                _write_empty_labels(path, entry.labels(root))
            _check_sidecars(root, entry)
            if not entry_metrics and _labels_meta(entry.labels(root)).get(_HAS_METRICS) == b"1":
                _check_sidecars(root, dataclasses.replace(entry, metrics=True))  # names it
            entries.append(entry)
    number = commit(root, entries, check, replace=True)
    write_json(root / META_NAME, {"format": STORE_FORMAT, "partition_keys": list(keys)})
    return MigrateOutput(fmt, number, len(entries))


def _metrics_of(root: Path, partition: tuple[str, ...], ident: str) -> bool:
    """Whether the data file ``ident`` of ``partition`` has a metrics file."""
    return Entry(partition, ident, 0, True).metrics_file(root).exists()


def _write_empty_labels(data: Path, labels: Path) -> None:
    """A labels file without labels for the data file ``data`` of a format 1 store."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if labels.exists():  # an interrupted migration wrote it
        return
    try:
        ids = pc.unique(pq.read_table(data, columns=["trace"])["trace"].cast(pa.string()))
    except (pa.ArrowException, OSError) as exc:
        raise InputError(data, None, f"not a readable Parquet file: {exc}") from None
    table = labels_table(pd.DataFrame({"trace": ids.to_pylist()}))
    meta = {**(table.schema.metadata or {}), _HAS_METRICS: b"0"}
    _write_table(table.replace_schema_metadata(meta), labels)


@dataclass(frozen=True)
class VacuumOutput:
    """What :func:`store_vacuum` removed (paths, bytes) and what stays: the latest
    version's number and data files."""

    removed: tuple[Path, ...]
    bytes: int
    version: int
    files: int


def store_vacuum(store: str | os.PathLike, grace: float = VACUUM_GRACE) -> VacuumOutput:
    """Remove from ``store`` the files no version needs (a killed or failed add's data,
    labels and metrics files, temporaries, ``.spill-*`` folders; older version files)
    and the folders that leaves empty, when older than ``grace`` seconds: an add running
    now has unreferenced files too, younger than that. Files statemine does not write
    are never removed."""
    from .store_log import vacuum

    if grace < 0:
        raise UsageError(f"--grace must be at least 0 seconds, not {grace}")
    root = Path(store)
    _, version = _published(root)
    live = [p for e in version.entries for p in e.files(root)]
    keep = [root / META_NAME, *([version.path] if version.path else [])]
    removed, size = vacuum(root, live, keep, grace)
    return VacuumOutput(tuple(removed), size, version.number, len(version.entries))


def _pruned(
    root: Path, keys: tuple[str, ...], folders: list[Path], where: Mapping[str, str]
) -> list[Path]:
    """The partition ``folders`` whose labels match ``where``, by a pyarrow dataset filter
    on the Hive partition columns (evaluated on the folder names alone)."""
    import functools
    import operator

    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.fs

    part = ds.partitioning(pa.schema([(k, pa.string()) for k in keys]), flavor="hive")
    # one placeholder path per folder: the filter reads the partition values off the path
    paths = [str(folder / "x.parquet") for folder in folders]
    expr = functools.reduce(operator.and_, (ds.field(k) == str(v) for k, v in where.items()))
    fragments = ds.FileSystemDataset.from_paths(
        paths,
        schema=pa.schema([(k, pa.string()) for k in keys]),
        format=ds.ParquetFileFormat(),
        filesystem=pyarrow.fs.LocalFileSystem(),
        partitions=[part.parse(f"{f.relative_to(root).as_posix()}/") for f in folders],
    ).get_fragments(filter=expr)
    kept = {Path(f.path).parent for f in fragments}
    return [folder for folder in folders if folder in kept]


def read_store(
    store: str | os.PathLike,
    where: Mapping[str, str] | None = None,
    *,
    mapper: Callable[[Callable[[StoreFile], Any], list[StoreFile]], Iterable[Any]] = map,
) -> TraceSet:
    """The traces of ``store`` (partitions pruned to ``where``, as :func:`store_files`) as
    one :class:`TraceSet`, in store order, with their stored per-trace labels
    (:func:`trace_labels`) and metrics tables (:func:`file_metrics`); each trace is also
    labelled with its partition's labels (which win over a per-trace label of the same
    key). A trace id met again in a later file (the same input added twice) gets ``#2``,
    ``#3``, ... appended. ``mapper(fn, files)`` reads the files (in order; e.g. on Dask
    workers). Raises :class:`InputError` naming a file whose rows are not grouped by
    trace in log order."""
    import numpy as np
    import pandas as pd

    from .traces import TraceSet

    events, traces, metrics = [], [], []
    seen: dict[str, int] = {}
    for ev, tr, mx in mapper(file_frames, store_files(store, where)):
        ids = [unique_id(str(t), seen) for t in tr["trace"]]
        if ids != list(tr["trace"]):
            runs = np.flatnonzero(
                np.r_[True, ev["trace"].to_numpy()[1:] != ev["trace"].to_numpy()[:-1]]
            )
            ev["trace"] = np.repeat(np.array(ids, dtype=object), np.diff(np.r_[runs, len(ev)]))
            if mx is not None:
                mx["trace"] = mx["trace"].map(dict(zip(tr["trace"], ids)))
            tr["trace"] = ids
        events.append(ev)
        traces.append(tr)
        if mx is not None:
            metrics.append(mx)
    joined = None
    if metrics:
        joined = pd.concat(metrics, ignore_index=True)
        joined["trace"] = joined["trace"].astype("category")
    ev = pd.concat(events, ignore_index=True)
    if "fields" in ev.columns:  # text, NaN where missing (a file without it: all missing)
        ev["fields"] = ev["fields"].astype(pd.StringDtype(na_value=np.nan))
    return TraceSet.from_events(ev, pd.concat(traces, ignore_index=True), None, joined)


def file_frames(f: StoreFile) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    """The events, traces and metrics (None if not stored) frames of one data file (trace
    ids as stored; the traces labelled with their stored labels, then the partition's;
    metric columns of the events only when logged)."""
    import numpy as np
    import pandas as pd

    from .traces import NUMERIC_FIELDS

    table = read_data_file(f.path)
    ids = table["trace"].astype(str).to_numpy()
    first = np.r_[True, ids[1:] != ids[:-1]] if len(ids) else np.zeros(0, bool)
    ev = pd.DataFrame(
        {
            "trace": ids,
            **{c: table[c] for c in ("seq", "time", "line")},
            **{c: table[c].astype(str) for c in ("kind", "state")},
            **{c: table[c] for c in NUMERIC_FIELDS if table[c].notna().any()},
            **({"fields": table["fields"]} if table["fields"].notna().any() else {}),
        }
    )
    tr = pd.DataFrame(
        {
            "trace": ids[first],
            "source": table["source"].astype(str).to_numpy()[first],
            "end": table["end"].to_numpy()[first],
        }
    )
    metrics = _sidecar(f, METRICS_DIR)
    return ev, with_labels(f, tr), file_metrics(metrics) if metrics.exists() else None


def with_labels(f: StoreFile, traces: pd.DataFrame) -> pd.DataFrame:
    """``traces`` (the traces frame of the data file ``f``: ``trace`` ids as stored, one
    row per trace in file order) with their stored labels (:func:`trace_labels`), then
    the partition's (which win)."""
    import pandas as pd

    labels = _sidecar(f, LABELS_DIR)
    if labels.exists():
        stored = trace_labels(labels, traces["trace"].to_numpy())
        stored = stored.drop(columns=[k for k in f.labels if k in stored])
        traces = pd.concat([traces.reset_index(drop=True), stored], axis=1)
    return traces.assign(**f.labels)


def _sidecar(f: StoreFile, top: str) -> Path:
    """The labels (``top`` = :data:`LABELS_DIR`) or metrics file of the data file ``f``."""
    folder = f.path.parent
    root = folder.parents[len(f.labels) - 1] if f.labels else folder
    prefix = "labels-" if top == LABELS_DIR else "metrics-"
    ident = f.path.name[len("part-") :]
    return (root / top).joinpath(*folder.relative_to(root).parts, prefix + ident)


def _read_parquet(path: Path, schemas: Sequence[pa.Schema]) -> pa.Table:
    """A labels or metrics file, checked to have one of ``schemas``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    _check_schema(path, *schemas)
    try:
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(path, None, f"not a readable Parquet file: {exc}") from None


def trace_labels(path: Path, ids: Sequence[str] | np.ndarray) -> pd.DataFrame:
    """The labels file ``path`` as one column per key (in stored order, also a key no
    trace has a value for) and one row per trace of ``ids`` (a trace without a value:
    None, or NaN for a float label). A label stored as bool, integer or float gets that
    dtype back when every trace has it."""
    import json

    import pandas as pd

    table = _read_parquet(path, [_labels_schema()])
    types = json.loads((table.schema.metadata or {}).get(_LABEL_TYPES, b"{}"))
    long = pd.DataFrame({c: table[c].to_numpy(zero_copy_only=False) for c in table.column_names})
    long = long.astype(str)
    try:
        wide = long.pivot(index="trace", columns="key", values="value")
    except ValueError:
        raise InputError(path, None, "a trace has the same label twice") from None
    keys = list(types) or list(pd.unique(long["key"]))  # a file without types: its keys
    wide = wide.reindex(index=list(ids), columns=keys)
    out: dict[str, np.ndarray] = {}
    for key in wide.columns:
        values = wide[key]
        kind = types.get(key)
        if kind == "float64":
            out[key] = values.astype("float64").to_numpy()
        elif kind == "bool" and values.notna().all():
            out[key] = (values == "True").to_numpy()
        elif kind == "int64" and values.notna().all():
            out[key] = values.astype("int64").to_numpy()
        else:
            out[key] = values.astype(object).where(values.notna(), None).to_numpy()
    return pd.DataFrame(out, index=range(len(ids)))


def file_metrics(path: Path) -> pd.DataFrame:
    """The metrics file ``path`` as ``TraceSet.metrics`` (trace ids as stored): ``trace``,
    then the columns its writer logged (all but all-null ones for a file that does not
    list them)."""
    import json

    table = _read_parquet(path, _metrics_schemas())
    listed = (table.schema.metadata or {}).get(_LOGGED)
    names = [c for c in table.column_names if c != "trace"]
    if listed is not None:
        keep = [c for c in json.loads(listed) if c in names]
    else:
        keep = ["time"] + [c for c in names[1:] if table[c].null_count < len(table)]
    frame = table.select(["trace", *keep]).to_pandas()
    frame["trace"] = frame["trace"].astype(str)
    return frame


def read_data_file(path: Path) -> pd.DataFrame:
    """One data file of a store as a DataFrame (text columns as categoricals), its rows
    checked (:func:`check_rows`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
        if "fields" not in table.column_names:  # written before the column: all missing
            table = table.append_column("fields", pa.nulls(len(table), pa.string()))
        frame = table.select(_schema().names).cast(_schema()).to_pandas()
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(path, None, f"not a readable Parquet file: {exc}") from None
    check_rows(
        path, frame["trace"].cat.codes.to_numpy(), frame["seq"].to_numpy(), frame["time"].to_numpy()
    )
    return frame


def check_rows(
    path: Path, trace: np.ndarray, seq: np.ndarray, time: np.ndarray, first_seq: int = 0
) -> None:
    """Raise :class:`InputError` naming ``path`` unless the rows (trace codes, equal codes
    = one trace) are grouped by trace, each trace's ``seq`` is ``first_seq`` (its first
    run's start), then 0, 1, 2, ... for later traces, consecutive, and its times finite
    and non-decreasing. ``first_seq`` lets a trace continue from an earlier block."""
    import numpy as np

    if not len(trace):
        return
    if not np.isfinite(time).all():
        raise InputError(path, None, "a time that is not a finite number of seconds")
    new = np.r_[True, trace[1:] != trace[:-1]]
    starts = np.flatnonzero(new)
    expected = np.zeros(len(starts), np.int64)
    expected[0] = first_seq
    if (seq[starts] != expected).any() or (np.diff(seq)[~new[1:]] != 1).any():
        raise InputError(path, None, "seq is not 0, 1, 2, ... within a trace")
    if len(np.unique(trace)) != len(starts):
        raise InputError(path, None, "rows are not grouped by trace (a trace's rows are apart)")
    if (np.diff(time)[~new[1:]] < 0).any():
        raise InputError(path, None, "time goes backwards within a trace")


def unique_id(trace: str, seen: dict[str, int]) -> str:
    """``trace``, or when ``seen`` counted it before, ``trace#N`` for its N-th sighting."""
    seen[trace] = seen.get(trace, 0) + 1
    return trace if seen[trace] == 1 else f"{trace}#{seen[trace]}"
