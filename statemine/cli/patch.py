"""``statemine patch``: fetch a QUIC implementation's source and apply, check, revert or
port its statemine instrument patch (a thin layer over :mod:`statemine.patch`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from . import main

if TYPE_CHECKING:
    import pandas as pd

    from ..patch.apply import Outcome


def _lib():
    """:mod:`statemine.patch`, imported when a command runs (it loads pandas)."""
    from .. import patch

    return patch


_impl = click.option("--impl", required=True, help="Implementation, e.g. aioquic or quic-go.")
_version = click.option(
    "--version", "version", required=True, help="Version, e.g. 1.7.2 or v0.48.2."
)
_patches = click.option(
    "--patches",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Patches directory (default: $STATEMINE_PATCHES or the shipped instrument-patches/).",
)
_dir = click.argument("directory", type=click.Path(file_okay=False, path_type=Path))


def _print_hunks(frame: pd.DataFrame, title: str) -> None:
    """A hunk report (one row per hunk) as a table on stdout."""
    from .console import print_frame

    print_frame(frame, title=title)


def _visible_diff(text: str) -> str:
    """A diff from an untrusted patch, safe for a terminal: controls other than newline
    and tab shown as escapes."""
    from ..escape import visible

    return "\n".join(
        "\t".join(visible(part, backslash=False) for part in line.split("\t"))
        for line in text.split("\n")
    )


@main.group()
def patch() -> None:
    """Fetch a QUIC implementation's source and apply, check, revert or port its
    statemine instrument patch (see instrument-patches/README.md)."""


@patch.command("list")
@_patches
def list_cmd(patches: Path | None) -> None:
    """List implementations, patched versions and the files each patch touches."""
    from .console import make_console, print_table

    frame = _lib().list_patches(patches)
    rows, previous = [], None
    for row in frame.itertuples(index=False):
        key = (row.impl, row.version)
        name = row.file + (" (new)" if row.new else "")
        shown = key if key != previous else ("", "")
        rows.append((*shown, name, f"+{row.lines_added}", f"-{row.lines_removed}"))
        previous = key
    headers = ("impl", "version", "file", "added", "removed")
    print_table(make_console(), headers, rows, right=(3, 4), no_wrap=True, box=False)


@patch.command()
@_impl
@_version
@_patches
@_dir
def fetch(impl: str, version: str, patches: Path | None, directory: Path) -> None:
    """Fetch the pristine source of IMPL VERSION from its package registry into DIRECTORY."""
    fetched = _lib().fetch_source(impl, version, directory, patches)
    click.echo(f"fetched {impl} {version} into {fetched.root}")
    if not fetched.pinned:
        click.echo(
            f"note: no digest is pinned for {impl} {version} (digests.toml beside its impl.toml):"
            " only the registry's own checks applied"
        )
    if fetched.import_path is not None:
        click.echo(f"import it with PYTHONPATH={fetched.import_path}")


def _outcome(result: Outcome, verbose: bool) -> None:
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
def revert(
    impl: str, version: str, patches: Path | None, verbose: bool, dry_run: bool, directory: Path
) -> None:
    """Undo the IMPL VERSION patch in DIRECTORY, restoring the original bytes."""
    _outcome(_lib().revert(impl, version, directory, patches, dry_run=dry_run), verbose)


@patch.command()
@_impl
@click.option("--from", "from_version", required=True, help="The version whose patch to try.")
@click.option("--to", "to_version", required=True, help="The version DIRECTORY holds.")
@click.option(
    "--fuzz",
    type=click.IntRange(0, 10),
    default=2,
    show_default=True,
    help="Context lines a hunk may ignore at each end.",
)
@click.option(
    "--max-offset",
    type=click.IntRange(0, None),
    default=500,
    show_default=True,
    help="Lines a hunk may move from where the hunks before it put it.",
)
@click.option(
    "--from-source",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="The pristine FROM tree (tells which function each hunk is "
    "in; default: fetched into the cache).",
)
@click.option(
    "--rejects",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the hunks that did not fit here (a unified diff) instead of printing them.",
)
@click.option("--dry-run", is_flag=True, help="Report only; change nothing.")
@_patches
@_dir
def port(
    impl: str,
    from_version: str,
    to_version: str,
    fuzz: int,
    max_offset: int,
    from_source: Path | None,
    rejects: Path | None,
    dry_run: bool,
    patches: Path | None,
    directory: Path,
) -> None:
    """Port the patch of version FROM to DIRECTORY (version TO): every hunk placed, with
    offset and context fuzz but inside the function its context names, or nothing
    changed and a non-zero exit listing the hunks that need a human."""
    lib = _lib()
    try:
        report = lib.port_tree(
            impl,
            from_version,
            to_version,
            directory,
            fuzz=fuzz,
            max_offset=max_offset,
            from_source=from_source,
            rejects=rejects,
            dry_run=dry_run,
            patches=patches,
        )
    except lib.PortFailed as exc:
        click.echo(str(exc.report))
        _print_hunks(exc.report.hunks, "hunks (offset in lines, fuzz in context lines)")
        if rejects is not None:
            click.echo(f"the hunks that need a human: {rejects}")
        else:
            click.echo("the hunks that need a human (line numbers of " + from_version + "):")
            click.echo(_visible_diff(exc.report.rejects), nl=False)
        raise
    click.echo(str(report))
    _print_hunks(report.hunks, "hunks (offset in lines, fuzz in context lines)")
