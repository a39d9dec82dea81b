"""Small statemine logs opened, read and scanned in C (``Scanner.feed_files``, issue 29)
and folders listed as strings (``expand_files``). Each check compares with the per-file
readers (``read_statemine_log``: the block reader and ``Scanner.feed``; ``load``;
``read_qlog``) joined as ``statemine.read`` joins runs of one format."""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_many_files import assert_same_set, write_logs

import statemine
from statemine.errors import InputError
from statemine.parse import _concat, _source_names, detect_format, expand_files, expand_paths
from statemine.parse import statemine_log as sl
from statemine.parse._linescan import Scanner
from statemine.traces import concat, load

QLOG = Path(__file__).parent / "data" / "qlog" / "draft01.qlog"
MAX_LINE = 1 << 20
CHUNK = 16 << 20


def fed_one_by_one(paths: list, chunk: int = CHUNK) -> tuple:
    """The scanner's state after next_file + feed of each whole file, in Python."""
    scan = Scanner(max_time=sl.MAX_TIME_S)
    for i, p in enumerate(paths):
        if i:
            scan.next_file()
        with open(p, "rb") as fh:
            assert scan.feed(fh.read(), MAX_LINE) is None
    return scan.take(), scan.traces(), scan.names()


def test_feed_files_is_feed_of_each_whole_file(tmp_path):
    files = [str(f) for f in write_logs(tmp_path, np.random.default_rng(11), 9)]
    odd = os.fsdecode(os.fsencode(str(tmp_path)) + b"/odd\xff.log")  # not UTF-8
    with open(os.fsencode(odd), "w") as fh:
        fh.write("STATEMINE t=1 conn=z role=client state=Recovery cwnd=4")  # no newline
    files.insert(4, odd)
    scan = Scanner(max_time=sl.MAX_TIME_S)
    at, starts, sizes = 0, [], []
    while at < len(files):  # a window of 3 rows' worth at a time
        at, status, begun, size, error, kept = scan.feed_files(files, at, MAX_LINE, CHUNK, True, 3)
        assert (status, error, kept) == (sl._FF_OK, None, None)
        starts += np.frombuffer(begun, np.int64).tolist()
        sizes += np.frombuffer(size, np.int64).tolist()
    want_rows, want_traces, want_names = fed_one_by_one(files)
    assert scan.take() == want_rows
    assert scan.traces() == want_traces and scan.names() == want_names
    assert sizes == [os.path.getsize(f) for f in files]
    conns = want_traces[0]
    assert len(starts) == len(files) and starts[0] == 0 and sorted(starts) == starts
    assert starts[4] < len(conns) and conns[starts[4]] == "z"
    bytes_paths = [os.fsencode(f) for f in files]  # bytes and PathLike are paths too
    other = Scanner(max_time=sl.MAX_TIME_S)
    assert other.feed_files(bytes_paths, 0, MAX_LINE, CHUNK, True, 1 << 30)[:2] == (len(files), 0)
    assert other.take() == want_rows
    other = Scanner(max_time=sl.MAX_TIME_S)
    assert other.feed_files(list(map(Path, files)), 0, MAX_LINE, CHUNK, True, 1 << 30)[0] == 10


def test_feed_files_leaves_to_python_what_it_cannot_take_whole(tmp_path):
    log = tmp_path / "a.log"
    log.write_text("STATEMINE t=0 conn=a state=X\n")
    cases = {
        "gzip": gzip.compress(log.read_bytes()),
        "parquet": b"PAR1 STATEMINE t=0 conn=a state=X\n",
        "no marker": b"just text\n",
        "empty": b"",
        "64 KiB": b"STATEMINE t=0 conn=a state=X\n" + b"x" * (sl.SNIFF_BYTES - 29),
    }
    for what, content in cases.items():
        other = tmp_path / f"{what}.log"
        other.write_bytes(content)
        scan = Scanner()
        got = scan.feed_files([str(log), str(other), str(log)], 0, MAX_LINE, CHUNK, True, 1 << 30)
        assert got[:2] == (1, sl._FF_FALLBACK), what
        assert got[4] == content[: sl.SNIFF_BYTES], what  # its head: not read again
        assert scan.n_traces == 1 and scan.next_line == 2, what  # file 2 not begun
    missing = str(tmp_path / "missing.log")
    nul = "a\0b.log"
    for name in (missing, nul):  # None: opened again in Python, which says why it fails
        got = Scanner().feed_files([name], 0, MAX_LINE, CHUNK, True, 1)
        assert got == (0, 1, b"", b"", None, None)
    # over chunk_bytes: left to the block reader
    assert Scanner().feed_files([str(log)], 0, MAX_LINE, 8, True, 1)[:2] == (0, 1)
    # without a sniff a file without lines is scanned and said to have none
    got = Scanner().feed_files([str(log), missing], 0, MAX_LINE, CHUNK, False, 1 << 30)
    assert got[:2] == (1, sl._FF_FALLBACK)
    other = tmp_path / "no marker.log"
    got = Scanner().feed_files([str(log), str(other)], 0, MAX_LINE, CHUNK, False, 1 << 30)
    assert got[:2] == (1, sl._FF_NO_LINES)
    with pytest.raises(TypeError):
        Scanner().feed_files([3], 0, MAX_LINE, CHUNK, True, 1)
    with pytest.raises(IndexError):
        Scanner().feed_files([str(log)], 2, MAX_LINE, CHUNK, True, 1)


def test_feed_files_error_is_feeds_error(tmp_path):
    good, bad = tmp_path / "a.log", tmp_path / "b.log"
    good.write_text("STATEMINE t=0 conn=a state=X\n")
    bad.write_text("x\nSTATEMINE t=2 conn=a state=X\nSTATEMINE t=1 conn=a state=Y cwnd=q\n")
    scan = Scanner()
    at, status, _, _, error, _ = scan.feed_files(
        [str(good), str(bad)], 0, MAX_LINE, CHUNK, True, 1 << 30
    )
    assert (at, status) == (1, sl._FF_ERROR)
    want = Scanner()
    want.feed(good.read_bytes(), MAX_LINE)
    want.next_file()
    assert error == want.feed(bad.read_bytes(), MAX_LINE)
    assert error is not None and error["line"] == 3


def lab_mix(folder: Path, outside: Path, n_logs: int) -> tuple[list[Path], list[str]]:
    """A folder of ``n_logs`` small statemine logs with other files among them: a saved
    trace set, a qlog file, a gzip log, a log over 64 KiB, one without its last newline,
    CRLF line ends, a link to a log of the folder (listed once) and one to a log outside it
    (followed). The files ``statemine.read`` lists, in order, and their formats."""
    folder.mkdir()
    logs = write_logs(folder, np.random.default_rng(29), n_logs)
    logs[10].write_text(logs[10].read_text().rstrip("\n"))
    logs[11].write_bytes(logs[11].read_bytes().replace(b"\n", b"\r\n"))
    big = "".join(f"STATEMINE t={i} conn=big state=Recovery cwnd={i}\n" for i in range(3000))
    logs[n_logs * 7 // 20].write_text(big)

    def beside(k: int, suffix: str) -> Path:  # listed right after logs[k]
        return folder / f"{logs[k].stem}0{suffix}"

    beside(n_logs // 4, ".log.gz").write_bytes(gzip.compress(logs[n_logs // 4].read_bytes()))
    statemine.save(
        sl.read_statemine_log(logs[3], source="saved"), beside(n_logs * 9 // 20, ".parquet")
    )
    beside(n_logs * 3 // 5, ".qlog").write_bytes(QLOG.read_bytes())
    outside.write_text("STATEMINE t=0 conn=out state=SlowStart\n")
    beside(n_logs * 13 // 20, "-out.log").symlink_to(outside)
    (folder / "zz-again.log").symlink_to(logs[5])  # the same file: listed once
    names = sorted(p.name for p in folder.iterdir() if p.name != "zz-again.log")
    listed = [folder / n for n in names]
    return listed, [detect_format(p) for p in listed]


def by_runs(listed: list[Path], formats: list[str], one_by_one: bool) -> statemine.TraceSet:
    """The set statemine.read makes, read without ``Scanner.feed_files``: each run of
    statemine logs through the block reader (``chunk_bytes`` 16: no file is read whole),
    or (``one_by_one``) each log alone and the run joined with concat; any other file
    alone; all joined."""
    from statemine.parse.qlog import read_qlog

    sources = _source_names(listed)
    sets: list[statemine.TraceSet] = []
    run: list[Path] = []
    for f, fmt in [*zip(listed, formats), (listed[-1], "end")]:
        if fmt == "statemine":
            run.append(f)
            continue
        if run and one_by_one:
            each = [sl.read_statemine_log(g, source=sources[g]) for g in run]
            sets.append(each[0] if len(each) == 1 else concat(each))
        elif run:
            sets.append(sl.read_statemine_logs(run, [sources[g] for g in run], chunk_bytes=16))
        run = []
        if fmt == "parquet":
            sets.append(load(f))
        elif fmt == "qlog":
            sets.append(read_qlog(f, source=sources[f]))
    return _concat(sets)


@pytest.fixture(scope="module")
def mix(tmp_path_factory):
    top = tmp_path_factory.mktemp("mix")
    listed, formats = lab_mix(top / "logs", top / "outside.log", 2000)
    return top / "logs", listed, formats


def test_a_mixed_folder_of_2000_logs_reads_as_the_block_reader_reads_it(mix, monkeypatch):
    folder, listed, formats = mix
    assert expand_paths(folder) == listed
    assert formats.count("statemine") == 2002 and set(formats) == {"statemine", "parquet", "qlog"}
    want = by_runs(listed, formats, one_by_one=False)
    assert_same_set(statemine.read(folder), want)
    monkeypatch.setattr(sl, "GATHER_ROWS", 7)  # blocks handed over every few files
    assert_same_set(statemine.read(folder), want)


def test_a_mixed_folder_reads_as_its_files_one_by_one(tmp_path):
    listed, formats = lab_mix(tmp_path / "logs", tmp_path / "outside.log", 40)
    assert_same_set(statemine.read(tmp_path / "logs"), by_runs(listed, formats, one_by_one=True))


def test_a_bad_line_in_file_1500_is_named(tmp_path):
    logs = write_logs(tmp_path, np.random.default_rng(15), 2000)
    bad = logs[1500]
    bad.write_text(bad.read_text() + "STATEMINE t=1e99 conn=c0 state=Recovery\n")
    with pytest.raises(InputError) as alone:
        sl.read_statemine_log(bad)
    with pytest.raises(InputError) as err:
        statemine.read(tmp_path)
    assert (err.value.file, err.value.line, str(err.value)) == (
        str(bad),
        alone.value.line,
        str(alone.value),
    )
    bad.write_text("")  # an empty file: the error of format detection, as before
    with pytest.raises(InputError) as err:
        statemine.read(tmp_path)
    with pytest.raises(InputError) as alone:
        detect_format(bad)
    assert str(err.value) == str(alone.value)


def test_expand_files_writes_paths_as_pathlib_does(tmp_path, monkeypatch):
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    for name in ("a.log", "sub/b.log", "sub/deeper/c.txt", "sub/skip.csv"):
        (tmp_path / name).write_text("STATEMINE t=0 conn=a state=X\n")
    monkeypatch.chdir(tmp_path)
    cases = {
        ".": ["a.log", "sub/b.log", "sub/deeper/c.txt"],
        "./sub/": ["sub/b.log", "sub/deeper/c.txt"],
        "sub//deeper": ["sub/deeper/c.txt"],
        str(tmp_path) + "/": [
            f"{tmp_path}/{n}" for n in ("a.log", "sub/b.log", "sub/deeper/c.txt")
        ],
        "./a.log": ["a.log"],
    }
    for given, want in cases.items():
        assert expand_files(given) == want, given
        assert expand_paths(given) == [Path(w) for w in want]
        assert [str(Path(f)) for f in want] == want


def test_progress_counts_each_files_bytes(tmp_path):
    """on_progress sees each file's bytes (a gzip file's compressed ones), as before."""
    files = write_logs(tmp_path, np.random.default_rng(5), 5)
    packed = tmp_path / "run002.log.gz"
    packed.write_bytes(gzip.compress(files[2].read_bytes()))
    files[2] = packed
    files[3].write_text("".join(f"STATEMINE t={i} conn=b state=X\n" for i in range(4000)))
    seen: list[int] = []
    assert isinstance(list(sl.scan_files(files, seen.append))[-1], sl.ScanEnd)
    sizes = [f.stat().st_size for f in files]
    assert sizes[3] > sl.SNIFF_BYTES  # the block reader's: after its read, and at the end
    assert seen == [*sizes[:3], sizes[3], sizes[3], sizes[4]]


class _CountedEntry:
    """An ``os.DirEntry`` whose ``stat()`` calls are counted (by name)."""

    def __init__(self, entry: os.DirEntry, stats: list[str]) -> None:
        self._entry, self._stats = entry, stats
        self.name, self.path = entry.name, entry.path

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        self._stats.append(self.name)
        return self._entry.stat(follow_symlinks=follow_symlinks)

    def __getattr__(self, attr: str):
        return getattr(self._entry, attr)


def test_a_folders_regular_files_are_listed_without_a_stat_each(tmp_path, monkeypatch):
    """The walk knows a regular file from the listing (type, inode), as ``find`` does: only
    links and folders are stat-ed; the files listed are the same, hard links once."""
    top = tmp_path / "logs"
    (top / "sub").mkdir(parents=True)
    for i in range(20):
        (top / f"f{i:02d}.log").write_text(f"STATEMINE t=0 conn=c{i} state=X\n")
    (top / "sub" / "b.log").write_text("STATEMINE t=0 conn=b state=X\n")
    os.link(top / "f03.log", top / "sub" / "hard.log")  # the same file: listed once
    (top / "sub" / "link.log").symlink_to(top / "f05.log")  # likewise
    (top / "sub" / "pipe.log").unlink(missing_ok=True)
    os.mkfifo(top / "sub" / "pipe.log")  # not a regular file: not listed
    stats: list[str] = []
    scandir = os.scandir

    class Counted:
        def __init__(self, path):
            self._it = scandir(path)

        def __enter__(self):
            return (_CountedEntry(e, stats) for e in self._it.__enter__())

        def __exit__(self, *exc):
            return self._it.__exit__(*exc)

    monkeypatch.setattr(os, "scandir", Counted)
    files = expand_files([top, top / "f07.log"])
    assert files == [str(top / f"f{i:02d}.log") for i in range(20)] + [str(top / "sub/b.log")]
    assert sorted(stats) == ["link.log", "sub"]


def test_feed_files_hands_back_the_bytes_it_read_when_asked(tmp_path):
    """With ``keep`` the files fed come back as read, one after another (for their sha256:
    no second read), and a call stops once they reach ``chunk_bytes`` (memory bounded)."""
    files = [str(f) for f in write_logs(tmp_path, np.random.default_rng(3), 12)]
    content = [Path(f).read_bytes() for f in files]
    whole = b"".join(content)
    at, status, _, sizes, _, kept = Scanner().feed_files(
        files, 0, MAX_LINE, CHUNK, True, 1 << 30, True
    )
    assert (at, status, kept) == (12, sl._FF_OK, whole)
    assert np.frombuffer(sizes, np.int64).tolist() == [len(c) for c in content]
    limit = len(content[0]) + len(content[1])  # the call stops at the file reaching it
    scan, got, at = Scanner(), b"", 0
    while at < len(files):
        start = at
        at, status, _, sizes, _, kept = scan.feed_files(
            files, at, MAX_LINE, limit, True, 1 << 30, True
        )
        assert status == sl._FF_OK and kept == b"".join(content[start:at])
        assert len(kept) - len(content[at - 1]) < limit  # one file past the limit at most
        got += kept
    assert got == whole
    assert scan.take() == fed_one_by_one(files)[0]


def test_feed_files_opens_names_of_every_shape(tmp_path, monkeypatch):
    """Files are opened relative to their folder (kept open from file to file): a bare name
    (the working folder), relative and absolute paths, a folder reached through a link, a
    folder changing back and forth, and a name under a missing folder (left to Python)."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "via").symlink_to(tmp_path / "sub")
    for i, name in enumerate(("a.log", "sub/b.log", "sub/c.log")):
        (tmp_path / name).write_text(f"STATEMINE t={i} conn=c{i} state=X\n")
    monkeypatch.chdir(tmp_path)
    names = ["a.log", "sub/b.log", "sub/c.log", str(tmp_path / "a.log"), "via/c.log", "./a.log"]
    names += ["sub//b.log", "a.log", "sub/c.log"]
    scan = Scanner()
    at, status, _, sizes, _, _ = scan.feed_files(names, 0, MAX_LINE, CHUNK, True, 1 << 30)
    assert (at, status) == (len(names), sl._FF_OK)
    assert np.frombuffer(sizes, np.int64).tolist() == [os.path.getsize(n) for n in names]
    assert scan.take() == fed_one_by_one(names)[0]
    got = Scanner().feed_files(["sub/b.log", "gone/b.log"], 0, MAX_LINE, CHUNK, True, 1 << 30)
    assert got[:2] == (1, sl._FF_FALLBACK) and got[4] is None


def _closes_range(call: str, fd: int) -> bool:
    """Whether strace's line ``call`` is a ``close_range`` that closed ``fd``."""
    found = re.match(r"close_range\((\d+), (\d+), 0\)\s*= 0", call)
    return found is not None and int(found[1]) <= fd <= int(found[2])


def test_a_small_log_costs_openat_two_reads_and_close(tmp_path):
    """Syscalls a small file (strace, counted in a child): one ``openat``, two ``read``s (the
    second finds the end: a short read is not taken as the end, as FUSE and network file
    systems may return one mid-file), closed with the others of its batch (one
    ``close_range`` when their numbers run on); a file that fills the 64 KiB head is read
    once here and on to its end by the Python side."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed: the syscalls cannot be counted")
    logs = tmp_path / "logs"
    logs.mkdir()
    for i in range(20):
        (logs / f"c{i:02d}.log").write_text(f"STATEMINE t={i} conn={i} state=Open\n" * 40)
    big = tmp_path / "big.log"
    big.write_bytes(b"STATEMINE t=1 conn=b state=Open\n" * 4096)  # 128 KiB: over the head
    code = (
        "import sys\n"
        "from statemine.parse import statemine_log as sl\n"
        "from statemine.parse._linescan import Scanner\n"
        "files = sys.argv[1:]\n"
        "out = Scanner(max_time=sl.MAX_TIME_S).feed_files(files, 0, 1 << 20, 16 << 20, True, 1 << 16)\n"
        "print(out[0], out[1], len(out[4] or b''))\n"
    )
    files = [*sorted(str(f) for f in logs.iterdir()), str(big)]
    trace = tmp_path / "trace.txt"
    run = subprocess.run(
        [
            strace,
            "-f",
            "-e",
            "trace=openat,read,close,close_range",
            "-o",
            str(trace),
            sys.executable,
            "-c",
            code,
            *files,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.stdout.split() == ["20", str(sl._FF_FALLBACK), "65536"]
    calls = [re.sub(r"^\d+\s+", "", c) for c in trace.read_text().splitlines()]  # no pid
    per_file = {}
    for f in files:
        name = os.path.basename(f)
        opens = [i for i, c in enumerate(calls) if c.startswith("openat(") and f'"{name}"' in c]
        assert len(opens) == 1, (name, opens)  # opened once, relative to its folder
        fd = calls[opens[0]].rsplit("= ", 1)[1].strip()
        reads = 0
        for c in calls[opens[0] + 1 :]:
            if c.startswith(f"close({fd})") or _closes_range(c, int(fd)):
                break
            reads += c.startswith(f"read({fd},")
        per_file[name] = reads
    assert per_file.pop("big.log") == 1  # the head filled: the Python side reads on
    assert set(per_file.values()) == {2}, per_file
    assert sum(c.startswith("close_range(") for c in calls) >= 1


def test_names_checked_at_once_escape_as_one_by_one():
    """The joined-ASCII shortcuts (source names, a run's names, the lab-run check) give
    what the call a name gave, with non-UTF-8 names and a newline inside a name."""
    from statemine.escape import name_text, name_texts
    from statemine.parse.repeats import RUN_TRACES, _may_name_a_run

    odd = os.fsdecode(b"run\xff.log")
    for names in (["a.log", "b.log"], ["a.log", odd], [odd], ["é.log", "b.log"], []):
        assert name_texts(list(names)) == [name_text(n) for n in names]
        files = [f"dir/{n}" for n in names]
        assert _source_names(files) == {f: name_text(n) for f, n in zip(files, names)}
    for files in (
        ["a/b.log"],
        ["runs/1/traces.parquet"],
        ["x/a.log", "runs/1/traces.parquet", "y.log"],
        [Path("runs/1/traces.parquet")],
        ["xtraces.parquet"],
        ["traces.parquet.log"],
        [],
    ):
        assert _may_name_a_run(files) == any(os.fspath(f).endswith(RUN_TRACES) for f in files)
    assert _may_name_a_run(["a/traces.parquet\nb.log"])  # needless True: only a shortcut


def test_feed_files_closes_every_file_and_no_other(tmp_path):
    """Each file read is closed, at the end of its batch, also where other descriptors sit
    between its numbers (closed one by one then) and when a file stops the call; the
    caller's own descriptors stay open."""
    files = [str(f) for f in write_logs(tmp_path, np.random.default_rng(12), 150)]
    (tmp_path / "empty.log").write_text("no lines\n")
    before = set(os.listdir("/proc/self/fd"))
    holes = [os.open(files[0], os.O_RDONLY) for _ in range(6)]
    for fd in holes[::2]:
        os.close(fd)  # gaps below: the scan's descriptors do not run on
    kept = holes[1::2]
    try:
        for paths in (files, [*files[:70], str(tmp_path / "empty.log"), *files[70:]]):
            scan = Scanner(max_time=sl.MAX_TIME_S)
            at, status, *_ = scan.feed_files(paths, 0, MAX_LINE, CHUNK, True, 1 << 30)
            assert (at, status) in ((len(files), sl._FF_OK), (70, sl._FF_FALLBACK))
            assert set(os.listdir("/proc/self/fd")) == before | {str(fd) for fd in kept}
        for fd in kept:
            assert os.fstat(fd).st_size == os.path.getsize(files[0])
    finally:
        for fd in kept:
            os.close(fd)
