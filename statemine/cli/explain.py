"""``statemine explain``: why two sets of traces differ (rate or dwell, triggers, spurious
losses, knobs)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..commands import explain_to_dir
from . import command_line, main
from .compare import _select_options, _side_options, _stat_options
from .console import make_console, print_table
from .infer import _input_options, print_warnings

if TYPE_CHECKING:
    from ..explain import ExplainResult


@main.command("explain")
@click.argument("a")
@click.argument("b")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    help="Write explain.csv, triggers.csv and explain.md here.",
)
@_stat_options
@_select_options
@_input_options
def explain_command(a, b, out_dir, **opts):
    """Explain why traces B differ from traces A (the inputs and options of 'diff').

    For each state whose share changed significantly: how much comes from how often it is
    entered and how much from how long each visit lasts; which events led into it (loss
    declarations by rule, spurious or real, ...) and how their rates changed; and which
    knob governs them. Prints one paragraph per changed state and the rate/dwell table.
    """
    out = explain_to_dir(
        a, b, out_dir, read=opts["read"], command_line=command_line(), **_side_options(opts)
    )
    print_warnings(out.warnings)
    print_explanation(out.result)
    if out.written:
        click.echo(f"wrote {', '.join(out.written)} to {out_dir}", err=True)


def print_explanation(result: ExplainResult) -> None:
    """Print the summary paragraphs and the changed states' rate/dwell split."""
    from ..escape import one_line, rich_cell
    from ..output.explain_md import changed_cells

    console = make_console()
    changed = result.states[result.states["changed"]]
    rows = [(rich_cell(cells[0]), *cells[1:]) for cells in changed_cells(changed)]
    title = (
        f"{result.label_a} vs {result.label_b}: {len(changed)} changed state(s) "
        f"(Holm, alpha={result.alpha:g})"
    )
    if rows:
        from ..output.explain_md import CHANGED_HEADERS

        print_table(console, CHANGED_HEADERS, rows, title=title, right=(1, 2, 3, 4, 5, 6, 7))
    else:
        console.print(title, markup=False, highlight=False)
    for paragraph in result.summary:
        console.print(one_line(paragraph), markup=False, highlight=False)
    for note in result.notes:
        console.print(f"note: {one_line(note)}", markup=False, highlight=False)
