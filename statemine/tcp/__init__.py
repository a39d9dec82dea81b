"""Kernel TCP's congestion state machine, recorded with ftrace (issue 16, docs/tcp.md).

* :func:`record` -- ``statemine tcp record``: a tracing instance of statemine's own while a
  command runs, the raw trace and the parsed traces written to a folder
  (:mod:`statemine.tcp.record`, :mod:`statemine.tcp.tracing`);
* :func:`cleanup` -- ``statemine tcp cleanup``: remove what killed statemine processes left
  (tracing instances, tracefs mounts, network namespaces and devices).

The traces are read by :mod:`statemine.parse.ftrace`.
"""

from __future__ import annotations

import os

from .record import RecordResult, record


def cleanup(all_: bool = False) -> tuple[list[str], list[str]]:
    """Remove the tracing instances, tracefs mounts, network namespaces and devices of
    statemine processes that no longer run (every one but this process's with ``all_``);
    returns ``(removed, failed)`` descriptions. Needs root."""
    from . import netns, tracing

    if os.geteuid() != 0:
        from .tracing import TracingError

        raise TracingError("statemine tcp cleanup needs root")
    removed, failed = tracing.remove_leftovers(all_)
    more = netns.remove_leftovers(all_)
    return removed + more[0], failed + more[1]


__all__ = ["RecordResult", "cleanup", "record"]
