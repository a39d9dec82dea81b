"""Mining Synoptic's temporal invariants over totally ordered traces.

Kinds (Beschastnikh et al., FSE 2011, section 3; counting as in Synoptic's chain-walking
miner, which mines from per-pair counts instead of a transitive closure):

* ``a AlwaysFollowedBy b``  iff  #F(a,b) == #a   -- every ``a`` is followed later by a ``b``;
* ``a NeverFollowedBy b``   iff  #F(a,b) == 0    -- no ``a`` is followed later by a ``b``;
* ``a AlwaysPrecedes b``    iff  #P(a,b) == #b   -- every ``b`` is preceded by an ``a``;
* ``INITIAL AlwaysFollowedBy x`` iff every trace contains ``x``;

where #F(a,b) counts the ``a`` events that have a ``b`` later in their trace and #P(a,b)
the ``b`` events that have an ``a`` earlier in theirs.  Support counts: #a for AFby and
NFby, #b for AP, #x for ``INITIAL AFby x`` (what Synoptic prints with
``--outputSupportCount``).

Per trace, #F(a,b) is the number of ``a`` before the *last* ``b`` and #P(a,b) the number
of ``b`` after the *first* ``a``, so both are computed with binary searches over each
type's sorted event positions: O(T * M log N) for T types, N events and M (trace, type)
pairs present, with no per-event Python loop.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .log import INITIAL, EventLog

AFBY = "AlwaysFollowedBy"
NFBY = "NeverFollowedBy"
AP = "AlwaysPrecedes"
#: Invariant kinds as Synoptic names them.
KINDS = (AFBY, NFBY, AP)


def pair_counts(log: EventLog) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(count, F, P, in_all)``: per-type counts, the #F and #P matrices (T x T, int64,
    ``F[a, b]`` / ``P[a, b]`` as in the module docstring) and which types occur in every
    trace.

    >>> c, F, P, every = pair_counts(EventLog.from_sequences([["a", "b", "a"], ["b"]]))
    >>> c.tolist(), F.tolist(), P.tolist(), every.tolist()
    ([2, 2], [[1, 1], [1, 0]], [[1, 1], [1, 0]], [False, True])
    """
    n_types = len(log.types)
    codes = log.codes
    trace_of = log.trace_of
    count = np.bincount(codes, minlength=n_types).astype(np.int64)
    # (trace, type) pairs present: first and last global position of each.
    key = trace_of * n_types + codes
    idx = np.arange(len(codes))
    uniq, first = np.unique(key, return_index=True)
    rev_uniq, rev_first = np.unique(key[::-1], return_index=True)
    last = len(codes) - 1 - rev_first
    pair_trace = uniq // n_types
    pair_type = uniq % n_types
    start = log.starts[pair_trace]
    end = log.starts[pair_trace + 1]
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(n_types + 1))
    F = np.zeros((n_types, n_types), dtype=np.int64)
    P = np.zeros((n_types, n_types), dtype=np.int64)
    for x in range(n_types):
        pos = idx[order[bounds[x]:bounds[x + 1]]]  # sorted positions of type x
        before_last = np.searchsorted(pos, last) - np.searchsorted(pos, start)
        F[x] = np.bincount(pair_type, weights=before_last, minlength=n_types)
        after_first = np.searchsorted(pos, end) - np.searchsorted(pos, first, side="right")
        P[:, x] = np.bincount(pair_type, weights=after_first, minlength=n_types)
    per_type_traces = np.bincount(pair_type, minlength=n_types)
    in_all = per_type_traces == log.n_traces
    return count, F, P, in_all


def mine(log: EventLog) -> pd.DataFrame:
    """All invariants of ``log`` as a frame ``kind, first, second, support`` (first may be
    ``INITIAL``), sorted as Synoptic's ``model.invariants.txt`` is.

    >>> inv = mine(EventLog.from_sequences([["a", "b"], ["a", "b"]]))
    >>> inv.apply(lambda r: f"{r['first']} {r['kind']} {r['second']}", axis=1).tolist()[:3]
    ['INITIAL AlwaysFollowedBy a', 'INITIAL AlwaysFollowedBy b', 'a AlwaysFollowedBy b']
    """
    count, F, P, in_all = pair_counts(log)
    names = np.array(log.types, dtype=object)
    rows = []
    a_idx, b_idx = np.nonzero(F == count[:, None])
    rows.append((AFBY, names[a_idx], names[b_idx], count[a_idx]))
    a_idx, b_idx = np.nonzero(F == 0)
    rows.append((NFBY, names[a_idx], names[b_idx], count[a_idx]))
    a_idx, b_idx = np.nonzero(P == count[None, :])
    rows.append((AP, names[a_idx], names[b_idx], count[b_idx]))
    x = np.nonzero(in_all)[0]
    rows.append((AFBY, np.full(len(x), INITIAL, dtype=object), names[x], count[x]))
    frame = pd.concat([pd.DataFrame({"kind": k, "first": a, "second": b, "support": s})
                       for k, a, b, s in rows], ignore_index=True)
    frame["support"] = frame["support"].astype("int64")
    return sort_invariants(frame)


def invariant_text(frame: pd.DataFrame) -> pd.Series:
    """Synoptic's text of each invariant: ``"a AlwaysFollowedBy(t) b"``."""
    return frame["first"].astype(str) + " " + frame["kind"].astype(str) + "(t) " \
        + frame["second"].astype(str)


def java_key(text: str) -> bytes:
    """Sort key ordering strings like Java's ``String.compareTo`` (UTF-16 code units)."""
    return text.encode("utf-16-be", errors="surrogatepass")


def sort_invariants(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows sorted by their Synoptic text in Java string order."""
    text = invariant_text(frame)
    order = sorted(range(len(frame)), key=lambda i: java_key(text.iat[i]))
    return frame.iloc[order].reset_index(drop=True)
