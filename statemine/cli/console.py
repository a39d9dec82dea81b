"""The terminal the CLI prints its tables on: one width rule for every command.

On a terminal, tables fit its width without ever splitting a token (a name, a number with
its unit, a bracketed interval): cells wrap only between tokens, and columns that do not
fit even then move to a further table that repeats the first (key) column. Piped or
redirected output (not a tty), or ``--wide``, gets every table at its full natural width
and long lines unwrapped, so files and ``grep`` see whole rows (``--csv`` where a command
has it is the form for programs).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console
    from rich.table import Table

#: Width used when output is not fitted to a terminal (wider than any table statemine prints).
UNFITTED_WIDTH = 4000

#: Words that belong to the number before them: a line never starts with one.
UNITS = frozenset({"%", "pp", "s", "ms", "us", "ns", "B", "KB", "MB", "GB", "KiB", "MiB", "GiB"})
_OPEN, _CLOSE = "[(", "])"


def make_console(*, wide: bool = False) -> Console:
    """A rich console for stdout: the terminal's width on a tty, else (or ``wide``) unfitted."""
    from rich.console import Console

    console = Console(emoji=False)
    if wide or not console.is_terminal:
        return Console(emoji=False, width=UNFITTED_WIDTH, height=100)  # both: rich ignores a
        # width alone on a "dumb" terminal
    return console


def tokens(text: str) -> list[str]:
    """The unbreakable pieces of a cell: its space-separated words, with a unit joined to
    the number before it and a bracketed group (``[+34.5, +57.7]``, ``(0.041)``) kept whole.

    >>> tokens("+46.8 [+34.5, +57.7] pp")
    ['+46.8', '[+34.5, +57.7] pp']
    >>> tokens("153.8 ms / 160.2 ms (4.9e-20)")
    ['153.8 ms', '/', '160.2 ms', '(4.9e-20)']
    """
    out: list[str] = []
    depth = 0
    for word in re.split(r" +", text.strip()):
        if not word:
            continue
        joined = out and (depth > 0 or word in UNITS)
        depth = max(
            0, depth + sum(word.count(c) for c in _OPEN) - sum(word.count(c) for c in _CLOSE)
        )
        if joined:
            out[-1] += " " + word
        else:
            out.append(word)
    return out


def wrap(text: str, width: int) -> list[str]:
    """``text``'s lines: each paragraph's :func:`tokens` filled greedily into lines of at
    most ``width`` characters; a token longer than ``width`` stands alone on its line
    (never cut).

    >>> wrap("153.8 ms / 160.2 ms (0.041)", 10)
    ['153.8 ms /', '160.2 ms', '(0.041)']
    """
    from rich.cells import cell_len

    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for token in tokens(paragraph) or [""]:
            if line and cell_len(line) + 1 + cell_len(token) > width:
                lines.append(line)
                line = token
            else:
                line = f"{line} {token}" if line else token
        lines.append(line)
    return lines


def _widths(natural: list[int], least: list[int], room: int) -> list[int]:
    """Column widths summing to at most ``room`` where possible: each column at its
    ``natural`` width, the widest shrunk first, none below its ``least``."""
    widths = list(natural)
    while sum(widths) > room:
        slack = [w - m for w, m in zip(widths, least)]
        i = max(range(len(widths)), key=lambda j: (slack[j] > 0, widths[j]))
        if slack[i] <= 0:
            break
        widths[i] -= 1
    return widths


def _groups(least: list[int], room: int, per_column: int, key: int) -> list[list[int]]:
    """The columns of each table, in order: the first ``key`` in every table, the others
    packed while their ``least`` widths (plus ``per_column`` of rules and padding each) fit
    in ``room``; a column too wide for any table gets one of its own."""
    fixed = list(range(min(key, len(least))))
    base = sum(least[i] + per_column for i in fixed)
    groups: list[list[int]] = []
    current: list[int] = []
    used = base
    for i in range(len(fixed), len(least)):
        if current and used + least[i] + per_column > room:
            groups.append(fixed + current)
            current, used = [], base
        current.append(i)
        used += least[i] + per_column
    groups.append(fixed + current)
    return groups


def text_tables(
    headers: Sequence[object],
    rows: Iterable[Sequence[object]],
    *,
    width: int = UNFITTED_WIDTH,
    title: object = None,
    right: Collection[int] = (),
    no_wrap: bool = False,
    box: bool = True,
    key: int = 1,
) -> list[Table]:
    """Tables of text whose title, headers and cells are all shown literally (no markup,
    controls made visible: :func:`statemine.escape.rich_cell`, not shortened), that fit
    ``width`` terminal cells without splitting a token (:func:`tokens`): cells wrap between
    tokens (not at all with ``no_wrap``), and columns that do not fit move to a further
    table repeating the first ``key`` columns. The columns at the indices ``right`` are
    right-aligned, the others left. At :data:`UNFITTED_WIDTH` one table at natural width."""
    from rich import box as boxes
    from rich.cells import cell_len
    from rich.table import Table
    from rich.text import Text

    from ..escape import rich_cell

    def plain(cell: object) -> str:
        return cell.plain if hasattr(cell, "plain") else rich_cell(cell, None).plain

    head = [plain(h) for h in headers]
    body = [[plain(c) for c in row] for row in rows]
    columns = [[h, *(r[i] for r in body)] for i, h in enumerate(head)]
    natural = [max(cell_len(line) for c in col for line in c.split("\n")) for col in columns]
    least = [
        n if no_wrap else max(cell_len(t) for c in col for t in tokens(c) or [""])
        for n, col in zip(natural, columns)
    ]
    per_column = 3 if box else 2  # padding 1 + 1, and one rule between boxed columns
    room = width - (1 if box else 0)
    if width >= UNFITTED_WIDTH:
        groups = [list(range(len(head)))]
    else:
        groups = _groups(least, room, per_column, key)
    tables = []
    for n, group in enumerate(groups):
        sized = _widths(
            [natural[i] for i in group], [least[i] for i in group], room - per_column * len(group)
        )
        table = Table(
            title=Text(plain(title)) if title is not None and n == 0 else None,
            title_justify="left",
            box=boxes.HEAVY_HEAD if box else None,
        )
        for i, w in zip(group, sized):
            table.add_column(
                Text("\n".join(wrap(head[i], w))),
                justify="right" if i in right else "left",
                no_wrap=True,
                overflow="fold",
                min_width=w,
                max_width=max(w, least[i]),
            )
        for row in body:
            table.add_row(*(Text("\n".join(wrap(row[i], w))) for i, w in zip(group, sized)))
        tables.append(table)
    return tables


def print_table(
    console: Console,
    headers: Sequence[object],
    rows: Iterable[Sequence[object]],
    *,
    title: object = None,
    right: Collection[int] = (),
    no_wrap: bool = False,
    box: bool = True,
) -> None:
    """Print :func:`text_tables` fitted to ``console``'s width, one after the other."""
    for table in text_tables(
        headers, rows, width=console.width, title=title, right=right, no_wrap=no_wrap, box=box
    ):
        console.print(table)


def print_frame(
    frame: pd.DataFrame,
    *,
    title: object = None,
    right: Collection[int] = (),
    wide: bool = False,
    box: bool = True,
) -> None:
    """Print a DataFrame's cells as text (:func:`text_tables`) on stdout (:func:`make_console`)."""
    rows = frame.astype(str).itertuples(index=False)
    print_table(
        make_console(wide=wide), list(frame.columns), rows, title=title, right=right, box=box
    )
