"""benchmarks/perfume_witness.py (issue 31, helper "seed18"): Perfume models built from
the lower bound's witness, an experiment kept as a benchmark script.  These tests keep
its figures meaningful: the witness colouring is proper and starts from a largest
clique, the checked fit's control variant is the engine's first fit, and every model
the script reports is valid."""

from __future__ import annotations

import sys
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from perfume_witness import (
    anchors,
    broken,
    checked_fit,
    load,
    repaired,
    type_conflicts,
    witness_colouring,
    witness_model,
)

from statemine.infer.synoptic.perfume_infer import first_fit_model
from statemine.infer.synoptic.timeconflicts import timed_sides


@pytest.fixture(scope="module")
def conn():
    """The benchmark's connection log of about 150 events and its sides."""
    log, codes, ticks = load(150)
    return log, codes, ticks, timed_sides(log, codes, ticks)


def test_anchors_are_a_largest_clique():
    """On small random graphs: the anchors are a clique, as large as brute force's."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = int(rng.integers(1, 9))
        adj = rng.random((n, n)) < 0.5
        adj = np.triu(adj, 1)
        adj |= adj.T
        got = anchors(adj)
        assert all(adj[u, v] for u, v in combinations(got, 2))
        best = max(
            (
                len(c)
                for r in range(1, n + 1)
                for c in combinations(range(n), r)
                if all(adj[u, v] for u, v in combinations(c, 2))
            ),
            default=0,
        )
        assert len(got) == best


def test_witness_colouring_is_proper(conn):
    """Per type: no two events of one colour conflict, the anchors take colours 0..m-1,
    and no fewer colours than the clique are used."""
    log, codes, ticks, sides = conn
    for t in range(len(log.types)):
        ev = np.nonzero(log.codes == t)[0]
        adj = type_conflicts(log, codes, ticks, sides, ev)
        col = witness_colouring(adj, sides.p[:, ev].T, sides.s[:, ev].T, sides.limit)
        assert (col >= 0).all()
        assert not (adj & (col[:, None] == col[None, :])).any()
        clique = anchors(adj)
        assert sorted(col[clique].tolist()) == list(range(len(clique)))
        assert col.max() + 1 >= len(clique)


def test_checked_fit_control_is_first_fit_and_models_are_valid(conn):
    """The checked fit in time order, first node, no anchors is the engine's first fit
    (the same node count on the whole log); with anchors it is valid by construction;
    the repaired witness is valid (``repaired`` asserts it) and the witness partition
    has exactly one node per colour."""
    log, codes, ticks, sides = conn
    control, _ = checked_fit(log, codes, ticks, sides, None, "time", "first", False)
    ff = first_fit_model(log, codes, ticks, sides, stage_events=None)
    assert ff is not None and control.n_nodes == ff.n_nodes
    seeded, _ = checked_fit(log, codes, ticks, sides)
    assert broken(seeded, codes, ticks) == (0, 0)
    witness, cliques = witness_model(log, codes, ticks, sides)
    assert witness.n_nodes >= sum(cliques) + 2
    nodes, _ = repaired(witness, codes, ticks, sides, 1, 2)
    assert nodes[0] >= nodes[1] >= nodes[2]
