"""Replication of the shipped findings on a fresh batch of seeds (``statemine lab replicate``).

Usage: python benchmarks/bench_replicate.py [--root traces] [--out DIR] [--finding NAME ...]
       [--runs 20] [--first-seed N] [--jobs 1]

Runs every virtual-time finding's compared cells again on ``--runs`` fresh seeds (default
1001-1020, never used by the shipped runs of traces/), compares them with the shipped
runs (statemine.lab.replicate.compare) and prints, per comparison, the shipped and fresh
differences with their intervals, whether the fresh difference lies in the shipped 95%
interval (percentile and studentized), the batches' gap in standard errors (z) and the
runs a side needs for a +/-2 point interval; then the per-run modes of each condition, the
wall time and the lab's cost per run. Target: every fresh difference inside the shipped
interval, the same verdict everywhere. Resumable: the runs stay in --out.
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

from statemine.lab import findings, replicate
from statemine.lab.commands import replicate_findings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default="traces")
    ap.add_argument("--out", default="replication")
    ap.add_argument("--finding", action="append", default=None)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=None)
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()
    names = args.finding or [f.name for f in findings.FINDINGS if replicate.replicable(f)]
    start = time.perf_counter()
    rep = replicate_findings(
        args.root, args.out, names, runs=args.runs, first_seed=args.first_seed, jobs=args.jobs
    )
    wall = time.perf_counter() - start
    pd.set_option("display.width", 250)
    print(f"fresh seeds {rep.seeds[0]}-{rep.seeds[1]}; {len(rep.failures)} fresh runs failed")
    print(replicate.markdown(rep.comparisons, rep.conditions))
    c = rep.comparisons
    print(
        f"{int(c['inside'].sum())} of {len(c)} fresh differences inside the shipped percentile "
        f"interval, {int(c['inside_t'].sum())} inside the studentized one; "
        f"{int(c['same_verdict'].sum())} of {len(c)} same verdict; |z| max "
        f"{c['z_between'].abs().max():.1f}; wall {wall:.0f} s (runs already in --out are reused)"
    )


if __name__ == "__main__":
    main()
