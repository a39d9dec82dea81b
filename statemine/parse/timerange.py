"""The range of times a log may hold: every reader refuses a time outside it (issue 27
item 7), in one line naming the file and line.

A log's times are seconds (after each format's unit: qlog ms or us, a regex log's
``time_scale``) on some clock: since the connection or the capture started, since boot
(ftrace), or since the Unix epoch (1.8e9 s in 2026). :data:`MAX_TIME_S`, 2**32 s (about
4.3e9 s, 136 years), admits all of these (Unix time up to the year 2106) and refuses what
no clock gives: a time of -1e300 ms made a state last 1e297 s, and sums of such durations
overflow to inf. At the bound a float64 still resolves 1e-6 s (its spacing there is
9.5e-7 s), so times of any admitted log keep their order and sub-millisecond differences.
"""

from __future__ import annotations

import math

import numpy as np

#: Largest magnitude of a time, seconds (2**32: see the module's text).
MAX_TIME_S = float(2**32)
#: Largest magnitude of a time in a log's own unit when statemine does not know the unit
#: (a Synoptic-style regex log read without ``time_scale``, e.g. epoch microseconds as in
#: Synoptic's own examples): :data:`MAX_TIME_S` in the finest unit, nanoseconds.
MAX_TIME_UNITS = MAX_TIME_S * 1e9


def time_problem(seconds: float, limit: float = MAX_TIME_S) -> str | None:
    """Why ``seconds`` is not a plausible time (None when it is); ``limit``: the largest
    magnitude (:data:`MAX_TIME_S`, or :data:`MAX_TIME_UNITS` for times in an unknown unit).

    >>> time_problem(1.5), time_problem(-1e297)
    (None, 'time -1e+297 s is outside +-4294967296 s (2**32 s), the range of any log clock')
    >>> time_problem(float("nan"))
    'time nan is not a finite number'
    """
    if not math.isfinite(seconds):
        return f"time {seconds!r} is not a finite number"
    if abs(seconds) > limit:
        if limit == MAX_TIME_S:
            return (
                f"time {seconds:.10g} s is outside +-{MAX_TIME_S:.0f} s (2**32 s), "
                "the range of any log clock"
            )
        return (
            f"time {seconds:.10g} is outside +-{limit:.4g} (2**32 s in nanoseconds), "
            "the range of any log clock in any unit"
        )
    return None


def first_implausible(seconds: np.ndarray, limit: float = MAX_TIME_S) -> int | None:
    """Index of the first time that is not finite or beyond ``limit`` in magnitude (None
    when every one is plausible)."""
    bad = ~(np.abs(seconds) <= limit)  # NaN compares False: refused too
    return int(np.argmax(bad)) if bad.any() else None
