"""Outcome metrics (page-load time, throughput) compared per scenario cell, as the paper did:
the percent difference of the means and Welch's unequal-variance t-test (Welch 1947), a
difference counting as significant when p < 0.01; and heatmaps in the paper's style (rows
the bottleneck rate, columns the object size or count, colour the percent difference,
white where it is not significant).

The input is a results table with one row per run (``statemine lab``'s ``results.csv`` /
``results.parquet``, or a trace set's ``traces`` frame when it carries the metrics): a
column telling the two sides apart (``profile``, ``stack``, ...), scenario columns, and
the metric columns.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy import stats

from .columns import OUTCOME_COLUMNS
from .errors import InputError, UsageError
from .traces import label_equals

if TYPE_CHECKING:
    pass

#: The metrics statemine knows, with their units.
METRICS = {"plt_s": "s", "throughput_bps": "bit/s", "retransmissions": "packets"}
OUTCOME_TABLE_COLUMNS = [
    "n_a",
    "n_b",
    "mean_a",
    "mean_b",
    "pct_diff",
    "t",
    "p_value",
    "significant",
    "identical_runs",
    "note",
]
#: Runs of a side whose metric values differ by at most this fraction of their magnitude
#: (0.01%) are copies of one run (deterministic runs differing in float rounding or a few
#: microseconds), not independent replicates: Welch's test would divide by ~0.
IDENTICAL_RTOL = 1e-4


def read_results(path: str | os.PathLike) -> pd.DataFrame:
    """Read a results table (.csv or .parquet); :class:`InputError` when unreadable or empty."""
    path = Path(path)
    try:
        table = pd.read_parquet(path) if path.suffix.lower() == ".parquet" else pd.read_csv(path)
    except FileNotFoundError:
        raise InputError(path, None, "no such file") from None
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        raise InputError(path, None, f"not a readable results table: {exc}") from None
    if table.empty:
        raise InputError(path, None, "the results table has no rows")
    if not any(m in table.columns for m in METRICS):
        raise InputError(
            path, None, f"the results table has none of the metric columns {sorted(METRICS)}"
        )
    return table


def compare_outcomes(
    results: pd.DataFrame,
    *,
    by: str,
    a: object,
    b: object,
    cells: Sequence[str] | None = None,
    metric: str = "plt_s",
    alpha: float = 0.01,
) -> pd.DataFrame:
    """Per scenario cell: runs, means, percent difference ``100 (mean_b - mean_a) / mean_a``
    and Welch's t-test of ``metric`` between the rows with ``by == a`` and ``by == b``.

    ``cells``: the scenario columns defining a cell (default: every non-outcome column
    that varies, except ``by``). Failed runs (``ok`` false) and rows without the metric
    are left out. Columns: ``cells..., n_a, n_b, mean_a, mean_b, pct_diff, t, p_value,
    significant, identical_runs, note`` -- ``note`` says why a p-value is missing (fewer
    than two runs on a side, identical runs, no variance) and ``significant`` is then False.

    >>> r = pd.DataFrame({"profile": ["d"] * 3 + ["m"] * 3, "rate": 10,
    ...                   "plt_s": [1.0, 1.1, 0.9, 2.0, 2.2, 1.8]})
    >>> compare_outcomes(r, by="profile", a="d", b="m", cells=["rate"])[["rate", "pct_diff", "significant"]].values.tolist()
    [[10, 100.0, True]]
    """
    for column in (by, metric):
        if column not in results.columns:
            raise UsageError(
                f"the results table has no column {column!r} (columns: {', '.join(map(str, results.columns))})"
            )
    if not 0 < alpha < 1:
        raise UsageError(f"alpha must be in (0, 1), not {alpha}")
    rows = results
    if "ok" in rows.columns:
        rows = rows[rows["ok"].astype("boolean").fillna(False).astype(bool)]
    rows = rows[pd.to_numeric(rows[metric], errors="coerce").notna()]
    rows_a, rows_b = rows[label_equals(rows[by], a)], rows[label_equals(rows[by], b)]
    for part, value in ((rows_a, a), (rows_b, b)):
        if part.empty:
            found = ", ".join(sorted(rows[by].astype(str).unique())) or "none"
            raise UsageError(f"no successful run has {by} = {value!r} (values: {found})")
    if cells is None:
        cells = [
            c
            for c in results.columns
            if c not in OUTCOME_COLUMNS and c != by and results[c].astype(str).nunique() > 1
        ]
    cells = list(cells)
    missing = [c for c in cells if c not in results.columns]
    if missing:
        raise UsageError(f"the results table has no column(s) {missing}")
    out = []
    keys = _cell_keys(rows, cells)
    for key in keys:
        xa = _values(rows_a, cells, key, metric)
        xb = _values(rows_b, cells, key, metric)
        out.append({**dict(zip(cells, key)), **welch_cell(xa, xb, alpha=alpha)})
    columns = cells + OUTCOME_TABLE_COLUMNS
    return pd.DataFrame(out, columns=columns)


def welch_cell(xa: np.ndarray, xb: np.ndarray, *, alpha: float = 0.01) -> dict:
    """Runs, means, percent difference and Welch's t-test (two-sided) of one cell.

    No test (``t``, ``p_value`` NaN, ``note`` says why) with fewer than two runs on a side,
    or when a side's runs are copies (:func:`identical_runs`: ``identical_runs`` True) --
    a Welch statistic from them would only measure float rounding -- or when neither
    side varies.

    >>> welch_cell(np.array([1.0, 2.0, 3.0]), np.array([2.0, 3.0, 4.0]))["pct_diff"]
    50.0
    >>> welch_cell(np.array([0.987051, 0.987049, 0.987052]), np.array([2.09, 2.11, 2.10]))["note"]
    'identical runs in A (3 runs within 0.01%): no test'
    """
    n_a, n_b = len(xa), len(xb)
    mean_a = float(np.mean(xa)) if n_a else math.nan
    mean_b = float(np.mean(xb)) if n_b else math.nan
    pct = 100.0 * (mean_b - mean_a) / mean_a if n_a and n_b and mean_a != 0 else math.nan
    t = p = math.nan
    note = ""
    copies = [side for side, x in (("A", xa), ("B", xb)) if identical_runs(x)]
    if n_a < 2 or n_b < 2:
        note = f"fewer than 2 runs on a side ({n_a} vs {n_b}): no test"
    elif copies:
        note = (
            "; ".join(
                f"identical runs in {side} ({len(x)} runs within {100 * IDENTICAL_RTOL:g}%)"
                for side, x in (("A", xa), ("B", xb))
                if side in copies
            )
            + ": no test"
        )
    elif _constant(xa) and _constant(xb):
        note = "no variance on either side: no test"
    else:
        with warnings.catch_warnings():  # one side's constant values make scipy warn needlessly
            warnings.filterwarnings("ignore", "Precision loss", RuntimeWarning)
            res = stats.ttest_ind(xb, xa, equal_var=False)
        t, p = float(res.statistic), float(res.pvalue)
    if n_a and n_b and mean_a == 0:
        note = (note + "; " if note else "") + "mean_a is 0: no percent difference"
    return {
        "n_a": n_a,
        "n_b": n_b,
        "mean_a": mean_a,
        "mean_b": mean_b,
        "pct_diff": pct,
        "t": t,
        "p_value": p,
        "significant": bool(p < alpha) if not math.isnan(p) else False,
        "identical_runs": bool(copies) and min(n_a, n_b) >= 2,
        "note": note,
    }


def identical_runs(x: np.ndarray) -> bool:
    """At least two runs, not all 0, that differ by at most :data:`IDENTICAL_RTOL` of their
    largest magnitude: copies of one run. (A metric that is 0 in every run, e.g. no
    retransmission, is a real constant.)

    >>> identical_runs(np.array([0.987051, 0.987049])), identical_runs(np.array([0.0, 0.0])), identical_runs(np.array([1.0, 1.1]))
    (True, False, False)
    """
    if len(x) < 2:
        return False
    top = float(np.max(np.abs(x)))
    return top > 0 and float(np.ptp(x)) <= IDENTICAL_RTOL * top


def _constant(x: np.ndarray) -> bool:
    """All values equal (0 included) up to floating-point rounding (relative 1e-9)."""
    return bool(np.ptp(x) <= 1e-9 * max(float(np.max(np.abs(x))), 1e-300))


def _cell_keys(rows: pd.DataFrame, cells: list[str]) -> list[tuple]:
    if not cells:
        return [()]
    keys = rows[cells].drop_duplicates()
    return [tuple(k) for k in keys.sort_values(cells).itertuples(index=False)]


def _values(rows: pd.DataFrame, cells: list[str], key: tuple, metric: str) -> np.ndarray:
    mask = np.ones(len(rows), dtype=bool)
    for column, value in zip(cells, key):
        mask &= (
            (rows[column] == value).to_numpy()
            if not _isnan(value)
            else rows[column].isna().to_numpy()
        )
    return pd.to_numeric(rows.loc[mask, metric]).to_numpy(dtype=float)


def _isnan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


__all__ = [
    "IDENTICAL_RTOL",
    "METRICS",
    "compare_outcomes",
    "identical_runs",
    "read_results",
    "welch_cell",
]
