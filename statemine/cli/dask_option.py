"""The ``--dask local:N | tcp://HOST:PORT`` option of infer, diff and report."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from dask.distributed import Client

    from ..commands import Inputs

DASK_OPTION = click.option(
    "--dask",
    "dask_spec",
    metavar="local:N|tcp://HOST:PORT",
    help="Run on Dask (a trace store input): N local worker processes, or a running "
    "scheduler. Prints the dashboard's address.",
)


@contextmanager
def dask_session(spec: str | None, sides: Sequence[Inputs]) -> Iterator[Client | None]:
    """The client of ``--dask`` (None without it), its dashboard address on stderr.
    ``sides``: the inputs, each checked to be a trace store before a cluster starts."""
    if spec is None:
        yield None
        return
    from ..commands import require_stores
    from ..distributed.cluster import dashboard_link, dask_client, parse_dask_spec

    parsed = parse_dask_spec(spec)
    require_stores(sides)
    with dask_client(parsed) as client:
        link = dashboard_link(client)
        n = len(client.scheduler_info()["workers"])
        where = f", dashboard {link}" if link else ""
        click.echo(f"statemine: dask: {n} worker{'s' if n != 1 else ''}{where}", err=True)
        yield client
