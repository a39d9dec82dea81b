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


def k_future_classes(log: EventLog, k: int) -> np.ndarray:
    """The class of every event's k-future (int64, numbered in order of first event): two
    events share a class iff they have the same type and the same types of the next k-1
    events of their trace, cut after TERMINAL.

    Built by refinement: the (j+1)-future of an event is its type followed by the
    j-future of the next event of its trace (TERMINAL after its last event), so each step
    codes (type, class of the next event) pairs.  A step that adds no class is a fixed
    point (so is the longest trace's length + 1), so the steps stop there whatever ``k``:
    memory is a few int64 per event and time O(events x min(k, longest trace)).
    """
    codes = np.asarray(log.codes, dtype=np.int64)
    classes, uniques = pd.factorize(codes, sort=False)
    last = log.is_last
    after = np.arange(1, log.n_events + 1)
    after[last] = 0  # a placeholder, masked below
    count = len(uniques)
    for _ in range(1, max(k, 1)):
        then = np.where(last, -1, classes[after])  # -1: TERMINAL
        classes, uniques = pd.factorize(codes * (count + 1) + (then + 1), sort=False)
        if len(uniques) == count:
            break
        count = len(uniques)
    return classes.astype(np.int64)


def ktails(log: EventLog, k: int) -> PartitionModel:
    """The k-tails model of ``log`` (``k >= 0``): one node per distinct k-future, nodes
    numbered in order of their first event.

    >>> m = ktails(EventLog.from_sequences([["x", "y", "z", "c"], ["x", "y", "z", "d"]]), 2)
    >>> m.n_nodes  # x, y, z->c, z->d, c, d, INITIAL, TERMINAL
    8
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, not {k}")
    part = k_future_classes(log, k)
    node_type = np.empty(int(part.max()) + 1 if len(part) else 0, dtype=np.int64)
    node_type[part] = log.codes
    return PartitionModel(
        log, part.astype(np.int64) + 2, np.concatenate([[-1, -1], node_type]).astype(np.int64)
    )
