"""``statemine diff`` and ``statemine report``: compare two sets of traces; one HTML page."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..commands import CompareOptions, diff_to_dir, report_to_file
from ..errors import UsageError
from . import command_line, main
from .console import make_console, print_table
from .dask_option import DASK_OPTION, dask_session
from .infer import _input_options, print_warnings
from .options import (
    alpha_option,
    bootstrap_option,
    collapse_repeats_option,
    end_option,
    permutations_option,
    seed_option,
    with_options,
)

if TYPE_CHECKING:
    from ..compare import DiffResult

_stat_options = with_options(
    [
        click.option(
            "--label-a", help="Name of side A in tables and diagrams (default: A's file name)."
        ),
        click.option("--label-b", help="Name of side B (default: B's file name)."),
        permutations_option(),
        bootstrap_option(
            default=2000,
            minimum=0,
            help="Bootstrap resamples for the intervals of the differences (0: none).",
        ),
        alpha_option(
            default=0.05, help="Family-wise error rate (Holm) of the state and transition tests."
        ),
        click.option(
            "--test",
            "transition_test",
            type=click.Choice(["chi2", "g"]),
            default="chi2",
            show_default=True,
            help="Large-count test of the transitions (small counts use Fisher's exact test).",
        ),
        seed_option(),
        click.option(
            "--strata",
            multiple=True,
            metavar="LABEL",
            help="Trace label to stratify by (repeatable), e.g. implementation: relabel and "
            "resample only within each stratum.",
        ),
        collapse_repeats_option(),
        end_option(),
    ]
)

_select_options = with_options(
    [
        click.option(
            "--select",
            "select_both",
            multiple=True,
            metavar="LABEL=VALUE",
            help="Keep only traces with this label value, on both sides (repeatable), "
            "e.g. role=server.",
        ),
        click.option(
            "--select-a",
            multiple=True,
            metavar="LABEL=VALUE",
            help="Like --select, for side A only.",
        ),
        click.option(
            "--select-b",
            multiple=True,
            metavar="LABEL=VALUE",
            help="Like --select, for side B only.",
        ),
    ]
)


def _side_options(opts: dict) -> dict[str, Any]:
    """The side labels, both sides' selections and the statistics' options of the CLI
    options (the keywords of :func:`~statemine.commands.check_sides`)."""
    both = opts["select_both"]
    return dict(
        label_a=opts["label_a"],
        label_b=opts["label_b"],
        select_a=both + opts["select_a"],
        select_b=both + opts["select_b"],
        compare=_compare_options(opts),
    )


def _compare_options(opts: dict) -> CompareOptions:
    """The statistics' options of the CLI options."""
    return CompareOptions(
        n_perm=opts["n_perm"],
        n_boot=opts["n_boot"],
        seed=opts["seed"],
        alpha=opts["alpha"],
        transition_test=opts["transition_test"],
        collapse_repeats=opts["collapse_repeats"],
        end=opts["end_rule"],
        strata=tuple(opts["strata"]),
    )


@main.command("diff")
@click.argument("a")
@click.argument("b")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="Write states_diff.csv, transitions_diff.csv, one_sided.csv, notes.txt, diff.dot, diff.svg here.",
)
@_stat_options
@_select_options
@_input_options
@click.option(
    "--svg/--no-svg", default=True, show_default=True, help="Also render diff.svg (needs Graphviz)."
)
@click.option(
    "--top",
    type=click.IntRange(1),
    default=10,
    show_default=True,
    help="Changes listed in the summary.",
)
@click.option("--title", help="Title drawn on the diagram.")
@DASK_OPTION
def diff_command(a, b, out_dir, svg, top, title, dask_spec, **opts):
    """Compare traces A with traces B: log files, folders, saved .parquet trace sets, or
    'statemine lab' output folders (pick conditions with --select-a/--select-b).

    Per state: pooled time fractions, their difference with a bootstrap interval over
    traces, a permutation-test p-value over traces and Holm's correction. Per edge:
    probabilities and a per-source chi-square/G or Fisher test. Prints the largest
    significant changes.
    """
    out = diff_to_dir(
        a,
        b,
        out_dir,
        svg=svg,
        title=title,
        read=opts["read"],
        connect=partial(dask_session, dask_spec, [a, b]),  # after every option is checked
        command_line=command_line(),
        **_side_options(opts),
    )
    print_warnings(out.warnings)
    print_summary(out.result, top=top)
    click.echo(f"wrote {', '.join(out.written)} to {out_dir}", err=True)


def print_summary(result: DiffResult, *, top: int = 10) -> None:
    """Print the ranking of the largest significant changes (with the states' bootstrap
    intervals), the evidence verdict (power, pseudo-replicates) and the notes (rich)."""
    from .. import units
    from ..escape import TERMINAL_CHARS, display_name, one_line, rich_cell

    console = make_console()
    ranking = result.ranking(top)
    header = (
        f"{result.label_a} ({result.n_traces_a} traces) vs {result.label_b} "
        f"({result.n_traces_b} traces): {len(result.ranking(None))} significant change(s) "
        f"(Holm, alpha={result.alpha:g})"
    )
    headers = ("kind", "name", result.label_a, result.label_b, "B - A [95% CI]", "p (Holm)")
    rows = []
    row: Any  # a frame row: pandas-stubs types every field as any scalar
    for row in ranking.itertuples(index=False):
        cells = units.ranking_cells(row.kind, row.a, row.b, row.delta, row.delta_lo, row.delta_hi)
        rows.append((row.kind, rich_cell(row.name), *cells, units.p_value(row.p_holm)))
    if len(ranking):
        print_table(console, headers, rows, title=header, right=(2, 3, 4, 5))
    else:
        console.print(header, markup=False, highlight=False)
    console.print(
        f"power: smallest possible p {result.min_p:.3g}, {result.min_p_holm:.3g} after Holm over the "
        "states" + (": UNDERPOWERED, no state can be significant" if result.underpowered else ""),
        markup=False,
        highlight=False,
    )
    if result.pseudo_replicated:
        names = ", ".join(display_name(n, TERMINAL_CHARS) for n in result.pseudo_replicated)
        console.print(
            f"pseudo-replicates (identical runs, never significant): {names}",
            markup=False,
            highlight=False,
        )
    for note in result.notes:
        console.print(f"note: {one_line(note)}", markup=False, highlight=False)


@main.command("report")
@click.argument("a")
@click.argument("b", required=False)
@click.option(
    "--out",
    "out_file",
    required=True,
    type=click.Path(path_type=Path),
    help="The HTML file to write (self-contained: reads offline).",
)
@click.option("--title", help="Title of the page.")
@_stat_options
@_select_options
@_input_options
@click.option(
    "--results",
    "results_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A results table (results.csv/.parquet of 'statemine lab') to compare outcomes per cell.",
)
@click.option("--by", help="Results column telling the sides apart (e.g. profile, stack).")
@click.option(
    "--values", metavar="VA,VB", help="Values of --by for side A and B (default: the side labels)."
)
@click.option(
    "--metric",
    default="plt_s",
    show_default=True,
    help="Outcome metric column (plt_s, throughput_bps, ...).",
)
@click.option(
    "--rows",
    help="Heatmap rows (a scenario column; default: of the columns that vary, rate_mbps, "
    "else object_size_bytes, else a numeric one).",
)
@click.option(
    "--cols",
    help="Heatmap columns (a scenario column; default: the next varying column). Fewer than "
    "two varying columns: no heatmap.",
)
@click.option(
    "--outcome-alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.01,
    show_default=True,
    help="Significance threshold of Welch's test per cell (the paper's 0.01).",
)
@DASK_OPTION
def report_command(
    a,
    b,
    out_file,
    title,
    results_path,
    by,
    values,
    metric,
    rows,
    cols,
    outcome_alpha,
    dask_spec,
    **opts,
):
    """Write one self-contained HTML page about traces A, or comparing A with B: tables,
    state machine (or the two-sided diff diagram), cwnd timelines and, with --results,
    outcome heatmaps (Welch's t-test per scenario cell)."""
    if values:
        parts = values.split(",")
        if len(parts) != 2 or not all(parts):
            raise UsageError(f"--values wants two comma-separated values, not {values!r}")
        values = tuple(parts)
    path, warnings = report_to_file(
        a,
        b,
        out_file,
        title=title,
        results=results_path,
        by=by,
        values=values,
        metric=metric,
        rows=rows,
        cols=cols,
        outcome_alpha=outcome_alpha,
        read=opts["read"],
        connect=partial(dask_session, dask_spec, [a] + ([b] if b else [])),  # after the checks
        command_line=command_line(),
        **_side_options(opts),
    )
    print_warnings(warnings)
    click.echo(f"wrote {path}", err=True)
