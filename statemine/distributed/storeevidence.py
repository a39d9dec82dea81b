"""Synoptic's invariant evidence of a trace store as a map over its data files and an
associative reduce (:class:`statemine.infer.synoptic.evidence.Evidence`).

Synoptic's events of a store are its event rows, as
:func:`statemine.infer.synoptic.infer_synoptic` takes a trace set's: state rows (kind
``state``) and point events (kind ``event``, e.g. ``LossDetected``), each typed by its
name; metrics rows are not events (a trace set keeps them apart), and a trace without
event rows is not a trace of the log. A trace's events are taken in store order, which
is ``seq`` order with non-decreasing times (checked, :func:`statemine.store.check_rows`):
the order Synoptic's reader gives them (a store made by ``statemine store add -r ... -s
...`` from a Synoptic log keeps its reader's order). A trace id met again in a later file
is another trace, as :func:`statemine.store.read_store` counts it.

Map (:func:`fold_evidence`, on a worker): the files of one task read block by block of
whole traces (:func:`.storestats.file_blocks`, memory one block plus one trace), each
block's evidence merged into the task's. Reduce (:func:`reduce_evidence`, on the
driver): the tasks' evidence merged; it equals, count for count, the evidence of the same
traces read whole, since every count is a sum over traces.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..infer.synoptic.evidence import Evidence, trace_evidence
from .storestats import FileIds, StateNames, check_names, file_blocks

#: Default cap on distinct event types: the #F and #P matrices take 16 T^2 bytes.
MAX_TYPES = 2048


def too_many_types(max_types: int) -> str:
    """The reason given when a store has more than ``max_types`` distinct event names."""
    return (
        f"more than {max_types} distinct event types: the invariant matrices grow with its "
        "square (raise the cap with --max-types if the types are real)"
    )


class EvidenceFold(NamedTuple):
    """What :func:`fold_evidence` computed for one task: the evidence, the task's event
    names in order of their first line (``names``) with the (source, line) of that
    line (``first_lines``), and whether more than ``max_types`` names were met
    (``overflow``: the fold stopped there)."""

    evidence: Evidence
    names: list[str]
    first_lines: list[tuple[str, int]]
    overflow: bool


def fold_evidence(paths: Sequence[str | Path], max_types: int = MAX_TYPES) -> EvidenceFold:
    """The map: the invariant evidence of the traces of the data files ``paths``."""
    names = StateNames()
    evidence = Evidence.empty()
    overflow = False
    for path in map(Path, paths):
        for block in file_blocks(path, names, max_types, FileIds(), events=True):
            if len(names.codes) > max_types:  # the driver names the line
                overflow = True
                break
            typed = block.is_state | block.is_event
            trace, codes = block.trace[typed], block.state[typed]
            if not len(trace):
                continue
            starts = np.r_[np.flatnonzero(np.r_[True, trace[1:] != trace[:-1]]), len(trace)]
            evidence = evidence.merge(trace_evidence(names.in_order(), codes, starts))
        if overflow:
            break
    return EvidenceFold(evidence, names.in_order(), names.first_lines, overflow)


def reduce_evidence(folds: Sequence[EvidenceFold], max_types: int = MAX_TYPES) -> Evidence:
    """The driver's reduce: the tasks' evidence merged in order (after checking the number
    of event types as one fold of the whole store would)."""
    check_names(folds, max_types, too_many_types(max_types))
    evidence = Evidence.empty()
    for fold in folds:
        evidence = evidence.merge(fold.evidence)
    return evidence
