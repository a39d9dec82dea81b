"""Writing output files safely: whole or not at all.

* One file (:func:`atomic_path`, :func:`write_atomic`): written to a temporary file
  beside the target, renamed onto it when complete.
* A set of files in an output folder (:func:`write_set`, ``--out DIR``): written into a
  temporary folder beside ``DIR`` (``.DIR.tmp-PID-XXXX``) and swapped in as one step
  (``renameat2(RENAME_EXCHANGE)`` on Linux; elsewhere two renames), then the old set is
  removed. Readers see the old set or the new one, never a mix; of two runs writing into
  one folder at once, the last to swap wins, whole.

On SIGTERM/SIGHUP (and Ctrl-C) while writing, the temporary file or folder is removed
before the process exits; the swap itself runs with those signals deferred. A temporary
folder left by a process killed outright (SIGKILL) is removed by the next
:func:`write_set` of the same folder, once its process is gone. OS errors (no space left, permission denied, ...) become one-line
:class:`~statemine.errors.StatemineError` messages naming the path.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import secrets
import signal
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from .errors import StatemineError

#: Signals that, while output is being written, remove the temporaries and then end the
#: process (SIGINT raises KeyboardInterrupt as usual).
_CLEANUP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)
_DEFERRED_SIGNALS = (signal.SIGINT, *_CLEANUP_SIGNALS)
_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100
_SWAP_ATTEMPTS = 20


class Terminated(SystemExit):
    """Raised by the handler of SIGTERM/SIGHUP while output is written (exit 128+signal)."""


def os_error(path: str | os.PathLike, exc: OSError, doing: str = "cannot write") -> StatemineError:
    """A one-line error for an OS error on ``path``: ``PATH: cannot write: No space left
    on device`` (the errno's text when there is an errno: pyarrow's own text is longer)."""
    cause = os.strerror(exc.errno) if exc.errno else (exc.strerror or str(exc))
    return StatemineError(f"{path}: {doing}: {cause}")


@contextmanager
def os_errors(path: str | os.PathLike, doing: str = "cannot write") -> Iterator[None]:
    """Within the block, an OS error becomes :func:`os_error` naming ``path``."""
    try:
        yield
    except OSError as exc:
        raise os_error(path, exc, doing) from None


@contextmanager
def cleanup_on_signals() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise :class:`Terminated` (so ``finally``
    and ``except`` clauses remove temporaries) instead of ending the process at once.
    Only in the main thread (elsewhere signal handlers cannot be set); nests."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum, _frame):
        raise Terminated(128 + signum)

    previous = {s: signal.signal(s, terminate) for s in _CLEANUP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP during the block and act on the first one after it
    (a Python-level deferral: it works whichever thread the kernel delivers to)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    previous = {
        s: signal.signal(s, lambda signum, _frame: pending.append(signum))
        for s in _DEFERRED_SIGNALS
    }
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if pending:
            signal.raise_signal(pending[0])


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block succeeds it is renamed onto
    ``path``, when it fails (or a signal ends it) it is removed. Readers (and a crash)
    never see a partial file.

    The temporary file is created empty with the usual permissions (0666 less the umask),
    and the folder is created if needed. OS errors become :class:`StatemineError`.

    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "out.txt"
    >>> with atomic_path(target) as tmp:
    ...     _ = tmp.write_text("done")
    >>> target.read_text()
    'done'
    """
    path = Path(path)
    with cleanup_on_signals():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = new_temp_file(path, 0o666)
            os.close(fd)
        except OSError as exc:
            raise os_error(path, exc) from None
        try:
            yield tmp
            with _signals_deferred():
                os.replace(tmp, path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise os_error(path, exc) from None
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise


def new_temp_file(path: Path, mode: int) -> tuple[int, Path]:
    """Create a new empty file beside ``path`` (``.NAME.PID-XXXXXXXX.tmp``; ``mode`` less
    the umask, never an existing file or a symlink's target); returns (an fd open for
    writing, its path).  OSError when the folder does not take it."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    return os.open(tmp, flags, mode), tmp


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


def write_set(
    out_dir: str | os.PathLike,
    files: Mapping[str, bytes | str | Path],
    *,
    owned: Iterable[str] = (),
) -> Path:
    """Make ``out_dir`` hold exactly ``files`` (name -> content, str as UTF-8), swapped
    in as one step; returns the folder. A :class:`~pathlib.Path` content is a file on the
    same file system (e.g. staged beside ``out_dir`` as ``.NAME.tmp-PID-XXXXXXXX``, which
    a later :func:`write_set` sweeps away if its process died) moved in instead of copied.

    ``owned``: names this command writes (besides ``files``' own): an existing
    ``out_dir`` may hold only those, since the whole folder is replaced; anything else
    in it is an error (nothing a user put there is deleted). A symlink ``out_dir`` is
    followed. Raises :class:`StatemineError` (one line) on OS errors; nothing partial is
    left behind.
    """
    import shutil

    allowed = set(owned) | set(files)
    out = check_out_dir(out_dir, allowed)
    parent = out.parent
    with cleanup_on_signals():
        try:
            _sweep_stale(parent, out.name)
            parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(
                os.path.join(parent, f".{out.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
            )
            os.mkdir(tmp, 0o777)  # the umask applies, as for any new folder
        except OSError as exc:
            raise os_error(out, exc) from None
        try:
            for name, data in files.items():
                if isinstance(data, Path):
                    os.rename(data, tmp / name)
                else:
                    _write_new(tmp / name, data.encode("utf-8") if isinstance(data, str) else data)
            _fsync_dir(tmp)
            with _signals_deferred():
                _swap_in(tmp, out, allowed)
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise os_error(out, exc) from None
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return out


def staging_file(out_dir: str | os.PathLike) -> Path:
    """A new name beside ``out_dir`` for a file to hand to :func:`write_set` as a Path
    (``.NAME.tmp-PID-XXXXXXXX``: swept by a later :func:`write_set` of ``out_dir`` once this
    process is gone). The caller creates it and removes it if it is never handed over."""
    out = Path(out_dir)
    return out.with_name(f".{out.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")


def check_out_dir(out_dir: str | os.PathLike, owned: Iterable[str]) -> Path:
    """The folder :func:`write_set` will replace (a symlink followed), after checking it
    can: missing, or a folder holding only ``owned`` names. Call it before the work, to
    fail early; :func:`write_set` checks again."""
    out = Path(out_dir)
    if out.is_symlink():
        out = Path(os.path.realpath(out))
    _check_replaceable(out, set(owned))
    return out


def check_out_file(path: str | os.PathLike) -> Path:
    """``path``, after checking that :func:`write_atomic` can replace it: not a folder,
    and its nearest existing parent a folder we may write into. Call it before the work,
    to fail early (one line, :class:`StatemineError`).

    >>> import tempfile
    >>> check_out_file(Path(tempfile.mkdtemp()) / "new" / "report.html").name
    'report.html'
    """
    out = Path(path)
    if out.is_dir():
        raise StatemineError(f"{out}: is a folder, not a file")
    parent = out.parent
    while not parent.exists() and not parent.is_symlink() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise StatemineError(f"{parent}: exists and is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise StatemineError(f"{parent}: cannot write: Permission denied")
    return out


def _check_replaceable(out: Path, allowed: set[str]) -> None:
    """Raise unless ``out`` is missing or a folder holding only ``allowed`` names."""
    if not out.exists():
        if out.is_symlink():
            raise StatemineError(f"{out}: is a dangling symbolic link")
        return
    if not out.is_dir():
        raise StatemineError(f"{out}: exists and is not a folder")
    try:
        foreign = sorted(set(os.listdir(out)) - allowed)
    except OSError as exc:
        raise os_error(out, exc, "cannot list") from None
    if foreign:
        shown = ", ".join(repr(name) for name in foreign[:3]) + (" ..." if len(foreign) > 3 else "")
        raise StatemineError(
            f"{out}: the folder holds files statemine did not write ({shown}); the output "
            "set replaces the whole folder, so give --out a new or empty folder"
        )


def _write_new(path: Path, data: bytes) -> None:
    with open(path, "xb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _swap_in(tmp: Path, out: Path, allowed: set[str]) -> None:
    """Put folder ``tmp`` at ``out`` in one step and remove what was there before."""
    import shutil

    for _ in range(_SWAP_ATTEMPTS):
        try:
            os.rename(tmp, out)  # out missing (or an empty folder)
            return
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
        _check_replaceable(out, allowed)  # a concurrent writer may have put its set there
        if _exchange(tmp, out):
            shutil.rmtree(tmp, ignore_errors=True)  # the old set, now at tmp's name
            return
        old = out.with_name(f".{out.name}.old-{os.getpid()}-{secrets.token_hex(4)}")
        try:
            os.rename(out, old)
        except FileNotFoundError:
            continue  # another writer moved it away first: try again
        try:
            os.rename(tmp, out)
            return
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
        finally:
            shutil.rmtree(old, ignore_errors=True)
    raise StatemineError(f"{out}: other processes keep replacing the folder; not written")


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2(RENAME_EXCHANGE)``); False where the
    system or file system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


_STALE = re.compile(r"\.(?P<name>.+)\.(?:tmp|old)-(?P<pid>\d+)-[0-9a-f]{8}\Z", re.DOTALL)


def _sweep_stale(parent: Path, name: str) -> None:
    """Remove temporary folders beside ``parent/name`` left by processes that no longer run."""
    import shutil

    try:
        entries = os.listdir(parent)
    except OSError:
        return
    for entry in entries:
        m = _STALE.match(entry)
        if not m or m["name"] != name:
            continue
        pid = int(m["pid"])
        if pid == os.getpid() or alive(pid):
            continue
        stale = parent / entry
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            with suppress(OSError):
                stale.unlink()


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one we may not signal does; a number too large
    for a pid, e.g. read from a crafted file name, counts as alive: nothing of it is
    removed)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True
