"""Benchmark: peak memory of `statemine infer` on large and hostile statemine logs (issue 11).

Each case is a generated log (cached beside bench_infer's); `statemine infer LOG --out DIR
--no-svg` runs as a subprocess that reports its own peak RSS (VmHWM, as bench_infer.py),
with the default 1000 bootstrap resamples. Cases and targets:

* ``1e7-lines-1e6-traces``: 1e7 lines over 1e6 connections of 10 lines (target: 1 GB);
* ``1e5-states``: 1e5 distinct state names (under the 100,000 cap) over 1e6 lines and
  1e4 connections, each connection walking through 100 consecutive names, so ~1e5
  distinct transitions (target: 500 MB);
* ``1e5-states-random``: the same names drawn at random, so ~1e6 distinct transitions:
  the tables, model.dot and model.json are then hundreds of MB themselves;
* ``ids-10k``: 10,000 lines, each a new connection and a new state (was > 9 GiB);
* ``ids-40k``: the same with 40,000 (was MemoryError at 26.8 GiB);
* ``one-trace-20k-states``: one connection through 20,000 distinct states (was 3 GiB);
  the hostile ones: target a few hundred MB.

``--traceset`` measures instead the in-memory TraceSet (issue 17, part 4) of the 1e6- and
1e7-event bench_infer logs (100 lines per connection): in a fresh process that has
imported numpy, pandas, pyarrow and statemine, ``statemine.read(LOG)``, then the bytes of
the set's own arrays per event (``events`` per column, deep, and the ``traces`` frame),
the process's RSS growth per event (after the read, and after ``malloc_trim``: what
glibc keeps of freed parser buffers) and its peak growth during the read (VmHWM).

Run:  python benchmarks/bench_memory.py [--case NAME ...] [--repeat 1] [--traceset]
Prints one line per case; nothing is asserted (targets live in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
from bench_infer import end_to_end, generate


def ids(path: Path, n: int) -> None:
    """``n`` lines, each a new connection and a new state."""
    with open(path, "w") as fh:
        fh.writelines(f"STATEMINE t={i} conn=c{i} state=S{i}\n" for i in range(n))


def one_trace(path: Path, n: int) -> None:
    """One connection through ``n`` distinct states, one second each."""
    with open(path, "w") as fh:
        fh.writelines(f"STATEMINE t={i} conn=a state=S{i}\n" for i in range(n))


def many_states(
    path: Path, events: int, n_states: int, n_conns: int, walk: bool, seed: int = 1
) -> None:
    """``events`` lines over ``n_conns`` interleaved connections and ``n_states`` names
    (every name used), times increasing per connection: with ``walk`` each connection goes
    through consecutive names, else the names are drawn at random."""
    rng = np.random.default_rng(seed)
    conn = np.arange(events) % n_conns
    step = np.arange(events) // n_conns
    state = (
        (conn * (events // n_conns) + step) % n_states
        if walk
        else rng.permutation(np.resize(np.arange(n_states), events))
    )
    times = step + rng.random(events) * 0.5
    with open(path, "w") as fh:
        for i in range(0, events, 100_000):
            sl = slice(i, i + 100_000)
            fh.writelines(
                f"STATEMINE t={t:.6f} conn={c} state=S{s}\n"
                for t, c, s in zip(times[sl], conn[sl], state[sl])
            )


CASES = {
    "1e6-lines (bench_infer)": ("bench-1000000.log", lambda p: generate(p, 1_000_000)),
    "1e7-lines-1e6-traces": (
        "bench-10000000-10.log",
        lambda p: generate(p, 10_000_000, trace_lines=10),
    ),
    "1e5-states": (
        "states-100000-walk.log",
        lambda p: many_states(p, 1_000_000, 100_000, 10_000, True),
    ),
    "1e5-states-random": (
        "states-100000.log",
        lambda p: many_states(p, 1_000_000, 100_000, 10_000, False),
    ),
    "ids-10k": ("ids-10000.log", lambda p: ids(p, 10_000)),
    "ids-40k": ("ids-40000.log", lambda p: ids(p, 40_000)),
    "one-trace-20k-states": ("one-trace-20000.log", lambda p: one_trace(p, 20_000)),
}


#: Run in a fresh interpreter: prints the TraceSet's bytes per event (argv[1]: the log).
_TRACESET = """
import ctypes, gc, json, sys
import numpy, pandas, pyarrow, statemine
def status(key):
    for line in open('/proc/self/status'):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
base = status('VmRSS')
ts = statemine.read(sys.argv[1])
gc.collect()
rss = status('VmRSS') - base
peak = status('VmHWM') - base
ctypes.CDLL('libc.so.6').malloc_trim(0)
trimmed = status('VmRSS') - base
n = len(ts.events)
columns = ts.events.memory_usage(deep=True, index=True)
print(json.dumps({"n": n, "columns": {k: v / n for k, v in columns.items()},
                  "traces": ts.traces.memory_usage(deep=True).sum() / n,
                  "rss": rss / n, "trimmed": trimmed / n, "peak": peak / n}))
"""

TRACESET_LOGS = {1_000_000: "bench-1000000.log", 10_000_000: "bench-10000000.log"}


def traceset_memory(cache: Path) -> None:
    """One line per log size: the TraceSet's own bytes per event and the RSS growth."""
    import json
    import subprocess
    import sys

    for events, name in TRACESET_LOGS.items():
        log = cache / name
        if not log.exists():
            generate(log, events)
        out = subprocess.run(
            [sys.executable, "-c", _TRACESET, str(log)], check=True, capture_output=True
        )
        r = json.loads(out.stdout)
        core = sum(
            v
            for k, v in r["columns"].items()
            if k in ("trace", "seq", "time", "kind", "state", "line")
        )
        total = sum(r["columns"].values())
        shown = " ".join(f"{k}={v:.2f}" for k, v in r["columns"].items() if k != "Index")
        print(
            f"TraceSet {r['n']:.0e} events: {core:.2f} B/event core columns, {total:.2f} with "
            f"metrics ({shown}), traces frame {r['traces']:.2f}; RSS growth {r['rss']:.0f} B/event "
            f"({r['trimmed']:.0f} after malloc_trim), peak during the read {r['peak']:.0f}",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--case", action="append", choices=sorted(CASES), help="run only these (repeatable)"
    )
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--traceset", action="store_true", help="the TraceSet's bytes per event")
    ap.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("STATEMINE_CACHE", "~/.cache/statemine")).expanduser(),
    )
    args = ap.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    if args.traceset:
        traceset_memory(args.cache)
        return
    for name in args.case or list(CASES):
        filename, make = CASES[name]
        log = args.cache / filename
        if not log.exists():
            make(log)
        runs = [end_to_end(log, ["--no-svg"]) for _ in range(args.repeat)]
        wall, cpu, rss = min(r[0] for r in runs), min(r[1] for r in runs), max(r[2] for r in runs)
        print(
            f"{name:<26} {log.stat().st_size / 1e6:7.1f} MB  {wall:7.2f} s  (CPU {cpu:.2f} s)  peak RSS {rss:.0f} MiB",
            flush=True,
        )


if __name__ == "__main__":
    main()
