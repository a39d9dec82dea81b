"""Benchmark: `statemine infer` on a generated statemine log (issue 2's speed target).

Generates (once, cached) a log of N events over N/100 connections in the format of
docs/log-format.md, then measures:

* end to end: `statemine infer LOG --out DIR` as a subprocess (wall time, CPU time, peak
  RSS), which streams the statistics (statemine.stats.stream);
* in process: parse to a TraceSet, the streamed statistics, statistics of the TraceSet
  without and with the bootstrap, the same as map (8 partitions) + merge + tables (checked
  equal), model + DOT.

Run:  python benchmarks/bench_infer.py [--events 1000000] [--repeat 3]
(`--events 10000000 --trace-lines 1000` against the default shows that peak memory does not
grow with the log's length; it grows with the distinct (trace, state) and (trace,
transition) pairs, whose per-trace counts the bootstrap needs: benchmarks/bench_memory.py
measures large and hostile cases.)
Prints one line per measurement; nothing here is asserted (targets live in the README
and the closing notes, not in unit tests).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

STATES = [
    "SlowStart",
    "CongestionAvoidance",
    "Recovery",
    "ApplicationLimited",
    "CongestionAvoidanceMaxed",
]


def generate(path: Path, events: int, trace_lines: int = 100, seed: int = 1) -> None:
    """A log of ``events`` lines, ``trace_lines`` per connection, connections interleaved."""
    rng = np.random.default_rng(seed)
    conns = max(1, events // trace_lines)
    conn = np.tile(np.arange(conns), events // conns + 1)[:events]
    step = rng.exponential(0.01, events)
    times = _grouped_cumsum(step, conn)
    state = rng.integers(0, len(STATES), events)
    cwnd = rng.integers(10_000, 1_000_000, events)
    inflight = rng.integers(0, 1_000_000, events)
    with open(path, "w") as fh:
        for i in range(0, events, 100_000):
            sl = slice(i, i + 100_000)
            fh.writelines(
                f"STATEMINE t={t:.6f} conn={c} role=server state={STATES[s]} cwnd={w} inflight={b}\n"
                for t, c, s, w, b in zip(times[sl], conn[sl], state[sl], cwnd[sl], inflight[sl])
            )


def _grouped_cumsum(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Running sum of ``values`` within each group, in the original order."""
    order = np.argsort(groups, kind="stable")
    v = values[order]
    g = groups[order]
    c = np.cumsum(v)
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    out = np.empty_like(c)
    out[order] = c - np.repeat(c[starts] - v[starts], np.diff(np.r_[starts, len(v)]))
    return out


#: Runs the CLI and reports its own peak RSS (VmHWM, Linux): a forked child's rusage would
#: count the pages of this (bigger) process too.
_CLI_WITH_PEAK = """
import atexit, sys
def peak():
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM'):
            sys.stderr.write('VmHWM ' + line.split()[1] + '\\n')
atexit.register(peak)
from statemine.cli import main
main(args=sys.argv[1:], prog_name='statemine')
"""


def end_to_end(log: Path, extra: list[str]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS MiB) of one `statemine infer` process."""
    with tempfile.TemporaryDirectory() as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", _CLI_WITH_PEAK, "infer", str(log), "--out", out, *extra],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    peak_kb = [
        int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("VmHWM ")
    ]
    return wall, cpu, (peak_kb[-1] / 1024 if peak_kb else float("nan"))


def _cat_wc(log: Path) -> float:
    """Wall seconds of ``cat LOG | wc -l`` (reading the log and finding its lines)."""
    t0 = time.perf_counter()
    cat = subprocess.Popen(["cat", str(log)], stdout=subprocess.PIPE)
    subprocess.run(["wc", "-l"], stdin=cat.stdout, check=True, stdout=subprocess.DEVNULL)
    cat.wait()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--trace-lines", type=int, default=100, help="lines per connection (trace)")
    ap.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("STATEMINE_CACHE", "~/.cache/statemine")).expanduser(),
    )
    args = ap.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.trace_lines == 100 else f"-{args.trace_lines}"
    log = args.cache / f"bench-{args.events}{suffix}.log"
    if not log.exists():
        generate(log, args.events, args.trace_lines)
    size = log.stat().st_size / 1e6
    print(
        f"log: {log} ({args.events} events, {size:.0f} MB, {args.events // args.trace_lines} traces)"
    )

    baseline = min(_cat_wc(log) for _ in range(args.repeat))
    print(f"{'cat LOG | wc -l':<28} {baseline:7.3f} s  (wall; issue 29: infer within 5x)")
    for extra in ([], ["--no-svg"], ["--bootstrap", "0", "--no-svg"]):
        runs = [end_to_end(log, extra) for _ in range(args.repeat)]
        wall = min(r[0] for r in runs)
        cpu = min(r[1] for r in runs)
        rss = max(r[2] for r in runs)
        print(
            f"{'end to end ' + ' '.join(extra):<28} {wall:7.3f} s  (CPU {cpu:.2f} s)  peak RSS {rss:.0f} MiB"
            f"  {wall / baseline:.1f}x cat | wc -l"
        )

    from statemine.infer.observed import model_from_stats
    from statemine.output.diagram import to_dot
    from statemine.parse import read
    from statemine.stats.stream import summarize_logs
    from statemine.stats.summary import summarize

    for label, fn in [
        ("streamed statistics", lambda: summarize_logs(log)),
        ("parse to a TraceSet", lambda: read(log)),
    ]:
        best = min(_timed(fn) for _ in range(args.repeat))
        print(f"{label:<28} {best:7.3f} s  ({args.events / best / 1e6:.2f} M events/s)")
    ts = read(log)
    for n_boot in (0, 1000):
        best = min(
            _timed(lambda n_boot=n_boot: summarize(ts, n_boot=n_boot)) for _ in range(args.repeat)
        )
        print(f"{'statistics, bootstrap=' + str(n_boot):<28} {best:7.3f} s")
    _map_reduce(ts, args.repeat)
    states, transitions = summarize(ts, n_boot=0)
    best = min(
        _timed(lambda: to_dot(model_from_stats(states, transitions))) for _ in range(args.repeat)
    )
    print(f"{'model + DOT':<28} {best:7.3f} s")


def _map_reduce(ts, repeat: int, n_parts: int = 8) -> None:
    """The statistics as map (one PartialStats per partition of the traces) and reduce
    (merge, then the tables), timed apart; checks the tables equal summarize's exactly."""
    import pandas as pd

    from statemine.stats import StatsOptions, map_traces, merge
    from statemine.stats.summary import summarize
    from statemine.stats.tables import tables

    opts = StatsOptions(n_boot=1000)
    label = np.arange(ts.n_traces) * n_parts // ts.n_traces
    chunks = [ts.subset(label == i) for i in range(n_parts)]

    def map_all() -> list:
        return [map_traces(c, opts, part=i) for i, c in enumerate(chunks)]

    best = min(_timed(map_all) for _ in range(repeat))
    parts = map_all()
    print(f"{f'map, {n_parts} partitions':<28} {best:7.3f} s")
    best = min(_timed(lambda: merge(*parts)) for _ in range(repeat))
    size = sum(
        a.nbytes for p in parts for a in vars(p).values() if isinstance(a, np.ndarray)
    ) + sum(p.dwell.state.nbytes + p.dwell.seconds.nbytes for p in parts)
    print(f"{'merge':<28} {best:7.3f} s  (partials {size / 2**20:.1f} MiB)")
    merged = merge(*parts)
    best = min(_timed(lambda: tables(merged, opts)) for _ in range(repeat))
    print(f"{'tables, bootstrap=1000':<28} {best:7.3f} s")
    for got, want in zip(tables(merged, opts), summarize(ts, opts)):
        pd.testing.assert_frame_equal(got, want, check_exact=True)


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
