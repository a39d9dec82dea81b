"""The regex reader's fast paths give what the general ones give: first_seen_codes' O(n)
paths (sorted integers, integers already first-seen coded) against the sort-based
definition, and _parse_time's plain-digits path against Synoptic's rules spelt out."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from statemine.parse.regex import _parse_time, first_seen_codes


def _by_sorting(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The definition: distinct values numbered by their first position."""
    uniq, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(uniq))
    return rank[inverse], uniq[np.argsort(first, kind="stable")]


@pytest.mark.parametrize("shape", ["random", "sorted", "first-seen", "negative", "strings"])
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint16])
def test_every_path_equals_the_definition(shape, dtype):
    rng = np.random.default_rng(7)
    for _ in range(300):
        n, k = int(rng.integers(1, 40)), int(rng.integers(1, 7))
        values = rng.integers(-3 if shape == "negative" else 0, k, n)
        if shape == "sorted":
            values = np.sort(values)
        elif shape == "first-seen":
            values = _by_sorting(values)[0]
        if shape == "strings":
            values = np.array([f"t{v}" for v in values], dtype=object)
        elif shape != "negative":
            values = values.astype(dtype)
        codes, uniques = first_seen_codes(values)
        want_codes, want_uniques = _by_sorting(values)
        assert codes.dtype == np.int64
        assert codes.tolist() == want_codes.tolist()
        assert uniques.tolist() == want_uniques.tolist()
        assert uniques.dtype == want_uniques.dtype


def _time_by_rules(kind: str, text: str) -> tuple[float, str]:
    """Synoptic's time rules for ASCII digits (with white space around): TIME/LTIME an
    integer in 31/63 bits, printed without leading zeros; DTIME/FTIME a finite decimal,
    printed as written."""
    text = text.strip()
    if kind in ("TIME", "LTIME"):
        value = int(text)
        if value >= 1 << (31 if kind == "TIME" else 63):
            raise ValueError(text)
        return float(value), str(value)
    if not math.isfinite(float(text)):
        raise ValueError(text)
    return float(text), text


@pytest.mark.parametrize("kind", ["TIME", "LTIME", "DTIME", "FTIME"])
def test_plain_digit_times_parse_as_the_rules_say(kind):
    """Plain ASCII digits (the fast path) and the same with white space around (the
    regexes' path) parse as the rules say, at every length around the range limits."""
    rng = random.Random(3)
    texts = ["0", "00", "007", "2147483647", "2147483648", "999999999", "1" * 300, "1" * 309]
    texts += ["9223372036854775807", "9223372036854775808", " 12", "012 "]
    texts += [
        "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 25))) for _ in range(3000)
    ]
    for text in texts:
        try:
            want: tuple[float, str] | str = _time_by_rules(kind, text)
        except ValueError:
            want = "refused"
        try:
            got: tuple[float, str] | str = _parse_time(kind, text, 1)
        except ValueError:
            got = "refused"
        assert got == want, (kind, text)
