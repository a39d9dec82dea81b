"""``statemine infer`` and ``statemine read``: logs in; tables, model and diagram out."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import click

from ..errors import UsageError
from . import main
from .synoptic import ToolCommand, run_synoptic_engine

#: The files ``infer --out DIR`` writes (the folder is replaced as a whole set).
INFER_OUTPUTS = ("states.csv", "transitions.csv", "model.dot", "model.json", "model.svg")
#: Rows of the states table printed on the terminal (the CSV has every state).
PRINTED_STATES = 200

_INPUT_OPTIONS = [
    click.option(
        "--format",
        "fmt",
        type=click.Choice(["auto", "statemine", "qlog", "regex", "parquet"]),
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


def _input_options(func):
    for option in reversed(_INPUT_OPTIONS):
        func = option(func)
    return func


_SELECT_OPTION = click.option(
    "--select",
    "selections",
    multiple=True,
    metavar="LABEL=VALUE",
    help="Keep only traces with this label value (repeatable), e.g. role=server profile=mobile.",
)


def read_inputs(
    logs,
    fmt,
    regexes,
    separator,
    mapping,
    ignore_nonmatching,
    names_file,
    implementation,
    derive_states,
    labels=None,
    selections=(),
):
    """Read the CLI's inputs with :func:`statemine.parse.read` (shared by several commands),
    then keep the traces matching every ``LABEL=VALUE`` of ``selections``."""
    from ..parse import read

    names = None
    if names_file is not None:
        from ..parse.statenames import load_names

        names = load_names(names_file)
    ts = read(
        list(logs),
        fmt,
        regex=list(regexes) or None,
        separator=separator,
        mapping=mapping,
        ignore_nonmatching=ignore_nonmatching,
        names=names,
        implementation=implementation,
        derive_states=derive_states,
        labels=labels,
        progress=True,
        strict=click.get_current_context().meta.get("strict", False),
    )
    _print_warnings(ts.meta.get("warnings"))
    return select_traces(ts, selections, " ".join(map(str, logs)))


def _print_warnings(warnings: str | None, limit: int = 10) -> None:
    """Show the readers' warnings (a JSON list in ``TraceSet.meta``) on stderr."""
    if not warnings:
        return
    items = json.loads(warnings)
    from ..escape import one_line

    for item in items[:limit]:
        click.echo(f"statemine: warning: {one_line(item)}", err=True)
    if len(items) > limit:
        click.echo(f"statemine: warning: ... and {len(items) - limit} more", err=True)


def select_traces(ts, selections, where: str):
    """``ts.select`` for ``LABEL=VALUE`` strings, with a clear error for an unknown label
    or when nothing matches (``where`` names the input in the message)."""
    if not selections:
        return ts
    wanted = {}
    for item in selections:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"a selection is LABEL=VALUE, not {item!r}")
        if key not in ts.traces.columns:
            labels = ", ".join(c for c in ts.traces.columns if c not in ("trace", "source", "end"))
            raise UsageError(
                f"{where}: the traces have no label {key!r} (labels: {labels or 'none'})"
            )
        wanted[key] = value
    kept = ts.select(wanted)
    if kept.n_traces == 0:
        values = {k: sorted(ts.traces[k].astype(str).unique())[:8] for k in wanted}
        raise UsageError(f"{where}: no trace matches {' '.join(selections)} (values: {values})")
    return kept


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
    "invariant mining. These take the original tool's command line (see docs/synoptic-engine.md).",
)
@click.option(
    "-o",
    "--output-prefix",
    "prefix",
    metavar="PREFIX",
    help="Synoptic engines: write PREFIX.dot, PREFIX.invariants.txt, PREFIX.json.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the bootstrap / Synoptic refinement.",
)
@click.option(
    "--synoptic-jar",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="STATEMINE_SYNOPTIC_JAR",
    help="A real synoptic.jar, for --engine synoptic-jar.",
)
@click.option(
    "--collapse-repeats", is_flag=True, help="Merge a state logged again while already in it."
)
@click.option(
    "--end",
    "end_rule",
    type=click.Choice(["close", "last-state"]),
    default="close",
    show_default=True,
    help="Where a trace's last state ends: its Close line / last line, or its own line.",
)
@click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(0),
    default=1000,
    show_default=True,
    help="Bootstrap resamples for the confidence intervals (0: none).",
)
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True)
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
@click.pass_context
def infer(
    ctx,
    logs,
    out_dir,
    fmt,
    regexes,
    separator,
    mapping,
    ignore_nonmatching,
    names_file,
    implementation,
    derive_states,
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
        raise UsageError(
            f"unknown option(s) {' '.join(extra)} (Synoptic's flags need --engine synoptic)"
        )
    if prefix:
        raise UsageError("-o PREFIX is for --engine synoptic; use --out DIR")
    if not logs:
        raise UsageError("no LOG given")

    if out_dir is not None:
        from ..fileio import check_out_dir

        check_out_dir(out_dir, INFER_OUTPUTS)
    opts = dict(
        collapse_repeats=collapse_repeats,
        end=end_rule,
        n_boot=n_boot,
        seed=seed,
        confidence=confidence,
        max_states=max_states,
    )
    files = _streamable(logs, fmt, regexes, selections)
    if files:
        states, transitions, dwell, n_traces, n_events = _summarize_streamed(files, opts)
    else:
        from ..analyze import summarize

        ts = read_inputs(
            logs,
            fmt,
            regexes,
            separator,
            mapping,
            ignore_nonmatching,
            names_file,
            implementation,
            derive_states,
            selections=selections,
        )
        frames = summarize(ts, **opts)
        states, transitions = ({c: f[c].to_numpy() for c in f.columns} for f in frames)
        dwell, n_traces, n_events = frames[0].attrs["dwell_quantiles"], ts.n_traces, len(ts.events)
        file_events = ts.traces.get("file_events")  # qlog: the files' own events, of any kind
        if file_events is not None and file_events.notna().all():
            n_events = (n_events, int(file_events.sum()))

    from ..fileio import write_set
    from ..infer.observed import model_from_stats, model_to_json
    from ..render import DRAWN_STATES, dot_to, graphviz_available, to_dot

    shown = {c: v[:PRINTED_STATES] for c, v in states.items()}
    _print_states(shown, n_traces, n_events, confidence)
    if len(states["state"]) > PRINTED_STATES:
        click.echo(
            f"statemine: note: {len(states['state']) - PRINTED_STATES} more states (least time) "
            "not printed; states.csv (--out) has every one",
            err=True,
        )
    if dwell != "exact":
        click.echo(
            f"statemine: note: dwell medians and p95 are {dwell}: too many visits to keep every "
            "dwell time",
            err=True,
        )
    if not states["time_s"].sum() > 0:
        click.echo(
            "statemine: note: the traces last no time (one state line each, or all at one "
            "instant), so time fractions are undefined (n/a); visits and transitions stand",
            err=True,
        )
    if out_dir is None:
        return
    G = model_from_stats(states, transitions)
    dot = to_dot(G, title=title)
    outputs: dict[str, bytes | str] = {
        "states.csv": to_csv(states),
        "transitions.csv": to_csv(transitions),
        "model.dot": dot,
        "model.json": model_to_json(G),
    }
    if svg and len(states["state"]) > DRAWN_STATES:
        click.echo(
            f"statemine: note: model.svg not drawn: {len(states['state'])} states are more than "
            f"Graphviz lays out in reasonable time ({DRAWN_STATES}); model.dot has the model",
            err=True,
        )
    elif svg and graphviz_available():
        outputs["model.svg"] = dot_to(dot, "svg")
    elif svg:
        click.echo("statemine: Graphviz's dot is not installed; model.svg not written", err=True)
    write_set(out_dir, outputs, owned=INFER_OUTPUTS)
    click.echo(f"wrote {', '.join(outputs)} to {out_dir}", err=True)


def to_csv(columns: dict) -> str:
    """A table given as columns (name -> array) as CSV text, formatted as pandas'
    ``DataFrame.to_csv(index=False)`` formats it: shortest round-trip floats, NaN empty;
    text cells a spreadsheet would run as a formula get a leading ``'``
    (:func:`statemine.escape.csv_cell`)."""
    import csv
    import io

    import numpy as np

    from ..escape import csv_cell

    def cell(value) -> str:
        if isinstance(value, (float, np.floating)):
            return "" if value != value else repr(float(value))
        if isinstance(value, str):
            return csv_cell(value)
        return str(value)

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([cell(v) for v in row] for row in zip(*columns.values()))
    return out.getvalue()


def _streamable(logs, fmt: str, regexes, selections) -> list[Path]:
    """The input files when they are all statemine logs that need no trace selection, so
    the statistics can be streamed (:mod:`statemine.stream`); else an empty list."""
    from ..parse import detect_format, expand_paths

    if regexes or selections or fmt not in ("auto", "statemine"):
        return []
    files = expand_paths(list(logs))
    if fmt == "auto" and any(detect_format(f) != "statemine" for f in files):
        return []
    return files


def _summarize_streamed(files: list[Path], opts: dict):
    """:func:`statemine.stream.summarize_logs` as columns (no pandas), arranged so the work
    overlaps the imports: the scan runs on one thread (C, without the GIL), the fold on
    another (numpy), while this one loads the output's libraries."""
    from ..parse import progress_reporter
    from ..parse.statemine_log import scan_files
    from ..stream import fold_scanned

    fold_opts = {k: v for k, v in opts.items() if k in ("collapse_repeats", "end", "max_states")}
    tables = {k: v for k, v in opts.items() if k not in fold_opts}
    gc.disable()  # imports make many objects and no garbage; collecting them is wasted time
    try:
        with progress_reporter(files, True) as advance:
            folded = _in_background(
                fold_scanned, scan_files(files, advance), files=files, **fold_opts
            )
            _import_output_modules()
            folded = folded()
    finally:
        gc.enable()
    states, transitions = folded.stats.columns(folded.names, **tables)
    return states, transitions, folded.stats.dwell.accuracy, folded.n_traces, folded.n_events


def _in_background(fn, *args, **kwargs):
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
    import rich.console
    import rich.table  # noqa: F401

    from .. import render  # noqa: F401
    from ..infer import observed  # noqa: F401


@main.command("read")
@click.argument("logs", nargs=-1, required=True)
@click.option(
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
    output,
    fmt,
    regexes,
    separator,
    mapping,
    ignore_nonmatching,
    names_file,
    implementation,
    derive_states,
    labels,
    selections,
):
    """Parse LOG files into one saved trace set (Parquet), for notebooks and `statemine diff`."""
    from ..traces import save

    pairs = {}
    for item in labels:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise UsageError(f"--label takes KEY=VALUE, not {item!r}")
        pairs[key] = value
    ts = read_inputs(
        logs,
        fmt,
        regexes,
        separator,
        mapping,
        ignore_nonmatching,
        names_file,
        implementation,
        derive_states,
        labels=pairs or None,
        selections=selections,
    )
    save(ts, output)
    click.echo(f"wrote {ts.n_traces} traces, {len(ts.events)} events to {output}", err=True)


def _print_states(
    states: dict, n_traces: int, n_events: int | tuple[int, int], confidence: float
) -> None:
    """The states table (columns: name -> array) as a rich table on stdout. ``n_events``:
    the rows read, or (rows, events in the files) for qlog, whose files log far more
    events (packets) than statemine keeps as rows."""
    from rich.console import Console
    from rich.table import Table

    from ..escape import rich_cell

    if isinstance(n_events, tuple):
        counted = f"{n_events[0]} rows from {n_events[1]} events in the files"
    else:
        counted = f"{n_events} events"
    table = Table(title=f"Time per state ({n_traces} traces, {counted})")
    ci = f"{confidence:.0%} CI"
    table.add_column("state", no_wrap=True)
    for col in ("time", ci, "visits", "dwell mean", "dwell median", "dwell p95"):
        table.add_column(col, justify="right")
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
    for state, share, lo, hi, visits, mean, median, p95 in zip(*(states[c] for c in columns)):
        interval = "" if lo != lo else f"{lo:.1%}-{hi:.1%}"
        table.add_row(
            rich_cell(state),
            "n/a" if share != share else f"{share:.1%}",
            interval,
            str(visits),
            _secs(mean),
            _secs(median),
            _secs(p95),
        )
    console = Console(emoji=False)
    if not console.is_terminal:  # files and pipes: no terminal width to respect
        console = Console(width=120, emoji=False)
    console.print(table)


def _secs(value: float) -> str:
    """Seconds with a readable unit."""
    if value != value:
        return "n/a"
    if value >= 1:
        return f"{value:.2f} s"
    return f"{value * 1e3:.1f} ms"
