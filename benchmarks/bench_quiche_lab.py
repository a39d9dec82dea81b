"""Benchmark of the quiche lab runner: emulated packets per second per core.

    python benchmarks/bench_quiche_lab.py [--version 0.30.0] [--size 10000000] [--repeat 3]

Builds the harness (cached, see statemine.lab.runners.quiche) and runs, per congestion
controller (reno, cubic, bbr2), bench_lab.py's two configs: one object over 50 Mbit/s
with nothing random, and with every random source of the lab on (loss and jitter both
ways, a synthetic LTE link trace with ON/OFF cross traffic, a variable rate up, the
mobile client's per-packet CPU time and read rate). Packets per second = ``packets_sent``
(both endpoints, handed to the path) / the run's ``cpu_time_s`` (the harness's CPU time
around the simulation; it runs on one thread, so this is per core). The figure per
process wall second, start-up included, is printed too. Target (issue 15): at least
50,000 emulated packets per second per core.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_lab import all_sources_config, bench_runner, config


def with_cc(make, cc: str):
    """``make`` (a bench_lab config maker) with the config's ``cc`` set."""

    def made(impl: str, version: str, size: int, tmp: Path) -> dict:
        return {**make(impl, version, size, tmp), "cc": cc}

    made.__name__ = make.__name__
    return made


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--version", default="0.30.0")
    ap.add_argument("--size", type=int, default=10_000_000, help="bytes per run")
    ap.add_argument("--repeat", type=int, default=3, help="runs per case (best kept)")
    args = ap.parse_args()
    rows = []
    for cc in ("reno", "cubic", "bbr2"):
        for make in (config, all_sources_config):
            r = bench_runner("quiche", args.version, args.size, args.repeat, with_cc(make, cc))
            r.update(cc=cc, sources="all" if make is all_sources_config else "none")
            verdict = "ok" if r["pps"] >= r["target"] else "BELOW TARGET"
            print(
                f"quiche {args.version} {cc:5s} sources={r['sources']:4s} {r['packets']:7d} packets, "
                f"{r['cpu_s']:.3f} s CPU: {r['pps']:9.0f} packets/s per core "
                f"(target {r['target']}: {verdict}); {r['pps_with_startup']:.0f}/s with start-up"
            )
            rows.append(r)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
