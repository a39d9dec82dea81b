"""The ``statemine`` commands as library calls: each command is one of these plus printing.

* :func:`infer_to_dir` -- ``statemine infer LOG... [--out DIR]``
* :func:`diff_to_dir` -- ``statemine diff A B --out DIR``
* :func:`report_to_file` -- ``statemine report A [B] --out FILE``
* :func:`explain_to_dir` -- ``statemine explain A B --out DIR``
* :func:`read_to_file` -- ``statemine read LOG... --out FILE``
* :func:`read_inputs` -- the reading step of all of them

They take paths (log files, folders, saved ``.parquet`` trace sets, ``statemine lab``
output folders), read them with :class:`ReadOptions`, compute, and write the same files
the commands write (atomically, as a whole set). Nothing is printed: what the command
prints on stderr (reader warnings, notes) comes back in the result.

Units: times in seconds, shares as fractions in [0, 1], counts as integers.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import UsageError
from .output.out_files import DIFF_OUTPUTS, EXPLAIN_OUTPUTS, INFER_OUTPUTS
from .output.provenance import PROVENANCE_FILE, Input, input_digests
from .parse.inputs import (
    Inputs,
    ReadOptions,
    read_files,
    reader_warnings,
    selection_pairs,
)
from .parse.lines import ReadDigests
from .stats.options import CompareOptions, StatsOptions

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from dask.distributed import Client

    from .compare import DiffResult
    from .distributed.run import StoreSide
    from .explain import ExplainResult
    from .output.sides import Side
    from .parse.statemine_log import ScanEnd, ScannedBlock
    from .traces import TraceSet

Connect = Callable[[], "AbstractContextManager[Client | None]"]
"""Opens the Dask client to run on (None: on this machine), called once the options
are checked: how the CLI's ``--dask`` starts its cluster only after them."""


@dataclass(frozen=True)
class InferOutput:
    """What :func:`infer_to_dir` computed and wrote.

    ``states``/``transitions``: the tables as columns (name -> array, the CSV's columns;
    times in seconds, fractions in [0, 1]); ``n_events``: rows read, or (rows, events in the
    files) for qlog; ``dwell_accuracy``: "exact" or how the dwell quantiles were
    approximated; ``warnings``: the readers'; ``notes``: remarks on the result; ``written``:
    the file names written to the output folder (none without one)."""

    states: dict[str, np.ndarray]
    transitions: dict[str, np.ndarray]
    n_traces: int
    n_events: int | tuple[int, int]
    dwell_accuracy: str
    confidence: float
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    written: tuple[str, ...] = ()


@dataclass(frozen=True)
class DiffOutput:
    """What :func:`diff_to_dir` computed and wrote: the :class:`~statemine.compare.DiffResult`,
    the readers' warnings and the file names written."""

    result: DiffResult
    warnings: tuple[str, ...] = ()
    written: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class ExplainOutput:
    """What :func:`explain_to_dir` computed and wrote: the
    :class:`~statemine.explain.ExplainResult`, the readers' warnings and the file names
    written (none without an output folder)."""

    result: ExplainResult
    warnings: tuple[str, ...] = ()
    written: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class ReadOutput:
    """What :func:`read_to_file` (or :func:`statemine.tcp.read_to_file`) wrote: the
    Parquet file, its traces and event rows, and the readers' warnings."""

    path: Path
    n_traces: int
    n_events: int
    warnings: tuple[str, ...] = ()


#: Rows of the states table the CLI prints (the CSV has every state).
PRINTED_STATES = 200


def read_inputs(
    inputs: Inputs,
    read: ReadOptions = ReadOptions(),
    *,
    labels: dict[str, str] | None = None,
    selections: Sequence[str] = (),
    client: Client | None = None,
    digests: ReadDigests | None = None,
    listed: Sequence[str] | None = None,
) -> TraceSet:
    """Read ``inputs`` (:func:`statemine.parse.inputs.read_files`), label every trace with
    ``labels``, and keep the traces matching every ``LABEL=VALUE`` of ``selections``. A
    trace store (:mod:`statemine.store`; given alone) is read with its partitions pruned to
    the selections, its files on ``client``'s Dask workers when given. ``digests``: where
    files are read (:func:`statemine.parse.read`'s; not for a store); ``listed``: the files
    ``inputs`` stand for when listed already (:func:`statemine.parse.expand_files`)."""
    store = _store_input(inputs, required=client is not None)
    if store is not None:
        from .store import read_store

        ts = read_store(store, selection_pairs(selections), mapper=_mapper(client, read))
        return ts.with_labels(**labels) if labels else ts
    return read_files(
        inputs, read, labels=labels, selections=selections, digests=digests, listed=listed
    )


def read_to_file(
    inputs: Inputs,
    output: str | os.PathLike,
    read: ReadOptions = ReadOptions(),
    *,
    labels: dict[str, str] | None = None,
    selections: Sequence[str] = (),
) -> ReadOutput:
    """``statemine read``: :func:`read_inputs` (every trace labelled with ``labels``, the
    traces matching ``selections`` kept), saved as one Parquet file."""
    return save_traces(read_inputs(inputs, read, labels=labels, selections=selections), output)


def save_traces(ts: TraceSet, output: str | os.PathLike) -> ReadOutput:
    """Save ``ts`` as one Parquet file (:func:`statemine.traces.save`: written beside
    ``output`` and renamed, so a failure leaves none) and say what was written."""
    from .traces import save

    path = save(ts, output)
    return ReadOutput(path, ts.n_traces, len(ts.events), tuple(reader_warnings(ts)))


def require_stores(sides: Sequence[Inputs]) -> None:
    """Raise :class:`UsageError` unless every side's input is one trace store (what
    ``--dask`` runs on): checked before a cluster is started."""
    for inputs in sides:
        _store_input(inputs, required=True)


def _store_input(inputs: Inputs, *, required: bool = False) -> Path | None:
    """The store folder when ``inputs`` is one trace store, else None; ``required`` (a run
    on Dask): the input must be a store."""
    from .store_meta import is_store

    paths = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    stores = [Path(p) for p in paths if is_store(p)]
    if stores and len(paths) > 1:
        raise UsageError(f"{stores[0]}: a trace store is read alone, not with other inputs")
    if required and not stores:
        raise UsageError(
            "--dask runs on a trace store (make one with statemine store add); "
            f"{' '.join(map(str, paths))} is not one"
        )
    return stores[0] if stores else None


def _mapper(client: Client | None, read: ReadOptions) -> Callable[..., Any]:
    """How a store's files are mapped: on ``client``'s workers, else here (``map``)."""
    if client is None:
        return map
    from .distributed.run import dask_mapper

    return dask_mapper(client, progress=read.progress)


def infer_to_dir(
    inputs: Inputs,
    out_dir: str | os.PathLike | None = None,
    *,
    read: ReadOptions = ReadOptions(),
    selections: Sequence[str] = (),
    stats: StatsOptions = StatsOptions(),
    svg: bool = True,
    title: str | None = None,
    client: Client | None = None,
    command_line: Sequence[str] | None = None,
) -> InferOutput:
    """``statemine infer``: the per-state and per-transition tables of the observed-state
    model (:func:`statemine.summarize`), and with ``out_dir`` the files states.csv,
    transitions.csv, model.dot, model.json and model.svg (``svg``, needs Graphviz; up to
    :data:`~statemine.output.diagram.DRAWN_STATES` states) written there as one set, with
    provenance.json (:func:`~statemine.output.provenance.provenance`; ``command_line``: the
    arguments after ``statemine`` when run from the CLI).

    statemine logs needing no selection are streamed (memory bounded by the distinct
    (trace, state) pairs, not by the log's length); anything else is read whole. Both give
    the same numbers (tests/test_stream.py). ``stats``: how visits are made and the
    intervals computed (:class:`~statemine.stats.options.StatsOptions`: the end rule,
    ``collapse_repeats``, ``n_boot`` bootstrap resamples over traces seeded by ``seed`` for
    the ``confidence`` intervals, ``max_states``).

    A trace store (given alone) is read whole, or with a Dask ``client`` folded per group
    of data files on the workers and reduced here (:mod:`statemine.distributed`): both give
    the same tables to the last bit (tests/test_distributed.py)."""
    if out_dir is not None:
        from .fileio import check_out_dir

        check_out_dir(out_dir, INFER_OUTPUTS)
    paths = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    store = _store_input(inputs, required=client is not None)
    files = [] if store is not None else _streamable(inputs, read.fmt, read.regex, selections)
    # the inputs' sha256 for provenance.json (0.5 s of CPU a GB): streamed logs are hashed
    # from the scan's own buffers as they are read, small qlog files from the format
    # sniff's one read (no second read; a file not so hashed, a big or gzip one, is read
    # again after the reading, on its own thread); a store's manifest on its own thread
    # while it is read (hashlib works without the GIL)
    read_digests = ReadDigests() if out_dir is not None and store is None else None
    digests = (
        _in_background(input_digests, paths) if out_dir is not None and store is not None else None
    )
    warnings: list[str] = []
    n_events: int | tuple[int, int]  # (the traces' events, the qlog files' own events)
    if store is not None and client is not None:
        from .distributed.run import store_summary, tasks_for
        from .stats.tables import tables

        partial = store_summary(
            store,
            selection_pairs(selections),
            stats,
            _mapper(client, read),
            n_tasks=tasks_for(client),
        )
        frames = tables(partial, stats)
        states, transitions = ({c: f[c].to_numpy() for c in f.columns} for f in frames)
        dwell, n_traces = frames[0].attrs["dwell_quantiles"], partial.n_traces
        n_events = partial.n_events
    elif files and (
        streamed := _summarize_streamed(
            files, stats, read.progress, read_digests, sniff=read.fmt == "auto"
        )
    ):
        states, transitions, dwell, n_traces, n_events = streamed
    else:
        from .stats.summary import summarize

        # a folder walked once: the listing made for the streamed path is handed on
        ts = read_inputs(
            inputs, read, selections=selections, digests=read_digests, listed=files or None
        )
        if read_digests is not None:  # the files not hashed as read: beside the statistics
            digests = _in_background(input_digests, paths, read_digests.records())
            read_digests = None
        warnings = reader_warnings(ts)
        frames = summarize(ts, stats)
        states, transitions = ({c: f[c].to_numpy() for c in f.columns} for f in frames)
        dwell, n_traces = frames[0].attrs["dwell_quantiles"], ts.n_traces
        n_events = len(ts.events)
        file_events = ts.traces.get("file_events")  # qlog: the files' own events, of any kind
        if file_events is not None and file_events.notna().all():
            n_events = (n_events, int(file_events.sum()))
    notes = _infer_notes(states, dwell)
    written: tuple[str, ...] = ()
    if out_dir is not None:
        from .output.out_files import infer_files

        outputs, svg_note = infer_files(states, transitions, svg=svg, title=title)
        notes += [svg_note] if svg_note else []
        digested: dict[str, dict[str, Any]] | None
        if read_digests is not None:  # files the scan did not hash are read here
            digested = input_digests(paths, read_digests.records())
        else:
            digested = None if digests is None else digests()
        outputs[PROVENANCE_FILE] = _provenance_file(
            "infer",
            [Input(p, "input", selections) for p in paths],
            command_line,
            read=read,
            stats=stats,
            digests=digested,
        )
        from .fileio import write_set

        write_set(out_dir, outputs, owned=INFER_OUTPUTS)
        written = tuple(outputs)
    return InferOutput(
        states=states,
        transitions=transitions,
        n_traces=n_traces,
        n_events=n_events,
        dwell_accuracy=dwell,
        confidence=stats.confidence,
        warnings=tuple(warnings),
        notes=tuple(notes),
        written=written,
    )


def _infer_notes(states: dict, dwell: str) -> list[str]:
    """Remarks on the tables the infer command prints on stderr."""
    notes = []
    if len(states["state"]) > PRINTED_STATES:
        notes.append(
            f"{len(states['state']) - PRINTED_STATES} more states (least time) not printed; "
            "states.csv (--out) has every one"
        )
    if dwell != "exact":
        notes.append(f"dwell medians and p95 are {dwell}: too many visits to keep every dwell time")
    if not states["time_s"].sum() > 0:
        notes.append(
            "the traces last no time (one state line each, or all at one instant), so time "
            "fractions are undefined (n/a); visits and transitions stand"
        )
    return notes


def _streamable(
    inputs: Inputs, fmt: str, regexes: Sequence[str] | None, selections: Sequence[str]
) -> list[str]:
    """The input files (as :func:`statemine.parse.expand_files` lists them: strings, no
    Path a file) when they may be statemine logs needing no trace selection, so the
    statistics can be streamed (:mod:`statemine.stats.stream`); else an empty list. With
    ``fmt`` "auto" the scan itself tells (:func:`_summarize_streamed`'s ``sniff``): no
    read of each file beforehand."""
    from .parse import expand_files

    if regexes or selections or fmt not in ("auto", "statemine"):
        return []
    return expand_files(inputs)


def _summarize_streamed(
    files: list[str],
    stats: StatsOptions,
    progress: bool,
    digests: ReadDigests | None = None,
    *,
    sniff: bool = False,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], str, int, int] | None:
    """:func:`statemine.stats.stream.summarize_logs` as columns (no pandas), arranged so the work
    overlaps the imports: the scan runs on one thread (C, without the GIL), the fold on
    another (numpy), while this one loads the output's libraries; ``digests`` takes the
    files' sha256 from the scan's buffers (:class:`~statemine.parse.lines.ReadDigests`).
    ``sniff``: each file's format told from the scan's own read (as ``--format auto``
    tells it), and None when one is not a statemine log (then read them whole)."""
    from .parse import _is_statemine, progress_reporter
    from .parse._linescan import trim_heap
    from .parse.statemine_log import scan_files
    from .stats.stream import fold_scanned
    from .stats.tables import columns

    gc.disable()  # imports make many objects and no garbage; collecting them is wasted time
    try:
        with progress_reporter(files, progress) as advance:
            scanned = scan_files(
                files, advance, digests=digests, sniff=_is_statemine if sniff else None
            )
            ends: list[ScanEnd] = []
            folded = _in_background(fold_scanned, _noting_end(scanned, ends), stats, files=files)
            _import_output_modules()
            folded = folded()
    finally:
        gc.enable()
    if ends[0].n_files < len(files):  # the sniff stopped the scan at a file of another kind
        return None
    states, transitions = columns(folded, stats)
    out = states, transitions, folded.dwell.accuracy, folded.n_traces, folded.n_events
    del folded  # the per-trace sums, made on the fold's thread: its arena keeps their pages
    trim_heap()
    return out


def _noting_end(
    scanned: Iterator[ScannedBlock | ScanEnd], ends: list[ScanEnd]
) -> Iterator[ScannedBlock | ScanEnd]:
    """``scanned`` as it is, its :class:`ScanEnd` also put in ``ends``."""
    from .parse.statemine_log import ScanEnd

    for item in scanned:
        if isinstance(item, ScanEnd):
            ends.append(item)
        yield item


def _in_background(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[[], Any]:
    """Start ``fn(*args, **kwargs)`` on a daemon thread (so Ctrl-C is not held up by it);
    returns a function that waits for its result, or raises its exception."""
    import threading

    outcome: list = []

    def run() -> None:
        try:
            outcome.append((True, fn(*args, **kwargs)))
        except BaseException as exc:  # re-raised in the caller's thread
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="statemine-fold", daemon=True)
    thread.start()

    def result():
        thread.join()
        ok, value = outcome[0]
        if not ok:
            raise value
        return value

    return result


def _import_output_modules() -> None:
    """Load what the outputs and the printed table need (while the fold runs)."""
    import rich.console
    import rich.table  # noqa: F401

    from .infer import observed  # noqa: F401
    from .output import diagram  # noqa: F401


def side_labels(label_a: str | None, label_b: str | None, a: str, b: str | None) -> tuple[str, str]:
    """Side labels: as given, else the inputs' file names (suffixed when they collide)."""
    la = label_a or Path(a).stem or str(a)
    lb = label_b or (Path(b).stem if b else "") or "B"
    if la == lb and not (label_a and label_b):
        la, lb = (
            (la, f"{lb} (B)")
            if label_a
            else ((f"{la} (A)", lb) if label_b else (f"{la} (A)", f"{lb} (B)"))
        )
    return la, lb


def check_sides(
    a: str,
    b: str | None,
    *,
    label_a: str | None = None,
    label_b: str | None = None,
    compare: CompareOptions = CompareOptions(),
    select_a: Sequence[str] = (),
    select_b: Sequence[str] = (),
) -> tuple[str, str]:
    """The side labels (:func:`side_labels`) after checking what ``diff`` and ``report``
    take that needs no trace: the statistics' options and two distinct labels
    (:func:`statemine.compare.check_options`), the ``LABEL=VALUE`` selections, and each
    ``--strata`` label against the labels of an input that is a trace store (its
    metadata and label files, no events). Raises :class:`UsageError` (or
    :class:`InputError` for a damaged store). Run before a Dask cluster starts."""
    from .compare import check_options

    la, lb = side_labels(label_a, label_b, a, b)
    check_options(compare, (la, lb) if b is not None else None)
    for selections in (select_a, select_b):
        selection_pairs(selections)
    for path in (a, b) if b is not None else (a,):
        _check_store_strata(path, compare.strata)
    return la, lb


def _check_store_strata(path: str | os.PathLike, strata: Sequence[str]) -> None:
    """Raise :class:`UsageError` when ``path`` is a trace store none of whose traces can
    carry one of the ``strata`` labels (a partition key, a stored trace label, or a column
    of every traces frame: trace, source, end)."""
    store = _store_input(path)
    if store is None or not strata:
        return
    from .store import label_names

    base = {"trace", "source", "end"}
    labels = label_names(store)
    for name in strata:
        if name not in labels | base:
            shown = ", ".join(sorted(labels)) or "none"
            raise UsageError(
                f"--strata {name!r}: the traces of {store} have no such label (labels: {shown})"
            )


def check_diff(
    a: str,
    b: str,
    out_dir: str | os.PathLike,
    **sides: Any,
) -> tuple[str, str]:
    """What :func:`diff_to_dir` checks before any trace is read: the output folder
    (:func:`~statemine.fileio.check_out_dir`) and :func:`check_sides` (``sides``: its
    keywords); returns the side labels. Run before ``connect`` starts a Dask cluster."""
    from .fileio import check_out_dir

    check_out_dir(out_dir, DIFF_OUTPUTS)
    return check_sides(a, b, **sides)


def check_report(
    a: str,
    b: str | None,
    out_file: str | os.PathLike,
    *,
    results: str | os.PathLike | None = None,
    by: str | None = None,
    **sides: Any,
) -> tuple[str, str]:
    """What :func:`report_to_file` checks before any trace is read: the output file
    (:func:`~statemine.fileio.check_out_file`), ``results`` (a file, with ``by``) and
    :func:`check_sides`; returns the side labels. Run before ``connect`` starts a Dask
    cluster."""
    from .fileio import check_out_file

    check_out_file(out_file)
    if results is not None:
        if not by:
            raise UsageError(
                "--results needs --by COLUMN (the results column telling the sides apart)"
            )
        if not Path(results).is_file():
            raise UsageError(f"--results {results}: no such file")
    return check_sides(a, b, **sides)


def read_sides(
    a: str,
    b: str | None,
    read: ReadOptions,
    select_a: Sequence[str] = (),
    select_b: Sequence[str] = (),
    client: Client | None = None,
) -> tuple[TraceSet, TraceSet | None, list[str]]:
    """Both sides' trace sets (B None when not given), each read and filtered by its
    selections (stores on ``client``'s Dask workers when given), and the readers'
    warnings (A's first)."""
    ts_a = read_inputs([a], read, selections=select_a, client=client)
    ts_b = read_inputs([b], read, selections=select_b, client=client) if b else None
    warnings = reader_warnings(ts_a) + (reader_warnings(ts_b) if ts_b is not None else [])
    return ts_a, ts_b, warnings


def store_side_stats(
    sides: Sequence[tuple[str | os.PathLike, Sequence[str]]],
    options: StatsOptions,
    client: Client,
    read: ReadOptions = ReadOptions(),
    *,
    facts: bool = False,
) -> list[StoreSide]:
    """Per side ``(store, selections)``: its per-trace statistics and traces frame (and
    ``facts``; :func:`statemine.distributed.run.store_sides`), mapped on ``client``'s
    workers and merged here; raises :class:`UsageError` for a side that is not a trace
    store."""
    from .distributed.run import store_sides, tasks_for

    wanted = []
    for path, selections in sides:
        store = _store_input(path, required=True)
        assert store is not None  # with a client, anything else raised
        wanted.append((store, selection_pairs(selections)))
    return store_sides(
        wanted,
        options,
        _mapper(client, read),
        facts=facts,
        n_tasks=tasks_for(client),
    )


def diff_to_dir(
    a: str,
    b: str,
    out_dir: str | os.PathLike,
    *,
    read: ReadOptions = ReadOptions(),
    select_a: Sequence[str] = (),
    select_b: Sequence[str] = (),
    label_a: str | None = None,
    label_b: str | None = None,
    compare: CompareOptions = CompareOptions(),
    svg: bool = True,
    title: str | None = None,
    client: Client | None = None,
    connect: Connect | None = None,
    command_line: Sequence[str] | None = None,
) -> DiffOutput:
    """``statemine diff``: compare the traces of ``a`` with those of ``b``
    (:func:`statemine.diff` with the ``compare`` options) and write states_diff.csv,
    transitions_diff.csv, one_sided.csv, notes.txt, diff.dot and (``svg``) diff.svg to
    ``out_dir`` as one set, with provenance.json (``command_line``: the arguments after
    ``statemine`` when run from the CLI). Side labels default to the inputs' file names. Trace stores
    are read on the Dask workers of ``client``, or of the one ``connect`` opens after
    :func:`check_diff` (not both)."""
    from .compare import diff, diff_stats
    from .fileio import write_set
    from .output.out_files import diff_files

    label_a, label_b = check_diff(
        a,
        b,
        out_dir,
        label_a=label_a,
        label_b=label_b,
        compare=compare,
        select_a=select_a,
        select_b=select_b,
    )
    warnings: list[str] = []
    with _client_after_checks(client, connect) as client:
        if client is not None:
            sides = [(a, select_a), (b, select_b)]
            side_a, side_b = store_side_stats(sides, compare, client, read)
            result = diff_stats(
                side_a[:2],
                side_b[:2],
                compare,
                label_a=label_a,
                label_b=label_b,
            )
        else:
            ts_a, ts_b, warnings = read_sides(a, b, read, select_a, select_b)
            assert ts_b is not None
            result = diff(ts_a, ts_b, compare, label_a=label_a, label_b=label_b)
    files = diff_files(result, svg=svg, title=title)  # all files or none
    files[PROVENANCE_FILE] = _provenance_file(
        "diff", _side_inputs(a, b, select_a, select_b), command_line, read=read, stats=compare
    )
    write_set(out_dir, files, owned=DIFF_OUTPUTS)  # the whole set: no stale diagram stays
    return DiffOutput(result=result, warnings=tuple(warnings), written=tuple(files))


def _client_after_checks(
    client: Client | None, connect: Connect | None
) -> AbstractContextManager[Client | None]:
    """``client`` as a context, or the client ``connect`` opens (given after the checks)."""
    if connect is None:
        return nullcontext(client)
    if client is not None:
        raise ValueError("give client or connect, not both")
    return connect()


def report_to_file(
    a: str,
    b: str | None,
    out_file: str | os.PathLike,
    *,
    read: ReadOptions = ReadOptions(),
    select_a: Sequence[str] = (),
    select_b: Sequence[str] = (),
    label_a: str | None = None,
    label_b: str | None = None,
    title: str | None = None,
    results: str | os.PathLike | None = None,
    by: str | None = None,
    values: tuple[str, str] | None = None,
    metric: str = "plt_s",
    rows: str | None = None,
    cols: str | None = None,
    outcome_alpha: float = 0.01,
    compare: CompareOptions = CompareOptions(),
    client: Client | None = None,
    connect: Connect | None = None,
    command_line: Sequence[str] | None = None,
) -> tuple[Path, tuple[str, ...]]:
    """``statemine report``: one self-contained HTML page about ``a`` (or comparing it with
    ``b``), written atomically to ``out_file`` (:func:`statemine.output.html_report.write_report`;
    ``compare`` as in :func:`diff_to_dir`). With ``results`` (a ``statemine lab``
    results.csv/.parquet), ``by`` names the column telling the sides apart, ``values`` its
    values for A and B (default: the side labels), and the page compares ``metric`` per
    scenario cell with Welch's test at ``outcome_alpha``, in heatmaps of ``rows`` x ``cols``
    (None: chosen from the scenario columns that vary,
    :func:`~statemine.output.html_report.heatmap_axes`). Trace stores are
    read on the Dask workers of ``client``, or of the one ``connect`` opens after
    :func:`check_report` (not both). The page ends with its provenance
    (:func:`~statemine.output.provenance.provenance`; ``command_line``: the arguments after
    ``statemine`` when run from the CLI). Returns the path written and the readers' warnings."""
    from .output.html_report import Outcomes, write_report

    label_a, label_b = check_report(
        a,
        b,
        out_file,
        label_a=label_a,
        label_b=label_b,
        compare=compare,
        select_a=select_a,
        select_b=select_b,
        results=results,
        by=by,
    )
    outcomes = None
    if results is not None:
        from .outcomes import read_results

        assert by  # checked
        value_a, value_b = values or (label_a, label_b)
        outcomes = Outcomes(
            read_results(results),
            by=by,
            value_a=value_a,
            value_b=value_b,
            metric=metric,
            rows=rows,
            cols=cols,
            alpha=outcome_alpha,
        )
    from .output.provenance import provenance

    inputs = _side_inputs(a, b, select_a, select_b)
    if results is not None:
        inputs.append(Input(results, "results"))
    made_of = provenance(
        "report", inputs, command_line=command_line, options={"read": read, "stats": compare}
    )
    side_a: TraceSet | Side
    side_b: TraceSet | Side | None
    warnings: list[str] = []
    with _client_after_checks(client, connect) as client:  # a drawn trace is fetched on it
        if client is not None:
            side_a, side_b = _report_sides(a, b, select_a, select_b, compare, client, read)
        else:
            side_a, side_b, warnings = read_sides(a, b, read, select_a, select_b)
        path = write_report(
            out_file,
            side_a,
            side_b,
            label_a=label_a,
            label_b=label_b,
            title=title,
            outcomes=outcomes,
            compare=compare,
            runs=(lab_runs(a), lab_runs(b) if b else None),
            provenance=made_of,
            selections=(tuple(select_a), tuple(select_b)),
        )
    return path, tuple(warnings)


def _report_sides(
    a: str,
    b: str | None,
    select_a: Sequence[str],
    select_b: Sequence[str],
    compare: CompareOptions,
    client: Client,
    read: ReadOptions,
) -> tuple[Side, Side | None]:
    """The report's sides of stores summarized on ``client``'s workers: statistics and
    per-trace facts; a drawn trace is fetched alone (:func:`~.distributed.run.fetch_trace`)."""
    from .distributed.run import dask_mapper

    wanted = [(a, select_a)] + ([(b, select_b)] if b else [])
    fetch_mapper = dask_mapper(client)
    sides = [
        s.report_side(fetch_mapper)
        for s in store_side_stats(wanted, compare, client, read, facts=True)
    ]
    return sides[0], (sides[1] if b else None)


def explain_to_dir(
    a: str,
    b: str,
    out_dir: str | os.PathLike | None = None,
    *,
    read: ReadOptions = ReadOptions(),
    select_a: Sequence[str] = (),
    select_b: Sequence[str] = (),
    label_a: str | None = None,
    label_b: str | None = None,
    compare: CompareOptions = CompareOptions(),
    command_line: Sequence[str] | None = None,
) -> ExplainOutput:
    """``statemine explain``: why the traces of ``b`` differ from those of ``a``
    (:func:`statemine.explain.explain`, the same inputs, selections and ``compare`` options
    as :func:`diff_to_dir`), and with ``out_dir`` explain.csv, triggers.csv, explain.md and
    provenance.json written there as one set. An input that is a ``statemine lab`` output folder lends its
    results table (what the path dropped per run) as ground truth."""
    from .explain import explain
    from .fileio import check_out_dir, write_set
    from .output.out_files import explain_files

    if out_dir is not None:
        check_out_dir(out_dir, EXPLAIN_OUTPUTS)
    label_a, label_b = check_sides(
        a,
        b,
        label_a=label_a,
        label_b=label_b,
        compare=compare,
        select_a=select_a,
        select_b=select_b,
    )
    ts_a, ts_b, warnings = read_sides(a, b, read, select_a, select_b)
    assert ts_b is not None
    result = explain(
        ts_a,
        ts_b,
        compare,
        label_a=label_a,
        label_b=label_b,
        runs_a=lab_runs(a),
        runs_b=lab_runs(b),
    )
    written: tuple[str, ...] = ()
    if out_dir is not None:
        files = explain_files(result)
        files[PROVENANCE_FILE] = _provenance_file(
            "explain",
            _side_inputs(a, b, select_a, select_b),
            command_line,
            read=read,
            stats=compare,
        )
        write_set(out_dir, files, owned=EXPLAIN_OUTPUTS)
        written = tuple(files)
    return ExplainOutput(result=result, warnings=tuple(warnings), written=written)


def _side_inputs(
    a: str | os.PathLike,
    b: str | os.PathLike | None,
    select_a: Sequence[str],
    select_b: Sequence[str],
) -> list[Input]:
    """The inputs of a one- or two-sided command, each with its side's selections."""
    return [Input(a, "A", select_a)] + ([Input(b, "B", select_b)] if b is not None else [])


def _provenance_file(
    command: str,
    inputs: Sequence[Input],
    command_line: Sequence[str] | None,
    *,
    read: ReadOptions,
    stats: StatsOptions,
    digests: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """The text of provenance.json (:func:`statemine.output.provenance.provenance`;
    ``digests``: the inputs' digests when computed already)."""
    from .output.provenance import provenance, provenance_json

    record = provenance(
        command,
        inputs,
        command_line=command_line,
        options={"read": read, "stats": stats},
        digests=digests,
    )
    return provenance_json(record)


def lab_runs(path: str | os.PathLike) -> pd.DataFrame | None:
    """The results table (one row per run) of a ``statemine lab`` output folder, None for
    any other input (or a folder whose table is missing)."""
    from .parse import is_lab_output

    folder = Path(path)
    if not folder.is_dir() or not is_lab_output(folder):
        return None
    for name in ("results.parquet", "results.csv"):
        if (folder / name).is_file():
            from .outcomes import read_results

            return read_results(folder / name)
    return None
