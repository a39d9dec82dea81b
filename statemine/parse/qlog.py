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
import gc
import gzip
import io
import json
import math
import os
import re
import zlib
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
from orjson import loads as _loads  # parses qlog records 5-6 times faster than json

from ..errors import InputError
from ..traces import TraceSet
from . import derive as _derive
from .lines import open_binary, read_error
from .statenames import (
    DERIVED_MARK,
    PICOQUIC_TABLES,
    detect_by_names,
    detect_implementation,
    implementation_key,
    picoquic_controller,
    resolve_state,
)

#: Largest JSON-SEQ / NDJSON record accepted by default (bytes).
DEFAULT_MAX_RECORD_BYTES = 64 << 20
#: Largest ``.qlog`` JSON document accepted by default (bytes, after gunzip).
DEFAULT_MAX_DOCUMENT_BYTES = 1 << 30

_CHUNK_BYTES = 1 << 20
#: ``.qlog`` documents larger than this (bytes on disk) are streamed (two passes, ijson)
#: instead of parsed whole (about 10 bytes of memory per byte of JSON).
_STREAM_MIN_BYTES = 16 << 20
_HEAD_BYTES = 1 << 16
_GZIP_MAGIC = b"\x1f\x8b"  # gzip member header (RFC 1952)
_RS = b"\x1e"
_BLANK = b"\xef\xbb\xbf \t\r\n"
_MAX_LISTED = 20  # warnings of one kind listed one by one; the rest are counted

# Event types (lower case, category stripped). draft-00: CC_STATE_UPDATE, METRIC_UPDATE;
# draft-01..0.3: recovery:congestion_state_updated, recovery:metrics_updated;
# 0.4 and later: quic:congestion_state_updated, quic:recovery_metrics_updated.
_STATE_TYPES = frozenset({"congestion_state_updated", "cc_state_update"})
_METRIC_TYPES = frozenset({"metrics_updated", "metric_update", "recovery_metrics_updated"})
_MVFST_METRIC = "congestion_metric_update"  # mvfst: metrics plus its controller's "state"
_MVFST_APP_LIMITED = "app_limited_update"  # mvfst: {"app_limited": "app limited"|"app unlimited"}
_LOSS_TYPES = frozenset({"packet_lost"})
_SPURIOUS_TYPES = frozenset({"spurious_loss"})  # quic-go: a lost packet acknowledged after all
# loss_timer_updated {timer_type, event_type: set|expired|cancelled} (draft-01 and later);
# draft-00 LOSS_ALARM_FIRED / loss_timer_expired. Only a fired PTO timer is a ProbeTimeout.
_TIMER_TYPES = frozenset({"loss_timer_updated", "loss_timer_expired", "loss_alarm_fired"})
# quictrace-to-qlog (Chromium traces converted by qvis's tool): the sender became app limited
_CHROMIUM_APP_LIMITED = "custom_cc_application_limited"

# data fields -> statemine columns (qlog names; mvfst's current_cwnd; draft-00/01 cwnd).
_CWND_KEYS = ("congestion_window", "cwnd", "current_cwnd")
_INFLIGHT_KEYS = ("bytes_in_flight",)
_SSTHRESH_KEYS = ("ssthresh",)
# quiche and neqo log u64::MAX as the initial ssthresh ("no threshold yet"): read as inf.
_NO_THRESHOLD = 2.0**62
_SRTT_KEYS = ("smoothed_rtt",)
# pacing rate and bandwidth estimate, kept as logged (the qlog drafts give pacing_rate in
# bits per second; picoquic and converters may differ). quiche: delivery_rate.
_PACING_KEYS = ("pacing_rate",)
_BANDWIDTH_KEYS = (
    "bandwidth",
    "delivery_rate",
    "estimated_bandwidth",
    "bw",
    "btl_bw",
    "max_bandwidth",
)
_METRIC_KEYS = (
    _CWND_KEYS,
    _INFLIGHT_KEYS,
    _SSTHRESH_KEYS,
    _SRTT_KEYS,
    _PACING_KEYS,
    _BANDWIDTH_KEYS,
)
# packet_lost triggers (draft-ietf-quic-qlog-quic-events, packet_lost) -> log-format rule.
_LOSS_RULES = {"reordering_threshold": "packet", "time_threshold": "time"}

_STATE, _METRICS, _MVFST, _APP_LIMITED, _LOSS, _SPURIOUS, _TIMER, _CHROMIUM_AL, _SENT, _RECEIVED = (
    range(10)
)
_METRIC_COLUMNS = ("cwnd", "inflight", "ssthresh", "srtt", "pacing_rate", "bandwidth")
_METRIC_STRIDE = 3 + len(_METRIC_COLUMNS)
# event_fields assumed when an array-events trace has none (draft-01 / draft-00 defaults)
_NO_TIME_FIELDS = ("relative_time", "category", "event", "data")
_NO_TIME_FIELDS_TRIGGER = ("relative_time", "category", "event", "trigger", "data")


# -- public API ------------------------------------------------------------------------------
class NoCongestionData(InputError):
    """A readable qlog file without any usable congestion state (a folder may skip it)."""


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
    report = _Report(path)
    overrides = dict(names) if names else None
    forced = implementation
    if forced is not None and implementation_key(forced) is None:
        report.warn(
            None, f"no state-name table for implementation {forced!r}; using the common names"
        )
    with open_binary(path) as fh, _gc_paused():
        reader = _Reader(fh, path)
        head = reader.read(_HEAD_BYTES)
        layout = _layout(head, path)
        if layout == "document" and reader.gzip:  # a gzip bomb is refused before it is parsed
            _check_gunzipped_size(path, max_document_bytes)
        streamed = layout == "document" and _worth_streaming(path, reader)
        raw_traces = _streamed_document_traces(path, report) if streamed else None
        if raw_traces is not None:
            pass
        elif layout == "document":  # small, cut off, invalid, or no ijson
            raw_traces = _document_traces(path, reader, head, max_document_bytes, report)
        else:
            sep = _RS if layout == "seq" else b"\n"
            raw_traces = _sequential_traces(
                path, reader, head, sep, max_record_bytes, report, time_only=not derive_states
            )
        connections = [
            conn
            for raw in raw_traces
            for conn in _extract(raw, forced, report, packets=derive_states)
        ]
    return _build(path, source or path.name, connections, overrides, derive_states, report)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while millions of acyclic JSON objects are made.

    Parsing allocates containers only; without this, CPython's collector rescans them all
    again and again (about 40 % of the time of a large .qlog). Restores the previous state.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# -- warnings --------------------------------------------------------------------------------
class _Report:
    """Warnings of one read, each ``"FILE:LINE: reason"``; repeated kinds are counted."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.messages: list[str] = []
        self._counts: Counter = Counter()

    def warn(self, line: int | None, reason: str, kind: str | None = None) -> None:
        """Add a warning; at most ``_MAX_LISTED`` of one ``kind`` are listed one by one."""
        if kind is not None:
            self._counts[kind] += 1
            if self._counts[kind] > _MAX_LISTED:
                return
        where = f"{self.path}:{line}" if line is not None and line > 0 else str(self.path)
        self.messages.append(f"{where}: {reason}")

    def finish(self) -> list[str]:
        """All warnings, with a count line for every kind that overflowed."""
        extra = [
            f"{self.path}: {n - _MAX_LISTED} more warnings like '{kind}' not listed"
            for kind, n in self._counts.items()
            if n > _MAX_LISTED
        ]
        return self.messages + extra


# -- bytes in --------------------------------------------------------------------------------
class _Reader:
    """Reads a (possibly gzip) stream in blocks of at most ``n`` bytes (gzip decompressed
    piece by piece, never more than asked for). A gzip stream that is cut off or damaged
    is an :class:`InputError` (:func:`statemine.parse.lines.read_error`), as under every
    ``--format``."""

    def __init__(self, fh: io.BufferedReader | gzip.GzipFile, path: Path) -> None:
        self.fh, self.path = fh, path
        self.ended = False

    @property
    def gzip(self) -> bool:
        """Whether the stream is gzip-compressed."""
        return isinstance(self.fh, gzip.GzipFile)

    def read(self, n: int) -> bytes:
        """Up to ``n`` bytes (fewer only at the end of the stream)."""
        parts, size = [], 0
        while size < n and not self.ended:
            try:
                block = self.fh.read1(n - size)
            except (OSError, EOFError, zlib.error) as exc:
                raise read_error(self.path, exc) from None
            if not block:
                self.ended = True
            parts.append(block)
            size += len(block)
        return b"".join(parts)


def _layout(head: bytes, path: Path) -> str:
    """``"document"`` (.qlog JSON), ``"seq"`` (JSON-SEQ) or ``"ndjson"``, from the first bytes."""
    text = head.lstrip(_BLANK)
    if not text:
        raise InputError(path, None, "empty file (no qlog header)")
    if text[:1] == _RS:
        return "seq"
    if text[:1] != b"{":
        raise InputError(
            path, 1, f"not a qlog file: it starts with {text[:16]!r}, not '{{' or 0x1E"
        )
    fmt = re.search(rb'"(?:qlog_format|serialization_format)"\s*:\s*"([^"]{0,64})"', text)
    if fmt:
        value = fmt.group(1).lower()
        return "seq" if b"seq" in value else "ndjson" if b"ndjson" in value else "document"
    if b'"traces"' in text:
        return "document"
    newline = text.find(b"\n")
    if newline > 0:
        try:
            if isinstance(_loads(text[:newline]), dict):
                return "ndjson"
        except ValueError:
            pass
    return "document"


@dataclass
class _RawTrace:
    """One qlog trace: file header, trace header and its events ``(line, index, event)``."""

    index: int
    file_header: dict
    header: dict
    events: Iterable[tuple[int, int, object]]
    skipped: _Skipped | None = None  # events not parsed (filled while ``events`` is read)


@dataclass
class _Skipped:
    """Events of a sequential trace read for their time only (no congestion data, no
    group_id or path_id, so they belong to the trace's own connection): count and the
    earliest and latest time, in the file's time units."""

    count: int = 0
    first: float = math.inf
    last: float = -math.inf


# A JSON-SEQ / NDJSON record that starts {"time": T, "name": "category:type"} (quic-go's and
# quiche's order) with a type statemine does not read, and names no group_id, path or time
# format of its own, is only counted and timed (packet events: most of a file); any other
# record is parsed whole.
_TIMED_NAME = re.compile(
    rb'\{\s*"time"\s*:\s*(-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)\s*,\s*"name"\s*:\s*"(?:[^":]*:)?([^"]*)"'
)


def _worth_streaming(path: Path, reader: _Reader) -> bool:
    """Whether a ``.qlog`` document is read in two streamed passes rather than whole: gzip
    documents (size unknown) and files over ``_STREAM_MIN_BYTES`` that end with ``}`` (a
    cut-off document goes to the whole-document reader, which repairs or refuses it)."""
    if isinstance(reader.fh, gzip.GzipFile):
        return True
    try:
        size = path.stat().st_size
        if size <= _STREAM_MIN_BYTES:
            return False
        with open(path, "rb") as fh:
            fh.seek(size - 64)
            return fh.read().rstrip(_BLANK).endswith(b"}")
    except OSError:
        return False


def _document_headers(path: Path) -> tuple[dict, list[dict], list[int]] | None:
    """First pass over a ``.qlog`` document (streamed by ijson, never held whole): the file
    header, each trace's header (everything but ``events``) and its number of events.

    None when ijson is not installed or the document is not complete, valid JSON of that
    shape (the whole-document reader then reports or repairs it).
    """
    try:
        import ijson
        from ijson.common import ObjectBuilder
    except ImportError:  # pragma: no cover - ijson is a dependency; the fallback reads whole
        return None
    file_header: dict = {}
    headers: list[dict] = []
    counts: list[int] = []
    builders: dict[tuple[int, str | None], ObjectBuilder] = {}
    top = key = None
    saw_traces = False
    try:
        with open_binary(path) as fh:
            for prefix, event, value in ijson.parse(fh, use_float=True):
                if prefix.startswith("traces.item.events"):
                    if prefix == "traces.item.events.item" and (
                        event == "start_map" or event == "start_array"
                    ):
                        counts[-1] += 1
                    continue
                if prefix == "":
                    if event == "map_key":
                        top = value
                        saw_traces = saw_traces or value == "traces"
                    elif event != "start_map" and event != "end_map":
                        return None  # not an object
                    continue
                if top == "traces":
                    if prefix == "traces":
                        if event == "start_array" or event == "end_array":
                            continue
                        return None  # traces is not an array
                    if prefix == "traces.item":
                        if event == "start_map":
                            headers.append({})
                            counts.append(0)
                        elif event == "map_key":
                            key = value
                        elif event != "end_map":
                            headers.append(value)  # not an object: reported as such later
                            counts.append(0)
                        continue
                    if key == "events":
                        return None  # events is not an array
                    owner = len(headers) - 1
                else:
                    owner, key = -1, top
                builder = builders.get((owner, key))
                if builder is None:
                    builder = builders[(owner, key)] = ObjectBuilder()
                builder.event(event, value)
    except (
        ijson.JSONError,
        ijson.IncompleteJSONError,
        UnicodeDecodeError,
        ValueError,
        EOFError,
        OSError,
        zlib.error,
    ):
        return None
    if not saw_traces:
        return None
    for (owner, name), builder in builders.items():
        if owner < 0:
            file_header[name] = builder.value
        elif isinstance(headers[owner], dict):
            headers[owner][name] = builder.value
    return file_header, headers, counts


def _streamed_document_traces(path: Path, report: _Report) -> list[_RawTrace] | None:
    """The traces of a ``.qlog`` JSON document, read in two streamed passes (ijson): the
    headers first, then the events one by one, so memory does not grow with the file.
    None where :func:`_document_headers` gives up."""
    found = _document_headers(path)
    if found is None:
        return None
    import itertools

    import ijson

    file_header, headers, counts = found
    stream = _streamed_events(path, ijson)
    out = []
    for index, (header, count) in enumerate(zip(headers, counts)):
        if not isinstance(header, dict):
            report.warn(None, f"trace {index} is not an object; skipped")
            continue
        if "error_description" in header and "events" not in header and not count:
            report.warn(
                None,
                f"trace {index} is a TraceError ({header.get('error_description')!r}); skipped",
            )
            continue
        events = ((-1, i, e) for i, e in enumerate(itertools.islice(stream, count)))
        out.append(_RawTrace(index, file_header, header, events))
    return out


def _streamed_events(path: Path, ijson: ModuleType) -> Iterator[object]:
    """Every event of every trace of a document, in order (second streamed pass)."""
    with open_binary(path) as fh:
        yield from ijson.items(fh, "traces.item.events.item", use_float=True)


def _document_traces(
    path: Path, reader: _Reader, head: bytes, limit: int, report: _Report
) -> list[_RawTrace]:
    """The traces of a ``.qlog`` JSON document (read whole, at most ``limit`` bytes)."""
    parts = [head]
    size = len(head)
    while size <= limit:
        block = reader.read(min(_CHUNK_BYTES, limit + 1 - size))
        if not block:
            break
        parts.append(block)
        size += len(block)
    if size > limit:
        raise InputError(
            path,
            None,
            f"the qlog JSON document is larger than {limit} bytes (max_document_bytes); "
            "JSON documents are read whole: raise the limit or convert the file to JSON-SEQ",
        )
    data = b"".join(parts)
    del parts
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        doc = _loads(data)
    except ValueError as exc:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as bad:
            line = data.count(b"\n", 0, bad.start) + 1
            raise InputError(
                path, line, f"not UTF-8 text (byte {bad.start}): not a qlog JSON file"
            ) from None
        size = len(data)
        del data
        doc = _salvage_truncated(text, size, exc, path, report)
    if not isinstance(doc, dict):
        raise InputError(path, 1, "the JSON document is not an object with a 'traces' array")
    traces = doc.get("traces")
    if not isinstance(traces, list):
        raise InputError(path, None, "the qlog JSON document has no 'traces' array")
    file_header = {k: v for k, v in doc.items() if k != "traces"}
    out = []
    for index, trace in enumerate(traces):
        if not isinstance(trace, dict):
            report.warn(None, f"trace {index} is not an object; skipped")
            continue
        if "error_description" in trace and "events" not in trace:
            report.warn(
                None, f"trace {index} is a TraceError ({trace.get('error_description')!r}); skipped"
            )
            continue
        events = trace.get("events") or []
        if not isinstance(events, list):
            report.warn(None, f"trace {index}: 'events' is not an array; skipped")
            continue
        header = {k: v for k, v in trace.items() if k != "events"}
        out.append(
            _RawTrace(index, file_header, header, ((-1, i, e) for i, e in enumerate(events)))
        )
    return out


def _check_gunzipped_size(path: Path, limit: int) -> None:
    """Refuse a gzip file that decompresses to more than ``limit`` bytes before any of it
    is kept: first by the size its last member's trailer states (RFC 1952 ISIZE, the size
    modulo 2**32, so a stated size above ``limit`` is a real one), then by decompressing in
    :data:`_CHUNK_BYTES` pieces into one reused buffer, stopping at ``limit``. A gzip bomb
    is so refused with about two chunks of memory, not ``limit`` bytes."""
    too_big = InputError(
        path,
        None,
        f"decompresses to more than {limit} bytes (max_document_bytes; "
        "a gzip bomb?): raise the limit, or use JSON-SEQ",
    )
    try:
        with open(path, "rb") as raw:
            if raw.seek(0, os.SEEK_END) >= 18:  # smallest gzip member: 10 header + 8 trailer bytes
                raw.seek(-4, os.SEEK_END)
                if int.from_bytes(raw.read(4), "little") > limit:
                    raise too_big
            raw.seek(0)
            buf = memoryview(bytearray(_CHUNK_BYTES))
            size = 0
            with gzip.GzipFile(fileobj=raw, mode="rb") as fh:
                while n := fh.readinto(buf):
                    size += n
                    if size > limit:
                        raise too_big
    except (OSError, EOFError, zlib.error) as exc:
        raise read_error(path, exc) from None


# Tokens of a JSON text outside strings: a whole string, a string cut off by the end of
# the text, or one structural character.
_JSON_TOKEN = re.compile(
    r'(?P<str>"[^"\\]*(?:\\.[^"\\]*)*")|(?P<cut>"[^"\\]*(?:\\.[^"\\]*)*\\?\Z)|(?P<sym>[\[\]{},])',
    re.DOTALL,
)
_EVENTS_DEPTH = 4  # {file -> traces [ -> {trace -> events [


def _close_truncated(text: str) -> tuple[str, int] | None:
    """Make a cut-off qlog document valid by dropping the partial tail and closing brackets.

    Returns ``(repaired text, cut offset)``, or None when ``text`` is not a prefix of a
    JSON document (brackets already balanced, mismatched or misplaced). The cut goes to
    the last complete element of the innermost open container at most
    ``_EVENTS_DEPTH`` deep (the events array), so a half-written event is dropped whole.

    >>> _close_truncated('{"traces": [{"events": [[1, "a"], [2, "b"], [3, "c')
    ('{"traces": [{"events": [[1, "a"], [2, "b"]]}]}', 42)
    """
    stack: list[list] = []  # [opening char, offset after it, offset of its last comma]
    for match in _JSON_TOKEN.finditer(text):
        if match.lastgroup == "cut":
            break
        if match.lastgroup == "str":
            continue
        char = match.group()
        if char in "[{":
            stack.append([char, match.end(), None])
        elif char == ",":
            if not stack:
                return None
            stack[-1][2] = match.start()
        else:
            if not stack or "[{"["]}".index(char)] != stack[-1][0]:
                return None
            stack.pop()
            if not stack:
                return None  # the document closed: whatever failed is not a cut-off tail
    if not stack:
        return None
    keep = stack[: min(len(stack), _EVENTS_DEPTH)]
    opener, after_open, last_comma = keep[-1]
    cut = after_open if last_comma is None else last_comma
    if opener == "[" and len(keep) == len(stack):
        # keep a last element that is complete but not followed by "," or "]" yet
        start = after_open if last_comma is None else last_comma + 1
        while start < len(text) and text[start] in " \t\r\n":
            start += 1
        try:
            _, end = json.JSONDecoder().raw_decode(text, start)
        except ValueError:
            end = None
        if end is not None and not text[end:].strip():
            cut = end
    closers = "".join("]" if c == "[" else "}" for c, _, _ in reversed(keep))
    return text[:cut] + closers, cut


def _salvage_truncated(
    text: str, size: int, error: ValueError, path: Path, report: _Report
) -> dict:
    """Parse a cut-off qlog document (``size`` bytes) up to its last complete event, or raise."""
    line = getattr(error, "lineno", None)
    reason = f"not valid JSON: {getattr(error, 'msg', error)} (line {line}, column {getattr(error, 'colno', '?')})"
    repaired = _close_truncated(text)
    if repaired is None:
        raise InputError(path, line, reason) from None
    fixed, cut = repaired
    try:
        doc = _loads(fixed)
    except ValueError:
        raise InputError(path, line, reason) from None
    cut_line = text.count("\n", 0, cut) + 1
    report.warn(
        cut_line,
        f"the JSON document ends before it is complete (after byte {size}: a crashed "
        f"or unfinished log?); kept the events up to the last complete one (line {cut_line})",
    )
    return doc


def _iter_records(
    path: Path, reader: _Reader, head: bytes, sep: bytes, limit: int
) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line, record)`` for each non-blank record separated by ``sep``.

    Holds at most one partial record (``limit`` bytes) plus one block in memory; a
    longer record raises :class:`InputError` naming the line where it starts.
    """
    space = _BLANK + _RS
    newline_sep = sep == b"\n"
    pending: list[bytes] = []
    pending_len = 0
    line = 1  # line on which the pending record starts

    def too_long(start_line: int, record_head: bytes) -> InputError:
        lead = len(record_head) - len(record_head.lstrip(space))
        return InputError(
            path,
            start_line + record_head.count(b"\n", 0, lead),
            f"a record is longer than {limit} bytes (max_record_bytes): not a qlog record",
        )

    block = head
    while True:
        pieces = block.split(sep) if block else [b""]
        if len(pieces) > 1 or not block:
            pieces[0] = b"".join(pending) + pieces[0]
            last = pieces.pop() if block else b""
            for part in pieces:
                if len(part) > limit:
                    raise too_long(line, part)
                body = part.strip(space)
                if body:
                    lead = part.find(body[:1])  # leading blank lines move the record's line
                    yield (line + part.count(b"\n", 0, lead) if lead else line), body
                line += part.count(b"\n") + newline_sep
            pending, pending_len = ([last], len(last)) if last else ([], 0)
        else:
            pending.append(block)
            pending_len += len(block)
        if pending_len > limit:
            raise too_long(line, pending[0])
        if not block:
            return
        block = reader.read(_CHUNK_BYTES)


_HEADER_KEYS = frozenset(
    {"qlog_version", "qlog_format", "file_schema", "serialization_format", "trace"}
)


def _is_event(obj: dict) -> bool:
    """True if a record is an event rather than a file header."""
    return not (_HEADER_KEYS & obj.keys()) and ("name" in obj or "time" in obj)


def _sequential_traces(
    path: Path,
    reader: _Reader,
    head: bytes,
    sep: bytes,
    limit: int,
    report: _Report,
    time_only: bool = True,
) -> list[_RawTrace]:
    """The one trace of a JSON-SEQ / NDJSON file; its events are parsed lazily."""
    records = _iter_records(path, reader, head, sep, limit)
    first = next(records, None)
    if first is None:
        raise InputError(path, None, "empty file (no qlog header)")
    first_line, body = first
    try:
        header = _loads(body)
    except ValueError as exc:
        raise InputError(path, first_line, f"the first record is not valid JSON: {exc}") from None
    if not isinstance(header, dict):
        raise InputError(path, first_line, "the first record is not a JSON object")
    leading: list[tuple[int, int, object]] = []
    if _is_event(header):
        report.warn(first_line, "no qlog header record; reading the events without one")
        leading, header = [(first_line, 0, header)], {}
    trace = _object_at(header, "trace")
    file_header = {k: v for k, v in header.items() if k != "trace"}

    skipped = None if _TraceContext.of(trace).delta or not time_only else _Skipped()

    def events() -> Iterator[tuple[int, int, object]]:
        yield from leading
        index = len(leading)
        bad: tuple[int, str, int] | None = None
        for line, record in records:
            if bad is not None:
                report.warn(
                    bad[0], f"record is not valid JSON ({bad[1]}); skipped", kind="invalid record"
                )
                bad = None
            timed = (
                _TIMED_NAME.match(record) if skipped is not None and record[-1:] == b"}" else None
            )
            if (
                timed is not None
                and skipped is not None
                and timed.group(2) not in _CODE_WORDS
                and b'"group_id"' not in record
                and b'"path' not in record
                and b'"time_format"' not in record
            ):
                time = float(timed.group(1))  # an event statemine only counts: its time is enough
                skipped.count += 1
                skipped.first = min(skipped.first, time)
                skipped.last = max(skipped.last, time)
                index += 1
                continue
            try:
                event = _loads(record)
            except ValueError as exc:
                bad = (line, str(exc), len(record))
                continue
            yield line, index, event
            index += 1
        if bad is not None:
            report.warn(
                bad[0],
                f"the last record is cut off or malformed ({bad[2]} bytes, {bad[1]}); "
                "ignored, the rest kept",
            )

    return [_RawTrace(0, file_header, trace, events(), skipped)]


# -- events --------------------------------------------------------------------------------
def _object_at(record: dict, key: str) -> dict:
    """``record[key]`` when it is a JSON object, else an empty one."""
    value = record.get(key)
    return value if isinstance(value, dict) else {}


def _num(value: object) -> float:
    """A JSON number or numeric string as float; NaN for anything else (bools included)."""
    if type(value) is float:
        return value
    if type(value) is int:
        return float(value) if -(2**1000) < value < 2**1000 else math.copysign(math.inf, value)
    if type(value) is str:
        try:
            return float(value)
        except ValueError:
            return math.nan
    return math.nan


def _token(value: object) -> str:
    """A value for the ``fields`` column: no white space (replaced by ``_``)."""
    return re.sub(r"\s+", "_", str(value).strip())


def _field(key: str, value: object) -> str:
    """``key=value`` for the ``fields`` column, or ``""`` when the value is missing or empty."""
    if value is None or isinstance(value, (dict, list)):
        return ""
    token = _token(value)
    return f"{key}={token}" if token else ""


_DELTA_FORMATS = frozenset({"delta", "relative_to_previous_event"})


@dataclass
class _TraceContext:
    """How to read one trace's events: field order, time unit and format, default group."""

    fields: list[str] | None
    per_second: float  # time units per second (1e3 for ms, 1e6 for us)
    offset: float  # configuration.time_offset, in time units
    delta: bool  # the trace's times are deltas to the previous event
    group: str | None  # group_id shared by the trace's events
    conn: str | None  # connection label: ODCID, else group_id

    @classmethod
    def of(cls, header: dict) -> _TraceContext:
        common = _object_at(header, "common_fields")
        config = _object_at(header, "configuration")
        units = str(config.get("time_units") or common.get("time_units") or "ms").lower()
        per_second = {"us": 1e6, "ns": 1e9, "s": 1.0}.get(units, 1e3)
        offset = _num(config.get("time_offset"))
        fields = header.get("event_fields")
        fields = [str(f).lower() for f in fields] if isinstance(fields, list) else None
        group = common.get("group_id")
        conn = next(
            (common[k] for k in ("ODCID", "odcid", "group_id", "dcid") if common.get(k)), None
        )
        return cls(
            fields=fields,
            per_second=per_second,
            offset=0.0 if math.isnan(offset) else offset,
            delta=str(common.get("time_format") or "").lower() in _DELTA_FORMATS,
            group=None if group is None else str(group),
            conn=None if conn is None else str(conn),
        )


def _decode(
    event: object, ctx: _TraceContext
) -> tuple[float, bool, int | None, dict, object, object] | None:
    """``(time, is_delta, code, data, group, path)`` of an object or array event; None if empty.

    ``path`` is the event's ``path_id`` (picoquic's ``event_fields`` column; ``path_id`` or
    ``path`` of an object event), None where it has none.

    ``code`` says which kind of congestion event it is (None: another event, whose
    ``data`` is then not looked at).
    """
    if type(event) is dict:
        if not event:
            return None  # draft-02 allows a closing "{}" after the last event
        name = event.get("name")
        if type(name) is str:
            etype = name[name.rfind(":") + 1 :]
        else:
            etype = event.get("event") or event.get("event_type") or event.get("type") or ""
        code = _CODES.get(str(etype).lower())
        fmt = event.get("time_format")
        delta = ctx.delta if fmt is None else str(fmt).lower() in _DELTA_FORMATS
        data = _data(event.get("data"), None) if code is not None else _NO_DATA
        path = event.get("path_id", event.get("path"))
        return _num(event.get("time")), delta, code, data, event.get("group_id", ctx.group), path
    if type(event) is list:
        fields = ctx.fields or (_NO_TIME_FIELDS if len(event) == 4 else _NO_TIME_FIELDS_TRIGGER)
        record = dict(zip(fields, event))
        if "relative_time" in record:
            raw_time, delta = record["relative_time"], False
        elif "delta_time" in record:
            raw_time, delta = record["delta_time"], True
        else:
            raw_time, delta = record.get("time"), ctx.delta
        etype = record.get("event_type") or record.get("event") or record.get("type") or ""
        code = _CODES.get(str(etype).lower())
        data = _data(record.get("data"), record.get("trigger")) if code is not None else _NO_DATA
        return (
            _num(raw_time),
            delta,
            code,
            data,
            record.get("group_id", ctx.group),
            record.get("path_id"),
        )
    return None


_NO_DATA: dict = {}


def _data(data: object, trigger: object) -> dict:
    data = data if isinstance(data, dict) else {}
    if trigger is not None and "trigger" not in data:
        data = {**data, "trigger": trigger}
    return data


_CODES: dict[str, int] = {
    **{t: _STATE for t in _STATE_TYPES},
    **{t: _METRICS for t in _METRIC_TYPES},
    _MVFST_METRIC: _MVFST,
    _MVFST_APP_LIMITED: _APP_LIMITED,
    **{t: _LOSS for t in _LOSS_TYPES},
    **{t: _SPURIOUS for t in _SPURIOUS_TYPES},
    **{t: _TIMER for t in _TIMER_TYPES},
    _CHROMIUM_APP_LIMITED: _CHROMIUM_AL,
}
#: The event types statemine reads, as bytes in lower and upper case (the sequential fast path).
_CODE_WORDS = frozenset(w.encode() for t in _CODES for w in (t, t.upper()))
# packet events: read only to derive states (RFC 9002 recovery periods need sends and ACKs)
_CODES.update({"packet_sent": _SENT, "packet_received": _RECEIVED})
_OTHER_SPACES = frozenset(
    {"initial", "handshake", "retry", "version_negotiation", "stateless_reset"}
)


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
    sent: array = field(
        default_factory=lambda: array("d")
    )  # application-space packets sent: time, number
    acks: array = field(
        default_factory=lambda: array("d")
    )  # ACKs received: time, largest acknowledged
    end: float = -math.inf
    start: float = math.inf  # time of the connection's first event of any kind (seconds)
    path: str | None = None  # path_id, when the trace has more than one path
    n_events: int = (
        0  # the file's events of this connection and path, of any kind (also the seq counter)
    )
    last: float = -math.inf  # time of the latest event read
    unordered: bool = False  # an event came earlier than one logged before it

    def metric_rows(self) -> np.ndarray:
        """The metrics updates as a (n, _METRIC_STRIDE) array, in log order."""
        return (
            np.frombuffer(self.metrics, dtype=float).reshape(-1, _METRIC_STRIDE)
            if self.metrics
            else np.empty((0, _METRIC_STRIDE))
        )


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
    raw: _RawTrace, forced: str | None, report: _Report, packets: bool = False
) -> list[_Connection]:
    """Split a trace's events by connection (group_id) and path (path_id), keeping the
    congestion-related ones."""
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
    base = {
        "role": role.lower() if isinstance(role, str) else None,
        "implementation": implementation,
        "qlog_version": None if version is None else str(version),
    }
    connections: dict[tuple[str | None, str | None], _Connection] = {}
    clock = 0.0
    for line, index, event in raw.events:
        decoded = _decode(event, ctx)
        if decoded is None:
            if event != {}:
                report.warn(
                    line,
                    f"trace {raw.index} event {index} is neither an object nor an array; skipped",
                    kind="bad event",
                )
            continue
        time, delta, code, data, group, path = decoded
        if delta:
            time = clock + time
        seconds = (time + ctx.offset) / ctx.per_second
        if not math.isfinite(seconds):
            report.warn(
                line,
                f"trace {raw.index} event {index} has no finite numeric time; skipped",
                kind="bad time",
            )
            continue
        if delta:
            clock = time
        group = None if group is None else str(group)
        if path is not None:
            path = _path_label(path, line, raw.index, report)
        conn = connections.get((group, path))
        if conn is None:
            labels = {
                **base,
                "conn": group if group is not None and group != ctx.group else ctx.conn,
                "path": path,
            }
            conn = connections[(group, path)] = _Connection(
                raw.index, group, labels, ctx.per_second, path=path
            )
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
        if code in (_METRICS, _MVFST):
            conn.metrics.extend(
                (
                    seconds,
                    conn.n_events,
                    line,
                    *_metrics(data, ctx.per_second, line, f"trace {raw.index}", report),
                )
            )
        if code is not None and code != _METRICS:
            if code == _MVFST:
                data = {
                    "state": data.get("state"),
                    "congestion_event": data.get("congestion_event"),
                }
            conn.items.append((seconds, code, data, line, index, conn.n_events))
    if raw.skipped is not None and raw.skipped.count:
        conn = connections.get((ctx.group, None))
        if conn is None:
            labels = {**base, "conn": ctx.conn, "path": None}
            conn = connections[(ctx.group, None)] = _Connection(
                raw.index, ctx.group, labels, ctx.per_second
            )
        conn.n_events += raw.skipped.count
        conn.start = min(conn.start, (raw.skipped.first + ctx.offset) / ctx.per_second)
        conn.end = max(conn.end, (raw.skipped.last + ctx.offset) / ctx.per_second)
    if not connections:
        report.warn(None, f"trace {raw.index} has no events; left out")
    if len({group for group, _ in connections}) == 1:
        for conn in connections.values():
            conn.group = None
    if len({path for _, path in connections}) == 1:
        for conn in connections.values():
            conn.path = None  # one path: no suffix in the trace id (the label stays)
    return list(connections.values())


def _record_packet(conn: _Connection, code: int, data: dict, seconds: float) -> None:
    """Keep an application-space packet sent (time, number) or an ACK received (time,
    largest acknowledged number) for the RFC 9002 recovery periods."""
    header = _object_at(data, "header")
    space = str(header.get("packet_type", data.get("packet_type", ""))).lower()
    if space in _OTHER_SPACES:
        return
    if code == _SENT:
        number = _num(header.get("packet_number", data.get("packet_number")))
        if number == number:
            conn.sent.extend((seconds, number))
        return
    largest = math.nan
    for frame in data.get("frames") or ():
        if isinstance(frame, dict) and str(frame.get("frame_type", "")).lower() == "ack":
            for ack_range in frame.get("acked_ranges") or ():
                if isinstance(ack_range, list) and ack_range:
                    top = _num(ack_range[-1])
                    largest = top if largest != largest or top > largest else largest
    if largest == largest:
        conn.acks.extend((seconds, largest))


def _app_limited(value: object) -> bool | None:
    """mvfst's app_limited value ("app limited"/"app unlimited", or a bool/0/1) as a bool."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("app limited", "limited", "true", "yes", "1"):
            return True
        if word in ("app unlimited", "unlimited", "false", "no", "0"):
            return False
    return None


def _connection_rows(conn: _Connection, trace_id: str, report: _Report) -> pd.DataFrame:
    """Rows (state, event and internal 'metrics' rows) of one connection, time-ordered
    (log order among equal times).

    Besides the logged states: the first state event's ``old`` is the state from the
    connection's first event on (``start=old`` in ``fields``); a fired PTO timer enters
    ``ProbeTimeout`` until the next metrics update or state event (quic-go logs metrics on
    each ACK, RFC 9002 section 6.2: a PTO lasts until an acknowledgement), then the
    controller's state again (``after=pto``).
    """
    items = conn.items
    metrics = conn.metric_rows()
    if conn.unordered:
        report.warn(None, f"trace {trace_id}: events are not in time order; sorted by time")
        metrics = metrics[
            np.lexsort((metrics[:, 1], metrics[:, 0]))
        ]  # else already in (time, seq) order
    m_time, m_seq, m_line = metrics[:, 0], metrics[:, 1], metrics[:, 2]

    def next_metrics(time: float, seq: float) -> int:
        """Index (in time order) of the first metrics update after (time, seq); len if none."""
        k = int(np.searchsorted(m_time, time, side="left"))
        while k < len(m_time) and m_time[k] == time and m_seq[k] <= seq:
            k += 1
        return k

    rows: dict[str, list] = {
        k: [] for k in ("time", "seq", "kind", "state", "line", "fields", "mark")
    }

    def add(time, seq, kind, name, line, fields, mark=False):
        rows["mark"].append(mark)  # a state the file marks outside congestion_state_updated
        rows["time"].append(time)
        rows["seq"].append(seq)
        rows["kind"].append(kind)
        rows["state"].append(name)
        rows["line"].append(line)
        rows["fields"].append(" ".join(f for f in fields if f))

    controller: str | None = None  # the controller's own last state (raw name)
    app_limited = False
    pto_end: int | None = None  # metrics update (time-order index) that ends a fired PTO
    for time, code, data, line, index, seq in sorted(items, key=lambda it: (it[0], it[5])):
        ev = f"ev={index}"
        if pto_end is not None:
            if pto_end < len(m_time) and (m_time[pto_end], m_seq[pto_end]) <= (time, seq):
                if controller is not None:
                    add(
                        m_time[pto_end],
                        m_seq[pto_end],
                        "state",
                        controller,
                        int(m_line[pto_end]),
                        (f"raw={_token(controller)}", "after=pto"),
                        mark=True,
                    )
                pto_end = None
            elif code == _STATE:
                pto_end = None  # the controller's own state event ends it
        if code == _STATE:
            new = data.get("new", data.get("state"))
            if new is None or isinstance(new, (dict, list)) or str(new) == "":
                report.warn(
                    line,
                    f"trace {trace_id} event {index}: congestion_state_updated without 'new'; skipped",
                    kind="no new",
                )
                continue
            old = data.get("old")
            if old is not None and not isinstance(old, (dict, list)) and str(old) != "":
                if (
                    controller is None
                    and conn.start < time
                    and str(old) != str(new)
                    and "state" not in rows["kind"]
                ):
                    add(
                        conn.start,
                        -1,
                        "state",
                        str(old),
                        line,
                        (f"raw={_token(old)}", "start=old", ev),
                    )
                elif controller is not None and str(old) != controller:
                    report.warn(
                        line,
                        f"trace {trace_id} event {index}: 'old' is {str(old)!r} but the previous "
                        f"state event entered {controller!r}; kept the logged 'new'",
                        kind="old chain",
                    )
            fields: tuple[str, ...] = (
                f"raw={_token(new)}",
                _field("old", old),
                _field("trigger", data.get("trigger")),
                _field("cc_param", data.get("cc_param")),
                ev,
            )
            add(time, seq, "state", str(new), line, fields)
            controller, app_limited = str(new), False
        elif code == _MVFST:
            state = data.get("state")
            if isinstance(state, str) and state and state != controller:
                fields = (
                    f"raw={_token(state)}",
                    _field("trigger", data.get("congestion_event")),
                    ev,
                )
                add(time, seq, "state", state, line, fields)
                controller, app_limited = state, False
        elif code in (_APP_LIMITED, _CHROMIUM_AL):
            limited = True if code == _CHROMIUM_AL else _app_limited(data.get("app_limited"))
            if limited is None:
                report.warn(
                    line,
                    f"trace {trace_id} event {index}: app_limited value {data.get('app_limited')!r} "
                    "not understood; skipped",
                    kind="app_limited value",
                )
            elif limited and not app_limited:
                add(time, seq, "state", "app_limited", line, ("raw=app_limited", ev), mark=True)
                app_limited = True
            elif not limited and app_limited:
                app_limited = False
                if controller is None:
                    report.warn(
                        line,
                        f"trace {trace_id}: app-limited period ends, but the state before it is unknown",
                        kind="app_limited end",
                    )
                else:
                    add(
                        time,
                        seq,
                        "state",
                        controller,
                        line,
                        (f"raw={_token(controller)}", "after=app_limited", ev),
                        mark=True,
                    )
        elif code == _LOSS:
            trigger = data.get("trigger")
            rule = None if trigger is None else _LOSS_RULES.get(str(trigger).lower(), trigger)
            add(
                time,
                seq,
                "event",
                "LossDetected",
                line,
                (_field("rule", rule), _field("pn", _packet_number(data)), ev),
            )
        elif code == _SPURIOUS:
            add(time, seq, "event", "SpuriousLoss", line, (_field("pn", _packet_number(data)), ev))
        elif code == _TIMER and _pto_fired(data):
            add(time, seq, "state", "ProbeTimeout", line, ("raw=pto_expired", ev), mark=True)
            pto_end = next_metrics(time, seq)
    if pto_end is not None and pto_end < len(m_time) and controller is not None:
        add(
            m_time[pto_end],
            m_seq[pto_end],
            "state",
            controller,
            int(m_line[pto_end]),
            (f"raw={_token(controller)}", "after=pto"),
            mark=True,
        )
    frame = pd.DataFrame(rows)
    frame = frame.iloc[np.lexsort((frame["seq"].to_numpy(float), frame["time"].to_numpy(float)))]
    # each row carries the latest value of each metric logged at or before it (log order among
    # equal times; an mvfst event's own metrics come before its state)
    seen = _metrics_seen(
        m_time, m_seq - 0.5, frame["time"].to_numpy(float), frame["seq"].to_numpy(float)
    )
    frame = frame.drop(columns="seq").reset_index(drop=True)
    for k, column in enumerate(_METRIC_COLUMNS):  # one column at a time: memory stays small
        values = np.full(len(frame), np.nan)
        if len(metrics):
            values[seen > 0] = _derive.ffill(metrics[:, 3 + k])[seen[seen > 0] - 1]
        frame[column] = values
    frame["line"] = frame["line"].astype("int64")
    frame["mark"] = frame["mark"].astype(bool)
    return frame


def _metrics_seen(
    m_time: np.ndarray, m_seq: np.ndarray, time: np.ndarray, seq: np.ndarray
) -> np.ndarray:
    """For each row (time, seq), how many metrics updates (sorted by (m_time, m_seq)) come
    at or before it."""
    lo = np.searchsorted(m_time, time, side="left")
    hi = np.searchsorted(m_time, time, side="right")
    out = hi.copy()
    for i in np.flatnonzero(hi > lo):  # ties in time: order by seq
        out[i] = lo[i] + np.searchsorted(m_seq[lo[i] : hi[i]], seq[i], side="right")
    return out


def _metrics_frame(conn: _Connection) -> pd.DataFrame:
    """The connection's metrics updates, time-ordered (log order among equal times):
    ``time``, ``line`` and the metric columns."""
    metrics = conn.metric_rows()
    if conn.unordered:
        metrics = metrics[np.lexsort((metrics[:, 1], metrics[:, 0]))]
    columns = [0, *range(3, _METRIC_STRIDE)]
    frame = pd.DataFrame(
        metrics[:, columns], columns=["time", *_METRIC_COLUMNS], copy=False
    )  # one copy
    frame.insert(1, "line", metrics[:, 2].astype("int64"))
    return frame


def _packet_number(data: dict) -> object:
    """The packet number of a packet_lost / spurious_loss event (in its header or at the top)."""
    header = _object_at(data, "header")
    return header.get("packet_number", data.get("packet_number"))


def _pto_fired(data: dict) -> bool:
    """True for a loss timer event that says a PTO timer expired.

    draft-01 and later: ``loss_timer_updated {timer_type: "pto", event_type: "expired"}``;
    draft-00 ``LOSS_ALARM_FIRED`` / ``loss_timer_expired`` name the timer in ``timer_type``
    (or ``type``) without an ``event_type``.
    """
    timer = str(data.get("timer_type", data.get("type", ""))).lower()
    action = str(data.get("event_type", "expired")).lower()
    return timer == "pto" and action in ("expired", "fired")


def _metrics(
    data: dict, per_second: float, line: int, where: str, report: _Report
) -> tuple[float, ...]:
    """The metric columns of a metrics event (NaN where not logged); non-numeric values warned about."""
    values = []
    for keys in _METRIC_KEYS:
        for key in keys:
            if key in data:
                raw = data[key]
                value = raw if type(raw) is float else _num(raw)
                if value != value and raw is not None:
                    report.warn(
                        line,
                        f"{where}: metric {key} = {raw!r} is not a number; read as not logged",
                        kind="metric not numeric",
                    )
                break
        else:
            value = math.nan
        values.append(value)
    cwnd, inflight, ssthresh, srtt, pacing, bandwidth = values
    if ssthresh >= _NO_THRESHOLD:
        ssthresh = math.inf
    return cwnd, inflight, ssthresh, srtt / per_second, pacing, bandwidth


def _canonical_states(
    frame: pd.DataFrame,
    implementation: str | None,
    overrides: Mapping[str, str] | None,
    trace_id: str,
    report: _Report,
) -> pd.DataFrame:
    """Rename raw state names to statemine's (the raw name stays in ``fields`` as ``raw=``)."""
    is_state = frame["kind"] == "state"
    raw = frame.loc[is_state, "state"]
    mapping = {}
    for name in pd.unique(raw):
        canonical, known = resolve_state(name, implementation, overrides)
        mapping[name] = canonical
        if not known:
            table = (
                f"the {implementation} table"
                if implementation_key(implementation)
                else "the common names"
            )
            report.warn(
                None,
                f"trace {trace_id}: state name {name!r} is in neither {table} nor the overrides; "
                f"kept as is ({int((raw == name).sum())} times)",
            )
    frame.loc[is_state, "state"] = raw.map(mapping)
    return frame


def _recovery_periods(conn: _Connection, metrics: pd.DataFrame) -> list[tuple[float, float, bool]]:
    """RFC 9002 recovery periods of a connection with packet events. Congestion events are
    the losses declared (with the send time of the lost packet, from the packets sent), or,
    in a log without packet_lost events, the window reductions; a spurious loss ends a
    period (quic-go restores the window)."""
    sent = np.frombuffer(conn.sent, dtype=float).reshape(-1, 2)
    acks = np.frombuffer(conn.acks, dtype=float).reshape(-1, 2)
    sent = sent[np.argsort(sent[:, 0], kind="stable")]
    acks = acks[np.argsort(acks[:, 0], kind="stable")]
    sent_at = dict(
        zip(sent[:, 1].tolist(), sent[:, 0].tolist())
    )  # packet number -> (last) send time
    losses = [
        (it[0], sent_at.get(pn, math.nan), pn)
        for it in conn.items
        if it[1] == _LOSS
        for pn in (_num(_packet_number(it[2])),)
    ]
    if not losses:
        cwnd = metrics["cwnd"].to_numpy(float)
        cut = np.r_[False, np.diff(cwnd) < 0] if cwnd.size else np.zeros(0, bool)
        losses = [(t, math.nan, math.nan) for t in metrics["time"].to_numpy(float)[cut]]
    undo = np.array(
        [(it[0], _num(_packet_number(it[2]))) for it in conn.items if it[1] == _SPURIOUS], float
    )
    undo = undo.reshape(-1, 2)
    loss = np.array(losses, float).reshape(-1, 3)
    return _derive.recovery_periods(
        loss[:, 0],
        loss[:, 1],
        sent[:, 0],
        sent[:, 1],
        acks[:, 0],
        acks[:, 1],
        loss[:, 2],
        undo[:, 0],
        undo[:, 1],
    )


def _derived_rows(
    metrics: pd.DataFrame, periods: list[tuple[float, float, bool]] | None = None
) -> pd.DataFrame:
    """State rows derived from a connection's metrics updates (see statemine.parse.derive):
    with RFC 9002 recovery periods where packet events gave them, else from cwnd alone."""
    if periods is None:
        derived = _derive.derive_states(metrics)
    else:
        derived = _derive.derive_states_rfc9002(metrics, periods)
        derived["line"] = (
            derived["line"].fillna(-1).astype("int64")
        )  # a period's end is no metrics line
    inferred = derived.pop("ssthresh_inferred")
    derived["fields"] = [
        ("derived=1" if periods is None else "derived=rfc9002")
        + ("" if math.isnan(v) else f" ssthresh_inferred={v:g}")
        for v in inferred.to_numpy()
    ]
    derived["kind"] = "state"
    derived["state"] = derived["state"] + DERIVED_MARK
    return derived


def _connection_events(
    conn: _Connection,
    trace_id: str,
    overrides: Mapping[str, str] | None,
    derive: bool,
    report: _Report,
) -> tuple[pd.DataFrame | None, bool]:
    """The events frame of one connection and whether its states are derived; None if it has none."""
    if not conn.items and not conn.metrics:
        report.warn(None, f"trace {trace_id}: no congestion events at all; left out")
        return None, False
    frame = _connection_rows(conn, trace_id, report)
    has_states = ((frame["kind"] == "state") & ~frame["mark"]).any()
    derived = False
    if has_states:
        if (
            conn.labels["implementation"] is None
        ):  # no name in titles: the state vocabulary may tell
            conn.labels["implementation"] = detect_by_names(
                pd.unique(frame.loc[frame["kind"] == "state", "state"])
            )
        if implementation_key(conn.labels["implementation"]) == "picoquic":
            conn.labels["implementation"] = _picoquic_table(conn, trace_id, report)
        frame = _canonical_states(frame, conn.labels["implementation"], overrides, trace_id, report)
    elif derive:
        metrics = _metrics_frame(conn)
        metrics[list(_METRIC_COLUMNS)] = metrics[
            list(_METRIC_COLUMNS)
        ].ffill()  # latest known values
        periods = _recovery_periods(conn, metrics) if len(conn.sent) and len(conn.acks) else None
        states = _derived_rows(metrics, periods)
        if states.empty:
            report.warn(
                None,
                f"trace {trace_id}: no state events and no cwnd to derive states from; left out",
            )
            return None, False
        report.warn(
            None,
            f"trace {trace_id}: no congestion_state_updated events; states derived from cwnd/ssthresh "
            "(marked derived)",
        )
        # states the file marks without congestion_state_updated (app limited, a fired PTO)
        # stay as event rows: the derived states are the trace's states
        marks = frame.loc[(frame["kind"] == "state") & frame["mark"]]
        marks = marks.assign(kind="event")
        marks["state"] = marks["state"].map(lambda name: resolve_state(name, None, overrides)[0])
        frame = pd.concat([states, frame.loc[frame["kind"] == "event"], marks], ignore_index=True)
        frame = frame.sort_values("time", kind="stable").reset_index(drop=True)
        derived = True
    else:
        n_metrics = len(conn.metric_rows())
        report.warn(
            None,
            f"trace {trace_id}: no congestion_state_updated events (only {n_metrics} metrics updates); "
            "left out. Pass derive_states=True to derive states from cwnd/ssthresh",
        )
        return None, False
    return frame.drop(columns="mark"), derived


def _picoquic_table(conn: _Connection, trace_id: str, report: _Report) -> str:
    """The picoquic controller table for a connection (statenames.picoquic_controller), with
    a warning that says which one was chosen and why (and how to choose another)."""
    metrics = conn.metric_rows()
    changes = []
    for time, code, data, _, _, seq in conn.items:
        if code != _STATE:
            continue
        after = metrics[(metrics[:, 0] == time) & (metrics[:, 1] > seq) & ~np.isnan(metrics[:, 3])]
        changes.append(
            (data.get("new"), _num(data.get("cc_param")), after[0, 3] if len(after) else math.nan)
        )
    table, reason, ambiguous = picoquic_controller(changes)
    others = ", ".join(t for t in PICOQUIC_TABLES if t != table)
    if ambiguous:
        report.warn(
            None,
            f"trace {trace_id}: picoquic's state numbers depend on its congestion controller, "
            f"which the file does not name; the meaning is ambiguous ({reason}): read as {table}. "
            f"Choose with --implementation ({table}, {others})",
        )
    else:
        report.warn(
            None,
            f"trace {trace_id}: picoquic's controller read as {table} ({reason}); "
            f"another can be forced with --implementation ({others})",
        )
    return table


def _why_no_states(connections: list[_Connection], derive: bool) -> str:
    """The reason a file gave no state row at all, with what to do about it."""
    if not connections:
        return "no congestion state in any trace: the file has no qlog events"
    n_metrics = sum(len(conn.metric_rows()) for conn in connections)
    if n_metrics and not derive:
        return (
            f"no congestion state in any trace: no congestion_state_updated events, only {n_metrics} "
            "metrics updates. Pass derive_states=True (statemine --derive-states) to derive states "
            "from cwnd/ssthresh (marked derived)"
        )
    return (
        "no congestion state in any trace: no congestion_state_updated / CC_STATE_UPDATE / mvfst "
        "congestion_metric_update events" + (" and no cwnd to derive states from" if derive else "")
    )


def _build(
    path: Path,
    source: str,
    connections: list[_Connection],
    overrides: Mapping[str, str] | None,
    derive: bool,
    report: _Report,
) -> TraceSet:
    """Assemble the TraceSet of a file from its connections."""
    frames = []
    tables = []
    rows = []
    for conn in connections:
        trace_id = (
            f"{source}#{conn.trace_index}"
            + ("" if conn.group is None else f"/{conn.group}")
            + ("" if conn.path is None else f"/path{conn.path}")
        )
        events, derived = _connection_events(conn, trace_id, overrides, derive, report)
        if events is None:
            continue
        events.insert(0, "trace", trace_id)
        frames.append(events)
        if conn.metrics:
            table = _metrics_frame(conn)
            conn.metrics = array("d")  # the table holds them now
            del table["line"]
            codes = np.zeros(len(table), np.int8)
            trace = pd.Categorical.from_codes(codes, categories=pd.Index([trace_id]))
            # pandas-stubs' insert() takes no ExtensionArray; pandas does
            table.insert(0, "trace", trace)  # type: ignore[arg-type]
            tables.append(table)
        rows.append(
            {
                "trace": trace_id,
                "source": str(path),
                "end": conn.end,
                **conn.labels,
                "file_events": conn.n_events,
                "derived": derived,
            }
        )
    if not frames:
        raise NoCongestionData(path, None, _why_no_states(connections, derive))
    warnings = report.finish()
    events = pd.concat(frames, ignore_index=True)
    traces = pd.DataFrame(rows)
    traces["derived"] = traces["derived"].astype(bool)
    metrics = None
    if tables:
        metrics = tables[0] if len(tables) == 1 else pd.concat(tables, ignore_index=True)
        metrics["trace"] = metrics["trace"].astype("category")
    return TraceSet.from_events(events, traces, {"warnings": json.dumps(warnings)}, metrics)
