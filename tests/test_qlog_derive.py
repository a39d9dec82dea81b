"""States derived from cwnd/ssthresh metrics, checked against a plain-loop reference."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from statemine.parse.derive import derive_states


def reference(cwnds, ssthreshes):
    """The derivation rule of statemine.parse.derive, one update at a time.

    Recovery from a reduction until the window grows; otherwise slow start below the
    threshold (logged, else the window after the latest reduction, else infinite).
    """
    out = []
    prev = None
    in_recovery = False
    inferred = math.inf
    logged = math.nan
    cwnd_known = math.nan
    for cwnd, ssthresh in zip(cwnds, ssthreshes):
        if not math.isnan(ssthresh):
            logged = ssthresh
        if math.isnan(cwnd):
            if math.isnan(cwnd_known):
                continue  # nothing known yet
            cwnd = cwnd_known
        cwnd_known = cwnd
        if prev is not None and cwnd < prev:
            in_recovery, inferred = True, cwnd
        elif prev is not None and cwnd > prev:
            in_recovery = False
        threshold = inferred if math.isnan(logged) else logged
        state = (
            "Recovery"
            if in_recovery
            else "SlowStart"
            if cwnd < threshold
            else "CongestionAvoidance"
        )
        out.append(state)
        prev = cwnd
    return out


def changes(states):
    return [s for i, s in enumerate(states) if i == 0 or s != states[i - 1]]


def test_reduction_recovery_then_avoidance_with_inferred_threshold():
    m = pd.DataFrame({"time": [0.0, 1, 2, 3, 4, 5, 6], "cwnd": [10.0, 20, 40, 20, np.nan, 20, 22]})
    out = derive_states(m)
    assert out[["time", "state"]].values.tolist() == [
        [0.0, "SlowStart"],
        [3.0, "Recovery"],
        [6.0, "CongestionAvoidance"],
    ]
    assert out["ssthresh_inferred"].tolist() == [math.inf, 20, 20]


def test_logged_ssthresh_wins_over_the_inferred_one():
    m = pd.DataFrame(
        {
            "time": [0.0, 1, 2, 3],
            "cwnd": [10.0, 20, 30, 40],
            "ssthresh": [np.nan, 25, np.nan, np.nan],
        }
    )
    out = derive_states(m)
    assert out[["time", "state"]].values.tolist() == [
        [0.0, "SlowStart"],
        [2.0, "CongestionAvoidance"],
    ]
    assert math.isnan(out["ssthresh"].iloc[0]) and out["ssthresh"].iloc[1] == 25.0
    assert out["ssthresh_inferred"].iloc[0] == math.inf and math.isnan(
        out["ssthresh_inferred"].iloc[1]
    )


def test_no_cwnd_gives_no_rows():
    out = derive_states(pd.DataFrame({"time": [0.0, 1.0], "cwnd": [np.nan, np.nan]}))
    assert out.empty and "state" in out.columns


def test_other_columns_are_carried():
    m = pd.DataFrame({"time": [0.0, 1.0], "cwnd": [10.0, 5.0], "line": [7, 9]})
    assert derive_states(m)["line"].tolist() == [7, 9]


windows = st.lists(
    st.one_of(st.just(math.nan), st.integers(1, 6).map(float)), min_size=1, max_size=40
)


@settings(max_examples=300, deadline=None)
@given(cwnds=windows, data=st.data())
def test_matches_the_plain_loop(cwnds, data):
    ssth = data.draw(
        st.lists(
            st.one_of(st.just(math.nan), st.integers(1, 6).map(float)),
            min_size=len(cwnds),
            max_size=len(cwnds),
        )
    )
    m = pd.DataFrame({"time": np.arange(len(cwnds), dtype=float), "cwnd": cwnds, "ssthresh": ssth})
    out = derive_states(m)
    assert out["state"].tolist() == changes(reference(cwnds, ssth))
    # each row is the first update of its state run
    per_update = reference(cwnds, ssth)
    known = [t for t, c in enumerate(cwnds) if not all(math.isnan(x) for x in cwnds[: t + 1])]
    starts = [
        known[i] for i in range(len(per_update)) if i == 0 or per_update[i] != per_update[i - 1]
    ]
    assert out["time"].tolist() == starts
