"""The statistics core: state visits, per-trace sufficient statistics, tables, resampling.

Data flow (each a module)::

    state rows --visits--> closed visits --partial--> PartialStats (per trace, mergeable)
        --tables--> states / transitions tables (bootstrap intervals: resampling)

* :mod:`.options`: :class:`StatsOptions` (and :class:`CompareOptions` for two sides),
  the one value every statistic takes;
* :mod:`.visits`: state rows -> closed visits, block by block, with the one end-of-trace
  rule (:func:`~.visits.trace_ends`);
* :mod:`.partial`: the map (:func:`~.partial.map_traces`) and reduce
  (:func:`~.partial.merge`) of per-trace statistics (:class:`~.partial.PartialStats`);
* :mod:`.tables`: the state and transition tables from a :class:`PartialStats`
  (``tables.tables`` as DataFrames, ``tables.columns`` as numpy columns);
* :mod:`.dwell`: dwell times, exact or sketched, mergeable; :mod:`.sums`: sparse pair sums;
* :mod:`.resampling`: the bootstrap, the permutation test and Holm's correction;
* :mod:`.summary`: the TraceSet functions (``statemine.summarize``, ``visits``, ...);
* :mod:`.stream`: the same statistics folded from statemine logs in bounded memory.

This package imports numpy only; pandas is loaded by the functions that return frames.
"""

from __future__ import annotations

from .options import CompareOptions, StatsOptions
from .partial import PartialStats, map_traces, merge

__all__ = ["CompareOptions", "PartialStats", "StatsOptions", "map_traces", "merge"]
