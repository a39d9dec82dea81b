"""The smallest Synoptic model of a two-capture log, exactly, over the region bits.

Evidence for docs/synoptic-engine.md ("How small can a model be?"), not part of the
engine: it needs Google OR-Tools' CP-SAT solver (in the ``test`` extra, no dependency of
the library; the script says so and exits when it is absent).

A model is sound iff some region bits obeying the rules of
``statemine.infer.synoptic.regions`` (forced bits, monotone free runs) are equal within
each node, so the smallest model is the fewest (type, vector) groups over all such bits.
As a CP-SAT model: per event and failing invariant a bit (a constant where forced), along
each free run ``b[x] <= b[x+1]`` (``>=`` for runs starting with 1s); per type ``K`` slots
(the engine's nodes of that type plus ``--slack``), each with a vector and a used flag,
every event in exactly one slot whose vector equals its bits; minimise the used slots.
OPTIMAL is the minimum among models with at most ``K`` nodes per type; the bound CP-SAT
reports is a lower bound under that cap only.

With ``--per-type`` it prints instead, per type, a relaxation solved exactly
(:func:`type_minimum`: the fewest vectors of that type's events with every other event's
bits free), whose sum is a lower bound on every model at least as large as the pairwise
one.  With ``--hint`` the engine's model (its region bits and nodes) is CP-SAT's first
solution: on logs of 6,010 and 10,027 events CP-SAT finds no solution in minutes without
it, and improves on it with it.

Run: ``python benchmarks/synoptic_exact.py [--limit S] [--slack K] [--hint] [--per-type]
[--captures N ...]``
(bench_synoptic.py ``write_captures(n, default_rng(n))``, read with
``-m '\\k<FILE>#\\k<conn>'``).  Prints per log the events, the pairwise lower bound, the
engine's nodes (seed 1), the solver's status, best model and bound, and its CPU seconds.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_synoptic as bench

from statemine.infer.synoptic.bounds import node_lower_bound, type_lower_bounds
from statemine.infer.synoptic.check import InvariantCodes, violated
from statemine.infer.synoptic.command import run_command
from statemine.infer.synoptic.engine import infer_log
from statemine.infer.synoptic.invariants import mine_invariants
from statemine.infer.synoptic.log import EventLog
from statemine.infer.synoptic.model import PartitionModel
from statemine.infer.synoptic.regions import FreeRuns, free_runs, region_bits


def cpu_seconds() -> float:
    """User + system CPU seconds of this process."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def capture_log(n_events: int) -> EventLog:
    """bench_synoptic.py's two capture files of about ``n_events``, merged by connection."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = bench.write_captures(n_events, np.random.default_rng(n_events), Path(tmp))
        args = ["-r", bench.CAPTURE_REGEX, "-m", bench.CAPTURE_MAPPING, "--noRefinement"]
        return run_command("synoptic", [*args, *map(str, paths)]).result.log


def hint_slots(model: PartitionModel, t: int) -> list[int]:
    """The nodes of type ``t`` in ``model`` in order of their first event (slot order)."""
    nodes = np.unique(model.part[model.log.codes == t], return_index=True)
    return nodes[0][np.argsort(nodes[1])].tolist()


def exact(
    log: EventLog,
    inv: InvariantCodes,
    bad: np.ndarray,
    caps: np.ndarray,
    limit: float,
    hint: PartitionModel | None = None,
) -> tuple[str, int, int]:
    """(status, nodes of the best model found, lower bound under ``caps``) with INITIAL
    and TERMINAL, by CP-SAT on one worker within ``limit`` seconds (module doc); ``hint``:
    a sound model of ``log`` (at most ``caps`` nodes per type) given to CP-SAT as its
    first solution (its region bits and nodes)."""
    from ortools.sat.python import cp_model  # type: ignore[import-not-found, unused-ignore]

    sub = inv.select(bad)
    runs = free_runs(log, sub)
    n, m = runs.forced.shape
    node_bits = None if hint is None else region_bits(hint, sub)
    mdl = cp_model.CpModel()
    bits: dict[tuple[int, int], Any] = {}
    for x in range(n):
        for j in range(m):
            f = int(runs.forced[x, j])
            bits[x, j] = f if f >= 0 else mdl.new_bool_var("")
            if f < 0 and hint is not None and node_bits is not None:
                mdl.add_hint(bits[x, j], bool(node_bits[hint.part[x], j]))
    for x in range(n - 1):
        for j in range(m):
            # x and x + 1 in one free run: monotone (0s then 1s, or 1s then 0s)
            if runs.lo[x, j] >= 0 and runs.lo[x, j] == runs.lo[x + 1, j]:
                lo, hi = (x, x + 1) if runs.first[j] == 0 else (x + 1, x)
                mdl.add(bits[lo, j] <= bits[hi, j])
    used_all = []
    for t in range(len(log.types)):
        events = np.nonzero(log.codes == t)[0].tolist()
        k = int(caps[t])
        if not events or k == 0:
            continue
        vec = [[mdl.new_bool_var("") for _ in range(m)] for _ in range(k)]
        used = [mdl.new_bool_var("") for _ in range(k)]
        for s in range(k - 1):
            mdl.add(used[s] >= used[s + 1])
        used_all += used
        slot_of: dict[int, int] = {}  # the hint's node -> its slot
        if hint is not None and node_bits is not None:
            slot_of = {node: s for s, node in enumerate(hint_slots(hint, t))}
            for node, s in slot_of.items():
                mdl.add_hint(used[s], True)
                for j in range(m):
                    mdl.add_hint(vec[s][j], bool(node_bits[node, j]))
        for i, x in enumerate(events):
            slot = [mdl.new_bool_var("") for _ in range(k)]
            mdl.add_exactly_one(slot)
            if i == 0:
                mdl.add(slot[0] == 1)
            if hint is not None:
                mine = slot_of[int(hint.part[x])]
                for s in range(k):
                    mdl.add_hint(slot[s], s == mine)
            for s in range(k):
                mdl.add_implication(slot[s], used[s])
                for j in range(m):
                    mdl.add(vec[s][j] == bits[x, j]).only_enforce_if(slot[s])
    mdl.minimize(sum(used_all))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = limit
    solver.parameters.num_workers = 1
    status = solver.solve(mdl)
    return (
        solver.status_name(status),
        round(solver.objective_value) + 2,
        round(solver.best_objective_bound) + 2,
    )


def type_minimum(log: EventLog, runs: FreeRuns, t: int, cap: int, limit: float) -> tuple[str, int]:
    """(status, lower bound) of the fewest vectors the events of type ``t`` can take
    when every other event's bits are left free (only the rules bind them): a
    relaxation of the exact problem, so its optimum summed over the types plus INITIAL
    and TERMINAL is a lower bound on every model's nodes.  Other events then only carry
    the monotone order of a free run, so consecutive ``t`` events of one run must be
    monotone; ``cap`` slots (an upper bound: the engine's nodes of that type)."""
    from ortools.sat.python import cp_model  # type: ignore[import-not-found, unused-ignore]

    events = np.nonzero(log.codes == t)[0].tolist()
    m = runs.forced.shape[1]
    mdl = cp_model.CpModel()
    bits: dict[tuple[int, int], Any] = {}
    for x in events:
        for j in range(m):
            f = int(runs.forced[x, j])
            bits[x, j] = f if f >= 0 else mdl.new_bool_var("")
    for j in range(m):
        last: dict[int, int] = {}  # free run (its first position) -> its last t event
        for x in events:
            lo = int(runs.lo[x, j])
            if lo < 0:
                continue
            if lo in last:
                a, b = (last[lo], x) if runs.first[j] == 0 else (x, last[lo])
                mdl.add(bits[a, j] <= bits[b, j])
            last[lo] = x
    vec = [[mdl.new_bool_var("") for _ in range(m)] for _ in range(cap)]
    used = [mdl.new_bool_var("") for _ in range(cap)]
    for s in range(cap - 1):
        mdl.add(used[s] >= used[s + 1])
    for i, x in enumerate(events):
        slot = [mdl.new_bool_var("") for _ in range(cap)]
        mdl.add_exactly_one(slot)
        if i == 0:
            mdl.add(slot[0] == 1)
        for s in range(cap):
            mdl.add_implication(slot[s], used[s])
            for j in range(m):
                mdl.add(vec[s][j] == bits[x, j]).only_enforce_if(slot[s])
    mdl.minimize(sum(used))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = limit
    solver.parameters.num_workers = 1
    status = solver.solve(mdl)
    return solver.status_name(status), round(solver.best_objective_bound)


def per_type(
    log: EventLog, codes: InvariantCodes, bad: np.ndarray, model: PartitionModel, limit: float
) -> None:
    """Print per type the pairwise bound, :func:`type_minimum` and the engine's nodes,
    then their sums (with INITIAL and TERMINAL)."""
    runs = free_runs(log, codes.select(bad))
    pairwise = type_lower_bounds(log, codes, bad)
    engine = np.bincount(model.node_type[2:], minlength=len(log.types))
    total = [2, 2, 2]
    for t in range(len(log.types)):
        if not engine[t]:
            continue
        status, low = type_minimum(log, runs, t, int(engine[t]), limit)
        total = [total[0] + int(pairwise[t]), total[1] + low, total[2] + int(engine[t])]
        print(
            f"  {log.types[t]:26s} pairwise {pairwise[t]:3d}  relaxed {low:3d} ({status})"
            f"  engine {engine[t]:3d}",
            flush=True,
        )
    print(f"  sum + 2: pairwise {total[0]}, relaxed {total[1]}, engine {total[2]}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--captures", type=int, nargs="*", default=[300, 600])
    parser.add_argument("--limit", type=float, default=120.0, help="seconds per log")
    parser.add_argument("--slack", type=int, default=2, help="slots per type beyond the engine's")
    parser.add_argument("--hint", action="store_true", help="start from the engine's model")
    parser.add_argument(
        "--per-type", action="store_true", help="only the per-type relaxed bound (type_minimum)"
    )
    a = parser.parse_args()
    try:
        import ortools  # type: ignore[import-not-found, unused-ignore]  # noqa: F401
    except ImportError:
        sys.exit("needs OR-Tools: pip install ortools (in statemine[test])")
    print("events  bound  engine  status    exact  exact-bound  cpu-s")
    for n in a.captures:
        log = capture_log(n)
        inv = mine_invariants(log)
        codes = InvariantCodes.from_frame(inv, {t: i for i, t in enumerate(log.types)})
        init = PartitionModel.initial(log)
        bad = violated(init.edge_counts() > 0, init.node_type, codes, len(log.types), trim=False)
        model = infer_log(log, seed=1, invariants=inv).model
        if a.per_type:
            print(log.n_events, "events")
            per_type(log, codes, bad, model, a.limit)
            continue
        caps = np.bincount(model.node_type[2:], minlength=len(log.types)) + a.slack
        c0 = cpu_seconds()
        status, best, low = exact(log, codes, bad, caps, a.limit, model if a.hint else None)
        print(
            f"{log.n_events:6d} {node_lower_bound(log, codes, bad):6d} {model.n_nodes:7d}  "
            f"{status:8s} {best:6d} {low:12d} {cpu_seconds() - c0:6.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
