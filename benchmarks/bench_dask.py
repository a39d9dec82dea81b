"""Benchmark: the tables of a large trace store on Dask (issue 17, part 3).

Synthesizes a store directly with pyarrow (not from text) in a temporary folder: EVENTS
events in FILES data files over 10 partitions (``half=a|b/day=d0..d4``), traces of about
EVENTS_PER_TRACE events (80% state lines over 4 states, 20% point events, exponential
gaps, a Close time on half the traces). Then, for each worker count, starts a local
cluster (1 thread and 2 GiB per worker), runs the map (per group of files, on the workers)
and the reduce plus the tables (here, without bootstrap: ``--bootstrap 0``, which runs on
the driver and does not scale with workers), and prints wall times, events per second,
the workers' and the driver's peak RSS, and the scaling projected from the serial (driver)
and parallel (map) parts. The store is deleted at the end. Nothing is asserted.

The diff (``--runs diff``): ``statemine diff`` of the store's two halves (partition key
``half=a|b``, every other file) on the cluster -- per-trace statistics from the workers,
merged and tested on the driver (``--n-perm`` permutations, ``--n-boot`` resamples) --
with its wall time, events per second and the driver's peak memory over the run.

The invariants (``--runs invariants``): ``statemine store invariants STORE --dask
local:N`` through the library (:func:`statemine.distributed.run.store_invariants`: each
task's invariant evidence on the workers, merged and mined on the driver), with its wall
time, events per second, the CPU seconds of the workers and of the driver, and peak RSS;
``--workers 0`` runs it in this process without Dask.

With ``--check`` (small stores only) the tables are also compared with the single-machine
ones (read whole, :func:`statemine.summarize`), the diff's files with those of the
diff of the halves read whole, and the invariants with those mined from the store's
events read whole, states and point events (what
:func:`statemine.infer.synoptic.infer_synoptic` mines).

Run:  python benchmarks/bench_dask.py [--events 100000000] [--files 50] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's statemine

STATES = ["SlowStart", "CongestionAvoidance", "Recovery", "ApplicationLimited"]


def synthesize(store: Path, events: int, files: int, per_trace: int, seed: int = 0) -> None:
    """Write a store of ``events`` rows in ``files`` files (the schema of docs/store.md)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from statemine.store import META_NAME, ROW_GROUP, _schema, store_migrate

    rng = np.random.default_rng(seed)
    schema = _schema()
    store.mkdir(parents=True)
    (store / META_NAME).write_text(json.dumps({"format": 1, "partition_keys": ["half", "day"]}))
    per_file = events // files
    trace_no = 0
    for i in range(files):
        n = per_file + (events - per_file * files if i == files - 1 else 0)
        n_traces = max(1, n // per_trace)
        cuts = np.sort(rng.choice(np.arange(1, n), n_traces - 1, replace=False))
        trace = np.repeat(np.arange(n_traces, dtype=np.int32), np.diff(np.r_[0, cuts, n]))
        starts = np.r_[0, cuts]
        seq = np.arange(n, dtype=np.int64) - np.repeat(starts, np.diff(np.r_[starts, n]))
        gaps = rng.exponential(0.01, n)
        gaps[starts] = 0.0
        time_ = np.cumsum(gaps)
        time_ -= np.repeat(time_[starts], np.diff(np.r_[starts, n]))
        kind = (rng.random(n) < 0.2).astype(np.int32)  # 0 state, 1 event
        kind[starts] = 0
        state = rng.integers(0, len(STATES), n, dtype=np.int32)
        last = np.r_[starts[1:], n] - 1
        end_per = np.where(rng.random(n_traces) < 0.5, time_[last] + 0.05, np.nan)
        ids = np.array([f"t{trace_no + k}" for k in range(n_traces)], dtype=object)
        trace_no += n_traces

        def text(codes: np.ndarray, values) -> pa.DictionaryArray:
            return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(values))

        table = pa.table(
            {
                "trace": text(trace, ids),
                "seq": seq,
                "time": time_,
                "kind": text(kind, ["state", "event"]),
                "state": text(np.where(kind == 1, len(STATES), state), [*STATES, "Loss"]),
                "line": seq + 1,
                "cwnd": pa.nulls(n, pa.float64()),
                "inflight": pa.nulls(n, pa.float64()),
                "ssthresh": pa.nulls(n, pa.float64()),
                "srtt": pa.nulls(n, pa.float64()),
                "fields": pa.nulls(n, pa.string()),
                "source": text(np.zeros(n, np.int32), [f"gen-{i}.log"]),
                "end": end_per[trace],
            }
        ).cast(schema)
        folder = store / f"half={'ab'[i % 2]}" / f"day=d{i % 5}"
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(
            table, folder / f"part-{i:05d}.parquet", compression="zstd", row_group_size=ROW_GROUP
        )
    # written as a format 1 store (data files only); published as a version of format 4
    store_migrate(store)


def run_diff(store: Path, workers: int, n_perm: int, n_boot: int, check: bool) -> dict:
    """``statemine diff STORE STORE --select-a half=a --select-b half=b --dask local:N``
    through the library: wall time, the driver's peak RSS over the run (sampled, MiB above
    what it held before) and the workers' peak."""
    import threading

    from statemine.commands import diff_to_dir
    from statemine.distributed.cluster import dask_client
    from statemine.stats.options import CompareOptions

    compare = CompareOptions(n_perm=n_perm, n_boot=n_boot)
    sides: dict[str, Any] = dict(
        select_a=["half=a"], select_b=["half=b"], compare=compare, svg=False
    )
    with (
        tempfile.TemporaryDirectory(prefix="bench-dask-diff-") as out,
        dask_client(f"local:{workers}") as client,
    ):
        base = _rss_mib()
        peak = [base]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.05):
                peak[0] = max(peak[0], _rss_mib())

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        t0 = time.perf_counter()
        got = diff_to_dir(str(store), str(store), Path(out) / "dask", client=client, **sides)
        wall = time.perf_counter() - t0
        done.set()
        sampler.join()
        peaks = client.run(_hwm_mib)
        if check:
            diff_to_dir(str(store), str(store), Path(out) / "single", **sides)
            for name in ("states_diff.csv", "transitions_diff.csv", "one_sided.csv", "notes.txt"):
                a, b = (Path(out) / d / name for d in ("dask", "single"))
                assert a.read_bytes() == b.read_bytes(), f"{name} differs"
    return {
        "workers": workers,
        "traces": got.result.n_traces_a + got.result.n_traces_b,
        "wall_s": wall,
        "driver_mib": peak[0] - base,
        "driver_base_mib": base,
        "worker_peak_mib": max(peaks.values()),
    }


def run_invariants(store: Path, workers: int, check: bool) -> dict:
    """``statemine store invariants STORE --dask local:N`` (``workers`` 0: in this process)
    through the library: wall time, CPU seconds of the workers and of this process."""
    from contextlib import nullcontext

    from statemine.distributed.cluster import dask_client
    from statemine.distributed.run import dask_mapper, store_invariants, tasks_for
    from statemine.infer.synoptic.formats import to_invariants_txt

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    with dask_client(f"local:{workers}") if workers else nullcontext() as client:
        before = client.run(cpu) if client else {}
        driver = cpu()
        t0 = time.perf_counter()
        if client is None:
            inv = store_invariants(store)
        else:
            inv = store_invariants(store, mapper=dask_mapper(client), n_tasks=tasks_for(client))
        wall = time.perf_counter() - t0
        driver = cpu() - driver
        after = client.run(cpu) if client else {}
        peaks = client.run(_hwm_mib) if client else {}
    if check:
        from statemine.infer.synoptic.invariants import mine_invariants
        from statemine.infer.synoptic.log import EventLog
        from statemine.store import read_store

        want = mine_invariants(EventLog.from_traceset(read_store(store)))  # infer_synoptic's
        assert to_invariants_txt(inv) == to_invariants_txt(want), "invariants differ"
    return {
        "workers": workers,
        "invariants": len(inv),
        "wall_s": wall,
        "worker_cpu_s": sum(after[w] - before[w] for w in after),
        "driver_cpu_s": driver,
        "worker_peak_mib": max(peaks.values(), default=0.0),
        "driver_peak_mib": _hwm_mib(),
    }


def _hwm_mib() -> float:
    """This process's peak resident memory, MiB (Linux /proc VmHWM: per address space, so
    unlike ``ru_maxrss`` not inherited from the process that spawned a worker)."""
    with open("/proc/self/status") as fh:
        line = next(x for x in fh if x.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def _rss_mib() -> float:
    """This process's resident memory now, MiB (Linux /proc)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def run(store: Path, workers: int, check: bool) -> dict:
    from statemine.distributed.cluster import dask_client
    from statemine.distributed.run import _Fold, dask_mapper, file_tasks, tasks_for
    from statemine.distributed.storestats import reduce_folds
    from statemine.stats.options import StatsOptions
    from statemine.stats.tables import tables
    from statemine.store import store_files

    opts = StatsOptions(n_boot=0)
    with dask_client(f"local:{workers}") as client:
        t0 = time.perf_counter()
        files = store_files(store)
        tasks = file_tasks(files, tasks_for(client))
        folds = list(dask_mapper(client)(_Fold(opts), list(enumerate(tasks))))
        t1 = time.perf_counter()
        reduced = reduce_folds(folds, opts)
        states, transitions = tables(reduced, opts)
        t2 = time.perf_counter()
        peaks = client.run(_hwm_mib)
    if check:
        import statemine
        from statemine.store import read_store

        want = statemine.summarize(read_store(store), opts)
        assert states.equals(want[0]) and transitions.equals(want[1]), "tables differ"
    return {
        "workers": workers,
        "tasks": len(tasks),
        "events": reduced.n_events,
        "traces": reduced.n_traces,
        "map_s": t1 - t0,
        "reduce_s": t2 - t1,
        "worker_peak_mib": max(peaks.values()),
        "driver_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000_000)
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--events-per-trace", type=int, default=200)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--check", action="store_true", help="compare with the single machine")
    ap.add_argument(
        "--runs",
        nargs="+",
        choices=["summary", "diff", "invariants"],
        default=["summary", "diff"],
        help="summary: the tables (infer); diff: half=a against half=b; invariants: "
        "Synoptic's invariants (store invariants)",
    )
    ap.add_argument("--n-perm", type=int, default=999, help="diff's permutations")
    ap.add_argument("--n-boot", type=int, default=200, help="diff's bootstrap resamples")
    args = ap.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="bench-dask-") as tmp:
        store = Path(tmp) / "store"
        t0 = time.perf_counter()
        synthesize(store, args.events, args.files, args.events_per_trace)
        size = sum(p.stat().st_size for p in store.rglob("*.parquet"))
        print(
            f"store: {args.events:,} events in {args.files} files, {size / 1e6:.0f} MB "
            f"({size / args.events:.2f} bytes/event), synthesized in {time.perf_counter() - t0:.0f} s"
        )
        results = []
        for w in args.workers if "diff" in args.runs else []:
            d = run_diff(store, w, args.n_perm, args.n_boot, args.check)
            print(
                f"diff half=a vs half=b, {w} worker(s): {d['traces']:,} traces, "
                f"{d['wall_s']:.1f} s, {args.events / d['wall_s']:,.0f} events/s; driver peak "
                f"+{d['driver_mib']:.0f} MiB over its {d['driver_base_mib']:.0f} MiB, "
                f"worker peak {d['worker_peak_mib']:.0f} MiB"
            )
            print(f"  load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for w in args.workers if "invariants" in args.runs else []:
            v = run_invariants(store, w, args.check)
            print(
                f"invariants, {w or 'no'} worker(s){'' if w else ' (in process)'}: "
                f"{v['invariants']} invariants, {v['wall_s']:.1f} s, "
                f"{args.events / v['wall_s']:,.0f} events/s; CPU workers {v['worker_cpu_s']:.1f} s, "
                f"driver {v['driver_cpu_s']:.1f} s; peak RSS per worker "
                f"{v['worker_peak_mib']:.0f} MiB, driver {v['driver_peak_mib']:.0f} MiB"
            )
            print(f"  load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for w in args.workers if "summary" in args.runs else []:
            r = run(store, w, args.check)
            results.append(r)
            total = r["map_s"] + r["reduce_s"]
            print(
                f"{w} worker(s): {r['tasks']} tasks, {r['traces']:,} traces; map {r['map_s']:.1f} s, "
                f"reduce + tables {r['reduce_s']:.1f} s; {r['events'] / total:,.0f} events/s; "
                f"peak RSS per worker {r['worker_peak_mib']:.0f} MiB, driver {r['driver_peak_mib']:.0f} MiB"
            )
            print(f"  load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        one = next((r for r in results if r["workers"] == 1), None)
        if one is not None:
            serial, parallel = one["reduce_s"], one["map_s"]
            for n in (2, 4, 8, 16, 32):
                t = serial + parallel / n
                print(
                    f"projected {n:2d} workers (own cores, same disk bandwidth per core): "
                    f"{t:.1f} s, {one['events'] / t:,.0f} events/s"
                )


if __name__ == "__main__":
    main()
