"""``statemine store add`` and ``statemine store info``: a partitioned Parquet trace store."""

from __future__ import annotations

from pathlib import Path

import click

from ..commands import ReadOptions
from ..store import parse_labels, store_add, store_info
from . import main
from .infer import _input_options


@main.group()
def store() -> None:
    """A Hive-partitioned Parquet trace store (schema: docs/store.md)."""


@store.command("add")
@click.argument("logs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--store", "store_dir", required=True, type=click.Path(path_type=Path))
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="KEY=VALUE",
    help="Partition label (repeatable), e.g. implementation=quic-go date=2026-11-24.",
)
@_input_options
def add(
    logs: tuple[Path, ...], store_dir: Path, labels: tuple[str, ...], read: ReadOptions
) -> None:
    """Append the events of LOG... to the partition of the labels."""
    out = store_add(logs, store_dir, parse_labels(labels), read)
    click.echo(
        f"{out.partition}: added {out.events} events of {out.traces} traces "
        f"in {len(out.files)} files"
    )


@store.command("info")
@click.option("--store", "store_dir", required=True, type=click.Path(path_type=Path))
def info(store_dir: Path) -> None:
    """List the partitions of a store: files, traces, events, metrics rows, trace labels."""
    from ..escape import one_line

    result = store_info(store_dir)
    click.echo(f"partition keys: {', '.join(result.keys) or '(none)'}")
    for p in result.partitions:
        where = "/".join(f"{k}={v}" for k, v in p.labels.items()) or "."
        click.echo(
            f"{one_line(where)}\tfiles={p.files}\ttraces={p.traces}\tevents={p.events}"
            f"\tmetrics={p.metrics}\ttrace labels={one_line(','.join(p.trace_labels)) or '-'}"
        )
    click.echo(
        f"total\tpartitions={len(result.partitions)}\ttraces={result.traces}\tevents={result.events}"
    )
