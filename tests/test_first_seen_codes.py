"""first_seen_codes: its O(n) paths (sorted integers, integers already first-seen
coded) give what the sort-based definition (np.unique, ranks by first position) gives."""

from __future__ import annotations

import numpy as np
import pytest

from statemine.parse.regex import first_seen_codes


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
