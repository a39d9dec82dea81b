"""qlog bytes to raw traces: layouts, gzip, JSON-SEQ/NDJSON records, whole and streamed documents, repair of cut-off documents."""

from __future__ import annotations

import contextlib
import gc
import gzip
import io
import json
import math
import os
import re
import stat
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import IO

from orjson import loads as _loads  # parses qlog records 5-6 times faster than json

from ...errors import InputError
from ..lines import read_error
from ._runscan import metrics_record, run_count, scan_run
from .common import _object_at, _Report
from .vocabulary import _CODE_WORDS, _METRIC_KEY_WORDS, _METRIC_TYPE_WORDS, _TraceContext

_CHUNK_BYTES = 1 << 20
#: ``.qlog`` documents larger than this (bytes on disk) are streamed (two passes, ijson)
#: instead of parsed whole (about 10 bytes of memory per byte of JSON).
_STREAM_MIN_BYTES = 16 << 20
_HEAD_BYTES = 1 << 16
_GZIP_MAGIC = b"\x1f\x8b"  # gzip member header (RFC 1952)
_RS = b"\x1e"
_BLANK = b"\xef\xbb\xbf \t\r\n"


class _Paused:
    """The collector's state before :func:`_gc_paused`; :meth:`resumed` restores it for a
    while (a caller that builds frames between parsed pieces)."""

    def __init__(self, was_enabled: bool) -> None:
        self.was_enabled = was_enabled

    @contextlib.contextmanager
    def resumed(self) -> Iterator[None]:
        if self.was_enabled:
            gc.enable()
        try:
            yield
        finally:
            gc.disable()


@contextlib.contextmanager
def _gc_paused() -> Iterator[_Paused]:
    """Pause the cyclic garbage collector while millions of acyclic JSON objects are made.

    Parsing allocates containers only; without this, CPython's collector rescans them all
    again and again (about 40 % of the time of a large .qlog). Restores the previous state.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield _Paused(was_enabled)
    finally:
        if was_enabled:
            gc.enable()


class _Reader:
    """Reads a (possibly gzip) stream in blocks of at most ``n`` bytes (gzip decompressed
    piece by piece, never more than asked for). A gzip stream that is cut off or damaged
    is an :class:`InputError` (:func:`statemine.parse.lines.read_error`), as under every
    ``--format``."""

    def __init__(self, fh: io.BufferedReader | io.BytesIO | gzip.GzipFile, path: Path) -> None:
        self.fh, self.path = fh, path
        self.ended = False
        # a plain file's bytes left, as a hint: a block is asked for no bigger than them
        # (read1 allocates what it is asked for: 1 MiB for a 40 KB file costs ~0.2 ms)
        self.left: int | None = None
        if isinstance(fh, io.BytesIO):  # a file's bytes the caller read whole
            self.left = len(fh.getvalue()) - fh.tell()  # getvalue: no copy
        elif not isinstance(fh, gzip.GzipFile):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                self.left = os.fstat(fh.fileno()).st_size - fh.tell()

    @property
    def gzip(self) -> bool:
        """Whether the stream is gzip-compressed."""
        return isinstance(self.fh, gzip.GzipFile)

    def read(self, n: int) -> bytes:
        """Up to ``n`` bytes (fewer only at the end of the stream)."""
        parts, size = [], 0
        while size < n and not self.ended:
            want = n - size
            if self.left is not None:  # one byte more than expected: the end is seen
                want = min(want, max(self.left, 0) + 1)
            try:
                block = self.fh.read1(want)
            except (OSError, EOFError, zlib.error) as exc:
                raise read_error(self.path, exc) from None
            if self.left is not None:
                self.left -= len(block)
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


class _MetricsRun:
    """Plain metrics records read in C (``_runscan.metrics_record``), one after another
    among the records parsed: each one's line, event index and ``(time, the six metric
    columns as logged, pto_count)``; ``seconds`` and ``start`` are for the reader of
    the run (:func:`.connections._extract`: the times in seconds, the first record not
    yet taken)."""

    __slots__ = ("indices", "lines", "seconds", "start", "values")

    def __init__(self) -> None:
        self.lines: list[int] = []
        self.indices: list[int] = []
        self.values: list[tuple[float, ...]] = []
        self.seconds: list[float] | None = None
        self.start = 0


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
# _TIMED_NAME for the two spellings writers use, compact (quic-go, quiche) and with a blank
# after ':' and ',' (Python's json): about half its cost a record, and where one matches,
# _TIMED_NAME matches alike (the same groups); a record of another spelling is asked of
# _TIMED_NAME itself
_TIMED_SHAPES = {
    b'{"time":': re.compile(
        rb'\{"time":(-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?),"name":"(?:[^":]*:)?([^"]*)"'
    ),
    b'{"time": ': re.compile(
        rb'\{"time": (-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?), "name": "(?:[^":]*:)?([^"]*)"'
    ),
}


@contextlib.contextmanager
def _plain_document(path: Path, reader: _Reader, head: bytes, limit: int) -> Iterator[Path]:
    """The ``.qlog`` document as a plain file: ``path`` itself (refused over ``limit``
    bytes), or for gzip input an
    anonymous temporary copy, decompressed once (``reader``, past ``head``) in
    :data:`_CHUNK_BYTES` pieces and refused once it passes ``limit`` bytes (before that,
    when the trailer already states more: RFC 1952 ISIZE, the size modulo 2**32, so a
    stated size above ``limit`` is a real one). Memory: one piece; the copy is removed on
    leaving."""
    if not reader.gzip:
        if _file_size(path) > limit:
            raise InputError(
                path,
                None,
                f"the qlog JSON document is larger than {limit} bytes (max_document_bytes): "
                "raise the limit or convert the file to JSON-SEQ",
            )
        yield path
        return
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
    except OSError as exc:
        raise read_error(path, exc) from None
    with tempfile.TemporaryDirectory(prefix="statemine-qlog-") as tmp:
        plain = Path(tmp) / "document.json"
        with open(plain, "wb") as out:
            out.write(head)
            size = len(head)
            while block := reader.read(_CHUNK_BYTES):
                size += len(block)
                if size > limit:
                    raise too_big
                out.write(block)
        yield plain


def _file_size(path: Path) -> int:
    """Size of a regular file in bytes (0 for anything else: read whole, within limits)."""
    try:
        info = path.stat()
    except OSError:
        return 0
    return info.st_size if stat.S_ISREG(info.st_mode) else 0


class _Counted:
    """A binary file as ijson reads it, counting the bytes handed out (``pos``; ``last``:
    where the latest read began); from byte ``slow_from`` on, one byte per read, so a
    parse error is raised at the byte that causes it."""

    def __init__(self, fh: IO[bytes], slow_from: int | None = None) -> None:
        self.fh, self.slow_from = fh, slow_from
        self.pos = self.last = 0

    def read(self, n: int = -1) -> bytes:
        if n == 0:  # ijson asks for nothing to learn whether the file gives bytes
            return self.fh.read(0)
        if self.slow_from is not None:
            n = 1 if self.pos >= self.slow_from else min(n, self.slow_from - self.pos)
        block = self.fh.read(n)
        self.last, self.pos = self.pos, self.pos + len(block)
        return block


_PARSE_BUF = 1 << 16  # bytes per ijson read


class _Cut(Exception):
    """The streamed document ends before it is complete (a crashed or unfinished log)."""


def _open_document(data: Path) -> IO[bytes]:
    """The document file opened for ijson, past a UTF-8 byte order mark."""
    fh = open(data, "rb")  # noqa: SIM115 - closed by the caller's with
    if fh.read(3) != b"\xef\xbb\xbf":
        fh.seek(0)
    return fh


def _syntax_error(
    data: Path, path: Path, start: int, error: Exception, ijson: ModuleType
) -> InputError:
    """The one-line error for a document that is not valid JSON: the line of the byte
    where parsing fails, found by parsing again with one-byte reads from ``start`` (where
    the failing read began) on; memory stays one read."""
    from ijson.common import JSONError

    offset = start
    with _open_document(data) as raw:
        fh = _Counted(raw, slow_from=start)
        try:
            for _ in ijson.basic_parse(fh, buf_size=_PARSE_BUF):
                pass
        except (JSONError, ValueError):
            offset = max(fh.pos - 1, 0)
    line = _line_at(data, offset)
    reason = (str(error).strip().splitlines() or ["syntax error"])[0]
    return InputError(path, line, f"not valid JSON (byte {offset}): {reason}")


def _line_at(data: Path, offset: int) -> int:
    """1-based line of byte ``offset`` of a file (counted in pieces)."""
    line, pos = 1, 0
    with _open_document(data) as fh:
        while pos < offset and (block := fh.read(min(_CHUNK_BYTES, offset - pos))):
            line += block.count(b"\n")
            pos += len(block)
    return line


class _IntegerOverflow(Exception):
    """ijson's C parser cannot read an integer of the document (beyond 64 bits: quiche and
    neqo log u64::MAX as the first ssthresh)."""


def _document_headers(
    data: Path, path: Path, ijson: ModuleType
) -> tuple[dict, list[dict | None], list[int], int | None]:
    """First pass over a ``.qlog`` document ``data`` (streamed by ijson, never held whole;
    ``path`` names it in errors): the file header, each trace's header (everything but
    ``events``; ``None`` for a trace whose ``events`` is not an array), its number of
    events, and the byte where the document is cut off (None if it is complete).

    Raises :class:`InputError` (file and line) for invalid JSON and a document that is
    not an object with a ``traces`` array, :class:`_IntegerOverflow` where ``ijson`` (a
    backend) cannot read a number.
    """
    from ijson.common import IncompleteJSONError, JSONError, ObjectBuilder

    file_header: dict = {}
    headers: list[dict | None] = []
    counts: list[int] = []
    builders: dict[tuple[int, str | None], ObjectBuilder] = {}
    top = key = None
    saw_traces = False
    cut = None
    not_object = InputError(path, 1, "the JSON document is not an object with a 'traces' array")
    no_traces = InputError(path, None, "the qlog JSON document has no 'traces' array")
    with _open_document(data) as raw:
        fh = _Counted(raw)
        try:
            for prefix, event, value in ijson.parse(fh, use_float=True, buf_size=_PARSE_BUF):
                if prefix.startswith("traces.item.events"):
                    if prefix == "traces.item.events.item" and (
                        event == "start_map" or event == "start_array"
                    ):
                        counts[-1] += 1
                    elif prefix == "traces.item.events" and event not in (
                        "start_array",
                        "end_array",
                    ):
                        headers[-1] = None  # events is not an array
                    continue
                if prefix == "":
                    if event == "map_key":
                        top = value
                        saw_traces = saw_traces or value == "traces"
                    elif event != "start_map" and event != "end_map":
                        raise not_object
                    continue
                if top == "traces":
                    if prefix == "traces":
                        if event == "start_array" or event == "end_array":
                            continue
                        raise no_traces
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
                    owner = len(headers) - 1
                else:
                    owner, key = -1, top
                builder = builders.get((owner, key))
                if builder is None:
                    builder = builders[(owner, key)] = ObjectBuilder()
                builder.event(event, value)
        except IncompleteJSONError as exc:
            if "integer overflow" in str(exc):
                raise _IntegerOverflow from None
            if "premature EOF" not in str(exc) and "Incomplete JSON" not in str(exc):
                raise _syntax_error(data, path, fh.last, exc, ijson) from None
            cut = fh.pos
        except (JSONError, UnicodeDecodeError, ValueError) as exc:
            raise _syntax_error(data, path, fh.last, exc, ijson) from None
    if not saw_traces:
        raise no_traces
    for (owner, name), builder in builders.items():
        target = file_header if owner < 0 else headers[owner]
        if isinstance(target, dict):
            target[name] = builder.value
    return file_header, headers, counts, cut


def _streamed_document_traces(data: Path, path: Path, report: _Report) -> list[_RawTrace] | None:
    """The traces of a ``.qlog`` JSON document, read in two streamed passes (ijson): the
    headers first, then the events one by one, so memory does not grow with the file. A
    document cut off keeps its complete events, with a warning. ijson's C parser reads it;
    where it cannot read an integer (beyond 64 bits), ijson's pure-Python parser (about
    ten times slower, same memory). None where ijson is missing."""
    try:
        import ijson
    except ImportError:  # pragma: no cover - ijson is a dependency; the fallback reads whole
        return None
    import itertools

    try:
        file_header, headers, counts, cut = _document_headers(data, path, ijson)
    except _IntegerOverflow:  # the pure-Python parser reads any integer (about 10x slower)
        ijson = ijson.get_backend("python")
        file_header, headers, counts, cut = _document_headers(data, path, ijson)
    if cut is not None:
        line = _line_at(data, cut)
        report.warn(
            line,
            f"the JSON document ends before it is complete (after byte {cut}: a crashed "
            f"or unfinished log?); kept the events up to the last complete one (line {line})",
        )
    stream = _streamed_events(data, ijson)
    out = []
    for index, (header, count) in enumerate(zip(headers, counts)):
        if header is None:
            report.warn(None, f"trace {index}: 'events' is not an array; skipped")
            continue
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


def _streamed_events(data: Path, ijson: ModuleType) -> Iterator[object]:
    """Every complete event of every trace of a document, in order (second streamed
    pass); stops at the cut of a document cut off."""
    from ijson.common import IncompleteJSONError

    with _open_document(data) as fh:
        try:
            yield from ijson.items(fh, "traces.item.events.item", use_float=True)
        except IncompleteJSONError:
            return


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


def _run_count(region: bytes) -> int:
    """The number of JSON-SEQ records in ``region`` (bytes between two record separators)
    when it is a run: records of one line each, ``{...}`` with no blank around them,
    each followed by a newline, ``b"{a}\\n\\x1e{b}\\n"``; else 0. Counted in one pass
    in C (:mod:`._runscan`; was numpy's byte counts, about 30 us a 40 KB file).

    >>> _run_count(b'{"a": 1}\\n\\x1e{"b": 2}\\n'), _run_count(b'{"a": 1}\\n\\x1e {"b": 2}\\n')
    (2, 0)
    """
    return run_count(region)


def _iter_records(
    path: Path, reader: _Reader, head: bytes, sep: bytes, limit: int, runs: bool = False
) -> Iterator[tuple[int, bytes, int]]:
    """Yield ``(line, record, 0)`` for each non-blank record separated by ``sep``; with
    ``runs`` (JSON-SEQ), the complete records of a block after the first record of the
    file, where they are a run (:func:`_run_count`: one record a line), come as one
    ``(line of the first, run, n)`` instead, the k-th record on line ``line + k``.

    Holds at most one partial record (``limit`` bytes) plus one block in memory; a
    longer record raises :class:`InputError` naming the line where it starts.
    """
    space = _BLANK + _RS
    newline_sep = sep == b"\n"
    pending: list[bytes] = []
    pending_len = 0
    line = 1  # line on which the pending record starts
    started = False  # a record was yielded (the first one never comes in a run)

    def too_long(start_line: int, record_head: bytes) -> InputError:
        lead = len(record_head) - len(record_head.lstrip(space))
        return InputError(
            path,
            start_line + record_head.count(b"\n", 0, lead),
            f"a record is longer than {limit} bytes (max_record_bytes): not a qlog record",
        )

    def singles(pieces: list[bytes]) -> Iterator[tuple[int, bytes, int]]:
        nonlocal line, started
        for part in pieces:
            if len(part) > limit:
                raise too_long(line, part)
            body = part.strip(space)
            if body:
                lead = part.find(body[:1])  # leading blank lines move the record's line
                started = True
                yield (line + part.count(b"\n", 0, lead) if lead else line), body, 0
            line += part.count(b"\n") + newline_sep

    block = head
    while True:
        first = block.find(sep) if runs and block else -1
        if first >= 0:  # JSON-SEQ: the first piece alone, a run in the middle, the rest
            last_sep = block.rfind(sep)
            yield from singles([b"".join(pending) + block[:first]])
            middle = block[first + 1 : last_sep]
            if middle and not started:  # the file's first record (its header) on its own
                cut = middle.find(sep)
                yield from singles([middle if cut < 0 else middle[:cut]])
                middle = b"" if cut < 0 else middle[cut + 1 :]
            n = _run_count(middle) if middle and len(middle) <= limit else 0
            if n:
                yield line, middle, n
                line += n
            elif middle:
                yield from singles(middle.split(sep))
            last = block[last_sep + 1 :]
            pending, pending_len = ([last], len(last)) if last else ([], 0)
        elif runs and block:
            pending.append(block)
            pending_len += len(block)
        else:
            pieces = block.split(sep) if block else [b""]
            if len(pieces) > 1 or not block:
                pieces[0] = b"".join(pending) + pieces[0]
                last = pieces.pop() if block else b""
                yield from singles(pieces)
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
    records = _iter_records(path, reader, head, sep, limit, runs=sep == _RS)
    first = next(records, None)
    if first is None:
        raise InputError(path, None, "empty file (no qlog header)")
    first_line, body, _ = first
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
        for line, record, n in records:
            lo = hi = math.nan
            count = 0
            if n and skipped is not None:  # a run: sorted in one pass in C (_runscan)
                n_recs, todo, bodies, count, lo, hi = scan_run(record, _CODE_WORDS, _OWN_WORDS)
                pairs: Iterable[tuple[int, bytes]] = zip(todo, bodies)
            else:
                recs = record[:-1].split(b"\n\x1e") if n else [record]  # n: a run
                n_recs = len(recs)
                if skipped is not None:  # the records only counted and timed, the rest parsed
                    count, lo, hi, parse = _sorted_records(recs, record, n)
                    pairs = ((k, recs[k]) for k, p in enumerate(parse) if p)
                else:
                    pairs = enumerate(recs)
            bad_at = -1  # the record of ``recs`` that was not valid JSON
            # plain metrics records: their times and columns read in C, handed on as a
            # run of them (the Python path, orjson and vocabulary._metrics, is the
            # reference); yielded before anything after them (warnings in log order)
            run = _MetricsRun()
            for k, rec in pairs:
                if bad is not None:
                    report.warn(
                        bad[0],
                        f"record is not valid JSON ({bad[1]}); skipped",
                        kind="invalid record",
                    )
                    bad = None
                fast = metrics_record(rec, _METRIC_TYPE_WORDS, _METRIC_KEY_WORDS)
                if fast is not None:
                    run.lines.append(line + k)
                    run.indices.append(index + k)
                    run.values.append(fast)
                    continue
                if run.values:
                    yield run.lines[0], run.indices[0], run
                    run = _MetricsRun()
                try:
                    event = _loads(rec)
                except ValueError as exc:
                    bad, bad_at = (line + k, str(exc), len(rec)), k
                    continue
                yield line + k, index + k, event
            if run.values:
                yield run.lines[0], run.indices[0], run
            if bad is not None and 0 <= bad_at < n_recs - 1:  # a record came after it
                report.warn(
                    bad[0], f"record is not valid JSON ({bad[1]}); skipped", kind="invalid record"
                )
                bad = None
            index += n_recs
            if count and skipped is not None:
                skipped.count += count
                skipped.first = min(skipped.first, lo)
                skipped.last = max(skipped.last, hi)
        if bad is not None:
            report.warn(
                bad[0],
                f"the last record is cut off or malformed ({bad[2]} bytes, {bad[1]}); "
                "ignored, the rest kept",
            )

    return [_RawTrace(0, file_header, trace, events(), skipped)]


def _sorted_records(
    recs: list[bytes], record: bytes, n: int
) -> tuple[int, float, float, list[bool]]:
    """Which of ``recs`` (the records of ``record``: a run of ``n``, or one record when
    ``n`` is 0) are parsed whole (the list, True: parsed), and the count and earliest and
    latest time of the others, only counted (NaN, NaN when none). The rule
    :func:`._runscan.scan_run` follows for a run (the reference: tests/test_qlog_runs.py)."""
    shape = _TIMED_SHAPES.get(recs[0][: 9 if recs[0][8:9] == b" " else 8])
    found = list(map((shape or _TIMED_NAME).match, recs))
    if shape is not None:  # the records of another spelling, asked again
        found = [m or _TIMED_NAME.match(r) for m, r in zip(found, recs)]
    parse = [m is None or m[2] in _CODE_WORDS for m in found]
    if not n and recs[0][-1:] != b"}":
        parse[0] = True
    if any(word in record for word in _OWN_HINTS):
        parse = [p or any(w in r for w in _OWN_WORDS) for p, r in zip(parse, recs)]
    values = [float(m[1]) for m, p in zip(found, parse) if not p]  # type: ignore[index]
    if not values:
        return 0, math.nan, math.nan, parse
    return len(values), min(math.inf, *values), max(-math.inf, *values), parse


#: Words in a record that keep it from being only counted (its own connection or clock).
_OWN_WORDS = (b'"group_id"', b'"path', b'"time_format"')
#: Parts of them that are found faster (a block without any has none of the words).
_OWN_HINTS = (b"up_id", b'"path', b'rmat"')
