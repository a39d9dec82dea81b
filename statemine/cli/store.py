"""``statemine store add``, ``info``, ``invariants``, ``vacuum`` and ``migrate``: a
partitioned Parquet trace store."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..commands import ReadOptions
from ..distributed.storeevidence import MAX_TYPES
from ..store import VACUUM_GRACE, parse_labels, store_add, store_info
from . import main
from .dask_option import DASK_OPTION, dask_session
from .infer import _SELECT_OPTION, _input_options, print_warnings
from .options import WIDE_OPTION, out_option

STORE_OPTION = click.option(
    "--store",
    "store_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="The trace store's folder (made by the first store add).",
)

if TYPE_CHECKING:
    import pandas as pd

    from ..store import StoreInfo


@main.group()
def store() -> None:
    """A Hive-partitioned Parquet trace store (schema: docs/store.md)."""


@store.command("add")
@click.argument("logs", nargs=-1, required=True, type=click.Path(path_type=Path))
@STORE_OPTION
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
    print_warnings(out.notes)
    click.echo(
        f"{out.partition}: added {out.events} events of {out.traces} traces "
        f"in {len(out.files)} files (version {out.version})"
    )


@store.command("info")
@STORE_OPTION
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV: one row per partition.")
@WIDE_OPTION
def info(store_dir: Path, as_csv: bool, wide: bool) -> None:
    """List the partitions of a store: files, traces, events, metrics rows, trace labels."""
    result = store_info(store_dir)
    if as_csv:
        from ..escape import frame_csv

        click.echo(frame_csv(_info_frame(result, total=False)), nl=False)
        return
    from .console import print_frame

    keys = ", ".join(result.keys) or "(none)"
    frame = _info_frame(result, total=True)
    title = f"partition keys: {keys}; version {result.version}"
    print_frame(frame, title=title, right=(1, 2, 3, 4), wide=wide)


@store.command("files")
@STORE_OPTION
@click.option(
    "--kind",
    type=click.Choice(["data", "labels", "metrics"]),
    default="data",
    show_default=True,
    help="Which files: the events, the per-trace labels or the metrics tables.",
)
def files(store_dir: Path, kind: str) -> None:
    """Print the files of the store's latest version, one path a line (for Spark, DuckDB,
    Polars: read these, not the folder, to see one version; docs/store.md)."""
    from ..store import published_files

    for path in published_files(store_dir, kind):
        click.echo(path)


@store.command("vacuum")
@STORE_OPTION
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    default=VACUUM_GRACE,
    show_default=True,
    help="Seconds: remove only what is older (an add running now has unpublished files).",
)
def vacuum(store_dir: Path, grace: float) -> None:
    """Remove what no version of a store needs: files of killed or failed adds, their
    spill folders, older version files (docs/store.md)."""
    from ..store import store_vacuum

    out = store_vacuum(store_dir, grace)
    click.echo(
        f"{store_dir}: removed {len(out.removed)} files and folders ({out.bytes} bytes); "
        f"version {out.version} lists {out.files} data files"
    )


@store.command("migrate")
@STORE_OPTION
def migrate(store_dir: Path) -> None:
    """Publish the files of a store written by an older statemine (format 1-3) as its
    first version, so that this version reads and adds to it."""
    from ..store import store_migrate

    out = store_migrate(store_dir)
    click.echo(
        f"{store_dir}: format {out.format} -> 4: version {out.version} lists {out.files} data files"
    )


@store.command("invariants")
@STORE_OPTION
@_SELECT_OPTION
@DASK_OPTION
@click.option(
    "--support-count",
    is_flag=True,
    help="Append each invariant's support count (Synoptic's --outputSupportCount).",
)
@click.option(
    "--max-types",
    type=click.IntRange(min=1),
    default=MAX_TYPES,
    show_default=True,
    help="Cap on distinct event types (the pair-count matrices grow as its square).",
)
@out_option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the invariants to FILE (e.g. PREFIX.invariants.txt) instead of stdout.",
)
def invariants(
    store_dir: Path,
    selections: tuple[str, ...],
    dask_spec: str | None,
    support_count: bool,
    max_types: int,
    out: Path | None,
) -> None:
    """Mine Synoptic's temporal invariants (AlwaysFollowedBy, NeverFollowedBy,
    AlwaysPrecedes) of a store's traces, in Synoptic's model.invariants.txt format.
    Events are the state and point event rows, typed by name (docs/store.md)."""
    from ..commands import selection_pairs
    from ..distributed.run import dask_mapper, store_invariants, tasks_for
    from ..fileio import write_atomic
    from ..infer.synoptic.formats import to_invariants_txt

    where = selection_pairs(selections)
    with dask_session(dask_spec, [store_dir]) as client:
        mapper = map if client is None else dask_mapper(client, progress=True)
        n_tasks = 1 if client is None else tasks_for(client)
        inv = store_invariants(store_dir, where, mapper, max_types=max_types, n_tasks=n_tasks)
    text = to_invariants_txt(inv, support_count)
    if out is None:
        click.echo(text, nl=False)
    else:
        write_atomic(out, text)


def _info_frame(result: StoreInfo, *, total: bool) -> pd.DataFrame:
    """One row per partition: its folder (``KEY=VALUE/...``; ``.`` without keys), data
    files, traces, events, metrics rows and the label keys its traces carry; with
    ``total``, a last row of the sums."""
    import pandas as pd

    rows: list[tuple] = [
        (
            "/".join(f"{k}={v}" for k, v in p.labels.items()) or ".",
            p.files,
            p.traces,
            p.events,
            p.metrics,
            ",".join(p.trace_labels),
        )
        for p in result.partitions
    ]
    if total:
        sums = [sum(row[i] for row in rows) for i in range(1, 5)]
        rows.append((f"total ({len(rows)} partitions)", *sums, ""))
    columns = ["partition", "files", "traces", "events", "metrics", "trace labels"]
    return pd.DataFrame(rows, columns=columns)
