"""Sparse sufficient statistics (statemine.stats) against a plain dense computation,
the cap on distinct state names, and memory on hostile logs (issue 11 item 1)."""

from __future__ import annotations

import itertools
import os
import resource
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import statemine
from statemine.errors import InputError
from statemine.stats import partial, resampling, tables
from statemine.stats.options import MAX_STATES, StatsOptions
from statemine.stats.partial import VisitStats
from statemine.stats.resampling import bootstrap_ratio, linear_quantiles
from statemine.stats.stream import summarize_logs
from statemine.stats.summary import trace_state_times
from statemine.stats.sums import KeyedSums
from statemine.stats.visits import VisitFold
from statemine.traces import TraceSet

ROOT = Path(__file__).resolve().parents[1]


# -- a plain dense reference ------------------------------------------------------------
def dense_reference(
    chunks, n_traces: int, n_states: int, n_boot: int, seed: int, confidence: float = 0.95
):
    """The tables' numbers from traces x states and traces x (src, dst) matrices, as the
    statistics were computed before they were sparse: (per-state dict, per-edge dict)."""
    time = np.zeros((n_traces, n_states))
    count = np.zeros((n_traces, n_states))
    edges = np.zeros((n_traces, n_states + 1, n_states + 1))  # [trace, src + 1, dst + 1]
    for c in chunks:
        np.add.at(time, (c.trace, c.state), c.end - c.start)
        np.add.at(count, (c.trace, c.state), 1)
        np.add.at(edges, (c.first_trace, 0, c.first_state + 1), 1)
        np.add.at(edges, (c.trace, c.state + 1, c.next + 1), 1)
    pairs = [
        (s, d) for s in range(n_states + 1) for d in range(n_states + 1) if edges[:, s, d].sum() > 0
    ]
    e_num = (
        np.stack([edges[:, s, d] for s, d in pairs], axis=1) if pairs else np.zeros((n_traces, 0))
    )
    e_den = (
        np.stack([edges[:, s, :].sum(axis=1) for s, _ in pairs], axis=1)
        if pairs
        else np.zeros((n_traces, 0))
    )
    totals = time.sum(axis=1)
    num = np.hstack([time, e_num])
    den = np.hstack([np.repeat(totals[:, None], n_states, axis=1), e_den])
    # the resampling the library documents: picks counted per row, in batches of 2e6 // rows
    rng = np.random.default_rng(seed)
    stats = np.empty((n_boot, num.shape[1]))
    batch = max(1, min(n_boot, 2_000_000 // n_traces))
    for start in range(0, n_boot, batch):
        b = min(batch, n_boot - start)
        picks = rng.integers(0, n_traces, size=(b, n_traces), dtype=np.int32)
        w = np.array([np.bincount(p, minlength=n_traces) for p in picks], float)
        with np.errstate(invalid="ignore", divide="ignore"):
            stats[start : start + b] = (w @ num) / (w @ den)
    alpha = (1 - confidence) / 2
    lo = hi = np.full(num.shape[1], np.nan)
    if n_traces > 1 and n_boot:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: NaN, as wanted
            lo, hi = np.nanquantile(stats, alpha, axis=0), np.nanquantile(stats, 1 - alpha, axis=0)
    positive = totals > 0
    states = {
        s: dict(
            time_s=time[:, s].sum(),
            visits=count[:, s].sum(),
            traces=(count[:, s] > 0).sum(),
            mean_trace_fraction=(time[positive, s] / totals[positive]).mean()
            if positive.any()
            else np.nan,
            lo=lo[s],
            hi=hi[s],
        )
        for s in range(n_states)
        if count[:, s].sum() > 0
    }
    out = {}
    for i, (s, d) in enumerate(pairs):
        total = edges[:, s, d].sum()
        out[(s - 1, d - 1)] = dict(
            count=total,
            probability=total / edges[:, s, :].sum(),
            lo=lo[n_states + i],
            hi=hi[n_states + i],
        )
    return states, out


def random_chunks(
    rng: np.random.Generator, n_traces: int, n_states: int, n_lines: int, n_cuts: int
):
    trace = rng.integers(0, n_traces, n_lines)
    state = rng.integers(0, n_states, n_lines)
    time = np.cumsum(rng.exponential(1.0, n_lines) * (rng.random(n_lines) < 0.9))
    fold = VisitFold()
    cuts = np.unique(np.r_[0, rng.integers(0, n_lines, n_cuts), n_lines])
    chunks = [fold.add(trace[a:b], state[a:b], time[a:b]) for a, b in itertools.pairwise(cuts)]
    chunks.append(fold.finish(np.where(rng.random(n_traces) < 0.5, time[-1] + 1, -np.inf)))
    return chunks


def close(a, b) -> bool:
    return bool(np.isclose(a, b, rtol=1e-12, atol=1e-15) or (np.isnan(a) and np.isnan(b)))


@pytest.fixture(
    params=["as configured", "sparse, small groups, weights kept", "sparse, weights drawn again"]
)
def layout(request, monkeypatch):
    """Run each comparison with the default layout and with every column group sparse
    (the gathered products), groups of a few columns, and weights kept or redrawn."""
    if request.param != "as configured":
        monkeypatch.setattr(resampling, "_DENSE_CELLS", 1)
        monkeypatch.setattr(resampling, "_STAT_CELLS", 700)
        monkeypatch.setattr(
            partial, "_EDGE_TABLE_CELLS", 0
        )  # transitions numbered by binary search
    if request.param == "sparse, weights drawn again":
        monkeypatch.setattr(resampling, "_WEIGHT_BYTES", 0)
    return request.param


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 10**6),
    n_traces=st.integers(1, 40),
    n_states=st.integers(1, 9),
    n_lines=st.integers(1, 400),
    n_cuts=st.integers(0, 6),
    n_boot=st.sampled_from([0, 1, 37, 200]),
)
def test_sparse_tables_equal_a_dense_computation(
    layout, seed, n_traces, n_states, n_lines, n_cuts, n_boot
):
    rng = np.random.default_rng(seed)
    chunks = random_chunks(rng, n_traces, n_states, n_lines, n_cuts)
    stats = VisitStats()
    for c in chunks:
        stats.add(c, n_traces, n_states)
    names = [f"s{i}" for i in range(n_states)]
    states, transitions = tables.columns(
        stats.partial(names), StatsOptions(n_boot=n_boot, seed=seed)
    )
    ref_states, ref_edges = dense_reference(chunks, n_traces, n_states, n_boot, seed)

    assert sorted(states["state"]) == sorted(names[s] for s in ref_states)
    total = sum(r["time_s"] for r in ref_states.values())
    for i, name in enumerate(states["state"]):
        r = ref_states[names.index(name)]
        assert states["visits"][i] == r["visits"] and states["traces"][i] == r["traces"]
        assert close(states["time_s"][i], r["time_s"])
        assert close(states["time_fraction"][i], r["time_s"] / total if total else np.nan)
        assert close(states["mean_trace_fraction"][i], r["mean_trace_fraction"])
        assert close(states["time_fraction_lo"][i], r["lo"]) and close(
            states["time_fraction_hi"][i], r["hi"]
        )
    got = {}
    for src, dst, count, p, lo, hi in zip(
        *(
            transitions[c]
            for c in ("src", "dst", "count", "probability", "probability_lo", "probability_hi")
        )
    ):
        s = -1 if src == "INITIAL" else names.index(src)
        d = -1 if dst == "TERMINAL" else names.index(dst)
        got[(s, d)] = (count, p, lo, hi)
    assert set(got) == set(ref_edges)
    for key, r in ref_edges.items():
        count, p, lo, hi = got[key]
        assert count == r["count"] and close(p, r["probability"])
        assert close(lo, r["lo"]) and close(hi, r["hi"])


@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    n_traces=st.integers(1, 30),
    n_states=st.integers(1, 7),
    n_lines=st.integers(1, 300),
    chunk=st.integers(1, 9),
)
def test_tables_do_not_depend_on_the_chunk_size(seed, n_traces, n_states, n_lines, chunk):
    """The stored sums are re-sorted by column and summed per source ``_CHUNK`` entries
    (whole traces) at a time: every chunk size gives the same numbers, bit for bit, in the
    dense and in the sparse (gathered, small groups) layout of the bootstrap."""
    rng = np.random.default_rng(seed)
    stats = VisitStats()
    for c in random_chunks(rng, n_traces, n_states, n_lines, 3):
        stats.add(c, n_traces, n_states)
    names = [f"s{i}" for i in range(n_states)]
    with pytest.MonkeyPatch.context() as mp:
        for sparse in (False, True):
            if sparse:
                mp.setattr(resampling, "_DENSE_CELLS", 1)
                mp.setattr(resampling, "_STAT_CELLS", 300)
            mp.setattr(tables, "_CHUNK", 1 << 20)
            opts = StatsOptions(n_boot=50, seed=seed)
            whole = tables.columns(stats.partial(names), opts)
            mp.setattr(tables, "_CHUNK", chunk)
            for a, b in zip(whole, tables.columns(stats.partial(names), opts)):
                assert a.keys() == b.keys()
                for name in a:
                    assert np.array_equal(a[name], b[name], equal_nan=a[name].dtype != object), name


def test_bootstrap_of_dense_and_sparse_arguments_agree(layout):
    rng = np.random.default_rng(5)
    num = rng.exponential(1.0, (50, 30)) * (rng.random((50, 30)) < 0.2)
    den = num.sum(axis=1, keepdims=True) + rng.random((50, 1))
    lo, hi = bootstrap_ratio(num, den, n_boot=300, seed=2)
    picks = np.random.default_rng(2).integers(0, 50, size=(300, 50), dtype=np.int32)
    w = np.array([np.bincount(p, minlength=50) for p in picks], float)
    stats = (w @ num) / (w @ den)
    assert np.allclose(lo, np.quantile(stats, 0.025, axis=0), rtol=1e-12, atol=0)
    assert np.allclose(hi, np.quantile(stats, 0.975, axis=0), rtol=1e-12, atol=0)


def test_keyed_sums_equal_dense_sums():
    rng = np.random.default_rng(0)
    dense = np.zeros((300, 50, 2))
    sums = KeyedSums(2)
    for _ in range(40):
        n = int(rng.integers(0, 500))
        row = rng.integers(0, 300, n) if rng.random() < 0.5 else rng.integers(0, 3, n)
        col = rng.integers(0, 50, n)
        val = rng.normal(size=n)
        sums.add(row, col, [val, None])
        np.add.at(dense, (row, col, 0), val)
        np.add.at(dense, (row, col, 1), 1)
    keys, (total, count) = sums.result()
    assert (np.diff(keys) > 0).all()
    got = np.zeros_like(dense)
    got[keys >> 32, keys & 0xFFFFFFFF] = np.stack([total, count], axis=1)
    assert np.allclose(got, dense, rtol=1e-12, atol=1e-12)
    assert set(zip(keys >> 32, keys & 0xFFFFFFFF)) == set(zip(*np.nonzero(dense[:, :, 1])))


def test_keyed_sums_fed_in_chunks_equal_one_pass_bit_for_bit():
    """Sums fed chunk by chunk add each pair's values one by one in arrival order: the
    same floats as one bincount over everything (the in-memory path), not a sum of
    per-chunk sums (which rounds differently)."""
    rng = np.random.default_rng(3)
    row = rng.integers(0, 40, 20_000)
    col = rng.integers(0, 7, 20_000)
    val = rng.exponential(1.0, 20_000) * 10.0 ** rng.integers(-8, 8, 20_000)
    sums = KeyedSums(2)
    cuts = np.sort(rng.integers(0, len(row), 30))
    for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(row)]):
        sums.add(row[a:b], col[a:b], [val[a:b], None])
    keys, (total, count) = sums.result()
    code = row * 7 + col
    want = np.bincount(code, weights=val, minlength=40 * 7)
    used = np.flatnonzero(np.bincount(code, minlength=40 * 7))
    assert np.array_equal(keys, (used // 7 << 32) | used % 7)
    assert np.array_equal(total, want[used])  # exactly, not within a tolerance
    assert np.array_equal(count, np.bincount(code, minlength=40 * 7)[used])
    sums.add(row[:5], col[:5], [val[:5], None])  # adding after result() carries on
    keys2, (_, count2) = sums.result()
    assert np.array_equal(keys2, keys) and count2.sum() == count.sum() + 5


def test_pair_sums_refuse_wrong_arrays():
    from statemine.parse._linescan import PairSums

    sums = PairSums(1)
    with pytest.raises(TypeError):
        sums.add(np.zeros(3, np.int32), [None])
    with pytest.raises(TypeError):
        sums.add(np.zeros(3, np.int64), [np.zeros(3, np.float32)])
    with pytest.raises(ValueError):
        sums.add(np.zeros(3, np.int64), [np.zeros(2)])
    with pytest.raises(ValueError):
        sums.add(np.zeros(3, np.int64), [None, None])
    with pytest.raises(ValueError):
        sums.take(np.zeros(1, np.int64), np.zeros((1, 1)))
    assert len(sums) == 0
    sums.add(np.array([9, 9, 4], np.int64), [None])
    keys, counts = np.empty(2, np.int64), np.empty((1, 2))
    sums.take(keys, counts)
    assert keys.tolist() == [9, 4] and counts.tolist() == [[2.0, 1.0]] and len(sums) == 0


def test_linear_quantiles_are_numpys():
    rng = np.random.default_rng(1)
    values, start, n = [], [], []
    for size in [0, 1, 2, 7, 40, 0, 3]:
        start.append(len(values))
        values.extend(np.sort(rng.normal(size=size)))
        n.append(size)
    values, start, n = np.array(values), np.array(start), np.array(n)
    for q in (0.0, 0.025, 0.5, 0.975, 1.0, 0.3337):
        got = linear_quantiles(values, start, n, q)
        want = [np.quantile(values[a : a + m], q) if m else np.nan for a, m in zip(start, n)]
        assert np.array_equal(got, want, equal_nan=True)  # bit for bit


def test_per_trace_table_is_the_seconds_by_hand():
    """trace_state_times (the traces x states table of the timelines and lab findings)
    holds each trace's seconds per state summed by hand from the rows: a state lasts to
    the trace's next row, the last one to the trace's explicit end where it has one, else
    its last line (so 0 s)."""
    rng = np.random.default_rng(4)
    rows = [
        (f"t{int(rng.integers(0, 12))}", float(t), f"S{int(rng.integers(0, 6))}")
        for t in np.cumsum(rng.exponential(1.0, 300))
    ]
    ends = {f"t{i}": 400.0 + i for i in range(0, 12, 3)}  # a Close after every line
    ids = sorted({r[0] for r in rows})
    ts = TraceSet.from_events(
        pd.DataFrame(rows, columns=["trace", "time", "state"]),
        pd.DataFrame({"trace": ids, "end": [ends.get(t, np.nan) for t in ids]}),
    )
    table = trace_state_times(ts)
    want: dict[str, dict[str, float]] = {}
    for trace in ids:
        mine = [(t, state) for tr, t, state in rows if tr == trace]
        stops = [t for t, _ in mine[1:]] + [ends.get(trace, mine[-1][0])]
        for (t, state), stop in zip(mine, stops):
            want.setdefault(trace, {}).setdefault(state, 0.0)
            want[trace][state] += stop - t
    expected = pd.DataFrame(want).T.reindex(index=table.index, columns=table.columns).fillna(0.0)
    assert list(table.columns) == sorted({r[2] for r in rows})
    assert np.allclose(table.to_numpy(), expected.to_numpy(), rtol=1e-12, atol=1e-12)
    assert table.loc["t0"].sum() == pytest.approx(400.0 - min(t for tr, t, _ in rows if tr == "t0"))


# -- the cap on distinct state names -------------------------------------------------------
def id_log(path: Path, n: int, *, prefix: str = "") -> Path:
    """``n`` lines, each a new connection and a new state (an id in the state field)."""
    path.write_text(prefix + "".join(f"STATEMINE t={i} conn=c{i} state=S{i}\n" for i in range(n)))
    return path


def test_cap_names_file_and_line_in_every_path(tmp_path):
    log = id_log(tmp_path / "ids.log", 30, prefix="# a comment\nSTATEMINE t=0 conn=x event=E1\n")
    assert len(summarize_logs(log, max_states=30, n_boot=0).states) == 30
    with pytest.raises(InputError) as err:
        summarize_logs(log, max_states=25, n_boot=0)
    # line 1 is a comment, line 2 an event: state S25 (the 26th name) is on line 28
    assert (err.value.file, err.value.line) == (str(log), 28)
    assert "looks like an id in the state field" in str(err.value)
    with pytest.raises(InputError) as err:
        statemine.summarize(statemine.read(log), max_states=25, n_boot=0)
    assert "looks like an id in the state field" in str(err.value)
    assert err.value.file == str(log) and err.value.line is not None
    assert MAX_STATES == 100_000


def test_cap_counts_names_across_files_and_blocks(tmp_path):
    a = id_log(tmp_path / "a.log", 10)
    b = tmp_path / "b.log"
    b.write_text(
        "".join(
            f"STATEMINE t={i} conn=d{i} state={'S3' if i < 4 else f'T{i}'}\n" for i in range(12)
        )
    )
    with pytest.raises(InputError) as err:
        summarize_logs([a, b], max_states=15, n_boot=0)
    # a.log has S0..S9; b.log lines 1-4 repeat S3, then T4 (11th), ... T9 is the 16th name, line 10
    assert (err.value.file, err.value.line) == (str(b), 10)


def test_cli_cap_exit_2_one_line(tmp_path):
    log = id_log(tmp_path / "ids.log", 50)
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "statemine",
            "infer",
            str(log),
            "--max-states",
            "40",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith(f"statemine: error: {log}:41: ")
    assert "looks like an id in the state field" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()
    ok = subprocess.run(
        [
            sys.executable,
            "-m",
            "statemine",
            "infer",
            str(log),
            "--max-states",
            "50",
            "--bootstrap",
            "20",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert ok.returncode == 0, ok.stderr
    assert len(pd.read_csv(out / "states.csv")) == 50


# -- memory on hostile logs -----------------------------------------------------------------
def _limited(limit_bytes: int, cpu_s: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))

    return apply


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is enforced on Linux")
def test_ten_thousand_new_connections_and_states_within_500_mb(tmp_path):
    """10,000 lines, each a new connection and a new state: needed more than 9 GiB with
    dense traces x states matrices; now the whole `statemine infer --out` (1000 bootstrap
    resamples) runs in a 500 MB address space."""
    log = id_log(tmp_path / "ids.log", 10_000)
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "statemine", "infer", str(log), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        preexec_fn=_limited(500 * 2**20, 60),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    states = pd.read_csv(out / "states.csv")
    assert len(states) == 10_000 and (states["visits"] == 1).all()
    transitions = pd.read_csv(out / "transitions.csv")
    assert len(transitions) == 20_000 and (transitions["count"] == 1).all()
    assert "more states (least time) not printed" in done.stderr


def test_model_json_is_the_node_link_dump_written_piece_by_piece():
    """model_to_json writes node by node; the text is json.dumps of networkx's node-link
    data (NaN as null), byte for byte."""
    import json

    import networkx as nx

    from statemine.infer.observed import _nan_to_none, model_to_json, observed_model

    rows = [
        ("a", 0.0, "SlowStart"),
        ("a", 1.0, 'x"\\\n\u00e9'),
        ("a", 3.0, "SlowStart"),
        ("b", 0.0, "Recovery"),
    ]
    G = observed_model(
        TraceSet.from_events(pd.DataFrame(rows, columns=["trace", "time", "state"])), n_boot=10
    )
    for graph in (G, nx.DiGraph()):
        want = json.dumps(
            _nan_to_none(nx.node_link_data(graph, edges="edges")), indent=1, sort_keys=True
        )
        assert model_to_json(graph) == want


def test_trim_heap_answers_whether_it_released_pages():
    from statemine.parse._linescan import trim_heap

    assert isinstance(trim_heap(), bool)
