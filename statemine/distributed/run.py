"""Running the map on a Dask client (or in this process) and the reduce here.

:func:`dask_mapper` turns a client into a ``mapper(fn, items)`` (like the builtin ``map``:
results in the items' order) that submits one task per item, shows a progress bar on a
terminal's stderr, and cancels what is left when a task fails (its error is raised here).
Dask reruns the tasks of a worker that dies (up to its ``allowed-failures``), so a lost
worker costs time, not results.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd

from ..stats.options import StatsOptions
from ..store import StoreFile, file_frames, store_files, unique_id, with_labels
from .storeevidence import MAX_TYPES, fold_evidence, reduce_evidence
from .storestats import FilesFold, fold_files, reduce_folds

if TYPE_CHECKING:
    from dask.distributed import Client

    from ..infer.synoptic.evidence import Evidence
    from ..infer.synoptic.invariants import Invariants
    from ..output.sides import Side
    from ..stats.partial import PartialStats
    from ..traces import TraceSet

Mapper = Callable[[Callable[[Any], Any], Sequence[Any]], Iterable[Any]]
#: Rows (events) per map task: files are grouped in store order up to about this many.
TASK_ROWS = 1 << 22


def dask_mapper(client: Client, *, progress: bool = False) -> Mapper:
    """A mapper running each call on ``client``'s workers; ``progress``: a bar on stderr
    when it is a terminal."""

    def mapper(fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        from dask.distributed import as_completed

        futures = client.map(fn, list(items), pure=False)
        try:
            with _bar(len(futures), progress) as advance:
                for _ in as_completed(futures):
                    advance()
            return client.gather(futures)
        finally:
            client.cancel(futures)

    return mapper


class _bar:
    """A rich progress bar of finished tasks on stderr (a terminal only), else nothing."""

    def __init__(self, total: int, enabled: bool) -> None:
        self._progress = None
        if enabled and total > 1 and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

            self._progress = Progress(
                "tasks",
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._task = self._progress.add_task("tasks", total=total)

    def __enter__(self) -> Callable[[], None]:
        if self._progress is None:
            return lambda: None
        self._progress.__enter__()
        return lambda: self._progress.advance(self._task)  # type: ignore[union-attr]

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(None, None, None)


def tasks_for(client: Client) -> int:
    """How many map tasks to make for ``client``: four per worker (a lost or slow
    worker's share is small, and the progress bar moves)."""
    return 4 * max(1, len(client.scheduler_info()["workers"]))


def file_tasks(
    files: Sequence[StoreFile], n_tasks: int = 1, task_rows: int = TASK_ROWS
) -> list[list[StoreFile]]:
    """The data files in consecutive groups (store order), one map task each: about
    ``n_tasks`` groups of equal rows, but none above ``task_rows`` rows (except a bigger
    file alone)."""
    total = sum(f.rows for f in files)
    task_rows = max(1, min(task_rows, -(-total // max(1, n_tasks))))
    tasks: list[list[StoreFile]] = []
    rows = task_rows
    for f in files:
        if rows + f.rows > task_rows:
            tasks.append([])
            rows = 0
        tasks[-1].append(f)
        rows += f.rows
    return tasks


def store_summary(
    store: str | os.PathLike,
    where: dict[str, str] | None,
    options: StatsOptions = StatsOptions(),
    mapper: Mapper = map,
    *,
    n_tasks: int = 1,
    task_rows: int = TASK_ROWS,
) -> PartialStats:
    """The statistics of the traces of ``store`` (pruned to ``where``): the map
    (:func:`~.storestats.fold_files`) per group of files through ``mapper``, the reduce
    here, in about ``n_tasks`` tasks (see :func:`file_tasks`). Their tables
    (:func:`statemine.stats.tables.tables`) equal those of
    :func:`statemine.store.read_store`'s trace set."""
    tasks = file_tasks(store_files(store, where), n_tasks, task_rows)
    folds = list(mapper(_Fold(options), list(enumerate(tasks))))
    return reduce_folds(folds, options)


def store_evidence(
    store: str | os.PathLike,
    where: dict[str, str] | None = None,
    mapper: Mapper = map,
    *,
    max_types: int = MAX_TYPES,
    n_tasks: int = 1,
    task_rows: int = TASK_ROWS,
) -> Evidence:
    """Synoptic's invariant evidence of the traces of ``store`` (pruned to ``where``):
    :func:`~.storeevidence.fold_evidence` per group of files through ``mapper``, merged
    here (tasks as :func:`file_tasks`). Raises :class:`~statemine.errors.InputError` when
    no trace has an event (a state or point event row, see :mod:`.storeevidence`) or
    there are more than ``max_types`` types."""
    from ..errors import InputError

    tasks = file_tasks(store_files(store, where), n_tasks, task_rows)
    fold = functools.partial(fold_evidence, max_types=max_types)
    folds = list(mapper(fold, [[f.path for f in t] for t in tasks]))
    evidence = reduce_evidence(folds, max_types)
    if not evidence.n_traces:
        raise InputError(Path(store), None, "no events (state or point event rows) to mine")
    return evidence


def store_invariants(
    store: str | os.PathLike,
    where: dict[str, str] | None = None,
    mapper: Mapper = map,
    **options: int,
) -> Invariants:
    """Synoptic's temporal invariants of the traces of ``store`` (pruned to ``where``),
    with support counts, sorted as ``model.invariants.txt``: those of
    :func:`statemine.infer.synoptic.invariants.mine_invariants` on the same traces, mined
    from :func:`store_evidence` (``options``: its ``max_types``, ``n_tasks``, ``task_rows``)."""
    from ..infer.synoptic.invariants import invariants_of

    return invariants_of(store_evidence(store, where, mapper, **options))


class StoreSide(NamedTuple):
    """One side of :func:`store_sides`: the statistics of its traces, its traces frame
    (``trace``, ``source``, ``end`` and the labels, one row per trace in the statistics'
    order; ids as :func:`statemine.store.read_store` gives them), with ``facts`` the
    traces' :data:`~statemine.output.sides.FACTS` plus ``file`` (which of ``files`` holds
    the trace) and ``stored`` (its id there), else None; ``files``: the side's data files."""

    partial: PartialStats
    traces: pd.DataFrame
    facts: pd.DataFrame | None
    files: list[StoreFile]

    def report_side(self, mapper: Mapper = map) -> Side:
        """This side for the report: a drawn trace is fetched alone through ``mapper``
        (:func:`fetch_trace`). Needs the facts."""
        from ..output.sides import Side

        if self.facts is None:
            raise ValueError("a report side needs store_sides(..., facts=True)")
        return Side(
            self.partial,
            np.arange(self.partial.n_traces),
            self.traces,
            self.facts,
            functools.partial(fetch_trace, self, mapper=mapper),
        )


def store_sides(
    sides: Sequence[tuple[str | os.PathLike, dict[str, str] | None]],
    options: StatsOptions = StatsOptions(),
    mapper: Mapper = map,
    *,
    facts: bool = False,
    n_tasks: int = 1,
    task_rows: int = TASK_ROWS,
) -> list[StoreSide]:
    """Per side ``(store, where)``: its :class:`StoreSide` (statistics as
    :func:`store_summary`; the traces frame is what :func:`statemine.compare.diff_stats`
    takes). Every side's tasks go to ``mapper`` in one call (they run side by side); only
    per-trace rows come back, never events."""
    from ..output.sides import FACTS

    files = [store_files(store, where) for store, where in sides]
    groups = [file_tasks(f, n_tasks, task_rows) for f in files]
    items = [(part, group) for side in groups for part, group in enumerate(side)]
    folds = iter(mapper(_Fold(options, labelled=True, facts=facts), items))
    out = []
    for side_files, side_groups in zip(files, groups):
        mine = [next(folds) for _ in side_groups]
        partial = reduce_folds(mine, options)
        frames = [t for fold in mine for t in fold.traces]
        traces = pd.concat(frames, ignore_index=True)
        seen: dict[str, int] = {}
        stored = traces["trace"].to_numpy()
        traces["trace"] = [unique_id(str(t), seen) for t in stored]
        side_facts = None
        if facts:
            side_facts = traces[list(FACTS)].assign(
                file=np.repeat(np.arange(len(frames)), [len(t) for t in frames]), stored=stored
            )
            traces = traces.drop(columns=list(FACTS))
        out.append(StoreSide(partial, traces, side_facts, side_files))
    return out


def fetch_trace(side: StoreSide, trace: str, mapper: Mapper = map) -> TraceSet:
    """The trace set of one trace of ``side`` (``trace``: its id in ``side.traces``), its
    data file read by ``mapper`` (e.g. on a worker) and all but that trace's rows dropped
    there: as :func:`statemine.store.read_store` would give it."""
    from ..traces import TraceSet

    assert side.facts is not None, "store_sides(..., facts=True) keeps where traces are"
    row = int(np.flatnonzero(side.traces["trace"].astype(str).to_numpy() == trace)[0])
    f = side.files[int(side.facts["file"].iloc[row])]
    ((ev, tr, mx),) = mapper(_OneTrace(str(side.facts["stored"].iloc[row])), [f])
    ev["trace"], tr["trace"] = trace, trace
    if mx is not None:
        mx["trace"] = pd.Series(trace, index=mx.index, dtype="category")
    return TraceSet.from_events(ev, tr, None, mx)


class _OneTrace:
    """:func:`statemine.store.file_frames` of a file cut to the trace ``stored`` (picklable)."""

    def __init__(self, stored: str) -> None:
        self.stored = stored

    def __call__(self, f: StoreFile) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
        ev, tr, mx = file_frames(f)
        ev = ev[ev["trace"] == self.stored].reset_index(drop=True)
        tr = tr[tr["trace"] == self.stored].reset_index(drop=True)
        if mx is not None:
            mx = mx[mx["trace"] == self.stored].reset_index(drop=True)
        return ev, tr, mx


class _Fold:
    """``fold_files(part, paths, options, facts=facts)`` of a ``(part, files)`` item
    (picklable for the workers); ``labelled``: each file's traces frame labelled
    (:func:`statemine.store.with_labels`), else none returned."""

    def __init__(
        self, options: StatsOptions, *, labelled: bool = False, facts: bool = False
    ) -> None:
        self.options = options
        self.labelled = labelled
        self.facts = facts

    def __call__(self, item: tuple[int, list[StoreFile]]) -> FilesFold:
        part, files = item
        fold = fold_files(part, [f.path for f in files], self.options, facts=self.facts)
        if not self.labelled:
            return fold._replace(traces=[])
        return fold._replace(traces=[with_labels(f, t) for f, t in zip(files, fold.traces)])
