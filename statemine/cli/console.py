"""The terminal the CLI prints its tables on: one width rule for every command.

On a terminal, tables fit its width (rich wraps cells, long words fold); piped or
redirected output (not a tty), or ``--wide``, gets every table at its full natural width
and long lines unwrapped, so files and ``grep`` see whole rows.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console
    from rich.table import Table

#: Width used when output is not fitted to a terminal (wider than any table statemine prints).
UNFITTED_WIDTH = 4000


def make_console(*, wide: bool = False) -> Console:
    """A rich console for stdout: the terminal's width on a tty, else (or ``wide``) unfitted."""
    from rich.console import Console

    console = Console(emoji=False)
    if wide or not console.is_terminal:
        return Console(emoji=False, width=UNFITTED_WIDTH, height=100)  # both: rich ignores a
        # width alone on a "dumb" terminal
    return console


def text_table(
    headers: Sequence[object],
    rows: Iterable[Sequence[object]],
    *,
    title: object = None,
    right: Collection[int] = (),
    no_wrap: bool = False,
    box: bool = True,
) -> Table:
    """A rich table of text whose title, headers and cells are all shown literally (no
    markup, controls made visible: :func:`statemine.escape.rich_cell`, not shortened; a
    cell that is a rich ``Text`` already is kept as it is);
    the columns at the indices ``right`` are right-aligned, the others left; long cells
    fold unless ``no_wrap``."""
    from rich import box as boxes
    from rich.table import Table
    from rich.text import Text

    from ..escape import rich_cell

    table = Table(
        title=None if title is None else rich_cell(title, None),
        title_justify="left",
        box=boxes.HEAVY_HEAD if box else None,
    )
    for i, header in enumerate(headers):
        table.add_column(
            rich_cell(header, None),
            justify="right" if i in right else "left",
            overflow="fold",
            no_wrap=no_wrap,
        )
    for row in rows:
        table.add_row(*(c if isinstance(c, Text) else rich_cell(c, None) for c in row))
    return table


def print_frame(
    frame: pd.DataFrame,
    *,
    title: object = None,
    right: Collection[int] = (),
    wide: bool = False,
    box: bool = True,
) -> None:
    """Print a DataFrame's cells as text (:func:`text_table`) on stdout (:func:`make_console`)."""
    rows = frame.astype(str).itertuples(index=False)
    make_console(wide=wide).print(
        text_table(list(frame.columns), rows, title=title, right=right, box=box)
    )
