"""The Synoptic-family engines behind ``statemine infer --engine
synoptic|synoptic-jar|ktails|perfume`` and the ``statemine check-model`` command."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..runtime import engine_in, without_engine
from . import main

if TYPE_CHECKING:
    from ..infer.synoptic.run import ToolRun


class ToolCommand(click.Command):
    """A click command that hands its whole argument list, untouched, to the original
    tool's option parser when ``--engine`` names a Synoptic-family engine (their options,
    e.g. ``-i=true``, ``--randomSeed 5``, ``-c FILE``, are not click's)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        engine = engine_in(args)
        if engine in (None, "observed"):  # the default engine: no tool module to load
            return super().parse_args(ctx, args)
        from ..infer.synoptic.command import TOOL_OF_ENGINE

        if engine in TOOL_OF_ENGINE:
            ctx.meta["tool_args"] = without_engine(args)
            args = ["--engine", engine, "--", "-"]
        return super().parse_args(ctx, args)


def run_synoptic_engine(
    engine: str, args: Sequence[str], synoptic_jar: str | Path | None = None
) -> ToolRun | None:
    """``statemine infer --engine synoptic|synoptic-jar|ktails|perfume ARGS``: one call of
    :func:`statemine.infer.synoptic.command.run_command`, then printing.  The command
    line's own entry point runs the same without click (:mod:`statemine.launch`)."""
    from ..infer.synoptic.command import run_command

    done = run_command(engine, args, synoptic_jar)
    done.show(click.echo)
    return done.run


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
    help="Check these invariants (Synoptic's or Perfume's model.invariants.txt) instead "
    "of mining the logs'.",
)
@click.option(
    "--traces-only",
    is_flag=True,
    help="Only check that the model accepts every trace (k-tails models have no invariants).",
)
def check_model_command(
    model, logs, regexes, separator, mapping, ignore_nonmatching, inv_file, traces_only
):
    """Check that MODEL (a model.dot of Synoptic, Perfume or k-tails, a model.json, a
    Synoptic model.gml or a model.lts) accepts every trace of LOG files and that every
    invariant mined from them (Perfume's time-constrained ones for a Perfume model)
    holds on it.  Exit status 0 when it does, 1 when it does not or when a Perfume
    model.dot's rounded edge times cannot tell (the failures are listed), 2 on bad
    input."""
    from ..escape import one_line
    from ..infer.synoptic.command import check_model_files
    from ..infer.synoptic.invariants import invariant_text
    from ..infer.synoptic.perfume import constrained_text

    checked = check_model_files(
        model, logs, regexes, separator, mapping, ignore_nonmatching, inv_file, traces_only
    )
    graph, log, report = checked.graph, checked.log, checked.report
    undecided = getattr(report, "undecided", report.violated.iloc[:0])
    unsure = f"; {len(undecided)} undecided" if len(undecided) else ""
    click.echo(
        f"{model}: {graph.number_of_nodes()} nodes; "
        f"{report.n_traces - len(report.rejected)}/{report.n_traces} traces accepted; "
        f"{report.n_invariants - len(report.violated) - len(undecided)}"
        f"/{report.n_invariants} {'constrained ' if checked.constrained else ''}"
        f"invariants hold{unsure}"
    )
    for note in checked.notes:
        click.echo(f"  note: {note}")
    text = constrained_text if checked.constrained else lambda f: invariant_text(f).tolist()
    for k in report.rejected[:20]:
        click.echo(f"  rejected trace {k}: {one_line(' '.join(log.trace(k))[:200])}")
    for line in text(report.violated)[:50]:
        click.echo(f"  violated: {one_line(line)}")
    if unsure:
        for line in text(undecided)[:50]:
            click.echo(f"  undecided (the dot's 3-digit edge times): {one_line(line)}")
    sys.exit(0 if report.ok else 1)
