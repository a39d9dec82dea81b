"""Perfume's performance-constrained invariants (Ohmann, Herzberg, Fiss, Halle, Palyart,
Beschastnikh, Brun: *Behavioral Resource-Aware Model Inference*, ASE 2014).

Perfume mines Synoptic's untimed invariants plus ``a IntrBy b`` (``b != a``: some trace
has two ``a``s, and in every trace every two consecutive ``a``s have a ``b`` between
them), drops ``INITIAL AlwaysFollowedBy x``, and replaces each AlwaysFollowedBy,
AlwaysPrecedes and IntrBy invariant by two: a lower and an upper time bound.  For
``(a, b)`` AFby/AP the bounds are the minimum and maximum of ``t_j - t_i`` over every
``a`` at position ``i`` and every ``b`` at any later position ``j`` of the same trace;
for IntrBy the same over pairs of ``a``s (independent of ``b``).  Differences are exact
decimals of the times as written (their scale is the larger of the two), printed as
Java's ``BigDecimal.toString`` does (``decimal.Decimal`` follows the same
specification).  NeverFollowedBy is kept unchanged.  Learnt from the paper and from the
description of the real Perfume's outputs in ``../shared/synoptic-oracle/
README-perfume-ktails.md``; no code is taken from Perfume.

Times within a trace are non-decreasing here (the reader orders them; ``--keepOrder`` on
a trace whose times decrease is refused), so the minimum over later ``b``s is reached at
the next ``b`` and the maximum at the trace's last ``b``: O(events x types) decimal
operations.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

from .invariants import AFBY, AP, NFBY, filter_invariants, java_key, mine
from .log import INITIAL, EventLog

INTRBY = "IntrBy"
#: ``invariantType`` of each kind in model.json.
JSON_KIND = {AFBY: AFBY, AP: AP, NFBY: NFBY, INTRBY: "InterruptedBy"}


def _decimal_times(log: EventLog) -> list[Decimal]:
    return [Decimal(str(t)) for t in log.time_text]


def interrupted_by(log: EventLog) -> pd.DataFrame:
    """``a IntrBy b`` invariants (``kind, first, second, support``; support = #a)."""
    n_types = len(log.types)
    twice = np.zeros(n_types, dtype=bool)
    ok = ~np.eye(n_types, dtype=bool)
    for k in range(log.n_traces):
        codes = log.codes[log.starts[k] : log.starts[k + 1]]
        last_pos: dict[int, int] = {}
        for pos, a in enumerate(codes.tolist()):
            if a in last_pos:
                twice[a] = True
                between = np.zeros(n_types, dtype=bool)
                between[codes[last_pos[a] + 1 : pos]] = True
                ok[a] &= between
            last_pos[a] = pos
    count = log.type_counts
    a_idx, b_idx = np.nonzero(ok & twice[:, None])
    names = np.array(log.types, dtype=object)
    return pd.DataFrame(
        {
            "kind": INTRBY,
            "first": names[a_idx],
            "second": names[b_idx],
            "support": count[a_idx].astype(np.int64),
        }
    )


def pair_bounds(log: EventLog) -> tuple[dict, dict]:
    """``(ab, aa)``: ``ab[(a, b)] = (min, max)`` of ``t_j - t_i`` over ``a`` at ``i``,
    ``b`` at ``j > i`` in one trace (type codes); ``aa[a]`` the same over pairs of ``a``s."""
    times = _decimal_times(log)
    ab: dict = {}
    for k in range(log.n_traces):
        lo, hi = int(log.starts[k]), int(log.starts[k + 1])
        codes = log.codes[lo:hi].tolist()
        t = times[lo:hi]
        nxt: dict[int, int] = {}
        last: dict[int, int] = {}
        for pos in range(len(codes) - 1, -1, -1):
            a = codes[pos]
            for b, j in nxt.items():
                lo_d, hi_d = t[j] - t[pos], t[last[b]] - t[pos]
                cur = ab.get((a, b))
                ab[(a, b)] = (
                    (lo_d, hi_d)
                    if cur is None
                    else (min(cur[0], lo_d, key=_num), max(cur[1], hi_d, key=_num))
                )
            nxt[a] = pos
            last.setdefault(a, pos)
    aa = {a: ab[(a, a)] for a in range(len(log.types)) if (a, a) in ab}
    return ab, aa


def _num(d: Decimal) -> Decimal:
    """Numeric key (``min``/``max`` keep the first of equal values, and so its scale)."""
    return d


def mine_constrained(
    log: EventLog,
    support_above: int = 0,
    drop_nfby: bool = False,
    drop_intrby: bool = False,
    ignore_types: str | None = None,
) -> pd.DataFrame:
    """Perfume's invariants: ``kind, first, second, support, bound`` (``lowerbound``,
    ``upperbound`` or empty for NFby), ``value`` (the bound's text), sorted by their
    text line in Java string order.  The filters are Synoptic's (applied to the untimed
    invariants first)."""
    untimed = mine(log)
    untimed = untimed[untimed["first"] != INITIAL]
    if not drop_intrby:
        untimed = pd.concat([untimed, interrupted_by(log)], ignore_index=True)
    untimed = filter_invariants(untimed, support_above, drop_nfby, ignore_types)
    code = {t: i for i, t in enumerate(log.types)}
    ab, aa = pair_bounds(log)
    rows = []
    row: Any  # a frame row: pandas-stubs types every field as any scalar
    for row in untimed.itertuples(index=False):
        if row.kind == NFBY:
            rows.append((row.kind, row.first, row.second, int(row.support), "", ""))
            continue
        a, b = code[row.first], code[row.second]
        lo, hi = aa[a] if row.kind == INTRBY else ab[(a, b)]
        rows.append((row.kind, row.first, row.second, int(row.support), "lowerbound", str(lo)))
        rows.append((row.kind, row.first, row.second, int(row.support), "upperbound", str(hi)))
    frame = pd.DataFrame(rows, columns=["kind", "first", "second", "support", "bound", "value"])
    text = constrained_text(frame)
    order = sorted(range(len(frame)), key=lambda i: java_key(text[i]))
    return frame.iloc[order].reset_index(drop=True)


def constrained_text(frame: pd.DataFrame) -> list[str]:
    """Perfume's text of each invariant: ``Binary inv:a AlwaysFollowedBy(t) b, Constraint:
    upperbound = 12`` or ``a NeverFollowedBy(t) b``."""
    records: Iterable[Any] = frame.itertuples(index=False)  # fields typed as any scalar
    return [
        f"{r.first} {r.kind}(t) {r.second}"
        if not r.bound
        else f"Binary inv:{r.first} {r.kind}(t) {r.second}, Constraint: {r.bound} = {r.value}"
        for r in records
    ]


def constrained_invariants_txt(frame: pd.DataFrame, support: bool = True) -> str:
    """Perfume's ``model.invariants.txt`` (lines sorted in Java string order)."""
    lines = constrained_text(frame)
    if support:
        lines = [f"{line}\tsupport count {s}" for line, s in zip(lines, frame["support"])]
    return "".join(line + "\n" for line in lines)


def constrained_json(frame: pd.DataFrame) -> list[dict]:
    """The ``invariants`` entries of Perfume's ``model.json``."""
    out = []
    r: Any  # a frame row: pandas-stubs types every field as any scalar
    for r in frame.itertuples(index=False):
        entry: dict[str, object] = {
            "invariantType": JSON_KIND[r.kind],
            "predicates": [r.first, r.second],
        }
        if r.bound:
            entry["constraints"] = [f"{r.bound} = {r.value}"]
        out.append(entry)
    return out
