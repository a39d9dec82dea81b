"""diff and timelines on real lab traces (quic-go v0.65.0, desktop vs mobile client)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from statemine.compare import diff
from statemine.lab.findings import select
from statemine.output.timeline import plot_cwnd, state_spans
from statemine.traces import load

DATA = Path(__file__).parent / "data" / "diff" / "quic-go-mobile-servers.parquet"


def fraction_by_hand(ts, state: str) -> float:
    """Seconds in ``state`` over all seconds, straight from the events (state lines to the next
    state line; the last state to the trace's end)."""
    in_state = total = 0.0
    ends = ts.traces.set_index("trace")["end"]
    for trace, ev in ts.events.groupby("trace", observed=True):
        st = ev[ev["kind"] == "state"]
        times = np.r_[st["time"].to_numpy(), max(ends[trace], ev["time"].max())]
        durations = np.diff(times)
        total += durations.sum()
        in_state += durations[(st["state"] == state).to_numpy()].sum()
    return in_state / total


@pytest.fixture(scope="module")
def sides():
    ts = load(DATA)
    return select(ts, {"profile": "desktop"}), select(ts, {"profile": "mobile"})


def test_mobile_client_makes_the_server_application_limited(sides):
    desktop, mobile = sides
    d = diff(desktop, mobile, label_a="desktop", label_b="mobile", n_perm=999, n_boot=200)
    al = d.states.set_index("state").loc["ApplicationLimited"]
    assert al["fraction_a"] == pytest.approx(fraction_by_hand(desktop, "ApplicationLimited"))
    assert al["fraction_b"] == pytest.approx(fraction_by_hand(mobile, "ApplicationLimited"))
    assert al["fraction_b"] > 0.5 > al["fraction_a"]
    assert al["p_value"] == pytest.approx(0.1)  # 3 vs 3: the two extreme splits of C(6, 3) = 20
    assert not al["significant"] and any("smallest possible p-value is 0.10" in n for n in d.notes)


def test_real_timeline_starts_at_zero(sides):
    _, mobile = sides
    trace = mobile.traces["trace"].iloc[0]
    spans = state_spans(mobile, trace)
    assert spans["start"].iloc[0] == 0.0 and (spans["end"] >= spans["start"]).all()
    assert (
        spans["end"].iloc[-1] < 60
    )  # seconds from the first line, not synctest's 2000-01-01 epoch
    fig = plot_cwnd(mobile, trace)
    assert fig.axes[0].get_xlim()[1] == pytest.approx(spans["end"].max())
