"""What the command's two paths share: :mod:`statemine.launch` (the entry point, which runs
``infer --engine synoptic|...`` without click) and :mod:`statemine.cli` (click) end the
same way: one-line errors with exit 2, a closed stdout ended quietly, one BLAS thread, and
the Synoptic-family ``--engine`` argument read from a raw command line. Below both, so
neither imports the other for these."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from .errors import StatemineError

#: ``click.echo``'s signature as used here: (message, nl=True, err=False).
Echo = Callable[..., None]


def single_blas_thread() -> None:
    """One OpenBLAS thread unless the user chose: the commands' matrix products are small
    and its worker threads would spin beside the reader's; before numpy loads."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def engine_in(args: Sequence[str]) -> str | None:
    """The value of ``--engine`` in raw ``args`` (``--engine X`` or ``--engine=X``).

    >>> engine_in(["-r", "x", "--engine=ktails", "a.log"]), engine_in(["a.log"])
    ('ktails', None)
    """
    for k, arg in enumerate(args):
        if arg == "--engine" and k + 1 < len(args):
            return args[k + 1]
        if arg.startswith("--engine="):
            return arg.split("=", 1)[1]
    return None


def without_engine(args: Sequence[str]) -> list[str]:
    """``args`` without its ``--engine X`` / ``--engine=X``.

    >>> without_engine(["--engine", "synoptic", "-r", "x", "--engine=y", "a.log"])
    ['-r', 'x', 'a.log']
    """
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--engine":
            skip = True
        elif not arg.startswith("--engine="):
            out.append(arg)
    return out


def fail(message: object, echo: Echo) -> None:
    """``statemine: error: MESSAGE`` on one line (controls made visible), exit 2."""
    from .escape import one_line

    echo(f"statemine: error: {one_line(message)}", err=True)
    sys.exit(2)


def quiet_exit() -> None:
    """stdout was closed by its reader: drop what is left to print and exit 1 (Python's
    advice for SIGPIPE), without a traceback."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(1)


@contextmanager
def exit_on_errors(echo: Echo) -> Iterator[None]:
    """A :class:`StatemineError` or an OS error (a file that cannot be read or written, a
    full disk) in the block becomes one line on stderr, exit 2; a closed stdout (``|
    head``) ends the command quietly, exit 1."""
    try:
        yield
    except StatemineError as exc:
        fail(str(exc), echo)
    except BrokenPipeError:
        quiet_exit()
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename is not None else ""
        fail(f"{where}{exc.strerror or exc}", echo)
