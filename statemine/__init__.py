"""statemine: infer congestion-control state machines from QUIC traces, and compare them.

Data flows parse -> traces -> infer -> analyze/diff -> render; each step is a module
(or package) of that name. The functions below mirror the ``statemine`` CLI:

>>> import statemine
>>> ts = statemine.read("traces/")                       # doctest: +SKIP
>>> states, transitions = statemine.summarize(ts)        # doctest: +SKIP
>>> G = statemine.infer(ts)                              # doctest: +SKIP
>>> statemine.render(G, "model.svg")                     # doctest: +SKIP

Names are imported on first use (PEP 562), so ``import statemine`` and the CLI start fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .errors import InputError, StatemineError, UsageError

__version__ = "0.1.0"

#: public name -> module that defines it
_EXPORTS = {
    "TraceSet": ".traces", "concat": ".traces", "load": ".traces", "save": ".traces",
    "read": ".parse",
    "summarize": ".analyze", "state_stats": ".analyze", "transition_stats": ".analyze", "visits": ".analyze",
    "infer": ".infer",
    "diff": ".diff",
    "render": ".render", "to_dot": ".render",
}

__all__ = sorted([*_EXPORTS, "InputError", "StatemineError", "UsageError", "__version__"])


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'statemine' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
