"""Generated trace sets with a known (or no) difference, shared by the diff/report tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

from statemine.traces import TraceSet


def make_set(
    prefix: str,
    n: int,
    *,
    seed: int,
    recovery_mean: float = 0.1,
    p_rto: float = 0.2,
    cycles: int = 6,
    cwnd: bool = False,
    **labels: str,
) -> TraceSet:
    """``n`` traces Init -> SlowStart -> (CongestionAvoidance -> Recovery|RetransmissionTimeout)*.

    Durations are exponential (seconds): CongestionAvoidance mean 0.5, Recovery mean
    ``recovery_mean``, RetransmissionTimeout mean 0.2; after CongestionAvoidance the next state is
    RetransmissionTimeout with probability ``p_rto``. Each trace ends with an ``event=Close``.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        trace, t = f"{prefix}{i}", 0.0
        seq = [("Init", 0.01), ("SlowStart", rng.exponential(0.3))]
        for _ in range(rng.integers(1, cycles + 1)):
            seq.append(("CongestionAvoidance", rng.exponential(0.5)))
            if rng.random() < p_rto:
                seq.append(("RetransmissionTimeout", rng.exponential(0.2)))
            else:
                seq.append(("Recovery", rng.exponential(recovery_mean)))
        seq.append(("CongestionAvoidance", rng.exponential(0.5)))
        window = 14720.0
        for state, duration in seq:
            row = {"trace": trace, "time": t, "kind": "state", "state": state}
            if cwnd:
                window = (
                    window * 2
                    if state == "SlowStart"
                    else (window / 2 if state == "Recovery" else window + 1472)
                )
                row.update(cwnd=window, inflight=window * 0.8)
            rows.append(row)
            t += duration
        rows.append({"trace": trace, "time": t, "kind": "event", "state": "Close"})
    events = pd.DataFrame(rows)
    traces = pd.DataFrame({"trace": [f"{prefix}{i}" for i in range(n)]})
    for key, value in labels.items():
        traces[key] = value
    return TraceSet.from_events(events, traces)


def one_trace(trace: str, times: list[float], states: list[str]) -> pd.DataFrame:
    """Events of one trace (all state lines)."""
    return pd.DataFrame({"trace": trace, "time": times, "state": states})


def visit_seconds(ts: TraceSet, **options) -> np.ndarray:
    """Seconds per trace (rows: ``ts.traces`` order) and state (columns: sorted names), summed
    from ``visits()`` one visit at a time with ``np.add.at``: an oracle for the per-trace
    statistics (``trace_state_times``, ``PartialStats.trace_state_seconds``) that shares
    only the visits with them."""
    from statemine.stats.summary import visits

    v = visits(ts, **options)
    rows = pd.Index(ts.traces["trace"].astype(str)).get_indexer(pd.Index(v["trace"].astype(str)))
    names = sorted(set(v["state"].astype(str)))
    cols = pd.Index(names).get_indexer(pd.Index(v["state"].astype(str)))
    out = np.zeros((ts.n_traces, len(names)))
    np.add.at(out, (rows, cols), v["duration"].to_numpy(float))
    return out
