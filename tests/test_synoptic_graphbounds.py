"""Exact clique and colouring bounds within a step budget
(statemine/infer/synoptic/graphbounds.py), against networkx's clique enumeration and a
brute-force chromatic number."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from statemine.infer.synoptic.graphbounds import (
    chromatic_lower_bound,
    greedy_clique,
    largest_clique,
    max_clique,
    twin_quotient,
)


def _graph(n: int, edges: list[tuple[int, int]]) -> np.ndarray:
    adj = np.zeros((n, n), dtype=bool)
    for u, v in edges:
        if u != v:
            adj[u, v] = adj[v, u] = True
    return adj


def _chromatic(adj: np.ndarray) -> int:
    """The chromatic number by trying every colouring with 1, 2, ... colours."""
    n = len(adj)
    pairs = np.argwhere(np.triu(adj))
    for k in range(1, n + 1):
        for col in itertools.product(range(k), repeat=n):
            if all(col[u] != col[v] for u, v in pairs):
                return k
    return n


graphs = st.integers(1, 8).flatmap(
    lambda n: st.tuples(
        st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)))
    )
)


@settings(max_examples=150, deadline=None)
@given(graphs)
def test_clique_and_chromatic_number_are_exact_on_small_graphs(case):
    n, edges = case
    adj = _graph(n, edges)
    want = max((len(c) for c in nx.find_cliques(nx.from_numpy_array(adj))), default=0)
    assert max_clique(adj) == (want, True)
    members, proven = largest_clique(adj)
    assert proven and len(members) == want == len(set(members))
    assert all(adj[u, v] for u, v in itertools.combinations(members, 2))
    assert greedy_clique(adj) <= want
    chromatic = _chromatic(adj)
    assert chromatic_lower_bound(adj, want) == (chromatic, True)
    # from any smaller clique the search climbs to the same number
    assert chromatic_lower_bound(adj, 1) == (chromatic, True)
    quotient = twin_quotient(adj)
    assert len(quotient) <= n and _chromatic(quotient) == chromatic


def test_an_odd_cycle_needs_three_colours_beyond_its_clique():
    """C5 (clique 2, chromatic 3) and the Mycielski graph of it, the Groetzsch graph
    (clique 2, chromatic 4): the colouring bound passes the clique bound."""
    c5 = _graph(5, [(i, (i + 1) % 5) for i in range(5)])
    assert max_clique(c5) == (2, True)
    assert chromatic_lower_bound(c5, 2) == (3, True)
    grotzsch = nx.to_numpy_array(nx.mycielski_graph(4)).astype(bool)
    assert max_clique(grotzsch) == (2, True)
    assert chromatic_lower_bound(grotzsch, 2) == (4, True)


def test_out_of_budget_answers_stay_lower_bounds():
    """With one step the searches stop unproven, and what they return is still at most
    the true value (a clique found, the last proven colouring bound)."""
    rng = np.random.default_rng(7)
    upper = np.triu(rng.random((60, 60)) < 0.5, 1)
    adj = upper | upper.T
    exact, proven = max_clique(adj)
    assert proven
    size, proven = max_clique(adj, steps=1)
    assert not proven and 1 <= size <= exact
    bound, proven = chromatic_lower_bound(adj, exact, steps=1)
    assert not proven and bound == exact
    assert chromatic_lower_bound(adj, exact)[0] >= exact


def test_false_twins_merge():
    """Vertices 0 and 1 see exactly {2, 3} and not each other: one class."""
    adj = _graph(5, [(0, 2), (0, 3), (1, 2), (1, 3), (2, 4)])
    assert len(twin_quotient(adj)) == 4
