"""Benchmark of statemine.diff (statemine/compare.py, and the report) on generated trace sets.

Usage: python benchmarks/bench_diff.py [--traces 200,2000,20000] [--permutations 9999] [--bootstrap 2000]
       python benchmarks/bench_diff.py --wide 2000000 [--states 50] [--layout auto|dense|sparse]
                                       [--permutations 999] [--bootstrap 200]

For each size N it builds two sets of N traces each (about 12 state visits per trace,
7 states), then times ``diff`` (visits, permutation test, bootstrap, transition tests),
the diff diagram (DOT + SVG) and a two-sided ``build_report``, and prints the peak RSS.
Target: N = 2000 traces per side with 9999 permutations and 2000 bootstrap resamples in
under 10 s on one core.

``--wide N``: the driver's part of a diff on Dask (``statemine.compare.diff_stats`` from
per-trace statistics) for N traces in all (half a side) over ``--states`` states, each
trace visiting 1-3 of them (sparse: the traces x states table past ``DENSE_CELLS``, the
size the diff refused before issue 17). The statistics are folded directly from
generated visits (``VisitFold``, ``VisitStats``: what a worker sends back); prints the wall
and CPU seconds of ``diff_stats``, the process's RSS before it and its peak during it
(sampled every 20 ms), and checks the states' pooled fractions against ``np.bincount``
sums of the generated visits. ``--layout dense|sparse`` forces one layout (moving
``DENSE_CELLS``), to compare them at one size.
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
from statemine.stats.partial import PartialStats
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


def wide_side(n: int, n_states: int, seed: int) -> tuple[PartialStats, pd.DataFrame, np.ndarray]:
    """``n`` traces, each visiting 1-3 of ``n_states`` states (Zipf-like popularity), with
    exponential dwell times and an explicit end: the side's statistics, traces frame and
    seconds per state (summed here with ``np.bincount``, for the check)."""
    from statemine.stats.partial import VisitStats
    from statemine.stats.visits import VisitFold

    rng = np.random.default_rng(seed)
    lines = rng.integers(1, 4, n)
    trace = np.repeat(np.arange(n, dtype=np.int64), lines)
    state = np.minimum(rng.zipf(1.4, len(trace)) - 1, n_states - 1)
    gap = rng.exponential(1.0, len(trace))
    first = np.r_[0, np.cumsum(lines)[:-1]]
    time_ = np.cumsum(gap)
    time_ -= np.repeat(time_[first], lines)  # each trace starts at 0 s
    end = time_[np.cumsum(lines) - 1] + rng.exponential(1.0, n)
    fold, stats = VisitFold(), VisitStats()
    stats.add(fold.add(trace, state, time_), n, n_states)
    stats.add(fold.finish(end), n, n_states)
    names = [f"S{i:02d}" for i in range(n_states)]
    # each line's state lasts until the next line of its trace, the last until the end
    until = np.r_[time_[1:], 0.0]
    last = np.cumsum(lines) - 1
    until[last] = end
    seconds = np.bincount(state, weights=until - time_, minlength=n_states)
    traces = pd.DataFrame({"trace": [f"t{i}" for i in range(n)], "source": "generated"})
    return stats.partial(names), traces, seconds


def wide(n: int, n_states: int, n_perm: int, n_boot: int, layout: str) -> None:
    """The ``--wide`` run (see the module doc); ``layout`` "dense" or "sparse" forces one
    (``DENSE_CELLS`` moved), "auto" leaves the library's choice."""
    import os
    import threading

    from statemine import compare
    from statemine.compare import diff_stats

    if layout != "auto":
        compare.DENSE_CELLS = 0 if layout == "sparse" else n * n_states

    t0 = time.perf_counter()
    pa, ta, sa = wide_side(n // 2, n_states, 1)
    pb, tb, sb = wide_side(n - n // 2, n_states, 2)
    pairs = len(pa.seconds) + len(pb.seconds)
    print(
        f"{n:,} traces x {n_states} states = {n * n_states:,} cells "
        f"(dense up to {compare.DENSE_CELLS:,}); {pairs:,} (trace, state) pairs; "
        f"statistics made in {time.perf_counter() - t0:.1f} s"
    )

    def rss_mib() -> float:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    base = rss_mib()
    peak = [base]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            peak[0] = max(peak[0], rss_mib())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    c0, t0 = time.process_time(), time.perf_counter()
    result = diff_stats((pa, ta), (pb, tb), n_perm=n_perm, n_boot=n_boot)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    done.set()
    sampler.join()
    got = result.states.set_index("state")
    names = [f"S{i:02d}" for i in range(n_states)]
    for column, seconds in (("fraction_a", sa), ("fraction_b", sb)):
        want = pd.Series(seconds / seconds.sum(), index=names)
        assert np.allclose(got[column].reindex(names).fillna(0.0), want, rtol=1e-9, atol=0)
    print(
        f"diff_stats ({n_perm} permutations, {n_boot} resamples): {wall:.1f} s wall, "
        f"{cpu:.1f} s CPU; RSS {base:.0f} MiB before, peak {peak[0]:.0f} MiB "
        f"(+{peak[0] - base:.0f} MiB); {int(got['significant'].sum())} of {len(got)} states "
        "significant; fractions checked"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default="200,2000,20000")
    ap.add_argument("--permutations", type=int, default=9999)
    ap.add_argument("--bootstrap", type=int, default=2000)
    ap.add_argument("--report", action="store_true", help="also time build_report (with timelines)")
    ap.add_argument("--wide", type=int, help="N traces over --states states, few per trace")
    ap.add_argument("--states", type=int, default=50)
    ap.add_argument("--layout", choices=["auto", "dense", "sparse"], default="auto")
    args = ap.parse_args()
    if args.wide:
        wide(args.wide, args.states, args.permutations, args.bootstrap, args.layout)
        return
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
