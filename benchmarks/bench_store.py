"""Benchmark: `statemine store add` of generated logs (issue 17, parts 1 and 2).

Generates (once, cached) N events of one input format and runs `statemine store add LOG
--store DIR --label impl=bench` as a subprocess, printing wall time, events per second,
the process's peak RSS and the store's bytes per event on disk (all its Parquet files).

* ``--format statemine`` (default): the log of benchmarks/bench_infer.py, N events over
  N/100 connections; streamed within the file (statemine/store_stream.py).
* ``--format qlog``: benchmarks/bench_qlog.py's one quic-go-like connection as JSON-SEQ
  (1 % state changes, 20 % metrics updates, the rest packet events); ``--format
  qlog-document``: the same as one contained JSON document. Added in bounded memory
  (statemine.parse.qlog.read_qlog_parts): the connection's congestion events are spilled
  to the store's spill folder, then built 2^18 rows at a time; its packet events are
  only counted. ``--format qlog-derived``: the JSON-SEQ connection without state events
  (ACKs and losses in their place), added with ``--derive-states`` (RFC 9002 recovery
  periods from the packets).
* ``--format ftrace``: benchmarks/bench_ftrace.py's tracefs text (200 sockets, 95 %
  tcp_probe); spilled and added in batches of 2^18 lines (read_ftrace_batches).

Several ``--events`` show how the peak grows with the file (figures in docs/store.md).
Nothing is asserted; figures go in the closing notes.

Run:  python benchmarks/bench_store.py [--format statemine] [--events 1000000 ...] [--repeat 1]
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

FORMATS = ("statemine", "qlog", "qlog-document", "qlog-derived", "ftrace")


def make_input(fmt: str, events: int, cache: Path) -> Path:
    """The cached input file of ``events`` events in ``fmt`` (written once)."""
    name = {
        "statemine": "log",
        "qlog": "sqlog",
        "qlog-document": "qlog",
        "qlog-derived": "derived.sqlog",
        "ftrace": "ftrace.txt",
    }
    path = cache / f"bench-store-{events}.{name[fmt]}"
    if fmt == "statemine":
        path = cache / f"bench-{events}.log"  # bench_infer's cached log
    if path.exists():
        return path
    if fmt == "statemine":
        from bench_infer import generate

        generate(path, events)
    elif fmt == "ftrace":
        from bench_ftrace import generate as ftrace

        ftrace(path, events, 200)
    else:
        from bench_qlog import write_files

        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            written = write_files(events, Path(tmp), gzipped=False, derived=fmt == "qlog-derived")
            key = "json document" if fmt == "qlog-document" else "json-seq"
            os.replace(written[key], path)
    return path


#: The command in a fresh process, then its own peak RSS (VmHWM, KiB) on stderr's last line.
_CHILD = """
import sys
from statemine.cli import main
try:
    main(sys.argv[1:], standalone_mode=False)
finally:
    hwm = [l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM:")]
    print(hwm[0], file=sys.stderr)
"""


def add_once(log: Path, events: int, derive: bool = False) -> str:
    """Run `statemine store add` on ``log`` in a fresh process (with ``--derive-states``
    when ``derive``); one line of figures."""
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        argv = ["store", "add", str(log), "--store", str(store), "--label", "impl=bench"]
        argv += ["--derive-states"] if derive else []
        t0 = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, *argv], check=True, capture_output=True, text=True
        )
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        peak = int(done.stderr.split()[-1]) / 1024
        size = sum(p.stat().st_size for p in store.rglob("*.parquet"))
    return (
        f"store add: {wall:.2f} s wall, {cpu:.2f} s CPU, {events / wall:,.0f} events/s, "
        f"peak RSS {peak:.0f} MiB, {size / events:.2f} bytes/event on disk"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--format", choices=FORMATS, default="statemine")
    ap.add_argument("--events", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("STATEMINE_CACHE", "~/.cache/statemine")).expanduser(),
    )
    args = ap.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    for events in args.events:
        log = make_input(args.format, events, args.cache)
        print(f"{args.format}: {log} ({events} events, {log.stat().st_size / 1e6:.0f} MB)")
        for _ in range(args.repeat):
            print(add_once(log, events, args.format == "qlog-derived"), flush=True)


if __name__ == "__main__":
    main()
