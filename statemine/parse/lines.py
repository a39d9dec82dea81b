"""Reading untrusted text files in bounded memory.

:func:`iter_chunks` yields blocks of whole lines, never holding more than one block plus
one line (at most ``max_line_bytes``) in memory, so a 100 MB line or an endless line is
reported as an error instead of exhausting memory. Gzip input is detected by its magic
bytes and decompressed on the fly.
"""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

import numpy as np

from ..errors import InputError

#: Longest line accepted by default (bytes). Real statemine/qlog lines are < 1 KiB.
DEFAULT_MAX_LINE_BYTES = 1 << 20
#: Bytes read per block by default.
DEFAULT_CHUNK_BYTES = 16 << 20

_GZIP_MAGIC = b"\x1f\x8b"


def open_binary(path: str | Path) -> BinaryIO:
    """Open ``path`` for reading bytes, transparently gunzipping gzip files."""
    path = Path(path)
    try:
        raw = open(path, "rb")
    except OSError as exc:
        raise InputError(path, None, f"cannot open: {exc.strerror or exc}") from None
    if raw.peek(2)[:2] == _GZIP_MAGIC:
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    return raw


def head_bytes(path: str | Path, n: int = 65536) -> bytes:
    """The first ``n`` bytes of the (decompressed) file, for format detection."""
    with open_binary(path) as fh:
        try:
            return fh.read(n)
        except (OSError, EOFError) as exc:
            raise InputError(path, None, f"cannot read: {exc}") from None


def iter_chunks(
    path: str | Path,
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    on_progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[int, bytes]]:
    """Yield ``(first_line_number, block)`` where ``block`` holds whole lines.

    Line numbers are 1-based. Every block but possibly the last ends with ``b"\\n"``.
    ``on_progress`` is called with the number of raw bytes read after each block.
    Raises :class:`InputError` naming the line when a line exceeds ``max_line_bytes``.
    """
    path = Path(path)
    with open_binary(path) as fh:
        raw = getattr(fh, "fileobj", None) or fh
        carry = b""
        line_no = 1
        while True:
            try:
                block = fh.read(chunk_bytes)
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                raise InputError(path, line_no, f"cannot read (damaged or truncated file?): {exc}") from None
            if on_progress is not None:
                on_progress(_tell(raw))
            if not block:
                break
            data = carry + block
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                if len(data) > max_line_bytes:
                    raise InputError(path, line_no, f"line longer than {max_line_bytes} bytes")
                carry = data
                continue
            whole, carry = data[:cut], data[cut:]
            _check_line_lengths(path, whole, line_no, max_line_bytes)
            if len(carry) > max_line_bytes:
                raise InputError(path, line_no + whole.count(b"\n"), f"line longer than {max_line_bytes} bytes")
            yield line_no, whole
            line_no += whole.count(b"\n")
        if carry:
            _check_line_lengths(path, carry, line_no, max_line_bytes)
            yield line_no, carry


def _tell(fh: io.IOBase) -> int:
    try:
        return fh.tell()
    except (OSError, ValueError):
        return 0


def _check_line_lengths(path: Path, block: bytes, first_line: int, limit: int) -> None:
    """Raise if any line of ``block`` is longer than ``limit`` bytes."""
    if len(block) <= limit:
        return
    ends = np.flatnonzero(np.frombuffer(block, np.uint8) == 10)
    bounds = np.concatenate(([-1], ends, [len(block)]))
    too_long = np.flatnonzero(np.diff(bounds) - 1 > limit)
    if too_long.size:
        raise InputError(path, first_line + int(too_long[0]), f"line longer than {limit} bytes")
