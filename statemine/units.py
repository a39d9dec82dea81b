"""How numbers are shown to people: one convention for the terminal and the HTML report.

* a share of time (a fraction in [0, 1]) as a percentage with one decimal: ``23.9%``;
* a difference of shares in percentage points with one decimal and a sign: ``+46.8 pp``;
* a transition probability with two decimals: ``0.49``; its difference with a sign: ``+0.29``;
* a duration (seconds) with a readable unit: ``362.6 ms`` below one second, ``1.54 s`` above;
* a rate in bit/s and a size in bytes with a decimal prefix: ``12.35 Mbit/s``, ``2.7 MB``;
* a p-value with two significant digits: ``0.0005``, ``4.9e-20`` on the terminal
  (:func:`p_value`); on the HTML report in one fixed-point form, trailing zeros kept and
  ``< 0.0001`` below that floor: ``0.00050``, ``< 0.0001`` (:func:`p_value_report`; also
  the diff's notes and the diagram's legend).

Missing values (NaN) are shown as ``n/a``. The CSV files keep full precision in SI units
(fractions, seconds); only what people read is rounded.
"""

from __future__ import annotations

from typing import TypeGuard

NA = "n/a"


def _present(value: float | None) -> TypeGuard[float]:
    """Whether ``value`` is a number (not None, not NaN)."""
    return value is not None and value == value


def share(value: float | None) -> str:
    """A fraction in [0, 1] as a percentage.

    >>> share(0.23871), share(float("nan"))
    ('23.9%', 'n/a')
    """
    return NA if not _present(value) else f"{value:.1%}"


def share_delta(value: float | None) -> str:
    """A difference of two fractions in percentage points.

    >>> share_delta(0.4679), share_delta(-0.0004)
    ('+46.8 pp', '-0.0 pp')
    """
    return NA if not _present(value) else f"{100 * value:+.1f} pp"


def share_interval(lo: float | None, hi: float | None) -> str:
    """An interval of fractions as percentages (empty when there is none).

    >>> share_interval(0.617, 0.735), share_interval(float("nan"), float("nan"))
    ('61.7%-73.5%', '')
    """
    return "" if not _present(lo) or not _present(hi) else f"{lo:.1%}-{hi:.1%}"


def share_delta_interval(lo: float | None, hi: float | None) -> str:
    """An interval of differences of fractions in percentage points (empty when none).

    >>> share_delta_interval(0.345, 0.577)
    '[+34.5, +57.7] pp'
    """
    if not _present(lo) or not _present(hi):
        return ""
    return f"[{100 * lo:+.1f}, {100 * hi:+.1f}] pp"


def probability(value: float | None) -> str:
    """A transition probability.

    >>> probability(0.4875)
    '0.49'
    """
    return NA if not _present(value) else f"{value:.2f}"


def probability_delta(value: float | None) -> str:
    """A difference of two probabilities.

    >>> probability_delta(0.2875)
    '+0.29'
    """
    return NA if not _present(value) else f"{value:+.2f}"


def seconds(value: float | None) -> str:
    """A duration in seconds, in ms below one second.

    >>> seconds(0.3626), seconds(1.5432), seconds(0.0)
    ('362.6 ms', '1.54 s', '0.0 ms')
    """
    if not _present(value):
        return NA
    if value >= 1:
        return f"{value:.2f} s"
    return f"{value * 1e3:.1f} ms"


def p_value(value: float | None) -> str:
    """A p-value (or a Holm-adjusted one) with two significant digits.

    >>> p_value(0.000499), p_value(4.87e-20), p_value(1.0), p_value(float("nan"))
    ('0.0005', '4.9e-20', '1', 'n/a')
    """
    return NA if not _present(value) else f"{value:.2g}"


def bit_rate(value: float | None) -> str:
    """A rate in bit/s with a readable prefix.

    >>> bit_rate(12_345_678), bit_rate(950.0), bit_rate(2.5e9)
    ('12.35 Mbit/s', '950 bit/s', '2.50 Gbit/s')
    """
    if not _present(value):
        return NA
    for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.2f} {prefix}bit/s"
    return f"{value:.0f} bit/s"


def byte_size(value: float | None) -> str:
    """A size in bytes with a decimal prefix.

    >>> byte_size(2_734_112), byte_size(512), byte_size(15_360)
    ('2.7 MB', '512 bytes', '15.4 kB')
    """
    if not _present(value):
        return NA
    for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.1f} {prefix}B"
    return f"{value:.0f} bytes"


#: The smallest p-value :func:`p_value_report` shows as a number.
P_FLOOR = 1e-4


def p_value_report(value: float | None) -> str:
    """A p-value as the HTML report shows every one: two significant digits in fixed point
    (trailing zeros kept, so every value has the same precision), ``< 0.0001`` below
    :data:`P_FLOOR` (a permutation test's or a t-test's tail that far out is not worth
    more digits).

    >>> [p_value_report(p) for p in (0.000499, 0.00041707, 0.0001, 6.95e-05, 4.87e-20)]
    ['0.00050', '0.00042', '0.00010', '< 0.0001', '< 0.0001']
    >>> p_value_report(1.0), p_value_report(0.05), p_value_report(0.1179), p_value_report(None)
    ('1.0', '0.050', '0.12', 'n/a')
    """
    if not _present(value):
        return NA
    if value < P_FLOOR:
        return f"< {P_FLOOR:g}"
    return f"{value:#.2g}"


def ranking_cells(
    kind: str, a: float, b: float, delta: float, lo: float = float("nan"), hi: float = float("nan")
) -> tuple[str, str, str]:
    """Side A, side B and B - A of one row of a diff's ranking (kind "state": shares, with
    the interval [lo, hi] of the difference; else transition probabilities).

    >>> ranking_cells("state", 0.099, 0.567, 0.468, 0.345, 0.577)
    ('9.9%', '56.7%', '+46.8 [+34.5, +57.7] pp')
    >>> ranking_cells("state", 0.099, 0.567, 0.468)
    ('9.9%', '56.7%', '+46.8 pp')
    >>> ranking_cells("transition", 0.49, 0.78, 0.288)
    ('0.49', '0.78', '+0.29')
    """
    if kind == "state":
        interval = share_delta_interval(lo, hi)  # "[lo, hi] pp": one unit for both
        text = share_delta(delta)
        return share(a), share(b), (text[: -len(" pp")] + f" {interval}") if interval else text
    return probability(a), probability(b), probability_delta(delta)


def decimals_for(spread: float) -> int:
    """Decimals of a figure in percentage points that varies by ``spread`` (a fraction)
    between batches or within its interval: the place of the spread's first significant
    digit, 0 or 1 (never finer than 0.1 points).

    >>> decimals_for(0.067), decimals_for(0.006), decimals_for(0.0004)
    (0, 1, 1)
    """
    if not _present(spread) or spread * 100 >= 1:
        return 0
    return 1


def share_delta_at(
    delta: float, lo: float = float("nan"), hi: float = float("nan"), *, decimals: int = 1
) -> str:
    """A difference of two fractions and its interval in percentage points, to ``decimals``.

    >>> share_delta_at(-0.176, -0.219, -0.133, decimals=0)
    '-18 [-22, -13] pp'
    >>> share_delta_at(0.0012, decimals=1)
    '+0.1 pp'
    """
    if not _present(delta):
        return NA
    text = f"{delta * 100:+.{decimals}f}"
    if _present(lo) and _present(hi):
        text += f" [{lo * 100:+.{decimals}f}, {hi * 100:+.{decimals}f}]"
    return text + " pp"


__all__ = [
    "NA",
    "P_FLOOR",
    "bit_rate",
    "byte_size",
    "decimals_for",
    "p_value",
    "p_value_report",
    "probability",
    "probability_delta",
    "ranking_cells",
    "seconds",
    "share",
    "share_delta",
    "share_delta_at",
    "share_delta_interval",
    "share_interval",
]
