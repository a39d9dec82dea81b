"""Writing output files safely: whole or not at all."""

from __future__ import annotations

import json
import os
import secrets
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block succeeds it is renamed onto
    ``path``, when it fails it is removed. Readers (and a crash) never see a partial file.

    The temporary file is created empty with the usual permissions (0666 less the umask),
    and the folder is created if needed.

    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "out.txt"
    >>> with atomic_path(target) as tmp:
    ...     _ = tmp.write_text("done")
    >>> target.read_text()
    'done'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike, data: bytes | str) -> Path:
    """Write ``data`` (str as UTF-8) to ``path`` through :func:`atomic_path`."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path) as tmp:
        tmp.write_bytes(payload)
    return Path(path)


def write_json(path: str | os.PathLike, obj: Any, *, sort_keys: bool = False) -> Path:
    """``obj`` as indented JSON with a final newline (values JSON lacks as ``str``),
    written through :func:`atomic_path`."""
    return write_atomic(path, json.dumps(obj, indent=1, sort_keys=sort_keys, default=str) + "\n")
