"""Speed of statemine's Synoptic engine (``--engine synoptic``).

Generates, with a fixed seed, congestion-control logs in the oracle's format
(``<microseconds> <Type>`` lines, ``--`` between traces, parsed with
``-r '^(?<DTIME>)(?<TYPE>)$' -s '^--$'``):

* *state logs*: one line per state change, from a Markov chain over the CC states;
* *event logs*: states interleaved with point events (ack, loss, tlp, rto, close,
  timeout), whose invariants (``rto AlwaysFollowedBy RetransmissionTimeout``,
  ``close NeverFollowedBy x``, ...) fail on the initial one-node-per-type graph, so the
  engine has to refine;
* synthetic Markov logs with 4..64 state types, for the growth with the number of types.

Prints, per log: events, types, and in process (the path ``statemine infer --engine
synoptic`` takes) the parse time (regex reader + coding the traces), inference time
(mining + refinement + coarsening), output time (dot, invariants and json written to
disk), their total, the CPU time of that run (process time: above the wall time when
the reader and writer use both cores) and the model's nodes.  Each log runs
``--repeat`` times (default 3) and the run with the smallest total is shown (the
machine is shared; the log file and memory are warm after the first run).  A warm-up
run first: Python's lazy imports are paid once per process.  ``--cli`` also times the
command line in fresh processes on the 1e4-event event log, the 1e5- and (without
``--quick``) the 1e6-event state logs (imports included; the median and best wall time
of ``--repeat`` runs after a warm-up, the median user + system CPU time, peak RSS and the
load average around them: only a wall time at a load well below the 2 cores means
anything).  The in-process 1e5 and 1e6 rows are compared with the real Synoptic's times
(issue 13's goal: at least 100x), and every row is repeated at the end as a markdown
table.  Each row also shows the peak of
Python and numpy allocations (tracemalloc, a separate run), and the growth of time and
memory with events and with event types is fitted as a power law (the exponent of the
least-squares line through the log-log points).  The load average is printed first.

Run: ``python benchmarks/bench_synoptic.py [--quick] [--repeat N] [--cli] [--readers]
[--sizes]`` (``--readers``: only the regex reader, per path, on a 1e6-event state log;
``--quick`` skips the 1e6-event logs (Perfume: ``bench_perfume.py``); ``--sizes``: only model sizes, inference time and
peak memory on generated event logs of 3e3..1e5 events and on the oracle's repo logs, next
to Synoptic's node counts where a real Synoptic made them: the oracle cases, or a jar named
by ``STATEMINE_SYNOPTIC_JAR``, which runs on the generated logs too; the issue's figures, on
other logs of this generator, in parentheses) and the lower bound no model of that log can
undercut (:func:`statemine.infer.synoptic.bounds.node_lower_bound`, Synoptic's included).  Reference (issue 13, the real Synoptic, whole process): 3.27 s on a 1e4-event event log
needing refinement, 5.19 s on a 1e5-event state log, 401 s and 12.3 GB on 1e6.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from statemine.infer.synoptic import SynopticResult, infer_log
from statemine.infer.synoptic.formats import write_outputs
from statemine.infer.synoptic.log import EventLog
from statemine.parse.regex import read_regex, read_regex_arrays

REGEX = "^(?<DTIME>)(?<TYPE>)$"
SEPARATOR = "^--$"

STATES = [
    "SlowStart",
    "CongestionAvoidance",
    "CongestionAvoidanceMaxed",
    "Recovery",
    "ApplicationLimited",
    "TailLossProbe",
    "RetransmissionTimeout",
]
# Transition weights between the CC states (rows: from, columns: to), Init -> SlowStart.
_W = np.array(
    [
        # SS   CA   CAM  Rec  AL   TLP  RTO
        [0.0, 0.45, 0.0, 0.30, 0.15, 0.05, 0.05],  # SlowStart
        [0.0, 0.0, 0.10, 0.50, 0.25, 0.10, 0.05],  # CongestionAvoidance
        [0.0, 0.30, 0.0, 0.40, 0.20, 0.05, 0.05],  # CongestionAvoidanceMaxed
        [0.0, 0.70, 0.0, 0.0, 0.15, 0.10, 0.05],  # Recovery
        [0.40, 0.40, 0.0, 0.10, 0.0, 0.05, 0.05],  # ApplicationLimited
        [0.0, 0.40, 0.0, 0.50, 0.0, 0.0, 0.10],  # TailLossProbe
        [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],  # RetransmissionTimeout
    ]
)


def _markov(rng: np.random.Generator, weights: np.ndarray, length: int) -> list[int]:
    p = weights / weights.sum(axis=1, keepdims=True)
    cur, out = 0, [0]
    for _ in range(length - 1):
        cur = int(rng.choice(len(p), p=p[cur]))
        out.append(cur)
    return out


def state_log(n_events: int, rng: np.random.Generator) -> list[list[str]]:
    """Traces of CC states (Init then a Markov walk), about ``n_events`` in all."""
    traces, total = [], 0
    while total < n_events:
        n = int(rng.integers(3, 30))
        trace = ["Init"] + [STATES[i] for i in _markov(rng, _W, n - 1)]
        traces.append(trace)
        total += len(trace)
    return traces


def event_log(n_events: int, rng: np.random.Generator) -> list[list[str]]:
    """Traces of CC states with point events: loss before Recovery, tlp before
    TailLossProbe, rto before RetransmissionTimeout, acks, and close/timeout at the end."""
    traces, total = [], 0
    while total < n_events:
        n = int(rng.integers(3, 14))
        walk = [STATES[i] for i in _markov(rng, _W, n)]
        trace = ["Init"]
        for state in walk:
            if state == "Recovery":
                trace.append("loss")
            elif state == "TailLossProbe":
                trace.append("tlp")
            elif state == "RetransmissionTimeout":
                trace.append("rto")
            trace.append(state)
            trace += ["ack"] * int(rng.integers(0, 3))
        trace.append("timeout" if trace[-1] == "RetransmissionTimeout" else "close")
        traces.append(trace)
        total += len(trace)
    return traces


def markov_log(n_events: int, n_types: int, rng: np.random.Generator) -> list[list[str]]:
    """Traces of a random sparse Markov chain over ``n_types`` states S0..S{n-1}."""
    weights = rng.random((n_types, n_types)) * (rng.random((n_types, n_types)) < 0.3)
    weights[np.arange(n_types), (np.arange(n_types) + 1) % n_types] += 0.5
    traces, total = [], 0
    while total < n_events:
        n = int(rng.integers(5, 40))
        traces.append([f"S{i}" for i in _markov(rng, weights, n)])
        total += n
    return traces


def write_log(traces: list[list[str]], path: Path, rng: np.random.Generator) -> int:
    """Write traces in the oracle's format; returns the number of events."""
    t = 1_700_000_000_000_000
    lines = []
    for trace in traces:
        for ev in trace:
            t += int(rng.integers(1, 200_000))
            lines.append(f"{t} {ev}")
        lines.append("--")
    path.write_text("\n".join(lines[:-1]) + "\n")
    return sum(map(len, traces))


#: The regex and mapping of two capture files whose connections ``-m`` merges (issue 13:
#: ``\k<FILE>`` is empty in a mapping other than the default, as in Synoptic, so
#: connection ``c`` of both files is one trace).
CAPTURE_REGEX = r"^(?<DTIME>)(?<conn>)(?<TYPE>)$"
CAPTURE_MAPPING = r"\k<FILE>#\k<conn>"


def write_captures(n_events: int, rng: np.random.Generator, folder: Path) -> list[Path]:
    """Two capture files of the event generator's traces (about ``n_events`` in all,
    half each), one connection id per trace (0, 1, ... in each file), lines
    ``<microseconds> <conn> <Type>`` interleaved by time; the second file's times come
    after the first's, so connection ``c``'s merged trace is its trace in the first file
    followed by its trace in the second."""
    traces = event_log(n_events, rng)
    half = len(traces) // 2
    paths = []
    for f, chunk in enumerate((traces[:half], traces[half:])):
        lines = []
        for conn, trace in enumerate(chunk):
            t = f * 10**12 + int(rng.integers(0, 10**6))
            for ev in trace:
                t += int(rng.integers(1, 200_000))
                lines.append((t, conn, ev))
        lines.sort()
        paths.append(folder / f"capture-{f}.log")
        paths[-1].write_text("".join(f"{t} {conn} {ev}\n" for t, conn, ev in lines))
    return paths


def run(
    name: str,
    traces: list[list[str]],
    tmp: Path,
    rng: np.random.Generator,
    repeat: int,
    rows: list[tuple[str, int, int, float, float, float, int]] | None = None,
) -> tuple[Path, int, float, float, float]:
    """Time parse, inference and output of one log (best of ``repeat`` runs by total),
    then measure the peak of Python and numpy allocations (tracemalloc, which does not
    see Arrow's buffers) in one more run; returns the log's path, its events, the best
    run's CPU seconds (steadier than wall time on a shared machine), the peak (MiB) and
    the best run's wall seconds, and appends (name, events, types, wall s, CPU s, peak
    MiB, nodes) to ``rows``."""
    import tracemalloc

    path = tmp / f"{name.split()[0]}.log"
    n = write_log(traces, path, rng)
    del traces[:]  # the generator's lists: not part of what is measured

    def once(k: int) -> tuple[float, float, float, float, float, int, int]:
        c0 = time.process_time()
        t0 = time.perf_counter()
        log = EventLog.from_regex_events(read_regex_arrays([path], [REGEX], SEPARATOR))
        t1 = time.perf_counter()
        res = infer_log(log, seed=1)
        t2 = time.perf_counter()
        assert res.table is not None  # Synoptic's engine mines invariants
        write_outputs(res.model, res.table, tmp / f"{name.split()[0]}-{k}")
        t3 = time.perf_counter()
        cpu = time.process_time() - c0
        for old in tmp.glob(f"{name.split()[0]}-{k}.*"):
            old.unlink()
        return t1 - t0, t2 - t1, t3 - t2, t3 - t0, cpu, len(log.types), res.model.n_nodes

    best = min((once(k) for k in range(repeat)), key=lambda r: r[3])
    tracemalloc.start()
    once(repeat)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    parse, infer, write, total, cpu, types, nodes = best
    print(
        f"{name:28s} {n:>9d} {types:>5d} {parse:>8.3f} {infer:>8.3f} "
        f"{write:>8.3f} {total:>8.3f} {cpu:>8.3f} {peak:>8.1f} {nodes:>6d}",
        flush=True,
    )
    if rows is not None:
        rows.append((name, n, types, total, cpu, peak, nodes))
    return path, n, cpu, peak, total


#: The real Synoptic on the issue's logs (issue 13; whole process, JVM start-up and a
#: PNG rendering included): events -> seconds.
SYNOPTIC_SECONDS = {100_000: 5.19, 1_000_000: 401.0}


def versus_synoptic(n: int, wall: float, cpu: float) -> str:
    """How many times faster than the real Synoptic a run of ``n`` events is (wall and
    CPU seconds; issue 13's goal: at least 100x from 1e5 events on)."""
    ref = SYNOPTIC_SECONDS[n]
    return (
        f"in process vs Synoptic at {n:.0e} events: {ref} s / {wall:.3f} s wall = "
        f"{ref / wall:.0f}x ({ref / cpu:.0f}x by CPU time {cpu:.3f} s); goal >= 100x"
    )


def markdown(rows: list[tuple[str, int, int, float, float, float, int]]) -> str:
    """The measured rows as a markdown table (for docs/synoptic-engine.md)."""
    out = ["| log | events | types | wall s | CPU s | peak MiB | nodes |", "|---" * 7 + "|"]
    for name, n, types, wall, cpu, peak, nodes in rows:
        out.append(f"| {name} | {n:,} | {types} | {wall:.3f} | {cpu:.3f} | {peak:.1f} | {nodes} |")
    return "\n".join(out)


def growth(label: str, xs: list[float], ys: list[float]) -> str:
    """``label: y ~ x^k`` with k the least-squares slope of log y on log x."""
    k = float(np.polyfit(np.log(xs), np.log(ys), 1)[0])
    return f"{label}: ~ x^{k:.2f}"


#: ``python -m statemine ARGS`` that prints its own peak RSS (VmHWM, kB) on stderr at exit:
#: wait4's ru_maxrss of a child counts the parent's memory at fork/exec.
_PEAK_RSS_WRAPPER = """
import atexit, runpy, sys
def peak():
    with open('/proc/self/status') as f:
        hwm = [l.split()[1] for l in f if l.startswith('VmHWM:')]
    sys.stderr.write('VmHWM ' + (hwm[0] if hwm else '0') + '\\n')
atexit.register(peak)
sys.argv = ['statemine', *sys.argv[1:]]
runpy.run_module('statemine', run_name='__main__')
"""


def run_cli(path: Path, tmp: Path, repeat: int, label: str) -> tuple[float, float]:
    """Time ``python -m statemine infer --engine synoptic`` on ``path`` in fresh
    processes (the options of Synoptic's measured runs: dot with P and Cnt labels,
    invariants with support counts, json): ``repeat`` runs after a warm-up run, printing
    the median and best wall time, the median user + system CPU time, the child's peak
    RSS (its VmHWM) and the load average before and after (the machine is shared: a wall
    time means something only at a load well below the 2 cores).  Byte code is written
    on the warm-up (as an installed package has it), whatever PYTHONDONTWRITEBYTECODE
    says.  Returns (median wall, median CPU) in seconds."""
    import statistics

    cmd = [
        sys.executable,
        "-c",
        _PEAK_RSS_WRAPPER,
        "infer",
        "--engine",
        "synoptic",
        "-r",
        REGEX,
        "-s",
        SEPARATOR,
        "-o",
        str(tmp / "cli"),
        "--outputInvariantsToFile=true",
        "--outputSupportCount=true",
        "--outputCountLabels=true",
        "-j",
        "--randomSeed=1",
        str(path),
    ]
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    load_before = os.getloadavg()[0]
    runs: list[tuple[float, float, float]] = []  # (wall s, CPU s, peak MiB)
    for k in range(repeat + 1):
        t0 = time.perf_counter()
        child = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        assert child.stderr is not None
        err = child.stderr.read().decode()
        child.stderr.close()
        child.returncode = os.waitstatus_to_exitcode(status)
        assert child.returncode == 0, err
        peak = int(err.rsplit("VmHWM ", 1)[1].split()[0]) / 1024
        if k:  # the first run is the warm-up
            runs.append((wall, usage.ru_utime + usage.ru_stime, peak))
    assert runs  # repeat >= 1
    wall_median = statistics.median(r[0] for r in runs)
    cpu_median = statistics.median(r[1] for r in runs)
    print(
        f"CLI {label} ({path.name}): median {wall_median:.3f} s wall (best "
        f"{min(r[0] for r in runs):.3f}), median {cpu_median:.3f} s CPU, "
        f"{max(r[2] for r in runs):.0f} MiB peak RSS; {len(runs)} runs after a warm-up, "
        f"imports included; load average {load_before:.2f} -> {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    return wall_median, cpu_median


#: The regex reader's three paths on one state log: a whitespace split (regexes made of
#: empty groups), Arrow's RE2 (other plain regexes) and the line loop (constants/counters).
READERS = [
    ("tokens (whitespace split)", ["^(?<DTIME>)(?<TYPE>)$"]),
    ("RE2, vectorized (Arrow)", [r"^(?<DTIME>\S+)\s+(?<TYPE>\w+)$"]),
    ("line loop (a constant)", [r"^(?<DTIME>\S+)\s+(?<TYPE>\w+)(?<src=>log)$"]),
]


def run_readers(path: Path, repeat: int) -> None:
    """Time the regex reader alone (``read_regex_arrays``) on ``path`` with each of
    :data:`READERS` (best of ``repeat``, wall and CPU seconds)."""
    for name, regexes in READERS:
        best: tuple[float, float] | None = None
        for _ in range(repeat):
            c0, t0 = time.process_time(), time.perf_counter()
            events = read_regex_arrays([path], regexes, SEPARATOR)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            if best is None or wall < best[0]:
                best = (wall, cpu)
        assert best is not None  # repeat >= 1
        print(
            f"reader {name:28s} {len(events.lines):>9d} events {best[0]:>8.3f} s "
            f"(cpu {best[1]:.3f} s)",
            flush=True,
        )


#: Synoptic's node counts on the issue's generated event logs (issue 13; other logs of the
#: same generator than these, which are not available): shown for reference only.
ISSUE_SYNOPTIC_NODES = {3_000: 38, 6_000: 27, 10_000: 24, 30_000: 18, 100_000: 18}


def peak_infer(log: EventLog, seed: int) -> tuple[int, int, float, float]:
    """(nodes, lower bound on any model's nodes, seconds, peak MiB of Python and numpy
    allocations) of one inference; the time is of a run without tracing, the memory of a
    second, traced run."""
    import tracemalloc

    t0 = time.perf_counter()
    res = infer_log(log, seed=seed)
    wall = time.perf_counter() - t0
    tracemalloc.start()
    infer_log(log, seed=seed)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return res.model.n_nodes, result_bound(res), wall, peak


def result_bound(res: SynopticResult) -> int:
    """The lower bound on any model's nodes for the log and mined invariants of ``res``."""
    from statemine.infer.synoptic.bounds import node_lower_bound
    from statemine.infer.synoptic.check import InvariantCodes

    assert res.table is not None
    codes = InvariantCodes.from_frame(res.table, {t: i for i, t in enumerate(res.log.types)})
    return node_lower_bound(res.log, codes)


def print_command_size(name: str, args: list[str], theirs: str) -> None:
    """One ``--sizes`` row for ``statemine infer --engine synoptic ARGS`` in process (its
    wall time includes reading the logs and writing nothing); ``theirs``: Synoptic's
    node count, or "-"."""
    from statemine.infer.synoptic.command import run_command

    t0 = time.perf_counter()
    done = run_command("synoptic", args)
    wall = time.perf_counter() - t0
    log = done.result.log
    print(
        f"{name:24s} {log.n_events:>8d} {len(log.types):>5d} {done.result.model.n_nodes:>6d} "
        f"{result_bound(done.result):>6d} {theirs:>8s} {wall:>8.3f} {'':>8s}",
        flush=True,
    )


def jar_nodes(path: Path) -> str:
    """Synoptic's node count on ``path`` when ``STATEMINE_SYNOPTIC_JAR`` names a jar."""
    if not os.environ.get("STATEMINE_SYNOPTIC_JAR"):
        return "-"
    from statemine.infer.synoptic.command import run_command

    done = run_command("synoptic-jar", ["-r", REGEX, "-s", SEPARATOR, "--randomSeed=1", str(path)])
    return str(done.result.model.n_nodes)


def run_sizes(tmp: Path) -> None:
    """Model sizes: generated event logs (seeded by their size), then the oracle's cases."""
    print(
        f"{'log':24s} {'events':>8s} {'types':>5s} {'nodes':>6s} {'bound':>6s} {'synoptic':>8s} "
        f"{'infer s':>8s} {'peak MiB':>8s}"
    )
    for n in (3_000, 6_000, 10_000, 20_000, 30_000, 100_000):
        path = tmp / f"sizes-{n}.log"
        write_log(event_log(n, np.random.default_rng(n)), path, np.random.default_rng(0))
        log = EventLog.from_regex_events(read_regex_arrays([path], [REGEX], SEPARATOR))
        nodes, bound, wall, peak = peak_infer(log, 1)
        ref = jar_nodes(path)
        if ref == "-" and n in ISSUE_SYNOPTIC_NODES:
            ref = f"({ISSUE_SYNOPTIC_NODES[n]})"
        print(
            f"{'event-log-' + str(n):24s} {log.n_events:>8d} {len(log.types):>5d} {nodes:>6d} "
            f"{bound:>6d} {ref:>8s} {wall:>8.3f} {peak:>8.1f}",
            flush=True,
        )
    import json

    from statemine.infer.synoptic.formats import read_dot

    for n in (1_000, 3_000, 6_000):
        paths = write_captures(n, np.random.default_rng(n), tmp)
        args = ["-r", CAPTURE_REGEX, "-m", CAPTURE_MAPPING, "--randomSeed=1", *map(str, paths)]
        print_command_size(f"two-captures-{n}", args, "-")
    oracle = Path(__file__).resolve().parents[2] / "shared" / "synoptic-oracle"
    if not oracle.is_dir():
        print(f"(oracle cases skipped: {oracle} is absent)")
        return

    for case in sorted(oracle.iterdir()):
        spec = case / "case.json"
        if not spec.is_file() or "tool" in (text := spec.read_text()):
            continue
        args = [a for a in json.loads(text)["args"]]
        args = [str(case / a) if (case / a).is_file() else a for a in args]
        keep = [a for a, b in zip(args, ["", *args]) if b != "-o"]
        keep = [a for a in keep if a != "-o"]
        theirs = read_dot(case / "model.dot").number_of_nodes()
        print_command_size(case.name, keep, str(theirs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="skip the 1e6-event logs")
    parser.add_argument("--repeat", type=int, default=3, help="runs per log (best shown)")
    parser.add_argument("--cli", action="store_true", help="also time the command line")
    parser.add_argument(
        "--sizes", action="store_true", help="only model sizes on generated and oracle logs"
    )
    parser.add_argument(
        "--readers",
        action="store_true",
        help="only time the regex reader's three paths on the 1e6 state log",
    )
    opts = parser.parse_args()
    rng = np.random.default_rng(20261122)
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    if opts.sizes:
        with tempfile.TemporaryDirectory() as tmp_name:
            run_sizes(Path(tmp_name))
        return
    print(
        f"{'log':28s} {'events':>9s} {'types':>5s} {'parse s':>8s} {'infer s':>8s} "
        f"{'write s':>8s} {'total s':>8s} {'cpu s':>8s} {'peak MiB':>8s} {'nodes':>6s}"
    )
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        # warm-up: lazy imports and first-call costs are paid once per process, not per log
        path = tmp / "warmup.log"
        write_log(event_log(500, np.random.default_rng(0)), path, rng)
        infer_log(EventLog.from_traceset(read_regex([path], [REGEX], SEPARATOR)))
        r = opts.repeat
        if opts.readers:
            path = tmp / "readers.log"
            write_log(state_log(1_000_000, rng), path, rng)
            run_readers(path, r)
            return
        rows: list[tuple[str, int, int, float, float, float, int]] = []
        event_1e4 = run("event-log-1e4", event_log(10_000, rng), tmp, rng, r, rows)[0]
        state_1e5, _, cpu, _, wall = run(
            "state-log-1e5", state_log(100_000, rng), tmp, rng, r, rows
        )
        ratios = [versus_synoptic(100_000, wall, cpu)]
        state_1e6 = None
        if not opts.quick:
            state_1e6, _, cpu, _, wall = run(
                "state-log-1e6", state_log(1_000_000, rng), tmp, rng, r, rows
            )
            ratios.append(versus_synoptic(1_000_000, wall, cpu))
        print("\n".join(ratios), flush=True)
        if opts.cli:
            run_cli(event_1e4, tmp, r, "event log 1e4 (target 0.2 s)")
            run_cli(state_1e5, tmp, r, "state log 1e5 (Synoptic 5.19 s)")
            if state_1e6 is not None:
                run_cli(state_1e6, tmp, 1, "state log 1e6 (Synoptic 401 s)")
        fits = []
        for kind, make, sizes in (
            ("event logs", event_log, (1_000, 3_000, 10_000, 30_000, 100_000)),
            (
                "state logs",
                state_log,
                (10_000, 30_000, 100_000, 300_000, 1_000_000)[: 4 if opts.quick else 5],
            ),
        ):
            print(f"-- growth with events ({kind})")
            got = [
                run(f"{kind.split()[0]}-log-{n}", make(n, rng), tmp, rng, r, rows) for n in sizes
            ]
            xs = [float(g[1]) for g in got]
            fits.append(growth(f"{kind} CPU time vs events", xs, [g[2] for g in got]))
            fits.append(growth(f"{kind} peak memory vs events", xs, [g[3] for g in got]))
            big = [g for g in got if g[1] >= 100_000]  # the Arrow reader's sizes
            if len(big) > 1:
                xs = [float(g[1]) for g in big]
                fits.append(growth(f"{kind} >= 1e5 CPU time vs events", xs, [g[2] for g in big]))
                fits.append(growth(f"{kind} >= 1e5 peak memory vs events", xs, [g[3] for g in big]))
        print("-- growth with types (Markov logs, 1e5 events)")
        types = (4, 8, 16, 32, 64)
        got = [
            run(f"markov-{k}-types", markov_log(100_000, k, rng), tmp, rng, r, rows) for k in types
        ]
        fits.append(growth("Markov logs CPU time vs types", list(types), [g[2] for g in got]))
        fits.append(growth("Markov logs peak memory vs types", list(types), [g[3] for g in got]))
        print("-- fitted growth exponents (least squares on log-log)")
        for line in fits:
            print(line)
        print("-- every row (best run; peak: tracemalloc)")
        print(markdown(rows))
        print("load average at the end: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
