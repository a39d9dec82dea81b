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

A folder's ``traces-cache.parquet`` (:func:`write_cache`: when ``statemine lab run`` ends,
and by ``statemine lab cache``) holds the set this module makes of all its runs, and each
run's id and the ``stat`` and sha256 of its two files; :func:`cached_runs` loads it in
place of the runs while each file stats as recorded and is not racy, or else hashes as
recorded (a copy or checkout: the shipped ``traces/`` folders carry their caches), and the
readers' source files hash as recorded (docs/lab.md says what that trusts).
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
    give exactly that set (then read the files). When the paths are the runs a valid
    folder cache was built from (:func:`cached_runs`), the set is that cache's."""
    run_ids = [run_id_of(p) for p in paths]
    if not paths or None in run_ids:
        return None
    ids = [r or "" for r in run_ids]
    cached = cached_runs(paths, ids)
    return cached if cached is not None else _read_runs(paths, ids)


def _read_runs(paths: Sequence[str | Path], run_ids: list[str]) -> TraceSet | None:
    """:func:`read_lab_runs` without the folder's cache."""
    from ..traces import EVENT_COLUMNS

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
        return _from_logs(logs, run_ids, heads)
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


# -- the folder's cache ------------------------------------------------------------------
#: The lab folder's cache: every run read as one set (:func:`write_cache`).
CACHE = "traces-cache.parquet"
#: Its format: a reader takes a cache of this version only (2: content digests).
CACHE_VERSION = 2
#: The Parquet schema metadata key of what the cache was built from.
_CACHE_KEY = b"statemine.lab_cache"
#: The source files whose code makes the cached set: the set is by definition what
#: :func:`statemine.traces.load_many` makes of the runs' ``traces.parquet`` files
#: (traces.py), joined and cached here; the log readers are a faster road to the same set,
#: held to it by tests (tests/test_lab_runs.py), not part of what it is.
_CODE_FILES = ("parse/labruns.py", "traces.py")


def stat_key(path: str | Path) -> list[int] | None:
    """What the cache records of a run file's ``os.stat`` (links followed): ``[size
    (bytes), mtime (ns), ctime (ns), inode, device]``; None when it cannot be stat-ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def file_digest(path: str | Path) -> str | None:
    """The sha256 (hex) of the bytes of ``path``; None when it cannot be read."""
    try:
        with open(path, "rb", buffering=0) as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def code_files(root: str | Path) -> list[str]:
    """The source files under the package folder ``root`` (``statemine/``) whose code
    makes the cached set (:data:`_CODE_FILES`), relative to ``root`` in sorted order."""
    return sorted(_CODE_FILES)


def code_key(root: str | Path | None = None) -> list:
    """What the cache records of the code that read the runs, the same on every machine
    for the same code: the cache's version, statemine's version, the major versions of
    numpy, pandas and pyarrow (docs/lab.md: why major), and ``[name, sha256]`` of each of
    :func:`code_files` of ``root`` (default: this statemine's package folder)."""
    import numpy
    import pandas
    import pyarrow

    from .. import __version__

    if root is None:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return [
        CACHE_VERSION,
        __version__,
        [_major(m.__version__) for m in (numpy, pandas, pyarrow)],
        [[name, file_digest(os.path.join(root, name))] for name in code_files(root)],
    ]


def _major(version: str) -> str:
    """The major version of a ``version`` string (``"2.3.1"`` -> ``"2"``)."""
    return version.split(".", 1)[0]


def _racy(key: list[int] | None, stamp: int) -> bool:
    """Whether a recorded ``key`` cannot vouch for its file: its mtime or ctime is not
    strictly older than ``stamp`` (ns; git's "racily clean" entry: a change within the
    same clock tick would leave the stat as recorded)."""
    return key is not None and (key[1] >= stamp or key[2] >= stamp)


def _run_files(folder: Path) -> list[str]:
    """The ``runs/<name>/traces.parquet`` of ``folder`` as ``statemine.read`` lists a lab
    folder: names in sorted order, each whose ``traces.parquet`` can be stat-ed."""
    runs = os.path.join(folder, "runs")
    try:
        with os.scandir(runs) as it:
            names = sorted(e.name for e in it)
    except OSError:
        return []
    paths = [os.path.join(runs, name, RUN_TRACES) for name in names]
    return [p for p in paths if stat_key(p) is not None]


def _pair(path: str) -> tuple[str, str]:
    """A run's two files: its ``traces.parquet`` (``path``) and its ``run.log.gz``."""
    return path, os.path.join(os.path.dirname(path), RUN_LOG)


def _entries(paths: Sequence[str]) -> list[list]:
    """Per run: ``[run id, stat_key of traces.parquet, stat_key of run.log.gz]``."""
    return [[run_id_of(p), *(stat_key(f) for f in _pair(p))] for p in paths]


def _digests(paths: Sequence[str]) -> list[list[str | None]]:
    """Per run: ``[sha256 of traces.parquet, sha256 of run.log.gz]`` (None: unreadable)."""
    return [[file_digest(f) for f in _pair(p)] for p in paths]


def _stamp_after(path: Path, newest: int, wait_s: float) -> int:
    """The mtime (ns, the file system's clock) of ``path``, touched until it is later than
    ``newest`` (at most ``wait_s`` seconds; then as it is)."""
    import time

    deadline = time.monotonic() + wait_s
    stamp = os.stat(path).st_mtime_ns
    while stamp <= newest and time.monotonic() < deadline:
        time.sleep(0.002)
        os.utime(path)
        stamp = os.stat(path).st_mtime_ns
    return stamp


def write_cache(folder: Path, wait_s: float = 2.0) -> str | None:
    """Write ``folder/traces-cache.parquet``: the set :func:`read_lab_runs` (or, where it
    declines, :func:`statemine.traces.load_many`) makes of the folder's runs, with each
    run's id and the ``stat`` of its ``traces.parquet`` and ``run.log.gz``; None when
    written, else why not (then no cache is left). Each run file's sha256 is recorded too
    (taken before and after the runs are read, equal), so a copy or checkout of the
    folder, whose stat differs, is checked by its files' content (:func:`cached_runs`).

    Written beside and renamed in (:func:`statemine.fileio.atomic_path`), fsynced first.
    The stamp is the temporary file's mtime taken before the runs are stat-ed (touched
    until it is later than every run file's mtime and ctime, at most ``wait_s`` s); a run
    file changed after it is racy and none is cached. The cache is read back and compared
    with the set it holds before it is swapped in."""
    cache = folder / CACHE
    try:
        _write_cache(cache, _run_files(folder), wait_s)
    except _NotCached as exc:
        cache.unlink(missing_ok=True)
        return str(exc)
    return None


def _write_cache(cache: Path, paths: list[str], wait_s: float) -> None:
    """:func:`write_cache` of the runs ``paths`` to ``cache``; :class:`_NotCached` (why)
    when it is not written."""
    import pyarrow.parquet as pq

    from ..fileio import atomic_path
    from ..traces import load, load_many, saved_table

    if len(paths) < 2:
        raise _NotCached("fewer than two runs (one is read as a single file)")
    keys = [k for _, *ks in _entries(paths) for k in ks if k is not None]
    newest = max(max(k[1], k[2]) for k in keys)
    with atomic_path(cache) as tmp:
        stamp = _stamp_after(tmp, newest, wait_s)
        entries = _entries(paths)  # stat-ed after the stamp, read after the stat
        digests = _digests(paths)
        try:
            ts = _read_runs(paths, [e[0] for e in entries]) or load_many(paths)
        except (InputError, ValueError) as exc:
            raise _NotCached(f"the runs cannot be read as one set: {exc}") from None
        if ts is None:
            raise _NotCached("the runs are not one trace set")
        if any(_racy(k, stamp) for e in entries for k in e[1:]) or _digests(paths) != digests:
            raise _NotCached("a run changed while the cache was built; build it again")
        entries = [e + d for e, d in zip(entries, digests)]
        info = {"version": CACHE_VERSION, "code": code_key(), "stamp": stamp, "runs": entries}
        table = saved_table(ts, {_CACHE_KEY: json.dumps(info).encode()})
        pq.write_table(table, tmp, compression="zstd")
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        if not same_set(load(tmp), ts):
            raise _NotCached("the cache does not read back as the runs' set")


class _NotCached(Exception):
    """The cache is not written (the reason in ``args[0]``)."""


def same_set(a: TraceSet, b: TraceSet) -> bool:
    """Whether two sets are equal: frames (values exactly, dtypes, categories in order,
    column order), meta (in order) and metrics."""
    import pandas as pd

    def frames(x: pd.DataFrame | None, y: pd.DataFrame | None) -> bool:
        if x is None or y is None:
            return x is y
        try:
            pd.testing.assert_frame_equal(x, y, check_exact=True, check_categorical=True)
        except AssertionError:
            return False
        return list(x.columns) == list(y.columns) and all(
            list(x[c].cat.categories) == list(y[c].cat.categories)
            for c in x.columns
            if isinstance(x[c].dtype, pd.CategoricalDtype)
        )

    return (
        frames(a.events, b.events)
        and frames(a.traces, b.traces)
        and frames(a.metrics, b.metrics)
        and list(a.meta.items()) == list(b.meta.items())
    )


def cached_runs(paths: Sequence[str | Path], run_ids: Sequence[str]) -> TraceSet | None:
    """The set in the lab folder's cache (of the first path) when ``paths`` (``run_ids``:
    theirs) are, in order, exactly the runs it was built from, each run's ``traces.parquet``
    and ``run.log.gz`` as recorded, and the readers' code is as recorded
    (:func:`code_key`); else None (then the runs are read). A file is as recorded when it
    has the recorded ``stat`` (size, mtime, ctime, inode, device) and is not racy, or else
    (a copy, a checkout, a racy or touched file) when its bytes hash to the recorded
    sha256; a file recorded missing must be missing."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..traces import load

    cache = os.path.join(lab_folder_of(paths[0]), CACHE)
    if stat_key(cache) is None:  # no cache: nothing imported or opened
        return None
    try:
        file = pq.ParquetFile(cache)
        info = json.loads((file.metadata.metadata or {})[_CACHE_KEY])
    except (pa.ArrowInvalid, OSError, KeyError, ValueError):
        return None
    if not isinstance(info, dict) or info.get("version") != CACHE_VERSION:
        return None
    stamp, runs = info.get("stamp"), info.get("runs")
    if type(stamp) is not int or not isinstance(runs, list) or len(runs) != len(paths):
        return None
    if info.get("code") != code_key():  # read by other code than the cache was built by
        return None
    unsure: list[tuple[str, str]] = []  # (file, recorded sha256) of files the stat left open
    for path, run_id, entry in zip(paths, run_ids, runs):
        if not _is_entry(entry) or entry[0] != run_id:
            return None
        for run_file, key, digest in zip(_pair(os.fspath(path)), entry[1:3], entry[3:5]):
            if key is None:  # recorded missing
                if stat_key(run_file) is not None:
                    return None
            elif _racy(key, stamp) or stat_key(run_file) != key:
                unsure.append((run_file, digest))
    if any(file_digest(f) != digest for f, digest in unsure):
        return None
    try:
        return load(cache, file)
    except (InputError, ValueError, KeyError, TypeError, pa.ArrowException):
        return None


def _is_entry(entry: object) -> bool:
    """Whether ``entry`` has the shape of a run's record: ``[run id, stat_key, stat_key or
    None, sha256, sha256 or None]``, the log's digest None exactly when its stat is."""
    if not isinstance(entry, list) or len(entry) != 5 or not isinstance(entry[0], str):
        return False
    _, key, log_key, digest, log_digest = entry
    return (
        _is_key(key)
        and _is_digest(digest)
        and (log_key is None) == (log_digest is None)
        and (log_key is None or (_is_key(log_key) and _is_digest(log_digest)))
    )


def _is_digest(digest: object) -> bool:
    """Whether ``digest`` is a sha256 in hex (64 lowercase hex digits)."""
    return isinstance(digest, str) and len(digest) == 64 and digest.strip("0123456789abcdef") == ""


def _is_key(key: object) -> bool:
    """Whether ``key`` has the shape of :func:`stat_key`'s value (five integers)."""
    return isinstance(key, list) and len(key) == 5 and all(type(k) is int for k in key)
