"""The smallest Synoptic model of a two-capture log, exactly, over the region bits.

Evidence for docs/synoptic-engine.md ("How small can a model be?"), not part of the
engine: it needs Google OR-Tools' CP-SAT solver (``pip install ortools``, no dependency
of statemine; the script says so and exits when it is absent).

A model is sound iff some region bits obeying the rules of
``statemine.infer.synoptic.regions`` (forced bits, monotone free runs) are equal within
each node, so the smallest model is the fewest (type, vector) groups over all such bits.
As a CP-SAT model: per event and failing invariant a bit (a constant where forced), along
each free run ``b[x] <= b[x+1]`` (``>=`` for runs starting with 1s); per type ``K`` slots
(the engine's nodes of that type plus ``--slack``), each with a vector and a used flag,
every event in exactly one slot whose vector equals its bits; minimise the used slots.
OPTIMAL is the minimum among models with at most ``K`` nodes per type; the bound CP-SAT
reports is a lower bound under that cap only.

Run: ``python benchmarks/synoptic_exact.py [--limit S] [--slack K] [--captures N ...]``
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

from statemine.infer.synoptic.bounds import node_lower_bound
from statemine.infer.synoptic.check import InvariantCodes, violated
from statemine.infer.synoptic.command import run_command
from statemine.infer.synoptic.engine import infer_log
from statemine.infer.synoptic.invariants import mine_invariants
from statemine.infer.synoptic.log import EventLog
from statemine.infer.synoptic.model import PartitionModel
from statemine.infer.synoptic.regions import free_runs


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


def exact(
    log: EventLog, inv: InvariantCodes, bad: np.ndarray, caps: np.ndarray, limit: float
) -> tuple[str, int, int]:
    """(status, nodes of the best model found, lower bound under ``caps``) with INITIAL
    and TERMINAL, by CP-SAT on one worker within ``limit`` seconds (module doc)."""
    from ortools.sat.python import cp_model  # type: ignore[import-not-found]

    runs = free_runs(log, inv.select(bad))
    n, m = runs.forced.shape
    mdl = cp_model.CpModel()
    bits: dict[tuple[int, int], Any] = {}
    for x in range(n):
        for j in range(m):
            f = int(runs.forced[x, j])
            bits[x, j] = f if f >= 0 else mdl.new_bool_var("")
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
        for i, x in enumerate(events):
            slot = [mdl.new_bool_var("") for _ in range(k)]
            mdl.add_exactly_one(slot)
            if i == 0:
                mdl.add(slot[0] == 1)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--captures", type=int, nargs="*", default=[300, 600])
    parser.add_argument("--limit", type=float, default=120.0, help="seconds per log")
    parser.add_argument("--slack", type=int, default=2, help="slots per type beyond the engine's")
    a = parser.parse_args()
    try:
        import ortools  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        sys.exit("needs OR-Tools: pip install ortools (not a statemine dependency)")
    print("events  bound  engine  status    exact  exact-bound  cpu-s")
    for n in a.captures:
        log = capture_log(n)
        inv = mine_invariants(log)
        codes = InvariantCodes.from_frame(inv, {t: i for i, t in enumerate(log.types)})
        init = PartitionModel.initial(log)
        bad = violated(init.edge_counts() > 0, init.node_type, codes, len(log.types), trim=False)
        model = infer_log(log, seed=1, invariants=inv).model
        caps = np.bincount(model.node_type[2:], minlength=len(log.types)) + a.slack
        c0 = cpu_seconds()
        status, best, low = exact(log, codes, bad, caps, a.limit)
        print(
            f"{log.n_events:6d} {node_lower_bound(log, codes, bad):6d} {model.n_nodes:7d}  "
            f"{status:8s} {best:6d} {low:12d} {cpu_seconds() - c0:6.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
