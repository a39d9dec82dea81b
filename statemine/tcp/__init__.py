"""Kernel TCP's congestion state machine, recorded with ftrace (issue 16, docs/tcp.md).

* :func:`record` -- ``statemine tcp record``: a tracing instance of statemine's own while a
  command runs, the raw trace and the parsed traces written to a folder
  (:mod:`statemine.tcp.record`, :mod:`statemine.tcp.tracing`);
* :func:`read` -- ftrace text files into one trace set, with the reader's options
  (receivers, repeats, MSS) that ``statemine infer`` leaves at their defaults;
* :func:`read_to_file` -- ``statemine tcp read``: the same, saved as one Parquet file;
* :func:`cleanup` -- ``statemine tcp cleanup``: remove what killed statemine processes left
  (tracing instances, tracefs mounts, network namespaces and devices).

The traces are read by :mod:`statemine.parse.ftrace`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .record import RecordResult, record

if TYPE_CHECKING:
    from ..commands import ReadOutput
    from ..traces import TraceSet


def read(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    keep_receivers: bool = False,
    keep_repeats: bool = False,
    mss: int | None = None,
    ignore_nonmatching: bool = False,
) -> TraceSet:
    """Read ftrace text files (folders: their log files) with
    :func:`statemine.parse.ftrace.read_ftrace` and these options into one trace set;
    trace ids start with the file name (its path when two files share a name)."""
    from ..parse import _source_names, expand_paths
    from ..parse.ftrace import read_ftrace
    from ..traces import concat

    files = expand_paths(paths)
    sources = _source_names(files)
    sets = [
        read_ftrace(
            f,
            source=sources[f],
            keep_receivers=keep_receivers,
            keep_repeats=keep_repeats,
            mss=mss,
            ignore_nonmatching=ignore_nonmatching,
        )
        for f in files
    ]
    return sets[0] if len(sets) == 1 else concat(sets)


def read_to_file(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    output: str | os.PathLike,
    *,
    keep_receivers: bool = False,
    keep_repeats: bool = False,
    mss: int | None = None,
    ignore_nonmatching: bool = False,
) -> ReadOutput:
    """``statemine tcp read``: :func:`read` with these options, saved as one Parquet file
    (traces, their labels and the cwnd/ssthresh/srtt metrics) for ``infer``, ``diff`` and
    ``report``; returns the file, its traces and state rows, and the reader's warnings.
    Bad input raises before anything is written."""
    from ..commands import save_traces

    ts = read(
        paths,
        keep_receivers=keep_receivers,
        keep_repeats=keep_repeats,
        mss=mss,
        ignore_nonmatching=ignore_nonmatching,
    )
    return save_traces(ts, output)


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


__all__ = ["RecordResult", "cleanup", "read", "read_to_file", "record"]
