"""The lab: real, instrumented QUIC implementations (and kernel TCP) run over an emulated
path, in virtual time or in real time, producing statemine traces (``statemine lab run``;
docs/lab.md).

Modules: :mod:`.path` (the path model; its Go and Rust twins are in ``quicgo/`` and
``quiche/``), :mod:`.scenario` (TOML grids; ``run_config`` and ``link_config`` build the
runner protocol's configs), :mod:`.grid` (running a grid: parallel, resumable, results
table and manifest), :mod:`.runners` (one runner per implementation), :mod:`.realtime`
(real-time runs in network namespaces), :mod:`.cellular` and :mod:`.variability` (link
traces, the mobile client's randomness), :mod:`.findings` (the paper's findings measured
on a grid's traces), :mod:`.replicate` (the findings again on fresh seeds), :mod:`.commands` (each ``statemine lab`` command as one call).

The commands' library calls, imported when first used:

>>> import statemine.lab
>>> run = statemine.lab.run_scenario("examples/scenarios/jitter.toml", "out/")  # doctest: +SKIP
>>> statemine.lab.list_scenarios()  # doctest: +SKIP
>>> statemine.lab.list_keys()  # doctest: +SKIP
>>> found = statemine.lab.measure_findings("traces", ["jitter-recovery"])  # doctest: +SKIP
>>> statemine.lab.rerun("traces/jitter/runs/ID/config.json", "again/")  # doctest: +SKIP
>>> rep = statemine.lab.replicate_findings("traces", "fresh/", ["jitter-recovery"])  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .commands import (
        FindingsOutput,
        LabRun,
        ReplicationOutput,
        cache_folder,
        list_keys,
        list_scenarios,
        measure_findings,
        replicate_findings,
        rerun,
        run_scenario,
    )

__all__ = [
    "FindingsOutput",
    "LabRun",
    "ReplicationOutput",
    "cache_folder",
    "list_keys",
    "list_scenarios",
    "measure_findings",
    "replicate_findings",
    "rerun",
    "run_scenario",
]
#: Every public name lives in :mod:`.commands`.
_LAZY = dict.fromkeys(__all__, "commands")
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
