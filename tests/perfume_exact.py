"""A test-only exact solver: the fewest nodes of any model of a small log that accepts
its traces and satisfies Perfume's invariants (``timecheck.violations`` finds nothing).

Branch and bound over set partitions of each type's events (an event joins one of the
nodes of its type made so far, or a new one).  Every invariant is about all paths or
walks of the model, and merging nodes only adds paths and walks and widens edge ranges,
so a partial assignment is pruned as soon as the model where every event not yet assigned
is a node of its own breaks an invariant: every completion is coarser.  Exponential: for
logs of tens of events only."""

from __future__ import annotations

import time

import numpy as np
from hypothesis import strategies as st

from statemine.infer.synoptic.log import EventLog
from statemine.infer.synoptic.timecheck import TimedCodes, timed_graph, violations


def _valid(log: EventLog, codes: TimedCodes, ticks: np.ndarray, part: np.ndarray) -> bool:
    node_type = np.full(int(part.max()) + 1, -1, dtype=np.int64)
    node_type[part] = log.codes
    g = timed_graph(part, node_type, log, ticks)
    return not violations(g, codes, len(log.types), any_only=True).any()


def exact_minimum(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    upper: int,
    budget_s: float = 60.0,
) -> tuple[int, bool]:
    """``(nodes, proven)``: the fewest nodes (INITIAL and TERMINAL included) of a valid
    model, searched below ``upper`` (a valid model's size); ``proven`` is False when the
    search ran out of ``budget_s`` CPU seconds (then ``nodes`` is the best found)."""
    n = log.n_events
    order = np.argsort(log.codes, kind="stable")
    n_types = len(log.types)
    best = [upper]
    start = time.process_time()
    out_of_time = [False]
    # node ids: 0, 1 INITIAL/TERMINAL; assigned nodes 2..; unassigned events get their own
    part = np.arange(n, dtype=np.int64) + 2 + n

    def dfs(depth: int, nodes_of_type: list[list[int]], used: int) -> None:
        if time.process_time() - start > budget_s:
            out_of_time[0] = True
            return
        if depth == n:
            best[0] = min(best[0], used + 2)
            return
        e = int(order[depth])
        t = int(log.codes[e])
        later = {int(c) for c in log.codes[order[depth + 1 :]]} - {t}
        unmet = sum(1 for c in later if not nodes_of_type[c])  # each needs a node still
        for node in [*nodes_of_type[t], -1]:
            new = node < 0
            if used + int(new) + unmet + 2 >= best[0]:
                continue
            nid = 2 + used if new else node
            part[e] = nid
            if _valid(log, codes, ticks, part):
                if new:
                    nodes_of_type[t].append(nid)
                dfs(depth + 1, nodes_of_type, used + int(new))
                if new:
                    nodes_of_type[t].pop()
            part[e] = 2 + n + e
            if out_of_time[0]:
                return

    dfs(0, [[] for _ in range(n_types)], 0)
    return best[0], not out_of_time[0]


#: Random tiny logs (traces of (type, time) pairs) for the exact minimum's comparisons.
tiny_logs = st.lists(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["0", "1", "2.5", "4", "7"])),
        min_size=1,
        max_size=5,
    ),
    min_size=1,
    max_size=3,
)


def shaped(traces: list, shape: str) -> list:
    """``traces`` (of :data:`tiny_logs`) in one of three shapes: ``none`` as drawn,
    ``source`` each trace after a first event ``s`` found nowhere else (the levels'
    shape), ``loop`` with a trace that repeats ``a`` (IntrBy, positive cycles)."""
    if shape == "source":
        return [[("s", "0"), *trace] for trace in traces]
    if shape == "loop":
        return [*traces[:2], [("a", "0"), ("b", "1"), ("a", "2"), ("c", "3")]]
    return traces
