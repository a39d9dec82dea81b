"""The state and transition tables of a trace store as a map over its data files and an
exact reduce on the driver.

Map (:func:`fold_files`, on a worker): the files of one task are read block by block
(columns trace, seq, time, kind, state, end; a block is cut after its last whole trace, so
at most one trace's rows are carried to the next), checked (:func:`statemine.store.check_rows`),
folded into visits by the rules of :mod:`statemine.visitfold` and reduced to per-trace
sums: seconds and visits per (trace, state), counts per (trace, transition), and the dwell
times (raw, or the bounded sketch past its budget). Memory: one block plus one trace.

Reduce (:func:`reduce_folds`, on the driver): the tasks' traces are numbered in store order
(each task's after the previous task's), their state names are merged and sorted, and the
sums are arranged exactly as :func:`statemine.summarize` arranges them for the same traces
read whole (:func:`statemine.store.read_store`): every per-trace sum was added up in the
same order, and integer counts are exact in any order, so the tables (and the bootstrap,
drawn over the same traces) are equal to the last bit.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

from ..errors import InputError
from ..store import check_rows
from ..visitfold import END_RULES, OUTSIDE, EndRule, VisitChunk, VisitFold
from ..visitstats import (
    DwellTimes,
    KeyedSums,
    VisitStats,
    check_max_states,
    too_many_states,
    unique_sums,
)

_SHIFT = 32
_LOW = (1 << _SHIFT) - 1
#: Rows read per block.
BLOCK_ROWS = 1 << 20
_COLUMNS = ["trace", "seq", "time", "kind", "state", "line", "source", "end"]


class FoldOptions(NamedTuple):
    """The statistics' options that act in the map (as :func:`statemine.summarize`)."""

    collapse_repeats: bool = False
    end: EndRule = "close"
    max_states: int = 100_000
    dwell_budget: int = 1 << 20


class FilesFold(NamedTuple):
    """What :func:`fold_files` sums for one task (codes local to the task).

    ``names``: state names by code, in order of first state line; ``first_lines``: per name,
    the (source, line) of that line (for the too-many-states error); ``overflow``: more than
    ``max_states`` names were met and the fold stopped there. ``state_keys``/``state_sums``:
    ascending ``trace << 32 | state`` keys with seconds and visits (2 x n);
    ``edge_trace``/``edge_src``/``edge_dst``/``edge_count``: transitions per trace (OUTSIDE
    for INITIAL/TERMINAL); ``dwell``: ``("raw", state, seconds)`` or ``("sketch", keys,
    counts)`` (the sketch's ``state << 32 | bucket`` cells)."""

    names: list[str]
    first_lines: list[tuple[str, int]]
    overflow: bool
    n_traces: int
    n_events: int
    state_keys: np.ndarray
    state_sums: np.ndarray
    edge_trace: np.ndarray
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_count: np.ndarray
    dwell: tuple[str, np.ndarray, np.ndarray]
    n_visits: int


class _Block(NamedTuple):
    """Whole traces of one file: per row the file's trace code, seq, seconds, whether a
    state line, the task's state code (-1 for events), line; per trace its end."""

    trace: np.ndarray
    seq: np.ndarray
    time: np.ndarray
    is_state: np.ndarray
    state: np.ndarray
    line: np.ndarray
    explicit_end: np.ndarray


class _Names:
    """The task's state names, coded in order of their first state line."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.first_lines: list[tuple[str, int]] = []


def fold_files(paths: Sequence[str | Path], opts: FoldOptions) -> FilesFold:
    """The map: the per-trace sums of the data files ``paths`` (in this order)."""
    if opts.end not in END_RULES:
        raise ValueError(f"end must be one of {END_RULES}, not {opts.end!r}")
    check_max_states(opts.max_states)
    names = _Names()
    state_parts: list[tuple[np.ndarray, np.ndarray]] = []
    edge_parts: list[tuple[np.ndarray, ...]] = []
    dwell = DwellTimes(opts.dwell_budget)
    n_traces = n_events = n_visits = 0
    overflow = False
    for path in map(Path, paths):
        for block in _blocks(path, names, opts.max_states):
            if len(names.codes) > opts.max_states:  # the driver names the line
                overflow = True
                break
            n_events += len(block.trace)
            local = np.cumsum(np.r_[True, block.trace[1:] != block.trace[:-1]]) - 1
            n_block = int(local[-1]) + 1
            chunk = _visits(block, local, n_block, opts)
            duration = chunk.end - chunk.start
            keys, sums = unique_sums(chunk.trace, chunk.state, [duration, None])
            state_parts.append((keys + (n_traces << _SHIFT), sums))
            edge_parts.append(_edges(chunk, n_traces))
            dwell.add(chunk.state, duration)
            n_visits += len(chunk.trace)
            n_traces += n_block
        if overflow:
            break
    state_keys = (
        np.concatenate([k for k, _ in state_parts]) if state_parts else np.zeros(0, np.int64)
    )
    state_sums = (
        np.concatenate([s for _, s in state_parts], axis=1) if state_parts else np.zeros((2, 0))
    )
    edges = (
        [np.concatenate(c) for c in zip(*edge_parts)] if edge_parts else [np.zeros(0, np.int64)] * 4
    )
    return FilesFold(
        names=sorted(names.codes, key=names.codes.__getitem__),
        first_lines=names.first_lines,
        overflow=overflow,
        n_traces=n_traces,
        n_events=n_events,
        state_keys=state_keys,
        state_sums=state_sums,
        edge_trace=edges[0],
        edge_src=edges[1],
        edge_dst=edges[2],
        edge_count=edges[3],
        dwell=_dwell_parts(dwell),
        n_visits=n_visits,
    )


def _visits(block: _Block, local: np.ndarray, n: int, opts: FoldOptions) -> VisitChunk:
    """The visits of a block of whole traces (trace codes ``local``, 0..n-1): the closed
    ones in row order, then each trace's last (as :func:`statemine.summarize` orders them)."""
    fold = VisitFold(opts.collapse_repeats)
    s = block.is_state
    closed = fold.add(local[s], block.state[s], block.time[s])
    if opts.end == "last-state":
        ends = np.full(n, -np.inf)
    else:
        last = np.r_[np.flatnonzero(local[1:] != local[:-1]), len(local) - 1]
        ends = np.where(np.isnan(block.explicit_end), block.time[last], block.explicit_end)
    final = fold.finish(ends)
    trace, state, start, end, next_ = (
        np.concatenate([a, b]) for a, b in zip(closed[:5], final[:5])
    )
    return VisitChunk(trace, state, start, end, next_, closed.first_trace, closed.first_state)


def _edges(chunk: VisitChunk, base: int) -> tuple[np.ndarray, ...]:
    """Transitions per trace of a chunk: (trace + base, src, dst, count), INITIAL ->
    first state included; the same pairs :class:`~statemine.visitstats.VisitStats` counts."""
    src = np.concatenate([np.full(len(chunk.first_trace), OUTSIDE), chunk.state])
    dst = np.concatenate([chunk.first_state, chunk.next])
    trace = np.concatenate([chunk.first_trace, chunk.trace])
    pair, number = np.unique(((src + 1) << _SHIFT) | (dst + 1), return_inverse=True)
    keys, (count,) = unique_sums(trace, number.reshape(-1), [None])
    edge = pair[keys & _LOW]
    return (keys >> _SHIFT) + base, (edge >> _SHIFT) - 1, (edge & _LOW) - 1, count


def _dwell_parts(dwell: DwellTimes) -> tuple[str, np.ndarray, np.ndarray]:
    """The dwell times as raw (state, seconds) arrays, or the sketch's cells and counts."""
    if dwell._sketch is None:  # interim: visitstats has no public accessor for these
        state = np.concatenate(dwell._states) if dwell._states else np.zeros(0, np.int32)
        values = np.concatenate(dwell._durations) if dwell._durations else np.zeros(0)
        return "raw", state, values
    keys, (counts,) = dwell._sketch.result()
    return "sketch", keys, counts


def _blocks(path: Path, names: _Names, max_states: int) -> Iterator[_Block]:
    """The rows of one data file as blocks of whole traces, checked."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        batches = pf.iter_batches(batch_size=BLOCK_ROWS, columns=_COLUMNS)
        ids: dict[str, int] = {}
        done = np.zeros(0, bool)
        carry: dict[str, np.ndarray] | None = None
        while True:
            batch = next(batches, None)
            rows = None if batch is None else _decode(batch, ids, names, max_states)
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
            if len(done) < len(ids):
                done = np.r_[done, np.zeros(len(ids) - len(done), bool)]
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
            )
    except (pa.ArrowException, OSError) as exc:
        raise InputError(path, None, f"not a readable Parquet file: {exc}") from None


def _decode(
    batch: pa.RecordBatch, ids: dict[str, int], names: _Names, max_states: int
) -> dict[str, np.ndarray]:
    """A record batch's columns as numpy arrays: trace codes of the file (``ids``), state
    codes of the task (``names``, new names coded in order of their first state line)."""
    import pyarrow as pa

    columns = {}
    for name in ("trace", "kind", "state", "source"):
        col = batch.column(name)
        if not pa.types.is_dictionary(col.type):
            col = col.dictionary_encode()
        columns[name] = col
    trace = columns["trace"]
    lut = np.array([ids.setdefault(s, len(ids)) for s in trace.dictionary.to_pylist()], np.int64)
    kind_is_state = np.array([k == "state" for k in columns["kind"].dictionary.to_pylist()], bool)
    is_state = kind_is_state[columns["kind"].indices.to_numpy(zero_copy_only=False)]
    state_idx = columns["state"].indices.to_numpy(zero_copy_only=False)
    line = batch.column("line").to_numpy(zero_copy_only=False)
    state = np.full(len(state_idx), -1, np.int64)
    dictionary = columns["state"].dictionary.to_pylist()
    name_lut = np.array([names.codes.get(s, -1) for s in dictionary], np.int64)
    used = state_idx[is_state]
    if len(used) and (name_lut[used] < 0).any():
        rows = np.flatnonzero(is_state)
        uniq, first = np.unique(used, return_index=True)
        new = name_lut[uniq] < 0
        sources = columns["source"]
        for code, row in sorted(zip(uniq[new], rows[first[new]]), key=lambda p: p[1]):
            if len(names.codes) > max_states:
                break
            name_lut[code] = names.codes.setdefault(dictionary[code], len(names.codes))
            source = sources.dictionary[sources.indices[int(row)].as_py()].as_py()
            names.first_lines.append((str(source), int(line[row])))
    state[is_state] = name_lut[used]
    return {
        "trace": lut[trace.indices.to_numpy(zero_copy_only=False)],
        "seq": batch.column("seq").to_numpy(zero_copy_only=False),
        "time": batch.column("time").to_numpy(zero_copy_only=False),
        "is_state": is_state,
        "state": state,
        "line": line,
        "end": batch.column("end").to_numpy(zero_copy_only=False),
    }


class Reduced(NamedTuple):
    """The reduce's result: the statistics (as :func:`statemine.summarize` builds them),
    the state names their codes index, and the traces and events counted."""

    stats: VisitStats
    names: list[str]
    n_traces: int
    n_events: int


def reduce_folds(folds: Sequence[FilesFold], opts: FoldOptions) -> Reduced:
    """The driver's reduce: the tasks' sums (in store order) as one :class:`VisitStats`,
    arranged exactly as for the same traces read whole."""
    _check_names(folds, opts.max_states)
    names = sorted({n for f in folds for n in f.names})
    offsets = np.cumsum([0] + [f.n_traces for f in folds])
    state_keys, state_sums, edge_trace, edge_key, edge_count = [], [], [], [], []
    for fold, base in zip(folds, offsets):
        to_global = np.searchsorted(names, fold.names).astype(np.int64)
        trace, state = fold.state_keys >> _SHIFT, fold.state_keys & _LOW
        state_keys.append(((trace + base) << _SHIFT) | to_global[state])
        state_sums.append(fold.state_sums)
        src, dst = (
            np.where(c == OUTSIDE, OUTSIDE, to_global[c]) for c in (fold.edge_src, fold.edge_dst)
        )
        edge_trace.append(fold.edge_trace + base)
        edge_key.append(((src + 1) << _SHIFT) | (dst + 1))
        edge_count.append(fold.edge_count)
    stats = VisitStats()
    stats.n_traces, stats.n_states = int(offsets[-1]), len(names)
    keys = np.concatenate(state_keys) if state_keys else np.zeros(0, np.int64)
    order = np.argsort(keys, kind="stable")
    if len(keys):  # interim: VisitStats is built in place (its sums as one sorted run)
        stats.state_sums._runs = [(keys[order], np.concatenate(state_sums, axis=1)[:, order])]
    pairs = np.concatenate(edge_key) if edge_key else np.zeros(0, np.int64)
    unique_pairs, number = np.unique(pairs, return_inverse=True)  # numbered in key order
    stats.edge_src = (unique_pairs >> _SHIFT) - 1
    stats.edge_dst = (unique_pairs & _LOW) - 1
    stats._edge_keys, stats._edge_ids = unique_pairs, np.arange(len(unique_pairs))
    if len(pairs):
        ekeys = (np.concatenate(edge_trace) << _SHIFT) | number.reshape(-1)
        order = np.argsort(ekeys, kind="stable")
        stats.edge_sums._runs = [
            (ekeys[order], np.concatenate(edge_count)[order][None, :].astype(float))
        ]
    _reduce_dwell(stats, folds, names, opts.dwell_budget)
    return Reduced(stats, names, int(offsets[-1]), sum(f.n_events for f in folds))


def _reduce_dwell(
    stats: VisitStats, folds: Sequence[FilesFold], names: list[str], budget: int
) -> None:
    """The tasks' dwell times into ``stats.dwell``: all raw while the visits stay within
    ``budget`` (as one fold would keep them), else every time in the sketch."""
    dwell = stats.dwell = DwellTimes(budget)
    total = sum(f.n_visits for f in folds)
    for fold in folds:
        to_global = np.searchsorted(names, fold.names).astype(np.int64)
        kind, a, b = fold.dwell
        if kind == "raw" and total <= budget:
            dwell.add(to_global[a].astype(np.int32), b)
        elif kind == "raw":
            dwell._to_sketch(to_global[a], b)
        else:
            if dwell._sketch is None:
                dwell._sketch = KeyedSums(1)
            dwell._sketch.add(to_global[a >> _SHIFT], a & _LOW, [b])


def _check_names(folds: Sequence[FilesFold], max_states: int) -> None:
    """Raise the too-many-states error at the state line that one fold of the whole store
    would name: the first line of the ``max_states + 1``-th name in store order."""
    seen: set[str] = set()
    for fold in folds:
        for name, (source, line) in zip(fold.names, fold.first_lines):
            if name in seen:
                continue
            seen.add(name)
            if len(seen) > max_states:
                raise InputError(source, line if line > 0 else None, too_many_states(max_states))
