"""The paper's findings, measured on lab traces (``statemine lab findings``).

Each :class:`Finding` compares the **server's** (the data sender's) share of time in one
state between conditions of one scenario's output folder (``traces/<scenario>/``, as
written by :mod:`statemine.lab.grid`). Shares are pooled over the runs of a condition:
the seconds all its server traces spent in the state over their total seconds
(:func:`statemine.analyze.state_stats`). Conditions select runs by the trace labels the
grid writes (a cell's values as text: ``"mobile"``, ``"10"``, ``"default"``).

Next to each share: the losses the server declared (``LossDetected``) and the packets
the path actually dropped, summed over the same runs; declared minus dropped is a lower
bound on the spurious losses (a drop of an ACK or of a client packet is counted too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .. import analyze, traces
from ..errors import InputError


@dataclass(frozen=True)
class Condition:
    """A named set of runs: trace labels that must all match (text values)."""

    label: str
    where: dict[str, str]
    paper: str = ""  # the paper's number for this condition, as text ("" = none given)


@dataclass(frozen=True)
class Finding:
    """One comparison of the server's time share in ``state`` across ``conditions``."""

    name: str
    scenario: str
    state: str
    claim: str
    conditions: tuple[Condition, ...]
    per_stack: bool = True  # evaluate separately for each implementation@version
    extra: dict[str, str] = field(default_factory=dict)


FINDINGS: tuple[Finding, ...] = (
    Finding(
        "mobile-vs-desktop", "mobile", "ApplicationLimited",
        "the server is ApplicationLimited far more often with a mobile client",
        (Condition("desktop", {"profile": "desktop"}, "7%"),
         Condition("mobile", {"profile": "mobile"}, "58%")),
    ),
    Finding(
        "jitter-recovery", "jitter", "Recovery",
        "10 ms jitter at 112 ms RTT multiplies the time in Recovery (spurious losses); "
        "a larger reordering threshold, and a larger time threshold, bring it back down",
        (Condition("no jitter, reordering threshold 3", {"rtt_ms": "112", "jitter_ms": "0", "reordering_threshold": "3",
                                 "time_threshold": "default"}),
         Condition("10 ms jitter, reordering threshold 3", {"rtt_ms": "112", "jitter_ms": "10", "reordering_threshold": "3",
                                    "time_threshold": "default"}),
         Condition("10 ms jitter, reordering threshold 10",
                   {"rtt_ms": "112", "jitter_ms": "10", "reordering_threshold": "10", "time_threshold": "default"}),
         Condition("10 ms jitter, reordering 10 + time threshold 1.5",
                   {"rtt_ms": "112", "jitter_ms": "10", "reordering_threshold": "10", "time_threshold": "1.5"})),
    ),
    Finding(
        "quic-go-adaptive-reordering", "quic-go-versions", "Recovery",
        "quic-go v0.65.0 (adaptive reordering threshold) spends far less time in Recovery "
        "under jitter than v0.63.0",
        (Condition("v0.63.0, no jitter", {"version": "v0.63.0", "jitter_ms": "0"}),
         Condition("v0.63.0, 10 ms jitter", {"version": "v0.63.0", "jitter_ms": "10"}),
         Condition("v0.65.0, no jitter", {"version": "v0.65.0", "jitter_ms": "0"}),
         Condition("v0.65.0, 10 ms jitter", {"version": "v0.65.0", "jitter_ms": "10"})),
        per_stack=False,
    ),
)


def load_runs(folder: str | Path) -> traces.TraceSet:
    """Every run's trace set of a ``statemine lab run`` output folder, joined into one
    (:func:`statemine.parse.read` of the folder)."""
    from ..parse import is_lab_output, read

    folder = Path(folder)
    if not is_lab_output(folder):
        raise InputError(folder, None, "not a statemine lab output folder (run `statemine lab run` first)")
    return read(folder)


def server_only(ts: traces.TraceSet) -> traces.TraceSet:
    """The traces whose ``role`` label is ``server`` (the data sender)."""
    return ts.select({"role": "server"})


def select(ts: traces.TraceSet, where: dict[str, str]) -> traces.TraceSet:
    """The traces whose labels equal ``where`` (values compared as text); see
    :meth:`statemine.traces.TraceSet.select`."""
    return ts.select(where)


def state_time(ts: traces.TraceSet, state: str) -> tuple[float, float]:
    """``(share, seconds)``: the pooled share of time (0..1) the traces of ``ts`` spent in
    ``state``, and those seconds summed over the traces (NaN, NaN if ``ts`` is empty)."""
    if ts.n_traces == 0:
        return float("nan"), float("nan")
    st = analyze.state_stats(ts, n_boot=0).set_index("state")
    if state not in st.index:
        return 0.0, 0.0
    return float(st.at[state, "time_fraction"]), float(st.at[state, "time_s"])


def loss_rules(ts: traces.TraceSet) -> tuple[int, int]:
    """``(by_packet, by_time)``: the ``LossDetected`` events of ``ts`` declared by the
    packet-threshold rule and by the time-threshold rule (their ``rule=`` field)."""
    ev = ts.events
    fields = ev.loc[(ev["kind"] == "event") & (ev["state"] == "LossDetected"), "fields"].astype(str)
    rule = fields.str.extract(r"(?:^|\s)rule=(\w+)", expand=False)
    return int((rule == "packet").sum()), int((rule == "time").sum())


def evaluate(root: str | Path, findings: tuple[Finding, ...] = FINDINGS) -> pd.DataFrame:
    """One row per (finding, stack, condition): ``share`` of the finding's state,
    ``seconds_per_run`` in it (server traces, mean over runs), ``runs``,
    ``plt_s`` (mean), ``declared_lost`` and ``path_dropped`` (sums over the runs' results),
    ``lost_by_packet_rule`` / ``lost_by_time_rule`` (the server's ``LossDetected`` lines by
    rule), ``paper``.

    ``root`` holds one folder per scenario (``traces/``); findings whose folder is
    absent are left out.
    """
    root = Path(root)
    rows = []
    for f in findings:
        folder = root / f.scenario
        if not (folder / "runs").is_dir():
            continue
        ts = server_only(load_runs(folder))
        results = pd.read_csv(folder / "results.csv").set_index("run_id")
        stacks = sorted(set(zip(ts.traces["implementation"], ts.traces["version"]))) if f.per_stack else [None]
        for stack in stacks:
            base = ts if stack is None else select(ts, {"implementation": stack[0], "version": stack[1]})
            for cond in f.conditions:
                sub = select(base, cond.where)
                run_ids = sorted(set(sub.traces["run_id"])) if sub.n_traces else []
                res = results.loc[[r for r in run_ids if r in results.index]]
                share, seconds = state_time(sub, f.state)
                by_packet, by_time = loss_rules(sub)
                rows.append({
                    "finding": f.name, "stack": "all" if stack is None else f"{stack[0]}@{stack[1]}",
                    "condition": cond.label, "state": f.state, "share": share,
                    "seconds_per_run": seconds / len(run_ids) if run_ids else float("nan"),
                    "runs": len(run_ids), "plt_s": float(res["plt_s"].mean()) if len(res) else float("nan"),
                    "declared_lost": int(res["retransmissions"].sum()) if len(res) else 0,
                    "path_dropped": int(res["packets_dropped"].sum()) if len(res) else 0,
                    "lost_by_packet_rule": by_packet, "lost_by_time_rule": by_time,
                    "paper": cond.paper,
                })
    return pd.DataFrame(rows, columns=["finding", "stack", "condition", "state", "share", "seconds_per_run",
                                       "runs", "plt_s",
                                       "declared_lost", "path_dropped", "lost_by_packet_rule",
                                       "lost_by_time_rule", "paper"])
