"""The smallest Synoptic model of a two-capture log, exactly, over the region bits.

Evidence for docs/synoptic-engine.md ("How small can a model be?"). The formulation is
the engine's optional polishing stage, :mod:`statemine.infer.synoptic.exact` (Google
OR-Tools' CP-SAT, the ``exact`` extra, also in ``test``; the script says so and exits
when it is absent): per event and failing invariant a bit (a constant where forced),
monotone along each free run; per type ``K`` slots (the engine's nodes of that type, or
with ``--hint`` its (type, region-bit vector) groups, plus ``--slack``), every event in
one slot whose vector equals its bits; minimise the used slots.  OPTIMAL is the minimum
among models with at most ``K`` nodes per type; the bound CP-SAT reports is a lower
bound under that cap only.  Budgets are CP-SAT's deterministic seconds (one worker).

With ``--per-type`` it prints instead, per type, a relaxation solved exactly
(``exact.type_minimum``: the fewest vectors of that type's events with every other
event's bits free), whose sum is a lower bound on every model at least as large as the
pairwise one.  With ``--proved`` it prints per log the pairwise bound, the relaxed
one and ``exact.proved_bound`` (CP-SAT's bound under per-type caps of the engine's
groups plus ``--slack``, lowered where a model outside the caps could be smaller), each
a lower bound on every model's nodes, and the best model CP-SAT found.  With ``--hint`` the engine's model (its region bits) is CP-SAT's first
solution: on logs of 6,010 and 10,027 events CP-SAT finds no solution in minutes without
it, and improves on it with it.

Run: ``python benchmarks/synoptic_exact.py [--limit S] [--slack K] [--hint] [--per-type]
[--proved [--max-slack K2]] [--captures N ...]`` (``--max-slack``: ``exact.raised_bound``,
the slack raised while CP-SAT proves its capped optimum but the caps hold the bound below it)
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_synoptic as bench

from statemine.infer.synoptic.bounds import node_lower_bound, type_lower_bounds
from statemine.infer.synoptic.check import InvariantCodes, violated
from statemine.infer.synoptic.command import run_command
from statemine.infer.synoptic.engine import infer_log
from statemine.infer.synoptic.exact import model_vectors, raised_bound, solve, type_minimum
from statemine.infer.synoptic.invariants import mine_invariants
from statemine.infer.synoptic.log import EventLog
from statemine.infer.synoptic.model import PartitionModel
from statemine.infer.synoptic.regions import free_runs, grouped


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
    log: EventLog,
    inv: InvariantCodes,
    bad: np.ndarray,
    caps: np.ndarray,
    limit: float,
    hint: PartitionModel | None = None,
) -> tuple[str, int, int]:
    """(status, nodes of the best model found, lower bound under ``caps``) with INITIAL
    and TERMINAL, by CP-SAT on one worker within ``limit`` deterministic seconds
    (statemine.infer.synoptic.exact.solve); ``hint``: a sound model of ``log`` (at most
    ``caps`` groups per type) given to CP-SAT as its first solution (its region bits)."""
    sub = inv.select(bad)
    runs = free_runs(log, sub)
    vectors = None
    if hint is not None:
        vectors = model_vectors(hint, sub)
    found = solve(log, runs, caps, limit, 0, vectors)
    return found.status, found.nodes, found.bound


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


def proved_row(
    log: EventLog,
    codes: InvariantCodes,
    bad: np.ndarray,
    model: PartitionModel,
    limit: float,
    slack: int,
    max_slack: int,
) -> None:
    """Print the events, the engine's nodes (seed 1), the pairwise, relaxed (20
    deterministic s per type) and proved bounds (``limit`` deterministic s per CP-SAT
    run; ``exact.raised_bound``: ``slack`` spare slots per type, raised up to
    ``max_slack``), CP-SAT's status and best model under the last caps, the slots per
    type past the engine's groups that gave the bound, and the CPU seconds of the
    bounds."""
    lows = type_lower_bounds(log, codes, bad)
    c0 = cpu_seconds()
    got = raised_bound(model, codes, bad, lows, limit, 1, 20.0, slack, max_slack)
    print(
        f"{log.n_events:6d} engine {model.n_nodes}  pairwise {int(lows.sum()) + 2}  relaxed "
        f"{int(got.type_bounds.sum()) + 2}  proved {got.bound}  ({got.solved.status}, best "
        f"{got.solved.nodes}, capped bound {got.solved.bound}, caps {int(got.caps.sum())})  "
        f"{cpu_seconds() - c0:.1f} CPU s",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--captures", type=int, nargs="*", default=[300, 600])
    parser.add_argument("--limit", type=float, default=120.0, help="deterministic seconds per log")
    parser.add_argument("--slack", type=int, default=2, help="slots per type beyond the engine's")
    parser.add_argument(
        "--max-slack", type=int, default=0, help="--proved: raise the slack up to this"
    )
    parser.add_argument("--hint", action="store_true", help="start from the engine's model")
    parser.add_argument(
        "--per-type", action="store_true", help="only the per-type relaxed bound (type_minimum)"
    )
    parser.add_argument(
        "--proved", action="store_true", help="the bounds only: pairwise, relaxed, proved"
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
        if a.proved:
            proved_row(log, codes, bad, model, a.limit, a.slack, max(a.slack, a.max_slack))
            continue
        if a.per_type:
            print(log.n_events, "events")
            per_type(log, codes, bad, model, a.limit)
            continue
        groups = model
        if a.hint:  # one node per (type, region-bit vector) of the engine's model
            groups = grouped(log, model_vectors(model, codes.select(bad)))
        caps = np.bincount(groups.node_type[2:], minlength=len(log.types)) + a.slack
        c0 = cpu_seconds()
        status, best, low = exact(log, codes, bad, caps, a.limit, model if a.hint else None)
        print(
            f"{log.n_events:6d} {node_lower_bound(log, codes, bad):6d} {model.n_nodes:7d}  "
            f"{status:8s} {best:6d} {low:12d} {cpu_seconds() - c0:6.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
