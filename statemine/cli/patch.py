"""``statemine patch``: fetch a QUIC implementation's source and apply, check, revert or
port its statemine instrument patch (a thin layer over :mod:`statemine.patch`)."""

from __future__ import annotations

from pathlib import Path

import click

from . import main


def _lib():
    """:mod:`statemine.patch`, imported when a command runs (it loads pandas)."""
    from .. import patch

    return patch


def _rich():
    """rich's Console and Table, imported when a command prints one."""
    from rich.console import Console
    from rich.table import Table

    return Console, Table

_impl = click.option("--impl", required=True, help="Implementation, e.g. aioquic or quic-go.")
_version = click.option("--version", "version", required=True, help="Version, e.g. 1.7.2 or v0.48.2.")
_patches = click.option("--patches", type=click.Path(file_okay=False, path_type=Path), default=None,
                        help="Patches directory (default: $STATEMINE_PATCHES or the checkout's instrument-patches/).")
_dir = click.argument("directory", type=click.Path(file_okay=False, path_type=Path))


def _print_hunks(frame, title: str) -> None:
    Console, Table = _rich()
    table = Table(title=title)
    for col in frame.columns:
        table.add_column(col)
    for row in frame.itertuples(index=False):
        table.add_row(*(str(v) for v in row))
    Console().print(table)


@main.group()
def patch() -> None:
    """Fetch a QUIC implementation's source and apply, check, revert or port its
    statemine instrument patch (see instrument-patches/README.md)."""


@patch.command("list")
@_patches
def list_cmd(patches: Path | None) -> None:
    """List implementations, patched versions and the files each patch touches."""
    frame = _lib().list_patches(patches)
    Console, Table = _rich()
    table = Table(box=None)
    for col in ("impl", "version", "file", "added", "removed"):
        table.add_column(col, no_wrap=True, justify="right" if col in ("added", "removed") else "left")
    previous = None
    for row in frame.itertuples(index=False):
        key = (row.impl, row.version)
        name = row.file + (" (new)" if row.new else "")
        table.add_row(*(key if key != previous else ("", "")), name, f"+{row.lines_added}",
                      f"-{row.lines_removed}")
        previous = key
    Console(width=max(100, Console().width)).print(table)


@patch.command()
@_impl
@_version
@_patches
@_dir
def fetch(impl: str, version: str, patches: Path | None, directory: Path) -> None:
    """Fetch the pristine source of IMPL VERSION from its package registry into DIRECTORY."""
    root = _lib().fetch(impl, version, directory, patches)
    click.echo(f"fetched {impl} {version} into {root}")
    python_path = _lib().load_impl(impl, patches).python_path
    if python_path:
        click.echo(f"import it with PYTHONPATH={root / python_path}")


def _outcome(result, verbose: bool) -> None:
    click.echo(str(result))
    if verbose and len(result.hunks):
        _print_hunks(result.hunks, f"{result.action}: hunks")


_verbose = click.option("-v", "--verbose", is_flag=True, help="Show where each hunk went.")


def _tree_options(fn):
    """The options of apply/check/revert: --impl, --version, --patches, --verbose."""
    return _impl(_version(_patches(_verbose(fn))))


@patch.command()
@_tree_options
@_dir
def apply(impl: str, version: str, patches: Path | None, verbose: bool, directory: Path) -> None:
    """Apply the IMPL VERSION patch to DIRECTORY (all hunks or nothing)."""
    _outcome(_lib().apply(impl, version, directory, patches), verbose)


@patch.command()
@_tree_options
@_dir
def check(impl: str, version: str, patches: Path | None, verbose: bool, directory: Path) -> None:
    """Dry run of apply: say whether the patch would apply; change nothing."""
    _outcome(_lib().check(impl, version, directory, patches), verbose)


@patch.command()
@_tree_options
@click.option("--dry-run", is_flag=True, help="Say what would be reverted; change nothing.")
@_dir
def revert(impl: str, version: str, patches: Path | None, verbose: bool, dry_run: bool,
           directory: Path) -> None:
    """Undo the IMPL VERSION patch in DIRECTORY, restoring the original bytes."""
    _outcome(_lib().revert(impl, version, directory, patches, dry_run=dry_run), verbose)


@patch.command()
@_impl
@click.option("--from", "from_version", required=True, help="The version whose patch to try.")
@click.option("--to", "to_version", required=True, help="The version DIRECTORY holds.")
@click.option("--fuzz", type=click.IntRange(0, 10), default=2, show_default=True,
              help="Context lines a hunk may ignore at each end.")
@click.option("--dry-run", is_flag=True, help="Report only; change nothing.")
@_patches
@_dir
def port(impl: str, from_version: str, to_version: str, fuzz: int, dry_run: bool,
         patches: Path | None, directory: Path) -> None:
    """Try the patch of version FROM on DIRECTORY (version TO) with context fuzz: apply
    what fits, list what needs a human (saved in DIRECTORY/.statemine-port.rej)."""
    report = _lib().port(impl, from_version, to_version, directory, fuzz=fuzz, dry_run=dry_run,
                      patches=patches)
    click.echo(str(report))
    _print_hunks(report.hunks, "hunks (offset in lines, fuzz in context lines)")
    if len(report.needs_human):
        where = report.rejects if report.written else "(dry run: not written)"
        click.echo(f"{len(report.needs_human)} hunks need a human: {where}")
