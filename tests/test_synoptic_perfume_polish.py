"""Perfume's polishing (statemine/infer/synoptic/perfume_infer.polish, issue 31): nodes of
one type dissolved and their events placed again by first fit, kept when the model is no
larger; every model valid by the independent reference checker."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_synoptic_perfume import traces_strategy, write_log
from test_synoptic_timeconflicts import _codes, _conn_log, assert_valid

from statemine.infer.synoptic.perfume_infer import (
    _Dissolved,
    _Known,
    _repacked,
    first_fit_model,
    infer_perfume,
    polish,
    repack,
)
from statemine.infer.synoptic.timecheck import BoundCheck, timed_graph
from statemine.infer.synoptic.timeconflicts import perfume_lower_bound, timed_sides


@settings(max_examples=40, deadline=None)
@given(traces_strategy, st.integers(0, 2**16))
def test_polish_keeps_every_invariant_and_never_grows(tmp_path_factory, traces, seed):
    """On random logs: the polished first-fit model accepts every trace and keeps every
    mined invariant (reference checker), has no more nodes, is the same for the same
    seed, and a budget of 0 checks leaves the model as it was."""
    log = write_log(tmp_path_factory.mktemp("p"), traces)
    inv, codes, ticks = _codes(log)
    sides = timed_sides(log, codes, ticks)
    start = first_fit_model(log, codes, ticks, sides)
    model = polish(start, codes, ticks, sides, np.random.default_rng(seed), 300)
    assert_valid(model, log, inv)
    assert model.n_nodes <= start.n_nodes
    again = polish(start, codes, ticks, sides, np.random.default_rng(seed), 300)
    assert np.array_equal(model.part, again.part)
    assert polish(start, codes, ticks, sides, np.random.default_rng(seed), 0) is start


@settings(max_examples=30, deadline=None)
@given(traces_strategy, st.integers(0, 2**16))
def test_what_polishing_keeps_between_trials_is_the_models(tmp_path_factory, traces, seed):
    """Polishing keeps its model's node side values, graph and walks from trial to trial
    (``_Dissolved.result_known``): after chained repacks of random same-type groups they
    equal ``Sides.node_values``, ``timed_graph`` and a ``BoundCheck`` made from scratch
    on the repacked model; the walks a trial starts from (kept where the dissolved nodes
    reach nowhere) give the walks of the dissolved model from scratch; and a repack
    given them makes the same model as one that computes everything."""
    log = write_log(tmp_path_factory.mktemp("v"), traces)
    _, codes, ticks = _codes(log)
    sides = timed_sides(log, codes, ticks)
    model = first_fit_model(log, codes, ticks, sides)
    known = _Known(sides.node_values(model.part, model.n_nodes))
    rng = np.random.default_rng(seed)
    rank = rng.permutation(log.n_events)
    n_types = len(log.types)
    for _ in range(8):
        types, counts = np.unique(model.node_type[2:], return_counts=True)
        if not (counts >= 2).any():
            break
        same = np.nonzero(model.node_type == rng.choice(types[counts >= 2]))[0]
        group = rng.choice(same, int(rng.integers(2, len(same) + 1)), replace=False)
        hood = _repacked(model, codes, ticks, sides, group, rank, [10**6], known)
        plain = repack(model, codes, ticks, sides, group, rank, [10**6])
        if known.walks is not None:
            scratch = _Dissolved.of(model, codes, ticks, sides, group, rank).merges.bounds.fix
            warm = _Dissolved.of(model, codes, ticks, sides, group, rank, known)
            _assert_same_walks(warm.merges.bounds.fix, scratch)
        if hood is None:
            assert plain is None
            continue
        new = hood.result()
        assert plain is not None and np.array_equal(new.part, plain.part)
        known = hood.result_known()
        want = sides.node_values(new.part, new.n_nodes)
        assert np.array_equal(known.values[0], want[0])
        assert np.array_equal(known.values[1], want[1])
        graph = timed_graph(new.part, new.node_type, log, ticks)
        assert known.graph is not None
        for col in ("src", "dst", "wmin", "wmax", "node_type"):
            assert np.array_equal(getattr(known.graph, col), getattr(graph, col)), col
        _assert_same_walks(known.walks, BoundCheck(graph, codes, n_types).fix)
        model = new


def _assert_same_walks(got, want) -> None:
    assert (got is None) == (want is None)
    if got is None:
        return
    for a, b in zip(got.totals, want.totals, strict=True):
        assert np.array_equal(a, b)
    for a, b in zip(got.reach, want.reach, strict=True):
        assert (a is None and b is None) or np.array_equal(a, b)


def test_polish_shrinks_first_fit_on_the_600_event_connection_log(tmp_path):
    """Every pair of same-type nodes of first fit's 134-node model of the benchmark's
    601-event connection log conflicts or breaks an invariant (docs/synoptic-engine.md),
    so coarsening cannot shrink it; polishing (repacking groups of nodes, seed 1, 6,010
    checks: ``POLISH_CHECKS`` per event) gives a valid model (reference checker) of at
    most 126 nodes (bound 86); a repack with no checks left gives None."""
    log = _conn_log(tmp_path, 600)
    inv, codes, ticks = _codes(log)
    sides = timed_sides(log, codes, ticks)
    start = first_fit_model(log, codes, ticks, sides)
    assert start.n_nodes == 134
    model = polish(start, codes, ticks, sides, np.random.default_rng(1), 10 * log.n_events)
    assert_valid(model, log, inv)
    assert perfume_lower_bound(log, codes, ticks) == 86  # 85 from pairwise conflicts
    assert model.n_nodes <= 126
    group = np.nonzero(start.node_type == start.node_type[2])[0][:2]
    assert repack(start, codes, ticks, sides, group, np.arange(log.n_events), [0]) is None


def test_polish_checks_option_is_the_library_parameter(tmp_path):
    """``--polishChecks N`` (statemine's own Perfume option) is ``infer_perfume``'s
    ``polish_checks``: its default is ``POLISH_CHECKS``, 0 gives first fit's 134-node model
    of the 601-event connection log as the library does, the default the library's polished
    one; a negative budget is refused."""
    from click.testing import CliRunner

    from statemine.cli import main
    from statemine.infer.synoptic.options import OPTIONS
    from statemine.infer.synoptic.perfume_infer import POLISH_CHECKS

    assert next(o for o in OPTIONS if o.name == "polishChecks").default == POLISH_CHECKS
    log = _conn_log(tmp_path, 600)  # puts benchmarks/ on sys.path
    _, codes, ticks = _codes(log)
    from bench_perfume import CONN_MAPPING, CONN_REGEX

    args = ["infer", "--engine", "perfume", "-r", CONN_REGEX, "-m", CONN_MAPPING]
    args += ["--randomSeed=1", "-o", str(tmp_path / "m")]
    nodes = {}
    for option in ([], ["--polishChecks=0"]):
        res = CliRunner().invoke(main, [*args, *option, str(tmp_path / "conn.log")])
        assert res.exit_code == 0, res.output
        nodes[len(option)] = int(re.findall(r"(\d+) nodes", res.output)[-1])
    assert nodes[1] == infer_perfume(log, codes, ticks, 1, polish_checks=0).n_nodes == 134
    assert nodes[0] == infer_perfume(log, codes, ticks, 1).n_nodes < 134
    res = CliRunner().invoke(main, [*args, "--polishChecks=-1", str(tmp_path / "conn.log")])
    assert res.exit_code == 2 and "--polishChecks must be 0 or more" in res.output
