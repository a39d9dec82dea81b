"""The engine's view of a trace set: integer-coded event types in flat numpy arrays.

Invariants: ``codes[starts[k]:starts[k+1]]`` is trace ``k`` in order; every trace has at
least one event; ``types[c]`` is the name of code ``c`` (codes in order of first appearance).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from types import SimpleNamespace
from typing import TYPE_CHECKING

import numpy as np

from ...errors import InputError

if TYPE_CHECKING:
    import pyarrow as pa

    from ...parse.regex import RegexEvents
    from ...traces import TraceSet

#: Names of the synthetic start and end events (never codes of real events).
INITIAL = "INITIAL"
TERMINAL = "TERMINAL"


@dataclass(frozen=True)
class EventLog:
    """Traces as flat arrays: ``codes`` (int64 type codes), ``starts`` (trace offsets,
    length ``n_traces + 1``), ``times`` (float64 seconds) and per-event ``lines`` and
    ``time_text`` (Synoptic's printed time, a pyarrow large_string array or a numpy object
    array of str; :meth:`time_texts` lists them) for ``model.json``."""

    types: list[str]
    codes: np.ndarray
    starts: np.ndarray
    times: np.ndarray
    lines: np.ndarray
    time_text: pa.LargeStringArray | np.ndarray = field(repr=False)
    trace_ids: list[str] = field(default_factory=list)

    def time_texts(self) -> list[str]:
        """Synoptic's printed time of every event."""
        if isinstance(self.time_text, np.ndarray):
            return self.time_text.tolist()
        return self.time_text.to_pylist()

    @property
    def n_traces(self) -> int:
        """Number of traces."""
        return len(self.starts) - 1

    @property
    def n_events(self) -> int:
        """Number of events (synthetic INITIAL/TERMINAL excluded)."""
        return len(self.codes)

    @cached_property
    def trace_of(self) -> np.ndarray:
        """Trace index of every event (int64, length ``n_events``)."""
        return np.repeat(np.arange(self.n_traces), np.diff(self.starts))

    @cached_property
    def type_counts(self) -> np.ndarray:
        """Events of each type code (int64, length ``len(types)``; 0: a type with no event)."""
        counts = np.bincount(self.codes, minlength=len(self.types)).astype(np.int64)
        counts.setflags(write=False)  # cached: shared by every caller
        return counts

    @cached_property
    def is_last(self) -> np.ndarray:
        """Boolean mask of the events that end their trace."""
        mask = np.zeros(self.n_events, dtype=bool)
        mask[self.starts[1:] - 1] = True
        return mask

    def seen_in_trace(self, mask: np.ndarray) -> np.ndarray:
        """Per event, how many ``mask`` events of its trace are at or before it (int64)."""
        c = np.cumsum(mask)
        return c - np.r_[0, c][self.starts[:-1]][self.trace_of]

    @cached_property
    def type_spans(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(keys, first, last)``: the sorted distinct ``trace * n_types + code`` of the
        events, and the index of the first and of the last event of each (computed once
        per log: refinement asks for it on every history split)."""
        key = self.trace_of * len(self.types) + self.codes
        keys, first = np.unique(key, return_index=True)
        last = self.n_events - 1 - np.unique(key[::-1], return_index=True)[1]
        return keys, first, last

    def trace(self, k: int) -> list[str]:
        """Event types of trace ``k`` in order."""
        return [self.types[c] for c in self.codes[self.starts[k] : self.starts[k + 1]]]

    @classmethod
    def from_sequences(cls, traces: list[list[str]]) -> EventLog:
        """A log from lists of event types (logical time = position).

        >>> EventLog.from_sequences([["a", "b"], ["b"]]).codes.tolist()
        [0, 1, 1]
        """
        import pandas as pd

        from ...traces import TraceSet

        rows = [(str(k), i, float(i), t) for k, seq in enumerate(traces) for i, t in enumerate(seq)]
        ev = pd.DataFrame(rows, columns=["trace", "seq", "time", "state"])
        return cls.from_traceset(
            TraceSet.from_events(ev, pd.DataFrame({"trace": [str(k) for k in range(len(traces))]}))
        )

    @classmethod
    def from_regex_events(cls, ev: RegexEvents | SimpleNamespace) -> EventLog:
        """The sorted arrays of :func:`statemine.parse.regex.read_regex_arrays` (already
        coded: trace ids 0..T-1 in order, type codes in order of first appearance) as a
        log: the same as ``from_traceset(ev.to_traceset())``, without pandas frames."""
        if not len(ev.trace):
            raise InputError(None, None, "no events to infer a model from")
        types = [str(t) for t in ev.type_names]
        _refuse_synthetic(types, ev.type_codes, ev.lines)
        counts = np.bincount(ev.trace)
        starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return cls(
            types,
            np.asarray(ev.type_codes, dtype=np.int64),
            starts,
            np.asarray(ev.times, dtype=np.float64),
            np.asarray(ev.lines, dtype=np.int64),
            _text_array(ev.time_text),
            [str(i) for i in range(len(counts))],
        )

    @classmethod
    def from_traceset(cls, ts: TraceSet) -> EventLog:
        """Code the events of ``ts``; traces in ``synoptic_trace`` order when that column
        exists (the Synoptic regex reader), else in the order of ``ts.traces``."""
        import pandas as pd  # a TraceSet's frames have loaded it

        ev = ts.events
        if ev.empty:
            raise InputError(None, None, "no events to infer a model from")
        rank: np.ndarray
        if "synoptic_trace" in ev.columns:
            key = ev["synoptic_trace"].to_numpy(dtype=np.int64)
            order_ids = np.unique(key)
            ids = [str(i) for i in order_ids]
            rank = np.searchsorted(order_ids, key)
        else:
            ids = [t for t in ts.traces["trace"].astype(str) if t]
            pos = {t: i for i, t in enumerate(ids)}
            rank = ev["trace"].astype(str).map(pos).to_numpy(dtype=np.int64)
        order = np.lexsort((ev["seq"].to_numpy(), rank))
        rank = rank[order]
        names = ev["state"].astype(str).to_numpy(dtype=object)[order]
        codes, uniques = pd.factorize(names, sort=False)
        _refuse_synthetic(uniques, codes, ev["line"].to_numpy()[order])
        present = np.unique(rank)
        counts = np.bincount(rank, minlength=len(ids))[present]
        starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        times = ev["time"].to_numpy(dtype=np.float64)[order]
        lines = ev["line"].to_numpy(dtype=np.int64)[order]
        text: np.ndarray | list[str]
        if "synoptic_time" in ev.columns:
            text = ev["synoptic_time"].astype(str).to_numpy(dtype=object)[order]
        else:
            text = [repr(float(t)) for t in times]
        return cls(
            [str(u) for u in uniques],
            codes.astype(np.int64),
            starts,
            times,
            lines,
            _text_array(text),
            [ids[i] for i in present],
        )


def _text_array(texts):
    """Texts (a sequence of str or a pyarrow string array) as a pyarrow large_string
    array, or a numpy object array of str (what a sequence stays: no pyarrow import)."""
    if isinstance(texts, (np.ndarray, list)):
        out = np.empty(len(texts), dtype=object)
        out[:] = [str(t) for t in texts]
        return out
    import pyarrow as pa

    return texts.cast(pa.large_string())


def _refuse_synthetic(uniques: Iterable[str], codes: np.ndarray, lines: np.ndarray) -> None:
    """InputError if an event type (``uniques[codes[i]]`` for event i) is named like a
    synthetic node (INITIAL/TERMINAL)."""
    for name in (INITIAL, TERMINAL):
        if name in set(uniques):
            at = int(lines[np.asarray(codes == list(uniques).index(name))][0])
            raise InputError(
                None,
                at if at >= 0 else None,
                f"event type {name!r} clashes with Synoptic's synthetic node",
            )
