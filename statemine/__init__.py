"""statemine: infer congestion-control state machines from QUIC traces, and compare them.

Data flows parse -> traces -> infer -> analyze/diff -> render; each step is a module
(or package) of that name. The functions below mirror the ``statemine`` CLI.
"""

from __future__ import annotations

from .errors import InputError, StatemineError, UsageError
from .traces import TraceSet, concat, load, save

__version__ = "0.1.0"

__all__ = [
    "InputError",
    "StatemineError",
    "UsageError",
    "TraceSet",
    "concat",
    "load",
    "save",
    "__version__",
]
