"""The partition graph: Synoptic's model, one node per set of event instances.

A :class:`PartitionModel` assigns every event of an :class:`EventLog` to a node.  Node 0
is the synthetic ``INITIAL`` (one instance per trace, before its first event), node 1 the
synthetic ``TERMINAL``; nodes 2.. hold events of one type each.  Edge ``u -> v`` exists
when some instance in ``u`` is directly followed in its trace by an instance in ``v``;
its count is the number of such instances (from ``INITIAL``: traces starting in ``v``).

Invariants: every real node is non-empty and holds events of one type; node ids are dense.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd

from .invariants import java_key
from .log import INITIAL, TERMINAL, EventLog

INIT_NODE = 0
TERM_NODE = 1


@dataclass(frozen=True)
class EdgeTable:
    """A model's edges, one entry per edge sorted by dot ids (``src``, then ``dst``):
    ``node_src``/``node_dst`` (node ids), ``src``/``dst`` (dot ids), ``count`` (int64),
    ``probability`` (count / instances of the source) and ``p_text`` (its two-decimal
    text, :func:`probability_text`)."""

    node_src: np.ndarray
    node_dst: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    count: np.ndarray
    probability: np.ndarray
    p_text: list[str]


@dataclass
class PartitionModel:
    """``part[i]`` is the node of event ``i`` of ``log``; ``node_type[n]`` the type code of
    node ``n`` (-1 for INITIAL/TERMINAL)."""

    log: EventLog
    part: np.ndarray
    node_type: np.ndarray

    # -- construction ------------------------------------------------------------------
    @classmethod
    def initial(cls, log: EventLog) -> PartitionModel:
        """Synoptic's initial partition graph: one node per event type.

        >>> m = PartitionModel.initial(EventLog.from_sequences([["a", "b", "a"]]))
        >>> m.n_nodes, m.part.tolist()
        (4, [2, 3, 2])
        """
        n_types = len(log.types)
        node_type = np.concatenate([[-1, -1], np.arange(n_types)]).astype(np.int64)
        return cls(log, log.codes + 2, node_type)

    @property
    def n_nodes(self) -> int:
        """Number of nodes, INITIAL and TERMINAL included."""
        return len(self.node_type)

    def labels(self) -> list[str]:
        """The label of every node."""
        names = self.log.types
        return [
            INITIAL if n == INIT_NODE else TERMINAL if n == TERM_NODE else names[t]
            for n, t in enumerate(self.node_type)
        ]

    # -- structure -----------------------------------------------------------------------
    def successor_nodes(self) -> np.ndarray:
        """Node of each event's successor (TERMINAL for the last event of a trace)."""
        nxt = np.empty_like(self.part)
        nxt[:-1] = self.part[1:]
        nxt[self.log.is_last] = TERM_NODE
        return nxt

    def predecessor_nodes(self) -> np.ndarray:
        """Node of each event's predecessor (INITIAL for the first event of a trace)."""
        prv = np.empty_like(self.part)
        prv[1:] = self.part[:-1]
        prv[self.log.starts[:-1]] = INIT_NODE
        return prv

    def edge_counts(self) -> np.ndarray:
        """Dense ``n x n`` int64 matrix of edge counts (one bincount: the engine's checks
        call this on every trial, where small models make it cheaper than a sort)."""
        n = self.n_nodes
        counts = np.bincount(self._transition_keys(), minlength=n * n).reshape(n, n)
        return counts.astype(np.int64, copy=False)

    def edge_list(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(src, dst, count)``: the edges with a count > 0, sorted by (src, dst) node
        id (int64; memory linear in the events, not n x n)."""
        n = self.n_nodes
        pairs, count = np.unique(self._transition_keys(), return_counts=True)
        return pairs // n, pairs % n, count.astype(np.int64)

    def _transition_keys(self) -> np.ndarray:
        """``src * n + dst`` of every transition: INITIAL to each trace's first event, each
        event to its successor (TERMINAL after a trace's last)."""
        src = np.concatenate([np.full(self.log.n_traces, INIT_NODE), self.part])
        dst = np.concatenate([self.part[self.log.starts[:-1]], self.successor_nodes()])
        return src * self.n_nodes + dst

    def node_sizes(self) -> np.ndarray:
        """Instances per node (INITIAL and TERMINAL: the number of traces)."""
        sizes = np.bincount(self.part, minlength=self.n_nodes).astype(np.int64)
        sizes[INIT_NODE] = sizes[TERM_NODE] = self.log.n_traces
        return sizes

    def used(self) -> np.ndarray:
        """Per node: does it hold an event (INITIAL and TERMINAL always)?"""
        used = np.zeros(self.n_nodes, dtype=bool)
        used[[INIT_NODE, TERM_NODE]] = True
        used[self.part] = True
        return used

    def compact(self) -> PartitionModel:
        """The same model with empty nodes dropped and ids renumbered densely (the ids of
        :meth:`used` nodes, in order)."""
        used = self.used()
        if used.all():
            return self
        new_id = np.cumsum(used) - 1
        return PartitionModel(self.log, new_id[self.part], self.node_type[used])

    # -- presentation ----------------------------------------------------------------------
    def dot_order(self) -> np.ndarray:
        """Node ids in Synoptic's dot order: real nodes by label (Java string order, ties
        by first event), then TERMINAL, then INITIAL.  ``order[k]`` is the node of dot id k."""
        labels = self.labels()
        first = np.full(self.n_nodes, np.iinfo(np.int64).max)
        np.minimum.at(first, self.part, np.arange(len(self.part)))
        real = sorted(range(2, self.n_nodes), key=lambda n: (java_key(labels[n]), first[n]))
        return np.array([*real, TERM_NODE, INIT_NODE], dtype=np.int64)

    def edge_table(self) -> EdgeTable:
        """The edges sorted by dot ids ``src, dst`` (target ids follow the target labels,
        as in Synoptic's files), as numpy columns (see :class:`EdgeTable`)."""
        order = self.dot_order()
        dot_id = np.empty(self.n_nodes, dtype=np.int64)
        dot_id[order] = np.arange(self.n_nodes)
        src, dst, count = self.edge_list()
        sizes = self.node_sizes()
        sort = np.lexsort((dot_id[dst], dot_id[src]))
        src, dst, count = src[sort], dst[sort], count[sort]
        return EdgeTable(
            src,
            dst,
            dot_id[src],
            dot_id[dst],
            count,
            count / sizes[src],
            [probability_text(c, t) for c, t in zip(count.tolist(), sizes[src].tolist())],
        )

    def edges(self, times: bool = True) -> pd.DataFrame:
        """:meth:`edge_table` as a frame: ``node_src``, ``node_dst``, ``count``, ``src``,
        ``dst`` (dot ids), ``src_label``, ``dst_label``, ``probability`` (count / instances
        of src), ``p_text`` (Synoptic's two-decimal half-up text) and, with ``times``,
        ``time_min/median/max`` (seconds between the two events; NaN on INITIAL/TERMINAL
        edges)."""
        import pandas as pd

        e = self.edge_table()
        labels = self.labels()
        frame = pd.DataFrame(
            {
                "node_src": e.node_src,
                "node_dst": e.node_dst,
                "count": e.count,
                "src": e.src,
                "dst": e.dst,
                "src_label": [labels[s] for s in e.node_src],
                "dst_label": [labels[d] for d in e.node_dst],
                "probability": e.probability,
                "p_text": e.p_text,
            }
        )
        if times:
            frame = frame.join(self._edge_times(), on=["node_src", "node_dst"])
        return frame

    def _edge_times(self) -> pd.DataFrame:
        """min/median/max of the time between consecutive events, per (src, dst) node."""
        import pandas as pd

        log = self.log
        inner = ~log.is_last
        if not inner.any():
            return pd.DataFrame(
                columns=["time_min", "time_median", "time_max"],
                index=pd.MultiIndex.from_arrays([[], []], names=["node_src", "node_dst"]),
            )
        idx = np.nonzero(inner)[0]
        frame = pd.DataFrame(
            {
                "node_src": self.part[idx],
                "node_dst": self.part[idx + 1],
                "dt": log.times[idx + 1] - log.times[idx],
            }
        )
        stats = frame.groupby(["node_src", "node_dst"])["dt"].agg(["min", "median", "max"])
        return stats.rename(columns=lambda c: f"time_{c}")

    def to_networkx(self) -> nx.DiGraph:
        """The model as a DiGraph: nodes are dot ids with ``label`` and ``state`` (the event
        type; None for INITIAL/TERMINAL) and ``size``; edges carry ``count``,
        ``probability`` and ``time_min``/``time_median``/``time_max`` (seconds)."""
        order = self.dot_order()
        labels = self.labels()
        sizes = self.node_sizes()
        import networkx as nx  # lazily: the command line's path never needs it

        g: nx.DiGraph = nx.DiGraph(engine="synoptic")
        for k, n in enumerate(order):
            g.add_node(
                int(k),
                label=labels[n],
                size=int(sizes[n]),
                state=None if n in (INIT_NODE, TERM_NODE) else labels[n],
            )
        row: Any  # a frame row: pandas-stubs types every field as any scalar
        for row in self.edges().itertuples(index=False):
            g.add_edge(
                int(row.src),
                int(row.dst),
                count=int(row.count),
                probability=float(row.probability),
                time_min=float(row.time_min),
                time_median=float(row.time_median),
                time_max=float(row.time_max),
            )
        return g


def probability_text(count: int, total: int) -> str:
    """``count/total`` with two decimals rounded half up from the shortest decimal form of
    the double (as Java's ``%.2f`` does).

    >>> probability_text(1, 8), probability_text(2, 3), probability_text(29, 200)
    ('0.13', '0.67', '0.15')
    """
    value = Decimal(repr(float(count) / float(total)))
    return str(value.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
