"""The Synoptic-family engines behind ``statemine infer --engine
synoptic|synoptic-jar|ktails|perfume`` and the ``statemine check-model`` command."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..errors import InputError, UsageError
from . import main

if TYPE_CHECKING:
    from ..infer.synoptic.run import ToolRun

#: Engines whose command line is the original tool's (parsed by :mod:`..options`).
TOOL_OF_ENGINE = {
    "synoptic": "synoptic",
    "synoptic-jar": "synoptic",
    "ktails": "ktails",
    "perfume": "perfume",
}


def engine_in(args: Sequence[str]) -> str | None:
    """The value of ``--engine`` in raw ``args`` (``--engine X`` or ``--engine=X``)."""
    for k, arg in enumerate(args):
        if arg == "--engine" and k + 1 < len(args):
            return args[k + 1]
        if arg.startswith("--engine="):
            return arg.split("=", 1)[1]
    return None


def without_engine(args: Sequence[str]) -> list[str]:
    """``args`` without its ``--engine X`` / ``--engine=X``."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--engine":
            skip = True
        elif not arg.startswith("--engine="):
            out.append(arg)
    return out


class ToolCommand(click.Command):
    """A click command that hands its whole argument list, untouched, to the original
    tool's option parser when ``--engine`` names a Synoptic-family engine (their options,
    e.g. ``-i=true``, ``--randomSeed 5``, ``-c FILE``, are not click's)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        engine = engine_in(args)
        if engine in TOOL_OF_ENGINE:
            ctx.meta["tool_args"] = without_engine(args)
            args = ["--engine", engine, "--", "-"]
        return super().parse_args(ctx, args)


def run_synoptic_engine(
    engine: str, args: Sequence[str], synoptic_jar: str | Path | None = None
) -> ToolRun | None:
    """``statemine infer --engine synoptic|synoptic-jar|ktails|perfume ARGS``: ARGS is the
    original tool's command line (Synoptic's or Perfume's, or ``KTailsMain``'s plus
    ``-k N``); every option is honoured or refused (:mod:`statemine.infer.synoptic.options`).
    Writes the files the options ask for beside ``-o PREFIX`` (all or none), or prints the
    dot model.  Returns the :class:`~statemine.infer.synoptic.run.ToolRun`."""
    from ..infer.synoptic.formats import write_texts
    from ..infer.synoptic.options import parse_args, usage
    from ..infer.synoptic.run import run_tool

    if engine not in TOOL_OF_ENGINE:
        raise UsageError(f"unknown Synoptic engine {engine!r}")
    tool = TOOL_OF_ENGINE[engine]
    parsed = parse_args(args, tool)
    if parsed["help"] or parsed["allHelp"]:
        click.echo(usage(tool, every=parsed["allHelp"]), nl=False)
        return None
    if parsed["version"]:
        from importlib.metadata import version

        click.echo(f"statemine {version('statemine')} ({tool} engine)")
        return None
    if parsed["synopticJar"] is None:
        parsed.values["synopticJar"] = synoptic_jar
    run = run_tool(parsed, engine)
    prefix = parsed["outputPathPrefix"]
    written = []
    if prefix is not None and run.files:
        written = write_texts(prefix, run.files)
    elif prefix is None and ".dot" in run.files:
        run.stdout = run.stdout or run.files[".dot"]
    if run.stdout:
        click.echo(run.stdout, nl=False)
    verbose = parsed["logLvlVerbose"] or parsed["logLvlExtraVerbose"]
    for line in run.stderr[:-1] if not verbose else run.stderr:
        click.echo(line, err=True)
    if written and not parsed["logLvlQuiet"]:
        tail = run.stderr[-1] + "; " if run.stderr and not verbose else ""
        click.echo(f"{tail}wrote {', '.join(str(p) for p in written)}", err=True)
    return run


@contextlib.contextmanager
def _naming(path):
    """Give an :class:`InputError` raised without a file the name ``path``."""
    try:
        yield
    except InputError as exc:
        if exc.file is not None:
            raise
        raise InputError(path, exc.line, exc.reason) from None


@main.command("check-model")
@click.argument("model", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument(
    "logs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "-r",
    "--regex",
    "regexes",
    multiple=True,
    metavar="REGEX",
    help="Synoptic line regex (repeatable), as given to the inference.",
)
@click.option("-s", "--separator", metavar="REGEX", help="Synoptic trace separator regex.")
@click.option("-m", "--mapping", metavar="MAP", help=r"Synoptic partition mapping, e.g. '\k<ip>'.")
@click.option("-i", "--ignore-nonmatching", is_flag=True, help="Skip lines no regex matches.")
@click.option(
    "--invariants",
    "inv_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Check these invariants (a model.invariants.txt) instead of mining the logs'.",
)
def check_model_command(model, logs, regexes, separator, mapping, ignore_nonmatching, inv_file):
    """Check that MODEL (a Synoptic/statemine model.dot or model.json) accepts every trace
    of LOG files and that every invariant mined from them holds on it.  Exit status 0 when
    it does, 1 when it does not (the failures are listed), 2 on bad input."""
    from ..escape import one_line
    from ..infer.synoptic.check import check_model
    from ..infer.synoptic.formats import model_from_json, read_dot, read_invariants_txt
    from ..infer.synoptic.invariants import invariant_text, mine
    from ..infer.synoptic.log import EventLog
    from ..parse.regex import read_regex

    where = " ".join(map(str, logs))
    with _naming(where):
        ts = read_regex(list(logs), list(regexes) or None, separator, mapping, ignore_nonmatching)
        log = EventLog.from_traceset(ts)
    with _naming(model):
        graph = model_from_json(model).to_networkx() if model.suffix == ".json" else read_dot(model)
    invariants = read_invariants_txt(inv_file) if inv_file else mine(log)
    with _naming(model):
        report = check_model(graph, log, invariants)
    click.echo(
        f"{model}: {graph.number_of_nodes()} nodes; "
        f"{report.n_traces - len(report.rejected)}/{report.n_traces} traces accepted; "
        f"{report.n_invariants - len(report.violated)}/{report.n_invariants} "
        f"invariants hold"
    )
    for k in report.rejected[:20]:
        click.echo(f"  rejected trace {k}: {one_line(' '.join(log.trace(k))[:200])}")
    for line in invariant_text(report.violated).head(50):
        click.echo(f"  violated: {one_line(line)}")
    sys.exit(0 if report.ok else 1)
