"""Benchmark: `statemine store add` of a generated statemine log (issue 17, part 1).

Generates (once, cached; the log of benchmarks/bench_infer.py) N events over N/100
connections, then runs `statemine store add LOG --store DIR --label impl=bench` as a
subprocess and prints wall time, events per second, peak RSS and the store's bytes per
event on disk (all its Parquet files: data and labels). A statemine log is streamed
within the file (statemine/store_stream.py), so the peak should not grow with --events
(1e6 and 1e7: figures in docs/store.md). Nothing is asserted; figures go in the closing notes.

Run:  python benchmarks/bench_store.py [--events 1000000] [--repeat 1]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_infer import generate


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("STATEMINE_CACHE", "~/.cache/statemine")).expanduser(),
    )
    args = ap.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    log = args.cache / f"bench-{args.events}.log"
    if not log.exists():
        generate(log, args.events)
    print(f"log: {log} ({args.events} events, {log.stat().st_size / 1e6:.0f} MB)")
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            store = Path(tmp) / "store"
            argv = [sys.executable, "-m", "statemine", "store", "add", str(log)]
            t0 = time.perf_counter()
            subprocess.run([*argv, "--store", str(store), "--label", "impl=bench"], check=True)
            wall = time.perf_counter() - t0
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            size = sum(p.stat().st_size for p in store.rglob("*.parquet"))
            print(
                f"store add: {wall:.2f} s wall, {args.events / wall:,.0f} events/s, "
                f"peak RSS {peak:.0f} MiB, {size / args.events:.2f} bytes/event on disk"
            )


if __name__ == "__main__":
    main()
