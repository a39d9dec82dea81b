"""Errors statemine raises on bad input.

Every error a user can cause carries the file, the line (1-based, or ``None`` when the
problem is not tied to a line) and a reason, so the CLI can print ``FILE:LINE: reason``
and exit with status 2.
"""

from __future__ import annotations

from pathlib import Path


class StatemineError(Exception):
    """Base class for every error statemine reports to a user (CLI exit status 2)."""


class InputError(StatemineError):
    """Bad input: names the file, the line (1-based, may be ``None``) and the reason.

    >>> str(InputError("run.log", 12, "time is not a number: 'abc'"))
    "run.log:12: time is not a number: 'abc'"
    """

    def __init__(self, file: str | Path | None, line: int | None, reason: str) -> None:
        self.file = str(file) if file is not None else None
        self.line = line
        self.reason = reason
        super().__init__(self._format())

    def __reduce__(self) -> tuple:
        """Pickled by its parts (a Dask worker's error reaches the driver whole)."""
        return (type(self), (self.file, self.line, self.reason))

    def _format(self) -> str:
        if self.file is None:  # callers that know the file re-raise with it (check-model does)
            return self.reason if self.line is None else f"line {self.line}: {self.reason}"
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.reason}"


class UsageError(StatemineError):
    """Options that do not fit together (not tied to an input file)."""
