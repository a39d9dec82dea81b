"""Many statemine logs read in one pass (issue 29): one scanner across files, rows of
small files gathered into one block, one TraceSet built and validated once. Each check
compares with reading the files one at a time (the per-file reader and concat), or with
one log holding the same lines."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import statemine
from statemine.errors import InputError
from statemine.parse import _source_names
from statemine.parse import statemine_log as sl
from statemine.parse._linescan import Scanner
from statemine.parse.lines import iter_blocks
from statemine.stats.stream import summarize_logs
from statemine.traces import concat

NAMES = ("SlowStart", "Recovery", "CongestionAvoidance", "ApplicationLimited")


def write_logs(folder, rng: np.random.Generator, n_files: int) -> list:
    """Files with varied names (sets and orders), metrics, extra fields, roles, Close lines."""
    files = []
    for i in range(n_files):
        names = list(rng.permutation(NAMES)[: int(rng.integers(1, len(NAMES) + 1))])
        metrics = [k for k in sl.NUMERIC_KEYS if rng.random() < 0.4]
        lines: list[str] = []
        clock: dict[str, float] = {}
        for _ in range(int(rng.integers(1, 40))):
            conn = f"c{int(rng.integers(3))}"
            clock[conn] = clock.get(conn, 0.0) + float(rng.exponential(0.1))
            role = " role=server" if conn == "c1" else ""
            what = (
                "event=Close" if rng.random() < 0.05 else f"state={names[rng.integers(len(names))]}"
            )
            extra = "".join(
                f" {k}={int(rng.integers(1, 9))}" for k in metrics if rng.random() < 0.7
            )
            extra += " note=x" if rng.random() < 0.1 else ""
            lines.append(f"pre STATEMINE t={clock[conn]:.6f} conn={conn}{role} {what}{extra}\n")
            if rng.random() < 0.1:
                lines.append("not a statemine line\n")
        path = folder / f"run{i:03d}.log"
        path.write_text("".join(lines))
        files.append(path)
    return files


def one_at_a_time(files: list) -> statemine.TraceSet:
    """The reading before issue 29: each file alone, then concat."""
    sources = _source_names(files)
    sets = [sl.read_statemine_log(f, source=sources[f]) for f in files]
    return sets[0] if len(sets) == 1 else concat(sets)


def assert_same_set(got: statemine.TraceSet, want: statemine.TraceSet) -> None:
    pd.testing.assert_frame_equal(got.events, want.events, check_exact=True)
    pd.testing.assert_frame_equal(got.traces, want.traces, check_exact=True)
    for column in got.events.columns:
        if isinstance(want.events[column].dtype, pd.CategoricalDtype):
            assert list(got.events[column].cat.categories) == list(
                want.events[column].cat.categories
            ), column
    assert got.meta == want.meta


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10**6), n_files=st.integers(1, 12), gather=st.sampled_from([1, 50, 1 << 16])
)
def test_read_of_many_files_equals_each_file_joined(
    tmp_path_factory, monkeypatch_module, seed, n_files, gather
):
    monkeypatch_module.setattr(sl, "GATHER_ROWS", gather)
    files = write_logs(tmp_path_factory.mktemp("logs"), np.random.default_rng(seed), n_files)
    assert_same_set(statemine.read(files), one_at_a_time(files))


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_same_names_in_other_orders_keep_the_first_files_order(tmp_path):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text("STATEMINE t=0 conn=x state=Recovery\nSTATEMINE t=1 conn=x state=SlowStart\n")
    b.write_text("STATEMINE t=0 conn=x state=SlowStart\nSTATEMINE t=1 conn=x state=Recovery\n")
    ts = statemine.read([a, b])
    assert list(ts.events["state"].cat.categories) == ["Recovery", "SlowStart"]
    assert_same_set(ts, one_at_a_time([a, b]))


def test_many_files_stream_as_their_lines_in_one_log(tmp_path):
    rng = np.random.default_rng(7)
    files = write_logs(tmp_path, rng, 40)
    whole = tmp_path / "whole" / "all.log"
    whole.parent.mkdir()
    with whole.open("w") as out:  # each file's connections renamed apart, file by file
        for i, f in enumerate(files):
            out.write(f.read_text().replace(" conn=c", f" conn=f{i}c"))
    many = summarize_logs(files, n_boot=200, seed=1)
    one = summarize_logs(whole, n_boot=200, seed=1)
    pd.testing.assert_frame_equal(many.states, one.states, check_exact=True)
    pd.testing.assert_frame_equal(many.transitions, one.transitions, check_exact=True)
    assert (many.n_traces, many.n_events) == (one.n_traces, one.n_events)


def test_one_scanner_keeps_files_apart():
    scan = Scanner()
    assert (
        scan.feed(b"STATEMINE t=5 conn=a state=X\nSTATEMINE t=6 conn=b state=Y\n", 1 << 20) is None
    )
    scan.next_file()
    assert scan.next_line == 1
    # same connection in the next file: a new trace, and its earlier time is no error
    assert scan.feed(b"junk\nSTATEMINE t=1 conn=a state=Y\n", 1 << 20) is None
    assert (scan.n_traces, scan.n_rows) == (3, 3)
    out = scan.take()
    assert np.frombuffer(out["trace"], np.int32).tolist() == [0, 1, 2]
    assert np.frombuffer(out["line"], np.int64).tolist() == [1, 2, 2]
    assert scan.n_rows == 0 and scan.take()["time"] == b""
    conns, roles, info = scan.traces()
    assert conns == ["a", "b", "a"] and roles == [None, None, None]
    assert info == scan.info()
    assert scan.names() == ["X", "Y"]


@pytest.mark.parametrize("bad", [1, 4])
def test_errors_name_the_file_and_its_line(tmp_path, bad):
    files = write_logs(tmp_path, np.random.default_rng(1), 6)
    files[bad].write_text("STATEMINE t=0 conn=a state=X\nSTATEMINE t=zz conn=a state=X\n")
    with pytest.raises(InputError) as err:
        statemine.read(files)
    assert (err.value.file, err.value.line) == (str(files[bad]), 2)
    with pytest.raises(InputError) as err:
        summarize_logs(files)
    assert (err.value.file, err.value.line) == (str(files[bad]), 2)


def test_a_file_without_statemine_lines_is_named(tmp_path):
    files = write_logs(tmp_path, np.random.default_rng(2), 5)
    files[3].write_text("STATEMINE t=0 conn=a state=X\n")
    empty = tmp_path / "run003b.log"
    empty.write_text("nothing here\n")
    with pytest.raises(InputError, match="no statemine lines") as err:
        summarize_logs([*files[:4], empty, *files[4:]])
    assert err.value.file == str(empty)


def test_too_many_states_names_the_file_of_the_crossing_line(tmp_path):
    files = []
    for i in range(4):
        f = tmp_path / f"r{i}.log"
        f.write_text("".join(f"STATEMINE t={j} conn=a state=S{i}_{j}\n" for j in range(3)))
        files.append(f)
    with pytest.raises(InputError) as err:
        summarize_logs(files, max_states=7)
    assert (err.value.file, err.value.line) == (str(files[2]), 2)  # the 8th name: r2, its 2nd line


def test_iter_blocks_refuses_a_short_buffer(tmp_path):
    f = tmp_path / "a.log"
    f.write_text("x\n")
    with pytest.raises(ValueError, match="needs"):
        next(iter_blocks(f, chunk_bytes=8, max_line_bytes=8, buffer=bytearray(16)))
    assert (
        bytes(next(iter_blocks(f, chunk_bytes=8, max_line_bytes=8, buffer=bytearray(17)))) == b"x\n"
    )


def by_detected_runs(files: list) -> statemine.TraceSet:
    """The reading of mixed inputs before the sniff moved into the scan: each file's format
    from :func:`detect_format`, runs of statemine logs read together, other files alone."""
    from statemine.parse import _concat, detect_format
    from statemine.traces import load

    sources = _source_names(files)
    sets, run = [], []
    for f in [*files, None]:
        if f is not None and detect_format(f) == "statemine":
            run.append(f)
            continue
        if run:
            sets.append(sl.read_statemine_logs(run, [sources[g] for g in run]))
            run = []
        if f is not None:
            sets.append(load(f))
    return sets[0] if len(sets) == 1 else _concat(sets)


def test_mixed_inputs_read_as_runs_of_their_detected_formats(tmp_path):
    import gzip

    files = write_logs(tmp_path, np.random.default_rng(3), 7)
    saved = tmp_path / "saved.parquet"
    statemine.save(sl.read_statemine_log(files[0], source="other"), saved)
    packed = tmp_path / "run002.log.gz"
    packed.write_bytes(gzip.compress(files[2].read_bytes()))
    files[4].write_text(files[4].read_text().rstrip("\n"))  # no newline at the end
    for mixed in (
        [files[0], files[1], saved, packed, files[3], files[4]],
        [files[0], saved, files[1]],
        [saved, files[5], files[6]],
        [files[1], packed],
        [packed, files[5], saved],
    ):
        assert_same_set(statemine.read(mixed), by_detected_runs(mixed))


def test_a_small_log_is_opened_once(tmp_path, monkeypatch):
    """The format sniff sees a small file's bytes from the scan's own read (issue 29); a
    small plain log is opened, read and scanned in C (``Scanner.feed_files``), so Python
    opens none of them; a gzip one is left to Python."""
    import builtins
    import gzip
    import os

    files = write_logs(tmp_path, np.random.default_rng(4), 5)
    packed = tmp_path / "run002.log.gz"
    packed.write_bytes(gzip.compress(files[2].read_bytes()))
    files[2].unlink()
    files[2] = packed
    want = by_detected_runs(files)
    opened: list[str] = []
    real_open, real_os_open = builtins.open, os.open

    def counting_open(file, *args, **kwargs):
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    def counting_os_open(path, *args, **kwargs):
        opened.append(str(path))
        return real_os_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(os, "open", counting_os_open)
    got = statemine.read(tmp_path)
    monkeypatch.undo()
    assert_same_set(got, want)
    assert [p for p in opened if p.endswith(".log")] == []
    assert str(packed) in opened  # the gzip log: head, then its sniff, from Python


def test_a_log_named_parquet_is_read_as_a_log(tmp_path):
    """The scan is skipped for a file named ``*.parquet`` (a lab run's name) without opening
    it; a statemine log so named is still told by its bytes and read as the others are."""
    files = write_logs(tmp_path, np.random.default_rng(7), 3)
    renamed = files[0].with_name("a-log.parquet")
    files[0].rename(renamed)
    files[0] = renamed
    files.sort()
    assert str(files[0]).endswith(".parquet")
    assert_same_set(statemine.read(files), by_detected_runs(files))


@pytest.mark.parametrize("max_line", [8, 30, 1 << 20])
def test_a_file_read_whole_is_cut_as_the_block_reader_cuts_it(tmp_path, max_line):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text("STATEMINE t=0 conn=x state=Recovery\n")
    b.write_text("STATEMINE t=0 conn=y state=SlowStart\nSTATEMINE t=1 conn=y state=Recovery")

    def read(sniff):
        try:
            ts, n = sl.read_statemine_run([a, b], ["a", "b"], sniff, max_line_bytes=max_line)
        except InputError as exc:
            return (str(exc.file), exc.line, str(exc))
        assert n == 2 and ts is not None
        return ts

    got, want = read(lambda _path, head: head is not None), read(None)
    if isinstance(want, tuple):
        assert got == want
    else:
        assert_same_set(got, want)


@pytest.mark.parametrize("one_conn", [True, False])
def test_rows_grouped_by_trace_already_are_not_sorted(tmp_path, monkeypatch, one_conn):
    """Files of one connection each (or one file of connections one after another) give
    rows grouped by trace already: the set is built without the grouping sort, and equals
    the files read one at a time and joined (interleaved connections still sort)."""
    import statemine.arrays

    rng = np.random.default_rng(4)
    files = write_logs(tmp_path, rng, 30)
    for f in files:  # one connection a file: its lines in order, roles and Close lines kept
        lines = f.read_text().splitlines(keepends=True)
        f.write_text("".join(ln for ln in lines if " conn=c0 " in ln) or lines[0])
    if not one_conn:
        files = files[:1]
        files[0].write_text("".join(f"STATEMINE t={i} conn=c{i // 3} state=X\n" for i in range(9)))
    want = one_at_a_time(files)
    sorts: list[int] = []
    real = statemine.arrays.group_order

    def counted(codes):
        sorts.append(len(codes))
        return real(codes)

    monkeypatch.setattr(statemine.arrays, "group_order", counted)
    assert_same_set(statemine.read(files), want)
    assert sorts == []
    files[0].write_text(
        "STATEMINE t=0 conn=a state=X\nSTATEMINE t=0 conn=b state=X\nSTATEMINE t=1 conn=a state=Y\n"
    )  # interleaved: sorted
    want = one_at_a_time(files)
    sorts.clear()
    assert_same_set(statemine.read(files), want)
    assert sorts == [sum(len(f.read_text().splitlines()) for f in files)]


def test_infer_walks_a_folder_once(tmp_path, monkeypatch):
    """``infer`` lists a folder for the streamed path; when a file is not a statemine log
    (here qlog: read whole instead) that listing is handed to ``read``, not made again."""
    from pathlib import Path

    from statemine import parse
    from statemine.commands import infer_to_dir

    logs = tmp_path / "logs"
    logs.mkdir()
    write_logs(logs, np.random.default_rng(5), 3)
    qlog = Path(__file__).parent / "data" / "qlog" / "draft01.qlog"
    (logs / "zz.qlog").write_bytes(qlog.read_bytes())
    want = infer_to_dir(list(parse.expand_files(logs)))
    walked: list[str] = []
    real = parse._folder_files

    def counting(top, seen):
        walked.append(top)
        return real(top, seen)

    monkeypatch.setattr(parse, "_folder_files", counting)
    got = infer_to_dir(logs)
    assert walked == [str(logs)]
    assert got.n_traces == want.n_traces and got.n_events == want.n_events
    for key in want.states:
        assert np.array_equal(got.states[key], want.states[key]), key


def test_read_qlog_files_takes_one_iterable_of_triples_a_file_at_a_time():
    """``read_qlog_files`` takes ``(path, source, bytes)`` per file from one iterable (was
    three parallel ones split with ``itertools.tee``), asked for the next file only once
    the last is read; bytes given are read instead of the file. Equal to each file's
    ``read_qlog`` joined."""
    from pathlib import Path

    from statemine.parse.qlog import read_qlog, read_qlog_files

    data = Path(__file__).parent / "data" / "qlog"
    files = [data / n for n in ("draft00.qlog", "draft01.qlog", "draft02.qlog")]
    # the second file's bytes handed over under a path that does not exist: never opened
    paths = [files[0], files[1].with_name("gone.qlog"), files[2]]
    done: list[Path] = []
    given: list[Path] = []

    def triples():
        for k, (f, path) in enumerate(zip(files, paths)):
            assert done == given  # the file before this one was read to its end first
            given.append(path)
            yield path, f"s{k}", f.read_bytes() if k == 1 else None

    got, skipped = read_qlog_files(triples(), on_file=done.append)
    assert skipped == [] and done == paths
    want = concat([read_qlog(f, source=f"s{k}") for k, f in enumerate(files)])
    assert got is not None
    pd.testing.assert_frame_equal(got.events, want.events)
    assert got.traces["trace"].tolist() == want.traces["trace"].tolist()
