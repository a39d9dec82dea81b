"""Types of the C log scanner (``_linescan.c``), for mypy."""

from typing import Any

from typing_extensions import Buffer

class Scanner:
    """Scans blocks of whole statemine log lines into native column arrays."""

    #: 1-based number of the line the next block starts with.
    next_line: int

    def __init__(self, max_time: float = ...) -> None:
        """``max_time``: largest ``abs(t)`` accepted, seconds (default: any finite t)."""
    def scan(self, block: Buffer, max_line_bytes: int, /) -> dict[str, Any]:
        """Columns of the block (name -> bytes of a native array), or a dict with an
        'error' code and where it is."""

    def names(self) -> list[str]:
        """State and event names, indexed by name code."""

    def traces(self) -> tuple[list[str], list[str | None], bytes]:
        """Per trace code: connection ids, roles, and the packed (last_time, close_time,
        last_line, n_events) records."""
