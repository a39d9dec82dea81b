"""Benchmark of the quic-go lab runner: emulated packets per second per core.

Usage: python benchmarks/bench_quicgo_lab.py [--versions v0.48.2,v0.65.0] [--repeat 3]

For each version it builds the harness (cached, see statemine.lab.runners.quicgo) and runs
three scenarios in virtual time: one 10 MB object over 50 Mbit/s, 200 objects of 50 KB, and
10 MB over a lossy, jittery 20 Mbit/s path. It prints the packets both endpoints handed to
the path (``packets_sent``), the harness's wall time around the transfer, and the CPU time
of the whole harness process (start-up included; the harness runs on one thread,
GOMAXPROCS=1, so packets per CPU second is packets per second per core).
Target: at least 50,000 emulated packets per second per core.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from statemine.lab.runners import quicgo
from statemine.lab.scenario import link_config


def link(rate_bps: float, **kw) -> dict:
    """A link of ``rate_bps`` (bit/s), 18 ms one way, 60 kB buffer, with ``kw``'s impairments."""
    return link_config(rate_bps, 60000, 0.018, **kw)


SCENARIOS = {
    "1x10MB 50Mbps": ({"count": 1, "size_bytes": 10_000_000}, link(50e6)),
    "200x50KB 50Mbps": ({"count": 200, "size_bytes": 50_000}, link(50e6)),
    "1x10MB 20Mbps loss1% jitter2ms": (
        {"count": 1, "size_bytes": 10_000_000},
        link(20e6, loss=0.01, jitter_s=0.002),
    ),
}


def config(tmp: Path, version: str, name: str, objects: dict, down: dict, seed: int) -> dict:
    return {
        "seed": seed,
        "implementation": "quic-go",
        "version": version,
        "objects": objects,
        "client": {"profile": "desktop", "read_rate_bps": None, "per_packet_cpu_s": 0.0},
        "path": {"down": down, "up": link(50e6)},
        "reordering_threshold": None,
        "time_threshold": None,
        "time_limit_s": 300.0,
        "log_path": str(tmp / f"{name}.log"),
        "result_path": str(tmp / f"{name}.result.json"),
    }


def children_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--versions", default="v0.37.5,v0.48.2,v0.63.0,v0.65.0")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(
        f"{'version':9} {'scenario':32} {'packets':>8} {'virt s':>7} {'wall s':>7} {'cpu s':>7} "
        f"{'pkt/s wall':>11} {'pkt/cpu-s':>10}"
    )
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for version in args.versions.split(","):
            quicgo.build(version)
            for name, (objects, down) in SCENARIOS.items():
                packets = wall = cpu = virt = 0.0
                for i in range(args.repeat):
                    cpu0 = children_cpu()
                    res = quicgo.run(config(tmp, version, f"r{i}", objects, down, seed=i + 1))
                    cpu += children_cpu() - cpu0
                    if not res["ok"]:
                        raise SystemExit(f"{version} {name}: run failed: {res['error']}")
                    packets += res["packets_sent"]
                    wall += res["wall_time_s"]
                    virt += res["virtual_time_s"]
                n = args.repeat
                print(
                    f"{version:9} {name:32} {packets / n:8.0f} {virt / n:7.2f} {wall / n:7.3f} {cpu / n:7.3f} "
                    f"{packets / wall:11.0f} {packets / cpu:10.0f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
