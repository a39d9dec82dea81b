"""k-tails (Biermann and Feldman 1972), as Synoptic's ``KTailsMain`` runs it.

Every event starts as its own node; two nodes are merged when they have the same label
and the same set of label strings of length <= k starting at them (TERMINAL counts as a
label).  On the trace graph (one chain per trace) an event's strings of length <= k are
the prefixes of its *k-future*: its own type followed by the types of the next k-1 events
of its trace, cut after TERMINAL.  Merging two nodes with equal string sets gives a node
with that same set and leaves every other node's set unchanged (the strings through a
merged node are the same as through either part), so the fixed point of pairwise merging
is the partition by k-future, whatever the merge order.  k = 0 and k = 1 give one node
per event type (Synoptic's initial graph).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .log import EventLog
from .model import PartitionModel


def k_futures(log: EventLog, k: int) -> np.ndarray:
    """An (events x max(k, 1)) matrix: column j is the type code of the event j steps
    later in the same trace, -1 for TERMINAL and -2 after it (column 0: the event's own
    type).  Memory: events x k int64 (8 * k bytes per event)."""
    width = max(k, 1)
    n = log.n_events
    trace = log.trace_of
    out = np.full((n, width), -2, dtype=np.int64)
    out[:, 0] = log.codes
    idx = np.arange(n)
    for j in range(1, width):
        later = idx + j
        inside = later < n
        same = np.zeros(n, dtype=bool)
        same[inside] = trace[later[inside]] == trace[inside]
        out[same, j] = log.codes[later[same]]
        # the first position past the trace's end is TERMINAL; further ones stay -2
        ends = ~same & (out[:, j - 1] >= 0)
        out[ends, j] = -1
    return out


def ktails(log: EventLog, k: int) -> PartitionModel:
    """The k-tails model of ``log`` (``k >= 0``): one node per distinct k-future, nodes
    numbered in order of their first event.

    >>> m = ktails(EventLog.from_sequences([["x", "y", "z", "c"], ["x", "y", "z", "d"]]), 2)
    >>> m.n_nodes  # x, y, z->c, z->d, c, d, INITIAL, TERMINAL
    8
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, not {k}")
    futures = k_futures(log, k)
    keys = pd.MultiIndex.from_arrays(list(futures.T)) if futures.shape[1] > 1 else futures[:, 0]
    part, uniques = pd.factorize(keys, sort=False)
    node_type = np.empty(len(uniques), dtype=np.int64)
    node_type[part] = log.codes
    return PartitionModel(
        log, part.astype(np.int64) + 2, np.concatenate([[-1, -1], node_type]).astype(np.int64)
    )
