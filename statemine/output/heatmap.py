"""The paper's outcome heatmap: one cell per pair of scenario values, coloured by the
percent difference of a :func:`statemine.outcomes.compare_outcomes` table where it is
significant (matplotlib, without pyplot)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import UsageError
from ..outcomes import OUTCOME_TABLE_COLUMNS

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def heatmap(
    table: pd.DataFrame,
    *,
    rows: str,
    cols: str,
    value: str = "pct_diff",
    title: str | None = None,
    label: str = "% difference",
    cmap: str = "RdBu_r",
    ax: Axes | None = None,
) -> Figure:
    """The paper's heatmap of a :func:`compare_outcomes` table: one cell per (``rows``,
    ``cols``) pair, coloured by ``value`` (diverging, centred on 0) when significant, white
    with "n.s." when not ("no test" when the cell has no p-value, e.g. identical runs), grey
    with "no data" where the grid has no such cell. Returns a
    matplotlib Figure made without pyplot (no window, no global figure state); draws into
    ``ax`` instead when given.
    """
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    from .timeline import root_figure

    for column in (rows, cols, value, "significant"):
        if column not in table.columns:
            raise UsageError(f"the outcome table has no column {column!r}")
    dup = table.duplicated([rows, cols], keep=False)
    if dup.any():
        other = [
            c for c in table.columns if c not in (rows, cols) and c not in OUTCOME_TABLE_COLUMNS
        ]
        raise UsageError(
            f"several cells share a ({rows}, {cols}) pair; select one value of {other or 'the other columns'} first"
        )
    row_values = sorted(table[rows].unique(), reverse=True)  # largest rate on top, as in the paper
    col_values = sorted(table[cols].unique())
    grid = table.set_index([rows, cols])
    values = np.full((len(row_values), len(col_values)), np.nan)
    sig = np.zeros_like(values, dtype=bool)
    present = np.zeros_like(values, dtype=bool)
    tested = np.ones_like(values, dtype=bool)
    for i, r in enumerate(row_values):
        for j, c in enumerate(col_values):
            if (r, c) in grid.index:
                present[i, j] = True
                values[i, j] = grid.loc[(r, c), value]
                sig[i, j] = bool(grid.loc[(r, c), "significant"])
                if "p_value" in grid.columns:
                    tested[i, j] = bool(np.isfinite(grid.loc[(r, c), "p_value"]))
    shown = np.where(sig, values, np.nan)
    limit = float(np.nanmax(np.abs(shown))) if np.isfinite(shown).any() else 1.0
    limit = limit if limit > 0 else 1.0
    if ax is None:
        fig = Figure(
            figsize=(2.0 + 1.1 * len(col_values), 1.2 + 0.6 * len(row_values)), layout="tight"
        )
        ax = fig.add_subplot()
    else:
        fig = root_figure(ax)
    ax.set_facecolor("white")
    mesh = ax.imshow(
        np.ma.masked_invalid(shown), cmap=cmap, norm=TwoSlopeNorm(0.0, -limit, limit), aspect="auto"
    )
    for i in range(len(row_values)):
        for j in range(len(col_values)):
            if not present[i, j]:
                ax.add_patch(
                    Rectangle(
                        (j - 0.5, i - 0.5), 1, 1, facecolor="#dddddd", hatch="//", edgecolor="white"
                    )
                )
                text = "no data"
            elif sig[i, j]:
                text = f"{values[i, j]:+.0f}%"
            else:
                text = (
                    "n/a"
                    if not np.isfinite(values[i, j])
                    else ("n.s." if tested[i, j] else "no test")
                )
            dark = sig[i, j] and abs(values[i, j]) > 0.6 * limit
            ax.text(
                j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "black"
            )
    ax.set_xticks(range(len(col_values)), [_tick(v) for v in col_values])
    ax.set_yticks(range(len(row_values)), [_tick(v) for v in row_values])
    ax.set_xlabel(cols)
    ax.set_ylabel(rows)
    if title:
        ax.set_title(title)
    fig.colorbar(mesh, ax=ax, label=label)
    return fig


def _tick(value: object) -> str:
    if isinstance(value, (int, float, np.integer, np.floating)) and float(value).is_integer():
        v = int(value)
        for unit, size in (("M", 1_000_000), ("k", 1_000)):
            if v >= size and v % size == 0:
                return f"{v // size}{unit}"
        return str(v)
    return str(value)


__all__ = ["heatmap"]
