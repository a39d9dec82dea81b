"""Derived states checked against logged ones, on a stack that logs both (docs/qlog.md).

A qlog whose stack logs ``congestion_state_updated`` (quic-go, quiche) can be read twice:
as it is, and with its state events removed and the states derived from metrics and
packets (``read_qlog(..., derive_states=True)``). A stack whose states statemine's
instrument patch logs (quiche, aioquic: the statemine lines) gives the logged states of
the same run another way. :func:`agreement` compares the two per state, as shares of the
trace's time in percent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

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


def state_shares(ts: TraceSet, merge: Mapping[str, str] | None = None) -> pd.Series:
    """Each state's share of all traces' time, in percent (summing to 100), indexed by state
    name with the derived mark removed and names renamed by ``merge`` (shares of states
    merged into one are added)."""
    from ...analyze import state_stats

    stats = state_stats(ts, n_boot=0)
    names = stats["state"].str.removesuffix(DERIVED_MARK).replace(dict(merge or {}))
    return (100.0 * stats["time_fraction"]).groupby(names.to_numpy()).sum()


def agreement(
    logged: TraceSet, derived: TraceSet, merge: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """Per state: ``logged_pct``, ``derived_pct`` (shares of time, percent) and ``gap_pts``
    (derived minus logged, percentage points), one row per state either set visits, sorted
    by state name; ``merge`` renames states in both (e.g. a state no metric shows onto the
    one the derivation gives instead)."""
    both = pd.DataFrame(
        {"logged_pct": state_shares(logged, merge), "derived_pct": state_shares(derived, merge)}
    ).fillna(0.0)
    both["gap_pts"] = both["derived_pct"] - both["logged_pct"]
    return both.sort_index().rename_axis("state").reset_index()
