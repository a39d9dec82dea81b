"""Benchmark: many small files against the same lines in one file (issue 29).

Cases, each with its one-file baseline beside it (CPU seconds: the machine may be shared,
so CPU time is the steadier figure; best of ``--repeat``):

* statemine lines: 2,000 files x 50 lines and 10,000 files x 100 lines (one connection a
  file), against one log holding the same lines (connections interleaved);
  ``statemine infer DIR --out OUT --no-svg`` as a process (the streamed path) and
  ``statemine.read`` and ``statemine.store_add`` in process;
* the shipped lab folders (``traces/<name>``: one ``traces.parquet`` per run): ``read`` of
  the folder against one statemine log of the runs' own lines (their ``run.log.gz``, each
  run's connections renamed apart); the folder's runs are read from their logs and
  Parquet footers, the footers' bytes vouched for by ``traces-index.json``
  (``parse/labruns.py``): the folder as shipped (its committed ``traces-cache.parquet``,
  each run file hashed against it), a copy without the cache, and a copy whose cache
  ``statemine lab cache`` built here (loaded while the runs' files keep their ``stat``);
* a folder of one-connection qlog files (JSON-SEQ, ``--qlog-events`` events each), and the
  same connections as one ``.qlog`` JSON document a file, against one qlog JSON document
  holding the same connections as its traces; ``statemine.read`` and ``statemine infer``.

Targets (issue 29): 2,000 x 50 lines at most 1.5x the CPU of one file (CLI and
library), ``traces/jitter`` at most 2x its lines in one log, 1e4 one-connection qlog files
under 5 s of CPU. Nothing here is asserted; the figures go to docs/benchmarks.md.

Run:  python benchmarks/bench_many_files.py [--repeat 3] [--qlog-files 10000] [--only CASE]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_infer import generate
from bench_qlog import events

ROOT = Path(__file__).resolve().parents[1]

#: Prints whether the lab folder argv[1]'s cache is used (statemine.parse.labruns).
_CACHE_USED = """
import sys
from pathlib import Path
from statemine.parse import labruns
paths = labruns._run_files(Path(sys.argv[1]))
ids = [labruns.run_id_of(p) for p in paths]
print("yes" if labruns.cached_runs(paths, ids) is not None else "NO")
"""

#: Reads its inputs with statemine.read and prints the CPU seconds of the read alone.
_READ = """
import resource, sys, statemine
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
statemine.read(sys.argv[1:])  # imports and caches warm
best = min(
    (lambda c: (statemine.read(sys.argv[1:]), cpu() - c)[1])(cpu()) for _ in range(3)
)
print(best)
"""


def read_cpu(paths: list[Path]) -> float:
    """CPU seconds of ``statemine.read(paths)`` in a fresh process (best of three)."""
    out = subprocess.run(
        [sys.executable, "-c", _READ, *map(str, paths)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return float(out.split()[-1])


#: Adds its inputs to a new store with statemine.store_add; prints the CPU seconds of the add.
_STORE = """
import resource, shutil, sys, tempfile, statemine
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
def add():
    folder = tempfile.mkdtemp()
    try:
        start = cpu()
        statemine.store_add(sys.argv[1:], folder + "/store", {"env": "bench"})
        return cpu() - start
    finally:
        shutil.rmtree(folder)
add()  # imports and caches warm
print(min(add() for _ in range(3)))
"""


def store_cpu(paths: list[Path]) -> float:
    """CPU seconds of ``statemine.store_add(paths, ...)`` in a fresh process (best of three)."""
    out = subprocess.run(
        [sys.executable, "-c", _STORE, *map(str, paths)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return float(out.split()[-1])


def infer_cpu(paths: list[Path]) -> float:
    """CPU seconds of one ``statemine infer ... --no-svg`` process."""
    with tempfile.TemporaryDirectory() as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "statemine",
                "infer",
                *map(str, paths),
                "--out",
                out,
                "--no-svg",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def split_log(one: Path, folder: Path) -> None:
    """One file per connection of the log ``one`` (its lines, in order)."""
    folder.mkdir(parents=True, exist_ok=True)
    by_conn: dict[str, list[str]] = {}
    with open(one) as fh:
        for line in fh:
            by_conn.setdefault(line.split(" conn=", 1)[1].split(" ", 1)[0], []).append(line)
    for conn, lines in by_conn.items():
        (folder / f"conn{int(conn):06d}.log").write_text("".join(lines))


def lab_lines(folder: Path, out: Path) -> int:
    """The statemine lines of a lab folder's runs in one log (each run's connections
    renamed apart); the number of runs."""
    runs = sorted((folder / "runs").glob("*/run.log.gz"))
    with open(out, "w") as dst:
        for i, run in enumerate(runs):
            with gzip.open(run, "rt") as src:
                for line in src:
                    if "STATEMINE t=" in line:
                        dst.write(line.replace(" conn=", f" conn=r{i}-", 1))
    return len(runs)


def qlog_documents(folder: Path, n_files: int, n_events: int) -> None:
    """``n_files`` one-connection qlog JSON documents (``.qlog``) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    evs = ",".join(json.dumps(e) for e in events(n_events))
    for i in range(n_files):
        (folder / f"conn{i:06d}.qlog").write_text(
            '{"qlog_version": "0.3", "qlog_format": "JSON", "traces": [{"vantage_point": '
            f'{{"type": "server"}}, "common_fields": {{"ODCID": "{i:08x}", "time_format": '
            f'"relative"}}, "events": [{evs}]}}]}}'
        )


def qlog_files(folder: Path, n_files: int, n_events: int) -> Path:
    """``n_files`` one-connection JSON-SEQ files in ``folder`` and one JSON document of the
    same connections (returned)."""
    folder.mkdir(parents=True, exist_ok=True)
    evs = [json.dumps(e) for e in events(n_events)]
    for i in range(n_files):
        header = {
            "qlog_format": "JSON-SEQ",
            "qlog_version": "0.3",
            "trace": {
                "vantage_point": {"type": "server"},
                "common_fields": {"ODCID": f"{i:08x}", "time_format": "relative"},
            },
        }
        body = "".join("\x1e" + e + "\n" for e in evs)
        (folder / f"conn{i:06d}.sqlog").write_text("\x1e" + json.dumps(header) + "\n" + body)
    doc = folder.parent / f"{folder.name}-one.qlog"
    traces = ",".join(
        '{{"vantage_point": {{"type": "server"}}, "common_fields": {{"ODCID": "{:08x}", '
        '"time_format": "relative"}}, "events": [{}]}}'.format(i, ",".join(evs))
        for i in range(n_files)
    )
    doc.write_text('{"qlog_version": "0.3", "qlog_format": "JSON", "traces": [' + traces + "]}")
    return doc


def row(label: str, many: float, one: float) -> None:
    print(f"{label:<52} {many:8.3f} s  one file {one:7.3f} s  ratio {many / one:5.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--qlog-files", type=int, default=10_000)
    ap.add_argument("--qlog-events", type=int, default=200)
    ap.add_argument("--only", choices=["lines", "lab", "qlog"], action="append")
    ap.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("STATEMINE_CACHE", "~/.cache/statemine")).expanduser(),
    )
    args = ap.parse_args()
    only = set(args.only or ["lines", "lab", "qlog"])
    cache = args.cache / "bench-many-files"
    cache.mkdir(parents=True, exist_ok=True)

    def best(fn, paths) -> float:
        return min(fn(paths) for _ in range(args.repeat))

    if "lines" in only:
        for n_files, lines in ((2_000, 50), (10_000, 100)):
            one = cache / f"lines-{n_files}x{lines}.log"
            folder = cache / f"lines-{n_files}x{lines}"
            if not folder.exists():
                generate(one, n_files * lines, lines)
                split_log(one, folder)
            name = f"{n_files} x {lines} lines"
            row(f"{name}: statemine infer (CLI)", best(infer_cpu, [folder]), best(infer_cpu, [one]))
            row(f"{name}: statemine.read", best(read_cpu, [folder]), best(read_cpu, [one]))
            row(f"{name}: store_add", best(store_cpu, [folder]), best(store_cpu, [one]))
    if "lab" in only:
        for folder in sorted(p for p in (ROOT / "traces").iterdir() if (p / "runs").is_dir()):
            one = cache / f"lab-{folder.name}.log"
            n_runs = lab_lines(folder, one)
            if not one.stat().st_size:  # e.g. kernel TCP runs: ftrace text, no statemine lines
                print(f"traces/{folder.name}: its run logs hold no statemine lines")
                continue
            # the runs' logs are gzip members: the same lines in one gzip log show how
            # much of the ratio is the inflate both then pay
            one_gz = one.with_name(one.name + ".gz")
            with open(one, "rb") as src, gzip.open(one_gz, "wb") as dst:
                shutil.copyfileobj(src, dst)
            # the folder as shipped reads from its committed cache, each run file hashed
            # (a clone's stat is not the recorded one); a copy without the cache reads the
            # runs; a copy whose cache is built here passes on the recorded stat alone
            bare = cache / f"lab-{folder.name}-bare"
            cached = cache / f"lab-{folder.name}-cached"
            for copy in (bare, cached):
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(folder, copy)
            (bare / "traces-cache.parquet").unlink(missing_ok=True)
            subprocess.run(
                [sys.executable, "-m", "statemine", "lab", "cache", str(cached)],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            used = subprocess.run(
                [sys.executable, "-c", _CACHE_USED, str(folder)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            keys = ("shipped", "bare", "cached", "one", "gz")
            times: dict[str, list[float]] = {k: [] for k in keys}
            for _ in range(args.repeat):  # alternated
                for k, paths in zip(keys, ([folder], [bare], [cached], [one], [one_gz])):
                    times[k].append(read_cpu(paths))
            low = {k: min(v) for k, v in times.items()}
            row(
                f"traces/{folder.name} ({n_runs} runs): read as shipped", low["shipped"], low["one"]
            )
            print(f"  its shipped cache used: {used}")
            row(f"traces/{folder.name}: read, no cache", low["bare"], low["one"])
            row(
                f"traces/{folder.name}: read, no cache, against one gzip log",
                low["bare"],
                low["gz"],
            )
            row(f"traces/{folder.name}: read, its cache built here", low["cached"], low["one"])
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if "qlog" in only:
        folder = cache / f"qlog-{args.qlog_files}x{args.qlog_events}"
        doc = folder.parent / f"{folder.name}-one.qlog"
        if not doc.exists():
            qlog_files(folder, args.qlog_files, args.qlog_events)
        docs = folder.parent / f"{folder.name}-docs"
        if not docs.exists():
            qlog_documents(docs, args.qlog_files, args.qlog_events)
        one_read, one_infer = best(read_cpu, [doc]), best(infer_cpu, [doc])
        name = f"{args.qlog_files} one-connection qlogs"
        row(f"{name} (JSON-SEQ): read", best(read_cpu, [folder]), one_read)
        row(f"{name} (JSON-SEQ): statemine infer", best(infer_cpu, [folder]), one_infer)
        row(f"{name} (.qlog documents): read", best(read_cpu, [docs]), one_read)
        row(f"{name} (.qlog documents): infer", best(infer_cpu, [docs]), one_infer)
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
