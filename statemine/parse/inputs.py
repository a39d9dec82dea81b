"""Reading the inputs of a command: log files, folders, saved ``.parquet`` trace sets and
``statemine lab`` output folders, with the readers' options (:class:`ReadOptions`), every
trace labelled and the traces selected by ``LABEL=VALUE``. The store (which reads files
through it) and the commands (which add the store and Dask) sit above it."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import UsageError

if TYPE_CHECKING:
    from ..traces import TraceSet
    from .lines import ReadDigests

#: One input path, or several.
Inputs = str | os.PathLike | Sequence[str | os.PathLike]


@dataclass(frozen=True)
class ReadOptions:
    """How to read the inputs (the readers' options of :func:`statemine.read`).

    ``fmt``: auto, statemine, qlog, regex or parquet; ``regex``/``separator``/``mapping``/
    ``ignore_nonmatching``: Synoptic's -r/-s/-m/-i; ``names_file``: qlog state-name
    overrides; ``implementation``: which qlog state-name table; ``derive_states``: states
    from cwnd/ssthresh; ``strict``: fail on a qlog file without congestion data;
    ``progress``: a progress bar on stderr (a terminal only)."""

    fmt: str = "auto"
    regex: tuple[str, ...] = ()
    separator: str | None = None
    mapping: str | None = None
    ignore_nonmatching: bool = False
    names_file: str | os.PathLike | None = None
    implementation: str | None = None
    derive_states: bool = False
    strict: bool = False
    progress: bool = False


def reader_warnings(ts: TraceSet) -> list[str]:
    """The readers' warnings kept in ``ts.meta`` (a JSON list), as a list."""
    raw = ts.meta.get("warnings")
    return list(json.loads(raw)) if raw else []


def read_files(
    inputs: Inputs,
    read: ReadOptions = ReadOptions(),
    *,
    labels: dict[str, str] | None = None,
    selections: Sequence[str] = (),
    digests: ReadDigests | None = None,
    listed: Sequence[str] | None = None,
) -> TraceSet:
    """Read ``inputs`` (files or folders, not a store) with :func:`statemine.parse.read`
    and ``read``'s options, label every trace with ``labels``, and keep the traces matching
    every ``LABEL=VALUE`` of ``selections`` (:func:`select_traces`); ``digests``: as
    :func:`statemine.parse.read`'s; ``listed``: its files as
    :func:`statemine.parse.expand_files` lists them, when listed already (not walked again)."""
    from . import read as parse_read

    names = None
    if read.names_file is not None:
        from .statenames import load_names

        names = load_names(read.names_file)
    paths = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    ts = parse_read(
        paths,
        read.fmt,
        regex=list(read.regex) or None,
        separator=read.separator,
        mapping=read.mapping,
        ignore_nonmatching=read.ignore_nonmatching,
        names=names,
        implementation=read.implementation,
        derive_states=read.derive_states,
        labels=labels,
        progress=read.progress,
        strict=read.strict,
        digests=digests,
        listed=listed,
    )
    return select_traces(ts, selections, " ".join(map(str, paths)))


def select_traces(ts: TraceSet, selections: Sequence[str], where: str) -> TraceSet:
    """``ts.select`` for ``LABEL=VALUE`` strings, with a clear error for an unknown label
    or when nothing matches (``where`` names the input in the message)."""
    if not selections:
        return ts
    wanted = selection_pairs(selections)
    for key in wanted:
        if key not in ts.traces.columns:
            labels = ", ".join(c for c in ts.traces.columns if c not in ("trace", "source", "end"))
            raise UsageError(
                f"{where}: the traces have no label {key!r} (labels: {labels or 'none'})"
            )
    kept = ts.select(wanted)
    if kept.n_traces == 0:
        values = {k: sorted(ts.traces[k].astype(str).unique())[:8] for k in wanted}
        raise UsageError(f"{where}: no trace matches {' '.join(selections)} (values: {values})")
    return kept


def selection_pairs(selections: Sequence[str]) -> dict[str, str]:
    """``LABEL=VALUE`` strings as a dict (a later value of a label wins).

    >>> selection_pairs(["role=server", "profile=mobile"])
    {'role': 'server', 'profile': 'mobile'}
    """
    wanted = {}
    for item in selections:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"a selection is LABEL=VALUE, not {item!r}")
        wanted[key] = value
    return wanted
