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
input (a saved trace set, Synoptic-style input) one file's trace set at a time. Every file is written beside its final name and renamed in, the data file last:
an input's files appear whole, and its data file only once its labels and metrics are in.
"""

from __future__ import annotations

import contextlib
import dataclasses
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
from .fileio import atomic_path, write_json

if TYPE_CHECKING:  # the command line loads this module: numeric libraries load on use
    import tempfile

    import numpy as np
    import pandas as pd
    import pyarrow as pa

    from .commands import ReadOptions
    from .store_stream import Spill
    from .traces import TracePart, TraceSet

#: The store's own metadata file (a leading ``_``: readers of the dataset skip it).
META_NAME = "_statemine_store.json"
#: 1: data files only; 2: also ``_labels`` (required) and ``_metrics`` (when logged);
#: 3: metrics files may have the segment columns (ftrace) and their columns listed.
STORE_FORMAT = 3
#: Folders (at the store's top) of the per-trace labels and of the metrics tables.
LABELS_DIR, METRICS_DIR = "_labels", "_metrics"
#: Events gathered per row group when a statemine log is streamed (store_stream.gather).
STREAM_BATCH_ROWS = 1 << 18
#: Rows per Parquet row group (bounds a reader's memory per group).
ROW_GROUP = 1 << 20
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
#: A partition value: a letter or digit first (never ``.``/``_``, which readers skip), then
#: letters, digits and ``. _ + - @ : ~``; no ``/``, ``=``, ``%`` (Hive escapes), NUL or space.
_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+@:~-]*\Z")
_MAX_LABEL = 200
#: Longest partition folder name ``KEY=VALUE`` (NAME_MAX of Linux and macOS file systems).
_MAX_FOLDER = 255


def _schema() -> pa.Schema:
    """The columns of every data file (see docs/store.md)."""
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
    """What :func:`store_add` wrote: the partition folder, files, traces and events."""

    partition: Path
    files: tuple[Path, ...]
    traces: int
    events: int


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
    labels and metrics table beside it.

    A new store takes the label keys (in the given order) as its partition keys; an
    existing one needs the same keys. A statemine log is streamed (memory bounded by
    ``batch_rows``, whatever the file's size); an ftrace file is added in batches of at
    most ``batch_rows`` lines (a busier socket alone) and a qlog file in parts of at most
    ``batch_rows`` (and 16,384) rows of one connection, spilled first
    (:func:`statemine.parse.qlog.read_qlog_parts`), their metrics ``batch_rows`` rows at a
    time; other inputs are read one file's
    trace set at a time. Each file is written beside its final name and renamed in (the data file
    last), so a failure or signal leaves only whole inputs of earlier batches.
    """
    from .commands import ReadOptions, read_inputs
    from .parse import expand_paths

    labels = dict(labels or {})
    for key, value in labels.items():
        check_label(key, value)
    root = Path(store)
    created = not root.exists()
    keys = _store_keys(root, tuple(labels))
    where = [f"{k}={labels[k]}" for k in keys]
    read = read or ReadOptions()
    files = expand_paths(list(logs))
    if read.fmt == "regex" or read.regex:  # Synoptic's options read the files as one log
        groups: list[list[Path]] = [files]
    else:
        groups = [[f] for f in files]
    written, traces, events = [], 0, 0
    for group in groups:
        fmt = _streamed_format(group, read)
        if fmt == "statemine":
            batch = _stream_batch(group[0], root, batch_rows)
        elif fmt is not None:
            batch = _pieces_batch(group[0], fmt, read, root, batch_rows)
        else:
            batch = _traceset_batch(read_inputs(group, read))
        new = not (root / META_NAME).exists()
        with _undone_if_new(root, new, created):
            if new or _read_meta_doc(root)[1] == 2:
                # a new store (created once its first file is read), or one of format 2,
                # whose metrics files this version may widen
                write_json(root / META_NAME, {"format": STORE_FORMAT, "partition_keys": list(keys)})
            written.append(_write_batch(root, where, batch))
        traces += batch.traces
        events += batch.events
    return AddOutput(root.joinpath(*where), tuple(written), traces, events)


@contextlib.contextmanager
def _undone_if_new(root: Path, new: bool, created: bool) -> Iterator[None]:
    """On an error while the first input is written to a ``new`` store, remove what was
    made for it (its metadata file, the folders left empty), and ``root`` itself when
    this add ``created`` it: a new store appears with its first whole file only.  (A new
    store's folder held only hidden names before: nothing else is touched.)"""
    try:
        yield
    except BaseException:
        if new:
            (root / META_NAME).unlink(missing_ok=True)
            for folder, _, _ in os.walk(root, topdown=False):
                if Path(folder) != root or created:
                    with contextlib.suppress(OSError):
                        os.rmdir(folder)  # only empty folders go
        raise


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
    import pyarrow.parquet as pq

    labels: list[pa.Table] = []
    traces = events = 0
    with _spill_folder(root) as folder, contextlib.ExitStack() as stack:
        tmp = Path(folder.name)
        data, metrics = tmp / "data.parquet", tmp / "metrics.parquet"
        out = stack.enter_context(pq.ParquetWriter(data, _schema(), compression="zstd"))
        extra = None
        for part in _pieces(path, fmt, read, tmp, rows):
            if part.events is not None:
                out.write_table(events_table(part.events, part.traces), ROW_GROUP)
                events += len(part.events)
            if part.first:
                labels.append(labels_table(part.traces))
                traces += len(part.traces)
            for piece in _slices(part.metrics, rows):
                table = metrics_table(piece)
                if extra is None:
                    extra = stack.enter_context(
                        pq.ParquetWriter(metrics, table.schema, compression="zstd")
                    )
                extra.write_table(table, ROW_GROUP)
            del part

    def move(source: Path) -> Callable[[Path], None]:
        def write(target: Path) -> None:
            with atomic_path(target) as swap:
                os.replace(source, swap)

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
    ids = trace_ids(path.name, sp.table)
    traces = pd.DataFrame(
        {"trace": ids, "conn": sp.table.conn, "role": pd.Series(sp.table.role, dtype=object)}
    )

    def write(target: Path) -> None:
        try:
            _write_streamed(sp, ids, str(path), target, batch_rows)
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

    from .store_stream import batches, gather, rows_table

    schema = _schema()
    seq_start = np.zeros(len(ids), np.int64)
    with atomic_path(target) as tmp, pq.ParquetWriter(tmp, schema, compression="zstd") as out:
        for first, stop in batches(sp.table.n_events, rows):
            for part in gather(sp, first, stop, rows):
                out.write_table(rows_table(part, seq_start, ids, sp, source, schema), rows)


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


def _write_batch(root: Path, where: list[str], batch: _Batch) -> Path:
    """Write one input's files: labels, metrics, then the data file (each atomically; if
    a later one fails, the earlier ones are removed). Returns the data file."""
    ident = f"{time.time_ns():x}-{os.getpid()}-{secrets.token_hex(4)}"
    labels = (root / LABELS_DIR).joinpath(*where, f"labels-{ident}.parquet")
    meta = {
        **(batch.labels.schema.metadata or {}),
        _HAS_METRICS: b"%d" % (batch.metrics is not None),
    }
    first: list[tuple[Path, Callable[[Path], object]]] = [
        (labels, lambda path: _write_table(batch.labels.replace_schema_metadata(meta), path))
    ]
    if batch.metrics is not None:
        first.append(
            ((root / METRICS_DIR).joinpath(*where, f"metrics-{ident}.parquet"), batch.metrics)
        )
    made = _missing_folders(root, [labels.parent, *(p.parent for p, _ in first[1:])], where)
    done: list[Path] = []
    try:
        for path, write in first:
            write(path)
            done.append(path)
        data = root.joinpath(*where, f"part-{ident}.parquet")
        batch.write(data)
    except BaseException:
        for path in done:
            path.unlink(missing_ok=True)
        batch.discard()
        for folder in made:  # an empty partition folder would read as "missing files"
            with contextlib.suppress(OSError):
                folder.rmdir()  # only if still empty (a concurrent add may have filled it)
        raise
    return data


def _missing_folders(root: Path, sidecars: list[Path], where: list[str]) -> list[Path]:
    """The folders the files of one input go to (the partition folder ``where`` of
    ``root``, and the ``sidecars`` folders) and their parents below ``root`` that do not
    exist yet, deepest first."""
    missing: set[Path] = set()
    for folder in [root.joinpath(*where), *sidecars]:
        while folder != root and not folder.exists():
            missing.add(folder)
            folder = folder.parent
    return sorted(missing, key=lambda p: len(p.parts), reverse=True)


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
        elif f.name in ev.columns:
            columns[f.name] = pa.array(ev[f.name].to_numpy(), type=f.type, from_pandas=True)
        else:
            columns[f.name] = pa.nulls(len(ev), f.type)
    return pa.table(columns).cast(schema)


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


def _read_meta_doc(root: Path) -> tuple[tuple[str, ...], int]:
    """The store's partition keys and format, checked."""
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
    return keys, version


def store_info(store: str | os.PathLike) -> StoreInfo:
    """List the partitions of ``store`` with their files, traces and events, checking the
    layout: every folder is ``KEY=VALUE`` of the store's keys in order, every partition
    holds data files, and every file has the store's schema. Raises :class:`InputError`
    naming the folder or file otherwise."""
    root = Path(store)
    keys, version = _read_meta_doc(root)
    folders = _partition_folders(root, keys)
    parts = [_partition_info(root, folder, keys) for folder in folders]
    if version >= 2:
        parts = [_with_sidecars(root, folder, p) for folder, p in zip(folders, parts)]
        for top in (LABELS_DIR, METRICS_DIR):
            _check_orphans(root, top, keys, folders)
    return StoreInfo(keys, tuple(parts))


def _with_sidecars(root: Path, folder: Path, part: PartitionInfo) -> PartitionInfo:
    """``part`` with its traces' label keys and metrics rows, checking that every data
    file of ``folder`` has its labels file, and the labels and metrics files' schemas."""
    rel = folder.relative_to(root).parts
    keys: set[str] = set()
    metrics = 0
    for name in sorted(n for n in _visible(folder) if n.startswith("part-")):
        ident = name[len("part-") :]
        labels = (root / LABELS_DIR).joinpath(*rel, f"labels-{ident}")
        extra = (root / METRICS_DIR).joinpath(*rel, f"metrics-{ident}")
        _check_sidecars(folder / name, labels, extra)
        keys |= _label_keys(labels)
        if extra.exists():
            metrics += _check_schema(extra, *_metrics_schemas())
    return dataclasses.replace(part, trace_labels=tuple(sorted(keys)), metrics=metrics)


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


def _check_sidecars(data: Path, labels: Path, metrics: Path) -> None:
    """An :class:`InputError` naming the data file when its labels file is not there, or
    its metrics file is not there although the labels file says it was written ("missing
    files"); the labels file's schema is checked.  (A labels or metrics file whose data
    file is missing is :func:`_check_orphans`' case: a reader may see one while an add
    is writing, since the data file is renamed in last.)"""
    if not labels.exists():
        raise InputError(data, None, f"its labels file is missing (missing files): {labels}")
    _check_schema(labels, _labels_schema())
    if not metrics.exists() and _labels_meta(labels).get(_HAS_METRICS) == b"1":
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


def _check_orphans(root: Path, top: str, keys: tuple[str, ...], folders: list[Path]) -> None:
    """An :class:`InputError` for a file under ``root/top`` (labels or metrics) whose data
    file is not in the store (left by an add that was killed), or any other file there."""
    base = root / top
    if not base.exists():
        return
    prefix = "labels-" if top == LABELS_DIR else "metrics-"
    data = {f.relative_to(root) for f in folders}
    for folder in _partition_folders(base, keys):
        rel = folder.relative_to(base)
        for name in sorted(_visible(folder)):
            ident = name[len(prefix) :] if name.startswith(prefix) else None
            if ident is None or rel not in data or not (root / rel / f"part-{ident}").exists():
                raise InputError(
                    folder / name,
                    None,
                    "not a labels or metrics file of a data file in the store "
                    "(left by an interrupted add? remove it)",
                )


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


def _partition_info(root: Path, folder: Path, keys: tuple[str, ...]) -> PartitionInfo:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    traces: set[str] = set()
    events = 0
    files = _data_files(folder)
    for path, rows in files:
        try:
            events += rows
            ids = pq.read_table(path, columns=["trace"])["trace"].cast(pa.string())
            traces.update(pc.unique(ids).to_pylist())
        except (pa.ArrowException, OSError) as exc:
            raise InputError(path, None, f"not a readable Parquet file: {exc}") from None
    return PartitionInfo(_folder_labels(root, folder, keys), len(files), len(traces), events)


def _folder_labels(root: Path, folder: Path, keys: tuple[str, ...]) -> dict[str, str]:
    """The labels (key -> value) of the partition folder ``folder`` of the store ``root``."""
    return dict(zip(keys, (p.partition("=")[2] for p in folder.relative_to(root).parts)))


def _data_files(folder: Path) -> list[tuple[Path, int]]:
    """The data files of one partition folder (sorted by name) and their rows, checking
    each: a Parquet file (its footer only) with the store's schema; no other files, and
    at least one ("missing files")."""
    schema = _schema()
    names = sorted(_visible(folder))
    files = [n for n in names if n.endswith(".parquet")]
    stray = [n for n in names if n not in files]
    if stray:
        raise InputError(folder / stray[0], None, "not a data file of the store (*.parquet)")
    if not files:
        raise InputError(folder, None, "a partition without data files (missing files)")
    return [(folder / name, _check_schema(folder / name, schema)) for name in files]


def label_names(store: str | os.PathLike) -> set[str]:
    """Every trace label a trace of ``store`` can carry: its partition keys and the label
    names of its labels files (their ``key`` column only; no events read). Raises
    :class:`InputError` naming a damaged metadata or labels file."""
    root = Path(store)
    names = set(_read_meta(root))
    for labels in sorted((root / LABELS_DIR).rglob("labels-*")):
        names |= _label_keys(labels)
    return names


def is_store(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder holding a store's metadata file."""
    return (Path(path) / META_NAME).is_file()


@dataclass(frozen=True)
class StoreFile:
    """One data file of a store: its path, rows, and its partition's labels (key -> value)."""

    path: Path
    rows: int
    labels: dict[str, str]


def store_files(
    store: str | os.PathLike, where: Mapping[str, str] | None = None
) -> list[StoreFile]:
    """The data files of ``store`` in store order (partition folders sorted by path, files
    by name) whose partition labels equal ``where`` (key -> value; the pruning is a
    pyarrow dataset filter on the partition columns, so no other partition's files are
    opened). Checks the layout as :func:`store_info` does, and the kept files' schemas
    and that their labels and metrics files are there (:func:`_check_sidecars`).
    Raises :class:`UsageError` for a key that is not a partition key, or when no
    partition matches."""
    root = Path(store)
    keys, version = _read_meta_doc(root)
    folders = _partition_folders(root, keys)
    if not folders:
        raise InputError(root, None, "the store has no partitions (missing files)")
    where = dict(where or {})
    unknown = [k for k in where if k not in keys]
    if unknown:
        raise UsageError(
            f"{root}: the traces have no label {unknown[0]!r} (labels: {', '.join(keys) or 'none'})"
        )
    labels = {folder: _folder_labels(root, folder, keys) for folder in folders}
    kept = _pruned(root, keys, folders, where) if where else folders
    if not kept:
        values = {k: sorted({lab[k] for lab in labels.values()})[:8] for k in where}
        shown = " ".join(f"{k}={v}" for k, v in where.items())
        raise UsageError(f"{root}: no trace matches {shown} (values: {values})")
    files = [
        StoreFile(path, rows, labels[folder])
        for folder in kept
        for path, rows in _data_files(folder)
    ]
    if version >= 2:
        for f in files:
            _check_sidecars(f.path, _sidecar(f, LABELS_DIR), _sidecar(f, METRICS_DIR))
    return files


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
    return TraceSet.from_events(
        pd.concat(events, ignore_index=True), pd.concat(traces, ignore_index=True), None, joined
    )


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
        frame = pq.read_table(path, schema=_schema()).to_pandas()
    except (pa.ArrowException, OSError) as exc:
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
