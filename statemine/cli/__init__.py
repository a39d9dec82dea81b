"""The ``statemine`` command line: one sub-module per command group, each a thin layer
over the library function of the same name."""

from __future__ import annotations

import sys
from importlib import import_module
from typing import Any

from ..runtime import exit_on_errors, fail, single_blas_thread

single_blas_thread()  # before numpy loads (bootstrap: 1000 x traces x states products)

import click  # noqa: E402  # after the thread setting, as numpy

from .. import __version__  # noqa: E402

#: Command name -> the module of this package that defines it (and registers it on
#: ``main`` when imported). A module is imported only when one of its commands runs or
#: help lists them, so ``statemine infer`` does not load lab, patch, diff, ... at start.
COMMAND_MODULES = {
    "check-model": "synoptic",
    "diff": "compare",
    "explain": "explain",
    "infer": "infer",
    "lab": "lab",
    "patch": "patch",
    "read": "infer",
    "report": "compare",
    "store": "store",
    "tcp": "tcp",
}


#: What click (8.2 on) raises for a group run without a command: shown as help, not as an
#: error line.
_NO_ARGS_IS_HELP: tuple[type[Exception], ...] = tuple(
    getattr(click.exceptions, name)
    for name in ("NoArgsIsHelpError",)
    if hasattr(click.exceptions, name)
)


#: The key of ``click.Context.meta`` holding the arguments after ``statemine``.
ARGV_KEY = "statemine.argv"


def command_line() -> tuple[str, ...] | None:
    """The arguments the running command was given after ``statemine`` (what the
    provenance records), None outside a command."""
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.meta.get(ARGV_KEY)


def first_sentence(text: str) -> str:
    """The first sentence of a command's help, whole (up to a full stop that ends a
    sentence: not the one of "e.g.", "i.e." or an ellipsis "LOG..."), white space folded.

    >>> first_sentence("Run one config again (e.g. a.json): the same log.  More.")
    'Run one config again (e.g. a.json): the same log.'
    """
    import re

    folded = " ".join(text.split())
    m = re.search(r"^(.*?(?<!\be\.g)(?<!\bi\.e)(?<!\.)\.)(?:\s|$)", folded)
    return m.group(1) if m else folded


class _SuggestingGroup(click.Group):
    """A click group whose "No such command" names the closest command (difflib), for
    its sub-groups too."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            import difflib

            name = args[0] if args else ""
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=1, cutoff=0.6)
            if not close or name.startswith("-") or "Did you mean" in exc.message:
                raise
            raise click.UsageError(f"{exc.message} Did you mean {close[0]!r}?", exc.ctx) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands with the whole first sentence of each one's help, wrapped (click
        cuts it mid-phrase at the terminal's width)."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, first_sentence(command.short_help or command.help or "")))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


_SuggestingGroup.group_class = _SuggestingGroup  # sub-groups of a sub-group suggest too


class _Group(_SuggestingGroup):
    """A click group that turns :class:`StatemineError` and OS errors (a file that
    cannot be read or written, a full disk) into a one-line message, exit 2; control
    characters in the message are made visible. A closed stdout (``| head``) ends the
    command quietly. Commands are loaded on first use (:data:`COMMAND_MODULES`)."""

    group_class = _SuggestingGroup

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMAND_MODULES))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            import_module(f"{__name__}.{COMMAND_MODULES[cmd_name]}")
        return super().get_command(ctx, cmd_name)

    def main(  # type: ignore[override]  # one signature for both of click's overloads
        self,
        args: Any = None,
        prog_name: str | None = None,
        standalone_mode: bool = True,
        **kwargs: Any,
    ) -> Any:
        """Run as click does, except that a usage error (an unknown option, a value out of
        range, a missing argument) is one line naming the option and the command's help,
        exit 2, like every other bad input; ``standalone_mode=False`` is click's own."""
        if not standalone_mode:
            return super().main(args, prog_name, standalone_mode=False, **kwargs)
        try:
            code = super().main(args, prog_name, standalone_mode=False, **kwargs)
        except _NO_ARGS_IS_HELP as exc:  # a group run bare: its help, as click shows it
            assert isinstance(exc, click.UsageError)
            exc.show()
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            fail(exc.format_message() + where, click.echo)
        except click.ClickException as exc:
            fail(exc.format_message(), click.echo)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if ctx.parent is None:  # the whole command line: kept for the provenance
            ctx.meta.setdefault(ARGV_KEY, tuple(args))
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        with exit_on_errors(click.echo):
            return super().invoke(ctx)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, prog_name="statemine")
def main() -> None:
    """Infer the congestion-control state machine of a QUIC implementation from its
    logs, see where the time goes, and what changed between two sets of traces."""
