"""The Monte Carlo Fisher test of diff's transition tables (``statemine.compare.fisher_mc``):
the same p-values as scipy's ``fisher_exact(method=MonteCarloMethod)`` from the same draws,
and no crash on a table whose total count exceeds the draws x its cells, where scipy 1.17
takes the table for a batch ("cannot reshape array"; seen on 150 quiche runs a side)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from statemine.compare import fisher_mc, transition_test

#: The transitions out of one state of quiche BBR2 (1 MB vs 10 MB, 150 runs a side).
BIG = np.array([[50, 2568, 40, 1], [573, 85848, 652, 45]])


def scipy_mc(table: np.ndarray, n: int, seed: int) -> float:
    method = stats.MonteCarloMethod(n_resamples=n, rng=np.random.default_rng(seed))
    return float(np.asarray(stats.fisher_exact(table, method=method).pvalue).reshape(-1)[0])


def test_the_same_p_values_as_scipy_from_the_same_draws():
    rng = np.random.default_rng(11)
    for i in range(25):
        table = rng.integers(0, 9, size=(2, int(rng.integers(3, 6))))
        table[:, 0] += 1  # no empty column
        assert fisher_mc(table, 999, np.random.default_rng(i)) == scipy_mc(table, 999, i), table


def test_a_table_with_more_transitions_than_draws_times_cells():
    with pytest.raises(ValueError, match="reshape"):  # the scipy behaviour this works around
        scipy_mc(BIG, 9999, 0)
    # scipy gets it right once the draws x cells exceed the count: the same p from the same draws
    assert fisher_mc(BIG, 20_000, np.random.default_rng(1)) == scipy_mc(BIG, 20_000, 1)
    p, test = transition_test(BIG, rng=np.random.default_rng(0))
    assert test == "fisher-mc" and p == fisher_mc(BIG, 9999, np.random.default_rng(0))
    assert 0 < p <= 1e-3
