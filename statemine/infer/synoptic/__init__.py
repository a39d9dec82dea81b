"""statemine's own implementation of Synoptic (Beschastnikh et al., FSE 2011) and its
family (k-tails, Perfume's invariants).

Pipeline: :mod:`.log` (integer-coded traces) -> :mod:`.invariants` (mining) ->
:mod:`.model` (partition graph, one node per event type) -> :mod:`.refine` (split along
counterexamples until every invariant holds) -> :mod:`.coarsen` (k-tails, k = 0, merges
that keep every invariant) -> :mod:`.formats` (Synoptic's dot / invariants / json) and
networkx; :mod:`.engine` puts them together, :mod:`.command` is the command line as a
library call, :mod:`.check` the model checker, :mod:`.jar` runs a real ``synoptic.jar``.

The names below are imported when first used, so that importing a submodule (the
command line imports :mod:`.command` to see whether ``--engine`` names one of these
engines) does not import numpy and pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...lazy import lazy_exports

if TYPE_CHECKING:
    from .command import check_model_files, run_command, synoptic
    from .engine import SynopticResult, infer_log, infer_synoptic

#: Public name -> submodule that defines it.
_LAZY = {
    "SynopticResult": "engine",
    "infer_log": "engine",
    "infer_synoptic": "engine",
    "run_command": "command",
    "synoptic": "command",
    "check_model_files": "command",
}

__all__ = [
    "SynopticResult",
    "check_model_files",
    "infer_log",
    "infer_synoptic",
    "run_command",
    "synoptic",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
