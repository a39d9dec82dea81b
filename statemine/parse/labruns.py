"""A lab folder's runs read from their logs in one pass (issue 29).

``statemine lab run`` leaves per run ``runs/<run_id>/run.log.gz`` (the stack's statemine
lines, gzipped) and ``traces.parquet`` (the log parsed, trace ids ``<run_id>#<conn>/<role>``,
labelled). Reading 320 small Parquet files costs about 0.6 ms of CPU each (footer, schema,
one zstd page per column); their logs scan in a fraction of that. :func:`read_lab_runs`
scans every run's log with one scanner, takes each run's traces frame (its labels) and
meta from the Parquet footer alone, and builds one set: the same one as
:func:`statemine.traces.load_many` of the ``traces.parquet`` files (frames, dtypes,
categories, meta). Each run's log is checked against its footer (its trace ids, in order,
and its number of rows); a run that differs, a log that is not statemine lines, metrics
rows, or anything else this path does not reproduce makes it return None, and the caller
reads the Parquet files.

A folder's ``traces-index.json`` (written by ``statemine lab run`` when it ends,
:func:`write_index`) spares the Arrow footer parse: per run, the size and sha256 of its
``traces.parquet``'s footer (the last ``8 + n`` bytes, which are all that
``pq.read_metadata`` reads), its number of rows and where the statemine metadata lies in
that footer. A run whose footer bytes hash as indexed has the footer Arrow read when the
index was made, so its statemine metadata is those bytes, sliced and parsed here; any run
not indexed, or whose footer differs (replaced, rewritten, another statemine, an index
that is missing, damaged or of another version), has its footer read by Arrow as before.
The labels are not rebuilt from ``results.csv`` or the manifest: a run's config (what its
id hashes) does not fix its grid cell (``per_packet_cpu_ms`` of a desktop profile,
``buffer_bytes`` left default or set to the BDP give one config), so a row whose id checks
out could still carry other labels than the run's file; its footer is the record.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from .repeats import RUN_LOG, RUN_TRACES, run_id_of

if TYPE_CHECKING:
    from ..traces import SavedHead, TraceSet


def read_lab_runs(paths: Sequence[str | Path]) -> TraceSet | None:
    """``runs/<run_id>/traces.parquet`` files read from their runs' ``run.log.gz`` and
    footers, as :func:`statemine.traces.load_many` reads them; None when this path cannot
    give exactly that set (then read the files)."""
    from ..traces import EVENT_COLUMNS

    run_ids = [run_id_of(p) for p in paths]
    if not paths or None in run_ids:
        return None
    try:
        heads = indexed_heads(paths, run_ids)
    except InputError:
        return None
    for head in heads:
        if head.metrics_columns is not None or head.meta.get("format") != "statemine":
            return None
        if list(head.event_columns[: len(EVENT_COLUMNS)]) != list(EVENT_COLUMNS):
            return None
    logs = [os.path.join(os.path.dirname(p), RUN_LOG) for p in paths]
    try:
        return _from_logs(logs, [r or "" for r in run_ids], heads)
    except (InputError, ValueError, TypeError, KeyError):
        return None


def indexed_heads(paths: Sequence[str | Path], run_ids: Sequence[str | None]) -> list[SavedHead]:
    """:func:`indexed_head` of each run's ``traces.parquet`` (``run_ids``: their ids), each
    lab folder's index read once."""
    indexes: dict[str, dict] = {}
    heads = []
    for path, run_id in zip(paths, run_ids):
        folder = lab_folder_of(path)
        index = indexes.get(folder)
        if index is None:
            index = indexes[folder] = read_index(Path(folder))
        heads.append(indexed_head(path, index.get(run_id or "")))
    return heads


def lab_folder_of(path: str | Path) -> str:
    """``str(Path(path).parent.parent.parent)``: the lab folder of a run's
    ``<folder>/runs/<run_id>/traces.parquet``, split without pathlib where Path would split
    it alike."""
    text = os.fspath(path)
    if "//" in text or "/." in text or text.startswith("."):
        return str(Path(text).parent.parent.parent)
    parts = text.rsplit("/", 3)
    if len(parts) < 4:
        return "/" if text.startswith("/") else "."
    return parts[0] or "/"


#: The lab folder's index of its runs' Parquet footers (:func:`write_index`).
INDEX = "traces-index.json"
#: Its format: a reader takes an index of this version only.
INDEX_VERSION = 1


def indexed_footer(path: str | Path, size: int, length: int) -> bytes | None:
    """The last ``length`` bytes of ``path`` when it holds exactly ``size`` bytes (one
    read asking one byte more than is left), else None."""
    if not 0 < length <= size:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        tail = os.pread(fd, length + 1, size - length)
    except OSError:
        return None
    finally:
        os.close(fd)
    return tail if len(tail) == length else None


def footer_bytes(path: Path) -> tuple[int, bytes] | None:
    """The size of the Parquet file ``path`` and its footer: the thrift metadata and the
    8 bytes after it (length, ``PAR1``); None when it is not laid out so."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        tail = os.pread(fd, 8, size - 8) if size >= 12 else b""
        if len(tail) != 8 or tail[4:] != b"PAR1":
            return None
        n = int.from_bytes(tail[:4], "little")
        if n + 12 > size:
            return None
        footer = os.pread(fd, n, size - 8 - n)
    except OSError:
        return None
    finally:
        os.close(fd)
    return (size, footer + tail) if len(footer) == n else None


def index_entry(path: Path) -> list | None:
    """The index entry of a run's ``traces.parquet``: ``[file size, footer size, sha256
    of the footer, offset and length of the statemine metadata in the footer, number of
    rows, column names]``; None when the metadata is not found exactly once in the
    footer bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..traces import _PARQUET_META_KEY

    read = footer_bytes(path)
    if read is None:
        return None
    size, footer = read
    try:
        meta = pq.read_metadata(path)
    except (pa.ArrowInvalid, OSError):
        return None
    value = (meta.metadata or {}).get(_PARQUET_META_KEY)
    if not value or footer.count(value) != 1:
        return None
    digest = hashlib.sha256(footer).hexdigest()
    columns = [meta.schema.column(i).name for i in range(meta.num_columns)]
    return [size, len(footer), digest, footer.index(value), len(value), meta.num_rows, columns]


def make_index(folder: Path) -> dict:
    """The index of the lab ``folder``'s runs (each ``runs/<run_id>/traces.parquet``)."""
    runs = {}
    for path in sorted(folder.glob(f"runs/*/{RUN_TRACES}")):
        entry = index_entry(path)
        if entry is not None and not path.parent.name.startswith("."):
            runs[path.parent.name] = entry
    return {"format": "statemine lab traces index", "version": INDEX_VERSION, "runs": runs}


def write_index(folder: Path) -> None:
    """Write ``folder/traces-index.json`` (:func:`make_index`) atomically."""
    from ..fileio import write_json

    write_json(folder / INDEX, make_index(folder), sort_keys=True)


def read_index(folder: Path) -> dict:
    """run id -> index entry of the lab ``folder``'s index; {} when it has none, or one
    of another version or shape."""
    try:
        with open(folder / INDEX, "rb") as fh:
            index = json.loads(fh.read())
    except (OSError, ValueError):
        return {}
    if not isinstance(index, dict) or index.get("version") != INDEX_VERSION:
        return {}
    runs = index.get("runs")
    return runs if isinstance(runs, dict) else {}


def indexed_head(path: str | Path, entry: object) -> SavedHead:
    """The footer of ``path`` (:func:`statemine.traces.read_saved_head`): from its own
    bytes when they hash as its index ``entry`` says, else read by Arrow."""
    from ..traces import read_saved_head, saved_head_of

    if not (
        isinstance(entry, list)
        and len(entry) == 7
        and all(type(entry[i]) is int for i in (0, 1, 3, 4, 5))
        and isinstance(entry[6], list)
    ):
        return read_saved_head(Path(path))
    size, length, digest, at, n, num_rows, columns = entry
    footer = indexed_footer(path, size, length)
    if footer is None or hashlib.sha256(footer).hexdigest() != digest:
        return read_saved_head(Path(path))
    if at < 0 or n <= 0 or at + n > len(footer):
        return read_saved_head(Path(path))
    return saved_head_of(path, footer[at : at + n], num_rows, columns)


def _from_logs(logs: list[str], run_ids: list[str], heads: list[SavedHead]) -> TraceSet | None:
    """The set of the runs' ``logs``, ids and labels from their footers ``heads``; None
    where a log does not match its footer."""
    import pandas as pd

    from ..traces import TraceSet, joined_traces, merge_meta
    from ._linescan import Scanner
    from .statemine_log import _INFO, ScanEnd, _path_of, _Rows, events_frame, scan_files
    from .timerange import MAX_TIME_S

    scanner = Scanner(max_time=MAX_TIME_S)
    rows = _Rows()
    end: ScanEnd | None = None
    for item in scan_files(logs, scanner=scanner):
        if isinstance(item, ScanEnd):
            end = item
        else:
            rows.add(item, functools.partial(_path_of, logs, item))
    assert end is not None  # scan_files ends with one
    conns, roles, info = scanner.traces()
    n_events = np.frombuffer(info, _INFO)["n"]
    starts = np.r_[end.file_starts, len(conns)]
    file_of_trace = np.repeat(np.arange(len(logs)), np.diff(starts))
    ids = [
        f"{run_ids[f]}#{c}" + (f"/{r}" if r is not None else "")
        for f, c, r in zip(file_of_trace.tolist(), conns, roles)
    ]
    total = np.r_[0, np.cumsum(n_events, dtype=np.int64)]
    per_file = (total[starts[1:]] - total[starts[:-1]]).tolist()  # rows of each log
    bounds = starts.tolist()
    for i, head in enumerate(heads):  # the log is the one the footer was made from
        at = head.names.index("trace") if "trace" in head.names else -1
        if at < 0 or [row[at] for row in head.rows] != ids[bounds[i] : bounds[i + 1]]:
            return None
        if per_file[i] != head.num_rows:
            return None
    events = events_frame(rows, scanner.names(), ids, file_of_trace)
    columns = list(dict.fromkeys(c for h in heads for c in h.event_columns))  # as pd.concat
    if set(events.columns) != set(columns):
        return None
    if list(events.columns) != columns:
        events = events[columns]
    if "fields" in events.columns:  # Parquet's text column comes back as pandas' text
        events["fields"] = events["fields"].astype(pd.StringDtype(na_value=np.nan))
    return TraceSet.from_events(events, joined_traces(heads), merge_meta(h.meta for h in heads))
