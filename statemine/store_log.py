"""The trace store's versions: which files a store holds, published in one atomic step.

A store's content is the latest *version*: a JSON file ``STORE/_statemine_log/<N>.json``
(``N`` zero-padded to 20 digits) listing every data file of the store with its rows and
whether it has a metrics file (its labels file always exists). An add writes its files
first (unreferenced: no reader looks at them), then publishes version ``N + 1`` = version
``N``'s files plus its own by creating that name with ``link(2)``, which fails when the
name exists: of two adds racing for ``N + 1`` one wins, the other reads the new latest and
tries ``N + 2`` (each version lists all files, so nothing is lost or listed twice).
Readers list the folder, take the highest ``N`` and read the files it lists: the old
content or the new, never part of an add. Files no version lists (a killed add's) are
ignored and removed by :func:`vacuum` once older than its grace period. docs/store.md
says why this and not Delta Lake or Iceberg.

Crash points (:func:`crash_point`): with ``STATEMINE_STORE_CRASH_AT=N`` in the
environment the N-th write step of the process ends it at once (``os._exit(137)``, as
SIGKILL would); the crash tests kill an add at every step this way.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError, StatemineError
from .fileio import new_temp_file, os_error

#: The folder of the version files, at the store's top (a leading ``_``: readers skip it).
LOG_DIR = "_statemine_log"
_VERSION_NAME = re.compile(r"(\d{20})\.json\Z")
#: A file id (``part-<id>.parquet``): this version's ``<ns hex>-<pid>-<hex>``, or any
#: older name of letters, digits, ``. _ -`` (no ``/``, not ``..``).
IDENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
#: Attempts to publish before giving up (each one lost to another add that published).
_COMMIT_ATTEMPTS = 1000
#: Times a reader lists the versions again when the latest vanished under it (a vacuum).
_READ_ATTEMPTS = 20
#: The environment variable naming the write step at which the process ends (tests).
CRASH_ENV = "STATEMINE_STORE_CRASH_AT"
_steps = [0]


def crash_point(step: str) -> None:
    """One write step of an add (``step`` names it); ends the process with status 137
    when it is the N-th step and ``STATEMINE_STORE_CRASH_AT=N``."""
    at = os.environ.get(CRASH_ENV)
    if not at:
        return
    _steps[0] += 1
    if _steps[0] == int(at):
        os.write(2, f"statemine: crash point {_steps[0]}: {step}\n".encode())
        os._exit(137)


@dataclass(frozen=True)
class Entry:
    """One data file of a version: its partition folder names (``KEY=VALUE``, in key
    order; none in a store without keys), its id, rows, and whether it has a metrics file."""

    partition: tuple[str, ...]
    ident: str
    rows: int
    metrics: bool

    def data(self, root: Path) -> Path:
        """The data file ``part-<id>.parquet``."""
        return root.joinpath(*self.partition, f"part-{self.ident}.parquet")

    def labels(self, root: Path) -> Path:
        """Its labels file under ``_labels``."""
        return root.joinpath("_labels", *self.partition, f"labels-{self.ident}.parquet")

    def metrics_file(self, root: Path) -> Path:
        """Its metrics file under ``_metrics`` (present only when ``metrics``)."""
        return root.joinpath("_metrics", *self.partition, f"metrics-{self.ident}.parquet")

    def files(self, root: Path) -> list[Path]:
        """Every file of the entry: data, labels and (when it has one) metrics."""
        own = [self.data(root), self.labels(root)]
        return [*own, self.metrics_file(root)] if self.metrics else own

    def as_json(self) -> dict:
        return {
            "partition": list(self.partition),
            "id": self.ident,
            "rows": self.rows,
            "metrics": self.metrics,
        }


@dataclass(frozen=True)
class Version:
    """A published version: its number (0: nothing published yet), file and entries."""

    number: int
    path: Path | None
    entries: tuple[Entry, ...]


def version_path(root: Path, number: int) -> Path:
    """The file of version ``number``."""
    return root / LOG_DIR / f"{number:020d}.json"


def version_numbers(root: Path) -> list[int]:
    """The published version numbers, ascending (none when the folder is absent)."""
    try:
        names = os.listdir(root / LOG_DIR)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise os_error(root / LOG_DIR, exc, "cannot list") from None
    return sorted(int(m.group(1)) for n in names if (m := _VERSION_NAME.match(n)))


def latest(root: Path, check_partition: Callable[[Sequence[str]], bool]) -> Version:
    """The latest published version of the store ``root`` (number 0, no entries, when
    none is). ``check_partition(parts)`` says whether folder names are a partition of this
    store. Raises :class:`InputError` naming a damaged version file."""
    for _ in range(_READ_ATTEMPTS):
        numbers = version_numbers(root)
        if not numbers:
            return Version(0, None, ())
        path = version_path(root, numbers[-1])
        try:
            text = path.read_bytes()
        except FileNotFoundError:
            continue  # removed by a vacuum after a newer one was published: list again
        except OSError as exc:
            raise os_error(path, exc, "cannot read") from None
        return Version(numbers[-1], path, parse_version(path, text, numbers[-1], check_partition))
    raise InputError(root / LOG_DIR, None, "the latest version keeps vanishing; try again")


def parse_version(
    path: Path, text: bytes, number: int, check_partition: Callable[[Sequence[str]], bool]
) -> tuple[Entry, ...]:
    """The entries of the version file ``path`` (its bytes ``text``), every field checked
    (an untrusted file: no path may leave the store)."""

    def bad(reason: str) -> InputError:
        return InputError(path, None, f"damaged store version: {reason}")

    try:
        doc = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise bad(f"not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("version") != number:
        raise bad(f"not the document of version {number}")
    files = doc.get("files")
    if not isinstance(files, list):
        raise bad("no list of files")
    entries, seen = [], set()
    for item in files:
        entry = _entry(item)
        if entry is None or not check_partition(entry.partition):
            raise bad(f"not a file entry of this store: {json.dumps(item)[:200]}")
        if (entry.partition, entry.ident) in seen:
            raise bad(f"a file listed twice: part-{entry.ident}.parquet")
        seen.add((entry.partition, entry.ident))
        entries.append(entry)
    return tuple(entries)


def _entry(item: object) -> Entry | None:
    """``item`` of a version file as an :class:`Entry`, None unless well formed."""
    if not isinstance(item, dict) or set(item) != {"partition", "id", "rows", "metrics"}:
        return None
    part, ident, rows, metrics = item["partition"], item["id"], item["rows"], item["metrics"]
    if not isinstance(part, list) or not all(isinstance(p, str) for p in part):
        return None
    if not isinstance(ident, str) or not IDENT.match(ident) or ".." in ident:
        return None
    if type(rows) is not int or rows < 0 or type(metrics) is not bool:
        return None
    return Entry(tuple(part), ident, rows, metrics)


def commit(
    root: Path,
    new: Sequence[Entry],
    check_partition: Callable[[Sequence[str]], bool],
    *,
    replace: bool = False,
) -> int:
    """Publish the latest version's files plus ``new`` (only ``new`` with ``replace``) as
    the next version, in one atomic step; returns its number. The new files are flushed
    to disk first. Raises
    :class:`StatemineError` when a new file is gone (a vacuum removed it mid-add)."""
    for entry in new:
        for path in entry.files(root):
            _fsync(path, "is gone before the add was published (removed by a vacuum?)")
    folder = root / LOG_DIR
    try:
        folder.mkdir(exist_ok=True)
    except OSError as exc:
        raise os_error(folder, exc) from None
    for _ in range(_COMMIT_ATTEMPTS):
        base = latest(root, check_partition)
        number = base.number + 1
        files = (*(() if replace else base.entries), *new)
        doc = {"version": number, "files": [e.as_json() for e in files]}
        target = version_path(root, number)
        if _put_if_absent(target, json.dumps(doc, indent=0).encode() + b"\n"):
            _fsync(folder, "cannot be flushed")
            crash_point("published")
            return number
    raise StatemineError(f"{folder}: {_COMMIT_ATTEMPTS} other adds published first; try again")


def _put_if_absent(target: Path, data: bytes) -> bool:
    """Create ``target`` holding ``data`` whole, unless it exists (then False): written
    to a temporary file, flushed, then hard-linked to the name (atomic, and refused when
    the name is taken)."""
    try:
        fd, tmp = new_temp_file(target, 0o666)
    except OSError as exc:
        raise os_error(target, exc) from None
    try:
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
        except OSError as exc:
            raise os_error(target, exc) from None
        crash_point("version written")
        try:
            os.link(tmp, target)
        except FileExistsError:
            return False
        except OSError as exc:
            raise os_error(
                target, exc, "cannot publish (the file system needs hard links)"
            ) from None
        return True
    finally:
        tmp.unlink(missing_ok=True)


def _fsync(path: Path, gone: str) -> None:
    """Flush ``path`` (a file or folder) to disk; :class:`StatemineError` when missing."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise StatemineError(f"{path}: {gone}") from None
    except OSError as exc:
        raise os_error(path, exc, "cannot open") from None
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EBADF):  # folders on some file systems
            raise os_error(path, exc, "cannot flush") from None
    finally:
        os.close(fd)


#: Names a store's writers make; :func:`vacuum` removes only these (never a user's file).
_OWN_FILE = re.compile(
    r"(part-|labels-|metrics-).+\.parquet\Z|\..+\.\d+-[0-9a-f]{8}\.tmp\Z|\d{20}\.json\Z"
)


def vacuum(
    root: Path, live: Iterable[Path], keep: Iterable[Path], grace: float
) -> tuple[list[Path], int]:
    """Remove from the store ``root`` what no published version needs and is older than
    ``grace`` seconds (by its modification time, a folder's by its newest entry):
    store-written files not in ``live`` (the latest version's files) or ``keep`` (the
    metadata and latest version file), ``.spill-*`` folders, then folders left empty.
    Files of other names are never touched; symbolic links are not followed. Returns the
    paths removed and their bytes."""
    needed = {os.path.normpath(p) for p in (*live, *keep)}
    cutoff = time.time() - grace
    removed: list[Path] = []
    touched: set[Path] = set()  # folders this call removed from (their mtime is now)
    size = 0
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        for name in list(dirs):
            path = here / name
            if name.startswith(".spill-") and here == root and _newest(path) < cutoff:
                size += _tree_bytes(path)
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
                touched.add(here)
                dirs.remove(name)
            elif path.is_symlink():
                dirs.remove(name)
        for name in files:
            path = here / name
            if os.path.normpath(path) in needed or not _OWN_FILE.match(name):
                continue
            if name.endswith(".json") and here != root / LOG_DIR:
                continue
            st = path.lstat()
            if st.st_mtime < cutoff:
                path.unlink(missing_ok=True)
                removed.append(path)
                touched.add(here)
                size += st.st_size
    for folder, _, _ in os.walk(root, topdown=False):
        path = Path(folder)
        if path in (root, root / LOG_DIR) or path.is_symlink():
            continue
        if path in touched or _newest(path) < cutoff:
            try:
                path.rmdir()  # only an empty folder goes
            except OSError:
                continue
            removed.append(path)
            touched.add(path.parent)
    return removed, size


def _newest(path: Path) -> float:
    """The newest modification time of ``path`` and everything below it (not following
    links)."""
    newest = path.lstat().st_mtime
    for folder, dirs, files in os.walk(path):
        for name in (*dirs, *files):
            with contextlib.suppress(FileNotFoundError):
                newest = max(newest, os.lstat(os.path.join(folder, name)).st_mtime)
    return newest


def _tree_bytes(path: Path) -> int:
    """Bytes of the files below ``path``."""
    return sum(
        os.lstat(os.path.join(folder, name)).st_size
        for folder, _, files in os.walk(path)
        for name in files
    )
