"""Resampling over traces: the one bootstrap, the one permutation test, Holm's correction.

The unit of replication is the **trace** (one connection): the bootstrap resamples whole
traces with replacement (percentile intervals, Efron & Tibshirani 1993, ch. 13), the
permutation test relabels whole traces between two sides (exact enumeration when there
are few relabellings, else random ones with the ``(k + 1) / (n + 1)`` estimate of Phipson
& Smyth 2010), and Holm's step-down correction (Holm 1979) adjusts a family of p-values.
All take per-trace statistics (traces x columns, dense or sparse) and a seed.

**The bootstrap's draws** (:class:`Resamples`, the only source of resamples): rows are
traces, each with a stratum code; a trace set's intervals (``infer``, the report's
tables) use one stratum, ``diff`` one per side (x the ``--strata`` labels), so each side,
and each stratum within it, keeps its number of traces. With numpy's PCG64 generator
``np.random.default_rng(seed)``, resample ``i`` (``i = 0 .. n_boot - 1``, in order) draws,
for each row position ``j`` in row order, ``rng.integers(0, m_j, dtype=np.int32)`` where
``m_j`` is the number of rows of ``j``'s stratum: the index, within that stratum (rows in
their order), of the trace put in position ``j``. A row's **weight** in resample ``i`` is
how often it was put in a position (multinomial counts, summing to its stratum's size).
One stratum draws ``rng.integers(0, rows, size=(b, rows), dtype=np.int32)`` blocks, the
same numbers (tested). A resample's statistic is the plug-in one with these weights, and
an interval is the linear-interpolation quantiles (numpy's default) of the statistics
that are defined (a ratio 0 / 0 is left out).

* :func:`bootstrap_ratio` / :func:`bootstrap_by_column`: intervals of ratios of pooled
  sums (a time fraction, a transition probability) for the tables of one trace set,
  dense or sparse operands of the same draws;
* :func:`bootstrap_delta`: the interval of the difference of two sides' pooled fractions
  (``statemine.diff``), percentile or studentized (bootstrap-t with the delta-method
  standard error of :func:`delta_se2`); :func:`runs_for_halfwidth`: the runs a side needs
  for an interval of a given half-width;
* :func:`permutation_pvalues`, :func:`power`, :func:`holm`: the two-side tests.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Literal, NamedTuple, TypeAlias

import numpy as np

if TYPE_CHECKING:
    from scipy.sparse import csr_array

#: Per-trace statistics: traces (rows) x columns, a dense array or a scipy CSR array
#: (:func:`left_times`, :func:`stack_rows`; the sums of either are ``x.sum(axis=...)``).
Table: TypeAlias = "np.ndarray | csr_array"

#: Cells of the bootstrap's statistics (resamples x columns) computed at a time (8 bytes each).
_STAT_CELLS = 1 << 21
#: A column group's per-trace sums are made dense (a matrix product) when they fit this many cells.
_DENSE_CELLS = 1 << 21
#: The bootstrap's resampling weights are kept (not drawn again per column group) up to this size.
_WEIGHT_BYTES = 1 << 27


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
    trace, resampled whole (one stratum, see the module doc). Returns ``(lo, hi)``, arrays
    of length ``k``; NaN when there are fewer than two rows or ``n_boot`` is 0. The dense
    form of :func:`bootstrap_by_column` (same draws, same intervals).

    >>> num = np.array([[1.0], [2.0], [3.0], [4.0]]); den = np.full((4, 1), 10.0)
    >>> [round(float(v[0]), 3) for v in bootstrap_ratio(num, den, n_boot=200, seed=1)]
    [0.125, 0.35]
    """
    k = num.shape[1]
    den_of = np.arange(k) if den.shape[1] == k else np.zeros(k, np.int64)  # ascending
    return bootstrap_by_column(
        _dense_by_column(num),
        _dense_by_column(den),
        den_of,
        confidence=confidence,
        n_boot=n_boot,
        seed=seed,
    )


def _dense_by_column(matrix: np.ndarray) -> ByColumn:
    """The nonzero entries of a dense ``rows x k`` matrix as :class:`ByColumn`."""
    col, row = np.nonzero(matrix.T)  # by column, rows ascending within one
    bounds = np.r_[0, np.cumsum(np.bincount(col, minlength=matrix.shape[1]))]
    return ByColumn(row.astype(np.int32), matrix[row, col].astype(float), bounds, len(matrix))


class ByColumn(NamedTuple):
    """Sparse ``n_rows x (len(bounds) - 1)`` entries sorted by column, rows in input order
    within a column: column ``j``'s are ``row[bounds[j]:bounds[j + 1]]`` (int32) and ``val[...]``."""

    row: np.ndarray
    val: np.ndarray
    bounds: np.ndarray
    n_rows: int


def by_column(
    parts: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]],
    again: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]],
    n_cols: int,
    n_rows: int,
) -> ByColumn:
    """The entries of ``(row, col, val)`` parts (``again``: the same parts, read a second
    time) as :class:`ByColumn`, by a stable counting sort: the first reading counts the
    columns, the second scatters each part, so only one part's temporaries exist at a time."""
    counts = np.zeros(n_cols, np.int64)
    for _, col, _ in parts:
        counts += np.bincount(col, minlength=n_cols)
    bounds = np.r_[0, np.cumsum(counts)]
    row_out, val_out = np.empty(int(bounds[-1]), np.int32), np.empty(int(bounds[-1]))
    fill = bounds[:-1].copy()  # where each column's next entry goes
    for row, col, val in again:
        if not len(col):
            continue
        order = np.argsort(col, kind="stable")
        col = col[order]
        first = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
        size = np.diff(np.r_[first, len(col)])
        at = np.repeat(fill[col[first]] - first, size) + np.arange(len(col))
        row_out[at], val_out[at] = row[order], val[order]
        fill[col[first]] += size
    return ByColumn(row_out, val_out, bounds, n_rows)


def bootstrap_by_column(
    num: ByColumn, den: ByColumn, den_of: np.ndarray, *, confidence: float, n_boot: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """The intervals of :func:`bootstrap_ratio_sparse` for columns whose denominators
    ``den_of`` ascend (columns sharing one side by side).

    Memory is bounded whatever the numbers of rows and columns: the columns are taken in
    groups whose resampled statistics fit ``_STAT_CELLS`` cells, each group's per-row sums
    as a dense matrix when small (or dense) enough and as gathered entries otherwise.
    Every group sees the same resamples (kept when they fit ``_WEIGHT_BYTES``, else drawn
    again from ``seed``), so the interval does not depend on the grouping.
    """
    rows, k = num.n_rows, len(num.bounds) - 1
    lo, hi = np.full(k, np.nan), np.full(k, np.nan)
    if rows < 2 or n_boot <= 0 or k == 0:
        return lo, hi
    width = max(1, _STAT_CELLS // n_boot)
    resamples = Resamples(rows, n_boot, seed, keep=k > width)
    kept_cols, kept_sums = (
        np.zeros(0, np.int64),
        np.zeros((n_boot, 0)),
    )  # the previous group's denominators
    for c0 in range(0, k, width):
        c1 = min(k, c0 + width)
        num_m = _operand(num.row, num.val, num.bounds[c0 : c1 + 1], rows)
        den_cols, den_index = np.unique(den_of[c0:c1], return_inverse=True)
        reused = np.isin(den_cols, kept_cols)
        den_m = _operand(*_columns(den, den_cols[~reused]), rows)
        num_sums, den_sums = np.empty((n_boot, c1 - c0)), np.empty((n_boot, len(den_cols)))
        den_sums[:, reused] = kept_sums[:, np.searchsorted(kept_cols, den_cols[reused])]
        for start, weights in resamples:
            num_sums[start : start + len(weights)] = _times(weights, num_m)
            den_sums[start : start + len(weights), ~reused] = _times(weights, den_m)
        with np.errstate(invalid="ignore", divide="ignore"):
            stats = num_sums / den_sums[:, den_index.reshape(-1)]
        kept_cols, kept_sums = den_cols, den_sums
        lo[c0:c1], hi[c0:c1] = percentile_interval(stats, confidence)
    return lo, hi


def percentile_interval(stats: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` per column of ``stats`` (resamples x columns, sorted here in place): the
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles (numpy's linear method)
    of the column's values that are not NaN (a resample without the denominator's source
    or any time gives 0 / 0); NaN for a column without any.

    >>> percentile_interval(np.array([[3.0, np.nan], [1.0, 5.0], [2.0, np.nan]]), 0.5)
    (array([1.5, 5. ]), array([2.5, 5. ]))
    """
    n_boot, k = stats.shape
    stats.sort(axis=0)  # NaN sorts last
    valid = np.count_nonzero(~np.isnan(stats), axis=0)
    flat, firsts = stats.T.ravel(), np.arange(k) * n_boot
    tail = (1.0 - confidence) / 2.0
    lo, hi = (linear_quantiles(flat, firsts, valid, q) for q in (tail, 1.0 - tail))
    return lo, hi


def _columns(entries: ByColumn, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(row, val, bounds)`` of the columns ``cols`` (ascending) of ``entries``: views
    when the columns are consecutive, else gathered."""
    if len(cols) and cols[-1] - cols[0] + 1 == len(cols):
        return entries.row, entries.val, entries.bounds[cols[0] : cols[-1] + 2]
    first, size = entries.bounds[cols], entries.bounds[cols + 1] - entries.bounds[cols]
    at = np.repeat(first - np.r_[0, np.cumsum(size)[:-1]], size) + np.arange(int(size.sum()))
    return entries.row[at], entries.val[at], np.r_[0, np.cumsum(size)]


def linear_quantiles(values: np.ndarray, start: np.ndarray, n: np.ndarray, q: float) -> np.ndarray:
    """The ``q``-quantile of each segment ``values[start[i]:start[i] + n[i]]`` (each sorted
    ascending), by numpy's default method (linear interpolation, computed as
    ``np.quantile`` computes it); NaN for empty segments."""
    n = np.asarray(n)
    virtual = (n - 1) * q
    below = np.floor(virtual)
    gamma = virtual - below
    if not len(values):
        return np.full(len(n), np.nan)
    last = np.maximum(n - 1, 0)
    top = len(values) - 1  # an empty segment may start past the end
    a = values[np.minimum(start + np.minimum(below, last).astype(np.int64), top)]
    b = values[np.minimum(start + np.minimum(below + 1, last).astype(np.int64), top)]
    d = b - a
    with np.errstate(invalid="ignore"):
        out = np.where(gamma >= 0.5, b - d * (1 - gamma), a + d * gamma)
    return np.where(n > 0, out, np.nan)


class Resamples:
    """The bootstrap's ``n_boot x rows`` resampling weights (how often each row, a trace,
    is drawn), as the module doc defines them: ``np.random.default_rng(seed)``, one
    ``int32`` uniform pick per row position and resample, within the position's stratum.

    ``strata``: an integer stratum code per row (None: one stratum). Iterated as ``(first
    resample, weights)`` blocks of at most ~2e6 cells; every iteration gives the same
    weights, whatever the block size: kept (as unsigned integers, exact) when ``keep`` and
    they fit ``_WEIGHT_BYTES``, else drawn again from ``seed`` (as floats).

    >>> [w.tolist() for _, w in Resamples(4, 2, seed=1, strata=np.array([0, 0, 1, 1]))]
    [[[1.0, 1.0, 0.0, 2.0], [2.0, 0.0, 0.0, 2.0]]]
    """

    def __init__(
        self,
        rows: int,
        n_boot: int,
        seed: int,
        *,
        strata: np.ndarray | None = None,
        keep: bool = False,
    ) -> None:
        self.rows, self.n_boot, self.seed = rows, n_boot, seed
        self.batch = max(1, min(n_boot, 2_000_000 // max(rows, 1)))
        self._high: int | np.ndarray = rows
        self._row_of: tuple[np.ndarray, np.ndarray] | None = None
        codes = None if strata is None else np.asarray(strata, np.int64)
        if codes is not None and len(codes) and codes.max() > 0:  # else: one stratum
            sizes = np.bincount(codes)
            # position j picks row order[first[j] + pick]: the stratum's rows in row order
            first = np.r_[0, np.cumsum(sizes)[:-1]][codes]
            self._high, self._row_of = sizes[codes], (np.argsort(codes, kind="stable"), first)
        dtype = np.uint16 if rows < 2**16 else np.uint32  # a count is at most ``rows``
        fits = n_boot * rows * np.dtype(dtype).itemsize <= _WEIGHT_BYTES
        self._kept = (
            np.concatenate([w.astype(dtype) for _, w in self._drawn()]) if keep and fits else None
        )

    def __iter__(self) -> Iterator[tuple[int, np.ndarray]]:
        if self._kept is None:
            yield from self._drawn()
            return
        for start in range(0, self.n_boot, self.batch):
            yield start, self._kept[start : start + self.batch]

    def _drawn(self) -> Iterator[tuple[int, np.ndarray]]:
        rng = np.random.default_rng(self.seed)
        weights = np.empty((self.batch, self.rows))
        for start in range(0, self.n_boot, self.batch):
            b = min(self.batch, self.n_boot - start)
            # Resampling rows with replacement = multinomial counts per row, drawn exactly
            # (and much faster than rng.multinomial) by counting uniform row picks. One
            # stratum: a scalar bound, faster than (and drawing as) per-position bounds.
            picks = rng.integers(0, self._high, size=(b, self.rows), dtype=np.int32)
            if self._row_of is not None:
                order, first = self._row_of
                picks = order[first + picks]
            for i in range(b):  # row by row: faster than one bincount of the block
                weights[i] = np.bincount(picks[i], minlength=self.rows)
            yield start, weights[:b]


class _Entries(NamedTuple):
    """A sparse operand of :func:`_times`: column ``j``'s entries are ``row[bounds[j]:bounds[j + 1]]``."""

    row: np.ndarray
    val: np.ndarray
    bounds: np.ndarray
    n_cols: int


def _operand(
    row: np.ndarray, val: np.ndarray, bounds: np.ndarray, n_rows: int
) -> np.ndarray | _Entries:
    """The columns whose entries are ``row[bounds[j]:bounds[j + 1]]`` (distinct rows) as a
    dense ``n_rows x columns`` matrix when that is small (or at least a quarter full and
    not big), else as :class:`_Entries` (views, not copies)."""
    n_cols = len(bounds) - 1
    row, val, bounds = row[bounds[0] : bounds[-1]], val[bounds[0] : bounds[-1]], bounds - bounds[0]
    cells = n_rows * n_cols
    if cells <= _DENSE_CELLS or (cells <= 8 * _DENSE_CELLS and cells <= 4 * len(val)):
        matrix = np.zeros((n_rows, n_cols))
        matrix[row, np.repeat(np.arange(n_cols, dtype=np.int32), np.diff(bounds))] = val
        return matrix
    return _Entries(row, val, bounds, n_cols)


def _times(weights: np.ndarray, operand: np.ndarray | _Entries) -> np.ndarray:
    """``weights @ matrix`` for an :func:`_operand`; sparse entries are gathered in pieces
    of at most ``_STAT_CELLS`` products, each summed per column in entry order (so only
    the gathered weights are read, whatever the number of rows)."""
    if isinstance(operand, np.ndarray):
        return weights.astype(float, copy=False) @ operand
    out = np.zeros((len(weights), operand.n_cols))
    step = max(1, _STAT_CELLS // len(weights))
    bounds = operand.bounds
    for a in range(0, len(operand.row), step):
        b = min(a + step, len(operand.row))
        # the columns with entries in [a, b) and where each starts there
        cols = np.arange(
            np.searchsorted(bounds, a, "right") - 1, np.searchsorted(bounds, b - 1, "right")
        )
        first = np.maximum(bounds[cols], a) - a
        has = np.minimum(bounds[cols + 1], b) - a > first
        products = weights[:, operand.row[a:b]] * operand.val[a:b]
        out[:, cols[has]] += np.add.reduceat(products, first[has], axis=1)
    return out


def left_times(weights: np.ndarray, x: Table) -> np.ndarray:
    """``weights @ x`` (``weights``: dense ``k x rows``; ``x``: a :data:`Table`), a dense
    ``k x columns`` array; a sparse ``x`` costs ``k`` products per stored entry.

    >>> from scipy.sparse import csr_array
    >>> x = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]]); w = np.array([[1.0, 2.0, 0.0]])
    >>> left_times(w, csr_array(x)).tolist() == (w @ x).tolist() == [[1.0, 4.0]]
    True
    """
    if isinstance(x, np.ndarray):
        return weights @ x
    return np.asarray((x.T @ weights.T).T)


def stack_rows(a: Table, b: Table) -> Table:
    """The rows of ``a`` then those of ``b`` (both dense, or both sparse: CSR)."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return np.vstack([a, b])
    from scipy.sparse import csr_array, vstack

    return csr_array(vstack([csr_array(a), csr_array(b)], format="csr"))


def pooled_fraction(x: Table) -> np.ndarray:
    """Pooled time fraction per state: column sums of ``x`` (traces x states, seconds) over its total.

    >>> pooled_fraction(np.array([[1.0, 3.0], [1.0, 0.0]])).tolist()
    [0.4, 0.6]
    """
    return x.sum(axis=0) / x.sum()


def permutation_pvalues(
    xa: Table,
    xb: Table,
    *,
    strata_a: np.ndarray | None = None,
    strata_b: np.ndarray | None = None,
    n_perm: int = 9999,
    seed: int = 0,
    den_a: np.ndarray | None = None,
    den_b: np.ndarray | None = None,
) -> np.ndarray:
    """Two-sided permutation p-value per state of ``pooled_fraction(xb) - pooled_fraction(xa)``.

    With ``den_a``/``den_b`` (dense, rows x 1 or rows x columns, the rows of ``xa``/``xb``)
    the statistic is the pooled ratio ``x.sum(axis=0) / den.sum(axis=0)`` instead (e.g.
    entries per second of connection, or seconds per visit): :func:`pooled_ratio`.

    ``xa``, ``xb``: per-trace statistics (:data:`Table`: dense, or sparse for many traces
    and states). Rows (traces) are relabelled between the sides, keeping the side sizes -- within each
    stratum when ``strata_a``/``strata_b`` (one label per row) are given. When there are at
    most ``n_perm`` distinct relabellings, all are enumerated and the p-value is exact (the
    share of relabellings whose ``|delta|`` is at least the observed one, the observed one
    included); otherwise ``n_perm`` random relabellings give ``(k + 1) / (n_perm + 1)``.

    >>> xa = np.array([[1.0, 1.0], [2.0, 2.0]]); xb = np.array([[3.0, 1.0], [4.0, 0.0]])
    >>> permutation_pvalues(xa, xb).round(3).tolist()   # 6 relabellings, 2 as extreme
    [0.333, 0.333]
    """
    x = stack_rows(xa, xb)
    if den_a is not None and den_b is not None:
        dense = x if isinstance(x, np.ndarray) else x.toarray()  # ratios: dense tables only
        return _ratio_pvalues(
            dense, np.vstack([den_a, den_b]), xa.shape[0], strata_a, strata_b, n_perm, seed
        )
    total = x.sum(axis=1)
    sum_x, sum_total = x.sum(axis=0), total.sum()
    observed = np.abs(pooled_fraction(xb) - pooled_fraction(xa))
    tol = 1e-12 * np.maximum(observed, 1.0)
    groups = _strata(strata_a, strata_b, xa.shape[0], xb.shape[0])
    n_all = _n_relabellings(groups)
    exact = n_all <= n_perm
    count = np.zeros(x.shape[1])
    for mask in _relabellings(groups, x.shape[0], exact=exact, n_perm=n_perm, seed=seed):
        in_a = mask.astype(np.float64)
        state_a, total_a = left_times(in_a, x), in_a @ total  # side B: sum - side A
        with np.errstate(invalid="ignore", divide="ignore"):
            d = (sum_x - state_a) / (sum_total - total_a)[:, None] - state_a / total_a[:, None]
        count += (np.abs(d) >= observed - tol).sum(axis=0)
    return count / n_all if exact else (count + 1) / (n_perm + 1)


def pooled_ratio(x: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Per column: ``x``'s column sum over ``den``'s (rows x 1: one denominator for every
    column); NaN where the denominator sums to 0.

    >>> pooled_ratio(np.array([[1.0, 2.0], [3.0, 0.0]]), np.array([[2.0], [2.0]])).tolist()
    [1.0, 0.5]
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(x.sum(axis=0) / den.sum(axis=0), dtype=float)


def _ratio_pvalues(
    x: np.ndarray,
    den: np.ndarray,
    n_a: int,
    strata_a: np.ndarray | None,
    strata_b: np.ndarray | None,
    n_perm: int,
    seed: int,
) -> np.ndarray:
    """:func:`permutation_pvalues` of ``pooled_ratio(B) - pooled_ratio(A)`` (``x``, ``den``:
    both sides' rows, A's first); NaN where a side's denominator sums to 0."""
    observed = np.abs(pooled_ratio(x[n_a:], den[n_a:]) - pooled_ratio(x[:n_a], den[:n_a]))
    tol = 1e-12 * np.maximum(observed, 1.0)
    groups = _strata(strata_a, strata_b, n_a, x.shape[0] - n_a)
    n_all = _n_relabellings(groups)
    exact = n_all <= n_perm
    sum_x, sum_den = x.sum(axis=0), den.sum(axis=0)
    count = np.zeros(x.shape[1])
    for mask in _relabellings(groups, x.shape[0], exact=exact, n_perm=n_perm, seed=seed):
        in_a = mask.astype(np.float64)
        num_a, den_of_a = in_a @ x, in_a @ den  # side B: sum - side A
        with np.errstate(invalid="ignore", divide="ignore"):
            d = (sum_x - num_a) / (sum_den - den_of_a) - num_a / den_of_a
        count += (np.abs(d) >= observed - tol).sum(axis=0)  # NaN (0 / 0) never counts
    p = count / n_all if exact else (count + 1) / (n_perm + 1)
    return np.where(np.isfinite(observed), p, np.nan)


def _strata(
    strata_a: np.ndarray | None, strata_b: np.ndarray | None, n_a: int, n_b: int
) -> list[tuple[np.ndarray, int]]:
    """Per stratum: the positions of its rows in ``vstack([xa, xb])`` and how many are A's."""
    if strata_a is None:
        return [(np.arange(n_a + n_b), n_a)]
    codes = factorize(
        np.concatenate([np.asarray(strata_a, dtype=object), np.asarray(strata_b, dtype=object)])
    )
    return [
        (np.flatnonzero(codes == c), int((codes[:n_a] == c).sum())) for c in range(codes.max() + 1)
    ]


def _n_relabellings(groups: list[tuple[np.ndarray, int]]) -> int:
    """Distinct relabellings: the product over strata of C(stratum size, its A count)."""
    return math.prod(math.comb(len(rows), m) for rows, m in groups)


def _relabellings(
    groups: list[tuple[np.ndarray, int]], n: int, *, exact: bool, n_perm: int, seed: int
) -> Iterator[np.ndarray]:
    """Yield boolean ``k x n`` blocks: row i marks the rows given to side A in relabelling i
    (each stratum keeps its count of A rows).

    Blocks hold at most ~2 million cells, so memory stays bounded (~50 MB with the float
    copies the caller makes) however many traces there are.
    """
    batch = max(1, min(2000, 2_000_000 // n))
    if exact:
        choices = itertools.product(*(itertools.combinations(rows, m) for rows, m in groups))
        while True:
            block = list(itertools.islice(choices, batch))
            if not block:
                return
            chosen = np.array(
                [np.concatenate([np.asarray(c, dtype=np.int64) for c in combo]) for combo in block],
                dtype=np.int64,
            ).reshape(len(block), -1)
            mask = np.zeros((len(block), n), bool)
            np.put_along_axis(mask, chosen, True, axis=1)
            yield mask
    rng = np.random.default_rng(seed)
    for start in range(0, n_perm, batch):
        k = min(batch, n_perm - start)
        mask = np.zeros((k, n), bool)
        for rows, m in groups:
            if m == 0:
                continue
            keys = rng.random((k, len(rows)))  # the m smallest keys of a row: a uniform m-subset
            kth = np.partition(keys, m - 1, axis=1)[:, m - 1 : m]
            mask[:, rows] = keys <= kth  # ties between 53-bit random keys: probability ~ n^2 / 2^53
        yield mask


def power(
    n_a: int,
    n_b: int,
    strata_a: np.ndarray | None = None,
    strata_b: np.ndarray | None = None,
    *,
    n_perm: int = 9999,
    n_tests: int = 1,
) -> tuple[float, float]:
    """``(min_p, min_p_holm)``: the smallest p-value :func:`permutation_pvalues` can give
    with ``n_a`` and ``n_b`` traces (relabelled within strata when given), and the smallest
    Holm-adjusted one over ``n_tests`` tests (``min(1, n_tests * min_p)``: Holm multiplies
    the smallest p-value by the number of tests).

    Exact enumeration (at most ``n_perm`` relabellings, ``N`` of them): ``1 / N``, or
    ``2 / N`` when every stratum is balanced (swapping all labels gives the same
    ``|delta|``, so the observed labelling always ties with its mirror). Random
    relabellings: ``1 / (n_perm + 1)``.

    >>> power(3, 3)                      # C(6, 3) = 20 relabellings, two per extreme split
    (0.1, 0.1)
    >>> power(20, 20, n_perm=9999, n_tests=5)   # C(40, 20) > 9999: Monte Carlo floor
    (0.0001, 0.0005)
    """
    groups = _strata(strata_a, strata_b, n_a, n_b)
    n_all = _n_relabellings(groups)
    if n_all <= n_perm:
        balanced = all(2 * m == len(rows) for rows, m in groups)
        min_p = min(1.0, (2.0 if balanced else 1.0) / n_all)
    else:
        min_p = 1.0 / (n_perm + 1)
    return min_p, min(1.0, max(1, n_tests) * min_p)


#: The bootstrap intervals of :func:`bootstrap_delta`.
IntervalMethod = Literal["percentile", "studentized"]
INTERVAL_METHODS = ("percentile", "studentized")


def bootstrap_delta(
    xa: Table,
    xb: Table,
    *,
    strata_a: np.ndarray | None = None,
    strata_b: np.ndarray | None = None,
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    method: IntervalMethod = "percentile",
    den_a: np.ndarray | None = None,
    den_b: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap interval of ``pooled_fraction(xb) - pooled_fraction(xa)`` per state
    (with ``den_a``/``den_b``: of ``pooled_ratio(xb, den_b) - pooled_ratio(xa, den_a)``, as
    in :func:`permutation_pvalues`; percentile intervals only).

    ``xa``, ``xb``: as in :func:`permutation_pvalues`. Each side's traces (rows) are
    resampled with replacement, independently (and within each stratum when
    ``strata_a``/``strata_b`` are given): one :class:`Resamples` over ``vstack([xa, xb])``
    stratified by :func:`side_strata`. NaN when a side has fewer than two traces or
    ``n_boot`` is 0 (no interval can be formed).

    ``method``: ``"percentile"`` (the quantiles of the resampled differences) or
    ``"studentized"`` (bootstrap-t, Efron & Tibshirani 1993, ch. 12.5; Davison & Hinkley
    1997, eq. 5.7): each resample's difference is standardized by its own standard error
    (:func:`delta_se`, the delta-method variance of the two ratios) and the interval is
    ``delta - t*[hi] se, delta - t*[lo] se``. Its coverage holds better with 20 runs of
    a clustered (multimodal) per-run distribution, where the percentile interval is too
    short (tests/test_replicate_stats.py measures both against a known truth).

    >>> xa = np.array([[1.0, 1.0], [2.0, 2.0]]); xb = np.array([[3.0, 1.0], [6.0, 2.0]])
    >>> [v.tolist() for v in bootstrap_delta(xa, xb, n_boot=50)]   # every resample: 3/4 - 1/2
    [[0.25, -0.25], [0.25, -0.25]]
    >>> [v.tolist() for v in bootstrap_delta(xa, xb, n_boot=50, method="studentized")]
    [[0.25, -0.25], [0.25, -0.25]]
    """
    if method not in INTERVAL_METHODS:
        raise ValueError(f"method must be one of {INTERVAL_METHODS}, not {method!r}")
    if method == "studentized" and den_a is not None:
        raise ValueError("a studentized interval is of shares: no den_a/den_b")
    k, n_a = xa.shape[1], xa.shape[0]
    if n_a < 2 or xb.shape[0] < 2 or n_boot <= 0:
        return np.full(k, np.nan), np.full(k, np.nan)
    studentized = method == "studentized"
    ta, tb = xa.sum(axis=1), xb.sum(axis=1)
    if studentized:
        moments_a, moments_b = _ratio_moments(xa, ta), _ratio_moments(xb, tb)
        observed = pooled_fraction(xb) - pooled_fraction(xa)
        se = np.sqrt(delta_se2(moments_a, np.ones(n_a)) + delta_se2(moments_b, np.ones(len(tb))))
    deltas = np.empty((n_boot, k))
    strata = side_strata(strata_a, strata_b, n_a, xb.shape[0])
    for start, w in Resamples(n_a + xb.shape[0], n_boot, seed, strata=strata):
        wa, wb = w[:, :n_a], w[:, n_a:]
        with np.errstate(invalid="ignore", divide="ignore"):
            if den_a is not None and den_b is not None:
                d = left_times(wb, xb) / (wb @ den_b) - left_times(wa, xa) / (wa @ den_a)
            else:
                d = (
                    left_times(wb, xb) / (wb @ tb)[:, None]
                    - left_times(wa, xa) / (wa @ ta)[:, None]
                )
            if studentized:
                se_w = np.sqrt(delta_se2(moments_a, wa) + delta_se2(moments_b, wb))
                # a resample whose difference has no spread (se 0) standardizes to 0 when
                # it equals the observed one (a constant state), else it is left out
                d = np.where(se_w > 0, (d - observed) / se_w, np.where(d == observed, 0.0, np.nan))
        deltas[start : start + len(w)] = d
    lo, hi = percentile_interval(deltas, confidence)
    if not studentized:
        return lo, hi
    return observed - hi * se, observed - lo * se


class RatioMoments(NamedTuple):
    """Per-trace operands of the variance of a pooled ratio ``sum(y) / sum(t)``: ``y``
    (traces x states, seconds), ``y2`` (its squares), ``yt`` (``y`` times the trace's
    total) and ``t``, ``t2`` (the totals and their squares)."""

    y: Table
    y2: Table
    yt: Table
    t: np.ndarray
    t2: np.ndarray


def _ratio_moments(x: Table, t: np.ndarray) -> RatioMoments:
    """The :class:`RatioMoments` of per-trace seconds ``x`` with totals ``t``."""
    if isinstance(x, np.ndarray):
        return RatioMoments(x, x * x, x * t[:, None], t, t * t)
    from scipy.sparse import csr_array

    return RatioMoments(x, csr_array(x.multiply(x)), csr_array(x.multiply(t[:, None])), t, t * t)


def delta_se2(m: RatioMoments, weights: np.ndarray) -> np.ndarray:
    """The squared standard error of the pooled ratio ``R = sum(w y) / sum(w t)`` per
    column, by the delta method (the linearized ratio estimator, Cochran 1977, eq. 6.9):
    ``sum(w (y - R t)^2) / ((n - 1) n tbar^2)``, ``n = sum(w)`` traces, ``tbar = sum(w t) / n``.
    ``weights``: one row of trace weights (1-d) or resamples x traces (2-d, the result
    resamples x columns).

    >>> y = np.array([[1.0], [3.0]]); t = np.array([4.0, 4.0])   # shares 0.25, 0.75
    >>> float(delta_se2(_ratio_moments(y, t), np.ones(2))[0])     # var(shares) / n
    0.0625
    """
    w = np.atleast_2d(weights).astype(float, copy=False)
    n, wt = w.sum(axis=1), w @ m.t
    with np.errstate(invalid="ignore", divide="ignore"):
        r = left_times(w, m.y) / wt[:, None]
        sq = left_times(w, m.y2) - 2 * r * left_times(w, m.yt) + r * r * (w @ m.t2)[:, None]
        tbar = wt / n
        out = np.maximum(sq, 0.0) / ((n - 1) * n * tbar * tbar)[:, None]
    return out[0] if np.ndim(weights) == 1 else out


def runs_for_halfwidth(
    xa: np.ndarray, xb: np.ndarray, halfwidth: float, *, confidence: float = 0.95
) -> int:
    """Runs per side for a ``confidence`` interval of ``pooled_fraction(xb) -
    pooled_fraction(xa)`` of half-width ``halfwidth`` (a fraction: 0.02 = 2 points), from
    the per-run variance of each side (the delta method of :func:`delta_se2`, run as the
    unit): the smallest ``n`` with ``z sqrt((v_a + v_b) / n) <= halfwidth``, ``v`` being
    ``n`` times a side's squared standard error (one column, ``xa``/``xb``: runs x states,
    the state's seconds in the first column and the run's other seconds after).

    >>> xa = np.array([[1.0, 3.0], [3.0, 1.0]]); xb = np.array([[2.0, 2.0], [2.0, 2.0]])
    >>> runs_for_halfwidth(xa, xb, 0.02)   # shares 25%, 75%: v = 0.125; 1.96^2 v / 0.02^2
    1201
    """
    from statistics import NormalDist

    z = NormalDist().inv_cdf((1 + confidence) / 2)
    v = 0.0
    for x in (xa, xb):
        t = x.sum(axis=1)
        v += float(delta_se2(_ratio_moments(x[:, :1], t), np.ones(len(t)))[0]) * len(t)
    return max(2, math.ceil(z * z * v / (halfwidth * halfwidth)))


def side_strata(
    strata_a: np.ndarray | None, strata_b: np.ndarray | None, n_a: int, n_b: int
) -> np.ndarray:
    """The stratum codes of :class:`Resamples` for ``vstack([xa, xb])``: each side's own
    labels (one stratum without), B's numbered after A's, so no trace changes side.

    >>> side_strata(np.array(["x", "y", "x"]), None, 3, 2).tolist()
    [0, 1, 0, 2, 2]
    """
    a = np.zeros(n_a, np.int64) if strata_a is None else factorize(strata_a)
    b = np.zeros(n_b, np.int64) if strata_b is None else factorize(strata_b)
    return np.r_[a, b + (a.max() + 1 if n_a else 0)]


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979); NaN entries stay NaN and are not counted.

    >>> holm(np.array([0.01, 0.04, 0.03, np.nan])).round(3).tolist()
    [0.03, 0.06, 0.06, nan]
    """
    p = np.asarray(p, dtype=float)
    out = np.full_like(p, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    order = ok[np.argsort(p[ok], kind="stable")]
    m = len(order)
    out[order] = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    return out


def factorize(labels: Iterable) -> np.ndarray:
    """Integer codes of ``labels`` (strings), numbered in order of first appearance (as
    ``pandas.factorize``).

    >>> factorize(["b", "a", "b", "c"]).tolist()
    [0, 1, 0, 2]
    """
    values = np.asarray(
        list(labels) if not isinstance(labels, np.ndarray) else labels, dtype=object
    )
    if not len(values):
        return np.zeros(0, np.int64)
    _, first, inverse = np.unique(values.astype(str), return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)]
