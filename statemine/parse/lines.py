"""Reading untrusted text files in bounded memory.

:func:`iter_blocks` yields blocks of whole lines from one reused buffer of a block plus
one line (at most ``max_line_bytes``), so a 100 MB line or an endless line is reported
as an error instead of exhausting memory. Gzip input is detected by its magic
bytes and decompressed on the fly. :func:`read_ahead` and :func:`ordered_map` run reading
or parsing on threads, in order and a bounded number of items ahead. :class:`ReadDigests`
takes the sha256 of the bytes as they are read (provenance.json), so a file is read once.
"""

from __future__ import annotations

import collections
import gzip
import hashlib
import io
import itertools
import os
import queue
import stat
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..errors import InputError

T = TypeVar("T")
R = TypeVar("R")

#: Longest line accepted by default (bytes). Real statemine/qlog lines are < 1 KiB.
DEFAULT_MAX_LINE_BYTES = 1 << 20
#: Bytes read per block by default.
DEFAULT_CHUNK_BYTES = 16 << 20

_GZIP_MAGIC = b"\x1f\x8b"


def open_binary(path: str | Path) -> io.BufferedReader | gzip.GzipFile:
    """Open ``path`` for reading bytes, transparently gunzipping gzip files."""
    path = path if isinstance(path, Path) else Path(path)
    try:
        raw = open(path, "rb")  # noqa: SIM115 (returned to the caller, who closes it)
    except OSError as exc:
        raise read_error(path, exc, doing="cannot open") from None
    try:
        magic = raw.peek(2)[:2]
    except OSError as exc:
        raw.close()
        raise read_error(path, exc) from None
    if magic == _GZIP_MAGIC:
        return gzip.GzipFile(fileobj=raw, mode="rb")
    return raw


def read_error(
    path: str | Path, exc: BaseException, line: int | None = None, doing: str = "cannot read"
) -> InputError:
    """The one message for a file that cannot be read: a cut-off gzip stream (refused
    whole, under every format: what it holds is not known to be a prefix of the log),
    damaged gzip data, or an OS error."""
    if isinstance(exc, EOFError):
        return InputError(
            path,
            line,
            "the gzip stream is cut off (a truncated .gz file); "
            "not read (decompress what it holds with zcat to read that)",
        )
    if isinstance(exc, (gzip.BadGzipFile, zlib.error)):
        return InputError(path, line, f"damaged gzip data: {exc}")
    if isinstance(exc, OSError):
        return InputError(path, line, f"{doing}: {exc.strerror or exc}")
    return InputError(path, line, f"{doing}: {exc}")


def stat_path(path: str | Path) -> os.stat_result:
    """``os.stat`` (links followed) with its errors as :class:`InputError` naming ``path``:
    a name with a NUL byte (``os.stat`` and ``open`` raise ValueError; the name is shown
    quoted), no such file or folder, or why it cannot be read."""
    if "\0" in str(path):
        raise InputError(repr(str(path)), None, "a file name with a NUL byte")
    try:
        return os.stat(path)
    except FileNotFoundError:
        raise InputError(path, None, "no such file or folder") from None
    except OSError as exc:
        raise read_error(path, exc) from None


def stat_input(path: str | Path) -> os.stat_result:
    """:func:`stat_path` of a log file or folder named as input, refusing what no reader
    may open: a named pipe, socket or device (a pipe with no writer blocks, ``/dev/zero``
    never ends)."""
    st = stat_path(path)
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise InputError(
            path, None, "not a regular file or folder (a pipe or device cannot be read as a log)"
        )
    return st


def head_bytes(path: str | Path, n: int = 65536) -> bytes:
    """The first ``n`` bytes of the (decompressed) file, for format detection."""
    with open_binary(path) as fh:
        try:
            return fh.read(n)
        except (OSError, EOFError, zlib.error) as exc:
            raise read_error(path, exc) from None


#: Reads below this many bytes are hashed on the reading thread (a thread costs more).
_HASH_ON_THREAD_BYTES = 1 << 20


class ReadDigests:
    """The sha256 (hex) and size in bytes of each file read whole, taken from the reader's
    own buffers instead of a second read of the file.

    :meth:`begin` a file, :meth:`update` with its raw bytes in order (a large update is
    hashed on a worker thread, hashlib working without the GIL, while the caller goes
    on: it must :meth:`wait` before changing those bytes), :meth:`end` it. :meth:`records`:
    ``os.path.abspath(path)`` -> (sha256, bytes) of the files ended (a file begun but not
    ended, e.g. left at an error, is not there)."""

    def __init__(self) -> None:
        self._records: dict[str, tuple[str, int]] = {}
        self._key: str | None = None
        self._hash: Any = None
        self._size = 0
        self._worker: threading.Thread | None = None

    def begin(self, path: str | os.PathLike) -> None:
        """Start the digest of ``path`` (one left unfinished is dropped)."""
        self.wait()
        self._key, self._hash, self._size = os.path.abspath(path), hashlib.sha256(), 0

    def update(self, data: bytes | memoryview) -> None:
        """Add the file's next bytes; ``data`` must stay unchanged until :meth:`wait`."""
        self.wait()
        self._size += len(data)
        if len(data) < _HASH_ON_THREAD_BYTES:
            self._hash.update(data)
            return
        self._worker = threading.Thread(target=self._hash.update, args=(data,), daemon=True)
        self._worker.start()

    def wait(self) -> None:
        """Return once the last :meth:`update` has been hashed."""
        if self._worker is not None:
            self._worker.join()
            self._worker = None

    def end(self) -> None:
        """The file begun has been read to its end: record its digest."""
        self.wait()
        if self._key is not None:
            self._records[self._key] = (self._hash.hexdigest(), self._size)
        self._key = self._hash = None

    def add_read(
        self, paths: Sequence[str | os.PathLike], data: bytes, sizes: Sequence[int]
    ) -> None:
        """Record files read whole: ``paths[i]`` holds the next ``sizes[i]`` bytes of
        ``data`` (the files' bytes one after another)."""
        view, at = memoryview(data), 0
        for path, size in zip(paths, sizes, strict=True):
            digest = hashlib.sha256(view[at : at + size]).hexdigest()
            self._records[os.path.abspath(path)] = (digest, size)
            at += size

    def records(self) -> dict[str, tuple[str, int]]:
        """``os.path.abspath(path)`` -> (sha256 hex, bytes) of each file read to its end."""
        self.wait()
        return dict(self._records)


def iter_blocks(
    path: str | Path,
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    on_progress: Callable[[int], None] | None = None,
    line_number: Callable[[], int] = lambda: 0,
    buffer: bytearray | None = None,
    digests: ReadDigests | None = None,
) -> Iterator[memoryview]:
    """Yield the file as blocks of whole lines: views into one reused buffer.

    Each view is valid until the next one is asked for. Every block but possibly the last
    ends with ``b"\\n"``. Memory: one buffer of ``chunk_bytes + max_line_bytes``.
    ``on_progress`` is called with the number of raw bytes read after each read. A line
    that does not fit in a block and is longer than ``max_line_bytes`` raises
    :class:`InputError` at ``line_number()`` (the caller's count of the lines it has
    consumed, plus one); the caller checks the lines inside blocks itself. ``buffer``: that
    buffer (at least ``chunk_bytes + max_line_bytes + 1`` bytes), reused from file to file
    (making and zeroing 17 MB took milliseconds per file). ``digests``: the file's bytes
    as read go to it (:class:`ReadDigests`, hashed while the block is scanned), unless the
    file is gzip (its digest is of the compressed bytes, which this does not see).
    """
    path = path if isinstance(path, Path) else Path(path)
    size = chunk_bytes + max_line_bytes + 1
    if buffer is not None and len(buffer) < size:
        raise ValueError(f"buffer of {len(buffer)} bytes; iter_blocks needs {size}")
    buf = bytearray(size) if buffer is None else buffer
    view = memoryview(buf)
    with open_binary(path) as fh:
        raw: io.IOBase = fh  # progress counts the file's bytes: the compressed ones under gzip
        if isinstance(fh, gzip.GzipFile) and isinstance(fh.fileobj, io.BufferedReader):
            raw = fh.fileobj
        if isinstance(fh, gzip.GzipFile):
            digests = None
        if digests is not None:
            digests.begin(path)
        keep = 0  # bytes of an unfinished line at the front of buf
        while True:
            try:
                n = fh.readinto(view[keep : keep + chunk_bytes])
            except (OSError, EOFError, zlib.error) as exc:
                raise read_error(path, exc, line_number()) from None
            if on_progress is not None:
                on_progress(_tell(raw))
            if not n:
                if digests is not None:
                    digests.end()
                if keep:
                    yield view[:keep]
                return
            end = keep + n
            if digests is not None:
                digests.update(view[keep:end])  # hashed while the caller scans the block
            cut = buf.rfind(b"\n", 0, end) + 1
            if cut:
                yield view[:cut]
            if digests is not None:
                digests.wait()  # before buf changes
            keep = end - cut
            if keep > max_line_bytes:
                raise InputError(path, line_number(), f"line longer than {max_line_bytes} bytes")
            if cut:
                buf[:keep] = view[cut:end]


def _tell(fh: io.IOBase) -> int:
    try:
        return fh.tell()
    except (OSError, ValueError):
        return 0


def read_ahead(items: Iterator[T], depth: int = 2) -> Iterator[T]:
    """Iterate ``items`` on a background thread, at most ``depth`` items ahead.

    The thread starts at once. An exception raised while producing is raised to the
    consumer in its place; closing (or dropping) the returned iterator stops the thread.

    >>> list(read_ahead(iter(range(5))))
    [0, 1, 2, 3, 4]
    """
    slots: queue.Queue = queue.Queue(depth)
    stop = threading.Event()
    done = object()

    def put(entry: tuple[BaseException | None, object]) -> bool:
        while not stop.is_set():
            try:
                slots.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((None, item)):
                    return
            put((None, done))
        except BaseException as exc:  # handed to the consumer, raised there
            put((exc, None))

    threading.Thread(target=produce, name="statemine-read-ahead", daemon=True).start()

    def consume() -> Iterator[T]:
        try:
            while True:
                error, item = slots.get()
                if error is not None:
                    raise error
                if item is done:
                    return
                yield item
        finally:
            stop.set()

    return consume()


def ordered_map(fn: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """``map(fn, items)`` on a thread pool of ``workers``, results in order, at most
    ``workers + 1`` items in flight (``items`` is read lazily); the rest is cancelled
    when the consumer stops. One item, or one worker: no thread."""
    todo = iter(items)
    head = [] if workers <= 1 else list(itertools.islice(todo, 2))
    if len(head) <= 1:
        yield from map(fn, itertools.chain(head, todo))
        return
    todo = itertools.chain(head, todo)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers) as pool:
        pending: collections.deque = collections.deque()
        try:
            for item in itertools.islice(todo, workers + 1):
                pending.append(pool.submit(fn, item))
            while pending:
                result = pending.popleft().result()
                for item in itertools.islice(todo, 1):
                    pending.append(pool.submit(fn, item))
                yield result
        finally:
            for future in pending:
                future.cancel()
