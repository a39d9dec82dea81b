"""The exact CP-SAT formulation of a Perfume model's validity
(statemine/infer/synoptic/perfume_cpsat.py, issue 31): its optimum is the exact minimum
of tests/perfume_exact.py, every model it gives passes the engine's checker and the
independent reference, and ``--exactBudget`` polishes ``--engine perfume``'s model."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from perfume_exact import exact_minimum, shaped, tiny_logs
from test_synoptic_perfume import write_log
from test_synoptic_timeconflicts import _codes, _conn_log, assert_valid

from statemine.infer.synoptic import exact, perfume_cpsat
from statemine.infer.synoptic.perfume_infer import infer_perfume

pytest.importorskip("ortools", reason="the exact stage needs OR-Tools (statemine[exact])")


@settings(max_examples=30, deadline=None)
@given(tiny_logs, st.sampled_from(["none", "source", "loop"]))
def test_cpsat_optimum_is_the_exact_minimum(tmp_path_factory, traces, shape):
    """On random tiny logs (up to 15 events of three types, 14 with ``loop``; ``source``: each trace starts
    with an ``s`` found nowhere else, so AlwaysPrecedes' first-``a`` rule times walks
    from it; ``loop``: a trace repeats a type with positive delays, so merging its events
    makes a positive cycle) CP-SAT, with as many slots per type as events (no cap),
    proves an optimum equal to tests/perfume_exact.py's proven minimum, and its model
    passes the engine's checker (timecheck.violations) and the reference."""
    traces = shaped(traces, shape)
    log = write_log(tmp_path_factory.mktemp("x"), traces)
    inv, codes, ticks = _codes(log)
    exact, proven = exact_minimum(log, codes, ticks, log.n_events + 3, budget_s=20)
    caps = np.bincount(log.codes, minlength=len(log.types))
    got = perfume_cpsat.solve(log, codes, ticks, caps, 30.0)
    assert got.status == "OPTIMAL" and got.model is not None
    assert perfume_cpsat.valid(got.model, codes, ticks)
    assert_valid(got.model, log, inv)
    if proven:
        assert got.nodes == exact == got.bound
        # the bound made valid without caps, from the caps of the optimum's counts
        assert perfume_cpsat.proved_bound(got.model, codes, ticks, 30.0).bound <= exact


def test_every_invariant_kind_constrains_the_solver(tmp_path):
    """A log whose minimum needs each kind of argument: the unconstrained (every event of
    a type in one node) model breaks invariants, CP-SAT's optimum does not, and it equals
    the exact minimum; with one slot per type the problem is infeasible."""
    traces = [
        [("s", "0"), ("a", "1"), ("b", "5"), ("a", "1"), ("c", "1")],
        [("s", "0"), ("a", "4"), ("c", "1")],
        [("s", "0"), ("b", "1"), ("a", "1"), ("b", "2")],
    ]
    log = write_log(tmp_path, traces)
    inv, codes, ticks = _codes(log)
    caps = np.bincount(log.codes, minlength=len(log.types))
    got = perfume_cpsat.solve(log, codes, ticks, caps, 30.0)
    exact, proven = exact_minimum(log, codes, ticks, log.n_events + 3, budget_s=30)
    assert proven and got.status == "OPTIMAL" and got.nodes == exact
    assert got.model is not None
    assert_valid(got.model, log, inv)
    ones = np.ones(len(log.types), dtype=np.int64)
    assert exact > len(log.types) + 2  # one node per type is not valid here
    assert perfume_cpsat.solve(log, codes, ticks, ones, 30.0).status == "INFEASIBLE"


def test_polish_never_returns_a_model_the_checker_rejects(tmp_path, monkeypatch):
    """A solver answer that breaks an invariant (a formulation error: here the one-node-
    per-type model) is never used: polish keeps its input model."""
    log = _conn_log(tmp_path, 40)
    _, codes, ticks = _codes(log)
    model = infer_perfume(log, codes, ticks, 1)
    from statemine.infer.synoptic.model import PartitionModel

    wrong = PartitionModel.initial(log)
    assert not perfume_cpsat.valid(wrong, codes, ticks)
    answer = perfume_cpsat.Solved("FEASIBLE", wrong, wrong.n_nodes, 0, 0.0)
    monkeypatch.setattr(perfume_cpsat, "solve", lambda *args, **kwargs: answer)
    assert perfume_cpsat.polish(model, codes, ticks, 5.0, 1) is model
    assert perfume_cpsat.polish(model, codes, ticks, 5.0, 1, whole_events=0) is model


def test_exact_minimum_of_a_100_event_connection_log(tmp_path):
    """The benchmark's 100-event connection log (107 events): with caps that cut off no
    model smaller than the engine's (``proved_bound(slack=None)``) CP-SAT proves the
    engine's 59 nodes the minimum of every valid model (perfume_lower_bound: 50); its
    model passes the reference.  With the engine's own counts as caps (``slack=0``) the
    bound made valid without caps is smaller (51: the caps leave no room)."""
    from statemine.infer.synoptic.timeconflicts import perfume_lower_bound

    log = _conn_log(tmp_path, 100)
    inv, codes, ticks = _codes(log)
    model = infer_perfume(log, codes, ticks, 1)
    got = perfume_cpsat.proved_bound(model, codes, ticks, 30.0, 1, None)
    assert got.solved.model is not None
    assert_valid(got.solved.model, log, inv)
    assert got.solved.status == "OPTIMAL"
    assert got.bound == got.capped == got.solved.nodes == model.n_nodes == 59
    assert perfume_lower_bound(log, codes, ticks) == 50
    capped = perfume_cpsat.proved_bound(model, codes, ticks, 30.0, 1, 0)
    assert capped.capped == 59 and capped.bound == 51


def test_exact_budget_shrinks_the_300_event_connection_model(tmp_path):
    """``--exactBudget 2`` with ``--engine perfume --polishChecks 8`` on the benchmark's
    305-event connection log (313 events), seed 1: that model has 111 nodes (113 before
    merges that must fail were skipped, helper "perfumehood"; 112 before those on
    AlwaysPrecedes' bounds, session 23; the default's 16 checks per event give 110,
    which these neighbourhoods do not shrink); neighbourhoods solved by CP-SAT give a
    valid model (reference) of at most 110, the same in two runs."""
    from click.testing import CliRunner

    from statemine.cli import main

    log = _conn_log(tmp_path, 305)  # puts benchmarks/ on sys.path
    inv, codes, ticks = _codes(log)
    from bench_perfume import CONN_MAPPING, CONN_REGEX

    args = ["infer", "--engine", "perfume", "-r", CONN_REGEX, "-m", CONN_MAPPING]
    args += ["--randomSeed=1", "--polishChecks=8", "--outputJSON=true", "-o", str(tmp_path / "m")]
    res = CliRunner().invoke(main, [*args, str(tmp_path / "conn.log")])
    assert res.exit_code == 0, res.output
    assert int(re.findall(r"(\d+) nodes", res.output)[-1]) == 111
    model = infer_perfume(log, codes, ticks, 1, polish_checks=8, exact_budget=2.0)
    assert model.n_nodes <= 110
    assert_valid(model, log, inv)
    res = CliRunner().invoke(main, [*args, "--exactBudget", "2", str(tmp_path / "conn.log")])
    assert res.exit_code == 0, res.output
    assert int(re.findall(r"(\d+) nodes", res.output)[-1]) == model.n_nodes


def test_exact_budget_without_or_tools_or_integer_ticks_is_refused(tmp_path, monkeypatch):
    """Without OR-Tools, ``--engine perfume --exactBudget`` gives Synoptic's one-line
    error naming ``statemine[exact]``; times that are no exact integers (``int_ticks``)
    are refused with their reason."""
    from click.testing import CliRunner

    from statemine.cli import main

    (tmp_path / "in.log").write_text("0 a\n1 b\n--\n0 a\n2 b\n")
    args = ["infer", "--engine", "perfume", "-r", r"^(?<DTIME>)(?<TYPE>)$", "-s", "^--$"]
    args += ["--exactBudget", "1", "-o", str(tmp_path / "m"), str(tmp_path / "in.log")]
    monkeypatch.setitem(sys.modules, "ortools.sat.python", None)
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2 and "pip install 'statemine[exact]'" in res.output
    _, codes, _ = _codes(_conn_log(tmp_path, 40))
    reason = perfume_cpsat.int_ticks(np.array([0.0, 0.5]), codes)
    assert isinstance(reason, str) and "integer" in reason
    reason = perfume_cpsat.int_ticks(np.array([0.0, 2.0**60]), codes)
    assert isinstance(reason, str) and "2**50" in reason


@pytest.mark.slow
def test_exact_budget_solves_the_600_event_connection_log_whole(tmp_path):
    """The benchmark's 601-event connection log, seed 1: the default (polished) model has
    124 nodes (121 with main's newer engine); ``exact_budget=10`` (at least ``WHOLE_SECONDS`` per event: the whole
    formulation) gives a valid model (reference) of at most 120 (measured 117; the
    engine's own polishing reached 118 with 1,000 trials).  About 75 CPU s."""
    log = _conn_log(tmp_path, 600)
    inv, codes, ticks = _codes(log)
    default = infer_perfume(log, codes, ticks, 1).n_nodes  # 124 here, 121 on main since
    model = infer_perfume(log, codes, ticks, 1, exact_budget=10.0)
    assert model.n_nodes <= min(120, default - 1)
    assert_valid(model, log, inv)


def test_a_solver_crash_keeps_the_input_model(tmp_path, monkeypatch):
    """Each CP-SAT run happens in a forked child (OR-Tools 9.15.6755 segfaulted now and
    then on 1,000-event logs): a child killed by a signal gives None, and polish then
    keeps its input model; a child that returns gives its result."""
    import os
    import signal

    assert perfume_cpsat.isolated(lambda: (1, [2, 3])) == (1, [2, 3])
    with pytest.warns(exact.SolverCrashWarning, match="exit status -11"):
        assert perfume_cpsat.isolated(lambda: os.kill(os.getpid(), signal.SIGSEGV)) is None
    log = _conn_log(tmp_path, 40)
    _, codes, ticks = _codes(log)
    model = infer_perfume(log, codes, ticks, 1)
    monkeypatch.setattr(perfume_cpsat, "isolated", lambda fn: None)
    assert perfume_cpsat.solve(log, codes, ticks, np.array([50] * 8), 5.0).status == "CRASHED"
    assert perfume_cpsat.polish(model, codes, ticks, 5.0, 1) is model


@settings(max_examples=25, deadline=None)
@given(tiny_logs, st.sampled_from(["none", "source", "loop"]), st.sampled_from(["events", "one"]))
def test_type_relaxation_bound_is_below_the_exact_minimum(tmp_path_factory, traces, shape, caps):
    """On random tiny logs (the shapes above) the per-type relaxation bound is at least
    the per-type conflict and untimed bounds (``type_lows``) and at most the proven exact
    minimum of tests/perfume_exact.py (with the levels argument added too); per type at most the nodes of that type in
    CP-SAT's optimum (a valid model: engine's checker); with caps of as many slots as
    events and with one slot per type (the ``min(B, cap + 1)`` argument)."""
    traces = shaped(traces, shape)
    log = write_log(tmp_path_factory.mktemp("x"), traces)
    _, codes, ticks = _codes(log)
    counts = np.bincount(log.codes, minlength=len(log.types))
    cap = counts if caps == "events" else np.minimum(counts, 1)
    got = perfume_cpsat.type_relaxation_bound(log, codes, ticks, cap, 10.0)
    lows = perfume_cpsat.type_lows(log, codes, ticks)
    assert (got.per_type >= lows).all() and got.bound == int(got.per_type.sum()) + 2
    assert got.bound >= int(lows.sum()) + 2
    best = perfume_cpsat.solve(log, codes, ticks, counts, 30.0)
    assert best.status == "OPTIMAL" and best.model is not None
    assert perfume_cpsat.valid(best.model, codes, ticks)
    _, best_counts = perfume_cpsat.slots_of(best.model)
    assert (got.per_type <= best_counts).all()
    exact, proven = exact_minimum(log, codes, ticks, log.n_events + 3, budget_s=20)
    if proven:
        assert got.bound + got.levels <= exact


def test_type_relaxation_bound_reaches_the_minimum_of_an_82_event_log(tmp_path):
    """The benchmark's 80-event connection log (82 events): ``perfume_lower_bound`` says
    38; the per-type relaxation (caps: the engine's nodes per type, all four solved types
    OPTIMAL) says 42, the exact minimum that CP-SAT proves on the whole problem
    (``proved_bound(slack=None)``, OPTIMAL); per type never above the engine's valid
    model (43 nodes)."""
    from statemine.infer.synoptic.timeconflicts import perfume_lower_bound

    log = _conn_log(tmp_path, 80)
    _, codes, ticks = _codes(log)
    model = infer_perfume(log, codes, ticks, 1)
    assert perfume_cpsat.valid(model, codes, ticks) and model.n_nodes == 43
    _, counts = perfume_cpsat.slots_of(model)
    got = perfume_cpsat.type_relaxation_bound(log, codes, ticks, counts, 10.0, 1)
    assert perfume_lower_bound(log, codes, ticks) == 38
    assert got.bound == 42 and set(got.status.values()) == {"OPTIMAL"}
    assert (got.per_type <= counts).all()
    exact = perfume_cpsat.proved_bound(model, codes, ticks, 30.0, 1, None)
    assert exact.solved.status == "OPTIMAL" and exact.bound == exact.solved.nodes == 42


def test_a_dead_solver_process_is_one_line_on_stderr_for_perfume(tmp_path, monkeypatch):
    """``--engine perfume --exactBudget``: when every CP-SAT process dies, the command
    writes the engine's valid model, with one line on stderr saying so."""
    import os
    import signal

    from bench_perfume import CONN_MAPPING, CONN_REGEX

    from statemine.infer.synoptic.command import run_command

    _conn_log(tmp_path, 60)
    args = ["-r", CONN_REGEX, "-m", CONN_MAPPING, "--randomSeed=1", "--outputJSON=true"]
    args += ["-o", str(tmp_path / "m"), str(tmp_path / "conn.log")]
    plain = run_command("perfume", args)
    cp = exact.cp_model()
    monkeypatch.setattr(cp.CpSolver, "solve", lambda self, m: os.kill(os.getpid(), signal.SIGKILL))
    got = run_command("perfume", [*args, "--exactBudget=2"])
    died = [m for m in got.messages if "CP-SAT's process died" in m]
    assert died == ["warning: CP-SAT's process died (exit status -9); this step's model is kept"]
    assert got.result.model.n_nodes == plain.result.model.n_nodes
    assert (tmp_path / "m.json").exists()
