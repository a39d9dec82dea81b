"""Lab speed: emulated packets per second per core for each runner, and a grid's wall time.

    python benchmarks/bench_lab.py                      # runner speeds only
    python benchmarks/bench_lab.py --grid examples/scenarios/full.toml --jobs 2

Packets per second = ``packets_sent`` (both endpoints, handed to the path) / the run's
``cpu_time_s`` when the runner reports it (aioquic), else its ``wall_time_s``; both are
measured inside the run subprocess around the simulation (interpreter start-up and
imports excluded; the figure with them is printed too). One run uses one core. Targets (issue 5): aioquic >= 10,000,
quic-go >= 50,000 packets/s per core.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from statemine.lab import grid, scenario  # noqa: E402
from statemine.lab.runners import runner_for  # noqa: E402

TARGETS = {"aioquic": 10_000, "quic-go": 50_000}


def config(impl: str, version: str, size: int, tmp: Path) -> dict:
    link = {"rate_bps": 50e6, "buffer_bytes": 225_000, "delay_s": 0.018, "jitter_s": 0.0, "loss": 0.0,
            "gilbert": None, "rate_schedule": None}
    return {"seed": 1, "implementation": impl, "version": version,
            "objects": {"count": 1, "size_bytes": size},
            "client": {"profile": "desktop", "read_rate_bps": None, "per_packet_cpu_s": 0.0},
            "path": {"down": dict(link), "up": dict(link)},
            "reordering_threshold": None, "time_threshold": None, "time_limit_s": 300.0,
            "log_path": str(tmp / f"{impl}.log"), "result_path": str(tmp / f"{impl}.result.json")}


def bench_runner(impl: str, version: str, size: int, repeat: int) -> dict:
    mod = runner_for(impl)
    mod.build(version, None)
    best = None
    with tempfile.TemporaryDirectory() as d:
        for _ in range(repeat):
            t0 = time.perf_counter()
            res = mod.run(config(impl, version, size, Path(d)))
            total = time.perf_counter() - t0
            if not res.get("ok"):
                raise SystemExit(f"{impl} {version} run failed: {res.get('error')}")
            # CPU seconds of the run when the runner reports them (robust to other load on
            # the machine), else its wall seconds
            busy = res.get("cpu_time_s") or res["wall_time_s"]
            pps = res["packets_sent"] / busy
            if best is None or pps > best["pps"]:
                best = {"impl": impl, "version": version, "bytes": size, "packets": res["packets_sent"],
                        "wall_s": res["wall_time_s"], "cpu_s": res.get("cpu_time_s"), "process_s": total, "pps": pps,
                        "pps_with_startup": res["packets_sent"] / total, "target": TARGETS[impl]}
    return best


def bench_grid(path: Path, jobs: int | None, keep: Path | None) -> dict:
    spec = scenario.load(path)
    with tempfile.TemporaryDirectory() as d:
        out = keep or Path(d)
        if keep is not None and keep.exists() and any(keep.iterdir()):
            raise SystemExit(f"{keep}: not empty (a resumed grid would not be timed whole)")
        t0 = time.perf_counter()
        table = grid.run_grid(spec, out, jobs=jobs, progress=True, command=["bench_lab.py"])
        wall = time.perf_counter() - t0
    ok = table["ok"].astype(bool)
    errors = table.loc[~ok, "error"].astype(str).str.replace(r"\(.*", "", regex=True).value_counts()
    return {"scenario": spec.name, "runs": len(table), "ok": int(ok.sum()), "failed": int((~ok).sum()),
            "errors": errors.to_dict(), "wall_s": wall, "packets": int(table["packets_sent"].fillna(0).sum()),
            "run_wall_s_sum": float(table["wall_time_s"].fillna(0).sum())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=10_000_000, help="bytes transferred per speed run")
    ap.add_argument("--repeat", type=int, default=2, help="speed runs per runner (best kept)")
    ap.add_argument("--aioquic", default="1.7.2")
    ap.add_argument("--quic-go", dest="quicgo", default="v0.65.0")
    ap.add_argument("--grid", type=Path, default=None, help="also time this scenario's whole grid")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--keep", type=Path, default=None, help="write the grid's output here (default: a temporary folder)")
    ap.add_argument("--no-speed", action="store_true", help="skip the per-runner speed runs")
    args = ap.parse_args()
    rows = [] if args.no_speed else [bench_runner("aioquic", args.aioquic, args.size, args.repeat),
                                     bench_runner("quic-go", args.quicgo, args.size, args.repeat)]
    for r in rows:
        verdict = "ok" if r["pps"] >= r["target"] else "BELOW TARGET"
        cpu = f", {r['cpu_s']:.3f} s CPU" if r.get("cpu_s") else ""
        print(f"{r['impl']:8s} {r['version']:8s} {r['packets']:7d} packets in {r['wall_s']:.3f} s wall{cpu}: "
              f"{r['pps']:9.0f} packets/s per core (target {r['target']}: {verdict}); "
              f"{r['pps_with_startup']:.0f}/s including process start-up ({r['process_s']:.2f} s)")
    if args.grid:
        g = bench_grid(args.grid, args.jobs, args.keep)
        print(f"grid {g['scenario']}: {g['runs']} runs ({g['ok']} ok, {g['failed']} failed) in {g['wall_s']:.1f} s "
              f"wall; {g['packets']} packets; sum of per-run simulation time {g['run_wall_s_sum']:.1f} s")
        for error, n in g["errors"].items():
            print(f"  {n} failed: {error}")
        rows.append(g)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
