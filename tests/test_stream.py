"""Streaming statistics (statemine.stats.stream) against the in-memory ones, block splits, the
dwell-time sketch, and the read-ahead thread."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import statemine
from statemine.errors import InputError
from statemine.parse.lines import read_ahead
from statemine.parse.statemine_log import scan_files
from statemine.stats.dwell import ALPHA, DwellTimes
from statemine.stats.stream import summarize_logs, summarize_scanned
from statemine.stats.visits import VisitFold

STATES = ["SlowStart", "CongestionAvoidance", "Recovery", "ApplicationLimited"]


def random_log(rng: np.random.Generator, n_lines: int, n_conns: int) -> str:
    """Interleaved connections with repeats, point events and some Close lines."""
    clock = np.zeros(n_conns)
    lines = []
    for _ in range(n_lines):
        c = int(rng.integers(n_conns))
        clock[c] += float(rng.choice([0.0, rng.exponential(0.1)]))
        role = " role=server" if c % 3 else ""
        r = rng.random()
        what = (
            "event=Close"
            if r < 0.03
            else "event=LossDetected"
            if r < 0.15
            else f"state={STATES[int(rng.integers(len(STATES)))]}"
        )
        lines.append(f"I1120 x.go:1] STATEMINE t={clock[c]:.6f} conn=c{c}{role} {what} cwnd=1200\n")
    return "".join(lines)


def assert_same_tables(streamed, states: pd.DataFrame, transitions: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(
        streamed.states, states, check_exact=False, rtol=1e-12, atol=1e-12
    )
    pd.testing.assert_frame_equal(
        streamed.transitions, transitions, check_exact=False, rtol=1e-12, atol=1e-12
    )


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    n_files=st.integers(1, 3),
    collapse=st.booleans(),
    end=st.sampled_from(["close", "last-state"]),
    chunk=st.sampled_from([64, 300, 1 << 20]),
)
def test_streamed_equals_in_memory(tmp_path_factory, seed, n_files, collapse, end, chunk):
    rng = np.random.default_rng(seed)
    folder = tmp_path_factory.mktemp("logs")
    files = []
    for i in range(n_files):
        path = folder / f"run{i}.log"
        path.write_text(random_log(rng, int(rng.integers(5, 300)), int(rng.integers(1, 12))))
        files.append(path)
    opts = dict(collapse_repeats=collapse, end=end, n_boot=200, seed=seed)
    states, transitions = statemine.summarize(statemine.read(files), **opts)

    # small blocks: visits and traces cross block boundaries
    streamed = summarize_scanned(scan_files(files, chunk_bytes=chunk), **opts)
    assert_same_tables(streamed, states, transitions)
    assert streamed.n_events == sum(1 for f in files for line in f.read_text().splitlines())
    assert_same_tables(summarize_logs(files, **opts), states, transitions)


def test_fold_in_any_blocks_gives_the_visits_of_one_block():
    rng = np.random.default_rng(3)
    trace = rng.integers(0, 5, 400)
    state = rng.integers(0, 4, 400)
    time = np.cumsum(rng.random(400))

    def visits(cuts, collapse):
        fold = VisitFold(collapse)
        chunks = [fold.add(trace[a:b], state[a:b], time[a:b]) for a, b in itertools.pairwise(cuts)]
        chunks.append(fold.finish(np.full(5, time[-1] + 1)))
        rows = {
            tuple(map(float, r))
            for c in chunks
            for r in zip(c.trace, c.state, c.start, c.end, c.next)
        }
        firsts = {(int(t), int(s)) for c in chunks for t, s in zip(c.first_trace, c.first_state)}
        return rows, firsts

    for collapse in (False, True):
        whole = visits([0, 400], collapse)
        assert visits([0, 1, 2, 57, 200, 399, 400], collapse) == whole
        assert len(whole[1]) == 5


def test_dwell_sketch_quantiles_within_its_accuracy():
    rng = np.random.default_rng(0)
    state = rng.integers(0, 3, 50_000)
    duration = np.where(rng.random(50_000) < 0.05, 0.0, rng.lognormal(-4, 2, 50_000))
    exact = DwellTimes()
    sketch = DwellTimes(budget=1000)
    for a in range(0, 50_000, 7_000):
        exact.add(state[a : a + 7_000], duration[a : a + 7_000])
        sketch.add(state[a : a + 7_000], duration[a : a + 7_000])
    assert exact.accuracy == "exact" and sketch.accuracy != "exact"
    qs = (0.01, 0.5, 0.95, 1.0)
    e, s = np.array(exact.quantiles(4, qs)), np.array(sketch.quantiles(4, qs))
    assert np.isnan(e[:, 3]).all() and np.isnan(s[:, 3]).all()  # state 3 never visited
    for g in range(3):
        truth = np.quantile(duration[state == g], qs)
        assert np.allclose(e[:, g], truth, rtol=1e-12)
        assert np.allclose(s[:, g], truth, rtol=ALPHA, atol=0)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(st.floats(0, 1e6), st.sampled_from([0.0, 1.0, 2.5, float("nan")])),
        min_size=1,
        max_size=40,
    ),
    st.lists(st.floats(0, 1), min_size=1, max_size=4),
)
def test_partition_quantiles_equal_numpys_bit_for_bit(values, qs):
    """The exact dwell quantiles of few states (one partition each, no np.unique, so no
    numpy.ma import) equal np.quantile's, bit for bit, NaN included."""
    from statemine.stats.dwell import partition_quantiles

    v = np.array(values)
    got = partition_quantiles(v.copy(), (*qs, 0.5, 0.95))
    want = np.quantile(v, (*qs, 0.5, 0.95))
    assert np.array_equal(got, want, equal_nan=True)


def test_streamed_dwell_quantiles_say_when_approximate(tmp_path):
    path = tmp_path / "run.log"
    path.write_text(random_log(np.random.default_rng(1), 400, 4))
    assert summarize_logs(path).states.attrs["dwell_quantiles"] == "exact"
    assert "sketch" in summarize_logs(path, dwell_budget=10).states.attrs["dwell_quantiles"]


def test_errors_reach_the_consumer_with_file_and_line(tmp_path):
    good, bad = tmp_path / "a.log", tmp_path / "b.log"
    good.write_text("STATEMINE t=0 conn=a state=X\n")
    bad.write_text("STATEMINE t=0 conn=a state=X\nSTATEMINE t=oops conn=a state=Y\n")
    with pytest.raises(InputError) as err:
        summarize_logs([good, bad])
    assert err.value.file == str(bad) and err.value.line == 2
    empty = tmp_path / "c.log"
    empty.write_text("no statemine here\n")
    with pytest.raises(InputError, match="no statemine lines"):
        summarize_logs([good, empty])


def test_read_ahead_stops_when_dropped_and_raises_in_order():
    produced = []

    def items():
        for i in range(1000):
            produced.append(i)
            yield i

    it = read_ahead(items(), depth=2)
    assert next(it) == 0
    it.close()
    n = len(produced)
    assert n < 10  # bounded: the thread stops instead of running ahead

    def failing():
        yield 1
        raise ValueError("boom")

    it = read_ahead(failing())
    assert next(it) == 1
    with pytest.raises(ValueError, match="boom"):
        next(it)


def test_scan_files_starts_at_once(tmp_path):
    path = tmp_path / "run.log"
    path.write_text("STATEMINE t=0 conn=a state=X\n")
    scanned = scan_files([path])
    kinds = [type(item).__name__ for item in scanned]
    assert kinds == ["ScannedBlock", "ScanEnd"]


def test_cli_starts_without_pandas():
    code = "import sys, statemine.cli; print(sorted(m for m in ('pandas', 'networkx', 'pyarrow') if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_cli_streamed_and_in_memory_paths_write_the_same_tables(tmp_path):
    from click.testing import CliRunner

    from statemine.cli import main

    path = tmp_path / "run.log"
    text = random_log(np.random.default_rng(7), 500, 6).replace(
        " conn=c0 ", " conn=c0 role=server "
    )
    text = "".join(
        line for line in text.splitlines(True) if "role=server" in line
    )  # --select keeps all
    path.write_text(text)
    runner = CliRunner()
    streamed = runner.invoke(main, ["infer", str(path), "--out", str(tmp_path / "a"), "--no-svg"])
    in_memory = runner.invoke(
        main,
        ["infer", str(path), "--select", "role=server", "--out", str(tmp_path / "b"), "--no-svg"],
    )
    assert streamed.exit_code == 0 and in_memory.exit_code == 0, streamed.output + in_memory.output
    for name in ("states.csv", "transitions.csv", "model.dot", "model.json"):
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text(), name


def test_cli_csv_writer_formats_as_pandas(tmp_path):
    from statemine.escape import columns_csv

    path = tmp_path / "run.log"
    path.write_text(random_log(np.random.default_rng(11), 300, 5))
    for frame in statemine.summarize(statemine.read(path)):
        assert columns_csv({c: frame[c].to_numpy() for c in frame.columns}) == frame.to_csv(
            index=False
        )


def test_cli_streamed_infer_runs_without_pandas(tmp_path):
    path = tmp_path / "run.log"
    path.write_text(random_log(np.random.default_rng(5), 200, 3))
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('pandas' in sys.modules, file=sys.stderr))\n"
        "from statemine.cli import main\n"
        f"main(args=['infer', {str(path)!r}, '--out', {str(tmp_path / 'out')!r}, '--no-svg'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "False"
    assert (tmp_path / "out" / "states.csv").read_text().startswith("state,time_s,time_fraction,")
