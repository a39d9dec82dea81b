"""The ``--dask local:N | tcp://HOST:PORT`` option of infer, diff and report."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from dask.distributed import Client

DASK_OPTION = click.option(
    "--dask",
    "dask_spec",
    metavar="local:N|tcp://HOST:PORT",
    help="Run on Dask (a trace store input): N local worker processes, or a running "
    "scheduler. Prints the dashboard's address.",
)


@contextmanager
def dask_session(spec: str | None) -> Iterator[Client | None]:
    """The client of ``--dask`` (None without it), its dashboard address on stderr."""
    if spec is None:
        yield None
        return
    from ..distributed.cluster import dashboard_link, dask_client, parse_dask_spec

    with dask_client(parse_dask_spec(spec)) as client:
        link = dashboard_link(client)
        n = len(client.scheduler_info()["workers"])
        where = f", dashboard {link}" if link else ""
        click.echo(f"statemine: dask: {n} worker{'s' if n != 1 else ''}{where}", err=True)
        yield client
