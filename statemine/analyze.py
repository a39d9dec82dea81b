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

from typing import Literal, NamedTuple

import numpy as np
import pandas as pd

from .traces import TraceSet

INITIAL = "INITIAL"
TERMINAL = "TERMINAL"
EndRule = Literal["close", "last-state"]
END_RULES = ("close", "last-state")


def visits(traces: TraceSet, *, collapse_repeats: bool = False, end: EndRule = "close") -> pd.DataFrame:
    """One row per state visit: ``trace, visit, state, start, end, duration, next``.

    Times in seconds; ``next`` is the following state of the trace or ``TERMINAL``;
    ``trace``, ``state`` and ``next`` are categoricals.

    >>> ts = TraceSet.from_events(pd.DataFrame({"trace": ["a"] * 3, "time": [0.0, 1.0, 4.0],
    ...                                         "state": ["SlowStart", "Recovery", "SlowStart"]}))
    >>> visits(ts)[["state", "duration", "next"]].astype(object).values.tolist()
    [['SlowStart', 1.0, 'Recovery'], ['Recovery', 3.0, 'SlowStart'], ['SlowStart', 0.0, 'TERMINAL']]
    """
    c = _coded_visits(traces, collapse_repeats, end)
    trace_ids = pd.Index(traces.traces["trace"].astype(str))
    names = pd.Index(list(c.names) + [TERMINAL], dtype=str)
    return pd.DataFrame(
        {
            "trace": pd.Categorical.from_codes(c.trace, categories=trace_ids),
            "visit": c.visit,
            "state": pd.Categorical.from_codes(c.state, categories=names),
            "start": c.start,
            "end": c.end,
            "duration": c.end - c.start,
            "next": pd.Categorical.from_codes(c.next, categories=names),
        }
    )


def summarize(
    traces: TraceSet,
    *,
    collapse_repeats: bool = False,
    end: EndRule = "close",
    confidence: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(state_stats(traces), transition_stats(traces))`` computed together: one pass over
    the visits and one bootstrap, whose resampled trace sets are shared by both tables."""
    c = _coded_visits(traces, collapse_repeats, end)
    states, s_num, s_den = _state_table(c, traces.n_traces)
    transitions, e_num, e_den = _transition_table(c, traces.n_traces)
    lo, hi = bootstrap_ratio(np.hstack([s_num, e_num]), np.hstack([np.broadcast_to(s_den, s_num.shape), e_den]),
                             confidence=confidence, n_boot=n_boot, seed=seed)
    k = s_num.shape[1]
    states["time_fraction_lo"], states["time_fraction_hi"] = lo[:k], hi[:k]
    transitions["probability_lo"], transitions["probability_hi"] = lo[k:], hi[k:]
    states = states[states["visits"] > 0]
    states = states.sort_values(["time_fraction", "state"], ascending=[False, True], kind="stable")
    transitions = transitions.sort_values(["src", "dst"], kind="stable")
    return states.reset_index(drop=True), transitions.reset_index(drop=True)


def state_stats(traces: TraceSet, **options) -> pd.DataFrame:
    """Per-state statistics, one row per state, sorted by ``time_fraction`` descending.

    Columns: ``state``; ``time_s`` (seconds in the state, all traces); ``time_fraction``
    (pooled: ``time_s`` / total time of all traces); ``time_fraction_lo``/``_hi``
    (bootstrap interval at ``confidence``); ``mean_trace_fraction`` (mean over traces with
    non-zero duration of the trace's own fraction); ``dwell_mean``, ``dwell_median``,
    ``dwell_p95`` (seconds per visit; quantiles interpolate linearly); ``visits``;
    ``traces`` (traces that visit it). ``time_fraction`` sums to 1 whenever any trace
    has non-zero duration. Options as for :func:`summarize`.

    >>> ts = TraceSet.from_events(pd.DataFrame({"trace": ["a"] * 3, "time": [0.0, 1.0, 4.0],
    ...                                         "state": ["SlowStart", "Recovery", "SlowStart"]}))
    >>> state_stats(ts)[["state", "time_fraction", "visits"]].values.tolist()
    [['Recovery', 0.75, 1], ['SlowStart', 0.25, 2]]
    """
    return summarize(traces, **options)[0]


def transition_stats(traces: TraceSet, **options) -> pd.DataFrame:
    """Per-transition counts and probabilities out of the source state.

    Columns: ``src``, ``dst``, ``count``, ``probability`` (= count / all transitions out of
    ``src``; the probabilities out of one source sum to 1), ``probability_lo``/``_hi``
    (bootstrap over traces). Includes ``INITIAL -> s`` and ``s -> TERMINAL``; rows are
    sorted by ``src`` then ``dst``. Options as for :func:`summarize`.

    >>> ts = TraceSet.from_events(pd.DataFrame({"trace": ["a"] * 3, "time": [0.0, 1.0, 4.0],
    ...                                         "state": ["SlowStart", "Recovery", "SlowStart"]}))
    >>> transition_stats(ts)[["src", "dst", "count", "probability"]].values.tolist()
    [['INITIAL', 'SlowStart', 1, 1.0], ['Recovery', 'SlowStart', 1, 1.0], ['SlowStart', 'Recovery', 1, 0.5], ['SlowStart', 'TERMINAL', 1, 0.5]]
    """
    return summarize(traces, **options)[1]


def _state_table(c: "_CodedVisits", n_traces: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The state table without intervals, and the (num, den) matrices of its fractions."""
    n_states = len(c.names)
    duration = c.end - c.start
    per_trace = _per_trace_times(c.trace, c.state, duration, n_traces, n_states)
    time_s = per_trace.sum(axis=0)
    trace_totals = per_trace.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        fraction = time_s / time_s.sum()
        own = per_trace[trace_totals > 0] / trace_totals[trace_totals > 0, None]
    n_visits = np.bincount(c.state, minlength=n_states)
    visit_counts = _per_trace_times(c.trace, c.state, np.ones(len(c.state)), n_traces, n_states)
    with np.errstate(invalid="ignore", divide="ignore"):
        dwell_mean = np.bincount(c.state, weights=duration, minlength=n_states) / n_visits
    median, p95 = _group_quantiles(c.state, duration, n_states, (0.5, 0.95))
    table = pd.DataFrame(
        {
            "state": pd.Series(c.names, dtype=str),
            "time_s": time_s,
            "time_fraction": fraction,
            "time_fraction_lo": np.nan,
            "time_fraction_hi": np.nan,
            "mean_trace_fraction": own.mean(axis=0) if len(own) else np.full(n_states, np.nan),
            "dwell_mean": dwell_mean,
            "dwell_median": median,
            "dwell_p95": p95,
            "visits": n_visits.astype("int64"),
            "traces": (visit_counts > 0).sum(axis=0).astype("int64"),
        }
    )
    return table, per_trace, trace_totals[:, None]


def _transition_table(c: "_CodedVisits", n_traces: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The transition table without intervals, and the (num, den) matrices of its
    probabilities (per trace: count of the edge, count out of its source)."""
    n = len(c.names)
    names = np.array(list(c.names) + [INITIAL, TERMINAL], dtype=object)
    first = c.visit == 0
    src = np.concatenate([np.full(int(first.sum()), n), c.state])
    dst = np.concatenate([c.state[first], np.where(c.next == n, n + 1, c.next)])
    trace = np.concatenate([c.trace[first], c.trace])
    edge_keys, edge = _small_unique(src * (n + 2) + dst, (n + 2) ** 2)
    per_edge = _per_trace_times(trace, edge, np.ones(len(edge)), n_traces, len(edge_keys))
    edge_src, edge_dst = edge_keys // (n + 2), edge_keys % (n + 2)
    _, src_of_edge = np.unique(edge_src, return_inverse=True)
    out_of_src = np.zeros((n_traces, src_of_edge.max() + 1 if len(src_of_edge) else 0))
    np.add.at(out_of_src.T, src_of_edge, per_edge.T)
    denom = out_of_src[:, src_of_edge]
    total = per_edge.sum(axis=0)
    table = pd.DataFrame(
        {
            "src": pd.Series(names[edge_src], dtype=str),
            "dst": pd.Series(names[edge_dst], dtype=str),
            "count": total.astype("int64"),
            "probability": total / denom.sum(axis=0),
            "probability_lo": np.nan,
            "probability_hi": np.nan,
        }
    )
    return table, per_edge, denom


def trace_state_times(v: pd.DataFrame, traces: TraceSet) -> pd.DataFrame:
    """Seconds each trace spends in each state: a traces x states frame (0 where absent).

    ``v`` is the output of :func:`visits`; rows follow ``traces.traces`` order, columns
    are the states visited, sorted by name.
    """
    trace_ids = pd.Index(traces.traces["trace"].astype(str))
    rows = _codes(v["trace"], traces.traces["trace"])
    cols, names = _state_codes(v["state"])
    matrix = _per_trace_times(rows, cols, v["duration"].to_numpy(float), len(trace_ids), len(names))
    return pd.DataFrame(matrix, index=pd.Index(trace_ids, name="trace"), columns=pd.Index(names, name="state"))


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
    weights = np.empty((batch, rows))
    for start in range(0, n_boot, batch):
        b = min(batch, n_boot - start)
        # Resampling rows with replacement = multinomial counts per row, drawn exactly
        # (and much faster than rng.multinomial) by counting uniform row picks.
        picks = rng.integers(0, rows, size=(b, rows), dtype=np.int32)
        for i in range(b):
            weights[i] = np.bincount(picks[i], minlength=rows)
        with np.errstate(invalid="ignore", divide="ignore"):
            stats[start:start + b] = (weights[:b] @ num) / (weights[:b] @ den)
    lo = np.nanquantile(stats, alpha, axis=0) if np.isfinite(stats).any() else np.full(k, np.nan)
    hi = np.nanquantile(stats, 1.0 - alpha, axis=0) if np.isfinite(stats).any() else np.full(k, np.nan)
    return lo, hi


class _CodedVisits(NamedTuple):
    """State visits as integer-coded arrays (one entry per visit, in trace order).

    ``trace``: row in ``traces.traces``; ``state``: index into ``names``; ``next``: index
    into ``names`` or ``len(names)`` for TERMINAL; ``visit``: 0, 1, ... per trace; ``start``
    and ``end`` in seconds.
    """

    names: list[str]
    trace: np.ndarray
    state: np.ndarray
    next: np.ndarray
    visit: np.ndarray
    start: np.ndarray
    end: np.ndarray


def _coded_visits(traces: TraceSet, collapse_repeats: bool, end: EndRule) -> _CodedVisits:
    if end not in END_RULES:
        raise ValueError(f"end must be one of {END_RULES}, not {end!r}")
    ev = traces.events
    codes_all = _codes(ev["trace"], traces.traces["trace"])
    is_state = (ev["kind"] == "state").to_numpy()
    state_all, names = _state_codes(ev["state"][is_state])
    codes = codes_all[is_state]
    time = ev["time"].to_numpy()[is_state]
    if collapse_repeats and len(codes):
        keep = np.r_[True, (codes[1:] != codes[:-1]) | (state_all[1:] != state_all[:-1])]
        codes, state_all, time = codes[keep], state_all[keep], time[keep]
    n = len(codes)
    first = np.r_[True, codes[1:] != codes[:-1]] if n else np.zeros(0, bool)
    last = np.r_[codes[1:] != codes[:-1], True] if n else np.zeros(0, bool)
    ends = np.empty(n)
    ends[:-1] = time[1:]
    nxt = np.empty(n, dtype=np.int64)
    nxt[:-1] = state_all[1:]
    if n:
        trace_end = _trace_ends(traces, codes_all, end)
        ends[last] = np.maximum(trace_end[codes[last]], time[last])
        nxt[last] = len(names)
    starts = np.flatnonzero(first)
    visit = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n])) if n else np.zeros(0, np.int64)
    return _CodedVisits(names, codes, state_all, nxt, visit.astype(np.int64), time, ends)


def _state_codes(column: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Integer codes of a state column and the names they index, sorted by name."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        cats = column.cat.categories.astype(str)
        codes = column.cat.codes.to_numpy()
        used = np.unique(codes)
        names = sorted(cats[used])
        remap = np.full(len(cats), -1, np.int64)
        remap[used] = pd.Index(names).get_indexer(cats[used])
        return remap[codes], names
    names_arr, codes = np.unique(column.astype(str).to_numpy(), return_inverse=True)
    return codes.astype(np.int64), [str(x) for x in names_arr]


def _small_unique(keys: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` for integer keys in ``[0, bound)``, in O(n)."""
    present = np.flatnonzero(np.bincount(keys, minlength=bound))
    lookup = np.empty(bound, np.int64)
    lookup[present] = np.arange(len(present))
    return present, lookup[keys]


def _per_trace_times(trace: np.ndarray, col: np.ndarray, weights: np.ndarray, n_traces: int, n_cols: int) -> np.ndarray:
    """Sum ``weights`` into a ``n_traces x n_cols`` matrix at (trace, col)."""
    flat = np.bincount(trace * n_cols + col, weights=weights, minlength=n_traces * n_cols)
    return flat.reshape(n_traces, n_cols)


def _group_quantiles(group: np.ndarray, values: np.ndarray, n_groups: int, qs: tuple[float, ...]) -> list[np.ndarray]:
    """Per-group quantiles of ``values`` (numpy's default linear interpolation); NaN for
    empty groups."""
    small = group.astype(np.int16) if n_groups < 2**15 else group  # numpy radix-sorts 16-bit keys
    order = np.argsort(small, kind="stable")
    counts = np.bincount(group, minlength=n_groups)
    bounds = np.r_[0, np.cumsum(counts)]
    out = np.full((len(qs), n_groups), np.nan)
    for g in np.flatnonzero(counts):
        out[:, g] = np.quantile(values[order[bounds[g]:bounds[g + 1]]], qs)
    return list(out)


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
