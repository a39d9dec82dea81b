"""What changed between two trace sets: per-state time fractions and per-edge transition
probabilities, with tests that respect how the data were sampled.

The unit of replication is the **trace** (one connection): states are compared on their
pooled time fraction (seconds in the state / seconds of all traces of the side), with

* a confidence interval of the difference ``B - A`` from a percentile bootstrap that
  resamples whole traces of each side independently (Efron & Tibshirani 1993, ch. 13);
* a two-sided p-value from a permutation test that shuffles the A/B labels of whole traces
  (exact enumeration of every relabelling when there are few, else ``n_perm`` random
  relabellings with the ``(k + 1) / (n + 1)`` estimate of Phipson & Smyth 2010);
* Holm's step-down correction over the states (Holm 1979), which controls the family-wise
  error rate without assuming independence between states;
* checks that the comparison can be evidence at all: **pseudo-replicates** (a side whose
  traces give the same share of a state, within :data:`IDENTICAL_TOL`: copies, not
  independent runs; such a state is never ``significant`` and its interval, collapsed to
  a point, is flagged) and **power** (the smallest p-value the permutation test can reach
  with these group sizes, times the number of Holm-corrected tests: when that is at least
  ``alpha`` no state can be significant and the result is ``underpowered``);
* optionally ``strata`` (trace labels such as the implementation): labels are shuffled and
  traces resampled only within each stratum (a stratified permutation test), so pooling
  several implementations or scenario cells does not confound the comparison.

Transitions are compared per source state on the 2 x k table of destination counts
(row A, row B): Pearson's chi-square (or the G-test, ``transition_test="g"``) when every
expected count is at least 5 (Cochran's rule), else Fisher's exact test -- the
hypergeometric test for 2 x 2 tables, and for 2 x k its Freeman-Halton extension with the
p-value estimated from random tables with the observed margins (:func:`fisher_mc`:
scipy's ``MonteCarloMethod`` recipe, seeded). Fisher rather than Barnard because it conditions on both
margins, like the chi-square test it replaces, and extends to k > 2. These tests treat the
transitions as independent draws, which transitions of one trace are not: read their
p-values as a screen. Holm's correction is applied over the tested source states. Which
edges of a changed source moved? Each edge gets a post-hoc 2 x 2 test (this destination vs
the source's other destinations, A vs B; chi-square or Fisher by the same rule), Holm-adjusted
within its source (``p_edge``); an edge is flagged significant only when both its source's
test and its own pass (a gatekeeping procedure), so unchanged edges of a changed source,
and cells with one or two counts, are not flagged.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np
import pandas as pd

from .errors import InputError, UsageError
from .stats.options import CompareOptions, TransitionTest
from .stats.partial import PartialStats, map_traces
from .stats.resampling import (
    INTERVAL_METHODS,
    Table,
    bootstrap_delta,
    factorize,
    holm,
    permutation_pvalues,
    pooled_fraction,
    power,
)
from .stats.tables import tables
from .traces import TraceSet
from .units import p_value_report

if TYPE_CHECKING:
    from scipy.sparse import csr_array

#: Smallest expected count for the chi-square / G approximation (Cochran's rule).
MIN_EXPECTED = 5.0

STATE_COLUMNS = [
    "state",
    "fraction_a",
    "fraction_b",
    "delta",
    "delta_lo",
    "delta_hi",
    "p_value",
    "significant",
    "p_holm",
    "time_a_s",
    "time_b_s",
    "traces_a",
    "traces_b",
    "presence",
    "sd_a",
    "sd_b",
    "pseudo_replicates",
    "interval_collapsed",
]
#: Per-trace shares of a state (fractions in [0, 1]) closer than this count as identical:
#: 0.01 percentage points, ten times finer than any share statemine prints. Deterministic
#: runs that differ only in float rounding or in a few microseconds fall under it.
IDENTICAL_TOL = 1e-4
#: Most distinct states :func:`diff` compares (both sides): its bootstrap keeps an
#: ``n_boot x states`` table of differences (~65 MiB at the default n_boot) and every state
#: is a test. Congestion-control logs have tens of states; thousands look like an id in the
#: state field.
MAX_STATES = 4096
#: The state statistics hold dense traces (of both sides) x states tables up to this many
#: cells (32 MiB per float64 table), else sparse ones (scipy CSR: memory grows with the
#: (trace, state) pairs visited, not with traces x states). The same functions run on
#: either (:data:`~statemine.stats.resampling.Table`); the dense layout's numbers are those
#: of statemine before the sparse one existed, bit for bit, and the sparse layout's equal
#: them up to float rounding (tests/test_diff_sparse.py).
DENSE_CELLS = 1 << 22
TRANSITION_COLUMNS = [
    "src",
    "dst",
    "prob_a",
    "prob_b",
    "delta",
    "p_value",
    "significant",
    "p_holm",
    "p_edge",
    "count_a",
    "count_b",
    "test",
    "presence",
]
ONLY_COLUMNS = ["kind", "name", "src", "dst", "share", "count"]


@dataclass(frozen=True)
class DiffResult:
    """The comparison of side A with side B (every ``delta`` is B minus A).

    ``states``: one row per state of either side (:data:`STATE_COLUMNS`; fractions in
    [0, 1]). ``transitions``: one row per edge of either side (:data:`TRANSITION_COLUMNS`;
    ``prob_x`` is NaN when the source state never occurs on side x). ``only_a`` /
    ``only_b``: the states and edges seen on one side only (:data:`ONLY_COLUMNS`; ``share``
    is the time fraction of a state or the probability of an edge). ``notes``: plain-English
    warnings about the comparison (few traces, disjoint vocabularies, ...).

    Evidence checks (see :func:`power` and :func:`identical_columns`): ``states`` columns
    ``sd_a``/``sd_b`` (standard deviation over a side's traces of their own share of the
    state), ``pseudo_replicates`` (a side's traces give the same share: never
    ``significant``) and ``interval_collapsed`` (the bootstrap interval is a point while
    the state occurs); ``min_p`` (the smallest p-value the permutation test can reach with
    these traces and strata), ``min_p_holm`` (times the number of Holm-corrected states,
    at most 1) and ``underpowered`` (``min_p_holm >= alpha``: no state can be significant).
    """

    states: pd.DataFrame
    transitions: pd.DataFrame
    only_a: pd.DataFrame
    only_b: pd.DataFrame
    label_a: str = "A"
    label_b: str = "B"
    n_traces_a: int = 0
    n_traces_b: int = 0
    alpha: float = 0.05
    notes: list[str] = field(default_factory=list)
    min_p: float = math.nan
    min_p_holm: float = math.nan
    underpowered: bool = False

    @property
    def pseudo_replicated(self) -> list[str]:
        """The states whose traces are pseudo-replicates on at least one side (sorted)."""
        return sorted(self.states.loc[self.states["pseudo_replicates"], "state"])

    def one_sided(self) -> pd.DataFrame:
        """``only_a`` and ``only_b`` in one frame, with a ``side`` column (the side's label)."""
        return pd.concat(
            [self.only_a.assign(side=self.label_a), self.only_b.assign(side=self.label_b)],
            ignore_index=True,
        )

    def ranking(self, top: int | None = 10) -> pd.DataFrame:
        """The significant changes, largest ``|delta|`` first: ``kind, name, a, b, delta,
        delta_lo, delta_hi, p_holm`` (the interval is the states' bootstrap one; NaN for
        transitions).

        States and transitions are ranked together (both deltas are in [-1, 1]).
        """
        s = self.states[self.states["significant"]]
        t = self.transitions[self.transitions["significant"]]
        rows = pd.concat(
            [
                pd.DataFrame(
                    {
                        "kind": "state",
                        "name": s["state"],
                        "a": s["fraction_a"],
                        "b": s["fraction_b"],
                        "delta": s["delta"],
                        "delta_lo": s["delta_lo"],
                        "delta_hi": s["delta_hi"],
                        "p_holm": s["p_holm"],
                    }
                ),
                pd.DataFrame(
                    {
                        "kind": "transition",
                        "name": t["src"] + " -> " + t["dst"],
                        "a": t["prob_a"],
                        "b": t["prob_b"],
                        "delta": t["delta"],
                        "delta_lo": np.nan,
                        "delta_hi": np.nan,
                        "p_holm": t["p_holm"],
                    }
                ),
            ],
            ignore_index=True,
        )
        rows = rows.assign(size=rows["delta"].abs()).sort_values(
            ["size", "kind", "name"], ascending=[False, True, True], kind="stable"
        )
        rows = rows.drop(columns="size").reset_index(drop=True)
        return rows if top is None else rows.head(top)


def diff(
    a: TraceSet,
    b: TraceSet,
    options: CompareOptions | None = None,
    *,
    label_a: str = "A",
    label_b: str = "B",
    **changes: Any,
) -> DiffResult:
    """Compare trace sets ``a`` and ``b`` state by state and edge by edge (see the module doc).

    ``options``: a :class:`~statemine.stats.options.CompareOptions`, and/or its fields as
    keywords (``n_perm``, ``n_boot``, ``seed``, ``alpha``, ``confidence``,
    ``transition_test``, ``collapse_repeats``, ``end``, ``strata``). ``strata``: trace
    label column(s) (e.g. ``"implementation"``): the permutation test then relabels traces
    only within each stratum and the bootstrap resamples within strata, so a comparison
    pooled over, say, two implementations is not confounded by them.

    Raises :class:`~statemine.errors.UsageError` when a side has no trace, no state line or
    no time, or when an option is out of range. Results are reproducible for a given ``seed``.

    >>> import pandas as pd
    >>> def one(trace, times, states):
    ...     return pd.DataFrame({"trace": trace, "time": times, "state": states})
    >>> a = TraceSet.from_events(pd.concat([one(f"a{i}", [0, 1, 2], ["SlowStart", "Recovery", "SlowStart"])
    ...                                     for i in range(3)]))
    >>> b = TraceSet.from_events(pd.concat([one(f"b{i}", [0, 3, 4], ["SlowStart", "Recovery", "SlowStart"])
    ...                                     for i in range(3)]))
    >>> d = diff(a, b, n_perm=100, n_boot=0)
    >>> d.states[["state", "fraction_a", "fraction_b", "delta", "p_value"]].values.tolist()
    [['Recovery', 0.5, 0.25, -0.25, 0.1], ['SlowStart', 0.5, 0.75, 0.25, 0.1]]
    """
    opts = CompareOptions.of(options, **changes)
    check_options(opts, (label_a, label_b))
    return diff_stats(
        (map_traces(a, opts), a.traces),
        (map_traces(b, opts), b.traces),
        opts,
        label_a=label_a,
        label_b=label_b,
    )


def diff_stats(
    a: tuple[PartialStats, pd.DataFrame],
    b: tuple[PartialStats, pd.DataFrame],
    options: CompareOptions | None = None,
    *,
    label_a: str = "A",
    label_b: str = "B",
    **changes: Any,
) -> DiffResult:
    """:func:`diff` from each side's per-trace statistics (a
    :class:`~statemine.stats.partial.PartialStats`, e.g. merged from partitions summarized
    on dask workers with :func:`~statemine.stats.partial.map_traces`, made with the same
    ``options``) and its traces frame (``trace``, ``source`` and the labels, one row per
    trace in the statistics' trace order). The tests run here, from the per-trace sums."""
    opts = CompareOptions.of(options, **changes)
    check_options(opts, (label_a, label_b))
    (pa, traces_a), (pb, traces_b) = a, b
    notes: list[str] = []
    for p, traces, label in ((pa, traces_a, label_a), (pb, traces_b, label_b)):
        if len(traces) != p.n_traces:
            raise ValueError(
                f"side {label}: {len(traces)} rows of traces for statistics of {p.n_traces}"
            )
        _check_side(p, label)
    names = sorted(set(pa.names) | set(pb.names))
    check_size(len(names), _first_source(traces_a if len(pa.names) >= len(pb.names) else traces_b))
    dense = (pa.n_traces + pb.n_traces) * len(names) <= DENSE_CELLS
    ta, tb = _seconds(pa, names, dense), _seconds(pb, names, dense)
    for table, label in ((ta, label_a), (tb, label_b)):
        if table.sum() <= 0:
            raise UsageError(
                f"side {label} has no time in any state: every trace lasts 0 s "
                "(does the log have an end, e.g. an event=Close line?)"
            )
    strata = list(opts.strata) or None
    ga, gb = _strata_labels(traces_a, strata, label_a), _strata_labels(traces_b, strata, label_b)
    states, (min_p, min_p_holm) = _state_diff(
        names,
        (ta, tb),
        (_per_state(pa, names), _per_state(pb, names)),
        (ga, gb),
        opts,
        notes=notes,
        labels=(label_a, label_b),
    )
    counts = dataclasses.replace(opts, n_boot=0)
    trans = _transition_diff(
        tables(pa, counts)[1],
        tables(pb, counts)[1],
        test=opts.transition_test,
        alpha=opts.alpha,
        seed=opts.seed,
    )
    notes.extend(_vocabulary_notes(states, traces_a, traces_b, label_a, label_b))
    notes.extend(_mixing_notes(traces_a, traces_b, strata))
    return DiffResult(
        states=states,
        transitions=trans,
        only_a=_only(states, trans, "only_a", "fraction_a", "prob_a", "count_a"),
        only_b=_only(states, trans, "only_b", "fraction_b", "prob_b", "count_b"),
        label_a=label_a,
        label_b=label_b,
        n_traces_a=pa.n_traces,
        n_traces_b=pb.n_traces,
        alpha=opts.alpha,
        notes=notes,
        min_p=min_p,
        min_p_holm=min_p_holm,
        underpowered=bool(min_p_holm >= opts.alpha),
    )


def _seconds(p: PartialStats, names: list[str], dense: bool) -> Table:
    """Seconds per trace (rows) and state (columns as ``names``, a superset of ``p.names``):
    a dense array, or (not ``dense``) a CSR array of the visited (trace, state) pairs."""
    column = np.searchsorted(names, p.names)
    if dense:
        out = np.zeros((p.n_traces, len(names)))
        out[:, column] = p.trace_state_seconds()
        return out
    from scipy.sparse import csr_array

    trace, state, seconds = p.trace_state_entries()
    # entries ascend by (trace, state) and ``column`` ascends: CSR order, sorted columns
    indptr = np.r_[0, np.cumsum(np.bincount(trace, minlength=p.n_traces))]
    return csr_array(
        (seconds.astype(float), column[state].astype(np.int32), indptr),
        shape=(p.n_traces, len(names)),
    )


def _per_state(p: PartialStats, names: list[str]) -> np.ndarray:
    """How many traces visit each state of ``names``."""
    out = np.zeros(len(names), np.int64)
    out[np.searchsorted(names, p.names)] = p.traces_per_state()
    return out


def check_options(opts: CompareOptions, labels: tuple[str, str] | None = None) -> None:
    """Raise :class:`~statemine.errors.UsageError` for an option out of range, an empty
    ``strata`` label, or two equal side ``labels``: what can be checked before any trace
    is read (``statemine diff`` and ``report`` check it before a Dask cluster starts)."""
    if labels is not None and str(labels[0]) == str(labels[1]):
        raise UsageError(f"both sides are labelled {labels[0]!r}: give them different labels")
    if any(not str(s).strip() for s in opts.strata):
        raise UsageError("--strata: a trace label name is empty")
    if opts.n_perm < 1:
        raise UsageError(f"n_perm must be at least 1, not {opts.n_perm}")
    if opts.n_boot < 0:
        raise UsageError(f"n_boot must be at least 0, not {opts.n_boot}")
    if not 0 < opts.alpha < 1:
        raise UsageError(f"alpha must be in (0, 1), not {opts.alpha}")
    if not 0 < opts.confidence < 1:
        raise UsageError(f"confidence must be in (0, 1), not {opts.confidence}")
    if opts.transition_test not in ("chi2", "g"):
        raise UsageError(f"transition_test must be 'chi2' or 'g', not {opts.transition_test!r}")
    if opts.interval not in INTERVAL_METHODS:
        raise UsageError(
            f"interval must be one of {', '.join(INTERVAL_METHODS)}, not {opts.interval!r}"
        )


def _strata_labels(
    traces: pd.DataFrame, strata: str | Sequence[str] | None, label: str
) -> np.ndarray | None:
    """One stratum label per trace (``traces`` order), joining the ``strata`` columns; None
    without. A trace without a label is in the stratum ``(no <column>)`` of its side."""
    if strata is None:
        return None
    columns = [strata] if isinstance(strata, str) else list(strata)
    missing = [c for c in columns if c not in traces.columns]
    if missing:
        raise UsageError(
            f"side {label} has no trace label {missing[0]!r} to stratify by "
            f"(labels: {', '.join(c for c in traces.columns if c not in ('trace', 'source', 'end'))})"
        )
    parts = [
        traces[c].astype(object).where(traces[c].notna(), f"(no {c})").map(str) for c in columns
    ]
    return pd.concat(parts, axis=1).agg(" | ".join, axis=1).to_numpy(dtype=object)


def check_size(n_states: int, source: str | None = None) -> None:
    """Refuse a comparison past :data:`MAX_STATES` distinct states, before any per-state
    table is built; ``source`` (an input file, the side with more states) is named in the
    error. (Traces are not bounded: past :data:`DENSE_CELLS` the tables are sparse.)

    >>> check_size(6)
    >>> check_size(10_000, "ids.log")
    Traceback (most recent call last):
    ...
    statemine.errors.InputError: ids.log: 10000 distinct states: diff compares at most 4096; so many states looks like an id in the state field: narrow the input with --select, or fix the log's state field
    """
    if n_states > MAX_STATES:
        raise InputError(
            source,
            None,
            f"{n_states} distinct states: diff compares at most {MAX_STATES}; so many states "
            "looks like an id in the state field: narrow the input with --select, or fix the "
            "log's state field",
        )


def _first_source(traces: pd.DataFrame) -> str | None:
    """The first input file of a side (for messages), None when it names none."""
    if "source" not in traces.columns or len(traces) == 0:
        return None
    return str(traces["source"].iloc[0]) or None


def _check_side(p: PartialStats, label: str) -> None:
    if p.n_traces == 0:
        raise UsageError(f"side {label} has no traces: nothing to compare")
    if not p.names:
        raise UsageError(f"side {label} has no state lines (only events): nothing to compare")


# -- states ---------------------------------------------------------------------------
def _state_diff(
    names: list[str],
    seconds: tuple[Table, Table],
    traces: tuple[np.ndarray, np.ndarray],
    strata: tuple[np.ndarray | None, np.ndarray | None],
    opts: CompareOptions,
    *,
    notes: list[str],
    labels: tuple[str, str],
) -> tuple[pd.DataFrame, tuple[float, float]]:
    """The states table from each side's traces x states seconds (columns ``names``), the
    traces visiting each state, and the stratum labels; and ``(min_p, min_p_holm)`` (see
    :func:`power`)."""
    n_perm, seed, alpha = opts.n_perm, opts.seed, opts.alpha
    keep_a = _nonzero_rows(seconds[0], labels[0], notes)
    keep_b = _nonzero_rows(seconds[1], labels[1], notes)
    xa, xb = seconds[0][keep_a], seconds[1][keep_b]
    ga, gb = strata
    if ga is not None and gb is not None:
        ga, gb = ga[keep_a], gb[keep_b]
    fa, fb = pooled_fraction(xa), pooled_fraction(xb)
    p = permutation_pvalues(xa, xb, strata_a=ga, strata_b=gb, n_perm=n_perm, seed=seed)
    lo, hi = bootstrap_delta(
        xa,
        xb,
        strata_a=ga,
        strata_b=gb,
        n_boot=opts.n_boot,
        confidence=opts.confidence,
        seed=seed,
        method=opts.interval,
    )
    n_tests = int(np.isfinite(p).sum())
    n_a, n_b = xa.shape[0], xb.shape[0]
    min_p, min_p_holm = power(n_a, n_b, ga, gb, n_perm=n_perm, n_tests=n_tests)
    notes.extend(_sample_size_notes(n_a, n_b, ga, gb, min_p, min_p_holm, n_tests, alpha, labels))
    share_a, share_b = trace_shares(xa), trace_shares(xb)
    flat_a, flat_b = identical_columns(share_a, ga), identical_columns(share_b, gb)
    pseudo = flat_a | flat_b
    occurs = (fa > 0) | (fb > 0)
    collapsed = occurs & ((hi - lo) <= IDENTICAL_TOL)
    p_holm = holm(p)
    traces_a, traces_b = traces
    in_a = (xa.sum(axis=0) > 0) | (traces_a > 0)
    in_b = (xb.sum(axis=0) > 0) | (traces_b > 0)
    out = pd.DataFrame(
        {
            "state": pd.Series(names, dtype=str),
            "fraction_a": fa,
            "fraction_b": fb,
            "delta": fb - fa,
            "delta_lo": lo,
            "delta_hi": hi,
            "p_value": p,
            "significant": (p_holm < alpha) & ~pseudo,
            "p_holm": p_holm,
            "time_a_s": xa.sum(axis=0),
            "time_b_s": xb.sum(axis=0),
            "traces_a": traces_a,
            "traces_b": traces_b,
            "presence": _presence(in_a, in_b),
            "sd_a": _sd(share_a),
            "sd_b": _sd(share_b),
            "pseudo_replicates": pseudo,
            "interval_collapsed": collapsed,
        }
    )
    notes.extend(_pseudo_notes(out, flat_a, flat_b, ga is not None, labels))
    out = out.assign(size=out["delta"].abs()).sort_values(
        ["size", "state"], ascending=[False, True], kind="stable"
    )
    return out[STATE_COLUMNS].reset_index(drop=True), (min_p, min_p_holm)


@overload
def trace_shares(x: np.ndarray) -> np.ndarray: ...
@overload
def trace_shares(x: csr_array) -> csr_array: ...
def trace_shares(x: Table) -> Table:
    """Each trace's own share of time per state: rows of ``x`` (traces x states, seconds,
    every row total > 0) over their totals; rows sum to 1. Sparse in, sparse out (the
    stored cells divided as the dense ones are).

    >>> trace_shares(np.array([[1.0, 3.0], [2.0, 0.0]])).tolist()
    [[0.25, 0.75], [1.0, 0.0]]
    """
    if isinstance(x, np.ndarray):
        return x / x.sum(axis=1, keepdims=True)
    from scipy.sparse import csr_array

    per_cell = np.repeat(x.sum(axis=1), np.diff(x.indptr))
    return csr_array((x.data / per_cell, x.indices, x.indptr), shape=x.shape)


def _sd(share: Table) -> np.ndarray:
    """Sample standard deviation per column (NaN with fewer than two rows); a sparse
    ``share``'s unstored cells count as zeros (the squared deviations of the stored cells,
    plus the mean squared once per unstored cell)."""
    n, k = share.shape
    if n < 2:
        return np.full(k, np.nan)
    if isinstance(share, np.ndarray):
        return share.std(axis=0, ddof=1)
    mean = share.sum(axis=0) / n
    stored = np.bincount(share.indices, minlength=k)
    squares = np.bincount(
        share.indices, weights=(share.data - mean[share.indices]) ** 2, minlength=k
    )
    return np.sqrt((squares + (n - stored) * mean**2) / (n - 1))


def identical_columns(
    share: Table, strata: np.ndarray | None = None, *, tol: float = IDENTICAL_TOL
) -> np.ndarray:
    """Per column (state) of ``share`` (traces x states, per-trace shares in [0, 1], dense
    or sparse): True when the traces are pseudo-replicates -- in some stratum holding at
    least two traces (the whole side without ``strata``) the values differ by at most
    ``tol`` and the state occurs there (a value > 0). A state absent from every trace of a
    stratum is a real constant, not a copy; one stratum of copies is enough to inflate a
    stratified test.

    >>> identical_columns(np.array([[0.2, 0.0, 0.5], [0.2, 0.0, 0.7]])).tolist()
    [True, False, False]
    >>> identical_columns(np.array([[0.2], [0.2], [0.1], [0.3]]), np.array(["x", "x", "y", "y"])).tolist()
    [True]
    """
    n, k = share.shape
    codes = np.zeros(n, np.int64) if strata is None else factorize(np.asarray(strata, dtype=object))
    if not isinstance(share, np.ndarray):
        return _identical_sparse(share, codes, tol)
    flat = np.zeros(k, bool)
    for c in np.unique(codes):
        part = share[codes == c]
        if len(part) >= 2:
            flat |= ((part.max(axis=0) - part.min(axis=0)) <= tol) & (part.max(axis=0) > 0)
    return flat


def _identical_sparse(share: csr_array, codes: np.ndarray, tol: float) -> np.ndarray:
    """:func:`identical_columns` of a CSR ``share`` with stratum ``codes`` per row, in
    memory of its stored cells: the max and min per (stratum, column) pair stored; the
    min is 0 when some row of the stratum has the cell unstored (shares are >= 0)."""
    k = share.shape[1]
    size = np.bincount(codes)
    stratum = np.repeat(codes, np.diff(share.indptr))
    pair, at = np.unique(stratum * k + share.indices, return_inverse=True)
    hi, lo = np.zeros(len(pair)), np.full(len(pair), np.inf)
    np.maximum.at(hi, at, share.data)
    np.minimum.at(lo, at, share.data)
    lo = np.where(np.bincount(at, minlength=len(pair)) < size[pair // k], 0.0, lo)
    flat_pair = (size[pair // k] >= 2) & (hi - lo <= tol) & (hi > 0)
    flat = np.zeros(k, bool)
    flat[pair[flat_pair] % k] = True
    return flat


def _nonzero_rows(x: Table, label: str, notes: list[str]) -> np.ndarray:
    """Rows to keep: traces that last 0 s carry no time and would make a pooled 0/0."""
    keep = x.sum(axis=1) > 0
    if not keep.all():
        notes.append(
            f"{int((~keep).sum())} trace(s) of {label} last 0 s and were left out "
            "of the time-fraction comparison"
        )
    return keep


def _presence(in_a: np.ndarray, in_b: np.ndarray) -> np.ndarray:
    return np.where(in_a & in_b, "both", np.where(in_a, "only_a", "only_b"))


# -- transitions ----------------------------------------------------------------------
def _transition_diff(
    sa: pd.DataFrame, sb: pd.DataFrame, *, test: TransitionTest, alpha: float, seed: int
) -> pd.DataFrame:
    """The transitions table from two :func:`~statemine.stats.summary.transition_stats` tables."""
    m = pd.merge(
        sa[["src", "dst", "count"]],
        sb[["src", "dst", "count"]],
        on=["src", "dst"],
        how="outer",
        suffixes=("_a", "_b"),
    )
    m["count_a"] = m["count_a"].fillna(0).astype("int64")
    m["count_b"] = m["count_b"].fillna(0).astype("int64")
    out_a = m.groupby("src")["count_a"].transform("sum")
    out_b = m.groupby("src")["count_b"].transform("sum")
    m["prob_a"] = (m["count_a"] / out_a).where(out_a > 0)
    m["prob_b"] = (m["count_b"] / out_b).where(out_b > 0)
    m["delta"] = m["prob_b"] - m["prob_a"]
    rng = np.random.default_rng(seed)
    per_src = {
        src: transition_test(np.vstack([g["count_a"], g["count_b"]]), test=test, rng=rng)
        for src, g in m.groupby("src", sort=True)
    }
    m["p_value"] = m["src"].map({s: r[0] for s, r in per_src.items()}).astype(float)
    m["test"] = m["src"].map({s: r[1] for s, r in per_src.items()}).astype(str)
    sources = sorted(per_src, key=str)
    adjusted = dict(zip(sources, holm(np.array([per_src[s][0] for s in sources], dtype=float))))
    m["p_holm"] = m["src"].map(adjusted).astype(float)
    m["p_edge"] = _edge_pvalues(m, test=test)
    m["significant"] = (m["p_holm"] < alpha) & (m["p_edge"] < alpha)
    m["presence"] = _presence((m["count_a"] > 0).to_numpy(), (m["count_b"] > 0).to_numpy())
    m = m.assign(size=m["delta"].abs().fillna(-1.0)).sort_values(
        ["size", "src", "dst"], ascending=[False, True, True], kind="stable"
    )
    m["src"] = m["src"].astype(str)
    m["dst"] = m["dst"].astype(str)
    return m[TRANSITION_COLUMNS].reset_index(drop=True)


def _edge_pvalues(m: pd.DataFrame, *, test: TransitionTest) -> pd.Series:
    """Post-hoc p-value of each edge: its 2 x 2 table (this destination vs the source's others,
    row A, row B) through :func:`transition_test`, Holm-adjusted within the source. NaN when
    the source is on one side only."""
    out_a = m.groupby("src")["count_a"].transform("sum").to_numpy()
    out_b = m.groupby("src")["count_b"].transform("sum").to_numpy()
    ca, cb = m["count_a"].to_numpy(), m["count_b"].to_numpy()
    raw = np.array(
        [
            transition_test(
                np.array([[ca[i], out_a[i] - ca[i]], [cb[i], out_b[i] - cb[i]]]), test=test
            )[0]
            for i in range(len(m))
        ],
        dtype=float,
    )
    adjusted = pd.Series(raw, index=m.index)
    for _, rows in m.groupby("src").groups.items():
        adjusted[rows] = holm(raw[m.index.get_indexer(rows)])
    return adjusted


def transition_test(
    table: np.ndarray,
    *,
    test: TransitionTest = "chi2",
    rng: np.random.Generator | None = None,
    n_mc: int = 9999,
) -> tuple[float, str]:
    """p-value and test name for a 2 x k table of destination counts (row A, row B).

    ``"chi2"``/``"g"`` when every expected count is >= 5; else ``"fisher"`` (2 x 2, exact)
    or ``"fisher-mc"`` (2 x k, Monte Carlo over tables with the observed margins,
    ``n_mc`` draws). A side without transitions gives ``(nan, "only in A"/"only in B")``;
    a single destination gives ``(1.0, "one destination")``.

    >>> transition_test(np.array([[8, 2], [1, 5]]))
    (0.034965034965034975, 'fisher')
    """
    table = np.asarray(table, dtype=np.int64)
    rows = table.sum(axis=1)
    if rows[0] == 0 or rows[1] == 0:
        return math.nan, "only in B" if rows[0] == 0 else "only in A"
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return 1.0, "one destination"
    from scipy import stats  # imported here: scipy.stats takes ~1 s to import, keep the CLI quick

    expected = stats.contingency.expected_freq(table)
    if expected.min() >= MIN_EXPECTED:
        lam: Literal["log-likelihood"] | None = "log-likelihood" if test == "g" else None
        return float(stats.chi2_contingency(table, correction=False, lambda_=lam).pvalue), test
    if table.shape[1] == 2:
        return float(stats.fisher_exact(table).pvalue), "fisher"
    return fisher_mc(table, n_mc, rng if rng is not None else np.random.default_rng(0)), "fisher-mc"


def fisher_mc(table: np.ndarray, n_mc: int, rng: np.random.Generator) -> float:
    """Monte Carlo p-value of Fisher's exact test of an r x c ``table`` (integer counts):
    ``n_mc`` tables drawn with the observed margins (:class:`scipy.stats.random_table`,
    seeded by ``rng``), p = (1 + #{drawn tables no more probable than the observed one}) /
    (n_mc + 1), "no more" with scipy's relative tolerance of 100 machine epsilons.

    The recipe of ``scipy.stats.fisher_exact(table, method=MonteCarloMethod(...))``, with
    the same draws, written out because scipy (1.17) tells one table from a batch of
    them by the total count and fails ("cannot reshape array") on a table whose count
    exceeds ``n_mc`` x its cells, as the transitions of 150 runs do.

    >>> round(fisher_mc(np.array([[8, 2, 0], [1, 5, 3]]), 999, np.random.default_rng(0)), 3)
    0.009
    """
    from scipy import stats

    dist = stats.random_table(table.sum(axis=1), table.sum(axis=0), seed=rng)
    # the observed table's probability computed in the batch of the drawn ones, so a drawn
    # copy of it ties exactly (one table alone can differ in the last digits)
    mass = np.asarray(dist.pmf(np.concatenate([table[None], dist.rvs(size=n_mc)])), dtype=float)
    observed, null = mass[0], mass[1:]
    hits = np.count_nonzero(null <= observed + abs(np.finfo(float).eps * 100 * observed))
    return float((hits + 1) / (n_mc + 1))


# -- one-sided items and notes ---------------------------------------------------------
def _only(
    states: pd.DataFrame, trans: pd.DataFrame, presence: str, frac: str, prob: str, count: str
) -> pd.DataFrame:
    s = states[states["presence"] == presence]
    t = trans[trans["presence"] == presence]
    visits_col = "traces_a" if presence == "only_a" else "traces_b"
    out = pd.concat(
        [
            pd.DataFrame(
                {
                    "kind": "state",
                    "name": s["state"],
                    "src": "",
                    "dst": "",
                    "share": s[frac],
                    "count": s[visits_col],
                }
            ),
            pd.DataFrame(
                {
                    "kind": "transition",
                    "name": t["src"] + " -> " + t["dst"],
                    "src": t["src"],
                    "dst": t["dst"],
                    "share": t[prob],
                    "count": t[count],
                }
            ),
        ],
        ignore_index=True,
    )
    out = out.astype(
        {"kind": str, "name": str, "src": str, "dst": str, "share": float, "count": "int64"}
    )
    return out[ONLY_COLUMNS]


def _sample_size_notes(
    n_a: int,
    n_b: int,
    ga: np.ndarray | None,
    gb: np.ndarray | None,
    min_p: float,
    min_p_holm: float,
    n_tests: int,
    alpha: float,
    labels: tuple[str, str],
) -> list[str]:
    notes = []
    if min(n_a, n_b) < 2:
        notes.append(
            f"{labels[0]} has {n_a} and {labels[1]} {n_b} trace(s): with fewer than two "
            "traces on a side there is no confidence interval (delta_lo/hi are empty)"
        )
    if min_p_holm >= alpha:
        within = " (relabelled within strata)" if ga is not None else ""
        holm_part = (
            f"; with Holm over {n_tests} states the smallest adjusted p-value is {p_value_report(min_p_holm)}"
            if n_tests > 1
            else ""
        )
        notes.append(
            f"underpowered: with {n_a} + {n_b} traces{within} the smallest possible p-value is "
            f"{p_value_report(min_p)}{holm_part} >= alpha = {alpha:g}: no state difference can be significant; "
            "collect more traces"
        )
    if ga is not None and gb is not None:
        one_sided = sorted(set(ga) ^ set(gb))
        if one_sided:
            notes.append(
                f"strata seen on one side only take no part in the test: {', '.join(one_sided)}"
            )
    return notes


def _pseudo_notes(
    states: pd.DataFrame,
    flat_a: np.ndarray,
    flat_b: np.ndarray,
    stratified: bool,
    labels: tuple[str, str],
) -> list[str]:
    """One note per side whose traces are pseudo-replicates for some state (``flat_a``,
    ``flat_b``: :func:`identical_columns` of each side, in the order of ``states``' rows)."""
    notes = []
    names = states["state"].to_numpy()
    within = " within a stratum" if stratified else ""
    for flat, label in ((flat_a, labels[0]), (flat_b, labels[1])):
        if not flat.any():
            continue
        which = ", ".join(names[flat])
        notes.append(
            f"pseudo-replicates: the traces of {label} give the same share of {which}"
            f"{within} (within {IDENTICAL_TOL:g}): copies, not independent runs (is the run's seed "
            "used?); those states are not tested as significant and their intervals are not evidence"
        )
    collapsed = states.loc[states["interval_collapsed"], "state"].tolist()
    if collapsed:
        notes.append(
            f"the bootstrap interval of {', '.join(collapsed)} collapsed to a point "
            f"(width <= {IDENTICAL_TOL:g}): the resampled traces do not vary"
        )
    return notes


#: Kernel TCP's congestion states (``tcp:tcp_cong_state_set``, docs/tcp.md) and what each
#: corresponds to in statemine's QUIC vocabulary (docs/log-format.md); "" = nothing.
TCP_STATES_IN_QUIC: dict[str, str] = {
    "Open": "SlowStart + CongestionAvoidance + ApplicationLimited",
    "Disorder": "",
    "CWR": "",
    "Recovery": "Recovery",
    "Loss": "RetransmissionTimeout / PersistentCongestion",
}


def _is_kernel_tcp(traces: pd.DataFrame, names: set[str]) -> bool:
    """A side of kernel-TCP traces: labelled ``implementation=tcp``, or (unlabelled) all its
    state names TCP's, with ``Open`` among them."""
    impl = _labels(traces, "implementation")
    if impl:
        return impl == {"tcp"}
    return "Open" in names and names <= set(TCP_STATES_IN_QUIC)


def tcp_quic_note(
    states: pd.DataFrame, a: TraceSet, b: TraceSet, label_a: str, label_b: str
) -> str:
    """When one side is kernel TCP and the other is not: how the two vocabularies relate
    (docs/tcp.md, "TCP's states against QUIC's"), else ""."""
    return _tcp_note(states, a.traces, b.traces, label_a, label_b)


def _tcp_note(
    states: pd.DataFrame, traces_a: pd.DataFrame, traces_b: pd.DataFrame, label_a: str, label_b: str
) -> str:
    """:func:`tcp_quic_note` of two sides' traces frames."""
    names_a = set(states.loc[states["presence"] != "only_b", "state"].astype(str))
    names_b = set(states.loc[states["presence"] != "only_a", "state"].astype(str))
    tcp_a, tcp_b = _is_kernel_tcp(traces_a, names_a), _is_kernel_tcp(traces_b, names_b)
    if tcp_a == tcp_b:
        return ""
    tcp, other = (label_a, label_b) if tcp_a else (label_b, label_a)
    parts = [f"{s} ~ {q}" if q else f"{s}: none" for s, q in TCP_STATES_IN_QUIC.items()]
    return (
        f"{tcp} is kernel TCP, {other} is not: TCP logs its loss-recovery state, QUIC stacks "
        f"the congestion controller's phase, so only Recovery means the same on both sides "
        f"(compare it directly); the other rows are vocabulary differences. TCP -> QUIC: "
        + "; ".join(parts)
        + " (docs/tcp.md)"
    )


def _vocabulary_notes(
    states: pd.DataFrame, a: pd.DataFrame, b: pd.DataFrame, label_a: str, label_b: str
) -> list[str]:
    notes = []
    bridge = _tcp_note(states, a, b, label_a, label_b)
    if bridge:
        notes.append(bridge)
    shared = int((states["presence"] == "both").sum())
    if shared == 0:
        notes.append(
            f"{label_a} and {label_b} share no state name ({label_a}: "
            f"{', '.join(sorted(states.loc[states['presence'] == 'only_a', 'state']))}; {label_b}: "
            f"{', '.join(sorted(states.loc[states['presence'] == 'only_b', 'state']))}): every "
            "difference is a vocabulary difference; map names onto the common vocabulary "
            "(statemine.parse.statenames) before comparing"
        )
    impl_a, impl_b = _labels(a, "implementation"), _labels(b, "implementation")
    if impl_a and impl_b and impl_a != impl_b:
        notes.append(
            f"{label_a} comes from {', '.join(sorted(impl_a))} and {label_b} from "
            f"{', '.join(sorted(impl_b))}: state names are only comparable where both "
            "instrument patches use the common vocabulary"
        )
    return notes


def _mixing_notes(
    a: pd.DataFrame, b: pd.DataFrame, strata: str | Sequence[str] | None
) -> list[str]:
    """Suggest strata when both sides mix implementations (or versions) and none are given."""
    if strata is not None:
        return []
    for column in ("implementation", "version"):
        mixed = _labels(a, column) | _labels(b, column)
        if len(mixed) > 1 and _labels(a, column) == _labels(b, column):
            return [
                f"both sides mix {column}s ({', '.join(sorted(mixed))}): the test pools them; "
                f"strata={column!r} (--strata {column}) compares each with itself"
            ]
    return []


def _labels(traces: pd.DataFrame, column: str) -> set[str]:
    if column not in traces.columns:
        return set()
    return {str(v) for v in traces[column].dropna().unique() if str(v)}


__all__ = [
    "DENSE_CELLS",
    "IDENTICAL_TOL",
    "MAX_STATES",
    "DiffResult",
    "check_options",
    "check_size",
    "diff",
    "diff_stats",
    "identical_columns",
    "trace_shares",
    "transition_test",
]
