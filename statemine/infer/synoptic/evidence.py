"""The sufficient statistics of Synoptic's temporal invariants, mergeable across traces.

For a set of traces, :class:`Evidence` holds, per event type (by name): its number of
events ``count`` (#a), the traces containing it (``traces``), and the pair counts #F and
#P of :mod:`.invariants` (``F[a, b]``: the ``a`` events with a ``b`` later in their trace;
``P[a, b]``: the ``b`` events with an ``a`` earlier in theirs), plus the number of traces.
Every one is a sum over traces, so the evidence of disjoint sets of traces merges
(:meth:`Evidence.merge`) into exactly that of their union: merging is associative and, up to
the order of the types (:meth:`Evidence.canonical`), commutative. The invariants are read
off the evidence alone (:func:`.invariants.invariants_of`).

Per trace, #F(a,b) is the number of ``a`` before the *last* ``b`` and #P(a,b) the number
of ``b`` after the *first* ``a``.  With C_a[p] the number of ``a`` among the first p
events of the log (a running count), the ``a`` of trace t before position p number
C_a[p] - C_a[start of t], so both are sums of differences of running counts at the
first/last positions of the M (trace, type) pairs present: O(T * (N + M)) for T types
and N events, one running count at a time, with no per-event Python loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Evidence:
    """Invariant evidence of ``n_traces`` traces: per type ``types[i]`` (distinct names),
    ``count[i]`` events in ``traces[i]`` traces; ``F``/``P`` (T x T) the pair counts.
    All int64; every listed type has ``count >= 1`` (types are only ever added by the
    traces that contain them)."""

    types: tuple[str, ...]
    count: np.ndarray
    F: np.ndarray
    P: np.ndarray
    traces: np.ndarray
    n_traces: int

    @classmethod
    def empty(cls) -> Evidence:
        """The evidence of no traces (the identity of :meth:`merge`)."""
        zero = np.zeros(0, np.int64)
        return cls((), zero, np.zeros((0, 0), np.int64), np.zeros((0, 0), np.int64), zero, 0)

    def merge(self, other: Evidence) -> Evidence:
        """The evidence of the traces of ``self`` and ``other`` (disjoint sets): sums, per
        type name; types in ``self``'s order, then ``other``'s new ones."""
        index = {t: i for i, t in enumerate(self.types)}
        new = [t for t in other.types if t not in index]
        types = self.types + tuple(new)
        at = np.array([index.get(t, -1) for t in other.types], np.int64)
        at[at < 0] = np.arange(len(self.types), len(types))
        return Evidence(
            types,
            _scatter(self.count, other.count, at, len(types)),
            _scatter(self.F, other.F, at, len(types)),
            _scatter(self.P, other.P, at, len(types)),
            _scatter(self.traces, other.traces, at, len(types)),
            self.n_traces + other.n_traces,
        )

    def canonical(self) -> Evidence:
        """The same evidence with its types sorted by name (code point order), so that
        equal evidence compares equal (:meth:`same`) whatever order merges gave."""
        order = np.array(sorted(range(len(self.types)), key=self.types.__getitem__), np.int64)
        return Evidence(
            tuple(self.types[i] for i in order),
            self.count[order],
            self.F[np.ix_(order, order)],
            self.P[np.ix_(order, order)],
            self.traces[order],
            self.n_traces,
        )

    def same(self, other: Evidence) -> bool:
        """Whether ``self`` and ``other`` are the same evidence (types in any order)."""
        a, b = self.canonical(), other.canonical()
        return (
            a.types == b.types
            and a.n_traces == b.n_traces
            and all(np.array_equal(x, y) for x, y in zip(a.arrays(), b.arrays()))
        )

    def arrays(self) -> tuple[np.ndarray, ...]:
        """``count, F, P, traces``."""
        return self.count, self.F, self.P, self.traces


def _scatter(mine: np.ndarray, theirs: np.ndarray, at: np.ndarray, n: int) -> np.ndarray:
    """``mine`` grown to ``n`` per axis with ``theirs`` added at positions ``at``."""
    out = np.zeros((n,) * mine.ndim, np.int64)
    out[tuple(slice(0, k) for k in mine.shape)] = mine
    out[np.ix_(*(at,) * mine.ndim)] += theirs
    return out


def trace_evidence(types: Sequence[str], codes: np.ndarray, starts: np.ndarray) -> Evidence:
    """The evidence of traces given as flat arrays: ``codes`` (int64 indices into
    ``types``), trace ``k`` being ``codes[starts[k]:starts[k+1]]`` (every trace non-empty).
    Only the types that occur are listed, in ``types``' order.

    >>> ev = trace_evidence(["a", "b", "c"], np.array([0, 1, 0, 1]), np.array([0, 3, 4]))
    >>> ev.types, ev.count.tolist(), ev.F.tolist(), ev.P.tolist(), ev.traces.tolist()
    (('a', 'b'), [2, 2], [[1, 1], [1, 0]], [[1, 1], [1, 0]], [1, 2])
    """
    codes = np.asarray(codes, np.int64)
    count = np.bincount(codes, minlength=len(types)).astype(np.int64)
    present = np.flatnonzero(count)
    if len(present) < len(types):  # renumber the types that occur 0..T-1
        lut = np.cumsum(count > 0) - 1
        codes, count = lut[codes], count[present]
    n_types = len(present)
    n = len(codes)
    n_traces = len(starts) - 1
    trace_of = np.repeat(np.arange(n_traces), np.diff(starts))
    # (type, trace) pairs present, in (type, trace) order: first and last position of
    # each.  A stable sort by type alone gives that order (positions ascend within a type,
    # and traces with them), a radix sort for the small codes; every listed type occurs,
    # so each type's pairs are one run, summed with add.reduceat.
    order = np.argsort(codes.astype(np.int16 if n_types < (1 << 15) else np.int64), kind="stable")
    key = codes[order] * max(n_traces, 1) + trace_of[order]
    head = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if n else np.zeros(0, np.int64)
    first = order[head]
    last = order[np.r_[head[1:], n] - 1] if n else head
    pair_type = key[head] // max(n_traces, 1)
    pair_trace = key[head] % max(n_traces, 1)
    runs = np.searchsorted(pair_type, np.arange(n_types))  # where each type's pairs begin
    start = starts[pair_trace]
    end = starts[pair_trace + 1]
    F = np.zeros((n_types, n_types), dtype=np.int64)
    P = np.zeros((n_types, n_types), dtype=np.int64)
    is_x = np.empty(n, dtype=bool)
    running = np.zeros(n + 1, dtype=np.int64)  # running[p]: events of type x before p
    for x in range(n_types):
        np.equal(codes, x, out=is_x)
        np.cumsum(is_x, out=running[1:])
        F[x] = np.add.reduceat(running[last] - running[start], runs)
        P[:, x] = np.add.reduceat(running[end] - running[first + 1], runs)
    traces = np.bincount(pair_type, minlength=n_types).astype(np.int64)
    names = tuple(str(types[i]) for i in present.tolist())
    return Evidence(names, count, F, P, traces, n_traces)
