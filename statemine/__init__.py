"""statemine: infer congestion-control state machines from QUIC traces, and compare them.

Data flows parse -> traces -> infer -> analyze/diff -> render; each step is a module
(or package) of that name. The functions below mirror the ``statemine`` CLI:

>>> import statemine
>>> ts = statemine.read("traces/")                       # doctest: +SKIP
>>> states, transitions = statemine.summarize(ts)        # doctest: +SKIP
>>> G = statemine.infer(ts)                              # doctest: +SKIP
>>> statemine.render(G, "model.svg")                     # doctest: +SKIP
>>> result = statemine.diff(desktop, mobile)             # doctest: +SKIP
"""

from __future__ import annotations

from .errors import InputError, StatemineError, UsageError
from .traces import TraceSet, concat, load, save
from .parse import read
from .analyze import state_stats, summarize, transition_stats, visits
from .infer import infer
from .diff import DiffResult, diff
from .render import render, to_dot

__version__ = "0.1.0"

__all__ = [
    "DiffResult",
    "InputError",
    "StatemineError",
    "TraceSet",
    "UsageError",
    "__version__",
    "concat",
    "diff",
    "infer",
    "load",
    "read",
    "render",
    "save",
    "state_stats",
    "summarize",
    "to_dot",
    "transition_stats",
    "visits",
]
