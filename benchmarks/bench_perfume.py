"""Speed and memory of statemine's Perfume (``--engine perfume``), in process.

Two kinds of generated logs in the oracle's format (``<time> <Type>`` lines, ``--`` between
traces, ``-r '^(?<DTIME>)(?<TYPE>)$' -s '^--$'``):

* *latency logs*: Connect, TokenAuth (fast) or PasswordAuth (slow), Query, Reply (5-9 ms
  after a token, 0.2-1.2 s after a password), Close: delays fall into a few regimes, and
  the model stays small;
* *state logs*: CC states from a Markov chain with random delays (1-200,000 us), i.e.
  every delay distinct, every mined bound tight: Perfume's worst case, where its model
  approaches one node per event (``perfume_infer``'s module doc: the caps that bound it);
* *event logs*: the same states with point events (loss, tlp, rto, acks, close/timeout;
  ``bench_synoptic.event_log``), the same random delays;
* *one-trace logs* (``chain``, not in the default kinds): a state log's traces joined
  into one, as from one long connection: every merge closes a cycle that breaks an upper
  bound, so the model is the trace chain, and what is measured is that finding it stays
  linear (it took O(n^2) per merge check before session 30);
* *one-trace logs with positive cycles* (``cycles``, not in the default kinds): one
  trace of four types (shares 0.4/0.3/0.2/0.1, in random order) with heavy-tailed delays
  (lognormal(9, 1.5) + 1 us), so that merges leave cycles with a positive largest delta in
  the model; what is measured is that the marked walk rounds stay linear (a 20,000-event
  log did not finish before session 33);
* *interleaved connections* (``conn``, issue 31): short connections of the CC states
  (3-11 events, RetransmissionTimeout now and then), lines ``<us> <conn> <Type>`` of
  all connections interleaved by time, read with ``-m '\\k<conn>'``;
* *lab logs* (``--lab FOLDER``, issue 31): whole traces of a shipped lab folder
  (``traces/FOLDER/traces-cache.parquet``: real stacks' congestion states and events, in
  virtual or real time) or of any folder ``statemine lab run`` wrote (``--lab PATH``; the
  shipped folders give at most about 2,000 events, ``examples/scenarios/short-transfers.toml``
  about 9,000), in the same ``conn`` layout (:func:`lab_log`).

Per log: events, the model's nodes, wall and CPU seconds of one whole run (parse, mining,
refinement, coarsening, files written), the peak of Python and numpy allocations
(tracemalloc, a second run) and the process's peak RSS so far (``ru_maxrss``: it only
grows, so run one log per process, ``--sizes N --kinds K``, to read it per log) and the
CPU milliseconds per event; with ``--bound``, the lower bound on any valid model's nodes
(``timeconflicts.perfume_lower_bound``) and its CPU seconds (not in the run's);
``--clique-events N`` lets its per-type clique bounds look at N events a type, not 3,000
(a one-trace log's bound stops near 3,000 a type otherwise; memory: N squared bytes).  The
load average is printed first (the machine is shared: read the CPU seconds).

CPU per event (``cpu s`` / ``events``) is the figure to compare across sizes: it should
stay flat (docs/synoptic-engine.md, Perfume's speed).

Run: ``python benchmarks/bench_perfume.py [--sizes 1000,10000,100000] [--kinds conn]``;
lab logs: ``--lab jitter,quiche-bbr --sizes 600 --seeds 1,2,3 [--max-trace 40]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_synoptic import _W, REGEX, SEPARATOR, STATES, _markov, event_log, state_log, write_log

from statemine.infer.synoptic.command import run_command
from statemine.infer.synoptic.log import EventLog
from statemine.infer.synoptic.options import parse_args
from statemine.infer.synoptic.perfume import mine_constrained
from statemine.infer.synoptic.run import read_log
from statemine.infer.synoptic.timecheck import TimedCodes, exact_ticks
from statemine.infer.synoptic.timeconflicts import (
    CLIQUE_EVENTS,
    perfume_lower_bound,
    perfume_type_bounds,
)


def latency_log(n_traces: int, rng: np.random.Generator) -> list[list[tuple[str, int]]]:
    """``n_traces`` latency traces as (type, ms) pairs (module doc)."""
    traces = []
    for _ in range(n_traces):
        slow = rng.random() < 0.5
        t = int(rng.integers(0, 5))
        trace = [("Connect", t)]
        for name, lo, hi in (
            ("PasswordAuth" if slow else "TokenAuth", 2, 6),
            ("Query", 2, 7),
            ("Reply", 200, 1200) if slow else ("Reply", 4, 10),
            ("Close", 1, 4),
        ):
            t += int(rng.integers(lo, hi))
            trace.append((name, t))
        traces.append(trace)
    return traces


#: Regex and mapping of the interleaved-connection logs (issue 31: ``-m '\k<conn>'``).
CONN_REGEX = r"^(?<DTIME>)(?<conn>)(?<TYPE>)$"
CONN_MAPPING = r"\k<conn>"


def interleaved_log(n_events: int, rng: np.random.Generator) -> str:
    """About ``n_events`` events of short connections (3-11 events: Init, then the CC
    states' Markov walk, which reaches RetransmissionTimeout now and then), lines
    ``<microseconds> <conn> <Type>`` of all connections interleaved by time, every
    delay drawn from 1-200,000 us (every delay distinct: Perfume's hard case)."""
    lines, total, conn = [], 0, 0
    while total < n_events:
        n = int(rng.integers(3, 12))
        trace = ["Init"] + [STATES[i] for i in _markov(rng, _W, n - 1)]
        t = int(rng.integers(0, 10 * n_events)) * 1000
        for ev in trace:
            t += int(rng.integers(1, 200_000))
            lines.append((t, conn, ev))
        total += n
        conn += 1
    lines.sort()
    return "".join(f"{t} c{c} {ev}\n" for t, c, ev in lines)


#: The repository's shipped lab folders (traces/README.md).
TRACES = Path(__file__).resolve().parents[1] / "traces"


def lab_log(
    folder: Path, n_events: int, rng: np.random.Generator, max_events_per_trace: int = 40
) -> str:
    """About ``n_events`` events of a lab folder's traces, whole traces of at most
    ``max_events_per_trace`` events taken in ``rng``'s order until ``n_events`` are reached
    (fewer when the folder has fewer), lines ``<microseconds> c<i> <state>`` interleaved by
    time (ties: trace, then position in it), read with ``CONN_REGEX``/``CONN_MAPPING``.

    ``state`` is the cache's column (states and point events, e.g. ``LossDetected``);
    times are each stack's own clock in whole microseconds (virtual time starts at 0 for
    aioquic and quiche, at 946,684,800 s for quic-go; kernel TCP in real time)."""
    df = pd.read_parquet(folder / "traces-cache.parquet", columns=["trace", "seq", "time", "state"])
    df["trace"] = df["trace"].astype(str)
    sizes = df.groupby("trace").size()
    sizes = sizes[sizes <= max_events_per_trace].sort_index()
    keep: list[str] = []
    total = 0
    for name in rng.permutation(sizes.index.to_numpy()):
        if total >= n_events:
            break
        keep.append(str(name))
        total += int(sizes[name])
    sub = df[df["trace"].isin(keep)].copy()
    sub["c"] = sub["trace"].map({name: i for i, name in enumerate(keep)})
    sub["us"] = np.round(sub["time"].to_numpy() * 1e6).astype(np.int64)
    sub = sub.sort_values(["us", "c", "seq"], kind="stable")
    return "".join(
        f"{u} c{c} {state}\n"
        for u, c, state in zip(sub["us"], sub["c"], sub["state"].astype(str), strict=True)
    )


def read_conn(text: str) -> tuple[EventLog, pd.DataFrame, TimedCodes, np.ndarray]:
    """A ``conn``-layout log's ``text`` read as ``--engine perfume -r CONN_REGEX -m
    CONN_MAPPING`` reads it: the log, its constrained invariants, their codes and the
    events' exact times (ticks)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "conn.log"
        path.write_text(text)
        log = read_log(parse_args(["-r", CONN_REGEX, "-m", CONN_MAPPING, str(path)], "perfume"))
    frame = mine_constrained(log)
    ticks, scale = exact_ticks(log)
    return log, frame, TimedCodes.from_frame(frame, log.types, scale), ticks


def load_conn(n: int) -> tuple[EventLog, pd.DataFrame, TimedCodes, np.ndarray]:
    """The benchmark's connection log of about ``n`` events, ``interleaved_log(n,
    default_rng(n))`` (what ``--kinds conn`` writes), read by :func:`read_conn`."""
    return read_conn(interleaved_log(n, np.random.default_rng(n)))


def bound_and_cpu(log, table, clique_events: int = CLIQUE_EVENTS) -> tuple[int, float]:
    """The lower bound on the nodes of every valid model of ``log`` (its constrained
    invariants ``table``; the per-type bounds over at most ``clique_events`` events a
    type) and the CPU seconds it took."""
    c0 = time.process_time()
    ticks, scale = exact_ticks(log)
    codes = TimedCodes.from_frame(table, log.types, scale)
    per_type = perfume_type_bounds(log, codes, ticks, clique_events)
    return perfume_lower_bound(log, codes, ticks, per_type), time.process_time() - c0


def run(
    name: str,
    path: Path,
    tmp: Path,
    peak_run: bool = True,
    bound: bool = False,
    seed: int = 1,
    extra_args: tuple[str, ...] = (),
    clique_events: int = CLIQUE_EVENTS,
) -> None:
    """One row: ``--engine perfume`` on ``path`` with ``--randomSeed=seed`` (and
    ``extra_args``, e.g. ``--exactBudget 10``), timed, then again under tracemalloc
    (``peak_run``; else the peak column is nan); with ``bound``, the lower bound
    (:func:`bound_and_cpu`) and its CPU seconds."""
    conn = "conn" in name or name.startswith("lab-")
    split = ["-r", CONN_REGEX, "-m", CONN_MAPPING] if conn else ["-r", REGEX, "-s", SEPARATOR]
    args = [*split, f"--randomSeed={seed}", *extra_args, "-o", str(tmp / name), str(path)]
    c0, t0 = cpu_s(), time.perf_counter()
    done = run_command("perfume", args)
    wall, cpu = time.perf_counter() - t0, cpu_s() - c0
    peak = float("nan")
    if peak_run:
        tracemalloc.start()
        run_command("perfume", args)
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    log = done.result.log
    extra = ""
    if bound:
        value, bound_cpu = bound_and_cpu(log, done.result.table, clique_events)
        extra = f" {value:>6d} {bound_cpu:>8.2f}"
    label = name if seed == 1 and not extra_args else f"{name} s{seed}{' '.join(extra_args)}"
    print(
        f"{label:24s} {log.n_events:>8d} {done.result.model.n_nodes:>6d} {wall:>8.2f} "
        f"{cpu:>8.2f} {peak:>8.1f} {rss:>8.0f} {1000 * cpu / log.n_events:>8.2f}{extra}",
        flush=True,
    )


def cpu_s() -> float:
    """CPU seconds of this process and its waited-for children (``--exactBudget`` runs
    CP-SAT in a forked child)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def cycles_log(n_events: int, rng: np.random.Generator) -> str:
    """One trace of ``n_events`` events (module doc, ``cycles``), lines ``<us> <Type>``."""
    types = rng.choice(np.array(list("ABCD")), size=n_events, p=[0.4, 0.3, 0.2, 0.1])
    delays = np.floor(rng.lognormal(9.0, 1.5, size=n_events)).astype(np.int64) + 1
    return "".join(f"{t} {e}\n" for t, e in zip(np.cumsum(delays), types))


def write_kind(kind: str, n: int, path: Path, max_trace: int) -> None:
    """The benchmark's log of ``kind`` and about ``n`` events at ``path`` (seeded by
    ``n``); ``lab-FOLDER``: :func:`lab_log` of ``traces/FOLDER`` (an absolute ``FOLDER``
    is itself)."""
    rng = np.random.default_rng(n)
    if kind.startswith("lab-"):
        path.write_text(lab_log(TRACES / kind[4:], n, rng, max_trace))
    elif kind == "conn":
        path.write_text(interleaved_log(n, rng))
    elif kind == "latency":
        traces = latency_log(n // 5, rng)
        text = "\n--\n".join("\n".join(f"{t} {e}" for e, t in tr) for tr in traces)
        path.write_text(text + "\n")
    elif kind == "cycles":
        path.write_text(cycles_log(n, rng))
    elif kind == "chain":
        joined = [state for trace in state_log(n, rng) for state in trace]
        write_log([joined], path, np.random.default_rng(0))
    else:
        make = state_log if kind == "states" else event_log
        write_log(make(n, rng), path, np.random.default_rng(0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="events per log")
    parser.add_argument(
        "--kinds", default="latency,states,events,conn", help="log kinds to run (and chain, cycles)"
    )
    parser.add_argument(
        "--lab",
        default="",
        help="lab folders instead of --kinds: names under traces/, or paths (a folder of"
        " `statemine lab run`, e.g. of examples/scenarios/short-transfers.toml)",
    )
    parser.add_argument(
        "--max-trace", type=int, default=40, help="lab logs: longest trace taken (events)"
    )
    parser.add_argument("--seeds", default="1", help="engine seeds (--randomSeed)")
    parser.add_argument(
        "--exact-budget", type=float, default=0.0, help="--exactBudget S (det. s; 0: off)"
    )
    parser.add_argument(
        "--no-peak",
        action="store_true",
        help="skip the tracemalloc run (it takes several times the timed run)",
    )
    parser.add_argument(
        "--bound", action="store_true", help="add the lower bound and its CPU seconds"
    )
    parser.add_argument(
        "--clique-events",
        type=int,
        default=CLIQUE_EVENTS,
        help="--bound: events a type its clique bound looks at (memory: their square, bytes)",
    )
    opts = parser.parse_args()
    sizes = [int(x) for x in opts.sizes.split(",")]
    # (kind for write_kind, name in the table and file names): a lab path is resolved
    labs = [Path(f).resolve() if "/" in f else f for f in opts.lab.split(",") if f]
    kinds = [(f"lab-{f}", f"lab-{Path(f).name}") for f in labs] or [
        (k, k) for k in opts.kinds.split(",")
    ]
    seeds = [int(x) for x in opts.seeds.split(",")]
    extra = ("--exactBudget", f"{opts.exact_budget:g}") if opts.exact_budget > 0 else ()
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    head = ["events", "nodes", "wall s", "cpu s", "peak MiB", "RSS MiB", "cpu ms/ev"]
    head += ["bound", "bound s"] if opts.bound else []
    print(f"{'log':24s} " + " ".join(f"{h:>{6 if h in ('nodes', 'bound') else 8}s}" for h in head))
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for kind, name in kinds:
            for n in sizes:
                path = tmp / f"{name}-{n}.log"
                write_kind(kind, n, path, opts.max_trace)
                for k, seed in enumerate(seeds):
                    bound = opts.bound and k == 0
                    args = (not opts.no_peak, bound, seed, extra, opts.clique_events)
                    run(f"{name}-{n}", path, tmp, *args)


if __name__ == "__main__":
    main()
