"""benchmarks/synoptic_exact.py: the CP-SAT evidence of docs/synoptic-engine.md.

Needs OR-Tools (in the ``test`` extra: these tests fail, not skip, without it).  Checked
against the enumeration of every partition of tiny logs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_synoptic_bounds import smallest_model
from test_synoptic_regions import refining

from statemine.infer.synoptic import infer_log
from statemine.infer.synoptic.bounds import node_lower_bound
from statemine.infer.synoptic.regions import free_runs


def exact_module():
    """benchmarks/synoptic_exact.py as a module."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "synoptic_exact.py"
    spec = importlib.util.spec_from_file_location("synoptic_exact", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


EXACT = exact_module() if importlib.util.find_spec("ortools") else None
TINY = st.lists(st.lists(st.sampled_from("abc"), min_size=1, max_size=4), min_size=1, max_size=3)


@settings(max_examples=25, deadline=None)
@given(TINY)
def test_relaxed_bound_lies_between_the_pairwise_bound_and_the_smallest_model(traces):
    """Per type, the fewest vectors with every other event free (type_minimum) summed
    with INITIAL and TERMINAL: at least the pairwise bound, at most the smallest model
    (every partition enumerated); the exact solver's optimum is that smallest model,
    with or without the engine's model as a hint."""
    assert EXACT is not None
    got = refining(traces)
    if got is None or got[0].n_events > 6:
        return
    log, codes, bad, sub = got
    runs = free_runs(log, sub)
    counts = np.bincount(log.codes, minlength=len(log.types))  # caps that bind nothing
    relaxed = 2 + sum(
        EXACT.type_minimum(log, runs, t, int(counts[t]), 10)[1]
        for t in range(len(log.types))
        if counts[t]
    )
    smallest = smallest_model(log, codes)
    assert node_lower_bound(log, codes, bad) <= relaxed <= smallest
    model = infer_log(log, seed=1).model
    for hint in (None, model):
        status, best, low = EXACT.exact(log, codes, bad, counts, 10, hint)
        assert (status, best, low) == ("OPTIMAL", smallest, smallest)


def test_the_relaxed_bound_can_be_tighter_than_the_pairwise_one():
    """A log found by a random search where the order within free runs binds: the
    pairwise bound is 9, the relaxed one 10, the smallest model (every partition
    enumerated) 10."""
    assert EXACT is not None
    got = refining([["d", "b", "a", "c"], ["b", "d", "a", "a", "b", "a"], ["a", "b"]])
    assert got is not None
    log, codes, bad, sub = got
    runs = free_runs(log, sub)
    counts = np.bincount(log.codes, minlength=len(log.types))
    relaxed = 2 + sum(
        EXACT.type_minimum(log, runs, t, int(counts[t]), 10)[1]
        for t in range(len(log.types))
        if counts[t]
    )
    assert (node_lower_bound(log, codes, bad), relaxed) == (9, 10)
    assert relaxed <= smallest_model(log, codes)
