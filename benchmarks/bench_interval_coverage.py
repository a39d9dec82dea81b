"""Which bootstrap interval holds across batches: percentile vs studentized, on the findings' runs.

Usage: python benchmarks/bench_interval_coverage.py [--root traces] [--fresh DIR ...]
       [--finding NAME ...] [--sims 200] [--runs 20] [--bootstrap 999]

For each comparison of the findings (statemine.lab.findings.FINDINGS) the observed runs of
both sides (the shipped runs under --root, plus the fresh runs of `statemine lab replicate`
folders given with --fresh) are taken as the population: per run, the server's seconds in
the finding's state and in the others. --sims times, two independent batches of --runs
runs a side are drawn from it with replacement; for each method the script counts how
often the first batch's 95% interval (statemine.stats.resampling.bootstrap_delta, as
`lab findings` computes it) holds the population's pooled difference (coverage; 0.95 is
right) and how often it holds the second batch's difference (the replication check of
`lab replicate`; about 0.83 for a correct interval, since both batches vary). Prints one
Markdown row per comparison and the totals. The measured figures are in docs/findings.md
("Which interval").
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from statemine.lab import findings
from statemine.lab.replicate import per_run
from statemine.stats.resampling import IntervalMethod, bootstrap_delta

METHODS: tuple[IntervalMethod, ...] = ("percentile", "studentized")


def populations(roots: list[Path], names: list[str] | None):
    """``(finding, stack, a, b, runs_a, runs_b)``: per comparison, the per-run seconds of
    each side pooled over ``roots`` (folders missing under a root are skipped)."""
    chosen = tuple(f for f in findings.FINDINGS if not names or f.name in names)
    by_root = [findings.load_scenarios(root, chosen) for root in roots]
    for f in chosen:
        conditions = {c.label: c for c in f.conditions}
        parts: dict[tuple[str, str], list[np.ndarray]] = {}
        for loaded in by_root:
            if f.scenario not in loaded:
                continue
            for stack, base in findings._stacks(loaded[f.scenario][0], f.per_stack):
                for label in {c for comp in f.comparisons for c in (comp.a, comp.b)}:
                    sub = findings.select(base, conditions[label].where)
                    parts.setdefault((stack, label), []).append(per_run(sub, f.state))
        for comp in f.comparisons:
            for stack in sorted({s for s, _ in parts}):
                xa, xb = parts.get((stack, comp.a)), parts.get((stack, comp.b))
                if xa and xb:
                    yield f.name, stack, comp.a, comp.b, np.vstack(xa), np.vstack(xb)


def pooled(x: np.ndarray) -> float:
    return float(x[:, 0].sum() / x.sum())


def simulate(xa, xb, *, sims: int, runs: int, n_boot: int, seed: int = 1) -> dict:
    """Coverage of the population difference and of a second batch's difference, and the
    mean interval width (percentage points), per method."""
    truth = pooled(xb) - pooled(xa)
    rng = np.random.default_rng(seed)
    out = {m: {"cover": 0, "next": 0, "width": 0.0} for m in METHODS}
    for i in range(sims):
        a1, b1, a2, b2 = (x[rng.integers(0, len(x), runs)] for x in (xa, xb, xa, xb))
        fresh = pooled(b2) - pooled(a2)
        for m in METHODS:
            lo, hi = bootstrap_delta(a1, b1, n_boot=n_boot, seed=i, method=m)
            out[m]["cover"] += bool(lo[0] <= truth <= hi[0])
            out[m]["next"] += bool(lo[0] <= fresh <= hi[0])
            out[m]["width"] += 100 * (hi[0] - lo[0]) / sims
    return {"truth": truth, **out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default="traces")
    ap.add_argument("--fresh", action="append", default=[])
    ap.add_argument("--finding", action="append", default=None)
    ap.add_argument("--sims", type=int, default=200)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--bootstrap", type=int, default=999)
    args = ap.parse_args()
    start = time.perf_counter()
    print(
        "| finding | stack | A -> B | runs in population | truth | coverage pct / t "
        "| next batch inside pct / t | width pct / t |"
    )
    print("|---|---|---|---|---|---|---|---|")
    totals = {m: [0, 0] for m in METHODS}
    n = 0
    roots = [Path(args.root), *map(Path, args.fresh)]
    for name, stack, a, b, xa, xb in populations(roots, args.finding):
        r = simulate(xa, xb, sims=args.sims, runs=args.runs, n_boot=args.bootstrap)
        cov = " / ".join(f"{r[m]['cover'] / args.sims:.2f}" for m in METHODS)
        nxt = " / ".join(f"{r[m]['next'] / args.sims:.2f}" for m in METHODS)
        wid = " / ".join(f"{r[m]['width']:.1f}" for m in METHODS)
        print(
            f"| {name} | {stack} | {a} -> {b} | {len(xa)} / {len(xb)} | "
            f"{100 * r['truth']:+.1f} pp | {cov} | {nxt} | {wid} pp |",
            flush=True,
        )
        for m in METHODS:
            totals[m][0] += r[m]["cover"]
            totals[m][1] += r[m]["next"]
        n += args.sims
    print(
        "\nall comparisons: coverage "
        + ", ".join(f"{m} {totals[m][0] / n:.3f}" for m in METHODS)
        + "; next batch inside "
        + ", ".join(f"{m} {totals[m][1] / n:.3f}" for m in METHODS)
        + f"; {n} simulated batches; wall {time.perf_counter() - start:.0f} s"
    )


if __name__ == "__main__":
    main()
