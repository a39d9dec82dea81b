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
of ``b`` after the *first* ``a``.  With C_a[p] the number of ``a`` among the first p
events of the log (a running count), the ``a`` of trace t before position p number
C_a[p] - C_a[start of t], so both are sums of differences of running counts at the
first/last positions of the M (trace, type) pairs present: O(T * (N + M)) for T types
and N events, one running count at a time, with no per-event Python loop.
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
    n = len(codes)
    count = np.bincount(codes, minlength=n_types).astype(np.int64)
    # (trace, type) pairs present, in (trace, type) order: first and last position of each.
    key = log.trace_of * n_types + codes
    order = np.argsort(key, kind="stable")
    key = key[order]
    head = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    first = order[head]
    last = order[np.r_[head[1:], n] - 1]
    pair_trace = key[head] // n_types
    pair_type = key[head] % n_types
    start = log.starts[pair_trace]
    end = log.starts[pair_trace + 1]
    F = np.zeros((n_types, n_types), dtype=np.int64)
    P = np.zeros((n_types, n_types), dtype=np.int64)
    is_x = np.empty(n, dtype=bool)
    running = np.zeros(n + 1, dtype=np.int64)  # running[p]: events of type x before p
    for x in range(n_types):
        np.equal(codes, x, out=is_x)
        np.cumsum(is_x, out=running[1:])
        F[x] = np.bincount(pair_type, weights=running[last] - running[start], minlength=n_types)
        P[:, x] = np.bincount(
            pair_type, weights=running[end] - running[first + 1], minlength=n_types
        )
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
    a_idx, b_idx = np.nonzero(count[:, None] == F)
    rows.append((AFBY, names[a_idx], names[b_idx], count[a_idx]))
    a_idx, b_idx = np.nonzero(F == 0)
    rows.append((NFBY, names[a_idx], names[b_idx], count[a_idx]))
    a_idx, b_idx = np.nonzero(count[None, :] == P)
    rows.append((AP, names[a_idx], names[b_idx], count[b_idx]))
    x = np.nonzero(in_all)[0]
    rows.append((AFBY, np.full(len(x), INITIAL, dtype=object), names[x], count[x]))
    frame = pd.concat(
        [pd.DataFrame({"kind": k, "first": a, "second": b, "support": s}) for k, a, b, s in rows],
        ignore_index=True,
    )
    frame["support"] = frame["support"].astype("int64")
    return sort_invariants(frame)


def invariant_text(frame: pd.DataFrame) -> pd.Series:
    """Synoptic's text of each invariant: ``"a AlwaysFollowedBy(t) b"``."""
    return (
        frame["first"].astype(str)
        + " "
        + frame["kind"].astype(str)
        + "(t) "
        + frame["second"].astype(str)
    )


def java_key(text: str) -> bytes:
    """Sort key ordering strings like Java's ``String.compareTo`` (UTF-16 code units)."""
    return text.encode("utf-16-be", errors="surrogatepass")


def sort_invariants(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows sorted by their Synoptic text in Java string order."""
    text = invariant_text(frame)
    texts: list[str] = text.tolist()
    order = sorted(range(len(frame)), key=lambda i: java_key(texts[i]))
    return frame.iloc[order].reset_index(drop=True)


def filter_invariants(
    frame: pd.DataFrame,
    support_above: int = 0,
    drop_nfby: bool = False,
    ignore_types: str | None = None,
) -> pd.DataFrame:
    """Synoptic's invariant filters, applied after mining and before refinement:
    keep invariants whose support count is greater than ``support_above``
    (``--supportCountThreshold``); drop NeverFollowedBy (``--ignoreNFbyInvs``); drop an
    invariant when every one of its event types (INITIAL included) is in the
    ``;``-separated ``ignore_types`` (``--ignoreInvsOverETypeSet``).

    >>> inv = mine(EventLog.from_sequences([["a", "b"], ["a"]]))
    >>> len(inv), len(filter_invariants(inv, support_above=1)), len(filter_invariants(inv, drop_nfby=True))
    (5, 2, 2)
    """
    keep = frame["support"].to_numpy() > support_above
    if drop_nfby:
        keep &= (frame["kind"] != NFBY).to_numpy()
    if ignore_types is not None:
        ignored = set(ignore_types.split(";"))
        keep &= ~(frame["first"].isin(ignored) & frame["second"].isin(ignored)).to_numpy()
    return frame[keep].reset_index(drop=True)
