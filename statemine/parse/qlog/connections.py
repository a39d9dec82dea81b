"""Raw traces to connections: events split by group_id and path_id, labels, packets kept for the derivation."""

from __future__ import annotations

import json
import math
import os
import tempfile
import weakref
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import InputError
from ..statenames import (
    TQUIC_DESCRIPTION,
    detect_implementation,
)
from ..timerange import MAX_TIME_S, time_problem
from .common import _num, _object_at, _Report, _token
from .reading import _MetricsRun, _RawTrace
from .vocabulary import (
    _LOSS,
    _METRIC_STRIDE,
    _METRICS,
    _MVFST,
    _NO_DATA,
    _NO_THRESHOLD,
    _RECEIVED,
    _SENT,
    _STATE,
    _TIMER,
    _decode,
    _item_state,
    _metrics,
    _pto_fired,
    _pto_state,
    _scaled,
    _TraceContext,
)

#: When a file is read in slices: the most congestion events (items, metrics updates,
#: packets) held over all connections of a qlog trace before they are appended to their
#: spill files, and the most rows of one part (a few MiB either way).
_SLICE_ROWS = 1 << 14
#: The flat float64 arrays of a connection, each also a spill file suffix.
_ARRAYS = ("metrics", "pto_count", "sent", "acks")

#: Column files of a spilled connection's packets, written when its states are derived
#: (suffixes beside its spill files): packets sent (time, number), ACKs received (time,
#: largest acknowledged so far).
PACKET_COLUMNS = ("sent_time", "sent_pn", "ack_time", "ack_best")

_OTHER_SPACES = frozenset(
    {"initial", "handshake", "retry", "version_negotiation", "stateless_reset"}
)


@dataclass
class _Summary:
    """What a connection's rows need decided over all its congestion events, gathered as
    they are read (so a connection spilled to disk is built in one forward pass)."""

    names: set[str] = field(default_factory=set)  # raw names its state rows can have
    has_states: bool = False  # a congestion_state_updated / mvfst state (not marks only)
    first_state: tuple | None = None  # the first item that makes a state row (log order)
    n_items: int = 0
    n_metrics: int = 0
    n_pto_counts: int = 0  # metrics updates that log pto_count
    last_packet: float = -math.inf  # time of the latest packet sent or ACK received kept
    packets_unordered: bool = False  # a packet came earlier than one kept before it
    # application-space packet events read: sent with a number, received, received with
    # a frames list, received with an ACK frame (what the warnings say is missing)
    n_sent: int = 0
    n_received: int = 0
    n_received_frames: int = 0
    n_acks: int = 0
    # the largest application-space packet sent (bytes, qlog raw.length) that was no
    # PMTU probe by its look (_in_flight)
    largest_sent: float = 0.0
    # when the first application-space packet carrying a STREAM frame with the FIN bit was
    # sent (seconds; inf: none): the sender has written all its data (derive_stacks)
    fin_sent: float = math.inf
    # ACKs received followed by a packet sent at their very time (a virtual-time log, one
    # time per send opportunity; derive_stacks): the latest ACK's time until then
    acks_then_sent: int = 0
    last_ack: float = math.nan
    # what picoquic's controller table is chosen from (statenames.picoquic_controller):
    # the distinct raw 'new' values of congestion_state_updated events, and whether a
    # state-1 event's cc_param equals the first window logged at its time after it
    # (pending: time -> cc_params of state-1 events still waiting for that window)
    state_values: set[str] = field(default_factory=set)
    window_hint: bool = False
    pending: dict[float, set[float]] = field(default_factory=dict)

    def note_window(self, time: float, cwnd: float) -> None:
        """A metrics update at ``time`` logged cwnd ``cwnd`` (NaN: none): the window
        logged after the state-1 events pending at that time."""
        if cwnd == cwnd and self.pending:
            params = self.pending.pop(time, set())
            if cwnd in params:
                self.window_hint = True
                self.pending.clear()

    def note(self, item: tuple) -> None:
        """Count a congestion item ``(time, code, data, line, index, seq)``."""
        self.n_items += 1
        if item[1] == _STATE:
            new = str(item[2].get("new"))
            self.state_values.add(new)
            param = _num(item[2].get("cc_param"))
            if new.strip() == "1" and param > 0 and not self.window_hint:
                self.pending.setdefault(item[0], set()).add(param)
        state = _item_state(item[1], item[2])
        if state is not None:
            self.names.add(state)
            self.has_states = self.has_states or item[1] in (_STATE, _MVFST)
            if self.first_state is None:
                self.first_state = item


@dataclass
class _Connection:
    """Relevant events of one connection of one qlog trace, in log order."""

    trace_index: int
    group: str | None
    labels: dict
    per_second: float
    items: list = field(
        default_factory=list
    )  # non-metrics events: (time s, code, data, line, index, seq)
    # metrics updates, flat rows of _METRIC_STRIDE floats: time s, seq, line, then _METRIC_COLUMNS
    metrics: array = field(default_factory=lambda: array("d"))
    # application-space packets sent: time, number, in flight (1.0; 0.0: only ACK,
    # PADDING or CONNECTION_CLOSE frames, RFC 9002 section 2; PMTU_PROBE: in flight, a
    # path MTU probe by its look)
    sent: array = field(default_factory=lambda: array("d"))
    acks: array = field(
        default_factory=lambda: array("d")
    )  # ACKs received: time, largest acknowledged
    # the PTO count metrics updates log (quic-go, quiche: PTOs fired since the last ACK):
    # time, seq, count
    pto_count: array = field(default_factory=lambda: array("d"))
    end: float = -math.inf
    start: float = math.inf  # time of the connection's first event of any kind (seconds)
    path: str | None = None  # path_id, when the trace has more than one path
    n_events: int = (
        0  # the file's events of this connection and path, of any kind (also the seq counter)
    )
    last: float = -math.inf  # time of the latest event read
    unordered: bool = False  # an event came earlier than one logged before it
    summary: _Summary = field(default_factory=_Summary)
    # every packet event so far (sent, received, lost) was of the Initial space: the
    # connection may still change its group_id (:func:`_continues`)
    opening: bool = True
    initial_packets: int = 0  # packet events of the Initial space while opening
    handshake_pto: bool = False  # the latest fired PTO timer was of the handshake's spaces
    # the shared spill store of its trace holding the events flushed so far (None while
    # all are in memory), and its segments there: kind -> [(offset, bytes)], in log order
    spill: _SpillStore | None = None
    segments: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def metric_rows(self) -> np.ndarray:
        """The metrics updates as a (n, _METRIC_STRIDE) array, in log order."""
        return (
            np.frombuffer(self.metrics, dtype=float).reshape(-1, _METRIC_STRIDE)
            if self.metrics
            else np.empty((0, _METRIC_STRIDE))
        )

    def flush(self, store: _SpillStore) -> None:
        """Append the events held to ``store`` (kept as :attr:`spill`; a segment per kind)
        and let them go. A metrics update that logs ``pto_count`` 0 is marked in ``ends``."""
        if self.spill is None:
            self.spill = store
            store.users += 1
        if self.pto_count:
            counts = np.frombuffer(self.pto_count, dtype=float).reshape(-1, 3)
            seqs = self.metric_rows()[:, 1]
            ends = np.isin(seqs, counts[counts[:, 2] == 0, 1])
            self._append("ends", ends.astype(np.uint8).tobytes())
        else:  # no counts logged since the last flush: none ends a PTO
            self._append("ends", bytes(len(self.metrics) // _METRIC_STRIDE))
        for name in _ARRAYS:
            self._append(name, getattr(self, name).tobytes())
            setattr(self, name, array("d"))
        self._append("items", "".join(json.dumps(item) + "\n" for item in self.items).encode())
        self.items = []

    def _append(self, kind: str, data: bytes) -> None:
        """Append ``data`` to the store's ``kind`` file as this connection's next segment
        (joined to the last one when they are adjacent)."""
        assert self.spill is not None
        if not data:
            return
        offset = self.spill.append(kind, data)
        segments = self.segments.setdefault(kind, [])
        if segments and sum(segments[-1]) == offset:
            segments[-1] = (segments[-1][0], segments[-1][1] + len(data))
        else:
            segments.append((offset, len(data)))

    def _size(self, kind: str) -> int:
        """Bytes of ``kind`` spilled (0 if none)."""
        return sum(size for _, size in self.segments.get(kind, ()))

    def _read(self, kind: str, start: int, out: memoryview) -> None:
        """Fill ``out`` with the spilled bytes of ``kind`` from ``start`` (bytes into this
        connection's segments, walked in order)."""
        assert self.spill is not None
        base = pos = 0
        for offset, size in self.segments.get(kind, ()):
            if pos == len(out):
                break
            if base + size > start:
                skip = max(start - base, 0)
                take = min(size - skip, len(out) - pos)
                self.spill.read_into(kind, offset + skip, out[pos : pos + take])
                pos += take
            base += size
        if pos != len(out):
            raise OSError(f"spill store: {len(out) - pos} bytes of {kind} missing")

    def _bytes(self, kind: str, start: int = 0, size: int | None = None) -> bytearray:
        """The spilled bytes of ``kind`` from ``start``, ``size`` of them (None: all)."""
        out = bytearray(self._size(kind) - start if size is None else size)
        self._read(kind, start, memoryview(out))
        return out

    def stored_items(self) -> Iterator[tuple]:
        """The spilled items, in log order, read a segment (one flush's) at a time."""
        assert self.spill is not None
        for offset, size in self.segments.get("items", ()):
            data = bytearray(size)
            self.spill.read_into("items", offset, memoryview(data))
            for line in data.decode("utf-8").splitlines():
                yield tuple(json.loads(line))

    def append_column(self, name: str, values: np.ndarray) -> None:
        """Append float64 ``values`` to the spilled packet column ``name``
        (:data:`PACKET_COLUMNS`)."""
        self._append(name, values.astype(float).tobytes())

    def column(self, name: str) -> np.ndarray:
        """The spilled packet column ``name``: a read-only memory map of its one segment
        (a copy joined in memory when it has several), empty if none."""
        assert self.spill is not None
        segments = self.segments.get(name, [])
        maps = [
            np.memmap(self.spill.path(name), float, "r", offset=offset, shape=(size // 8,))
            for offset, size in segments
        ]
        if not maps:
            return np.empty(0)
        return maps[0] if len(maps) == 1 else np.concatenate(maps)

    def spilled_events(self) -> int:
        """The congestion events (items, metrics updates, packets kept) in the spill store."""
        return (
            self.summary.n_items
            + self.summary.n_metrics
            + self._size("sent") // 24
            + self._size("acks") // 16
        )

    def has(self, name: str) -> bool:
        """Whether the flat array ``name`` (:data:`_ARRAYS`) holds a row, in memory or
        spilled."""
        if self.spill is None:
            return len(getattr(self, name)) > 0
        return self._size(name) > 0

    def each_item(self) -> Iterator[tuple]:
        """The items in log order: those held, or the spilled ones read one by one."""
        return iter(self.items) if self.spill is None else self.stored_items()

    def array_chunks(self, name: str, width: int, rows: int) -> Iterator[np.ndarray]:
        """One of the flat arrays (:data:`_ARRAYS`, ``width`` floats a row) as (n, width)
        chunks in log order: the one held in memory whole (one chunk), or the spilled one
        ``rows`` rows at a time."""
        if self.spill is None:
            yield np.frombuffer(getattr(self, name), dtype=float).reshape(-1, width)
            return
        total = self._size(name) // (width * 8)
        for first in range(0, total, rows):
            count = min(rows, total - first)
            chunk = np.empty((count, width))
            self._read(name, first * width * 8, chunk.data.cast("B"))
            yield chunk

    def metric_chunks(self, rows: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The spilled metrics updates in log order, ``rows`` at a time, each chunk with
        whether each update can end a PTO (one logging pto_count 0 where the connection
        logs counts, else any)."""
        logs_counts = self.summary.n_pto_counts > 0
        first = 0
        for chunk in self.array_chunks("metrics", _METRIC_STRIDE, rows):
            count = len(chunk)
            ends = np.frombuffer(self._bytes("ends", first, count), np.uint8).astype(bool)
            first += count
            yield chunk, ends if logs_counts else np.ones(count, bool)

    def load(self) -> None:
        """Read the spilled events back into memory (a connection built whole), letting
        its segments go."""
        assert self.spill is not None
        self.flush(self.spill)
        self.items = list(self.stored_items())
        for name in _ARRAYS:
            values = array("d")
            values.frombytes(self._bytes(name))
            setattr(self, name, values)
        self.discard()

    def discard(self) -> None:
        """Let the spilled segments go (nothing if none): the store's files are removed
        once every connection spilled there is discarded."""
        if self.spill is not None:
            self.spill.release()
            self.spill = None
            self.segments = {}


class _SpillStore:
    """The spill files of one qlog trace's connections in a folder: one append-only file
    per kind (items, ends, each flat array, each packet column), made on its first append
    and kept open, each connection's flush a segment of it (about 10 us, where a file of
    its own per kind cost about 2 ms a connection). The files are removed once each
    connection that spilled here is discarded, or when the store is garbage collected (an
    error part way)."""

    def __init__(self, folder: Path, trace_index: int) -> None:
        self.folder = folder
        self.prefix = f"{trace_index}-"
        self.users = 0  # connections with segments here, not yet discarded
        self._files: dict[str, tuple[int, Path]] = {}  # kind -> (descriptor, path)
        self._sizes: dict[str, int] = {}
        self._close = weakref.finalize(self, _remove_files, self._files)

    def path(self, kind: str) -> Path:
        """The file of ``kind`` (made if new)."""
        return self._file(kind)[1]

    def _file(self, kind: str) -> tuple[int, Path]:
        found = self._files.get(kind)
        if found is None:
            if not self._close.alive:
                raise OSError("spill store used after its files were removed")
            fd, name = tempfile.mkstemp(prefix=self.prefix, suffix=f".{kind}", dir=self.folder)
            found = self._files[kind] = (fd, Path(name))
            self._sizes[kind] = 0
        return found

    def append(self, kind: str, data: bytes) -> int:
        """Append ``data`` to the file of ``kind``; its offset there (bytes)."""
        fd = self._file(kind)[0]
        offset = self._sizes[kind]
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        self._sizes[kind] = offset + len(data)
        return offset

    def read_into(self, kind: str, offset: int, out: memoryview) -> None:
        """Fill ``out`` from the file of ``kind`` at ``offset`` (bytes)."""
        fd = self._file(kind)[0]
        while out:
            got = os.preadv(fd, [out], offset)
            if not got:
                raise OSError(f"spill store: {kind} ends before offset {offset}")
            out, offset = out[got:], offset + got

    def release(self) -> None:
        """One connection spilled here is done; the files go with the last."""
        self.users -= 1
        if self.users <= 0:
            self._close()


def _remove_files(files: dict[str, tuple[int, Path]]) -> None:
    """Close and remove a spill store's files."""
    for fd, path in files.values():
        os.close(fd)
        path.unlink(missing_ok=True)
    files.clear()


def _path_label(value: object, line: int, trace_index: int, report: _Report) -> str | None:
    """A path_id as text: integers (or integer strings) as their decimal form, None if absent.

    Anything else (a fraction, a bool, an object) is read as its text, with a warning.
    """
    if value is None:
        return None
    if type(value) is int:
        return str(value)
    if type(value) is str and value.strip().isdigit():
        return str(int(value))
    report.warn(
        line,
        f"trace {trace_index}: path_id {value!r} ({type(value).__name__}) is not a "
        "path number; its text is used as the path's label",
        kind="path_id type",
    )
    return _token(json.dumps(value) if isinstance(value, (dict, list)) else value)


def _version_label(file_header: dict) -> str | None:
    """The schema label: ``file_schema`` where the header has one, else ``qlog_version``.

    quic-go v0.65 writes both ``file_schema`` (the newer, unversioned schema it follows)
    and ``qlog_version: "0.3"``; the schema URN says what the file is.
    """
    schema = file_header.get("file_schema")
    version = file_header.get("qlog_version")
    if schema is not None:
        return str(schema)
    return None if version is None else str(version)


def _extract(
    raw: _RawTrace,
    forced: str | None,
    report: _Report,
    packets: bool = False,
    spill: Path | None = None,
    spill_events: int = _SLICE_ROWS,
) -> list[_Connection]:
    """Split a trace's events by connection (group_id) and path (path_id), keeping the
    congestion-related ones. With a ``spill`` folder, the events held over all connections
    are appended to per-connection files there whenever they reach ``spill_events``
    (memory stays bounded however long a connection is); a connection never flushed stays
    in memory, one flushed has everything on disk when this returns."""
    ctx = _TraceContext.of(raw.header)
    vantage = _object_at(raw.header, "vantage_point")
    implementation = forced or detect_implementation(
        raw.file_header.get("title"),
        raw.file_header.get("description"),
        raw.header.get("title"),
        raw.header.get("description"),
        vantage.get("name"),
    )
    version = _version_label(raw.file_header)
    role = vantage.get("type")
    conn_label = ctx.conn
    if conn_label is None and implementation == "tquic":  # its id is in the description only
        found = TQUIC_DESCRIPTION.match(str(raw.header.get("description", "")))
        conn_label = found["cid"] if found else None
    base = {
        "role": role.lower() if isinstance(role, str) else None,
        "implementation": implementation,
        "qlog_version": None if version is None else str(version),
    }
    connections: dict[tuple[str | None, str | None], _Connection] = {}
    aliases: dict[str, str] = {}  # a group_id -> the group it continues (_continues)
    previous: _Connection | None = None  # the connection of the latest event
    clock = 0.0
    held = 0  # events held since the last flush
    store = None if spill is None else _SpillStore(spill, raw.index)
    where = f"trace {raw.index}"
    offset, per_second = ctx.offset, ctx.per_second
    own = None if ctx.group is None else str(ctx.group)  # the group of events naming none
    # records of a run for the general path (a record, then the rest of its run), reversed
    pending: list[tuple[int, int, object]] = []

    def events() -> Iterator[tuple[int, int, object]]:
        for each in raw.events:
            yield each
            while pending:
                yield pending.pop()

    for line, index, event in events():
        if type(event) is _MetricsRun:
            # plain metrics records read in C (reading, _runscan.metrics_record): those
            # adding to a connection held in memory at finite times taken here at once
            # (what the general path below does for each); the first other one goes to
            # the general path, then the rest of the run comes back here
            run = event
            if run.seconds is None:
                run.seconds = [(v[0] + offset) / per_second for v in run.values]
            if ctx.delta:
                conn = None
            else:
                conn = connections.get((aliases.get(own, own) if aliases and own else own, None))
            first, times = run.start, run.seconds
            if conn is not None:
                # at most up to the next flush of the held events, as the general path
                last = len(times) if spill is None else min(len(times), first + spill_events - held)
                stop = first
                while stop < last and -MAX_TIME_S <= times[stop] <= MAX_TIME_S:
                    stop += 1
                if stop > first:
                    previous = conn
                    _add_metrics(conn, run, stop, per_second)
                    run.start = stop
                    if spill is not None:
                        held += stop - first
                        if held >= spill_events:
                            assert store is not None
                            _spill(list(connections.values()), store, spill_events >> 8)
                            held = 0
            if run.start < len(times):
                if run.start == first:  # this record to the general path, then the rest
                    run.start += 1
                    if run.start < len(times):
                        pending.append((run.lines[run.start], run.indices[run.start], run))
                    pending.append((run.lines[first], run.indices[first], run.values[first]))
                else:  # the rest of the run comes back
                    pending.append((run.lines[run.start], run.indices[run.start], run))
            continue
        # a tuple: a plain metrics record read in C (reading, _runscan.metrics_record):
        # (time, the six metric columns as logged, pto_count), NaN where not logged
        fast = event if type(event) is tuple else None
        decoded: tuple[float, bool, int | None, dict, object, object] | None
        if fast is not None:
            pto = fast[7]
            decoded = (
                fast[0],
                ctx.delta,
                _METRICS,
                _NO_DATA if pto != pto else {"pto_count": pto},
                ctx.group,
                None,
            )
        else:
            decoded = _decode(event, ctx)
        if decoded is None:
            if event != {} and event != []:  # empty events (draft-02 "{}", quictrace "[]")
                report.warn(
                    line,
                    f"trace {raw.index} event {index} is neither an object nor an array; skipped",
                    kind="bad event",
                )
            continue
        time, delta, code, data, group, path = decoded
        if delta:
            time = clock + time
        seconds = (time + offset) / per_second
        if not -MAX_TIME_S <= seconds <= MAX_TIME_S:
            if seconds == seconds:  # a number, but no clock's (infinite or too large)
                raise InputError(
                    report.path, line, f"trace {raw.index} event {index}: {time_problem(seconds)}"
                )
            report.warn(  # no number at all (missing, text, NaN)
                line,
                f"trace {raw.index} event {index} has no finite numeric time; skipped",
                kind="bad time",
            )
            continue
        if delta:
            clock = time
        if path is not None:
            path = _path_label(path, line, raw.index, report)
        if group is not None:
            group = str(group)
            if aliases:
                group = aliases.get(group, group)
        conn = connections.get((group, path))
        if conn is None and group is not None and _continues(previous, seconds, path):
            assert previous is not None and previous.group is not None
            aliases[group] = previous.group
            previous.labels["conn"] = group  # the id the connection goes on with
            conn, group = previous, previous.group
        if conn is None:
            labels = {
                **base,
                "conn": group if group is not None and group != ctx.group else conn_label,
                "path": path,
            }
            conn = connections[(group, path)] = _Connection(
                raw.index, group, labels, ctx.per_second, path=path
            )
        if conn.opening and code in (_SENT, _RECEIVED, _LOSS):
            initial = _packet_space(data) == "initial"
            conn.opening = initial
            conn.initial_packets += initial
        previous = conn
        if seconds > conn.end:
            conn.end = seconds
        if seconds < conn.start:
            conn.start = seconds
        if code in (_SENT, _RECEIVED):
            if packets:
                _record_packet(conn, code, data, seconds)
            code = None
        if code is not None:
            if seconds < conn.last:
                conn.unordered = True
            conn.last = seconds
        conn.n_events += 1
        if code == _TIMER and _pto_fired(data):
            conn.handshake_pto = _pto_state(data) == "Handshake"
        if code == _METRICS:
            count = data.get("pto_count")
            count = math.nan if count is None else _num(count)
            if count == count:
                # a count of the handshake's PTOs is kept negative (derive.HANDSHAKE_PTO)
                count = -count if count > 0 and _in_handshake(conn) else count
                conn.pto_count.extend((seconds, conn.n_events, count))
                conn.summary.n_pto_counts += 1
        if code in (_METRICS, _MVFST):
            conn.summary.n_metrics += 1
            values = (
                _metrics(data, ctx.per_second, line, where, report)
                if fast is None
                else _scaled(fast[1:7], ctx.per_second)
            )
            conn.metrics.extend((seconds, conn.n_events, line, *values))
            conn.summary.note_window(seconds, values[0])
        if code is not None and code != _METRICS:
            if code == _MVFST:
                data = {
                    "state": data.get("state"),
                    "congestion_event": data.get("congestion_event"),
                }
            item = (seconds, code, data, line, index, conn.n_events)
            conn.items.append(item)
            conn.summary.note(item)
        if spill is not None:
            held += 1
            if held >= spill_events:
                assert store is not None
                _spill(list(connections.values()), store, spill_events >> 8)
                held = 0
    if raw.skipped is not None and raw.skipped.count:
        conn = connections.get((ctx.group, None))
        if conn is None:
            labels = {**base, "conn": conn_label, "path": None}
            conn = connections[(ctx.group, None)] = _Connection(
                raw.index, ctx.group, labels, ctx.per_second
            )
        conn.n_events += raw.skipped.count
        conn.start = min(conn.start, (raw.skipped.first + ctx.offset) / ctx.per_second)
        conn.end = max(conn.end, (raw.skipped.last + ctx.offset) / ctx.per_second)
    for conn in connections.values():
        if conn.spill is not None:
            conn.flush(conn.spill)
    if not connections:
        report.warn(None, f"trace {raw.index} has no events; left out")
    if len({group for group, _ in connections}) == 1:
        for conn in connections.values():
            conn.group = None
    if len({path for _, path in connections}) == 1:
        for conn in connections.values():
            conn.path = None  # one path: no suffix in the trace id (the label stays)
    return list(connections.values())


def _add_metrics(conn: _Connection, run: _MetricsRun, stop: int, per_second: float) -> None:
    """Add the metrics updates ``run.start`` to ``stop`` of ``run`` (times in range) to
    ``conn`` as :func:`_extract`'s general path adds each (:func:`.vocabulary._scaled`:
    ssthresh of 2^62 or more read as inf, srtt in seconds)."""
    start, seconds = run.start, run.seconds
    assert seconds is not None
    summary, rows = conn.summary, conn.metrics
    last, n = conn.last, conn.n_events
    for time, values, line in zip(
        seconds[start:stop], run.values[start:stop], run.lines[start:stop], strict=True
    ):
        if time > conn.end:
            conn.end = time
        if time < conn.start:
            conn.start = time
        if time < last:
            conn.unordered = True
        last = time
        n += 1
        count = values[7]
        if count == count:
            # a count of the handshake's PTOs is kept negative (derive.HANDSHAKE_PTO)
            count = -count if count > 0 and _in_handshake(conn) else count
            conn.pto_count.extend((time, n, count))
            summary.n_pto_counts += 1
        cwnd, inflight, ssthresh, srtt, pacing, bandwidth = values[1:7]
        if ssthresh >= _NO_THRESHOLD:
            ssthresh = math.inf
        rows.extend((time, n, line, cwnd, inflight, ssthresh, srtt / per_second, pacing, bandwidth))
        if summary.pending:
            summary.note_window(time, cwnd)
    conn.last, conn.n_events = last, n
    summary.n_metrics += stop - start


def _held(conn: _Connection) -> int:
    """The congestion events (items, metrics updates, packets) a connection holds in memory."""
    return (
        len(conn.items)
        + len(conn.metrics) // _METRIC_STRIDE
        + len(conn.sent) // 3
        + len(conn.acks) // 2
    )


def _spill(connections: list[_Connection], store: _SpillStore, least: int) -> None:
    """Append the events held to the trace's spill ``store``: those of a
    connection holding at least ``least`` (64 when 16,384 events are held in all) or
    already spilled, and every one's once the small connections together hold more than
    :data:`_SMALL_HELD` (memory stays bounded). A flush is a segment per kind of the
    shared store (microseconds; files of its own per connection cost milliseconds: a
    server's file of 1e4 two-event connections took 65 s spilled, 0.9 s held)."""
    held = [_held(each) for each in connections]
    small = sum(n for n, each in zip(held, connections) if n < least and each.spill is None)
    for n, each in zip(held, connections):
        if n and (n >= least or each.spill is not None or small > _SMALL_HELD):
            each.flush(store)


#: The most events the small connections (never spilled) hold in all before they are
#: spilled too (about 100 MB of held events at most).
_SMALL_HELD = 1 << 18


def _packet_space(data: dict) -> str:
    """A packet event's packet type, lower case ("" when not logged)."""
    header = _object_at(data, "header")
    return str(header.get("packet_type", data.get("packet_type", data.get("type", "")))).lower()


def _in_handshake(conn: _Connection) -> bool:
    """Whether a PTO counted now is the handshake's, not the congestion controller's: the
    latest fired PTO timer was of the Initial or Handshake space (quic-go logs the space),
    or no application-space packet was sent or received yet (quinn logs no timers; the
    packet events are read whenever states are derived)."""
    return conn.handshake_pto or not (conn.summary.n_sent or conn.summary.n_received)


def _continues(previous: _Connection | None, seconds: float, path: str | None) -> bool:
    """Whether an event at ``seconds`` with a group_id not seen before continues the
    connection of the event before it. quinn's group_id is the connection's original
    remote connection id (quinn-proto ``orig_rem_cid``), which a client replaces by the
    server's chosen id while it handles the server's first Initial (RFC 9000 section 7.2):
    the new id appears at the very time of the last event under the old one, whose
    connection had sent or received Initial packets only. So a new group_id continues the
    previous event's connection when that connection logged only Initial-space packets
    (at least one) and its latest event has the same time; a server's next connection
    begins with its own packets at another time."""
    return (
        previous is not None
        and previous.group is not None
        and previous.opening
        and previous.initial_packets > 0
        and previous.path == path
        and seconds == previous.end
    )


#: Frames that do not make a packet count in flight (RFC 9002 section 2, "In flight").
_NOT_IN_FLIGHT = frozenset({"ack", "padding", "connection_close"})
#: The frames of a path MTU probe (RFC 9000 section 14.4: a PING padded to the probed size).
_PROBE_FRAMES = frozenset({"ping", "padding"})
#: The in-flight mark of a packet that looks like a path MTU probe (:func:`_in_flight`).
PMTU_PROBE = 2.0


def _in_flight(frames: object, length: float = math.nan, largest: float = math.inf) -> float:
    """1.0 if a packet with ``frames`` (a qlog frames list) counts in flight, 0.0 if every
    frame is ACK, PADDING or CONNECTION_CLOSE; 1.0 where the frames are not logged.
    :data:`PMTU_PROBE` (in flight too) for a path MTU probe by its look: only PING and
    PADDING frames and ``length`` (bytes) above ``largest``, every earlier packet's.

    >>> _in_flight([{"frame_type": "ping"}], 1409.0, 1366.0), _in_flight([{"frame_type": "ping"}])
    (2.0, 1.0)
    """
    if not isinstance(frames, list) or not frames:
        return 1.0
    kinds = {str(f.get("frame_type", "")).lower() for f in frames if isinstance(f, dict)}
    if kinds and kinds <= _NOT_IN_FLIGHT:
        return 0.0
    return PMTU_PROBE if kinds and kinds <= _PROBE_FRAMES and length > largest else 1.0


def _has_fin(frames: object) -> bool:
    """Whether a qlog frames list holds a STREAM frame with the FIN bit."""
    return isinstance(frames, list) and any(
        isinstance(f, dict) and f.get("fin") is True and f.get("frame_type") == "stream"
        for f in frames
    )


def _record_packet(conn: _Connection, code: int, data: dict, seconds: float) -> None:
    """Keep an application-space packet sent (time, number, in flight) or an ACK received
    (time, largest acknowledged number) for the RFC 9002 recovery periods."""
    header = _object_at(data, "header")
    space = str(header.get("packet_type", data.get("packet_type", ""))).lower()
    if space in _OTHER_SPACES:
        return
    summary = conn.summary
    summary.packets_unordered = summary.packets_unordered or seconds < summary.last_packet
    summary.last_packet = max(summary.last_packet, seconds)
    if code == _SENT:
        number = _num(header.get("packet_number", data.get("packet_number")))
        if number == number:
            summary.n_sent += 1
            frames = data.get("frames")
            length = _num(_object_at(data, "raw").get("length", data.get("length")))
            flight = _in_flight(frames, length, summary.largest_sent)
            if flight != PMTU_PROBE and length > summary.largest_sent:
                summary.largest_sent = length
            conn.sent.extend((seconds, number, flight))
            if seconds < summary.fin_sent and _has_fin(frames):
                summary.fin_sent = seconds
            if seconds == summary.last_ack:
                summary.acks_then_sent += 1
                summary.last_ack = math.nan
        return
    summary.n_received += 1
    summary.n_received_frames += isinstance(data.get("frames"), list)
    largest = math.nan
    for frame in data.get("frames") or ():
        if isinstance(frame, dict) and str(frame.get("frame_type", "")).lower() == "ack":
            for ack_range in frame.get("acked_ranges") or ():
                if isinstance(ack_range, list) and ack_range:
                    top = _num(ack_range[-1])
                    largest = top if largest != largest or top > largest else largest
    if largest == largest:
        summary.n_acks += 1
        summary.last_ack = seconds
        conn.acks.extend((seconds, largest))


def missing_packets(summary: _Summary) -> str:
    """What a connection lacks for the RFC 9002 recovery periods, in words."""
    if not summary.n_sent and not summary.n_received:
        return "no application-space packet events"
    lacks = []
    if not summary.n_sent:
        lacks.append("no application-space packet_sent with a packet number")
    if not summary.n_acks:
        if summary.n_received and not summary.n_received_frames:
            lacks.append(
                f"its {summary.n_received} application-space packet_received events log no "
                "frames, so no ACK frames"
            )
        else:
            lacks.append("no packet_received with an ACK frame")
    return "; ".join(lacks)
