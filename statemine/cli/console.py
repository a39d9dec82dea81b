"""The terminal the CLI prints its tables on: one width rule for every command.

On a terminal, tables fit its width (rich wraps cells, long words fold); piped or
redirected output (not a tty), or ``--wide``, gets every table at its full natural width
and long lines unwrapped, so files and ``grep`` see whole rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

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
