"""Agreement of qlog-derived states with logged states, on lab runs of real stacks.

Not a speed benchmark: it measures how well ``read_qlog(..., derive_states=True)``
(statemine.parse.derive: RFC 9002 recovery periods from packet events, ApplicationLimited
by the stack's own rule, statemine.parse.derive_stacks, or bytes in flight against cwnd)
reproduces the states a stack
logs, for docs/qlog.md. Each run transfers one object over a lossy path in ``statemine
lab``'s virtual time with the stack writing its qlog; the server's states are then

* logged: quic-go's own qlog ``congestion_state_updated``; quiche's and aioquic's
  instrument-patch lines (quiche's qlog ``recovery`` state lasts only the instant of the
  congestion event, aioquic logs no states);
* derived: from the server's qlog with every ``congestion_state_updated`` removed, read
  as the stack's (the lab's qlog titles name none), quiche's times put on the log's clock
  (its qlog counts from the connection's creation: ``connection_start``).

Prints per run and state the two shares of time (percent) and the gap (points), the
largest gap per stack, and per stack and state the largest gap as a markdown table (the
one in docs/qlog.md). ConservativeSlowStart (HyStart++, no metric shows it) counts as
SlowStart, Handshake as ProbeTimeout (the patches' name for a handshake PTO). BBR2's logged states are BBR phases, which the derivation (NewReno's states)
cannot give: its rows are printed for the record, not compared.

    python benchmarks/qlog_derive_agreement.py [--seeds 1 2 3] [--size 1000000] [--only quiche]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from statemine.lab.runners import aioquic, quicgo, quiche
from statemine.lab.scenario import link_config
from statemine.parse import read
from statemine.parse.qlog import read_qlog
from statemine.parse.qlog.agreement import agreement, connection_start, strip_state_events

#: (stack, version, controller): what is run.
STACKS = (
    ("quiche", "0.30.0", "reno"),
    ("quiche", "0.30.0", "cubic"),
    ("quiche", "0.30.0", "bbr2"),
    ("quic-go", "v0.65.0", None),
    ("quic-go", "v0.48.2", None),
    ("aioquic", "1.7.2", None),
)
#: Path cases: name -> downlink impairments (the uplink is clean).
PATHS = {"loss1%": {"loss": 0.01}, "loss1%+jitter2ms": {"loss": 0.01, "jitter_s": 0.002}}
#: ConservativeSlowStart: HyStart++, which no metric shows. Handshake: the patches log a
#: PTO of the Initial/Handshake space as ProbeTimeout, the derivation names it Handshake
#: (docs/qlog.md): the same time under two names.
MERGE = {"ConservativeSlowStart": "SlowStart", "Handshake": "ProbeTimeout"}
RUNNERS = {"quiche": quiche, "quic-go": quicgo, "aioquic": aioquic}


def link(**kw: Any) -> dict:
    """A 20 Mbit/s, 15 ms, 60 kB-buffer link with ``kw``'s impairments."""
    return link_config(20e6, 60000, 0.015, **kw)


def lab_config(
    tmp: Path, stack: str, version: str, cc: str | None, seed: int, size: int, down: dict
) -> dict:
    """A one-object run config (docs/lab-protocol.md) writing under ``tmp``."""
    cfg = {
        "seed": seed,
        "implementation": stack,
        "version": version,
        "objects": {"count": 1, "size_bytes": size},
        "client": {"profile": "desktop", "read_rate_bps": None, "per_packet_cpu_s": 0.0},
        "path": {"down": link(**down), "up": link()},
        "reordering_threshold": None,
        "time_threshold": None,
        "time_limit_s": 120.0,
        "log_path": str(tmp / "run.log"),
        "result_path": str(tmp / "run.result.json"),
    }
    if cc:
        cfg["cc"] = cc
    return cfg


def measure(cfg: dict, tmp: Path):
    """Run ``cfg`` writing qlog into ``tmp``; the server's agreement table (a DataFrame)."""
    qdir = tmp / "qlog"
    qdir.mkdir()
    res = RUNNERS[cfg["implementation"]].run(cfg, qlog_dir=qdir)
    if not res["ok"]:
        raise RuntimeError(f"{cfg['implementation']} run failed: {res['error']}")
    (server,) = [p for p in qdir.iterdir() if "server" in p.name]
    stripped = strip_state_events(server, tmp / f"stripped{server.suffix}")
    # the lab's qlog titles name no stack ("statemine lab server"; quiche's own apps write
    # "quiche-server qlog"): say which, as --implementation does
    derived = read_qlog(stripped, derive_states=True, implementation=cfg["implementation"])
    if cfg["implementation"] == "quic-go":
        return agreement(read_qlog(server), derived, MERGE)
    logged = read(cfg["log_path"]).select({"role": "server"})
    # quiche's qlog counts from the connection's creation, the patch's lines from the run's
    # start (aioquic's qlog: the run's clock too)
    offset = connection_start(logged) if cfg["implementation"] == "quiche" else 0.0
    return agreement(logged, derived, MERGE, offset)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--size", type=int, default=1_000_000, help="bytes of the one object")
    ap.add_argument("--only", help="run only this stack (quiche, quic-go, aioquic)")
    args = ap.parse_args()
    worst: dict[str, float] = {}
    per_state: dict[str, dict[str, float]] = {}
    for stack, version, cc in STACKS:
        if args.only and stack != args.only:
            continue
        name = f"{stack} {version}" + (f" {cc}" if cc else "")
        for case, down in PATHS.items():
            for seed in args.seeds:
                with tempfile.TemporaryDirectory() as d:
                    cfg = lab_config(Path(d), stack, version, cc, seed, args.size, down)
                    table = measure(cfg, Path(d))
                gap = float(table["gap_pts"].abs().max())
                if cc != "bbr2":
                    worst[name] = max(worst.get(name, 0.0), gap)
                    cells = per_state.setdefault(name, {})
                    for r in table.itertuples():
                        cells[r.state] = max(cells.get(r.state, 0.0), abs(r.gap_pts))
                shares = "  ".join(
                    f"{r.state} {r.logged_pct:.1f}/{r.derived_pct:.1f}"
                    for r in table.itertuples()
                    if r.logged_pct >= 0.05 or r.derived_pct >= 0.05
                )
                print(f"{name:22s} {case:17s} seed {seed}: max gap {gap:5.1f} pts | {shares}")
    for name, gap in worst.items():
        print(f"{name}: largest gap {gap:.1f} points (logged/derived %)")
    states = sorted({state for cells in per_state.values() for state in cells})
    print("| stack | " + " | ".join(states) + " |")
    print("|---" * (len(states) + 1) + "|")
    for name, cells in per_state.items():
        row = " | ".join(f"{cells[s]:.2f}" if s in cells else "-" for s in states)
        print(f"| {name} | {row} |")


if __name__ == "__main__":
    main()
