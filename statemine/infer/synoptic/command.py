"""The Synoptic-family commands as library calls.

:func:`run_command` is everything ``statemine infer --engine
synoptic|synoptic-jar|ktails|perfume ARGS`` does except printing: ARGS is the original
tool's command line (Synoptic's, Perfume's or ``KTailsMain``'s plus ``-k N``), every option
honoured or refused (:mod:`.options`), the files the options ask for written beside
``-o PREFIX`` (all or none).  :func:`synoptic` takes the same options as keyword arguments
(a notebook's call), :func:`check_model_files` is ``statemine check-model``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import InputError, UsageError

if TYPE_CHECKING:
    from .run import ToolRun

#: Engines and the tool whose command line each takes.
TOOL_OF_ENGINE = {
    "synoptic": "synoptic",
    "synoptic-jar": "synoptic",
    "ktails": "ktails",
    "perfume": "perfume",
}


@dataclass
class CommandResult:
    """What a command did: ``run`` (the model, invariants and file texts; None for
    ``-h``/``-H``/``-V``), ``stdout`` (what it prints: the dot model without ``-o``, the
    invariants with ``--onlyMineInvariants``, help), ``messages`` (the lines for stderr)
    and ``written`` (the files it wrote)."""

    run: ToolRun | None
    stdout: str = ""
    messages: list[str] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)

    def show(self, echo: Callable[..., None]) -> None:
        """Print what the command did: its stdout text, then its messages on stderr
        (``echo``: ``click.echo``'s signature)."""
        if self.stdout:
            echo(self.stdout, nl=False)
        for line in self.messages:
            echo(line, err=True)

    @property
    def result(self) -> Any:
        """The inferred model with its invariants (a ``SynopticResult``; Perfume's
        mining: the invariants frame), or None."""
        return self.run.result if self.run is not None else None


def run_command(
    engine: str, args: Sequence[str], synoptic_jar: str | Path | None = None
) -> CommandResult:
    """Run ``engine`` on the original tool's command line ``args`` and write its files.

    ``synoptic_jar``: the jar for ``synoptic-jar`` when ``args`` names none.  UsageError
    on a bad or refused option, InputError on bad input (nothing written then).
    """
    from .formats import write_texts
    from .options import parse_args, usage
    from .run import run_tool

    if engine not in TOOL_OF_ENGINE:
        raise UsageError(f"unknown Synoptic engine {engine!r}")
    tool = TOOL_OF_ENGINE[engine]
    parsed = parse_args(args, tool)
    if parsed["help"] or parsed["allHelp"]:
        return CommandResult(None, usage(tool, every=parsed["allHelp"]))
    if parsed["version"]:
        from ... import __version__

        return CommandResult(None, f"statemine {__version__} ({tool} engine)\n")
    if parsed["synopticJar"] is None:
        parsed.values["synopticJar"] = synoptic_jar
    run = run_tool(parsed, engine)
    prefix = parsed["outputPathPrefix"]
    written: list[Path] = []
    stdout = run.stdout
    if prefix is not None and run.files:
        written = write_texts(prefix, run.files)
    elif prefix is None and ".dot" in run.files:
        stdout = stdout or run.files[".dot"]
    verbose = parsed["logLvlVerbose"] or parsed["logLvlExtraVerbose"]
    messages = list(run.stderr if verbose else run.stderr[:-1])
    if written and not parsed["logLvlQuiet"]:
        tail = run.stderr[-1] + "; " if run.stderr and not verbose else ""
        messages.append(f"{tail}wrote {', '.join(str(p) for p in written)}")
    return CommandResult(run, stdout, messages, written)


def options_args(logs: Sequence[str | Path], options: dict[str, Any]) -> list[str]:
    """A tool command line from keyword options: ``name=value`` becomes
    ``--name=value`` (booleans ``true``/``false``), a list or tuple one ``--name=item``
    per item (``regExps=[...]``), None is left out; the logs come last.

    >>> options_args(["a.log"], {"regExps": ["^(?<TYPE>.*)$"], "randomSeed": 1, "j": True})
    ['--regExps=^(?<TYPE>.*)$', '--randomSeed=1', '-j=true', 'a.log']
    """
    out = []
    for name, value in options.items():
        dash = "-" if len(name) == 1 else "--"
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if item is None:
                continue
            text = str(item).lower() if isinstance(item, bool) else str(item)
            out.append(f"{dash}{name}={text}")
    return out + [str(p) for p in logs]


def synoptic(
    *logs: str | Path,
    engine: str = "synoptic",
    synoptic_jar: str | Path | None = None,
    **options: Any,
) -> CommandResult:
    """:func:`run_command` with the tool's options as keyword arguments, named as on
    its command line (see :func:`options_args`), e.g.
    ``synoptic("run.log", regExps=[r"^(?<DTIME>)(?<TYPE>)$"], separatorRegExp="^--$",
    randomSeed=1)``; ``.result.to_networkx()`` is the model.  Without
    ``outputPathPrefix`` nothing is written."""
    return run_command(engine, options_args(logs, options), synoptic_jar)


@contextlib.contextmanager
def _naming(path: str | Path) -> Iterator[None]:
    """Give an :class:`InputError` raised without a file the name ``path``."""
    try:
        yield
    except InputError as exc:
        if exc.file is not None:
            raise
        raise InputError(path, exc.line, exc.reason) from None


@dataclass
class ModelCheck:
    """:func:`check_model_files`'s answer: the model ``graph``, the parsed ``log``, the
    report (:class:`~.check.CheckReport`, or for Perfume's constrained invariants a
    :class:`~.timed_model.ConstrainedReport` with ``undecided`` rows too), whether the
    invariants are Perfume's (``constrained``) and ``notes`` (lines about how the file
    was read)."""

    graph: Any
    log: Any
    report: Any
    constrained: bool = False
    notes: list[str] = field(default_factory=list)


def _json_is_perfume(path: Path) -> bool:
    """Does a model.json carry Perfume's constrained invariants?"""
    import json

    from .formats import _read_text

    try:
        data = json.loads(_read_text(path))
        return any(
            isinstance(e, dict) and ("constraints" in e or e.get("invariantType") == "IntrBy")
            for e in data.get("invariants", [])
        )
    except (ValueError, AttributeError, TypeError):
        return False


def check_model_files(
    model: str | Path,
    logs: Sequence[str | Path],
    regexes: Sequence[str] = (),
    separator: str | None = None,
    mapping: str | None = None,
    ignore_nonmatching: bool = False,
    invariants_file: str | Path | None = None,
    traces_only: bool = False,
) -> ModelCheck:
    """``statemine check-model``: read a model any of the three tools wrote
    (``.dot`` of Synoptic, k-tails or Perfume; ``.json``; Synoptic's ``.gml``; an
    ``.lts``), parse ``logs`` as Synoptic would (-r/-s/-m/-i), take the invariants
    (``invariants_file``: Synoptic's or Perfume's model.invariants.txt; else mined from
    the logs, Perfume's constrained ones for a Perfume model; none with
    ``traces_only``), and check that the model accepts every trace and satisfies every
    invariant."""
    from ...parse.regex import read_regex_arrays
    from .check import check_model
    from .formats import model_from_json, read_invariants_txt
    from .invariants import Invariants, mine
    from .log import EventLog
    from .model_files import (
        add_trace_ends,
        is_constrained_txt,
        read_any_dot,
        read_constrained_txt,
        read_gml,
        read_lts,
    )

    model = Path(model)
    with _naming(" ".join(map(str, logs))):
        # Synoptic's time ranges (TIME 31 bits, LTIME 63), not statemine's: read_regex_arrays
        ts = read_regex_arrays(
            list(logs), list(regexes) or None, separator, mapping, ignore_nonmatching
        ).to_traceset()
        log = EventLog.from_traceset(ts)
    notes: list[str] = []
    suffix = model.suffix.lower()
    partition = None
    with _naming(model):
        if suffix == ".json":
            perfume = _json_is_perfume(model)
            partition = model_from_json(model)
            graph = partition.to_networkx()
        elif suffix == ".gml":
            graph, perfume = read_gml(model), False
        elif suffix == ".lts":
            graph, perfume = read_lts(model), False
            added = add_trace_ends(graph, [log.trace(k) for k in range(log.n_traces)])
            notes.append(
                f"an .lts records no trace ends but STOP states: {added} states where the "
                "log's traces end were taken as ends"
            )
        else:
            graph = read_any_dot(model)
            perfume = graph.graph.get("engine") == "perfume"
    if invariants_file is not None:
        with _naming(invariants_file):
            constrained = is_constrained_txt(invariants_file)
            frame = (
                read_constrained_txt(invariants_file)
                if constrained
                else read_invariants_txt(invariants_file)
            )
    elif traces_only:
        constrained, frame = False, Invariants.from_rows([], [], [], []).to_frame()
    elif perfume:
        from .perfume import mine_constrained

        constrained, frame = True, mine_constrained(log)
    else:
        constrained, frame = False, mine(log)
    if not constrained:
        with _naming(model):
            return ModelCheck(graph, log, check_model(graph, log, frame), False, notes)
    from .timed_model import check_constrained

    with _naming(model):
        if partition is not None:
            try:
                partition = model_from_json(model, log)
            except InputError:
                raise InputError(
                    model,
                    None,
                    "its traces differ from the parsed log: Perfume's time "
                    "bounds can only be checked on the log the model was made from",
                ) from None
        report = check_constrained(graph, log, frame, partition)
    return ModelCheck(graph, log, report, True, notes)
