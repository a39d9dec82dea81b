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

The counts are the :class:`.evidence.Evidence` of the traces (sums over traces, so
mergeable: a trace store's invariants are mined from the merged evidence of its files).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .evidence import Evidence, trace_evidence
from .log import INITIAL, EventLog

if TYPE_CHECKING:
    import pandas as pd

AFBY = "AlwaysFollowedBy"
NFBY = "NeverFollowedBy"
AP = "AlwaysPrecedes"
#: Invariant kinds as Synoptic names them.
KINDS = (AFBY, NFBY, AP)


#: Columns of an invariant table (:class:`Invariants` or a frame of :func:`mine`).
COLUMNS = ("kind", "first", "second", "support")


@dataclass(frozen=True)
class Invariants:
    """Invariants as columns without pandas (the command line's path imports no pandas):
    ``kind``, ``first``, ``second`` (object arrays of str; ``first`` may be ``INITIAL``)
    and ``support`` (int64).  ``inv["first"]`` reads a column, as on a frame of
    :func:`mine`, so the functions below take either."""

    kind: np.ndarray
    first: np.ndarray
    second: np.ndarray
    support: np.ndarray

    def __len__(self) -> int:
        return len(self.kind)

    def __getitem__(self, column: str) -> np.ndarray:
        if column not in COLUMNS:
            raise KeyError(column)
        return getattr(self, column)

    def take(self, index: Any) -> Invariants:
        """The rows at ``index`` (integer positions or a boolean mask), in that order."""
        return Invariants(*(getattr(self, c)[index] for c in COLUMNS))

    @classmethod
    def from_rows(cls, kind: Any, first: Any, second: Any, support: Any) -> Invariants:
        """Columns from sequences (str, str, str, int)."""
        return cls(
            np.asarray(kind, dtype=object),
            np.asarray(first, dtype=object),
            np.asarray(second, dtype=object),
            np.asarray(support, dtype=np.int64),
        )

    @classmethod
    def of(cls, table: Invariants | pd.DataFrame) -> Invariants:
        """``table`` itself, or a frame of :func:`mine` as columns."""
        if isinstance(table, Invariants):
            return table
        return cls.from_rows(*(table[c].tolist() for c in COLUMNS))

    def to_frame(self) -> pd.DataFrame:
        """The frame :func:`mine` returns: columns ``kind, first, second, support``."""
        import pandas as pd

        return pd.DataFrame(
            {
                "kind": pd.Series(self.kind, dtype=object),
                "first": pd.Series(self.first, dtype=object),
                "second": pd.Series(self.second, dtype=object),
                "support": pd.Series(self.support, dtype="int64"),
            }
        )


def mine_invariants(log: EventLog) -> Invariants:
    """All invariants of ``log`` as :class:`Invariants`, sorted as Synoptic's
    ``model.invariants.txt`` is.

    >>> inv = mine_invariants(EventLog.from_sequences([["a", "b"], ["a", "b"]]))
    >>> invariant_lines(inv)[:3]
    ['INITIAL AlwaysFollowedBy(t) a', 'INITIAL AlwaysFollowedBy(t) b', 'a AlwaysFollowedBy(t) b']
    """
    return invariants_of(trace_evidence(log.types, log.codes, log.starts))


def invariants_of(evidence: Evidence) -> Invariants:
    """The invariants that ``evidence`` (of a set of traces) shows, sorted as Synoptic's
    ``model.invariants.txt`` is (so the order of its types does not matter).

    >>> from .evidence import trace_evidence
    >>> ev = trace_evidence(["a", "b"], np.array([0, 1, 1]), np.array([0, 2, 3]))
    >>> invariant_lines(invariants_of(ev))[:2]
    ['INITIAL AlwaysFollowedBy(t) b', 'a AlwaysFollowedBy(t) b']
    """
    count, F, P = evidence.count, evidence.F, evidence.P
    names = np.empty(len(evidence.types), dtype=object)
    names[:] = evidence.types
    parts = []
    a_idx, b_idx = np.nonzero(count[:, None] == F)
    parts.append((AFBY, names[a_idx], names[b_idx], count[a_idx]))
    a_idx, b_idx = np.nonzero(F == 0)
    parts.append((NFBY, names[a_idx], names[b_idx], count[a_idx]))
    a_idx, b_idx = np.nonzero(count[None, :] == P)
    parts.append((AP, names[a_idx], names[b_idx], count[b_idx]))
    x = np.nonzero(evidence.traces == evidence.n_traces)[0]
    parts.append((AFBY, np.full(len(x), INITIAL, dtype=object), names[x], count[x]))
    table = Invariants.from_rows(
        np.concatenate([np.full(len(a), k, dtype=object) for k, a, _, _ in parts]),
        np.concatenate([a for _, a, _, _ in parts]),
        np.concatenate([b for _, _, b, _ in parts]),
        np.concatenate([s for _, _, _, s in parts]),
    )
    return sort_invariants(table)


def mine(log: EventLog) -> pd.DataFrame:
    """:func:`mine_invariants` as a frame ``kind, first, second, support``.

    >>> inv = mine(EventLog.from_sequences([["a", "b"], ["a", "b"]]))
    >>> inv.apply(lambda r: f"{r['first']} {r['kind']} {r['second']}", axis=1).tolist()[:3]
    ['INITIAL AlwaysFollowedBy a', 'INITIAL AlwaysFollowedBy b', 'a AlwaysFollowedBy b']
    """
    return mine_invariants(log).to_frame()


def invariant_lines(table: Invariants | pd.DataFrame) -> list[str]:
    """Synoptic's text of each invariant: ``"a AlwaysFollowedBy(t) b"``."""
    return [f"{a} {k}(t) {b}" for a, k, b in zip(table["first"], table["kind"], table["second"])]


def invariant_text(frame: pd.DataFrame) -> pd.Series:
    """:func:`invariant_lines` of a frame, as a Series on its index."""
    import pandas as pd

    return pd.Series(invariant_lines(frame), index=frame.index, dtype=object)


def java_key(text: str) -> bytes:
    """Sort key ordering strings like Java's ``String.compareTo`` (UTF-16 code units)."""
    return text.encode("utf-16-be", errors="surrogatepass")


def _rows(table: Any, index: Any) -> Any:
    """The rows of ``table`` (:class:`Invariants` or a frame) at integer positions or a
    boolean mask, a frame renumbered 0..n-1."""
    if isinstance(table, Invariants):
        return table.take(np.asarray(index))
    return table.iloc[np.asarray(index)].reset_index(drop=True)


def sort_invariants(table: Any) -> Any:
    """Rows (of :class:`Invariants` or a frame, same type back) sorted by their Synoptic
    text in Java string order."""
    texts = invariant_lines(table)
    order = sorted(range(len(texts)), key=lambda i: java_key(texts[i]))
    return _rows(table, np.array(order, dtype=np.int64))


def filter_invariants(
    table: Any,
    support_above: int = 0,
    drop_nfby: bool = False,
    ignore_types: str | None = None,
) -> Any:
    """Synoptic's invariant filters, applied after mining and before refinement:
    keep invariants whose support count is greater than ``support_above``
    (``--supportCountThreshold``); drop NeverFollowedBy (``--ignoreNFbyInvs``); drop an
    invariant when every one of its event types (INITIAL included) is in the
    ``;``-separated ``ignore_types`` (``--ignoreInvsOverETypeSet``).  ``table``:
    :class:`Invariants` or a frame (same type back, extra columns kept).

    >>> inv = mine(EventLog.from_sequences([["a", "b"], ["a"]]))
    >>> len(inv), len(filter_invariants(inv, support_above=1)), len(filter_invariants(inv, drop_nfby=True))
    (5, 2, 2)
    """
    keep = np.asarray(table["support"]) > support_above
    if drop_nfby:
        keep &= np.asarray(table["kind"], dtype=object) != NFBY
    if ignore_types is not None:
        ignored = set(ignore_types.split(";"))
        both = [a in ignored and b in ignored for a, b in zip(table["first"], table["second"])]
        keep &= ~np.array(both, dtype=bool)
    return _rows(table, keep)
