"""The ``statemine`` command's entry point: the console script and ``python -m statemine``.

``statemine infer --engine synoptic|synoptic-jar|ktails|perfume ARGS`` takes the original
tool's command line, which click never parses (:class:`statemine.cli.synoptic.ToolCommand`
hands it over untouched), so :func:`main` runs it without loading click or any command
module: on a 1e4-event log the inference takes about 0.1 s and click's import alone a
fifth of that (issue 13).  What it prints, writes and exits with is the click path's:
the one-line errors (exit 2) of :func:`exit_on_errors` serve both.  Whatever the click
path could treat differently goes through click (:data:`statemine.cli.main`), as does
every other command: shell completion, a standard stream click would re-wrap (no
encoding, ASCII), a message with an ANSI escape (click strips those off terminals), a
``STATEMINE_SYNOPTIC_JAR`` naming a directory or an unreadable file (click refuses it).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from .runtime import engine_in, exit_on_errors, single_blas_thread, without_engine

if TYPE_CHECKING:
    pass

#: The environment variable ``--synoptic-jar`` defaults to.
JAR_VARIABLE = "STATEMINE_SYNOPTIC_JAR"


def _plain_stream(stream: Any) -> bool:
    """A text stream click writes to as it is (it re-wraps one without an encoding or
    with an ASCII one, and has no stream to write to when it is None)."""
    import codecs

    encoding = getattr(stream, "encoding", None)
    if stream is None or not encoding or getattr(stream, "errors", None) is None:
        return False
    try:
        return codecs.lookup(encoding).name != "ascii"
    except LookupError:
        return True


def _echo(message: str, nl: bool = True, err: bool = False) -> None:
    """``click.echo`` of a str on a plain stream (:func:`_plain_stream`): written, then
    flushed; a message with an ESC goes through click itself (it strips ANSI styles when
    the stream is not a terminal)."""
    text = message + "\n" if nl else message
    if "\x1b" in text:
        import click

        click.echo(message, nl=nl, err=err)
        return
    stream = sys.stderr if err else sys.stdout
    if text:
        stream.write(text)
    stream.flush()


def _jar_default() -> tuple[bool, Path | None]:
    """(whether click would accept it, the value) of ``--synoptic-jar`` from
    :data:`JAR_VARIABLE` (unset or empty: None; else a path that is not a directory and,
    when it exists, is readable: click's ``Path(dir_okay=False)``)."""
    value = os.environ.get(JAR_VARIABLE)
    if not value:
        return True, None
    try:
        mode = os.stat(value).st_mode
    except OSError:
        return True, Path(value)
    return not stat.S_ISDIR(mode) and os.access(value, os.R_OK), Path(value)


def _tool_engine(args: Sequence[str]) -> tuple[str, Path | None] | None:
    """(engine, jar) when ``args`` are ``infer ... --engine E ...`` with a Synoptic-family
    engine that :func:`main` runs exactly as click would, else None."""
    if not args or args[0] != "infer":
        return None
    engine = engine_in(args[1:])
    if engine is None:
        return None
    from .infer.synoptic.command import TOOL_OF_ENGINE

    if engine not in TOOL_OF_ENGINE:
        return None
    if any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ):
        return None  # click's shell completion
    if not (_plain_stream(sys.stdout) and _plain_stream(sys.stderr)):
        return None
    ok, jar = _jar_default()
    return (engine, jar) if ok else None


def exit_process(status: int) -> NoReturn:
    """End the process with ``status`` as a normal exit would for the command's path
    (threads waited for, atexit handlers run, stdout and stderr flushed), but without
    tearing the interpreter down: freeing every module, numpy's included, takes about
    0.02 s, a tenth of ``infer --engine synoptic`` on a 1e4-event log.  A normal exit
    when a profiler or tracer runs (``python -m cProfile -m statemine``: it reports
    after the program returns), when a thread that is not a daemon still runs, or when
    flushing fails (Python then reports it as usual)."""
    import atexit
    import threading

    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(status)
    if any(not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(status)
    atexit._run_exitfuncs()  # and clears them: a fallback sys.exit runs none twice
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(status)
    os._exit(status)


def run_tool_command(
    engine: str, args: Sequence[str], synoptic_jar: Path | None, process: bool = False
) -> NoReturn:
    """``statemine infer --engine ENGINE ARGS`` without click: one call of
    :func:`statemine.infer.synoptic.command.run_command`, its output printed; exits 2 on
    bad input (one line), 1 on Ctrl-C (``Aborted!``, as click), else 0 (``process``:
    the whole process, through :func:`exit_process`; else by ``SystemExit``)."""
    try:
        with exit_on_errors(_echo):
            from .infer.synoptic.command import run_command

            run_command(engine, without_engine(args), synoptic_jar).show(_echo)
    except (KeyboardInterrupt, EOFError):
        _echo("", err=True)
        _echo("Aborted!", err=True)
        sys.exit(1)
    if process:
        exit_process(0)
    sys.exit(0)


def main(
    args: Sequence[str] | None = None, prog_name: str | None = None, process: bool = False
) -> None:
    """Run the ``statemine`` command on ``args`` (default: ``sys.argv[1:]``); exits by
    ``SystemExit`` (``process``: a successful Synoptic-family run ends the process at
    once, :func:`exit_process`; for the program's entry points only)."""
    single_blas_thread()
    argv = list(sys.argv[1:] if args is None else args)
    tool = _tool_engine(argv)
    if tool is not None:
        run_tool_command(tool[0], argv[1:], tool[1], process)
    from .cli import main as click_main

    click_main(args, prog_name=prog_name)


def program() -> None:
    """The console script ``statemine``: :func:`main` as the process's entry point."""
    main(process=True)
