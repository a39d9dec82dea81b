"""The Synoptic engines behind ``statemine infer --engine synoptic|synoptic-jar`` and the
``statemine check-model`` command."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Sequence

import click

from ..errors import UsageError
from . import main

#: Synoptic flags accepted and ignored: statemine always writes these outputs/labels.
IGNORED_FLAGS = ("outputProbLabels", "outputCountLabels", "outputInvariantsToFile",
                 "outputSupportCount", "outputJSON", "outputPathToTraces",
                 "outputEdgeLabels", "useFSMChecker", "internCommonStrings",
                 "logLvlQuiet", "logLvlVerbose", "logLvlExtraVerbose", "showInitialNode",
                 "showTerminalNode", "doBenchmarking", "runAllTests", "runTests",
                 "performExtraChecks", "exportAsGML", "dotExecutablePath", "outputFormat")
#: Synoptic flags statemine honours (``--name=value``).
HONOURED_FLAGS = ("randomSeed", "dumpInvariants", "onlyMineInvariants", "noRefinement",
                  "noCoarsening", "ignoreNonMatchingLines")
_FLAG = re.compile(r"^--?([A-Za-z]+)(?:=(.*))?$")
_SHORT_IGNORED = ("-q", "-v", "--quiet", "--verbose")


def parse_extra_args(extra: Sequence[str]) -> dict[str, str]:
    """Synoptic-only flags from ``extra``: {name: value} for honoured ones (ignored ones
    dropped); UsageError naming any flag statemine cannot honour.

    >>> parse_extra_args(["--randomSeed=7", "--outputJSON=true", "-i"])
    {'randomSeed': '7', 'ignoreNonMatchingLines': 'true'}
    """
    honoured: dict[str, str] = {}
    unknown = []
    for arg in extra:
        if arg == "-i":
            honoured["ignoreNonMatchingLines"] = "true"
            continue
        if arg in _SHORT_IGNORED:
            continue
        m = _FLAG.match(arg)
        if not m:
            unknown.append(arg)
            continue
        name, value = m.group(1), m.group(2)
        if name in IGNORED_FLAGS:
            continue
        if name in HONOURED_FLAGS:
            honoured[name] = "true" if value is None else value
        else:
            unknown.append(arg)
    if unknown:
        raise UsageError(f"Synoptic option(s) statemine does not support: {' '.join(unknown)}"
                         f" (supported: {', '.join(HONOURED_FLAGS)}; ignored: output flags)")
    return honoured


def _true(value: str | None) -> bool:
    return (value or "false").lower() in ("true", "1", "yes")


def run_synoptic_engine(logs: Sequence[str], regexes: Sequence[str], separator: str | None,
                        mapping: str | None, prefix: str | None, seed: int,
                        ignore_nonmatching: bool, engine: str,
                        synoptic_jar: str | Path | None, extra_args: Sequence[str]):
    """Run ``--engine synoptic`` (statemine's implementation) or ``synoptic-jar`` (a real
    Synoptic) on LOG files with Synoptic's -r/-s/-m/-i options; write ``PREFIX.dot``,
    ``PREFIX.invariants.txt`` and ``PREFIX.json`` when ``prefix`` is given, else print the
    dot model.  ``extra_args``: Synoptic-only flags (``--randomSeed=N`` overrides
    ``seed``).  Returns the :class:`~statemine.infer.synoptic.SynopticResult`."""
    from ..infer.synoptic import SynopticResult, infer_log
    from ..infer.synoptic.formats import (to_dot, to_invariants_txt, write_outputs,
                                          write_texts)
    from ..infer.synoptic.invariants import invariant_text
    from ..infer.synoptic.log import EventLog
    from ..infer.synoptic.model import PartitionModel
    from ..parse.regex import read_regex_arrays

    flags = parse_extra_args(extra_args)
    if "randomSeed" in flags:
        try:
            seed = int(flags["randomSeed"])
        except ValueError:
            raise UsageError(f"--randomSeed takes an integer, not {flags['randomSeed']!r}")
    ignore_nonmatching = ignore_nonmatching or _true(flags.get("ignoreNonMatchingLines"))
    if not logs:
        raise UsageError("no LOG given")
    log = EventLog.from_regex_events(read_regex_arrays(
        list(logs), list(regexes) or None, separator, mapping, ignore_nonmatching))
    if engine == "synoptic-jar":
        from ..infer.synoptic.jar import run_jar

        run = run_jar(synoptic_jar, logs, log, list(regexes), separator, mapping,
                      ignore_nonmatching, seed, list(extra_args))
        result = SynopticResult(run.model, run.invariants)
        if prefix:
            write_texts(prefix, {".dot": run.texts["model.dot"],
                                 ".invariants.txt": run.texts["model.invariants.txt"],
                                 ".json": run.texts["model.json"]})
    elif engine == "synoptic":
        if _true(flags.get("onlyMineInvariants")):
            from ..infer.synoptic.invariants import mine

            inv = mine(log)
            result = SynopticResult(PartitionModel.initial(log), inv)
            if prefix:
                write_texts(prefix, {".invariants.txt": to_invariants_txt(inv)})
            else:
                click.echo(to_invariants_txt(inv), nl=False)
            return result
        result = infer_log(log, seed, refine=not _true(flags.get("noRefinement")),
                           coarsen=not _true(flags.get("noCoarsening")))
        if prefix:
            write_outputs(result.model, result.invariants, prefix)
    else:
        raise UsageError(f"unknown Synoptic engine {engine!r}")
    if _true(flags.get("dumpInvariants")):
        click.echo("Mined invariants:", err=True)
        for line in invariant_text(result.invariants):
            click.echo(line, err=True)
    if prefix:
        click.echo(f"{engine}: {log.n_traces} traces, {log.n_events} events, "
                   f"{len(result.invariants)} invariants, {result.model.n_nodes} nodes; "
                   f"wrote {prefix}.dot, {prefix}.invariants.txt, {prefix}.json", err=True)
    else:
        click.echo(to_dot(result.model), nl=False)
    return result


@main.command("check-model")
@click.argument("model", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("logs", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-r", "--regex", "regexes", multiple=True, metavar="REGEX",
              help="Synoptic line regex (repeatable), as given to the inference.")
@click.option("-s", "--separator", metavar="REGEX", help="Synoptic trace separator regex.")
@click.option("-m", "--mapping", metavar="MAP", help=r"Synoptic partition mapping, e.g. '\k<ip>'.")
@click.option("-i", "--ignore-nonmatching", is_flag=True, help="Skip lines no regex matches.")
@click.option("--invariants", "inv_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Check these invariants (a model.invariants.txt) instead of mining the logs'.")
def check_model_command(model, logs, regexes, separator, mapping, ignore_nonmatching, inv_file):
    """Check that MODEL (a Synoptic/statemine model.dot or model.json) accepts every trace
    of LOG files and that every invariant mined from them holds on it.  Exit status 0 when
    it does, 1 when it does not (the failures are listed), 2 on bad input."""
    from ..infer.synoptic.check import check_model
    from ..infer.synoptic.formats import model_from_json, read_dot, read_invariants_txt
    from ..infer.synoptic.invariants import invariant_text, mine
    from ..infer.synoptic.log import EventLog
    from ..parse.regex import read_regex

    ts = read_regex(list(logs), list(regexes) or None, separator, mapping, ignore_nonmatching)
    log = EventLog.from_traceset(ts)
    if model.suffix == ".json":
        graph = model_from_json(model).to_networkx()
    else:
        graph = read_dot(model)
    invariants = read_invariants_txt(inv_file) if inv_file else mine(log)
    report = check_model(graph, log, invariants)
    click.echo(f"{model}: {graph.number_of_nodes()} nodes; "
               f"{report.n_traces - len(report.rejected)}/{report.n_traces} traces accepted; "
               f"{report.n_invariants - len(report.violated)}/{report.n_invariants} "
               f"invariants hold")
    for k in report.rejected[:20]:
        click.echo(f"  rejected trace {k}: {' '.join(log.trace(k))[:200]}")
    for line in invariant_text(report.violated).head(50):
        click.echo(f"  violated: {line}")
    sys.exit(0 if report.ok else 1)
