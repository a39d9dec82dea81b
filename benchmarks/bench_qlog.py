"""Speed and memory of statemine.parse.qlog.read_qlog on synthetic qlog files.

Writes one quic-go-like connection of N events (default 1,000,000: 1 % state changes,
20 % metrics updates, the rest packet events) as JSON-SEQ (.sqlog), as a contained JSON
document (.qlog) and both gzip'ed, then times read_qlog on each in a fresh process
and reports wall and CPU time (one core), events and MB per CPU-second and the process's
peak RSS. Targets (issue 14): 1 GB of JSON-SEQ within 20 s of one core, any size within
300 MiB (``--events 4800000`` writes about 1 GB per file).

    python benchmarks/bench_qlog.py [--events N] [--dir DIR]

``--infer FILE`` runs ``statemine infer FILE`` (FILE written first, ``--events`` events of
one JSON-SEQ connection, when absent) and reports its CPU time and peak RSS (issue 29: 1 GB
within 300 MiB; ``--events 4800000`` is about 1 GB).

``--connections N`` instead writes N small connections into one JSON-SEQ file (a server
logging every connection, each a ``group_id`` with two congestion_state_updated events)
and one connection of the same 2N events, and reports the CPU per connection beyond its
events: (CPU of the N connections - CPU of the one) / N. Targets (issue 26): at most 50 us
per connection, 1e5 connections within 10 s.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_STATES = ("slow_start", "recovery", "congestion_avoidance", "application_limited")


def events(n: int, derived: bool = False):
    """n qlog 0.3 events of one connection, times in ms. With ``derived`` no state event:
    an ACK (largest acknowledged: the packet before) in place of each state change, every
    tenth of them a loss of the packet three before (states derived, RFC 9002)."""
    cwnd = 12000
    for i in range(n):
        t = i * 0.05
        if i % 100 == 0 and derived:
            lost = {"header": {"packet_type": "1RTT", "packet_number": i - 3}}
            ack = {
                "header": {"packet_type": "1RTT"},
                "frames": [{"frame_type": "ack", "acked_ranges": [[0, i - 1]]}],
            }
            yield (
                {"time": t, "name": "recovery:packet_lost", "data": lost}
                if i % 1000 == 0
                else {"time": t, "name": "transport:packet_received", "data": ack}
            )
        elif i % 100 == 0:
            yield {
                "time": t,
                "name": "recovery:congestion_state_updated",
                "data": {"new": _STATES[(i // 100) % 4]},
            }
        elif i % 5 == 0:
            cwnd = cwnd + 1200 if (i // 5) % 50 else cwnd // 2
            yield {
                "time": t,
                "name": "recovery:metrics_updated",
                "data": {
                    "congestion_window": cwnd,
                    "bytes_in_flight": cwnd // 2,
                    "smoothed_rtt": 20.5,
                },
            }
        else:
            yield {
                "time": t,
                "name": "transport:packet_sent",
                "data": {
                    "header": {"packet_type": "1RTT", "packet_number": i},
                    "raw": {"length": 1252},
                    "frames": [
                        {"frame_type": "stream", "stream_id": 0, "offset": i * 1200, "length": 1200}
                    ],
                },
            }


def write_files(
    n: int, folder: Path, gzipped: bool = True, derived: bool = False
) -> dict[str, Path]:
    """The JSON-SEQ and JSON document files of ``n`` events in ``folder`` (and both
    gzip'ed with ``gzipped``; ``derived``: no state events, see :func:`events`)."""
    seq = folder / "bench.sqlog"
    write_seq(n, seq, derived)
    doc = folder / "bench.qlog"
    with open(doc, "w") as fh:
        fh.write(
            '{"qlog_version": "0.3", "qlog_format": "JSON", "title": "quic-go qlog", "traces": [{'
            '"vantage_point": {"type": "server"}, "common_fields": {"ODCID": "abcd", "time_format": "relative"},'
            ' "events": ['
        )
        for i, ev in enumerate(events(n, derived)):
            fh.write(("," if i else "") + json.dumps(ev))
        fh.write("]}]}")
    files = {"json-seq": seq, "json document": doc}
    for label, plain in (("gzip json-seq", seq), ("gzip document", doc)) if gzipped else ():
        gz = plain.with_name(plain.name + ".gz")
        with open(plain, "rb") as src, gzip.open(gz, "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)  # in pieces: this process stays small
        files[label] = gz
    return files


_CHILD = """
import resource, sys, time
from statemine.parse.qlog import read_qlog
t0, c0 = time.perf_counter(), time.process_time()
ts = read_qlog(sys.argv[1])
dt, cpu = time.perf_counter() - t0, time.process_time() - c0
# VmHWM: this program's own peak (ru_maxrss keeps the forking parent's peak across exec)
hwm = [l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM:")]
print(dt, cpu, len(ts.events), hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def write_connections(n: int, path: Path, one: bool) -> None:
    """A JSON-SEQ file of ``n`` connections of two state events each (``one``: the same
    2n events in one connection)."""
    header = {"qlog_format": "JSON-SEQ", "qlog_version": "0.3", "title": "quic-go qlog",
              "trace": {"vantage_point": {"type": "server"}}}  # fmt: skip
    with open(path, "w") as fh:
        fh.write("\x1e" + json.dumps(header) + "\n")
        for i in range(n):
            group = "0" if one else f"{i:016x}"
            for k, state in enumerate(("slow_start", "congestion_avoidance")):
                event = {"time": i + k / 2, "name": "recovery:congestion_state_updated",
                         "data": {"new": state}, "group_id": group}  # fmt: skip
                fh.write("\x1e" + json.dumps(event) + "\n")


def _child(path: Path) -> tuple[float, float, int, int]:
    """read_qlog of ``path`` in a fresh process: wall s, CPU s, rows, peak RSS KiB."""
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
    )
    seconds, cpu, rows, rss = out.stdout.split()
    return float(seconds), float(cpu), int(rows), int(rss)


def connections(n: int, folder: Path) -> None:
    """The per-connection cost (see the module text)."""
    many, one = folder / "many.sqlog", folder / "one.sqlog"
    write_connections(n, many, one=False)
    write_connections(n, one, one=True)
    wall_many, cpu_many, rows_many, rss_many = _child(many)
    _, cpu_one, _, _ = _child(one)
    print(
        f"{n:,} connections of 2 events: {wall_many:.2f} s wall, {cpu_many:.2f} s CPU, "
        f"{rows_many:,} rows, peak RSS {rss_many / 1024:.0f} MiB; one connection of the same "
        f"events: {cpu_one:.2f} s CPU; per connection beyond its events "
        f"{(cpu_many - cpu_one) / n * 1e6:.1f} us CPU ({cpu_many / n * 1e6:.1f} us in all)"
    )


def write_seq(n: int, path: Path, derived: bool = False) -> None:
    """One JSON-SEQ connection of ``n`` events (:func:`events`, ``derived`` as there) at
    ``path``."""
    header = {
        "qlog_format": "JSON-SEQ",
        "qlog_version": "0.3",
        "title": "quic-go qlog",
        "trace": {
            "vantage_point": {"type": "server"},
            "common_fields": {"ODCID": "abcd", "time_format": "relative", "reference_time": 0},
        },
    }
    with open(path, "w") as fh:
        fh.write("\x1e" + json.dumps(header) + "\n")
        for ev in events(n, derived):
            fh.write("\x1e" + json.dumps(ev) + "\n")


def infer(path: Path, n: int) -> None:
    """``statemine infer PATH --out DIR --no-svg`` as a process (the file written first
    when absent, ``n`` events): CPU seconds and peak RSS (GNU time's maximum resident set)."""
    if not path.exists():
        write_seq(n, path)
    with tempfile.TemporaryDirectory() as out:
        cmd = ["/usr/bin/time", "-f", "%U %S %M", sys.executable, "-m", "statemine", "infer"]
        done = subprocess.run(
            [*cmd, str(path), "--out", out, "--no-svg"],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
        )
    user, system, rss_kib = done.stderr.split()[-3:]
    size = path.stat().st_size / 2**20
    print(
        f"statemine infer {path.name} ({size:.0f} MB): {float(user) + float(system):.2f} s CPU, "
        f"peak RSS {int(rss_kib) / 1024:.0f} MiB; load average {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} cores"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--connections", type=int, default=0)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument(
        "--infer", type=Path, default=None, help="JSON-SEQ file to infer (written if absent)"
    )
    args = ap.parse_args()
    if args.infer:
        infer(args.infer, args.events)
        return
    if args.connections:
        with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
            connections(args.connections, Path(tmp))
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        return
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        t0 = time.perf_counter()
        files = write_files(args.events, Path(tmp))
        print(f"wrote {args.events:,} events per file in {time.perf_counter() - t0:.1f} s")
        for label, path in files.items():
            out = subprocess.run(
                [sys.executable, "-c", _CHILD, str(path)],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
            )
            seconds_text, cpu_text, rows, rss_kib = out.stdout.split()
            size = path.stat().st_size / 2**20
            seconds, cpu = float(seconds_text), float(cpu_text)
            print(
                f"{label:15s} {size:8.1f} MB  {seconds:6.2f} s wall  {cpu:6.2f} s CPU  "
                f"{args.events / cpu / 1e3:7.0f} k events/CPU-s  {size / cpu:6.1f} MB/CPU-s  {int(rows):,} rows  "
                f"peak RSS {int(rss_kib) / 1024:.0f} MiB"
            )
        print(
            f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall time includes waiting for a core)"
        )


if __name__ == "__main__":
    main()
