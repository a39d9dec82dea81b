"""Timelines: state spans, metric series, throughput, and what the plots draw."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection
from test_diff_data import make_set

from statemine.errors import UsageError
from statemine.output.timeline import (
    STATE_COLOURS,
    metric_series,
    pick_trace,
    plot_cwnd,
    plot_throughput,
    state_spans,
    throughput_series,
)
from statemine.traces import TraceSet


def small() -> TraceSet:
    ev = pd.DataFrame(
        {
            "trace": "c1",
            "time": [5.0, 5.1, 5.5, 5.5, 5.9, 6.5],
            "kind": ["state", "state", "event", "state", "state", "event"],
            "state": [
                "Init",
                "SlowStart",
                "LossDetected",
                "Recovery",
                "CongestionAvoidance",
                "Close",
            ],
            "cwnd": [12000, 12000, np.nan, 30000, 30000, np.nan],
            "inflight": [0, 1200, np.nan, 40000, 20000, np.nan],
            "srtt": [np.nan, 0.1, np.nan, 0.12, 0.1, np.nan],
            "fields": [
                "delivered=0",
                "delivered=1000",
                "",
                "delivered=26000",
                "delivered=51000",
                "delivered=101000",
            ],
        }
    )
    return TraceSet.from_events(ev)


def test_state_spans_relative_to_first_line():
    spans = state_spans(small(), "c1")
    assert spans["state"].tolist() == ["Init", "SlowStart", "Recovery", "CongestionAvoidance"]
    assert np.allclose(spans["start"], [0.0, 0.1, 0.5, 0.9])
    assert np.allclose(spans["end"], [0.1, 0.5, 0.9, 1.5])  # last state ends at Close


def test_metric_series_skips_unlogged_rows():
    s = metric_series(small(), "c1", "cwnd")
    assert np.allclose(s["time"], [0.0, 0.1, 0.5, 0.9]) and s["value"].tolist() == [
        12000,
        12000,
        30000,
        30000,
    ]
    assert metric_series(small(), "c1", "ssthresh").empty


def test_throughput_from_counter_by_hand():
    series, method = throughput_series(small(), "c1", bin_s=0.5)
    assert method == "delivered"
    # counter 0 @0, 1000 @0.1, 26000 @0.5, 51000 @0.9, 101000 @1.5 (linear between samples)
    at = np.interp([0.0, 0.5, 1.0, 1.5], [0.0, 0.1, 0.5, 0.9, 1.5], [0, 1000, 26000, 51000, 101000])
    assert np.allclose(series["bps"], 8 * np.diff(at) / 0.5)
    assert np.allclose(series["time"], [0.0, 0.5, 1.0])


def test_throughput_window_estimate_and_missing():
    ts = small()
    no_counter = TraceSet.from_events(ts.events.drop(columns="fields"), ts.traces)
    series, method = throughput_series(no_counter, "c1")
    assert method == "cwnd/srtt"
    assert np.allclose(series["bps"], [8 * 12000 / 0.1, 8 * 30000 / 0.12, 8 * 30000 / 0.1])
    bare = TraceSet.from_events(ts.events.drop(columns=["fields", "srtt"]), ts.traces)
    with pytest.raises(UsageError, match="no throughput"):
        throughput_series(bare, "c1")


def test_plot_cwnd_shades_each_visit():
    ts = make_set("a", 4, seed=3, cwnd=True)
    trace = pick_trace(ts)
    fig = plot_cwnd(ts, trace, ssthresh=True)
    ax = fig.axes[0]
    spans = state_spans(ts, trace)
    polys = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert sum(len(p.get_paths()) for p in polys) == len(spans)
    assert len(polys) == spans["state"].nunique()
    rec = [
        p for p in polys if np.allclose(p.get_facecolor()[0][:3], _rgb(STATE_COLOURS["Recovery"]))
    ]
    assert len(rec) == 1 and len(rec[0].get_paths()) == (spans["state"] == "Recovery").sum()
    cwnd_line = next(line for line in ax.get_lines() if line.get_label() == "cwnd (kB)")
    assert np.allclose(cwnd_line.get_ydata()[:-1], metric_series(ts, trace, "cwnd")["value"] / 1000)


def test_plot_throughput_and_unknown_trace():
    fig = plot_throughput(small(), "c1", bin_s=0.5)
    assert "0.5 s bins" in fig.axes[0].get_ylabel()
    with pytest.raises(UsageError, match="no trace 'zz'"):
        plot_cwnd(small(), "zz")


def test_pick_trace_rules():
    ts = make_set("a", 7, seed=1)
    dur = ts.events.groupby("trace")["time"].agg(lambda t: t.max() - t.min())
    assert pick_trace(ts, "longest") == dur.idxmax()
    assert dur[pick_trace(ts)] == sorted(dur)[3]
    with pytest.raises(UsageError):
        pick_trace(ts, "shortest")


def _rgb(hex_colour: str):
    from matplotlib.colors import to_rgb

    return to_rgb(hex_colour)


def test_representative_trace_is_the_median_share_by_hand():
    from statemine.output.timeline import representative_trace

    ts = make_set("a", 9, seed=4)
    shares = {}
    for trace, ev in ts.events.groupby("trace", observed=True):
        st = ev[ev["kind"] == "state"]
        times = np.r_[st["time"].to_numpy(), ev["time"].max()]
        durations = np.diff(times)
        shares[trace] = durations[(st["state"] == "Recovery").to_numpy()].sum() / durations.sum()
    trace, share = representative_trace(ts, "Recovery")
    assert share == pytest.approx(sorted(shares.values())[4]) and shares[trace] == pytest.approx(
        share
    )
    # a state no trace visits: every share is 0, ties broken by trace id
    assert representative_trace(ts, "Nowhere") == (sorted(shares)[4], 0.0)
    with pytest.raises(UsageError, match="empty"):
        representative_trace(ts.select({"role": "none"}), "Recovery")
