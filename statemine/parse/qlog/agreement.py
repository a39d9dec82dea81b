"""Derived states checked against logged ones, on a stack that logs both (docs/qlog.md).

A qlog whose stack logs ``congestion_state_updated`` (quic-go, quiche) can be read twice:
as it is, and with its state events removed and the states derived from metrics and
packets (``read_qlog(..., derive_states=True)``). A stack whose states statemine's
instrument patch logs (quiche, aioquic: the statemine lines) gives the logged states of
the same run another way. :func:`agreement` compares the two per state, as shares of the
time both cover, in percent.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from ...fileio import write_atomic
from ...traces import TraceSet
from ..statenames import DERIVED_MARK

_RS = b"\x1e"
_STATE_EVENT = "congestion_state_updated"


def _is_state_event(event: object) -> bool:
    return isinstance(event, dict) and str(event.get("name", "")).endswith(_STATE_EVENT)


def strip_state_events(src: str | Path, dst: str | Path) -> Path:
    """Write ``src`` (a JSON-SEQ qlog, or a contained JSON document) to ``dst`` without its
    ``congestion_state_updated`` events (object events only, the 0.3 and later schemas);
    everything else is kept byte for byte (JSON-SEQ) or as parsed (a document)."""
    data = Path(src).read_bytes()
    if data.startswith(_RS):
        kept = [r for r in data.split(_RS) if not (r.strip() and _is_state_event(json.loads(r)))]
        return write_atomic(dst, _RS.join(kept))
    doc = json.loads(data)
    for trace in doc.get("traces", []):
        trace["events"] = [e for e in trace.get("events", []) if not _is_state_event(e)]
    return write_atomic(dst, json.dumps(doc))


def _span(ts: TraceSet, offset: float = 0.0) -> tuple[float, float]:
    """``(first state row, latest end)`` of a set's traces, seconds (``offset`` added)."""
    states = ts.events.loc[ts.events["kind"] == "state", "time"]
    return float(states.min()) + offset, float(ts.traces["end"].max()) + offset


def connection_start(logged: TraceSet) -> float:
    """The first state row of a patch's log (its ``Init``, seconds): where the connection
    was made, the origin of a qlog whose times count from the connection's creation
    (quiche's: its ``reference_time`` is the connection's first instant), so the
    ``offset`` of :func:`agreement` for such a qlog."""
    return float(logged.events.loc[logged.events["kind"] == "state", "time"].min())


def state_shares(
    ts: TraceSet,
    merge: Mapping[str, str] | None = None,
    window: tuple[float, float] = (-math.inf, math.inf),
    offset: float = 0.0,
) -> pd.Series:
    """Each state's share of the traces' time within ``window`` (seconds), in percent
    (summing to 100), indexed by state name with the derived mark removed and names renamed
    by ``merge`` (shares of states merged into one are added). A state lasts from its row
    to the trace's next state row, the last one to the trace's ``end``; ``offset``
    (seconds) is added to the set's times before they meet ``window``."""
    lo, hi = window
    ends = ts.traces.set_index("trace")["end"].to_dict()
    rows = ts.events.loc[ts.events["kind"] == "state", ["trace", "time", "state"]]
    parts = []
    for trace, one in rows.groupby("trace", observed=True, sort=False):
        one = one.sort_values("time", kind="stable")
        start = one["time"].to_numpy(float) + offset
        stop = np.r_[start[1:], float(ends[trace]) + offset]
        seconds = np.clip(stop, lo, hi) - np.clip(start, lo, hi)
        parts.append(pd.Series(seconds, index=one["state"].astype(str).to_numpy()))
    seconds = pd.concat(parts) if parts else pd.Series(dtype=float)
    names = seconds.index.str.removesuffix(DERIVED_MARK).map(lambda n: (merge or {}).get(n, n))
    total = seconds.groupby(names).sum()
    return 100.0 * total / total.sum()


def agreement(
    logged: TraceSet,
    derived: TraceSet,
    merge: Mapping[str, str] | None = None,
    offset: float = 0.0,
) -> pd.DataFrame:
    """Per state: ``logged_pct``, ``derived_pct`` (shares of time, percent, over the span
    both sets cover: a patch's log and a qlog of the same connection start and end at
    different events) and ``gap_pts`` (derived minus logged, percentage points), one row per
    state either set visits, sorted by state name; ``merge`` renames states in both (e.g. a
    state no metric shows onto the one the derivation gives instead); ``offset``: seconds
    added to ``derived``'s times to put them on ``logged``'s clock (0: one clock;
    :func:`connection_start` for a qlog counted from the connection's creation)."""
    (a0, a1), (b0, b1) = _span(logged), _span(derived, offset)
    window = (max(a0, b0), min(a1, b1))
    both = pd.DataFrame(
        {
            "logged_pct": state_shares(logged, merge, window),
            "derived_pct": state_shares(derived, merge, window, offset),
        }
    ).fillna(0.0)
    both["gap_pts"] = both["derived_pct"] - both["logged_pct"]
    return both.sort_index().rename_axis("state").reset_index()
