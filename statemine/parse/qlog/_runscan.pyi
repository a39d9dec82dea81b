"""Types of the C JSON-SEQ run scanner (``_runscan.c``), for mypy."""

from collections.abc import Set

from typing_extensions import Buffer

def run_count(region: Buffer, /) -> int:
    """The number of one-line JSON-SEQ records of a run, else 0."""

def scan_run(
    run: bytes, code_words: Set[bytes], own_words: tuple[bytes, ...], /
) -> tuple[int, list[int], list[bytes], int, float, float]:
    """``(n_records, indices, records, count, first, last)``: the records parsed whole
    (their indices in the run and their bytes) and the count and earliest and latest
    time of those only counted (inf, -inf when none)."""

def metrics_record(
    record: bytes, types: tuple[bytes, ...], columns: tuple[tuple[bytes, ...], ...], /
) -> tuple[float, ...] | None:
    """``(time, value of each column...)`` of a plain metrics record (``{"time": T, "name":
    "[category:]TYPE", "data": {...}}``, TYPE one of ``types``, values numbers where a
    column's first present key is): NaN where no key of a column is present; None for any
    other record (read by the Python path)."""
