"""benchmarks/perfume_population.py (issue 31, session 28): a population of Perfume models
bred by crossover, an experiment kept as a benchmark script.  These tests keep its
figures meaningful: the crossovers give what they say, a child is valid by the
reference written from Perfume's semantics (tests/perfume_reference.py), a model crossed
with itself comes back whole, and the search is deterministic and never returns a model
larger than its starting population's best."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from perfume_reference import read_model_json, rejected, violated_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_perfume import load_conn
from perfume_population import child, evolve, gpx_groups, type_groups

from statemine.infer.synoptic.formats import to_json
from statemine.infer.synoptic.perfume_infer import first_fit_rank, infer_perfume
from statemine.infer.synoptic.timeconflicts import timed_sides


@pytest.fixture(scope="module")
def conn():
    """The benchmark's connection log of about 150 events, its invariants, two of the
    engine's models (seeds 1 and 2) and first fit's event ranks."""
    log, frame, codes, ticks = load_conn(150)
    sides = timed_sides(log, codes, ticks)
    rank = first_fit_rank(log, ticks)
    a, b = (infer_perfume(log, codes, ticks, s) for s in (1, 2))
    return log, frame, codes, ticks, sides, rank, a, b


def _reference_faults(model, frame, path: Path) -> tuple[int, int]:
    """(traces the written model rejects, constrained invariants it breaks), by the
    reference."""
    path.write_text(to_json(model, frame))
    g, traces = read_model_json(path)
    return len(rejected(g, traces)), len(violated_rows(g, frame.to_dict("records")))


def _node_sets(model, events: np.ndarray) -> set[frozenset[int]]:
    """The events of each of ``model``'s nodes that hold some of ``events``."""
    return {
        frozenset(np.nonzero(model.part == q)[0].tolist()) for q in np.unique(model.part[events])
    }


def test_type_groups_take_each_type_whole_from_one_parent(conn):
    log, _, _, _, _, _, a, b = conn
    for seed in range(5):
        groups = type_groups(log, a, b, np.random.default_rng(seed))
        assert sorted(np.concatenate(groups).tolist()) == list(range(log.n_events))
        assert [len(g) for g in groups] == sorted((len(g) for g in groups), reverse=True)
        for t in range(len(log.types)):
            mine = {frozenset(g.tolist()) for g in groups if log.codes[g[0]] == t}
            of_t = np.nonzero(log.codes == t)[0]
            assert mine in (_node_sets(a, of_t), _node_sets(b, of_t))


def _greedy_from(groups: list[np.ndarray], parts: list[np.ndarray], first: int) -> bool:
    """Are ``groups`` the greedy partition crossover's with parent ``first`` first: each
    the free events of one node of the parent in turn, as many as the most any of its
    nodes has free, at least two; and then no node of the parent in turn has two?"""
    free = np.ones(len(parts[0]), dtype=bool)
    for k, g in enumerate(groups):
        part = parts[(first + k) % 2]
        mates = np.nonzero(free & (part == part[g[0]]))[0]
        if mates.tolist() != sorted(g.tolist()) or len(g) < 2:
            return False
        if len(g) != np.bincount(part[free]).max():
            return False
        free[g] = False
    last = parts[(first + len(groups)) % 2]
    return not free.any() or np.bincount(last[free]).max() < 2


def test_gpx_groups_are_greedy_and_alternate(conn):
    log, _, _, _, _, _, a, b = conn
    for seed in range(5):
        groups = gpx_groups(log, a, b, np.random.default_rng(seed))
        assert len(groups) > 2
        assert _greedy_from(groups, [a.part, b.part], 0) or _greedy_from(
            groups, [a.part, b.part], 1
        )


def test_a_model_crossed_with_itself_comes_back(conn):
    """Every merge of a parent's own nodes is a coarsening of a refinement of a valid
    model, so each holds: the child is the parent, node for node."""
    log, _, codes, ticks, sides, rank, a, _ = conn
    back = child(a, type_groups(log, a, a, np.random.default_rng(0)), codes, ticks, sides, rank)
    assert back.n_nodes == a.n_nodes
    assert len({(x, y) for x, y in zip(a.part.tolist(), back.part.tolist())}) == a.n_nodes - 2


@pytest.mark.parametrize("crossover", [type_groups, gpx_groups])
def test_children_are_valid_by_the_reference(conn, crossover, tmp_path):
    log, frame, codes, ticks, sides, rank, a, b = conn
    for seed in range(3):
        groups = crossover(log, a, b, np.random.default_rng(seed))
        made = child(a, groups, codes, ticks, sides, rank)
        assert made.n_nodes >= 2
        assert _reference_faults(made, frame, tmp_path / "m.json") == (0, 0)


def test_evolve_is_deterministic_valid_and_no_worse(conn, tmp_path):
    log, frame, codes, ticks, _, _, _, _ = conn
    start = min(infer_perfume(log, codes, ticks, s, polish_checks=8).n_nodes for s in (1, 2, 3))
    lines: list[str] = []
    best = evolve(log, codes, ticks, 1, 3, 4, 8, type_groups, lines.append)
    again = evolve(log, codes, ticks, 1, 3, 4, 8, type_groups)
    assert np.array_equal(best.part, again.part)
    assert best.n_nodes <= start
    assert len(lines) == 3 + 4
    assert _reference_faults(best, frame, tmp_path / "m.json") == (0, 0)
