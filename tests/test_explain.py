"""statemine explain (issue 30): the rate/dwell split, the triggers of entries, spurious or
real loss declarations, knobs and the summary; each checked against values computed another
way (brute-force enumeration, counting log lines), and on the shipped lab traces."""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from statemine.cli import main
from statemine.commands import explain_to_dir, lab_runs, read_inputs
from statemine.explain import decompose, explain
from statemine.stats.resampling import bootstrap_delta, permutation_pvalues
from statemine.traces import TraceSet

TRACES = Path(__file__).resolve().parents[1] / "traces"
FAST = dict(n_perm=2000, n_boot=200, seed=0)


# -- the statistics core with explicit denominators --------------------------------------------
def test_ratio_permutation_is_exact_enumeration():
    rng = np.random.default_rng(3)
    xa, xb = rng.poisson(3, (4, 2)).astype(float), rng.poisson(5, (4, 2)).astype(float)
    da, db = rng.uniform(1, 3, (4, 1)), rng.uniform(1, 3, (4, 1))
    x, d = np.vstack([xa, xb]), np.vstack([da, db])

    def stat(rows_a):
        rows_b = [i for i in range(8) if i not in rows_a]
        ra = x[list(rows_a)].sum(0) / d[list(rows_a)].sum(0)
        rb = x[rows_b].sum(0) / d[rows_b].sum(0)
        return np.abs(rb - ra)

    observed = stat((0, 1, 2, 3))
    counts = sum(stat(c) >= observed - 1e-12 for c in itertools.combinations(range(8), 4))
    ours = permutation_pvalues(xa, xb, den_a=da, den_b=db, n_perm=1000)  # C(8, 4) = 70
    assert np.allclose(ours, counts / math.comb(8, 4))


def test_ratio_with_row_sums_is_the_share_test():
    rng = np.random.default_rng(4)
    xa, xb = rng.uniform(0, 2, (6, 3)), rng.uniform(0, 3, (7, 3))
    ta, tb = xa.sum(1, keepdims=True), xb.sum(1, keepdims=True)
    assert np.allclose(
        permutation_pvalues(xa, xb, den_a=ta, den_b=tb, n_perm=300, seed=2),
        permutation_pvalues(xa, xb, n_perm=300, seed=2),
    )
    lo, hi = bootstrap_delta(xa, xb, den_a=ta, den_b=tb, n_boot=300, seed=5)
    lo2, hi2 = bootstrap_delta(xa, xb, n_boot=300, seed=5)
    assert np.allclose(lo, lo2) and np.allclose(hi, hi2)


def test_ratio_per_column_denominator_interval():
    # every trace alike: each resample gives the same ratios, the interval collapses on them
    xa, xb = np.tile([[2.0, 6.0]], (5, 1)), np.tile([[3.0, 6.0]], (5, 1))
    da, db = np.tile([[1.0, 2.0]], (5, 1)), np.tile([[1.0, 4.0]], (5, 1))
    lo, hi = bootstrap_delta(xa, xb, den_a=da, den_b=db, n_boot=50)
    assert lo.tolist() == hi.tolist() == [1.0, -1.5]


def test_decompose_sums_to_the_change():
    rng = np.random.default_rng(0)
    ra, rb, da, db = rng.uniform(0.1, 3, (4, 50))
    rate, dwell = decompose(ra, rb, da, db)
    assert np.allclose(rate + dwell, rb * db - ra * da)
    # a state on one side only: all of it is the rate's
    rate, dwell = decompose(np.array([0.0]), np.array([2.0]), np.array([np.nan]), np.array([0.5]))
    assert rate.tolist() == [1.0] and dwell.tolist() == [0.0]


# -- explain on generated logs -------------------------------------------------------------------
def _trace(name: str, lines: list[tuple]) -> list[dict]:
    """Rows of one trace from ``(time, kind, name, fields)`` tuples."""
    return [
        {"trace": name, "time": t, "kind": k, "state": s, "fields": f or None}
        for t, k, s, f in lines
    ]


def _side(prefix: str, n: int, recoveries: int, spurious: bool, seed: int) -> TraceSet:
    """Traces SlowStart -> (CA -> loss -> Recovery) x recoveries -> CA, Close at 10 s; each
    Recovery entered 0 s after a packet-threshold declaration (pn = k), undone by a
    SpuriousLoss when ``spurious``; one old time-threshold declaration 0.5 s before CA."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        lines = [(0.0, "state", "SlowStart", ""), (0.5, "event", "LossDetected", "rule=time pn=1")]
        lines.append((1.0, "state", "CongestionAvoidance", ""))
        t = 1.0
        for k in range(recoveries):
            t += rng.uniform(0.5, 1.0)
            lines.append((t, "event", "LossDetected", f"rule=packet pn={100 + k}"))
            lines.append((t, "state", "Recovery", ""))
            if spurious:
                lines.append((t + 0.01, "event", "SpuriousLoss", f"pn={100 + k}"))
            t += rng.uniform(0.1, 0.2)
            lines.append((t, "state", "CongestionAvoidance", ""))
        lines.append((10.0, "event", "Close", ""))
        rows += _trace(f"{prefix}{i}", lines)
    traces = pd.DataFrame({"trace": [f"{prefix}{i}" for i in range(n)], "implementation": "x"})
    return TraceSet.from_events(pd.DataFrame(rows), traces)


def _count(ts: TraceSet, state: str) -> int:
    return int(((ts.events["kind"] == "state") & (ts.events["state"] == state)).sum())


def test_explain_generated_sides():
    a, b = _side("a", 8, 1, False, 1), _side("b", 8, 4, True, 2)
    r = explain(a, b, **FAST)
    st = r.states.set_index("state")
    rec = st.loc["Recovery"]
    # entries counted from the log lines; rate x dwell is diff's share
    assert rec.entries_a == _count(a, "Recovery") == 8 and rec.entries_b == _count(b, "Recovery")
    assert np.isclose(rec.rate_a, 8 / 80.0) and np.isclose(rec.rate_b, 32 / 80.0)
    assert np.allclose(st["rate_a"] * st["dwell_a"], st["share_a"])
    assert np.allclose(st["rate_part"] + st["dwell_part"], st["delta"])
    assert rec.changed and rec.carried_by == "entries" and rec.rate_p_holm < 0.01
    tr = r.triggers
    mine = tr[tr["state"] == "Recovery"]
    assert mine["entries_a"].sum() == 8 and mine["entries_b"].sum() == rec.entries_b
    assert np.isclose(mine["share_of_change"].sum(), 1.0)
    lead = mine.iloc[0]
    assert (lead.trigger, lead.verdict) == ("LossDetected rule=packet", "spurious")
    assert lead.evidence == "stack: SpuriousLoss for its packet" and lead.p_holm < 0.01
    # side A's declarations: no SpuriousLoss there, but the stack logs them (side B): real
    real = mine[mine["verdict"] == "real"].iloc[0]
    assert real.entries_a == 8 and real.evidence == "stack: no SpuriousLoss for its packet"
    assert lead.knob.startswith("reordering threshold")
    # the time-threshold declaration 0.5 s before CongestionAvoidance is not its trigger
    ca = tr[tr["state"] == "CongestionAvoidance"]
    assert set(ca["trigger"]) == {"after SlowStart", "after Recovery"}
    losses = r.losses.set_index("side")
    assert losses.loc["A", "declared"] == 16 and losses.loc["B", "spurious"] == 32
    assert losses.loc["B", "declared_time"] == 8 and losses.loc["B", "stack_spurious_events"] == 32


def test_declarations_without_packet_numbers_are_not_judged_by_the_stack_rule():
    """A source that keeps no event fields (a store written before the column keeps
    none): no packet number, so "no SpuriousLoss for its packet" cannot be said; such
    declarations are unknown."""
    a, b = _side("a", 8, 1, False, 1), _side("b", 8, 4, True, 2)
    bare = [TraceSet.from_events(ts.events.drop(columns="fields"), ts.traces) for ts in (a, b)]
    r = explain(*bare, **FAST)
    verdicts = set(r.triggers.loc[r.triggers["trigger"].str.startswith("LossDetected"), "verdict"])
    assert verdicts == {"unknown"}
    losses = r.losses.set_index("side")
    assert losses.loc["A", "real"] == 0 and losses.loc["B", "spurious"] == 0


_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def _cell_numbers(frames: list[pd.DataFrame]) -> tuple[list[float], str]:
    """The numeric cells of ``frames`` and all their text cells joined."""
    nums: list[float] = []
    text = []
    for f in frames:
        for col in f.columns:
            if f[col].dtype.kind in "biuf":
                nums += [float(v) for v in f[col] if np.isfinite(v)]
            else:
                text += [str(v) for v in f[col]]
    return nums, " ".join(text)


def assert_summary_from_cells(r) -> None:
    """Every number of the summary is a cell of explain.csv or triggers.csv: a numeric cell
    shown as a percentage, a ratio or a p-value at the precision printed, or part of a text
    cell (a label value, a state or trigger name)."""
    nums, text = _cell_numbers([r.states, r.triggers])
    text_numbers = set(_NUMBER.findall(text))
    assert r.summary
    for paragraph in r.summary:
        for token in _NUMBER.findall(paragraph):
            if token in text_numbers:
                continue
            value = float(token)
            decimals = len(token.split(".")[1]) if "." in token and "e" not in token else 0
            ok = any(
                math.isclose(float(f"{c * scale:.{digits}g}"), value, rel_tol=1e-9)
                or round(c * scale, decimals) == value
                for c in nums
                for scale in (1.0, 100.0)
                for digits in (1, 2)
            )
            assert ok, f"{token} of {paragraph!r} is no cell"


def test_summary_numbers_are_cells():
    r = explain(_side("a", 8, 1, False, 1), _side("b", 8, 4, True, 2), **FAST)
    assert_summary_from_cells(r)
    r.states.loc[:, "rate_ratio"] = 99.0  # a summary no longer matching its cells fails
    with pytest.raises(AssertionError):
        assert_summary_from_cells(r)


# -- the command: output files, bad input ----------------------------------------------------------
def _write_log(path: Path, ts: TraceSet) -> None:
    lines = []
    for row in ts.events.itertuples(index=False):
        what = f"state={row.state}" if row.kind == "state" else f"event={row.state}"
        extra = f" {row.fields}" if isinstance(row.fields, str) else ""
        lines.append(f"STATEMINE t={row.time:.6f} conn={row.trace} {what}{extra}")
    path.write_text("\n".join(lines) + "\n")


def test_explain_cli_writes_files(tmp_path):
    _write_log(tmp_path / "a.log", _side("a", 8, 1, False, 1))
    _write_log(tmp_path / "b.log", _side("b", 8, 4, True, 2))
    out = tmp_path / "why"
    args = ["explain", str(tmp_path / "a.log"), str(tmp_path / "b.log"), "--out", str(out)]
    res = CliRunner().invoke(main, [*args, "--permutations", "2000", "--bootstrap", "100"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == [
        "explain.csv",
        "explain.md",
        "provenance.json",
        "triggers.csv",
    ]
    states = pd.read_csv(out / "explain.csv")
    assert "Recovery" in set(states.loc[states["changed"], "state"])
    assert "Recovery" in res.output and "## Summary" in (out / "explain.md").read_text()
    library = explain_to_dir(str(tmp_path / "a.log"), str(tmp_path / "b.log"))
    assert library.written == () and len(library.result.summary) >= 1


@pytest.mark.parametrize("gather", [True, False])
def test_explain_on_a_store_equals_explain_on_its_logs(tmp_path, monkeypatch, gather):
    """A store keeps the events' fields (rule=, pn=): explain gives the same verdicts,
    triggers, losses and files on stores of the logs as on the logs (before, the store kept
    no fields and every declaration was "unknown")."""
    import statemine.store as st

    if not gather:  # each log streamed into its own data file, 5 rows a row group
        monkeypatch.setattr(st, "GATHER_FILE_BYTES", -1)
    _write_log(tmp_path / "a.log", _side("a", 8, 1, False, 1))
    _write_log(tmp_path / "b.log", _side("b", 8, 4, True, 2))
    for side in "ab":
        st.store_add(
            [tmp_path / f"{side}.log"], tmp_path / f"s{side}", {"env": "lab"}, batch_rows=5
        )
    opts = dict(label_a="A", label_b="B")
    logs = explain_to_dir(str(tmp_path / "a.log"), str(tmp_path / "b.log"), **opts).result
    stored = explain_to_dir(str(tmp_path / "sa"), str(tmp_path / "sb"), **opts).result
    assert "spurious" in set(logs.triggers["verdict"])
    for got, want in ((stored.states, logs.states), (stored.triggers, logs.triggers)):
        pd.testing.assert_frame_equal(got, want)
    pd.testing.assert_frame_equal(stored.losses, logs.losses)
    assert stored.summary == logs.summary and stored.notes == logs.notes
    outputs = {}
    for name, (a, b) in {"logs": ("a.log", "b.log"), "store": ("sa", "sb")}.items():
        args = ["explain", str(tmp_path / a), str(tmp_path / b), "--out", str(tmp_path / name)]
        args += ["--label-a", "A", "--label-b", "B", "--permutations", "2000"]
        res = CliRunner().invoke(main, [*args, "--bootstrap", "100"])
        assert res.exit_code == 0, res.output
        files = ("explain.csv", "triggers.csv", "explain.md")
        outputs[name] = (res.stdout, *((tmp_path / name / f).read_bytes() for f in files))
    assert outputs["store"] == outputs["logs"]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--select-a", "role"], "LABEL=VALUE"),
        (["--select-a", "os=x"], "no label 'os'"),
        (["--label-a", "x", "--label-b", "x"], "both sides are labelled"),
    ],
)
def test_explain_bad_input_one_line_nothing_written(tmp_path, extra, message):
    _write_log(tmp_path / "a.log", _side("a", 3, 1, False, 1))
    _write_log(tmp_path / "b.log", _side("b", 3, 2, False, 2))
    out = tmp_path / "why"
    args = ["explain", str(tmp_path / "a.log"), str(tmp_path / "b.log"), "--out", str(out)]
    res = CliRunner().invoke(main, args + extra)
    assert res.exit_code == 2 and message in res.output
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output
    assert not out.exists()


def test_explain_missing_input(tmp_path):
    out = tmp_path / "why"
    res = CliRunner().invoke(
        main, ["explain", str(tmp_path / "no.log"), str(tmp_path / "no2.log"), "--out", str(out)]
    )
    assert res.exit_code == 2 and "no.log" in res.output and not out.exists()


# -- the shipped lab traces (issue 30's "done when") -------------------------------------------------
def _lab_side(folder: str, **where: str) -> tuple[TraceSet, pd.DataFrame]:
    """The server traces of the runs of ``traces/<folder>`` whose results match ``where``
    (read from their run folders only), and the folder's results table."""
    root = TRACES / folder
    if not root.is_dir():
        pytest.skip(f"{root} is not in this checkout")
    runs = lab_runs(root)
    assert runs is not None
    mask = np.ones(len(runs), bool)
    for key, value in where.items():
        cells = runs[key].astype(object).where(runs[key].notna(), "").astype(str)
        mask &= cells.eq(value).to_numpy()
    files = [root / "runs" / r / "traces.parquet" for r in runs.loc[mask, "run_id"]]
    assert len(files) == 20
    return read_inputs(files, selections=["role=server"]), runs


def _explain(folder_a, where_a, folder_b, where_b):
    a, runs_a = _lab_side(folder_a, **where_a)
    b, runs_b = _lab_side(folder_b, **where_b)
    return explain(a, b, runs_a=runs_a, runs_b=runs_b, **FAST)


def _trigger(r, state, trigger, verdict=None):
    t = r.triggers
    mask = (t["state"] == state) & (t["trigger"] == trigger)
    if verdict is not None:
        mask &= t["verdict"] == verdict
    return t[mask]


_NO_JITTER = dict(jitter_ms="0.0", reordering_threshold="3", time_threshold="")
_JITTER = dict(jitter_ms="10.0", reordering_threshold="3", time_threshold="")
_TUNED = dict(jitter_ms="10.0", reordering_threshold="10", time_threshold="1.5")


@pytest.mark.parametrize("stack", ["aioquic@1.7.2", "quic-go@v0.63.0"])
def test_jitter_recovery_is_spurious_packet_threshold_entries(stack):
    r = _explain("jitter", dict(stack=stack, **_NO_JITTER), "jitter", dict(stack=stack, **_JITTER))
    rec = r.states.set_index("state").loc["Recovery"]
    assert rec.changed and rec.delta > 0 and rec.p_holm < 0.01
    assert rec.carried_by == "entries" and rec.rate_part_share > 0.5 and rec.rate_p_holm < 0.01
    rows = r.triggers[r.triggers["state"] == "Recovery"]
    lead = rows.sort_values("share_of_change", ascending=False).iloc[0]
    assert (lead.trigger, lead.verdict) == ("LossDetected rule=packet", "spurious")
    assert lead.share_of_change > 0.5 and lead.p_holm < 0.01
    assert lead.knob.startswith("reordering threshold")
    assert "jitter_ms=0|10" in lead.knob_values
    losses = r.losses.set_index("side")
    assert losses.loc["B", "spurious"] == losses.loc["B", "declared"] > 0
    assert_summary_from_cells(r)


@pytest.mark.parametrize("stack", ["aioquic@1.7.2", "quic-go@v0.63.0"])
def test_thresholds_give_fewer_packet_and_time_threshold_entries(stack):
    r = _explain("jitter", dict(stack=stack, **_JITTER), "jitter", dict(stack=stack, **_TUNED))
    for rule in ("packet", "time"):
        rows = _trigger(r, "Recovery", f"LossDetected rule={rule}")
        assert rows["rate_b"].sum() < rows["rate_a"].sum()
        assert (rows["p_holm"] < 0.01).any(), rows
    assert {"reordering_threshold", "time_threshold"} <= set(r.differing["label"])


def test_quic_go_065_fewer_spurious_packet_threshold_entries():
    r = _explain(
        "quic-go-versions",
        dict(stack="quic-go@v0.63.0", jitter_ms="10.0"),
        "quic-go-versions",
        dict(stack="quic-go@v0.65.0", jitter_ms="10.0"),
    )
    row = _trigger(r, "Recovery", "LossDetected rule=packet", "spurious").iloc[0]
    assert row.rate_b < row.rate_a and row.rate_hi < 0 and row.p_holm < 0.01
    assert list(r.differing["label"]) == ["version"]


def test_mobile_application_limited_through_the_read_side():
    r = _explain(
        "mobile",
        dict(stack="quic-go@v0.65.0", profile="desktop"),
        "mobile",
        dict(stack="quic-go@v0.65.0", profile="mobile"),
    )
    al = r.states.set_index("state").loc["ApplicationLimited"]
    assert al.changed and al.delta > 0 and al.p_holm < 0.01
    assert al.dwell_p_holm < 0.01  # longer application-limited visits
    rows = r.triggers[r.triggers["state"] == "ApplicationLimited"]
    assert set(rows["knob"]) >= {"client read rate / receive window (flow control)"}
    assert "profile=desktop|mobile" in rows["knob_values"].iloc[0]
    assert list(r.differing["label"]) == ["profile"]
    assert_summary_from_cells(r)


def test_quiche_cubic_recovery_follows_real_packet_threshold_losses():
    # found: CUBIC's Recovery (absent under BBR2) is entered on packet-threshold
    # declarations of packets the path really dropped (1% loss, no jitter: no reordering)
    cell = dict(loss="0.01", object_size_bytes="10000000")
    r = _explain("quiche-bbr", dict(cc="cubic", **cell), "quiche-bbr", dict(cc="bbr2", **cell))
    rec = r.states.set_index("state").loc["Recovery"]
    assert rec.changed and rec.delta < 0 and rec.share_b == 0
    row = _trigger(r, "Recovery", "LossDetected rule=packet", "real").iloc[0]
    assert row.share_of_change > 0.5 and row.p_holm < 0.01
    assert row.evidence == "lab: the path reordered no packet (no jitter)"
    assert list(r.differing["label"]) == ["cc"]


def test_tcp_vs_quic_under_jitter():
    # found: kernel TCP's Disorder is entered from Open (ftrace has no point events, the
    # state before is the trigger); quic-go's Recovery after spurious packet-threshold losses
    r = _explain(
        "tcp-jitter",
        dict(jitter_ms="10.0"),
        "quiche-jitter",
        dict(stack="quic-go@v0.63.0", jitter_ms="10.0"),
    )
    row = _trigger(r, "Disorder", "after Open").iloc[0]
    assert row.share_of_change > 0.5 and row.p_holm < 0.01
    assert row.knob.startswith("path reordering")
    rec = _trigger(r, "Recovery", "LossDetected rule=packet", "spurious").iloc[0]
    assert rec.rate_a == 0 and rec.p_holm < 0.01
