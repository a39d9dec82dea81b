"""What a report knows of one side: per-trace statistics and facts, and a trace on demand.

The report (:mod:`statemine.output.html_report`) needs of each side its statistics
(:class:`~statemine.stats.partial.PartialStats`: the tables, the diff), its traces frame
(labels: strata, implementations), per trace the :data:`FACTS` (the inputs table, the
trace of median length, whether a window timeline can be drawn), and the events of the few
traces it draws. :func:`traceset_side` makes a :class:`Side` of a trace set in memory;
:func:`statemine.commands.report_to_file` one of a store summarized on Dask workers, whose
``fetch`` reads just the drawn trace (:func:`statemine.distributed.run.store_sides`).
Both give the same report, byte for byte (tests/test_distributed.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..stats.options import StatsOptions
from ..stats.partial import PartialStats, map_traces
from ..stats.sums import _LOW, _SHIFT
from ..traces import label_mask

if TYPE_CHECKING:
    from ..traces import TraceSet

#: Per-trace facts of a side: its first and last line (seconds), and its state lines,
#: event lines and lines logging a cwnd.
FACTS = ("first_s", "last_s", "state_lines", "event_lines", "cwnd_lines")


@dataclass(frozen=True, eq=False)
class Side:
    """One side's traces: ``partial`` (statistics of all the side's traces), ``rows``
    (which of them this side holds, ascending: all, or a stratum's), ``traces`` (their
    ``trace``, ``source``, ``end`` and labels) and ``facts`` (:data:`FACTS`), one row per
    trace of ``rows``; ``fetch(trace)``: a trace set holding that trace's events."""

    partial: PartialStats
    rows: np.ndarray
    traces: pd.DataFrame
    facts: pd.DataFrame
    fetch: Callable[[str], TraceSet]

    @property
    def n_traces(self) -> int:
        return len(self.rows)

    def select(self, where: Mapping[str, object]) -> Side:
        """The traces whose labels equal ``where`` (as :meth:`TraceSet.select`)."""
        mask = label_mask(self.traces, where)
        return Side(
            self.partial,
            self.rows[mask],
            self.traces[mask].reset_index(drop=True),
            self.facts[mask].reset_index(drop=True),
            self.fetch,
        )

    def end(self) -> np.ndarray:
        """Each trace's explicit end (seconds; NaN when none)."""
        return self.traces["end"].to_numpy(float)

    def share_pick(self, state: str) -> tuple[str, float]:
        """The trace of median share of ``state`` and that share:
        :func:`~statemine.output.timeline.share_pick` of :meth:`seconds` while the
        statistics' traces x states table is small (``statemine.compare.DENSE_CELLS``),
        else from the visited (trace, state) pairs alone, in memory of those (the same
        pick, the share equal up to float rounding)."""
        from ..compare import DENSE_CELLS
        from ..errors import UsageError
        from .timeline import median_share, share_pick

        p = self.partial
        if p.n_traces * len(p.names) <= DENSE_CELLS:  # what seconds() holds
            return share_pick(self.seconds(), state)
        trace, code, seconds = p.trace_state_entries()
        position = np.full(p.n_traces, -1, np.int64)
        position[self.rows] = np.arange(self.n_traces)
        mine = position[trace] >= 0
        row, code, seconds = position[trace[mine]], code[mine], seconds[mine]
        total = np.bincount(row, weights=seconds, minlength=self.n_traces)
        in_state = (code == p.names.index(state)) if state in p.names else np.zeros(len(row), bool)
        part = np.bincount(row[in_state], weights=seconds[in_state], minlength=self.n_traces)
        keep = total > 0
        if not keep.any():
            raise UsageError("every trace lasts 0 s: no trace to plot")
        ids = self.traces["trace"].astype(str).to_numpy()
        return median_share(ids[keep], part[keep] / total[keep])

    def seconds(self) -> pd.DataFrame:
        """Seconds per trace (rows, index: ids) and state (columns: the states these traces
        visit, sorted), as :func:`~statemine.stats.summary.trace_state_times` of these
        traces alone."""
        p = self.partial
        keys = p.state_keys[np.isin(p.state_keys >> _SHIFT, self.rows)]
        visited = np.unique(keys & _LOW)
        dense = p.trace_state_seconds()[np.ix_(self.rows, visited)]
        return pd.DataFrame(
            dense,
            index=pd.Index(self.traces["trace"].astype(str), name="trace"),
            columns=pd.Index([p.names[i] for i in visited], name="state"),
        )


def traceset_side(ts: TraceSet, options: StatsOptions) -> Side:
    """The :class:`Side` of a trace set in memory (its facts from its events)."""
    ev = ts.events
    ids = ts.traces["trace"]
    by = ev.groupby("trace", observed=True)
    facts = pd.DataFrame(
        {
            "first_s": by["time"].min(),
            "last_s": by["time"].max(),
            "state_lines": (ev["kind"] == "state").groupby(ev["trace"], observed=True).sum(),
            "event_lines": (ev["kind"] == "event").groupby(ev["trace"], observed=True).sum(),
            "cwnd_lines": (
                ev["cwnd"].notna().groupby(ev["trace"], observed=True).sum()
                if "cwnd" in ev.columns
                else 0
            ),
        }
    )
    facts = facts.reindex(ids.to_numpy()).reset_index(drop=True)
    counts = list(FACTS[2:])
    facts[counts] = facts[counts].fillna(0).astype("int64")
    return Side(
        map_traces(ts, options),
        np.arange(ts.n_traces),
        ts.traces,
        facts,
        lambda trace: ts,
    )
