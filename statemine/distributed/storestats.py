"""The state and transition tables of a trace store as a map over its data files and the
exact reduce of :mod:`statemine.stats.partial`.

Map (:func:`fold_files`, on a worker): the files of one task are read block by block
(columns trace, seq, time, kind, state, line, source, end; a block is cut after its last
whole trace, so at most one trace's rows are carried to the next), checked
(:func:`statemine.store.check_rows`), folded into visits by the rules of
:mod:`statemine.stats.visits` and added to the per-trace sufficient statistics
(:class:`~statemine.stats.partial.PartialStats`, the task's rank as ``part``). Memory: one
block plus one trace, plus the statistics.

Reduce (:func:`reduce_folds`, on the driver): :func:`statemine.stats.partial.merge` of
the tasks' statistics, whose tables equal, bit for bit, those of the same traces read whole
(:func:`statemine.store.read_store`): a trace lies in one block of one task, so each of its
sums is added in the same order as on one machine, and the merge orders traces by
``(task, row)`` -- store order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

from ..errors import InputError
from ..output.sides import FACTS
from ..stats.options import END_RULES, StatsOptions, too_many_states
from ..stats.partial import PartialStats, VisitStats, merge
from ..stats.visits import VisitChunk, VisitFold, trace_ends
from ..store import check_rows

#: Rows read per block.
BLOCK_ROWS = 1 << 20
_COLUMNS = ["trace", "seq", "time", "kind", "state", "line", "source", "end"]


class FilesFold(NamedTuple):
    """What :func:`fold_files` computed for one task: the statistics, and for the
    too-many-states error the task's state names in order of their first state line
    (``names``), the (source, line) of that line (``first_lines``), and whether more than
    ``max_states`` names were met (``overflow``: the fold stopped there); ``traces``: per
    file, its traces in the statistics' order (:func:`file_traces` frames: ``trace`` id as
    stored, ``source``, ``end`` seconds or NaN)."""

    partial: PartialStats
    names: list[str]
    first_lines: list[tuple[str, int]]
    overflow: bool
    traces: list[pd.DataFrame]


class _Block(NamedTuple):
    """Whole traces of one file: per row the file's trace code, seq, seconds, whether a
    state line, the task's code of its name (-1 for point events unless they are coded,
    see :func:`file_blocks`), line; per trace its end and the
    file's code of its source (:class:`FileIds`); per row whether an event line and
    (when read) whether it logs a cwnd."""

    trace: np.ndarray
    seq: np.ndarray
    time: np.ndarray
    is_state: np.ndarray
    state: np.ndarray
    line: np.ndarray
    explicit_end: np.ndarray
    source: np.ndarray
    is_event: np.ndarray
    cwnd: np.ndarray | None


class FileIds:
    """One file's trace ids and sources, coded in order of first sight."""

    def __init__(self) -> None:
        self.traces: dict[str, int] = {}
        self.sources: dict[str, int] = {}

    def frame(self, blocks: list[dict[str, np.ndarray]], facts: bool) -> pd.DataFrame:
        """The traces frame of the blocks' per-trace columns (:func:`_per_trace`): ids
        and sources decoded, with the :data:`~statemine.output.sides.FACTS` columns when ``facts``."""
        import pandas as pd

        ids = np.array(list(self.traces), dtype=object)
        sources = np.array(list(self.sources), dtype=object)
        keys = ["trace", "source", "end", *(FACTS if facts else ())]
        empty = {k: np.zeros(0, np.float64 if k in ("end", *FACTS[:2]) else np.int64) for k in keys}
        cols = {k: np.concatenate([empty[k], *(b[k] for b in blocks)]) for k in keys}
        return pd.DataFrame(
            {**cols, "trace": ids[cols["trace"]], "source": sources[cols["source"]]}
        )


def _per_trace(block: _Block, first: np.ndarray, facts: bool) -> dict[str, np.ndarray]:
    """A block's per-trace columns (``first``: whether a row starts a trace)."""
    starts = np.flatnonzero(first)
    out = {"trace": block.trace[starts], "source": block.source, "end": block.explicit_end}
    if facts:
        last = np.r_[starts[1:], len(first)] - 1
        counts = [block.is_state, block.is_event, block.cwnd]
        out.update(first_s=block.time[starts], last_s=block.time[last])
        for name, flag in zip(FACTS[2:], counts):
            assert flag is not None
            out[name] = np.add.reduceat(flag.astype(np.int64), starts)
    return out


class StateNames:
    """The task's state names, coded in order of their first state line."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.first_lines: list[tuple[str, int]] = []

    def in_order(self) -> list[str]:
        """The names by code (a new name's code is the number of names before it, so the
        dict's insertion order is the code order)."""
        return list(self.codes)


def fold_files(
    part: int, paths: Sequence[str | Path], options: StatsOptions, *, facts: bool = False
) -> FilesFold:
    """The map: the statistics of the traces of the data files ``paths`` (in this order),
    numbered ``(part, 0..)``; with ``facts``, each trace's :data:`~statemine.output.sides.FACTS` in its frame."""
    if options.end not in END_RULES:
        raise ValueError(f"end must be one of {END_RULES}, not {options.end!r}")
    names = StateNames()
    stats = VisitStats(options.dwell_budget)
    n_traces = n_events = 0
    overflow = False
    frames = []
    for path in map(Path, paths):
        ids = FileIds()
        per_trace = []
        for block in file_blocks(path, names, options.max_states, ids, facts):
            if len(names.codes) > options.max_states:  # the driver names the line
                overflow = True
                break
            n_events += len(block.trace)
            first = np.r_[True, block.trace[1:] != block.trace[:-1]]
            local = np.cumsum(first) - 1
            n_block = int(local[-1]) + 1
            chunk = _visits(block, local, n_block, options)
            chunk = chunk._replace(
                trace=chunk.trace + n_traces, first_trace=chunk.first_trace + n_traces
            )
            n_traces += n_block
            stats.add(chunk, n_traces, len(names.codes))
            per_trace.append(_per_trace(block, first, facts))
        frames.append(ids.frame(per_trace, facts))
        if overflow:
            break
    in_order = names.in_order()
    partial = stats.partial(in_order, part=part, n_events=n_events)
    return FilesFold(partial, in_order, names.first_lines, overflow, frames)


def _visits(block: _Block, local: np.ndarray, n: int, options: StatsOptions) -> VisitChunk:
    """The visits of a block of whole traces (trace codes ``local``, 0..n-1): the closed
    ones in row order, then each trace's last (as one fold of the whole store orders them)."""
    fold = VisitFold(options.collapse_repeats)
    s = block.is_state
    closed = fold.add(local[s], block.state[s], block.time[s])
    last = np.r_[np.flatnonzero(local[1:] != local[:-1]), len(local) - 1]
    final = fold.finish(trace_ends(block.explicit_end, block.time[last], options.end))
    trace, state, start, end, next_ = (
        np.concatenate([a, b]) for a, b in zip(closed[:5], final[:5])
    )
    return VisitChunk(trace, state, start, end, next_, closed.first_trace, closed.first_state)


def file_blocks(
    path: Path,
    names: StateNames,
    max_states: int,
    ids: FileIds,
    cwnd: bool = False,
    *,
    events: bool = False,
) -> Iterator[_Block]:
    """The rows of one data file as blocks of whole traces, checked (trace ids and
    sources coded in ``ids``; ``cwnd``: which rows log one; ``events``: point events'
    names coded in ``names`` too, as Synoptic's event types)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        columns = [*_COLUMNS, "cwnd"] if cwnd else _COLUMNS
        batches = pf.iter_batches(batch_size=BLOCK_ROWS, columns=columns)
        done = np.zeros(0, bool)
        carry: dict[str, np.ndarray] | None = None
        while True:
            batch = next(batches, None)
            rows = None if batch is None else _decode(batch, ids, names, max_states, events)
            if rows is None and carry is None:
                return
            if carry is not None:
                rows = carry if rows is None else {k: np.r_[carry[k], rows[k]] for k in carry}
            assert rows is not None
            trace = rows["trace"]
            if batch is None or not len(trace):
                cut = len(trace)
            else:  # keep the last trace (it may go on in the next batch) for later
                cut = int(np.flatnonzero(np.r_[True, trace[1:] != trace[:-1]])[-1])
            whole = {k: v[:cut] for k, v in rows.items()}
            carry = {k: v[cut:] for k, v in rows.items()} if batch is not None else None
            if not cut:
                continue
            check_rows(path, whole["trace"], whole["seq"], whole["time"])
            if len(done) < len(ids.traces):
                done = np.r_[done, np.zeros(len(ids.traces) - len(done), bool)]
            if done[whole["trace"]].any():
                raise InputError(
                    path, None, "rows are not grouped by trace (a trace's rows are apart)"
                )
            done[whole["trace"]] = True
            first = np.r_[True, whole["trace"][1:] != whole["trace"][:-1]]
            yield _Block(
                whole["trace"],
                whole["seq"],
                whole["time"],
                whole["is_state"],
                whole["state"],
                whole["line"],
                whole["end"][first],
                whole["source"][first],
                whole["is_event"],
                whole.get("cwnd"),
            )
    except (pa.ArrowException, OSError) as exc:
        raise InputError(path, None, f"not a readable Parquet file: {exc}") from None


def _decode(
    batch: pa.RecordBatch, ids: FileIds, names: StateNames, max_states: int, events: bool
) -> dict[str, np.ndarray]:
    """A record batch's columns as numpy arrays: trace and source codes of the file
    (``ids``), the codes of the task (``names``, new names coded in order of their first
    line) of the state rows' names, and with ``events`` of the point events' too."""
    import pyarrow as pa

    columns = {}
    for name in ("trace", "kind", "state", "source"):
        col = batch.column(name)
        if not pa.types.is_dictionary(col.type):
            col = col.dictionary_encode()
        columns[name] = col
    trace = columns["trace"]
    lut = _codes(trace.dictionary.to_pylist(), ids.traces)
    source_lut = _codes(columns["source"].dictionary.to_pylist(), ids.sources)
    kinds = columns["kind"].dictionary.to_pylist()
    kind = columns["kind"].indices.to_numpy(zero_copy_only=False)
    is_state = np.array([k == "state" for k in kinds], bool)[kind]
    is_event = np.array([k == "event" for k in kinds], bool)[kind]
    named = is_state | is_event if events else is_state
    state_idx = columns["state"].indices.to_numpy(zero_copy_only=False)
    line = batch.column("line").to_numpy(zero_copy_only=False)
    state = np.full(len(state_idx), -1, np.int64)
    dictionary = columns["state"].dictionary.to_pylist()
    name_lut = np.array([names.codes.get(s, -1) for s in dictionary], np.int64)
    used = state_idx[named]
    if len(used) and (name_lut[used] < 0).any():
        rows = np.flatnonzero(named)
        uniq, first = np.unique(used, return_index=True)
        new = name_lut[uniq] < 0
        sources = columns["source"]
        for code, row in sorted(zip(uniq[new], rows[first[new]]), key=lambda p: p[1]):
            if len(names.codes) > max_states:
                break
            name_lut[code] = names.codes.setdefault(dictionary[code], len(names.codes))
            source = sources.dictionary[sources.indices[int(row)].as_py()].as_py()
            names.first_lines.append((str(source), int(line[row])))
    state[named] = name_lut[used]
    return {
        "trace": lut[trace.indices.to_numpy(zero_copy_only=False)],
        "seq": batch.column("seq").to_numpy(zero_copy_only=False),
        "time": batch.column("time").to_numpy(zero_copy_only=False),
        "is_state": is_state,
        "state": state,
        "line": line,
        "end": batch.column("end").to_numpy(zero_copy_only=False),
        "source": source_lut[columns["source"].indices.to_numpy(zero_copy_only=False)],
        "is_event": is_event,
        **(
            {"cwnd": batch.column("cwnd").is_valid().to_numpy(zero_copy_only=False)}
            if "cwnd" in batch.schema.names
            else {}
        ),
    }


def _codes(values: list[str], codes: dict[str, int]) -> np.ndarray:
    """The code of each of ``values`` in ``codes`` (a new value: the next code)."""
    return np.array([codes.setdefault(v, len(codes)) for v in values], np.int64)


def reduce_folds(folds: Sequence[FilesFold], options: StatsOptions) -> PartialStats:
    """The driver's reduce: the tasks' statistics merged (after checking the number of
    state names as one fold of the whole store would)."""
    check_names(folds, options.max_states)
    if not folds:
        raise ValueError("no map results to reduce")
    return merge(*(f.partial for f in folds))


class Named(Protocol):
    """A map result that lists its task's state names in order of their first state line
    (``names``) and where that line is (``first_lines``: source, line)."""

    @property
    def names(self) -> list[str]: ...

    @property
    def first_lines(self) -> list[tuple[str, int]]: ...


def check_names(folds: Sequence[Named], max_states: int, reason: str | None = None) -> None:
    """Raise the too-many-states error (``reason``, by default :func:`too_many_states`) at
    the state line that one fold of the whole store would name: the first line of the
    ``max_states + 1``-th name in store order."""
    seen: set[str] = set()
    for fold in folds:
        for name, (source, line) in zip(fold.names, fold.first_lines):
            if name in seen:
                continue
            seen.add(name)
            if len(seen) > max_states:
                message = reason or too_many_states(max_states)
                raise InputError(source, line if line > 0 else None, message)
