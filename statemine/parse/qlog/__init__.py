"""qlog reader: congestion-state changes of QUIC connections from qlog files.

Reads every qlog generation seen in the wild (see docs/qlog.md for the field-by-field
mapping and the draft sections it follows):

* ``.qlog`` -- one JSON document with a ``traces`` array (draft-00 and draft-01 with
  array events and ``event_fields``; draft-02, 0.3 and 0.4 with object events; the
  unversioned ``file_schema`` drafts, urn:ietf:params:qlog:file:contained). A document
  over 16 MiB (or gzip'ed) is streamed (ijson, two passes); a smaller one is read whole, up
  to ``max_document_bytes``; a document cut off (a crashed logger) is repaired by closing
  its open brackets after the last complete event, with a warning.
* ``.sqlog`` -- JSON text sequences (RFC 7464, records led by 0x1E; qlog 0.3/0.4 and
  urn:ietf:params:qlog:file:sequential) and NDJSON (draft-02 ``qlog_format: NDJSON``):
  read record by record in bounded memory, each record at most ``max_record_bytes``.
* any of them gzip-compressed (detected by the magic bytes, not the name).

Each qlog trace (or each ``group_id`` within one) becomes one statemine trace with id
``"<file name>#<trace index>"`` (``"...#<index>/<group_id>"`` when a trace mixes
connections). State rows come from ``congestion_state_updated`` (draft-00
``CC_STATE_UPDATE``, 0.4 ``quic:congestion_state_updated``) and from mvfst's
``congestion_metric_update`` / ``app_limited_update``; names go through
:mod:`statemine.parse.statenames`. ``packet_lost`` becomes a ``LossDetected`` event row.
Metrics (``metrics_updated``, ``metric_update``, ``recovery_metrics_updated``) are not
rows: their latest values (cwnd, bytes in flight, ssthresh in bytes; smoothed RTT in
seconds; pacing rate and bandwidth estimate as logged) are carried onto each row, so time
fractions depend on state rows only. picoquic's numeric states are read with the table of
the controller the file's hints point to (:func:`statemine.parse.statenames.picoquic_controller`);
a trace with several ``path_id`` values becomes one trace per path.

Problems that do not stop the read (a truncated tail, skipped records, unknown state
names, traces without states) are listed in ``TraceSet.meta["warnings"]``, a JSON list
of ``"FILE:LINE: reason"`` strings.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from ...escape import name_text
from ...traces import TracePart, TraceSet, merge_meta
from ..lines import open_binary
from ..statenames import implementation_key
from .common import NoCongestionData, _Report
from .connections import _SLICE_ROWS, _Connection, _extract
from .reading import (
    _BLANK,
    _GZIP_MAGIC,
    _HEAD_BYTES,
    _RS,
    _STREAM_MIN_BYTES,
    _document_traces,
    _file_size,
    _gc_paused,
    _layout,
    _plain_document,
    _Reader,
    _sequential_traces,
    _streamed_document_traces,
)
from .rows import _build, _Gather, _why_no_states
from .slices import _sliceable, _sliced_parts

__all__ = [
    "DEFAULT_MAX_DOCUMENT_BYTES",
    "DEFAULT_MAX_RECORD_BYTES",
    "NoCongestionData",
    "read_qlog",
    "read_qlog_files",
    "read_qlog_parts",
    "sniff_qlog",
]

#: Largest JSON-SEQ / NDJSON record accepted by default (bytes).
DEFAULT_MAX_RECORD_BYTES = 64 << 20
#: Largest ``.qlog`` JSON document accepted by default (bytes, after gunzip).
DEFAULT_MAX_DOCUMENT_BYTES = 1 << 30


def sniff_qlog(first_bytes: bytes) -> bool:
    """True if ``first_bytes`` (the start of a file, gzip or not) look like qlog/sqlog/NDJSON qlog.

    Looks for a JSON object or JSON-SEQ record whose first KiBs name a qlog header field
    (``qlog_version``, ``qlog_format``, ``event_fields``, ``vantage_point``) or a qlog
    schema URN. The qlog drafts ask writers to put ``qlog_version``/``qlog_format`` (or
    ``file_schema``) in the first 256 bytes.

    >>> sniff_qlog(b'{"qlog_version": "draft-01", "traces": []}')
    True
    >>> sniff_qlog(b"STATEMINE t=0.1 conn=1 state=SlowStart")
    False
    """
    head = first_bytes
    if head[:2] == _GZIP_MAGIC:
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, _HEAD_BYTES)
        except zlib.error:
            return False
    head = head.lstrip(_BLANK)
    if not head or head[:1] not in (b"{", _RS):
        return False
    return bool(
        re.search(rb'"(?:qlog_version|qlog_format|event_fields|vantage_point)"\s*:', head[:8192])
        or b"urn:ietf:params:qlog" in head[:8192]
    )


def read_qlog(
    path: str | os.PathLike,
    *,
    names: Mapping[str, str] | None = None,
    implementation: str | None = None,
    derive_states: bool = False,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
    source: str | None = None,
) -> TraceSet:
    """Read one qlog file (any generation, JSON / JSON-SEQ / NDJSON, gzip or not).

    ``names`` overrides state names (raw name -> statemine name, see
    :func:`statemine.parse.statenames.load_names`); ``implementation`` forces the
    state-name table (default: detected per trace from titles and vantage point names).
    With ``derive_states`` a connection that logs metrics but no state events gets states
    derived from cwnd/ssthresh (:mod:`statemine.parse.derive`), flagged ``derived=True``
    in the traces frame. ``source`` names the file in trace ids
    ``"<source>#<trace index>"`` (default: the file name). Times are seconds (qlog
    milliseconds, or microseconds where the file says ``time_units: us``). Non-fatal
    problems are listed in ``meta["warnings"]`` (a JSON list of ``"FILE:LINE: reason"``).

    Raises :class:`InputError` (file, line, reason) when the file is not qlog, is empty,
    has a record longer than ``max_record_bytes`` or a document longer than
    ``max_document_bytes``, or holds no congestion state at all.
    """
    path = Path(path)
    ts, _ = _read_files(
        [(path, source or name_text(path.name), None)],
        names,
        implementation,
        derive_states,
        max_record_bytes,
        max_document_bytes,
        skip_empty=False,
    )
    assert ts is not None  # without skip_empty, a file with no trace raises instead
    return ts


def read_qlog_files(
    files: Iterable[tuple[Path, str, bytes | None]],
    *,
    names: Mapping[str, str] | None = None,
    implementation: str | None = None,
    derive_states: bool = False,
    skip_empty: bool = True,
    on_file: Callable[[Path], object] = lambda _path: None,
) -> tuple[TraceSet | None, list[str]]:
    """Several qlog files as one TraceSet, equal to their :func:`read_qlog` sets joined
    (:func:`statemine.traces.concat`, warnings in file order) but built once: each file's
    rows are gathered in plain lists and arrays, so a file costs its events and no frames
    of its own. With ``skip_empty`` a file without congestion data is left out and its
    :class:`NoCongestionData` message returned (the set is None when no file had any);
    else it is raised. ``on_file(path)`` is called
    after each file. ``files``: per file, ``(path, source, content)``: its path, its name
    in trace ids and the plain file's bytes when the caller has read it whole already
    (None: it is opened here); taken one file at a time, so it may be a lazy iterator
    (each file's bytes held while that file is read)."""
    return _read_files(
        files,
        names,
        implementation,
        derive_states,
        DEFAULT_MAX_RECORD_BYTES,
        DEFAULT_MAX_DOCUMENT_BYTES,
        skip_empty=skip_empty,
        on_file=on_file,
    )


def _read_files(
    files: Iterable[tuple[Path, str, bytes | None]],
    names: Mapping[str, str] | None,
    implementation: str | None,
    derive_states: bool,
    max_record_bytes: int,
    max_document_bytes: int,
    *,
    skip_empty: bool,
    on_file: Callable[[Path], object] = lambda _path: None,
) -> tuple[TraceSet | None, list[str]]:
    """:func:`read_qlog_files` (and :func:`read_qlog`, one file): each file through the
    bounded walk (:func:`_walk`, long connections spilled to one temporary folder and
    built in slices), its traces gathered into one set."""
    overrides = _overrides(names)
    gather = _Gather(overrides, derive_states)
    metas: list[dict[str, str]] = []
    skipped: list[str] = []
    with tempfile.TemporaryDirectory(prefix="statemine-qlog-") as folder:
        for path, source, content in files:
            report = _Report(path)
            n_rows, n_connections, n_metrics = len(gather.rows), 0, 0
            walk = _walk(
                path,
                Path(folder),
                report,
                implementation,
                derive_states,
                max_record_bytes,
                max_document_bytes,
                overrides,
                source,
                _SLICE_ROWS,
                content,
            )
            del content  # the walk holds the bytes while it reads them
            for conn, parts in walk:
                n_connections += 1
                n_metrics += conn.summary.n_metrics
                if parts is None:
                    gather.add_connection(path, source, conn, report)
                else:
                    gather.add_parts(path, source, conn, parts)
                del conn, parts
            try:
                gather.end_file(path, n_rows, n_connections, n_metrics, allow_empty=False)
            except NoCongestionData as exc:
                if not skip_empty:
                    raise
                skipped.append(str(exc))
            else:
                metas.append({"warnings": json.dumps(report.finish())})
            on_file(path)
    if not metas:
        return None, skipped
    meta = metas[0] if len(metas) == 1 else merge_meta(metas)
    return gather.trace_set(meta), skipped


def read_qlog_parts(
    path: str | os.PathLike,
    folder: str | os.PathLike,
    *,
    names: Mapping[str, str] | None = None,
    implementation: str | None = None,
    derive_states: bool = False,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
    source: str | None = None,
    slice_rows: int = 1 << 18,
) -> Iterator[TracePart]:
    """:func:`read_qlog`'s trace set as consecutive parts (:class:`TracePart`): joined, they
    are that trace set (same traces, order, events, metrics), without its warnings.

    Memory does not grow with the file or a connection: the file's qlog traces are read one
    after another; the congestion events of a trace's connections (state, loss and metrics
    updates; packets only with ``derive_states``) are appended to per-connection files in
    ``folder`` (an existing folder, e.g. a temporary one) whenever ``slice_rows`` (at most
    16,384) are held (a connection holding under 1/256 of them stays in memory while such
    small ones hold at most 2^18 events), and a connection spilled is then built in one
    forward walk over its files (a few where states are derived from its metrics and
    packets), at most that many events or metrics rows a part (:mod:`.slices`). A connection never spilled, and one
    that needs more (events or packets out of time order, states derived without packet
    events, picoquic's numeric states), is built whole, one part. Raises what
    :func:`read_qlog` raises (:class:`NoCongestionData` after the last connection)."""
    path = Path(path)
    report = _Report(path)
    overrides = _overrides(names)
    n_connections, n_metrics, made = 0, 0, False
    walk = _walk(
        path,
        Path(folder),
        report,
        implementation,
        derive_states,
        max_record_bytes,
        max_document_bytes,
        overrides,
        source or name_text(path.name),
        min(slice_rows, _SLICE_ROWS),
    )
    for conn, parts in walk:
        n_connections += 1
        n_metrics += conn.summary.n_metrics
        if parts is not None:
            for part in parts:
                made = True
                yield part
            continue
        ts = _build(
            path,
            source or name_text(path.name),
            [conn],
            overrides,
            derive_states,
            report,
            allow_empty=True,
        )
        del conn  # its events are in the part now
        if ts is not None:
            made = True
            yield TracePart.whole(ts)
    if not made:
        raise NoCongestionData(path, None, _why_no_states(n_connections, n_metrics, derive_states))


def _walk(
    path: Path,
    folder: Path,
    report: _Report,
    implementation: str | None,
    derive_states: bool,
    max_record_bytes: int,
    max_document_bytes: int,
    overrides: dict[str, str] | None,
    source: str,
    slice_rows: int,
    content: bytes | None = None,
) -> Iterator[tuple[_Connection, Iterator[TracePart] | None]]:
    """The bounded walk over one qlog file that ``store add``, ``read`` and ``infer``
    share: its connections one after another, each with its parts when it was spilled to
    ``folder`` and is built in slices of at most ``slice_rows`` rows from its spill files
    (:func:`_sliceable`; consume them before the next step), else None (held whole: the
    caller builds it; also one spilled with at most ``slice_rows`` congestion events,
    read back: its own parts cost milliseconds, the whole build microseconds). The report lists the warnings of building after the parse's, as a
    whole read does. ``content``: the plain file's bytes when the caller read it whole (it
    is not opened again)."""
    stream = _connections(
        path,
        report,
        implementation,
        derive_states,
        max_record_bytes,
        max_document_bytes,
        folder,
        slice_rows,
        content,
    )
    for conn in stream:
        report.building = True
        try:
            if conn.spill is not None and conn.spilled_events() <= slice_rows:
                conn.load()  # a slice's worth: built whole, as if never spilled
                yield conn, None
            elif _sliceable(conn, derive_states):
                yield (
                    conn,
                    _sliced_parts(conn, path, source, overrides, report, slice_rows, derive_states),
                )
                conn.discard()
            else:
                if conn.spill is not None:
                    conn.load()
                yield conn, None
        finally:
            report.building = False
        del conn


def _overrides(names: Mapping[str, str] | None) -> dict[str, str] | None:
    return dict(names) if names else None


def _connections(
    path: Path,
    report: _Report,
    forced: str | None,
    derive_states: bool,
    max_record_bytes: int,
    max_document_bytes: int,
    spill: Path | None = None,
    spill_events: int = _SLICE_ROWS,
    content: bytes | None = None,
) -> Iterator[_Connection]:
    """The connections of the qlog file ``path``, one qlog trace after another (the
    cyclic garbage collector paused while the file is parsed, running while the caller
    has a connection); with a ``spill`` folder, long ones on disk (:func:`_extract`);
    ``content``: the plain file's bytes, read whole by the caller (not opened again)."""
    if forced is not None and implementation_key(forced) is None:
        report.warn(
            None, f"no state-name table for implementation {forced!r}; using the common names"
        )
    with contextlib.ExitStack() as stack:
        fh = open_binary(path) if content is None else io.BytesIO(content)
        del content  # the reader's stream holds the bytes
        stack.callback(fh.close)
        reader = _Reader(fh, path)
        paused = stack.enter_context(_gc_paused())
        head = reader.read(_HEAD_BYTES)
        layout = _layout(head, path)
        if layout == "document":
            data = stack.enter_context(_plain_document(path, reader, head, max_document_bytes))
            raw_traces = None
            if data != path or _file_size(path) > _STREAM_MIN_BYTES:  # bounded memory
                raw_traces = _streamed_document_traces(data, path, report)
            if raw_traces is None:  # a small document (or no ijson): parsed whole
                if data != path:
                    reader = _Reader(stack.enter_context(open(data, "rb")), path)
                    head = b""
                raw_traces = _document_traces(path, reader, head, max_document_bytes, report)
        else:
            sep = _RS if layout == "seq" else b"\n"
            raw_traces = _sequential_traces(
                path, reader, head, sep, max_record_bytes, report, time_only=not derive_states
            )
        for raw in raw_traces:
            found = _extract(
                raw, forced, report, derive_states, spill=spill, spill_events=spill_events
            )[::-1]
            while found:  # handed over one by one: only the caller holds a connection
                with paused.resumed():
                    yield found.pop()
