"""Parsers: from log files to a :class:`statemine.traces.TraceSet`.

:func:`read` is the one entry point: it expands folders, picks a parser per file
(``--format auto`` looks at the content, not the name) and joins the results.

=========  ==========================================================  ======================
format     what                                                        module
=========  ==========================================================  ======================
statemine  lines ``STATEMINE t=... conn=... state=...`` after any prefix  :mod:`.statemine_log`
qlog       .qlog JSON, .sqlog JSON-SEQ, NDJSON (optionally gzip)        :mod:`.qlog`
regex      any text log, Synoptic's ``-r``/``-s``/``-m`` options        :mod:`.regex`
ftrace     kernel TCP's tcp_cong_state_set/tcp_probe (tracefs, trace-cmd,  :mod:`.ftrace`
           perf script text)
parquet    a trace set saved by :func:`statemine.save`                  :mod:`statemine.traces`
=========  ==========================================================  ======================
"""

from __future__ import annotations

import errno
import operator
import os
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

from ..errors import InputError, UsageError
from ..escape import name_text, name_texts
from .lines import ReadDigests, head_bytes, read_error, stat_input, stat_path

if TYPE_CHECKING:  # the traces module loads pandas; the streaming path does without it
    from ..traces import TraceSet

FORMATS = ("auto", "statemine", "qlog", "regex", "parquet", "ftrace")
#: File name endings a folder is searched for.
LOG_SUFFIXES = (".log", ".txt", ".qlog", ".sqlog", ".json", ".ndjson", ".jsonl", ".gz", ".parquet")
_PARQUET_MAGIC = b"PAR1"
#: Bytes the format sniff reads of a file (as :func:`detect_format`); a plain qlog file
#: shorter than this is read whole by it and its bytes handed to the qlog reader.
_SNIFF_BYTES = 65536
#: Inputs larger than this (bytes, all files together) get a progress bar.
PROGRESS_MIN_BYTES = 4 << 20
_P = TypeVar("_P", str, Path)
_NAME = operator.attrgetter("name")


def read(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    format: str = "auto",
    *,
    regex: Sequence[str] | str | None = None,
    separator: str | None = None,
    mapping: str | None = None,
    ignore_nonmatching: bool = False,
    names: Mapping[str, str] | None = None,
    implementation: str | None = None,
    derive_states: bool = False,
    labels: Mapping[str, str] | None = None,
    select: Mapping[str, str] | None = None,
    progress: bool = False,
    strict: bool = False,
    digests: ReadDigests | None = None,
    listed: Sequence[str] | None = None,
) -> TraceSet:
    """Read log files (or folders of them) into one :class:`TraceSet`.

    ``format``: one of :data:`FORMATS`; ``auto`` decides per file from its content
    (``regex`` when ``regex`` is given). ``regex``/``separator``/``mapping``/
    ``ignore_nonmatching``: Synoptic's ``-r``/``-s``/``-m``/``-i``. ``names``: state-name
    overrides for qlog (implementation name -> statemine name); ``implementation`` picks
    the qlog name table; ``derive_states``: derive states from qlog metrics when a file
    logs none. ``labels`` are added as columns of the ``traces`` frame (e.g.
    ``{"environment": "mobile"}``); ``select`` keeps the traces whose labels equal it
    (:meth:`TraceSet.select`). A folder written by ``statemine lab run`` stands for its
    runs' trace sets. Raises :class:`InputError` naming the file (and line). Of several
    files, a qlog file without congestion data (a dead connection) is skipped with a
    warning naming it, unless ``strict``; nothing usable at all is an error. ``digests``:
    where the sha256 of the small plain qlog files read whole (each opened and read once,
    under ``auto``) is recorded (for provenance.json: not read again); other files are not.
    ``listed``: the files ``paths`` stand for as :func:`expand_files` lists them, when the
    caller has listed them already (a folder is not walked again).
    """
    if format not in FORMATS:
        raise UsageError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    from .repeats import drop_repeated_runs, refuse_shared_ids

    # strings: no Path a file
    files, notes = drop_repeated_runs(expand_files(paths) if listed is None else listed)
    if format == "auto" and regex:
        format = "regex"
    if format == "regex":
        from .regex import read_regex

        ts = read_regex(
            [Path(f) for f in files],
            regex,
            separator=separator,
            mapping=mapping,
            ignore_nonmatching=ignore_nonmatching,
        )
    else:
        sources = _source_names(files)
        with progress_reporter(files, progress) as advance:
            sets: list[TraceSet] = []
            skipped: list[str] = []
            origins: list[Path] = []
            at = 0
            refused: list = []  # [path, head] of the file the statemine scan declined

            def sniff(path: Path, head: bytes | None) -> bool:
                if _is_statemine(path, head):
                    return True
                refused[:] = [path, head]  # its one read, handed on to the format sniff
                return False

            while at < len(files):
                if format == "auto" and at + 1 < len(files) and not _named_parquet(files[at]):
                    # sniffed as the scan reads (which never takes a Parquet file: a lab
                    # folder's runs skip the scan's start; told by name, as opening the
                    # file here would read every small log twice)
                    from .statemine_log import read_statemine_run

                    rest = files[at:]
                    run, n = read_statemine_run(
                        rest, [sources[f] for f in rest], sniff, on_progress=advance
                    )
                    if run is not None:
                        sets.append(run)
                        origins.append(Path(files[at]))
                        at += n
                        continue
                head = refused[1] if refused and str(refused[0]) == str(Path(files[at])) else None
                refused.clear()
                found = _Run(files, at, format, head)
                fmt = found.kind
                if fmt == "qlog" and len(found.listed) > 1:  # a QLOGDIR: one set built once
                    from .qlog import read_qlog_files

                    # each file sniffed just before it is read (the run's end found as it
                    # goes): a small one's bytes held once, never the folder's; one
                    # iterable of (path, source, bytes), taken a file at a time
                    joined, empty = read_qlog_files(
                        ((Path(f), sources[f], data) for f, data in found.items(digests)),
                        names=names,
                        implementation=implementation,
                        derive_states=derive_states,
                        skip_empty=not strict,
                        # no stat of every file when advance does nothing
                        on_file=(lambda f: advance(_size(f))) if progress else _nothing,
                    )
                    at += len(found.listed)
                    if joined is not None:
                        sets.append(joined)
                        origins.append(Path(found.listed[0]))  # ids carry each source name
                    skipped.extend(
                        f"{e}; file skipped (--strict makes this an error)" for e in empty
                    )
                    continue
                listed = found.listed
                at += len(listed)
                group = [Path(f) for f in listed]
                if fmt == "statemine":  # one pass over the run of statemine logs
                    from .statemine_log import read_statemine_logs

                    sets.append(
                        read_statemine_logs(
                            group, [sources[f] for f in listed], on_progress=advance
                        )
                    )
                    origins.append(group[0])  # its trace ids carry each file's source name
                    continue
                if fmt == "parquet" and len(group) > 1:  # a lab folder: its logs, one pass
                    from ..traces import load_many
                    from .labruns import read_lab_runs

                    joined = read_lab_runs(listed)
                    if joined is None:  # else as one Arrow table
                        joined = load_many(group)
                    if joined is not None:
                        sets.append(joined)
                        origins.append(group[0])
                        if progress:  # else advance does nothing: no stat of every file
                            advance(sum(_size(f) for f in group))
                        continue
                for f, name in zip(group, listed):
                    try:
                        sets.append(
                            _read_one(
                                f,
                                fmt,
                                sources[name],
                                names,
                                implementation,
                                derive_states,
                                advance,
                                ignore_nonmatching,
                            )
                        )
                        origins.append(f)
                    except InputError as exc:
                        if strict or len(files) == 1 or not _no_congestion_data(exc):
                            raise
                        skipped.append(f"{exc}; file skipped (--strict makes this an error)")
        if not sets:
            raise InputError(
                None,
                None,
                f"none of the {len(files)} files has congestion data (first: {skipped[0]})",
            )
        if len(sets) > 1:  # within one set the ids are unique (checked as it is built)
            refuse_shared_ids(origins, sets)
        notes = skipped + notes
        ts = sets[0] if len(sets) == 1 and not notes else _concat(sets, notes)
    if labels:
        ts = ts.with_labels(**labels)
    return ts.select(select) if select else ts


class _Run:
    """The run of consecutive files of one format (detected per file for ``auto``) that
    begins at ``files[at]`` (``head``: the first file's first 64 KiB when read already).

    ``kind`` is its format and ``listed`` its files. A run of several qlog files is found
    as it is read (:meth:`items`): here only its first two are sniffed."""

    def __init__(
        self, files: Sequence[str], at: int, format: str, head: bytes | None = None
    ) -> None:
        self.files, self.end = files, len(files)
        self.listed: list[str]
        self._held: list[bytes | None] = []  # the bytes of listed files not yet handed on
        if format != "auto":
            self.kind, self.listed = format, list(files[at:])
            self._held = [None] * len(self.listed)
            return
        self.kind, data = _sniffed(files[at], head)
        self.listed, self._held = [files[at]], [data if self.kind == "qlog" else None]
        self.end = at + 1
        if self.kind == "qlog":  # its second file, to tell a folder from one file
            if self.end < len(files) and (more := _sniffed(files[self.end]))[0] == "qlog":
                self.listed.append(files[self.end])
                self._held.append(more[1])
                self.end += 1
                return
            self.end = len(files)
        while self.end < len(files) and file_format(files[self.end]) == self.kind:
            self.listed.append(files[self.end])
            self._held.append(None)
            self.end += 1
        self.end = len(files)

    def items(self, digests: ReadDigests | None = None) -> Iterator[tuple[str, bytes | None]]:
        """Each file of the run with its bytes when the sniff read a plain qlog file whole
        (else None), the rest of a qlog run sniffed one file at a time (``listed`` grows);
        ``digests``: those bytes' sha256 recorded for each such file."""
        for i, path in enumerate(self.listed):
            data, self._held[i] = self._held[i], None
            _record(digests, path, data)
            yield path, data
        while self.end < len(self.files):
            path = self.files[self.end]
            kind, data = _sniffed(path)
            if kind != self.kind:
                break
            self.listed.append(path)
            self.end += 1
            _record(digests, path, data)
            yield path, data
            del data
        self.end = len(self.files)


def _nothing(_path: Path) -> None:
    """What is done after each file when no progress is shown."""


def _record(digests: ReadDigests | None, path: str | Path, data: bytes | None) -> None:
    """The sha256 of a file's bytes ``data`` (read whole) into ``digests`` (when both)."""
    if digests is not None and data is not None:
        digests.add_read([path], data, [len(data)])


def file_format(path: str | Path) -> str:
    """:func:`detect_format` of ``path``, from one open and read when it is a Parquet file
    or a plain (not gzip) statemine log."""
    return _sniff(path) or detect_format(path)


def _sniffed(path: str | Path, head: bytes | None = None) -> tuple[str, bytes | None]:
    """:func:`file_format` of ``path`` (from ``head``, its first 64 KiB, when given) and
    its bytes when that read took all of a plain qlog file (else None)."""
    kind, data = _sniff_read(path) if head is None else _head_kind(path, head)
    return kind or detect_format(path), data


def _sniff(path: str | Path) -> str | None:
    """``"parquet"`` for a Parquet file, ``"statemine"`` when the file (not gzip) has a
    statemine line in its first 64 KiB, ``"qlog"`` when it is qlog, as
    :func:`detect_format` decides, from one read; else None (ask :func:`detect_format`)."""
    return _sniff_read(path)[0]


def _sniff_read(path: str | Path) -> tuple[str | None, bytes | None]:
    """:func:`_sniff`'s answer from one open and read, and the file's bytes when it is a
    plain qlog file under 64 KiB (read whole)."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:  # 4 bytes tell a Parquet file (a lab folder's runs: no 64 KiB read each)
            head = os.read(fd, 4)
            if head == _PARQUET_MAGIC:
                return "parquet", None
            while len(head) < _SNIFF_BYTES and (more := os.read(fd, _SNIFF_BYTES - len(head))):
                head += more
        finally:
            os.close(fd)
    except OSError:
        return None, None
    return _head_kind(path, head)


def _head_kind(path: str | Path, head: bytes) -> tuple[str | None, bytes | None]:
    """:func:`_sniff`'s answer from ``head``, a file's first 64 KiB (all of it when
    shorter), and ``head`` itself when it is a whole plain qlog file."""
    if head[:4] == _PARQUET_MAGIC:
        return "parquet", None
    if _is_statemine(path, head, gzip=False):
        return "statemine", None
    if head[:2] == b"\x1f\x8b":
        return None, None
    from .qlog import sniff_qlog

    if head.strip() and sniff_qlog(head):  # as detect_format decides
        return "qlog", head if len(head) < _SNIFF_BYTES else None
    return None, None


def _named_parquet(path: str | Path) -> bool:
    """Whether ``path`` is named as a Parquet file (``*.parquet``, as a lab run's
    ``traces.parquet``): only a shortcut, since the scan declines a Parquet file
    whatever its name, and a file so named but not Parquet is sniffed as any other."""
    return str(path).endswith(".parquet")


def _is_statemine(path: str | Path, head: bytes | None, gzip: bool = True) -> bool:
    """Whether :func:`detect_format` takes ``path`` for a statemine log, given its first
    64 KiB ``head`` (None: it cannot be read; then False); a gzip file is asked of
    :func:`detect_format` (when ``gzip``; else False)."""
    if head is None or head[:4] == _PARQUET_MAGIC:
        return False
    if head[:2] == b"\x1f\x8b":
        return gzip and detect_format(path) == "statemine"
    return b"STATEMINE t=" in head


def detect_format(path: str | os.PathLike) -> str:
    """The format of one file, from its first 64 KiB: statemine, qlog, ftrace or parquet.

    Raises :class:`InputError` for empty, binary or unrecognised files.
    """
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            if fh.read(4) == _PARQUET_MAGIC:
                return "parquet"
    except OSError as exc:
        raise read_error(path, exc) from None
    head = head_bytes(path)
    if not head.strip():
        raise InputError(path, None, "the file is empty")
    if b"STATEMINE t=" in head:
        return "statemine"
    from .qlog import sniff_qlog

    if sniff_qlog(head):
        return "qlog"
    from .ftrace import sniff_ftrace

    if sniff_ftrace(head):
        return "ftrace"
    if b"\x00" in head:
        raise InputError(path, None, "binary data, not a text log (no statemine lines, not qlog)")
    raise InputError(
        path,
        None,
        "cannot tell the format: no 'STATEMINE t=' line in the first 64 KiB, not qlog, "
        "no tcp_cong_state_set/tcp_probe ftrace line; "
        "give --format, or -r REGEX for another text log",
    )


def expand_paths(paths: str | os.PathLike | Sequence[str | os.PathLike]) -> list[Path]:
    """Files named by ``paths``; a folder stands for its log files (recursively, sorted),
    and a ``statemine lab`` output folder for its runs' ``traces.parquet`` files (not
    their raw logs, which hold the same events).

    Symbolic links to folders are followed, but every folder is walked once and every file
    listed once (both known by ``(st_dev, st_ino)``), so a link loop cannot repeat files
    or hang. Only regular files are read: a named pipe or device (which could block or
    never end) is an :class:`InputError`.
    """
    return [Path(f) for f in expand_files(paths)]


def expand_files(paths: str | os.PathLike | Sequence[str | os.PathLike]) -> list[str]:
    """:func:`expand_paths` as strings (each as ``str(Path)`` writes it), without a
    ``pathlib`` object per file of a folder (about 2 us each)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[str] = []
    seen: set[tuple[int, int]] = set()
    for p in map(Path, paths):
        st = stat_input(p)
        if stat.S_ISDIR(st.st_mode):
            found = _folder_files(str(p), seen)
            if not found:
                raise InputError(p, None, f"folder holds no log files ({', '.join(LOG_SUFFIXES)})")
            files.extend(found)
        elif _first_time(st, seen):  # a regular file
            files.append(str(p))
    if not files:
        raise UsageError("no input files given")
    return files


def _first_time(st: os.stat_result, seen: set[tuple[int, int]]) -> bool:
    """Whether the file or folder ``st`` describes is met for the first time (then noted)."""
    key = (st.st_dev, st.st_ino)
    if key in seen:
        return False
    seen.add(key)
    return True


def is_lab_output(folder: Path) -> bool:
    """Whether ``folder`` was written by ``statemine lab run`` (a manifest and runs/)."""
    return (folder / "manifest.json").is_file() and (folder / "runs").is_dir()


def _lab_runs(folder: Path) -> list[tuple[Path, os.stat_result]]:
    """A lab folder's ``runs/*/traces.parquet`` in sorted order, each with its ``stat``
    (as ``sorted(glob(...))`` lists them: links followed, missing ones left out)."""
    return [(Path(f), st) for f, st in _lab_run_files(folder)]


def _lab_run_files(folder: Path) -> list[tuple[str, os.stat_result]]:
    """:func:`_lab_runs` with each path as ``str(Path)`` writes it (no Path a run)."""
    runs = folder / "runs"
    try:
        with os.scandir(runs) as it:
            names = sorted(e.name for e in it)
    except OSError:  # as glob: an unreadable runs/ lists nothing
        return []
    found = []
    prefix = _child_prefix(str(runs))
    for name in names:  # a listed name holds no slash and is neither . nor ..
        path = f"{prefix}{name}/traces.parquet"
        try:
            found.append((path, os.stat(path)))
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP):
                raise read_error(path, exc) from None
    return found


def _folder_files(top: str, seen: set[tuple[int, int]]) -> list[str]:
    """The log files under ``top`` (a path as ``str(Path)`` writes it), depth first in
    sorted name order, each folder walked once (an explicit stack: no recursion limit), each
    file listed once; their paths as ``str(Path)`` writes them.

    A regular file is known from the folder listing alone (its type and inode number, as
    ``find`` does): no ``stat`` of each file (about 3 us each); links and folders are
    ``stat``-ed (links followed); a pipe, socket or device is passed over."""
    files: list[str] = []
    stack: list[tuple[str, Iterator[os.DirEntry], int]] = []

    def enter(folder: str, st: os.stat_result) -> None:
        if not _first_time(st, seen):
            return
        if is_lab_output(Path(folder)):
            files.extend(f for f, st in _lab_run_files(Path(folder)) if _first_time(st, seen))
            return
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=_NAME)
        except OSError as exc:
            raise InputError(
                folder, None, f"cannot list the folder: {exc.strerror or exc}"
            ) from None
        stack.append((_child_prefix(folder), iter(entries), st.st_dev))

    enter(top, stat_path(top))
    while stack:
        prefix, entries, dev = stack[-1]
        for entry in entries:  # up to a subfolder, walked first (depth first)
            if entry.is_file(follow_symlinks=False):  # from the listing: no stat
                if entry.name.lower().endswith(LOG_SUFFIXES):
                    key = (dev, entry.inode())  # as _first_time, inline: once per file
                    if key not in seen:
                        seen.add(key)
                        files.append(prefix + entry.name)
                continue
            if not (entry.is_dir(follow_symlinks=False) or entry.is_symlink()):
                continue  # a pipe, socket or device: never read
            try:
                st = entry.stat()  # a link (followed) or a folder
            except OSError:
                continue  # a dangling link, or a file gone meanwhile
            mode = st.st_mode
            if stat.S_ISDIR(mode):
                enter(prefix + entry.name, st)
                break
            name = entry.name
            if stat.S_ISREG(mode) and name.lower().endswith(LOG_SUFFIXES) and _first_time(st, seen):
                files.append(prefix + name)
        else:
            stack.pop()
    return files


def _child_prefix(folder: str) -> str:
    """What goes before a name in ``folder`` (``str(Path)`` of it) for ``str(Path)`` of
    the child: ``"."`` drops out, a root keeps its one slash.

    >>> _child_prefix("."), _child_prefix("/"), _child_prefix("logs")
    ('', '/', 'logs/')
    """
    if folder == ".":
        return ""
    return folder if folder.endswith("/") else folder + "/"


def _read_one(
    path: Path,
    format: str,
    source: str,
    names: Mapping[str, str] | None,
    implementation: str | None,
    derive_states: bool,
    advance: Callable[[int], None],
    ignore_nonmatching: bool = False,
) -> TraceSet:
    fmt = detect_format(path) if format == "auto" else format
    if fmt == "parquet":
        from ..traces import load

        ts = load(path)
    elif fmt == "statemine":
        from .statemine_log import read_statemine_log

        return read_statemine_log(path, source=source, on_progress=advance)
    elif fmt == "qlog":
        from .qlog import read_qlog

        ts = read_qlog(
            path,
            names=names,
            implementation=implementation,
            derive_states=derive_states,
            source=source,
        )
    elif fmt == "ftrace":
        from .ftrace import read_ftrace

        return read_ftrace(
            path, source=source, ignore_nonmatching=ignore_nonmatching, on_progress=advance
        )
    else:
        raise UsageError(f"format {fmt!r} is not read per file")
    advance(_size(path))
    return ts


def _concat(sets: list[TraceSet], warnings: Sequence[str] = ()) -> TraceSet:
    """One set of ``sets``, with ``warnings`` added to their own."""
    import json

    from ..traces import concat, merge_meta

    return concat(
        sets, merge_meta([*(s.meta for s in sets), {"warnings": json.dumps(list(warnings))}])
    )


def _no_congestion_data(exc: InputError) -> bool:
    """True for a qlog file that reads but holds no usable congestion state."""
    from .qlog import NoCongestionData

    return isinstance(exc, NoCongestionData)


def _source_names(files: Iterable[_P]) -> dict[_P, str]:
    """Short, unique names for files in trace ids: the file name, or the path when two
    inputs share a name (``files``: paths, or their strings as ``str(Path)`` writes them)."""
    files = list(files)
    names = [f.name if isinstance(f, Path) else f.rpartition("/")[2] for f in files]
    if len(set(names)) == len(names):  # no two alike (a folder's files): no count
        return dict(zip(files, name_texts(names)))
    clash = Counter(names)
    return {f: name_text(n if clash[n] == 1 else str(f)) for f, n in zip(files, names)}


def _size(path: str | Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def progress_reporter(
    files: Sequence[str | Path], enabled: bool
) -> AbstractContextManager[Callable[[int], None]]:
    """A context giving ``advance(bytes_done_in_current_file)``: a rich progress bar when
    ``enabled`` and the files hold at least :data:`PROGRESS_MIN_BYTES`, else a no-op."""
    if not enabled:  # no stat of every file then
        return nullcontext(lambda _done: None)
    total = sum(_size(f) for f in files)
    if total < PROGRESS_MIN_BYTES:
        return nullcontext(lambda _done: None)
    return _RichProgress(total)


class _RichProgress:
    def __init__(self, total: int) -> None:
        from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

        self._bar = Progress(
            "reading", BarColumn(), DownloadColumn(), TimeRemainingColumn(), transient=True
        )
        self._task = self._bar.add_task("read", total=total)
        self._base = 0
        self._last = 0
        self._shown = False

    def __enter__(self) -> Callable[[int], None]:
        return self._advance  # shown at the first bytes read: nothing when none are

    def _advance(self, done_in_file: int) -> None:
        if not self._shown:
            self._bar.__enter__()
            self._shown = True
        if done_in_file < self._last:  # a new file started
            self._base += self._last
        self._last = done_in_file
        self._bar.update(self._task, completed=self._base + done_in_file)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._shown:
            self._bar.__exit__(exc_type, exc, tb)
