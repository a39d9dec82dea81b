"""Benchmark of statemine.diff (statemine/compare.py, and the report) on generated trace sets.

Usage: python benchmarks/bench_diff.py [--traces 200,2000,20000] [--permutations 9999] [--bootstrap 2000]

For each size N it builds two sets of N traces each (about 12 state visits per trace,
7 states), then times ``diff`` (visits, permutation test, bootstrap, transition tests),
the diff diagram (DOT + SVG) and a two-sided ``build_report``, and prints the peak RSS.
Target: N = 2000 traces per side with 9999 permutations and 2000 bootstrap resamples in
under 10 s on one core.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import pandas as pd

from statemine.compare import diff
from statemine.output.diagram import dot_to
from statemine.output.diff_diagram import diff_to_dot
from statemine.traces import TraceSet

STATES = [
    "SlowStart",
    "CongestionAvoidance",
    "Recovery",
    "RetransmissionTimeout",
    "ApplicationLimited",
    "TailLossProbe",
]


def generated(prefix: str, n: int, seed: int, recovery_scale: float) -> TraceSet:
    """``n`` traces: Init, then 11 states drawn at random, exponential dwell times (seconds)."""
    rng = np.random.default_rng(seed)
    per = 12
    states = rng.choice(STATES, size=(n, per), p=[0.1, 0.4, 0.25, 0.05, 0.15, 0.05])
    states[:, 0] = "Init"
    scale = np.where(states == "Recovery", 0.1 * recovery_scale, 0.2)
    times = np.cumsum(rng.exponential(scale), axis=1)
    times[:, 0] = 0.0
    events = pd.DataFrame(
        {
            "trace": np.repeat([f"{prefix}{i}" for i in range(n)], per),
            "time": times.ravel(),
            "state": states.ravel(),
        }
    )
    return TraceSet.from_events(events)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default="200,2000,20000")
    ap.add_argument("--permutations", type=int, default=9999)
    ap.add_argument("--bootstrap", type=int, default=2000)
    ap.add_argument("--report", action="store_true", help="also time build_report (with timelines)")
    args = ap.parse_args()
    print(f"{'traces/side':>11} {'diff s':>8} {'diagram s':>9} {'report s':>9} {'peak RSS MB':>11}")
    for n in (int(x) for x in args.traces.split(",")):
        a, b = generated("a", n, 1, 1.0), generated("b", n, 2, 1.3)
        t0 = time.perf_counter()
        result = diff(a, b, n_perm=args.permutations, n_boot=args.bootstrap)
        t1 = time.perf_counter()
        dot_to(diff_to_dot(result), "svg")
        t2 = time.perf_counter()
        report_s = float("nan")
        if args.report:
            from statemine.output.html_report import build_report

            build_report(a, b, n_perm=args.permutations, n_boot=args.bootstrap)
            report_s = time.perf_counter() - t2
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{n:>11} {t1 - t0:>8.2f} {t2 - t1:>9.2f} {report_s:>9.2f} {rss:>11.0f}", flush=True)


if __name__ == "__main__":
    main()
