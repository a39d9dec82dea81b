"""Names of the columns of the tables statemine writes and reads, in one light module
(no numpy, pandas or scipy), so that the lab, which writes them, and the outcome
statistics, which read them, share one list."""

from __future__ import annotations

#: The outcome columns of a lab results table (results.csv/.parquet), after the grid's
#: keys, in this order: the run's id, whether it finished and its error, its page-load
#: time (s), bytes, throughput (bit/s), retransmitted / sent / dropped packets, its
#: virtual and wall time (s) and its seed.
RESULT_COLUMNS = (
    "run_id",
    "ok",
    "error",
    "plt_s",
    "bytes",
    "throughput_bps",
    "retransmissions",
    "packets_sent",
    "packets_dropped",
    "virtual_time_s",
    "wall_time_s",
    "seed",
)
#: Columns a trace set's ``traces`` frame adds to a run's: bookkeeping, never a condition.
TRACE_COLUMNS = ("trace", "source", "end", "conn", "role")
#: Columns of a results table that are outcomes or bookkeeping, never scenario values.
OUTCOME_COLUMNS = RESULT_COLUMNS + TRACE_COLUMNS
