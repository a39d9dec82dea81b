"""One run of a Synoptic-family tool from its parsed command line: read the logs, mine and
filter invariants, build the model (Synoptic's refinement, k-tails, or a real
``synoptic.jar``), render the files the options ask for.  No file is written here: the
caller writes :attr:`ToolRun.files` atomically (all or none)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from ...errors import InputError
from .options import ParsedArgs

if TYPE_CHECKING:
    from ...parse.regex import RegexEvents
    from .invariants import Invariants
    from .log import EventLog
    from .model import PartitionModel
    from .timecheck import TimedCodes

_T = TypeVar("_T")


@dataclass
class ToolRun:
    """``files``: suffix -> text (or JSON byte pieces) to write beside ``prefix``;
    ``stdout``/``stderr``: what to print; ``result``: the model and invariants."""

    files: dict = field(default_factory=dict)
    stdout: str = ""
    stderr: list[str] = field(default_factory=list)
    result: object = None


def _check_order(log: EventLog, keep_order: bool, files: np.ndarray, paths: list[str]) -> None:
    """``--keepOrder=true`` keeps file order; statemine's reader orders each trace by time,
    which is the same order unless a trace's times decrease in the file order (files in
    reading order, then lines: ``files`` is each event's index into ``paths``).  That case
    is refused (naming the file and line), not silently reordered."""
    if not keep_order or log.n_events < 2:
        return
    idx = np.nonzero(~log.is_last)[0]
    here, after = files[idx], files[idx + 1]
    back = (after < here) | ((after == here) & (log.lines[idx + 1] < log.lines[idx]))
    if back.any():
        k = _first_decrease(log, files, int(log.trace_of[idx[np.argmax(back)]]))
        raise InputError(
            paths[int(files[k])],
            int(log.lines[k]),
            "--keepOrder=true (Perfume's default) on a trace whose times "
            "decrease in the file is not supported: statemine orders events "
            "by time (give --keepOrder=false)",
        )


def _first_decrease(log: EventLog, files: np.ndarray, trace: int) -> int:
    """Index (in ``log``) of the first event of ``trace`` in file order whose time is below
    that of an event before it in file order (the trace is known to have one)."""
    span = np.arange(log.starts[trace], log.starts[trace + 1])
    in_file = span[np.lexsort((log.lines[span], files[span]))]
    times = log.times[in_file]
    return int(in_file[np.argmax(times < np.maximum.accumulate(times))])


_DATETIME = re.compile(r"\(\?<DATETIME(=?)>")
_TYPE = re.compile(r"\(\?<TYPE(=?)>|\\k<TYPE>")


def read_log(a: ParsedArgs) -> EventLog:
    """The coded event log of the run's log files under its -r/-s/-m/-i options
    (``DATETIME`` groups read with ``--dateFormat``, see :func:`_read_datetime`)."""
    from ...parse.regex import read_regex_arrays
    from .log import EventLog

    if not a.logs:
        raise InputError(None, None, "no log file given")
    regexes = a["regExps"] or None
    mapping = a["partitionRegExp"] if "partitionRegExp" in a.given else None

    def read(rx: list[str] | None) -> RegexEvents:
        return read_regex_arrays(
            list(a.logs), rx, a["separatorRegExp"], mapping, a["ignoreNonMatchingLines"]
        )

    ev: RegexEvents | SimpleNamespace
    if regexes and any(_DATETIME.search(r) for r in regexes):
        ev = _read_datetime(read, regexes, a["dateFormat"], a["ignoreNonMatchingLines"])
    else:
        ev = read(regexes)
    log = EventLog.from_regex_events(ev)
    _check_order(log, a["keepOrder"], np.asarray(ev.files), ev.paths)
    return log


def _read_datetime(
    read: Callable[[list[str]], RegexEvents], regexes: list[str], date_format: str, ignore: bool
) -> SimpleNamespace:
    """Events of regexes with ``DATETIME`` groups, their times parsed with the Java
    ``date_format`` (:mod:`.javadate`, milliseconds since the epoch).  The regex reader has
    no date times, so the logs are read twice with the groups renamed: once with the
    DATETIME group as the type (giving each event's date text), once with it as a plain
    field (giving the types); both reads order events by line, so they align.  Events are
    then ordered by date within each trace (ties keep line order).  A date that does not
    parse is an error naming its file and line (skipped with ``-i``, as Synoptic does for
    bad times)."""
    from ...parse.regex import first_seen_codes
    from .javadate import compile_date_format

    try:
        parse = compile_date_format(date_format)
    except ValueError as exc:
        raise InputError(None, None, f"--dateFormat: {exc}") from None

    def as_dates(r):
        return _DATETIME.sub(
            r"(?<TYPE\1>",
            _TYPE.sub(
                lambda m: (
                    "\\k<SMTYPEX>" if m.group(0).startswith("\\") else f"(?<SMTYPEX{m.group(1)}>"
                ),
                r,
            ),
        )

    dates = read([as_dates(r) for r in regexes])
    types = read([_DATETIME.sub(r"(?<SMDATETIMEX\1>", r) for r in regexes])
    texts = np.asarray(dates.type_names, dtype=object)[dates.type_codes]
    millis = np.zeros(len(texts), dtype=np.int64)
    keep = np.ones(len(texts), dtype=bool)
    for k, text in enumerate(texts):
        try:
            millis[k] = parse(str(text))
        except ValueError as exc:
            if not ignore:
                raise InputError(
                    types.paths[int(types.files[k])], int(types.lines[k]), f"DATETIME: {exc}"
                ) from None
            keep[k] = False
    idx = np.nonzero(keep)[0]
    order = idx[np.lexsort((types.lines[idx], millis[idx], types.trace[idx]))]
    trace = np.unique(types.trace[order], return_inverse=True)[1]
    codes, uniques = first_seen_codes(types.type_codes[order])
    return SimpleNamespace(
        trace=trace.astype(np.int64),
        type_codes=codes,
        type_names=[str(types.type_names[u]) for u in uniques],
        times=millis[order].astype(np.float64),
        lines=types.lines[order],
        time_text=[str(int(x)) for x in millis[order]],
        files=types.files[order],
        paths=types.paths,
    )


def mined_invariants(a: ParsedArgs, log: EventLog) -> Invariants:
    """Mined invariants after the run's filters (support threshold, NFby, type set)."""
    from .invariants import filter_invariants, mine_invariants

    return filter_invariants(
        mine_invariants(log),
        a["supportCountThreshold"],
        a["ignoreNFbyInvs"],
        a["ignoreInvsOverETypeSet"],
    )


def model_files(a: ParsedArgs, model: PartitionModel, invariants: Invariants | None) -> dict:
    """Suffix -> text of the model files the options ask for."""
    from .formats import json_pieces, to_dot, to_gml, to_lts
    from .invariants import Invariants

    labels = a.values.get("outputEdgeLabels", True)
    style = dict(
        prob=labels and a["outputProbLabels"],
        count=labels and a["outputCountLabels"],
        show_initial=a["showInitialNode"],
        show_terminal=a["showTerminalNode"],
    )
    files: dict = {}
    if not a["noModelOutput"]:
        if a["exportAsGML"]:
            files[".gml"] = to_gml(model, **style)
        else:
            files[".dot"] = to_dot(model, **style)
    if a["outputJSON"]:
        inv = invariants if invariants is not None else Invariants.from_rows([], [], [], [])
        files[".json"] = json_pieces(model, inv)
    if a.values.get("outputLTS"):
        files[".lts"] = to_lts(model)
    return files


def run_tool(a: ParsedArgs, engine: str) -> ToolRun:
    """Run ``engine`` (synoptic, synoptic-jar, ktails, perfume) as the parsed command line asks."""
    from .engine import SynopticResult, infer_log
    from .formats import to_dot, to_invariants_txt
    from .invariants import invariant_lines
    from .model import PartitionModel

    out = ToolRun()
    if engine == "perfume":
        from .timecheck import refuse_timeless

        refuse_timeless(a["regExps"])  # before reading: it names the -r regex, not a line
    log = read_log(a)
    seed = a["randomSeed"] if a["randomSeed"] is not None else 0
    if engine == "ktails":
        from .ktails import ktails

        model = ktails(log, a["kTailsK"])
        out.result = SynopticResult(model, None)
        if a["dumpInitialPartitionGraph"]:
            out.files[".condensed.dot"] = to_dot(PartitionModel.initial(log))
        if a["performExtraChecks"]:
            _extra_checks(model, log, None, out)
        out.files.update(model_files(a, model, None))
        out.stderr.append(
            f"ktails: {log.n_traces} traces, {log.n_events} events, "
            f"k={a['kTailsK']}, {model.n_nodes} nodes"
        )
        return out
    if engine == "perfume":
        return _run_perfume(a, log, out)
    if engine == "synoptic-jar":
        from ...errors import UsageError
        from .jar import run_jar

        if a["exactBudget"]:
            raise UsageError(
                "--exactBudget is not supported with --engine synoptic-jar: it polishes "
                "statemine's own model (use --engine synoptic)"
            )

        extra = [f"--{name}={_java(a[name])}" for name in sorted(a.given) if name not in _JAR_OWN]
        run = run_jar(
            a["synopticJar"],
            a.logs,
            log,
            a["regExps"] or [],
            a["separatorRegExp"],
            a["partitionRegExp"] if "partitionRegExp" in a.given else None,
            a["ignoreNonMatchingLines"],
            seed,
            extra,
        )
        out.result = SynopticResult(run.model, run.invariants)
        if not a["noModelOutput"]:
            out.files[".dot"] = run.texts["model.dot"]
        if a["outputInvariantsToFile"]:
            out.files[".invariants.txt"] = run.texts["model.invariants.txt"]
        if a["outputJSON"]:
            out.files[".json"] = run.texts["model.json"]
        return out
    inv = mined_invariants(a, log)
    if a["dumpInvariants"]:
        out.stderr += ["Mined invariants:", *invariant_lines(inv)]
    if a["outputInvariantsToFile"]:
        out.files[".invariants.txt"] = to_invariants_txt(inv, a["outputSupportCount"])
    if a["onlyMineInvariants"]:
        out.result = SynopticResult(PartitionModel.initial(log), inv)
        if a["outputPathPrefix"] is None:
            out.stdout = to_invariants_txt(inv, a["outputSupportCount"])
        return out
    if a["dumpInitialPartitionGraph"]:
        out.files[".condensed.dot"] = to_dot(PartitionModel.initial(log))
    result = _noting_solver_crashes(
        out,
        lambda: infer_log(
            log,
            seed,
            invariants=inv,
            refine=not a["noRefinement"],
            coarsen=not a["noCoarsening"],
            exact_budget=a["exactBudget"],
        ),
    )
    out.result = result
    if a["performExtraChecks"]:
        _extra_checks(result.model, log, inv, out)
    out.files.update(model_files(a, result.model, inv))
    out.stderr.append(
        f"synoptic: {log.n_traces} traces, {log.n_events} events, "
        f"{len(inv)} invariants, {result.model.n_nodes} nodes"
    )
    return out


def _noting_solver_crashes(out: ToolRun, infer: Callable[[], _T]) -> _T:
    """``infer()``, each distinct :class:`~.exact.SolverCrashWarning` it gives put on
    ``out.stderr`` as one line (a dead CP-SAT process costs its polishing only: the model
    kept is valid); any other warning is passed on unchanged."""
    import warnings

    from .exact import SolverCrashWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SolverCrashWarning)
        got = infer()
    crashes = [str(w.message) for w in caught if issubclass(w.category, SolverCrashWarning)]
    out.stderr += [f"warning: {text}" for text in dict.fromkeys(crashes)]
    for w in caught:
        if not issubclass(w.category, SolverCrashWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return got


def _run_perfume(a: ParsedArgs, log: EventLog, out: ToolRun) -> ToolRun:
    """Perfume: its performance-constrained invariants (:mod:`.perfume`), then (unless
    ``--onlyMineInvariants``) its model (:mod:`.perfume_infer`) and files
    (:mod:`.perfume_formats`)."""
    from ...errors import UsageError
    from .engine import SynopticResult
    from .formats import json_pieces
    from .model import PartitionModel
    from .perfume import (
        constrained_invariants_txt,
        constrained_json,
        constrained_text,
        mine_constrained,
    )
    from .perfume_formats import invariants_json, perfume_dot
    from .perfume_infer import infer_perfume
    from .timecheck import TimedCodes, exact_ticks

    if a["exportAsGML"]:
        raise UsageError(
            "--exportAsGML=true is not supported with --engine perfume: the GML text of "
            "Perfume's time-range labels is not in the Synoptic source versions available "
            "here (their GmlExportFormatter predates time labels); statemine writes dot only"
        )
    inv = mine_constrained(
        log,
        a["supportCountThreshold"],
        a["ignoreNFbyInvs"],
        a["ignoreIntrByInvs"],
        a["ignoreInvsOverETypeSet"],
    )
    text = constrained_invariants_txt(inv, a["outputSupportCount"])
    if a["dumpInvariants"]:
        out.stderr += ["Mined invariants:", *constrained_text(inv)]
    if a["outputInvariantsToFile"]:
        out.files[".invariants.txt"] = text
    if a["onlyMineInvariants"]:
        if a["outputPathPrefix"] is None:
            out.stdout = text
        out.result = SynopticResult(PartitionModel.initial(log), inv)
        out.stderr.append(
            f"perfume: {log.n_traces} traces, {log.n_events} events, "
            f"{len(inv)} constrained invariants"
        )
        return out
    ticks, scale = exact_ticks(log)
    codes = TimedCodes.from_frame(inv, log.types, scale)
    if a["exactBudget"]:
        from .exact import cp_model
        from .perfume_cpsat import int_ticks

        cp_model()  # the one-line error naming the extra, before any work
        fit = int_ticks(ticks, codes)
        if isinstance(fit, str):
            raise UsageError(f"--exactBudget: {fit}")
    if a["dumpInitialPartitionGraph"]:
        out.files[".condensed.dot"] = perfume_dot(PartitionModel.initial(log), ticks)
    seed = a["randomSeed"] if a["randomSeed"] is not None else 0
    model = _noting_solver_crashes(
        out,
        lambda: infer_perfume(
            log,
            codes,
            ticks,
            seed,
            refine_model=not a["noRefinement"],
            coarsen_model=not a["noCoarsening"],
            polish_checks=a["polishChecks"],
            exact_budget=a["exactBudget"],
        ),
    )
    out.result = SynopticResult(model, inv)
    if a["performExtraChecks"]:
        _perfume_checks(model, codes, ticks, out)
    if not a["noModelOutput"]:
        out.files[".dot"] = perfume_dot(
            model, ticks, a["outputProbLabels"], a["showInitialNode"], a["showTerminalNode"]
        )
    if a["outputJSON"]:
        out.files[".json"] = json_pieces(model, inv, invariants_json(constrained_json(inv)))
    out.stderr.append(
        f"perfume: {log.n_traces} traces, {log.n_events} events, "
        f"{len(inv)} constrained invariants, {model.n_nodes} nodes"
    )
    return out


def _perfume_checks(
    model: PartitionModel, codes: TimedCodes, ticks: np.ndarray, out: ToolRun
) -> None:
    """``--performExtraChecks`` for Perfume: every trace accepted, every constrained
    invariant holds (:mod:`.timecheck`); InputError if not."""
    from .check import rejected_traces
    from .timecheck import timed_graph, violations

    log = model.log
    g = timed_graph(model.part, model.node_type, log, ticks)
    bad = violations(g, codes, len(log.types))
    labels = [lab if n > 1 else f"\0{lab}" for n, lab in enumerate(model.labels())]
    traces = [log.trace(k) for k in range(log.n_traces)]
    rejected = rejected_traces(g.src, g.dst, labels, traces)  # sparse: O(edges) memory
    if bad.any() or rejected:
        raise InputError(
            None,
            None,
            f"--performExtraChecks: the model rejects {len(rejected)} traces and violates "
            f"{int(bad.sum())} constrained invariants",
        )
    out.stderr.append(
        f"checked: {log.n_traces} traces accepted, {codes.n_rows} constrained invariants hold"
    )


def _extra_checks(
    model: PartitionModel, log: EventLog, invariants: Invariants | None, out: ToolRun
) -> None:
    """``--performExtraChecks``: the model must accept every trace and satisfy every
    invariant (none for k-tails); InputError if it does not."""
    from .check import check_model
    from .invariants import Invariants

    if invariants is None:
        invariants = Invariants.from_rows([], [], [], [])
    report = check_model(model.to_networkx(), log, invariants)
    if not report.ok:
        raise InputError(
            None,
            None,
            f"--performExtraChecks: the model rejects "
            f"{len(report.rejected)} traces and violates "
            f"{len(report.violated)} invariants",
        )
    out.stderr.append(
        f"checked: {report.n_traces} traces accepted, {report.n_invariants} invariants hold"
    )


#: Options statemine passes to ``synoptic.jar`` itself (not re-sent as ``--name=value``).
_JAR_OWN = {
    "regExps",
    "separatorRegExp",
    "partitionRegExp",
    "ignoreNonMatchingLines",
    "randomSeed",
    "outputPathPrefix",
    "argsFilename",
    "synopticJar",
    "exactBudget",
}


def _java(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
