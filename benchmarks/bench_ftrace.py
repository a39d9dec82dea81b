"""Benchmark of the ftrace reader (statemine/parse/ftrace.py) on a generated trace.

Usage: python benchmarks/bench_ftrace.py [--lines 2000000] [--sockets 200]

Writes a tracefs ``trace`` file of ``--lines`` lines (95% ``tcp_probe``, 5%
``tcp_cong_state_set``, as a loss-heavy bulk transfer logs them; about 330 bytes a line)
into a temporary folder, reads it with ``read_ftrace`` and prints lines per second and the
peak resident memory of the process (which also holds the events and metrics frames).
The CPU time is printed beside the wall time (on a shared machine the wall time measures
the neighbours). Target: at least 300 000 lines per CPU second and at most 200 bytes of
peak memory per line above the interpreter and libraries. Measured (2 CPUs, load ~15):
2e6 lines (591 MB) in 5.3 s of CPU, 380 000 lines per CPU second; peak RSS 511 MB
(130 MB before reading: 190 bytes per line).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from statemine.parse.ftrace import read_ftrace


def generate(path: Path, n_lines: int, n_sockets: int, seed: int = 1) -> None:
    """Write ``n_lines`` lines of ``n_sockets`` sockets, in time order, in 1e5-line pieces."""
    rng = np.random.default_rng(seed)
    t = 1000.0
    with open(path, "w") as fh:
        fh.write(f"# tracer: nop\n#\n# entries-in-buffer/entries-written: {n_lines}/{n_lines}\n")
        for start in range(0, n_lines, 100_000):
            n = min(100_000, n_lines - start)
            sock = rng.integers(0, n_sockets, n)
            is_state = rng.random(n) < 0.05
            state = rng.integers(0, 5, n)
            cwnd = rng.integers(1, 500, n)
            dt = rng.exponential(1e-5, n)
            out = []
            for i in range(n):
                t += dt[i]
                port = 40000 + int(sock[i])
                head = f"          python3-5194    [001] ..s2.  {t:.6f}: "
                if is_state[i]:
                    out.append(
                        head + f"tcp_cong_state_set: family=AF_INET sport={port} dport=5201 "
                        "saddr=10.77.0.1 daddr=10.77.0.2 saddrv6=::ffff:10.77.0.1 "
                        f"daddrv6=::ffff:10.77.0.2 cong_state={state[i]}\n"
                    )
                else:
                    out.append(
                        head + f"tcp_probe: family=AF_INET src=10.77.0.1:{port} "
                        f"dest=10.77.0.2:5201 mark=0x0 data_len=0 snd_nxt=0x{i + 4096:x} "
                        f"snd_una=0x{i:x} snd_cwnd={cwnd[i]} ssthresh=2147483647 "
                        "snd_wnd=65160 srtt=55 rcv_wnd=65536 sock_cookie=4 "
                        "skbaddr=00000000629aa6d4 skaddr=00000000efdfe1ac\n"
                    )
            fh.write("".join(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=2_000_000)
    ap.add_argument("--sockets", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.txt"
        generate(path, args.lines, args.sockets)
        size = path.stat().st_size
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0, c0 = time.perf_counter(), time.process_time()
        ts = read_ftrace(path)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        f"{args.lines} lines ({size / 1e6:.0f} MB), {ts.n_traces} traces, "
        f"{len(ts.events)} state rows, {0 if ts.metrics is None else len(ts.metrics)} metrics rows"
    )
    print(
        f"read in {seconds:.2f} s ({cpu:.2f} s of CPU): {args.lines / seconds:,.0f} lines/s, "
        f"{args.lines / cpu:,.0f} lines per CPU second, {size / cpu / 1e6:.0f} MB per CPU second"
    )
    print(f"peak RSS {peak / 1024:.0f} MB (before reading: {before / 1024:.0f} MB)")


if __name__ == "__main__":
    main()
