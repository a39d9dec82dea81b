"""``statemine infer`` and ``statemine read``: logs in; tables, model and diagram out."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import UsageError
from . import command_line, main
from .console import make_console
from .dask_option import DASK_OPTION, dask_session
from .options import (
    bootstrap_option,
    collapse_repeats_option,
    end_option,
    key_values,
    out_option,
    seed_option,
    with_options,
)
from .synoptic import ToolCommand, run_synoptic_engine

if TYPE_CHECKING:  # statemine.commands loads the statistics stack: not on the Synoptic path
    from ..commands import InferOutput, ReadOptions

_INPUT_OPTIONS = [
    click.option(
        "--format",
        "fmt",
        type=click.Choice(["auto", "statemine", "qlog", "regex", "parquet", "ftrace"]),
        default="auto",
        show_default=True,
        help="Input format; auto looks at each file's content.",
    ),
    click.option(
        "-r",
        "--regex",
        "regexes",
        multiple=True,
        metavar="REGEX",
        help="Synoptic-style line regex with named groups TYPE, DTIME/TIME/LTIME (repeatable).",
    ),
    click.option("-s", "--separator", metavar="REGEX", help="Synoptic trace separator line regex."),
    click.option(
        "-m", "--mapping", metavar="MAP", help=r"Synoptic partition mapping, e.g. '\k<conn>'."
    ),
    click.option(
        "-i",
        "--ignore-nonmatching",
        is_flag=True,
        help="Skip lines no regex matches (Synoptic's -i).",
    ),
    click.option(
        "--names",
        "names_file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="qlog state-name overrides: lines NAME=Canonical, or a JSON object.",
    ),
    click.option(
        "--implementation", metavar="NAME", help="qlog: which implementation's state names to use."
    ),
    click.option(
        "--derive-states",
        is_flag=True,
        help="qlog without congestion_state_updated: derive states from cwnd/ssthresh (marked derived).",
    ),
    click.option(
        "--strict",
        is_flag=True,
        expose_value=False,
        callback=lambda ctx, _, v: ctx.meta.update(strict=v),
        help="Fail on a qlog file without congestion data instead of skipping it with a warning.",
    ),
]


#: The parameter names of the input options (gathered into one ReadOptions).
_READ_KEYS = (
    "fmt",
    "regexes",
    "separator",
    "mapping",
    "ignore_nonmatching",
    "names_file",
    "implementation",
    "derive_states",
)


def _input_options(func):
    """Add the input options to a command; it receives them as one ``read`` argument
    (a :class:`~statemine.commands.ReadOptions`; None when a Synoptic-family engine takes
    the original tool's arguments instead, see :class:`ToolCommand`)."""

    @functools.wraps(func)
    def gathered(*args, **kwargs):
        values = {k: kwargs.pop(k) for k in _READ_KEYS}
        ctx = click.get_current_context()
        read = None if "tool_args" in ctx.meta else read_options(ctx, **values)
        return func(*args, read=read, **kwargs)

    return with_options(_INPUT_OPTIONS)(gathered)


_SELECT_OPTION = click.option(
    "--select",
    "selections",
    multiple=True,
    metavar="LABEL=VALUE",
    help="Keep only traces with this label value (repeatable), e.g. role=server profile=mobile.",
)


def read_options(ctx: click.Context, **opts: Any) -> ReadOptions:
    """The :class:`~statemine.commands.ReadOptions` of the input options' values."""
    from ..commands import ReadOptions

    return ReadOptions(
        fmt=opts["fmt"],
        regex=tuple(opts["regexes"]),
        separator=opts["separator"],
        mapping=opts["mapping"],
        ignore_nonmatching=opts["ignore_nonmatching"],
        names_file=opts["names_file"],
        implementation=opts["implementation"],
        derive_states=opts["derive_states"],
        strict=ctx.meta.get("strict", False),
        progress=True,
    )


def print_warnings(warnings: Sequence[str], limit: int = 10) -> None:
    """Show the readers' warnings on stderr (the first ``limit``)."""
    from ..escape import one_line

    for item in warnings[:limit]:
        click.echo(f"statemine: warning: {one_line(item)}", err=True)
    if len(warnings) > limit:
        click.echo(f"statemine: warning: ... and {len(warnings) - limit} more", err=True)


@main.command(
    cls=ToolCommand, context_settings={"ignore_unknown_options": True, "allow_extra_args": True}
)
@click.argument("logs", nargs=-1, required=True)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    help="Write states.csv, transitions.csv, model.dot, model.json (and model.svg) here "
    "(the folder is replaced as a whole).",
)
@_input_options
@click.option(
    "--engine",
    type=click.Choice(["observed", "synoptic", "synoptic-jar", "ktails", "perfume"]),
    default="observed",
    show_default=True,
    help="observed: one node per state (Fig. 13); synoptic: Synoptic's refinement; "
    "synoptic-jar: a real synoptic.jar; ktails: k-tails; perfume: Perfume's "
    "time-bounded model. These take the original tool's command line (see docs/synoptic-engine.md).",
)
@click.option(
    "-o",
    "--output-prefix",
    "prefix",
    metavar="PREFIX",
    help="Synoptic engines: write PREFIX.dot, PREFIX.invariants.txt, PREFIX.json.",
)
@seed_option("Seed of the bootstrap / Synoptic refinement.")
@click.option(
    "--synoptic-jar",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="STATEMINE_SYNOPTIC_JAR",
    help="A real synoptic.jar, for --engine synoptic-jar.",
)
@collapse_repeats_option()
@end_option()
@bootstrap_option(
    default=1000, minimum=0, help="Bootstrap resamples for the confidence intervals (0: none)."
)
@click.option(
    "--confidence",
    type=click.FloatRange(0.5, 0.999),
    default=0.95,
    show_default=True,
    help="Level of the confidence intervals of the time shares (0.95: 95% intervals).",
)
@click.option(
    "--svg/--no-svg",
    default=True,
    show_default=True,
    help="Also render model.svg (needs Graphviz).",
)
@click.option("--title", help="Title drawn on the diagram.")
@click.option(
    "--max-states",
    type=click.IntRange(1, 2**31 - 1),
    default=100_000,
    show_default=True,
    help="Most distinct state names accepted (more look like an id in the state field).",
)
@_SELECT_OPTION
@DASK_OPTION
@click.pass_context
def infer(
    ctx,
    logs,
    out_dir,
    read,
    engine,
    prefix,
    seed,
    synoptic_jar,
    collapse_repeats,
    end_rule,
    n_boot,
    confidence,
    svg,
    title,
    max_states,
    selections,
    dask_spec,
):
    """Infer the state machine of LOG files (or folders) and report where the time goes.

    Prints the per-state table; with --out DIR writes states.csv, transitions.csv,
    model.dot, model.json and model.svg. With --engine synoptic it accepts Synoptic's
    arguments (-r, -s, -m, -o PREFIX, --randomSeed=N, ...) and writes Synoptic's files.
    """
    if "tool_args" in ctx.meta:
        run_synoptic_engine(engine, ctx.meta["tool_args"], synoptic_jar)
        return
    extra = [a for a in list(logs) + ctx.args if a.startswith("-")]
    logs = [a for a in logs if not a.startswith("-")]
    if extra:
        raise UsageError(f"unknown option(s) {' '.join(extra)}{unknown_hint(ctx, extra)}")
    if prefix:
        raise UsageError("-o PREFIX is for --engine synoptic; use --out DIR")
    if not logs:
        raise UsageError("no LOG given")
    from ..commands import infer_to_dir
    from ..stats.options import StatsOptions

    with dask_session(dask_spec, [logs]) as client:
        out = infer_to_dir(
            logs,
            out_dir,
            read=read,
            selections=selections,
            stats=StatsOptions(
                collapse_repeats=collapse_repeats,
                end=end_rule,
                n_boot=n_boot,
                seed=seed,
                confidence=confidence,
                max_states=max_states,
            ),
            svg=svg,
            title=title,
            client=client,
            command_line=command_line(),
        )
    print_warnings(out.warnings)
    print_model(out, out_dir)


def print_model(out: InferOutput, out_dir: Path | None) -> None:
    """Print what :func:`~statemine.commands.infer_to_dir` computed: the states table on
    stdout, notes and the files written on stderr."""
    from ..commands import PRINTED_STATES

    shown = {c: v[:PRINTED_STATES] for c, v in out.states.items()}
    _print_states(shown, out.n_traces, out.n_events, out.confidence)
    for note in out.notes:
        click.echo(f"statemine: note: {note}", err=True)
    if out.written:
        click.echo(f"wrote {', '.join(out.written)} to {out_dir}", err=True)


@main.command("read")
@click.argument("logs", nargs=-1, required=True)
@out_option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    required=True,
    help="The Parquet file to write.",
)
@_input_options
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="KEY=VALUE",
    help="Label every trace (a column of the traces table), e.g. environment=mobile.",
)
@_SELECT_OPTION
def read_command(
    logs,
    out,
    read,
    labels,
    selections,
):
    """Parse LOG files into one saved trace set (Parquet), for notebooks and `statemine diff`."""
    from ..commands import read_to_file

    pairs = key_values(labels, "--label")
    written = read_to_file(logs, out, read, labels=pairs or None, selections=selections)
    print_warnings(written.warnings)
    click.echo(
        f"wrote {written.n_traces} traces, {written.n_events} events to {written.path}", err=True
    )


def unknown_hint(ctx: click.Context, unknown: Sequence[str]) -> str:
    """What to say after ``unknown option(s) ...`` of ``infer``: the closest of its own
    options (difflib), or that a flag is one of the Synoptic-family tools' (they take it
    under ``--engine``); empty when neither applies.

    A Synoptic flag is ``-x`` (its short letter) or ``-name``/``--name`` (its long name
    or an alias), as the tools read them (:mod:`statemine.infer.synoptic.options`)."""
    import difflib
    import re

    from ..infer.synoptic.options import OPTIONS

    own = sorted({n for p in ctx.command.get_params(ctx) for n in (*p.opts, *p.secondary_opts)})
    tool_names = {n for o in OPTIONS for n in (o.name, *o.aliases, o.short) if n}
    hints = []
    for arg in unknown:
        flag = arg.split("=", 1)[0]
        close = difflib.get_close_matches(flag, own, n=1, cutoff=0.75)
        m = re.fullmatch(r"--?([A-Za-z][\w-]*)", flag)
        if close:
            hints.append(f"did you mean {close[0]}?")
        elif m and m.group(1) in tool_names:
            hints.append(f"{flag} is a Synoptic-family flag: add --engine synoptic|ktails|perfume")
    return f" ({'; '.join(dict.fromkeys(hints))})" if hints else ""


def _print_states(
    states: dict, n_traces: int, n_events: int | tuple[int, int], confidence: float
) -> None:
    """The states table (columns: name -> array) as a rich table on stdout. ``n_events``:
    the rows read, or (rows, events in the files) for qlog, whose files log far more
    events (packets) than statemine keeps as rows."""
    from .. import units
    from ..escape import rich_cell
    from .console import print_table

    if isinstance(n_events, tuple):
        counted = f"{n_events[0]} rows from {n_events[1]} events in the files"
    else:
        counted = f"{n_events} events"
    columns = (
        "state",
        "time_fraction",
        "time_fraction_lo",
        "time_fraction_hi",
        "visits",
        "dwell_mean",
        "dwell_median",
        "dwell_p95",
    )
    rows = [
        (
            rich_cell(state),
            units.share(frac),
            units.share_interval(lo, hi),
            str(visits),
            units.seconds(mean),
            units.seconds(median),
            units.seconds(p95),
        )
        for state, frac, lo, hi, visits, mean, median, p95 in zip(*(states[c] for c in columns))
    ]
    ci = f"{confidence:.0%} CI"
    print_table(
        make_console(),
        ("state", "time", ci, "visits", "dwell mean", "dwell median", "dwell p95"),
        rows,
        title=f"Time per state ({n_traces} traces, {counted})",
        right=range(1, 7),
    )
