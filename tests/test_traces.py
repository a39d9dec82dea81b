"""The compact TraceSet's bytes per event (issue 17 part 4; bound in statemine/traces.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from statemine.traces import EVENT_COLUMNS, TraceSet


def _set(n: int, traces: int, names: int) -> TraceSet:
    """``n`` events over ``traces`` traces and ``names`` distinct state names."""
    i = np.arange(n)
    return TraceSet.from_events(
        pd.DataFrame(
            {
                "trace": [f"t{k}" for k in np.sort(i % traces)],
                "time": i * 1e-3,
                "state": [f"S{k}" for k in i % names],
            }
        )
    )


@pytest.mark.parametrize(
    ("traces", "names", "width"),
    [(10, 5, 19), (40_000, 5, 22), (10, 40_000, 22), (40_000, 100, 22), (40_000, 40_000, 25)],
)
def test_core_columns_cost_at_most_22_bytes_an_event_but_in_the_id_corner(traces, names, width):
    ts = _set(80_000, traces, names)
    ev = ts.events
    assert list(ev.columns) == list(EVENT_COLUMNS)
    # the arrays pandas holds per row (the distinct values apart) ...
    text = ("trace", "kind", "state")
    held = sum(ev[c].cat.codes.to_numpy().nbytes for c in text) + sum(
        ev[c].to_numpy().nbytes for c in ev.columns if c not in text
    )
    # ... equals the documented widths: codes by distinct count, int32 seq/line, float64 time
    code = {
        c: 1 if k <= 127 else 2 if k <= 32767 else 4
        for c, k in ((("trace", traces), ("state", names), ("kind", 1)))
    }
    expected = code["trace"] + 4 + 8 + code["kind"] + code["state"] + 4
    assert expected == width
    assert held / len(ev) == width
    assert width <= 22 or (traces > 32767 and names > 32767 and width == 25)
