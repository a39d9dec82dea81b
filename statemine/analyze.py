"""Where the time goes: per-state time fractions, dwell times and transition probabilities.

All functions read the ``kind == "state"`` rows of a :class:`~statemine.traces.TraceSet`
(point events never split a state's time) and return tidy DataFrames.

Rules (docs/log-format.md):

* a state lasts from its line to the next state line of the same trace;
* the last state ends at the trace's end: with ``end="close"`` (default) the trace's
  explicit end (``traces.end``, e.g. an ``event=Close`` line) when known, else the time of
  its last line of any kind; with ``end="last-state"`` at its own line (no time);
* ``collapse_repeats=True`` merges a state logged again while already in it into one visit;
* transitions include ``INITIAL -> first state`` and ``last state -> TERMINAL``, and the
  probability of ``a -> b`` is ``count(a -> b) / count(a -> *)`` (Synoptic's definition);
* confidence intervals come from a percentile bootstrap over traces (whole traces are
  resampled with replacement), seeded and reproducible; they are NaN with fewer than two
  traces.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from .traces import TraceSet

INITIAL = "INITIAL"
TERMINAL = "TERMINAL"
EndRule = Literal["close", "last-state"]
END_RULES = ("close", "last-state")


def visits(traces: TraceSet, *, collapse_repeats: bool = False, end: EndRule = "close") -> pd.DataFrame:
    """One row per state visit: ``trace, visit, state, start, end, duration, next``.

    Times in seconds; ``next`` is the following state of the trace or ``TERMINAL``.

    >>> ts = TraceSet.from_events(pd.DataFrame({"trace": ["a"] * 3, "time": [0.0, 1.0, 4.0],
    ...                                         "state": ["SlowStart", "Recovery", "SlowStart"]}))
    >>> visits(ts)[["state", "duration", "next"]].values.tolist()
    [['SlowStart', 1.0, 'Recovery'], ['Recovery', 3.0, 'SlowStart'], ['SlowStart', 0.0, 'TERMINAL']]
    """
    if end not in END_RULES:
        raise ValueError(f"end must be one of {END_RULES}, not {end!r}")
    ev = traces.events
    codes_all = _codes(ev["trace"], traces.traces["trace"])
    is_state = (ev["kind"] == "state").to_numpy()
    codes = codes_all[is_state]
    state = np.asarray(ev["state"].to_numpy(dtype=object)[is_state], dtype=object)
    time = ev["time"].to_numpy()[is_state]
    if collapse_repeats and len(codes):
        keep = np.r_[True, (codes[1:] != codes[:-1]) | (state[1:] != state[:-1])]
        codes, state, time = codes[keep], state[keep], time[keep]

    n = len(codes)
    last_of_trace = np.r_[codes[1:] != codes[:-1], True] if n else np.zeros(0, bool)
    ends = np.empty(n)
    ends[:-1] = time[1:]
    if n:
        trace_end = _trace_ends(traces, codes_all, end)
        ends[last_of_trace] = np.maximum(trace_end[codes[last_of_trace]], time[last_of_trace])
    nxt = np.empty(n, dtype=object)
    nxt[:-1] = state[1:]
    nxt[last_of_trace] = TERMINAL
    first_of_trace = np.r_[True, codes[1:] != codes[:-1]] if n else np.zeros(0, bool)
    visit_no = np.arange(n) - np.maximum.accumulate(np.where(first_of_trace, np.arange(n), 0)) if n else np.zeros(0, int)
    trace_ids = traces.traces["trace"].to_numpy(dtype=object)
    return pd.DataFrame(
        {
            "trace": pd.Categorical(trace_ids[codes], categories=pd.Index(trace_ids, dtype=str)),
            "visit": visit_no.astype(np.int64),
            "state": pd.Series(state, dtype=str),
            "start": time,
            "end": ends,
            "duration": ends - time,
            "next": pd.Series(nxt, dtype=str),
        }
    )


def state_stats(
    traces: TraceSet,
    *,
    collapse_repeats: bool = False,
    end: EndRule = "close",
    confidence: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """Per-state statistics, one row per state, sorted by ``time_fraction`` descending.

    Columns: ``state``; ``time_s`` (seconds in the state, all traces); ``time_fraction``
    (pooled: ``time_s`` / total time of all traces); ``time_fraction_lo``/``_hi``
    (bootstrap interval at ``confidence``); ``mean_trace_fraction`` (mean over traces with
    non-zero duration of the trace's own fraction); ``dwell_mean``, ``dwell_median``,
    ``dwell_p95`` (seconds per visit); ``visits``; ``traces`` (traces that visit it).
    The ``time_fraction`` column sums to 1 whenever any trace has non-zero duration.

    >>> ts = TraceSet.from_events(pd.DataFrame({"trace": ["a"] * 3, "time": [0.0, 1.0, 4.0],
    ...                                         "state": ["SlowStart", "Recovery", "SlowStart"]}))
    >>> state_stats(ts)[["state", "time_fraction", "visits"]].values.tolist()
    [['Recovery', 0.75, 1], ['SlowStart', 0.25, 2]]
    """
    v = visits(traces, collapse_repeats=collapse_repeats, end=end)
    per_trace = trace_state_times(v, traces)  # traces x states, seconds
    total = per_trace.to_numpy().sum()
    time_s = per_trace.sum(axis=0)
    fraction = time_s / total if total > 0 else time_s * np.nan
    trace_totals = per_trace.sum(axis=1)
    nonzero = trace_totals > 0
    own = per_trace[nonzero].div(trace_totals[nonzero], axis=0)
    lo, hi = bootstrap_ratio(
        per_trace.to_numpy(), per_trace.to_numpy().sum(axis=1, keepdims=True),
        confidence=confidence, n_boot=n_boot, seed=seed,
    )
    dwell = v.groupby("state", observed=True)["duration"]
    out = pd.DataFrame(
        {
            "state": per_trace.columns.astype(str),
            "time_s": time_s.to_numpy(),
            "time_fraction": fraction.to_numpy(),
            "time_fraction_lo": lo,
            "time_fraction_hi": hi,
            "mean_trace_fraction": own.mean(axis=0).reindex(per_trace.columns).to_numpy(),
        }
    ).set_index("state")
    out["dwell_mean"] = dwell.mean()
    out["dwell_median"] = dwell.median()
    out["dwell_p95"] = dwell.quantile(0.95)
    out["visits"] = v.groupby("state", observed=True).size()
    out["traces"] = v.groupby("state", observed=True)["trace"].nunique()
    out = out.reset_index()
    out["visits"] = out["visits"].astype("int64")
    out["traces"] = out["traces"].astype("int64")
    return out.sort_values(["time_fraction", "state"], ascending=[False, True], kind="stable").reset_index(drop=True)


def transition_stats(
    traces: TraceSet,
    *,
    collapse_repeats: bool = False,
    end: EndRule = "close",
    confidence: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """Per-transition counts and probabilities out of the source state.

    Columns: ``src``, ``dst``, ``count``, ``probability`` (= count / all transitions out of
    ``src``; the probabilities out of one source sum to 1), ``probability_lo``/``_hi``
    (bootstrap over traces). Includes ``INITIAL -> s`` and ``s -> TERMINAL``.

    >>> ts = TraceSet.from_events(pd.DataFrame({"trace": ["a"] * 3, "time": [0.0, 1.0, 4.0],
    ...                                         "state": ["SlowStart", "Recovery", "SlowStart"]}))
    >>> transition_stats(ts)[["src", "dst", "count", "probability"]].values.tolist()
    [['INITIAL', 'SlowStart', 1, 1.0], ['Recovery', 'SlowStart', 1, 1.0], ['SlowStart', 'Recovery', 1, 0.5], ['SlowStart', 'TERMINAL', 1, 0.5]]
    """
    v = visits(traces, collapse_repeats=collapse_repeats, end=end)
    first = v[v["visit"] == 0]
    edges = pd.concat(
        [
            pd.DataFrame({"trace": first["trace"], "src": INITIAL, "dst": first["state"]}),
            pd.DataFrame({"trace": v["trace"], "src": v["state"], "dst": v["next"]}),
        ],
        ignore_index=True,
    )
    edges["src"] = edges["src"].astype(str)
    edges["dst"] = edges["dst"].astype(str)
    counts = edges.groupby(["trace", "src", "dst"], observed=True).size().unstack(["src", "dst"], fill_value=0)
    counts = counts.reindex(traces.traces["trace"].astype(str), fill_value=0)
    counts = counts.T.sort_index().T  # columns sorted by (src, dst)
    per_edge = counts.to_numpy(dtype=float)
    src_of_col = counts.columns.get_level_values("src").to_numpy(dtype=object)
    src_codes, src_names = pd.factorize(src_of_col)
    out_of_src = np.zeros((len(counts), len(src_names)))
    np.add.at(out_of_src.T, src_codes, per_edge.T)
    denom = out_of_src[:, src_codes]
    lo, hi = bootstrap_ratio(per_edge, denom, confidence=confidence, n_boot=n_boot, seed=seed)
    total = per_edge.sum(axis=0)
    total_src = denom.sum(axis=0)
    return pd.DataFrame(
        {
            "src": counts.columns.get_level_values("src").astype(str),
            "dst": counts.columns.get_level_values("dst").astype(str),
            "count": total.astype("int64"),
            "probability": total / total_src,
            "probability_lo": lo,
            "probability_hi": hi,
        }
    )


def trace_state_times(v: pd.DataFrame, traces: TraceSet) -> pd.DataFrame:
    """Seconds each trace spends in each state: a traces x states frame (0 where absent).

    ``v`` is the output of :func:`visits`; rows follow ``traces.traces`` order, columns
    are sorted by state name.
    """
    table = v.pivot_table(index="trace", columns="state", values="duration", aggfunc="sum",
                          fill_value=0.0, observed=True)
    table = table.reindex(traces.traces["trace"].astype(str), fill_value=0.0)
    table.columns = table.columns.astype(str)
    return table.sort_index(axis=1).astype(float)


def bootstrap_ratio(
    num: np.ndarray,
    den: np.ndarray,
    *,
    confidence: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of ``sum(num) / sum(den)`` over resampled rows.

    ``num`` is ``rows x k`` and ``den`` is ``rows x k`` or ``rows x 1``: each row is one
    trace, resampled whole. Returns ``(lo, hi)``, arrays of length ``k``; NaN when there are
    fewer than two rows or ``n_boot`` is 0. The same ``seed`` gives the same interval.
    """
    rows, k = num.shape
    if rows < 2 or n_boot <= 0:
        nan = np.full(k, np.nan)
        return nan, nan.copy()
    rng = np.random.default_rng(seed)
    alpha = (1.0 - confidence) / 2.0
    stats = np.empty((n_boot, k))
    batch = max(1, min(n_boot, 2_000_000 // rows))  # bound the weights matrix to ~16 MB
    for start in range(0, n_boot, batch):
        b = min(batch, n_boot - start)
        weights = rng.multinomial(rows, np.full(rows, 1.0 / rows), size=b).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            stats[start:start + b] = (weights @ num) / (weights @ den)
    lo = np.nanquantile(stats, alpha, axis=0) if np.isfinite(stats).any() else np.full(k, np.nan)
    hi = np.nanquantile(stats, 1.0 - alpha, axis=0) if np.isfinite(stats).any() else np.full(k, np.nan)
    return lo, hi


def _codes(trace_column: pd.Series, trace_ids: pd.Series) -> np.ndarray:
    """Position of each event's trace in ``trace_ids`` (the traces frame order)."""
    index = pd.Index(trace_ids.astype(str))
    if isinstance(trace_column.dtype, pd.CategoricalDtype):
        where = index.get_indexer(trace_column.cat.categories.astype(str))
        return where[trace_column.cat.codes.to_numpy()]
    return index.get_indexer(trace_column.astype(str))


def _trace_ends(traces: TraceSet, codes_all: np.ndarray, end: EndRule) -> np.ndarray:
    """End time (seconds) of each trace under the end rule, indexed like ``traces.traces``."""
    n = traces.n_traces
    time = traces.events["time"].to_numpy()
    if end == "last-state":
        return np.full(n, -np.inf)
    last_line = np.full(n, -np.inf)
    np.maximum.at(last_line, codes_all, time)
    explicit = traces.traces["end"].to_numpy(dtype=float)
    return np.where(np.isnan(explicit), last_line, explicit)
