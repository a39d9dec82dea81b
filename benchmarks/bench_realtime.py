"""Real-time path (docs/realtime.md): fidelity against the virtual-time model and the rate
at which the emulator stops keeping up. Needs root (namespaces, TUN devices).

    python benchmarks/bench_realtime.py [--seconds 2] [--pps 1000,5000,...] [--fidelity-only]
    python benchmarks/bench_realtime.py --tcp-traces traces/tcp-jitter   # kernel RTTs
    python benchmarks/bench_realtime.py --quic quiche-rt@0.30.0,aioquic-rt@1.7.2 --quic-mbps 10,50

Fidelity: a paced UDP flow through a path of 10 Mbit/s, 112 ms RTT (56 ms each way),
10 ms jitter, a one-BDP buffer, offered at 50% and 200% of the rate; every packet's real
arrival (kernel receive timestamp) against the model's arrival for the same send time
(statemine.lab.realtime.probe.compare), plus throughput and mean delay of both.

Speed: kernel TCP (cubic, 40 MB bulk) through paths of rising rate at 10 ms RTT: the
throughput it reaches against the rate (TCP fills whatever the emulator forwards, so where
it falls below the rate the emulator has stopped keeping up); and the probe at rising
packet rates through a 10 Gbit/s path with no queue; the
emulator keeps up while (a) the real throughput is within 1% of the model's and (b) the
p99 error stays under 1 ms. (With a full buffer a packet that reaches the emulator 0.1 ms
after its send stamp sees 0.1 ms more of the queue drained, so some tail drops fall on
neighbouring packets: "only-model" and "only-real" count those against the model fed the
stamps, the totals agree; "read times" counts them against the model fed the emulator's
read times, 0 / 0 when the emulator drops exactly what the model does.) Figures vary with
the machine's load (2 shared cores).

QUIC (--quic): each real-time QUIC stack, one bulk transfer (2 s at the rate, at least
2 MB) through paths of rising rate at 10 ms RTT with a one-BDP buffer, against the same
stack, config and seed in virtual time (what the program achieves when the clock waits
for it): throughput of both, the stack's own RTT estimates where its result has them
(quiche, aioquic: smoothed and minimum at the end), packets through the emulator per
second, the emulator's latest write and the load average when the row ran. Where the real
run falls well below the virtual one, the program or the emulator has stopped keeping up.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from statemine.lab.realtime import probe
from statemine.lab.scenario import link_config

SIZE = 1200  # UDP payload, bytes (1228-byte IP packets)


def row(name: str, link: dict, pps: float, seconds: float) -> dict:
    table, stats = probe.measure(link, 1, pps, int(pps * seconds), SIZE)
    s = probe.summary(table, SIZE)
    out = {"case": name, "pps": pps, **s, "max_late_s": stats["max_late_s"]}
    out["sched_fifo"] = stats["sched_fifo"]
    out["keeps_up"] = bool(s["real_bps"] >= 0.99 * s["model_bps"] and s["error_p99_s"] < 1e-3)
    fwd = stats["packets_up"] + stats["packets_down"]
    out["emulator_us_per_packet"] = 1e6 * stats["cpu_s"] / fwd if fwd else math.nan
    return out


def show(r: dict) -> None:
    print(
        f"{r['case']:<26} {r['pps']:>7.0f} pps {r['offered_bps'] / 1e6:8.1f} Mbit/s offered | "
        f"model {r['model_bps'] / 1e6:7.2f} real {r['real_bps'] / 1e6:7.2f} Mbit/s | "
        f"delay model {r['model_delay_s'] * 1e3:6.2f} real {r['real_delay_s'] * 1e3:6.2f} ms | "
        f"error p50 {r['error_p50_s'] * 1e6:6.0f} p99 {r['error_p99_s'] * 1e6:7.0f} "
        f"max {r['error_max_s'] * 1e6:7.0f} us | only-model {r['model_only']} "
        f"only-real {r['real_only']} (read times: {r['read_model_only']} / "
        f"{r['read_real_only']}) | emulator {r['emulator_us_per_packet']:.1f} us CPU/packet | "
        f"{'ok' if r['keeps_up'] else 'NOT keeping up'}",
        flush=True,
    )


def tcp_row(mbps: float, size: int = 40_000_000) -> dict:
    """Kernel TCP cubic, one bulk transfer through a path of ``mbps`` and 10 ms RTT with a
    one-BDP buffer (at least 100 kB): what it achieves, and the emulator's cost."""
    import tempfile

    from statemine.lab.realtime import run

    rate = mbps * 1e6
    buf = max(100_000, int(rate * 0.01 / 8))
    link = link_config(rate, buf, 0.005)
    with tempfile.TemporaryDirectory() as d:
        cfg = {
            "seed": 1,
            "implementation": "tcp",
            "version": "cubic",
            "objects": {"count": 1, "size_bytes": size},
            "client": {"profile": "desktop"},
            "path": {"down": link, "up": link},
            "time_limit_s": 120,
            "log_path": f"{d}/log",
            "result_path": f"{d}/r.json",
        }
        res, _ = run.simulate(cfg)
    fwd = res.get("packets_up", 0) + res.get("packets_down", 0)
    return {
        "case": f"tcp cubic {mbps:g} Mbit/s 10ms",
        "rate_bps": rate,
        "ok": res["ok"],
        "throughput_bps": res.get("throughput_bps"),
        "plt_s": res.get("plt_s"),
        "max_late_s": res.get("max_late_s"),
        "packets": fwd,
        "pps": fwd / res["plt_s"] if res.get("plt_s") else math.nan,
        "emulator_us_per_packet": 1e6 * res.get("cpu_s", 0.0) / fwd if fwd else math.nan,
        "retransmissions": res.get("retransmissions"),
    }


def show_tcp(r: dict) -> None:
    print(
        f"{r['case']:<26} throughput {r['throughput_bps'] / 1e6:7.1f} Mbit/s "
        f"({100 * r['throughput_bps'] / r['rate_bps']:5.1f}% of the rate) | "
        f"{r['pps']:7.0f} packets/s both ways | max late {r['max_late_s'] * 1e3:6.2f} ms | "
        f"emulator {r['emulator_us_per_packet']:.1f} us CPU/packet | "
        f"retransmissions {r['retransmissions']}",
        flush=True,
    )


#: The module of statemine.lab.realtime that runs each real-time QUIC implementation.
_RT_MODULES = {"quic-go-rt": "quicgo", "aioquic-rt": "aioquic", "quiche-rt": "quiche"}


def quic_row(stack: str, mbps: float, seconds: float = 2.0) -> dict:
    """One real-time QUIC transfer and its virtual-time twin (see the module text)."""
    import importlib
    import os
    import tempfile

    from statemine.lab.runners import runner_for

    impl, version = stack.split("@", 1)
    base = impl.removesuffix("-rt")
    rate = mbps * 1e6
    link = link_config(rate, max(100_000, int(rate * 0.01 / 8)), 0.005)
    size = max(2_000_000, int(rate * seconds / 8))
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as d:
        cfg = {
            "seed": 1,
            "implementation": base,
            "version": version,
            "objects": {"count": 1, "size_bytes": size},
            "client": {"profile": "desktop"},
            "path": {"down": link, "up": link},
            "time_limit_s": 120,
            "reordering_threshold": None,
            "time_threshold": None,
            "log_path": f"{d}/log",
            "result_path": f"{d}/r.json",
        }
        mod = importlib.import_module(f"statemine.lab.realtime.{_RT_MODULES[impl]}")
        res, _ = mod.simulate(cfg)
        virtual = runner_for(base).run(dict(cfg, log_path=f"{d}/vlog", result_path=f"{d}/v.json"))
    fwd = res.get("packets_up", 0) + res.get("packets_down", 0)
    return {
        "case": f"{stack} {mbps:g} Mbit/s 10ms",
        "rate_bps": rate,
        "ok": res["ok"] and virtual.get("ok"),
        "error": res.get("error") or virtual.get("error"),
        "throughput_bps": res.get("throughput_bps") or math.nan,
        "virtual_throughput_bps": virtual.get("throughput_bps") or math.nan,
        "srtt_s": res.get("srtt_s"),
        "min_rtt_s": res.get("min_rtt_s"),
        "max_late_s": res.get("max_late_s"),
        "pps": fwd / res["plt_s"] if res.get("plt_s") else math.nan,
        "retransmissions": res.get("retransmissions"),
        "virtual_retransmissions": virtual.get("retransmissions"),
        "load": load,
    }


def show_quic(r: dict) -> None:
    rtt = (
        f"srtt {r['srtt_s'] * 1e3:6.2f} ms min {r['min_rtt_s'] * 1e3:6.2f} ms"
        if r.get("srtt_s") and r.get("min_rtt_s")
        else "rtt n/a"
    )
    print(
        f"{r['case']:<36} real {r['throughput_bps'] / 1e6:7.2f} Mbit/s "
        f"virtual {r['virtual_throughput_bps'] / 1e6:7.2f} Mbit/s "
        f"({100 * r['throughput_bps'] / r['virtual_throughput_bps']:5.1f}%) | {rtt} | "
        f"{r['pps']:6.0f} packets/s | max late {(r['max_late_s'] or 0) * 1e3:5.2f} ms | "
        f"losses {r['retransmissions']} (virtual {r['virtual_retransmissions']}) | "
        f"load {r['load']:.1f}" + ("" if r["ok"] else f" | FAILED {r['error']}"),
        flush=True,
    )


def tcp_traces(folder: Path) -> None:
    """Per condition of a real-time TCP output folder: the server socket's smallest and
    largest smoothed RTT (the kernel's tcp_probe srtt, ms) and the emulator's latest write
    (ms): the path's RTT and full-queue delay as the kernel measured them."""
    import pandas as pd

    from statemine.parse.ftrace import read_ftrace  # the ftrace reader (docs/tcp.md)

    rows = []
    for run in sorted((folder / "runs").iterdir()):
        res = json.loads((run / "result.json").read_text())
        ts = read_ftrace(str(run / "run.log.gz"))
        tr = ts.traces
        server = tr.loc[tr["sport"].astype(str) == str(res["server_port"]), "trace"].iloc[0]
        metrics = ts.metrics
        assert metrics is not None  # the reader always gives tcp_probe's metrics
        srtt = metrics.loc[metrics["trace"].astype(str) == server, "srtt"]
        cell = {k: v for k, v in res["cell"].items() if k in ("jitter_ms", "profile", "rtt_ms")}
        rows.append(
            {
                **cell,
                "srtt_min_ms": 1e3 * srtt.min(),
                "srtt_max_ms": 1e3 * srtt.max(),
                "max_late_ms": 1e3 * res["max_late_s"],
            }
        )
    df = pd.DataFrame(rows)
    keys = [c for c in ("rtt_ms", "jitter_ms", "profile") if c in df and df[c].nunique() > 1]
    keys = keys or ["rtt_ms"]
    df = df.drop(
        columns=[c for c in ("rtt_ms", "jitter_ms", "profile") if c in df and c not in keys]
    )
    print(df.groupby(keys).agg(["mean", "min", "max"]).round(2).T.to_string())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--pps", default="1000,5000,10000,20000,30000,40000")
    ap.add_argument("--fidelity-only", action="store_true")
    ap.add_argument("--tcp-mbps", default="50,100,200,400,1000")
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument(
        "--tcp-traces", type=Path, help="only summarise a real-time TCP output folder (RTTs)"
    )
    ap.add_argument("--quic", help="only the real-time QUIC rows of these stacks (comma-separated)")
    ap.add_argument("--quic-mbps", default="10,25,50,100,200")
    args = ap.parse_args()
    if args.quic:
        rows = []
        for stack in args.quic.split(","):
            for mbps in (float(x) for x in args.quic_mbps.split(",")):
                rows.append(quic_row(stack, mbps))
                show_quic(rows[-1])
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
        return 0
    if args.tcp_traces:
        tcp_traces(args.tcp_traces)
        return 0
    rows = []
    rate = 10e6
    jitter = link_config(rate, 140_000, 0.056, jitter_s=0.01)
    for frac in (0.5, 2.0):
        pps = frac * rate / (8 * (SIZE + probe.UDP_IP_OVERHEAD))
        rows.append(row(f"10M 112ms jitter10 x{frac:g}", jitter, pps, args.seconds))
        show(rows[-1])
    if not args.fidelity_only:
        fast = link_config(10e9, 1 << 24, 0.01)
        for pps in (float(x) for x in args.pps.split(",")):
            rows.append(row("speed 10G 20ms", fast, pps, args.seconds))
            show(rows[-1])
    if not args.fidelity_only:
        for mbps in (float(x) for x in args.tcp_mbps.split(",")):
            rows.append(tcp_row(mbps))
            show_tcp(rows[-1])
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
