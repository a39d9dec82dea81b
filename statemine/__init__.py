"""statemine: infer congestion-control state machines from QUIC traces, and compare them.

Data flows parse -> traces -> stats (statistics) -> infer/compare -> output (diagrams, report); each
step is a module (or package) of that name. The functions below mirror the ``statemine`` CLI:

>>> import statemine
>>> ts = statemine.read("traces/")                       # doctest: +SKIP
>>> states, transitions = statemine.summarize(ts)        # doctest: +SKIP
>>> G = statemine.infer(ts)                              # doctest: +SKIP
>>> statemine.render(G, "model.svg")                     # doctest: +SKIP
>>> result = statemine.diff(desktop, mobile)             # doctest: +SKIP

and each command is one call (statemine.commands), writing what the command writes:

>>> statemine.infer_to_dir("traces/mobile", "out/")      # doctest: +SKIP
>>> statemine.diff_to_dir("a.parquet", "b.parquet", "diff/")  # doctest: +SKIP
>>> statemine.report_to_file("a.parquet", None, "report.html")  # doctest: +SKIP
>>> statemine.explain_to_dir("a.parquet", "b.parquet", "why/")  # doctest: +SKIP

and why two sets differ (rate or dwell, triggers, spurious losses, knobs) as DataFrames:

>>> from statemine.explain import explain               # doctest: +SKIP
>>> why = explain(desktop, mobile)                       # doctest: +SKIP
"""

from __future__ import annotations

from .errors import InputError, StatemineError, UsageError
from .lazy import lazy_exports

#: Public name -> the module that defines it, imported on first use (PEP 562), so the
#: command line starts without loading pandas and friends it may not need yet.
_LAZY = {
    "TraceSet": "traces",
    "concat": "traces",
    "load": "traces",
    "save": "traces",
    "read": "parse",
    "state_stats": "stats.summary",
    "summarize": "stats.summary",
    "transition_stats": "stats.summary",
    "visits": "stats.summary",
    "summarize_logs": "stats.stream",
    "StatsOptions": "stats.options",
    "infer": "infer",
    "DiffResult": "compare",
    "diff": "compare",
    "render": "output.diagram",
    "to_dot": "output.diagram",
    "ReadOptions": "commands",
    "CompareOptions": "stats.options",
    "infer_to_dir": "commands",
    "diff_to_dir": "commands",
    "report_to_file": "commands",
    "explain_to_dir": "commands",
    "ExplainResult": "explain",
    "read_inputs": "commands",
    "read_to_file": "commands",
    "store_add": "store",
    "store_info": "store",
    "store_migrate": "store",
    "store_vacuum": "store",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


#: The version, written only here (setup.cfg reads it: ``attr: statemine.__version__``).
__version__ = "0.1.0"

__all__ = [
    "CompareOptions",
    "DiffResult",
    "ExplainResult",
    "InputError",
    "ReadOptions",
    "StatemineError",
    "StatsOptions",
    "TraceSet",
    "UsageError",
    "__version__",
    "concat",
    "diff",
    "diff_to_dir",
    "explain_to_dir",
    "infer",
    "infer_to_dir",
    "load",
    "read",
    "read_inputs",
    "read_to_file",
    "render",
    "report_to_file",
    "save",
    "state_stats",
    "store_add",
    "store_info",
    "store_migrate",
    "store_vacuum",
    "summarize",
    "summarize_logs",
    "to_dot",
    "transition_stats",
    "visits",
]
