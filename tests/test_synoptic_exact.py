"""The exact polishing stage (statemine.infer.synoptic.exact, CP-SAT) and
benchmarks/synoptic_exact.py, the evidence of docs/synoptic-engine.md.

Needs OR-Tools (the ``exact`` extra, in ``test``: these tests fail, not skip, without
it).  Checked against the enumeration of every partition of tiny logs and the networkx
checker."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_synoptic_bounds import benchmark_module, codes_of, smallest_model
from test_synoptic_regions import capture_log, failing, refining

from statemine.infer.synoptic import exact, infer_log
from statemine.infer.synoptic.bounds import (
    clique_bounds,
    node_lower_bound,
    type_classes,
    type_lower_bounds,
)
from statemine.infer.synoptic.check import check_model
from statemine.infer.synoptic.invariants import mine, mine_invariants
from statemine.infer.synoptic.log import EventLog
from statemine.infer.synoptic.model import PartitionModel
from statemine.infer.synoptic.regions import free_runs

# benchmarks/synoptic_exact.py as a module
EXACT = benchmark_module("synoptic_exact") if importlib.util.find_spec("ortools") else None
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


def test_polish_without_or_tools_is_a_one_line_error_naming_the_extra(monkeypatch):
    """Asked for the exact stage without OR-Tools: a UsageError naming
    ``statemine[exact]``, before any inference; without the stage nothing imports it."""
    from statemine.errors import UsageError

    log = EventLog.from_sequences([["a", "b", "c"], ["x", "b", "d"]])
    monkeypatch.setitem(sys.modules, "ortools.sat.python", None)
    with pytest.raises(UsageError, match=r"pip install 'statemine\[exact\]'") as err:
        infer_log(log, seed=1, exact_budget=1.0)
    assert "\n" not in str(err.value)
    assert infer_log(log, seed=1).model.n_nodes == 8


def test_polish_refuses_an_invalid_model(monkeypatch):
    """A solver answer whose model breaks an invariant (here: every event's bits zero,
    the initial one-node-per-type model) is not returned: polish keeps its input."""
    got = refining([["a", "b", "c"], ["x", "b", "d"]])
    assert got is not None
    log, codes, bad, _sub = got
    model = infer_log(log, seed=1).model
    wrong = exact.Solved("FEASIBLE", 6, 6, [0] * log.n_events, 0.0)
    monkeypatch.setattr(exact, "solve", lambda *args, **kwargs: wrong)
    assert not exact.is_valid(PartitionModel.initial(log), codes)
    out = exact.polish(model, codes, bad, 1.0, seed=1, bound=0)
    assert out is model


@settings(max_examples=20, deadline=None)
@given(TINY, st.integers(0, 3))
def test_polish_is_valid_never_larger_and_deterministic(traces, seed):
    """On tiny logs: the polished model accepts every trace and satisfies every mined
    invariant (the independent networkx checker), lies between the smallest model (every
    partition enumerated) and the engine's, and is the same partition twice."""
    got = refining(traces)
    if got is None or got[0].n_events > 6:
        return
    log, codes, bad, _sub = got
    model = infer_log(log, seed=seed).model
    out = exact.polish(model, codes, bad, 5.0, seed=seed)
    assert smallest_model(log, codes) <= out.n_nodes <= model.n_nodes
    assert check_model(out.to_networkx(), log, mine(log)).ok
    again = exact.polish(model, codes, bad, 5.0, seed=seed)
    assert (again.part == out.part).all()
    # per-type floors (the pairwise clique bounds) hold for every model: the same range
    floors = clique_bounds(type_classes(log, codes, bad))
    low = exact.polish(model, codes, bad, 5.0, seed=seed, type_bounds=floors)
    assert smallest_model(log, codes) <= low.n_nodes <= model.n_nodes
    assert check_model(low.to_networkx(), log, mine(log)).ok


def capture_case(tmp_path, n_events: int, events: int, bound: int):
    """The two-capture log of ``n_events`` (test_synoptic_regions.capture_log), checked
    to have ``events`` events and pairwise bound ``bound``."""
    log = capture_log(n_events, tmp_path)
    codes = codes_of(log, mine_invariants(log))
    assert (log.n_events, node_lower_bound(log, codes)) == (events, bound)
    return log


#: (events asked, events, pairwise bound, nodes of main's engine with seed 1, the gap
#: to the bound reached with ``EXACT_BUDGET``, the CP-SAT budget in deterministic s)
CAPTURES = [
    (600, 619, 49, 51, 2, 5.0),
    (1_000, 1_024, 59, 70, 9, 20.0),
    (3_000, 3_001, 55, 59, 3, 10.0),
    (6_000, 6_010, 55, 66, 4, 20.0),
    (10_000, 10_027, 49, 57, 4, 10.0),
]


@pytest.mark.parametrize(("n_events", "events", "bound", "before", "gap", "budget"), CAPTURES[:3])
def test_two_capture_files_polished_near_the_bound(
    tmp_path, n_events, events, bound, before, gap, budget
):
    """Two capture files merged by connection, seed 1: the engine gave ``before`` nodes
    (619 events: the exact minimum 51; 1,024: 70, exact minimum 68, which CP-SAT finds
    from recombination's 69 within this budget only with the per-type floors of
    ``polish``'s ``type_bounds``: without them it stops at 69; 3,001: 59, exact minimum
    58); polished by CP-SAT within ``gap`` of the bound, valid (every trace
    accepted, every invariant holds: the networkx checker) and the same partition for
    the same seed and budget."""
    log = capture_case(tmp_path, n_events, events, bound)
    res = infer_log(log, seed=1, exact_budget=budget)
    assert res.model.n_nodes <= bound + gap <= before
    assert check_model(res.to_networkx(), log, mine(log)).ok
    again = infer_log(log, seed=1, exact_budget=budget)
    assert (again.model.part == res.model.part).all()


@pytest.mark.slow
@pytest.mark.parametrize(("n_events", "events", "bound", "before", "gap", "budget"), CAPTURES[3:])
def test_large_two_capture_files_polished_near_the_bound(
    tmp_path, n_events, events, bound, before, gap, budget
):
    """The same at 6,010 and 10,027 events (main: 66 and 57 nodes with seed 1; CP-SAT
    reaches 59 and 53, the best models known), about 30-40 s of CPU each."""
    log = capture_case(tmp_path, n_events, events, bound)
    res = infer_log(log, seed=1, exact_budget=budget)
    assert bound <= res.model.n_nodes <= bound + gap < before
    assert check_model(res.to_networkx(), log, mine(log)).ok


def test_the_command_line_option_reaches_the_engine(tmp_path, monkeypatch):
    """``--exact-budget S`` / ``--exactBudget=S`` polish with S deterministic seconds and
    the command's seed; absent or 0, no polishing; a value that is not a number >= 0 is a
    usage error naming the option, and synoptic-jar refuses it."""
    from test_synoptic_bounds import bench_module

    from statemine.errors import UsageError
    from statemine.infer.synoptic import engine
    from statemine.infer.synoptic.command import run_command

    bench = bench_module()  # the 619-event two-capture log: the engine stops above the bound
    paths = bench.write_captures(600, np.random.default_rng(600), tmp_path)
    base = ["-r", bench.CAPTURE_REGEX, "-m", bench.CAPTURE_MAPPING, "--randomSeed=7"]
    base += [str(p) for p in paths]
    calls = []

    def spy(model, inv, failing, budget, seed, bound, type_bounds=None):
        calls.append((budget, seed, bound))
        return model

    monkeypatch.setattr(engine, "polish", spy)
    plain = run_command("synoptic", base).result.model
    assert calls == []
    assert run_command("synoptic", [*base, "--exactBudget=0"]).result.model.n_nodes
    assert calls == []
    for args in (["--exact-budget", "2.5"], ["--exactBudget=2.5"]):
        model = run_command("synoptic", [*base, *args]).result.model
        assert (model.part == plain.part).all()
        assert calls[-1][:2] == (2.5, 7)
    for bad in ("-1", "nan", "fast"):
        with pytest.raises(UsageError, match="--exactBudget takes a number"):
            run_command("synoptic", [*base, f"--exactBudget={bad}"])
    with pytest.raises(UsageError, match="not supported with --engine synoptic-jar"):
        run_command("synoptic-jar", [*base, "--exactBudget=1"])


@settings(max_examples=25, deadline=None)
@given(TINY, st.integers(0, 3), st.sampled_from([None, 0, 2]))
def test_proved_bound_lies_between_the_pairwise_bound_and_the_smallest_model(traces, seed, slack):
    """On tiny logs: the proved bound (per-type relaxed bounds, then CP-SAT's bound
    under caps of the engine's groups plus ``slack`` or, None, caps that cut off no
    smaller model) is at least the pairwise bound and at most the smallest model (every
    partition enumerated), the engine's model and the polished one; with caps that cut
    nothing and enough budget it is that smallest model."""
    got = refining(traces)
    if got is None or got[0].n_events > 6:
        return
    log, codes, bad, _sub = got
    lows = type_lower_bounds(log, codes, bad)
    model = infer_log(log, seed=seed).model
    proved = exact.proved_bound(model, codes, bad, lows, 10.0, seed, 5.0, slack)
    polished = exact.polish(model, codes, bad, 5.0, seed=seed)
    smallest = smallest_model(log, codes)
    assert node_lower_bound(log, codes, bad) <= proved.bound <= smallest
    assert smallest <= polished.n_nodes <= model.n_nodes
    if slack is None:
        assert proved.bound == smallest
    assert (proved.type_bounds >= lows).all()


@settings(max_examples=20, deadline=None)
@given(TINY, st.integers(0, 3))
def test_raised_bound_lies_between_the_proved_bound_and_the_smallest_model(traces, seed):
    """On tiny logs: raising the slack (exact.raised_bound, slack 0 up to 3) never
    lowers the proved bound of slack 0 and never passes the smallest model (every
    partition enumerated)."""
    got = refining(traces)
    if got is None or got[0].n_events > 6:
        return
    log, codes, bad, _sub = got
    lows = type_lower_bounds(log, codes, bad)
    model = infer_log(log, seed=seed).model
    plain = exact.proved_bound(model, codes, bad, lows, 10.0, seed, 5.0, 0)
    raised = exact.raised_bound(model, codes, bad, lows, 10.0, seed, 5.0, 0, 3)
    assert plain.bound <= raised.bound <= smallest_model(log, codes)


#: (events asked, events, pairwise bound, first slack, the proved minimum): the proved
#: bounds were 64, 52 and 48 with two spare slots per type (the models outside the caps
#: held them there; at 1,024 events CP-SAT does not finish under those caps in 60
#: deterministic s).
RAISED = [(1_000, 1_024, 59, 3, 68), (10_000, 10_027, 49, 3, 53), (20_000, 20_023, 43, 5, 50)]


@pytest.mark.slow
@pytest.mark.parametrize(("n_events", "events", "bound", "slack", "minimum"), RAISED)
def test_raised_bound_proves_the_minimum(tmp_path, n_events, events, bound, slack, minimum):
    """Two-capture logs of 1,024, 10,027 and 20,023 events: with the slack raised the
    proved bound is the size of the best model known (CP-SAT's under the last caps), so
    it is the minimum, and the default path is within 3 of it (10,027 and 20,023 events:
    on it).  About 150, 30 and 60 CPU s (peak 1.4 GB at 20,023 events)."""
    log = capture_case(tmp_path, n_events, events, bound)
    codes = codes_of(log, mine_invariants(log))
    bad, _sub = failing(log, codes)
    model = infer_log(log, seed=1).model
    lows = type_lower_bounds(log, codes, bad)
    got = exact.raised_bound(model, codes, bad, lows, 60.0, 1, 20.0, slack, 8)
    assert (got.bound, got.solved.status, got.solved.nodes) == (minimum, "OPTIMAL", minimum)
    assert minimum <= model.n_nodes <= got.bound + 3


@pytest.mark.parametrize(
    ("extra", "status", "capped"), [(0, "INFEASIBLE", None), (1, "OPTIMAL", 10)]
)
def test_a_bound_under_caps_that_bind_is_lowered_to_a_valid_one(extra, status, capped):
    """The 12-event log whose smallest model (10 nodes, every partition enumerated)
    needs one node more than the pairwise bound (9) in one type: under caps of the
    pairwise bound CP-SAT finds no model (taken as is, an infinite bound), under one
    more per type the minimum; :func:`exact.uncapped_bound` of either is 10, no more
    than the smallest model.  (On logs of up to 8 events no random log was found where
    the caps bind.)"""
    got = refining([["d", "b", "a", "c"], ["b", "d", "a", "a", "b", "a"], ["a", "b"]])
    assert got is not None
    log, codes, bad, sub = got
    lows = type_lower_bounds(log, codes, bad)
    caps = np.where(lows > 0, lows + extra, 0)
    found = exact.solve(log, free_runs(log, sub), caps, 10.0)
    assert found.status == status
    bound = float("inf") if status == "INFEASIBLE" else found.bound
    assert capped is None or found.bound == capped
    assert exact.uncapped_bound(bound, caps, lows) == 10 == smallest_model(log, codes)


def test_uncapped_bound_takes_the_models_outside_the_caps_into_account():
    """Types with bounds 2 and 3 (7 nodes with INITIAL and TERMINAL), caps 3 and 5: a
    model outside them has at least 4 + 3 + 2 = 9 nodes (more than 3 of the first
    type) or 2 + 6 + 2 = 10, so a capped bound of 12 gives 9, and a capped bound of 8
    stays 8; a type without events (bound 0) never binds."""
    lows, caps = np.array([2, 3, 0]), np.array([3, 5, 0])
    assert exact.uncapped_bound(12, caps, lows) == 9
    assert exact.uncapped_bound(8, caps, lows) == 8
    assert exact.uncapped_bound(float("inf"), caps, lows) == 9


def test_the_proved_bound_is_tighter_than_the_pairwise_one_on_named_logs(tmp_path):
    """A 12-event log where the order within free runs binds: pairwise bound 9, CP-SAT
    under caps of the pairwise bound alone finds no model (a bound that ignored the caps
    would be wrong), the proved bound is 10, the smallest model (every partition
    enumerated).  The 619-event two-capture log: pairwise 49, proved 51, the engine's
    model (seed 1), which is therefore a smallest model."""
    got = refining([["d", "b", "a", "c"], ["b", "d", "a", "a", "b", "a"], ["a", "b"]])
    assert got is not None
    log, codes, bad, sub = got
    lows = type_lower_bounds(log, codes, bad)
    assert exact.solve(log, free_runs(log, sub), lows, 10.0).status == "INFEASIBLE"
    model = infer_log(log, seed=1).model
    proved = exact.proved_bound(model, codes, bad, lows, 10.0, 1)
    assert (int(lows.sum()) + 2, proved.bound, smallest_model(log, codes)) == (9, 10, 10)
    log = capture_case(tmp_path, 600, 619, 49)
    codes = codes_of(log, mine_invariants(log))
    bad, _sub = failing(log, codes)
    model = infer_log(log, seed=1).model
    lows = type_lower_bounds(log, codes, bad)
    proved = exact.proved_bound(model, codes, bad, lows, 5.0, 1, type_limit=5.0)
    assert (proved.bound, model.n_nodes) == (51, 51)
    assert proved.solved.status == "OPTIMAL"


def test_each_solver_run_is_in_a_child_that_may_die_or_fail(monkeypatch):
    """CP-SAT runs in a forked child (OR-Tools 9.15.6755 segfaults now and then,
    google/or-tools#5025): a child killed by a signal is an answer without a model
    ("CRASHED", the bound known before), after which polish keeps its input; an
    exception in the child is raised again in the parent, not swallowed."""
    import os
    import signal

    assert exact.isolated(lambda: [1, (2, 3)]) == [1, (2, 3)]
    with pytest.warns(exact.SolverCrashWarning, match="exit status -9"):
        assert exact.isolated(lambda: os.kill(os.getpid(), signal.SIGKILL)) is None
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        exact.isolated(lambda: 1 // 0)
    got = refining([["a", "b", "c"], ["x", "b", "d"]])
    assert got is not None
    log, codes, bad, sub = got
    model = infer_log(log, seed=1).model
    monkeypatch.setattr(exact, "isolated", lambda fn: None)
    caps = np.full(len(log.types), 3)
    solved = exact.solve(log, free_runs(log, sub), caps, 1.0, floor=5)
    assert (solved.status, solved.nodes, solved.bound, solved.vectors) == ("CRASHED", -1, 5, None)
    assert exact.polish(model, codes, bad, 1.0, seed=1) is model


def test_a_dead_solver_process_is_one_line_on_stderr(tmp_path, monkeypatch):
    """When CP-SAT's process dies during ``--exactBudget`` (OR-Tools 9.15.6755 segfaults
    now and then), the command still writes the engine's valid model and says so in one
    line on stderr, once, whatever the number of runs that died."""
    import os
    import signal

    from test_synoptic_bounds import bench_module

    from statemine.infer.synoptic.command import run_command

    bench = bench_module()  # the 619-event two-capture log: the engine stops above the bound
    paths = bench.write_captures(600, np.random.default_rng(600), tmp_path)
    args = ["-r", bench.CAPTURE_REGEX, "-m", bench.CAPTURE_MAPPING, "--randomSeed=7"]
    args += ["-o", str(tmp_path / "m"), *map(str, paths)]
    plain = run_command("synoptic", args)
    cp = exact.cp_model()
    monkeypatch.setattr(cp.CpSolver, "solve", lambda self, m: os.kill(os.getpid(), signal.SIGKILL))
    got = run_command("synoptic", [*args, "--exactBudget=2"])
    died = [m for m in got.messages if "CP-SAT's process died" in m]
    assert died == ["warning: CP-SAT's process died (exit status -9); this step's model is kept"]
    assert got.result.model.n_nodes == plain.result.model.n_nodes
    assert [m for m in plain.messages if "warning" in m] == []
