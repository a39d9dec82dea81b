"""The paper's findings, measured on lab traces (``statemine lab findings``).

Each :class:`Finding` compares the **server's** (the data sender's) share of time in one
state between conditions of one scenario's output folder (``traces/<scenario>/``, as
written by :mod:`statemine.lab.grid`). Shares are pooled over the runs of a condition:
the seconds all its server traces spent in the state over their total seconds
(:func:`statemine.stats.summary.state_stats`). Conditions select runs by the trace labels the
grid writes (a cell's values as text: ``"mobile"``, ``"10"``, ``"default"``).

Next to each share: the losses the server declared (``LossDetected``) and the packets
the path actually dropped, summed over the same runs; declared minus dropped is a lower
bound on the spurious losses (a drop of an ACK or of a client packet is counted too).

Whether a finding is reproduced is decided by statemine's own statistics
(:func:`assess`): each :class:`Comparison` of two conditions goes through
:func:`statemine.compare.diff` (permutation test over runs with Holm's correction over the
states, studentized bootstrap interval of the difference: :data:`INTERVAL`), and counts as reproduced only when the
Holm-adjusted p-value is below ``alpha`` (0.01, the paper's threshold), the difference
has the paper's sign, and the diff raises no evidence flag (pseudo-replicates,
underpowered).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from .. import traces, units
from ..compare import IDENTICAL_TOL, diff, trace_shares
from ..errors import InputError
from ..explain import explain, why_line
from ..outcomes import welch_cell
from ..stats.resampling import IntervalMethod
from ..stats.summary import state_stats, trace_state_times

#: The bootstrap interval of the findings' differences: studentized (bootstrap-t), which
#: held across fresh batches of seeds and from 20-run draws of the observed runs where the
#: percentile one fell short (docs/findings.md, "Which interval"); ``statemine diff`` keeps
#: the percentile interval as its default.
INTERVAL: IntervalMethod = "studentized"


@dataclass(frozen=True)
class Condition:
    """A named set of runs: trace labels that must all match (text values)."""

    label: str
    where: dict[str, str]
    paper: str = ""  # the paper's number for this condition, as text ("" = none given)


@dataclass(frozen=True)
class Comparison:
    """Condition ``a`` vs condition ``b`` (labels of the finding's conditions) and the
    paper's direction of ``b - a`` (``"either"`` for a question no paper answered: any
    significant difference is a finding, none is "no effect"). ``known``: implementation ->
    why the finding is not expected to reproduce on that stack (docs/findings.md)."""

    a: str
    b: str
    direction: Literal["up", "down", "either"]
    known: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Finding:
    """One comparison of the server's time share in ``state`` across ``conditions``;
    ``comparisons`` are the pairs whose difference the paper claims. ``scenario`` names
    the output folder, or several joined by ``+`` (their runs are pooled: QUIC beside
    kernel TCP, whose traces come from different scenarios)."""

    name: str
    scenario: str
    state: str
    claim: str
    conditions: tuple[Condition, ...]
    comparisons: tuple[Comparison, ...] = ()
    per_stack: bool = True  # evaluate separately for each implementation@version


FINDINGS: tuple[Finding, ...] = (
    Finding(
        "mobile-vs-desktop",
        "mobile",
        "ApplicationLimited",
        "the server is ApplicationLimited far more often with a mobile client",
        (
            Condition("desktop", {"profile": "desktop"}, "7%"),
            Condition("mobile", {"profile": "mobile"}, "58%"),
        ),
        (
            Comparison(
                "desktop",
                "mobile",
                "up",
                known={
                    "aioquic": "aioquic grants flow-control credit when data arrives (it has no read API), "
                    "so a slow reader never holds its sender back"
                },
            ),
        ),
    ),
    Finding(
        "jitter-recovery",
        "jitter",
        "Recovery",
        "10 ms jitter at 112 ms RTT multiplies the time in Recovery (spurious losses); "
        "a larger reordering threshold, and a larger time threshold, bring it back down",
        (
            Condition(
                "no jitter, reordering threshold 3",
                {
                    "rtt_ms": "112",
                    "jitter_ms": "0",
                    "reordering_threshold": "3",
                    "time_threshold": "default",
                },
            ),
            Condition(
                "10 ms jitter, reordering threshold 3",
                {
                    "rtt_ms": "112",
                    "jitter_ms": "10",
                    "reordering_threshold": "3",
                    "time_threshold": "default",
                },
            ),
            Condition(
                "10 ms jitter, reordering threshold 10",
                {
                    "rtt_ms": "112",
                    "jitter_ms": "10",
                    "reordering_threshold": "10",
                    "time_threshold": "default",
                },
            ),
            Condition(
                "10 ms jitter, reordering 10 + time threshold 1.5",
                {
                    "rtt_ms": "112",
                    "jitter_ms": "10",
                    "reordering_threshold": "10",
                    "time_threshold": "1.5",
                },
            ),
        ),
        (
            Comparison(
                "no jitter, reordering threshold 3", "10 ms jitter, reordering threshold 3", "up"
            ),
            Comparison(
                "10 ms jitter, reordering threshold 3",
                "10 ms jitter, reordering threshold 10",
                "down",
            ),
            Comparison(
                "10 ms jitter, reordering threshold 3",
                "10 ms jitter, reordering 10 + time threshold 1.5",
                "down",
            ),
        ),
    ),
    Finding(
        "quic-go-adaptive-reordering",
        "quic-go-versions",
        "Recovery",
        "quic-go v0.65.0 (adaptive reordering threshold) spends far less time in Recovery "
        "under jitter than v0.63.0",
        (
            Condition("v0.63.0, no jitter", {"version": "v0.63.0", "jitter_ms": "0"}),
            Condition("v0.63.0, 10 ms jitter", {"version": "v0.63.0", "jitter_ms": "10"}),
            Condition("v0.65.0, no jitter", {"version": "v0.65.0", "jitter_ms": "0"}),
            Condition("v0.65.0, 10 ms jitter", {"version": "v0.65.0", "jitter_ms": "10"}),
        ),
        (Comparison("v0.63.0, 10 ms jitter", "v0.65.0, 10 ms jitter", "down"),),
        per_stack=False,
    ),
    Finding(
        "cellular-mobile-vs-desktop",
        "cellular",
        "ApplicationLimited",
        "no paper: over a cellular (LTE-like) link, does a mobile client change how often the "
        "server is ApplicationLimited?",
        (Condition("desktop", {"profile": "desktop"}), Condition("mobile", {"profile": "mobile"})),
        (Comparison("desktop", "mobile", "either"),),
    ),
    Finding(
        "quic-vs-tcp-jitter",
        "tcp-jitter+quic-go-versions+aioquic-versions",
        "Recovery",
        "under 10 ms jitter at 112 ms RTT, QUIC with a fixed packet threshold spends far more "
        "time in Recovery than kernel TCP (cubic), which adapts its reordering window "
        "(RACK-TLP); kernel TCP runs in real time (docs/realtime.md), QUIC in virtual time",
        (
            Condition(
                "TCP cubic", {"implementation": "tcp", "version": "cubic", "jitter_ms": "10"}
            ),
            Condition(
                "quic-go v0.63.0",
                {"implementation": "quic-go", "version": "v0.63.0", "jitter_ms": "10"},
            ),
            Condition(
                "quic-go v0.65.0",
                {"implementation": "quic-go", "version": "v0.65.0", "jitter_ms": "10"},
            ),
            Condition(
                "aioquic 1.7.2",
                {"implementation": "aioquic", "version": "1.7.2", "jitter_ms": "10"},
            ),
        ),
        (
            Comparison("TCP cubic", "quic-go v0.63.0", "up"),
            Comparison("TCP cubic", "aioquic 1.7.2", "up"),
            Comparison("TCP cubic", "quic-go v0.65.0", "either"),
        ),
        per_stack=False,
    ),
    Finding(
        "quic-go-real-vs-virtual",
        "quic-go-rt-jitter+quic-go-versions",
        "Recovery",
        "fidelity, no paper: quic-go in real time through the real-time path against quic-go "
        "in virtual time through the same path model, same scenario (112 ms RTT, 10 ms "
        "jitter): does real time change its time in Recovery?",
        tuple(
            Condition(f"{v} {mode}", {"implementation": impl, "version": v, "jitter_ms": "10"})
            for v in ("v0.63.0", "v0.65.0")
            for mode, impl in (("virtual", "quic-go"), ("real", "quic-go-rt"))
        ),
        tuple(Comparison(f"{v} virtual", f"{v} real", "either") for v in ("v0.63.0", "v0.65.0")),
        per_stack=False,
    ),
    Finding(
        "quic-rt-vs-tcp-jitter",
        "tcp-jitter+quic-rt-jitter+quic-go-rt-jitter",
        "Recovery",
        "finding 5 with the QUIC stacks in real time too: aioquic and quic-go v0.63.0 (fixed "
        "packet threshold 3), quiche and quic-go v0.65.0 (adapt their threshold) run through "
        "the real-time path like kernel TCP (cubic, RACK-TLP), 112 ms RTT, 10 ms jitter",
        (
            Condition(
                "TCP cubic", {"implementation": "tcp", "version": "cubic", "jitter_ms": "10"}
            ),
            *(
                Condition(
                    f"{name} {version} real",
                    {"implementation": f"{name}-rt", "version": version, "jitter_ms": "10"},
                )
                for name, version in (
                    ("aioquic", "1.7.2"),
                    ("quic-go", "v0.63.0"),
                    ("quiche", "0.30.0"),
                    ("quic-go", "v0.65.0"),
                )
            ),
        ),
        (
            Comparison("TCP cubic", "aioquic 1.7.2 real", "up"),
            Comparison("TCP cubic", "quic-go v0.63.0 real", "up"),
            Comparison("TCP cubic", "quiche 0.30.0 real", "either"),
            Comparison("TCP cubic", "quic-go v0.65.0 real", "either"),
        ),
        per_stack=False,
    ),
    Finding(
        "quic-rt-real-vs-virtual",
        "quic-rt-jitter+aioquic-versions+quiche-jitter",
        "Recovery",
        "fidelity, no paper: aioquic and quiche in real time through the real-time path "
        "against the same stacks in virtual time through the same path model (112 ms RTT, "
        "10 ms jitter): does real time change their time in Recovery?",
        tuple(
            Condition(f"{name} {mode}", {"implementation": impl, "version": v, "jitter_ms": "10"})
            for name, v in (("aioquic", "1.7.2"), ("quiche", "0.30.0"))
            for mode, impl in (("virtual", name), ("real", f"{name}-rt"))
        ),
        tuple(
            Comparison(f"{name} virtual", f"{name} real", "either")
            for name in ("aioquic", "quiche")
        ),
        per_stack=False,
    ),
    Finding(
        "tcp-mobile-vs-desktop",
        "tcp-mobile",
        "Recovery",
        "no paper: kernel TCP (cubic, real time) with a mobile client (slow reader, per-packet "
        "CPU) against a desktop one: does its time in Recovery change?",
        (Condition("desktop", {"profile": "desktop"}), Condition("mobile", {"profile": "mobile"})),
        (Comparison("desktop", "mobile", "either"),),
    ),
    Finding(
        "quiche-cubic-recovery-under-loss",
        "quiche-bbr",
        "Recovery",
        "quiche's CUBIC over a cellular link: random loss keeps the 10 MB sender in Recovery "
        "far longer (the ModQUIC setting, where BBR was ahead for large objects under loss)",
        (
            Condition(
                "CUBIC, 10 MB, no loss",
                {"cc": "cubic", "loss": "0", "object_size_bytes": "10000000"},
            ),
            Condition(
                "CUBIC, 10 MB, 1% loss",
                {"cc": "cubic", "loss": "0.01", "object_size_bytes": "10000000"},
            ),
            Condition(
                "CUBIC, 10 MB, 5% loss",
                {"cc": "cubic", "loss": "0.05", "object_size_bytes": "10000000"},
            ),
        ),
        (
            Comparison("CUBIC, 10 MB, no loss", "CUBIC, 10 MB, 1% loss", "up"),
            Comparison("CUBIC, 10 MB, no loss", "CUBIC, 10 MB, 5% loss", "up"),
        ),
    ),
    Finding(
        "quiche-bbr-startup-vs-size",
        "quiche-bbr",
        "BBRStartup",
        "where BBR2 spends its time as objects grow (no loss): Startup's share shrinks",
        (
            Condition("BBR2, 100 KB", {"cc": "bbr2", "loss": "0", "object_size_bytes": "100000"}),
            Condition("BBR2, 1 MB", {"cc": "bbr2", "loss": "0", "object_size_bytes": "1000000"}),
            Condition("BBR2, 10 MB", {"cc": "bbr2", "loss": "0", "object_size_bytes": "10000000"}),
        ),
        (
            # (100 KB: shown, not compared: many of its runs give the same state profile)
            Comparison("BBR2, 1 MB", "BBR2, 10 MB", "down"),
        ),
    ),
    Finding(
        "quiche-bbr-probebw-vs-size",
        "quiche-bbr",
        "BBRProbeBWCruise",
        "where BBR2 spends its time as objects grow (no loss): ProbeBW's cruising phase takes over",
        (
            Condition("BBR2, 100 KB", {"cc": "bbr2", "loss": "0", "object_size_bytes": "100000"}),
            Condition("BBR2, 1 MB", {"cc": "bbr2", "loss": "0", "object_size_bytes": "1000000"}),
            Condition("BBR2, 10 MB", {"cc": "bbr2", "loss": "0", "object_size_bytes": "10000000"}),
        ),
        (
            # (100 KB: shown, not compared: many of its runs give the same state profile)
            Comparison("BBR2, 1 MB", "BBR2, 10 MB", "up"),
        ),
    ),
    Finding(
        "quiche-jitter-recovery",
        "quiche-jitter",
        "Recovery",
        "the jitter experiment on quiche (CUBIC): does 10 ms jitter send it into Recovery like "
        "quic-go v0.63.0, or not like v0.65.0 (adaptive reordering threshold)?",
        (
            Condition("quiche, no jitter", {"implementation": "quiche", "jitter_ms": "0"}),
            Condition("quiche, 10 ms jitter", {"implementation": "quiche", "jitter_ms": "10"}),
            Condition("quic-go v0.63.0, 10 ms jitter", {"version": "v0.63.0", "jitter_ms": "10"}),
            Condition("quic-go v0.65.0, 10 ms jitter", {"version": "v0.65.0", "jitter_ms": "10"}),
        ),
        (
            Comparison("quiche, no jitter", "quiche, 10 ms jitter", "either"),
            Comparison("quiche, 10 ms jitter", "quic-go v0.63.0, 10 ms jitter", "either"),
            Comparison("quiche, 10 ms jitter", "quic-go v0.65.0, 10 ms jitter", "either"),
        ),
        per_stack=False,
    ),
)


def load_runs(folder: str | Path) -> traces.TraceSet:
    """Every run's trace set of a ``statemine lab run`` output folder, joined into one
    (:func:`statemine.parse.read` of the folder)."""
    from ..parse import is_lab_output, read

    folder = Path(folder)
    if not is_lab_output(folder):
        raise InputError(
            folder, None, "not a statemine lab output folder (run `statemine lab run` first)"
        )
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
    st = state_stats(ts, n_boot=0).set_index("state")
    if state not in st.index:
        return 0.0, 0.0
    share, seconds = st.loc[state, ["time_fraction", "time_s"]].to_numpy(dtype=float)
    return float(share), float(seconds)


def loss_rules(ts: traces.TraceSet) -> tuple[int, int]:
    """``(by_packet, by_time)``: the ``LossDetected`` events of ``ts`` declared by the
    packet-threshold rule and by the time-threshold rule (their ``rule=`` field)."""
    ev = ts.events
    if "fields" not in ev.columns:
        return 0, 0
    fields = ev.loc[(ev["kind"] == "event") & (ev["state"] == "LossDetected"), "fields"].astype(str)
    rule = fields.str.extract(r"(?:^|\s)rule=(\w+)", expand=False)
    return int((rule == "packet").sum()), int((rule == "time").sum())


def load_scenarios(
    root: str | Path, findings: tuple[Finding, ...] = FINDINGS
) -> dict[str, tuple[traces.TraceSet, pd.DataFrame]]:
    """Per scenario of ``findings`` whose folder ``root/<scenario>`` holds runs: the server
    traces of its successful runs and its results table (indexed by ``run_id``), each
    read once. A failed run (``ok`` false in results.csv) is left out: its trace is cut."""
    out: dict[str, tuple[traces.TraceSet, pd.DataFrame]] = {}
    for f in findings:
        folders = [Path(root) / name for name in f.scenario.split("+")]
        if f.scenario in out or not all((d / "runs").is_dir() for d in folders):
            continue
        parts = [_load_folder(d) for d in folders]
        ts = parts[0][0] if len(parts) == 1 else traces.concat(p[0] for p in parts)
        out[f.scenario] = (ts, pd.concat([p[1] for p in parts]))
    return out


def _load_folder(folder: Path) -> tuple[traces.TraceSet, pd.DataFrame]:
    """The server traces of one output folder's successful runs, and its results table
    (with every run finished on disk: results.csv of an older statemine may miss some)."""
    from .grid import folder_results

    results = folder_results(folder).set_index("run_id")
    ts = server_only(load_runs(folder))
    if "ok" in results.columns:
        ok = results.index[results["ok"].astype("boolean").fillna(False).astype(bool)]
        ts = _keep(ts, ts.traces["run_id"].astype(str).isin(ok.astype(str)).to_numpy())
    return ts, results


def _keep(ts: traces.TraceSet, mask: np.ndarray) -> traces.TraceSet:
    """The traces of ``ts`` where ``mask`` (one bool per ``ts.traces`` row) is True."""
    return ts if mask.all() else ts.subset(mask)


def measure(
    root: str | Path, findings: tuple[Finding, ...] = FINDINGS, **options: Any
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(assess(...), evaluate(...))`` of the traces under ``root``, read once;
    ``options`` go to :func:`assess`."""
    loaded = load_scenarios(root, findings)
    return assess(root, findings, loaded=loaded, **options), evaluate(root, findings, loaded=loaded)


def evaluate(
    root: str | Path,
    findings: tuple[Finding, ...] = FINDINGS,
    *,
    loaded: dict[str, tuple[traces.TraceSet, pd.DataFrame]] | None = None,
) -> pd.DataFrame:
    """One row per (finding, stack, condition): ``share`` of the finding's state,
    ``seconds_per_run`` in it (server traces, mean over runs), ``runs``,
    ``plt_s`` (mean), ``declared_lost`` and ``path_dropped`` (sums over the runs' results),
    ``lost_by_packet_rule`` / ``lost_by_time_rule`` (the server's ``LossDetected`` lines by
    rule), ``paper``.

    ``root`` holds one folder per scenario (``traces/``); findings whose folder is
    absent are left out. ``loaded``: :func:`load_scenarios` of ``root``, when already read.
    """
    loaded = load_scenarios(root, findings) if loaded is None else loaded
    rows = []
    for f in findings:
        if f.scenario not in loaded:
            continue
        ts, results = loaded[f.scenario]
        stacks = (
            sorted(set(zip(ts.traces["implementation"], ts.traces["version"])))
            if f.per_stack
            else [None]
        )
        for stack in stacks:
            base = (
                ts
                if stack is None
                else select(ts, {"implementation": stack[0], "version": stack[1]})
            )
            for cond in f.conditions:
                sub = select(base, cond.where)
                run_ids = sorted(set(sub.traces["run_id"])) if sub.n_traces else []
                res = results.loc[[r for r in run_ids if r in results.index]]
                share, seconds = state_time(sub, f.state)
                by_packet, by_time = loss_rules(sub)
                rows.append(
                    {
                        "finding": f.name,
                        "stack": "+".join(sorted(set(ts.traces["implementation"].astype(str))))
                        if stack is None
                        else f"{stack[0]}@{stack[1]}",
                        "condition": cond.label,
                        "state": f.state,
                        "share": share,
                        "seconds_per_run": seconds / len(run_ids) if run_ids else float("nan"),
                        "runs": len(run_ids),
                        "plt_s": float(res["plt_s"].mean()) if len(res) else float("nan"),
                        "declared_lost": int(res["retransmissions"].sum()) if len(res) else 0,
                        "path_dropped": int(res["packets_dropped"].sum()) if len(res) else 0,
                        "lost_by_packet_rule": by_packet,
                        "lost_by_time_rule": by_time,
                        "paper": cond.paper,
                    }
                )
    return pd.DataFrame(
        rows,
        columns=[
            "finding",
            "stack",
            "condition",
            "state",
            "share",
            "seconds_per_run",
            "runs",
            "plt_s",
            "declared_lost",
            "path_dropped",
            "lost_by_packet_rule",
            "lost_by_time_rule",
            "paper",
        ],
    )


ASSESS_COLUMNS = [
    "finding",
    "stack",
    "state",
    "a",
    "b",
    "direction",
    "runs_a",
    "runs_b",
    "distinct_a",
    "distinct_b",
    "share_a",
    "share_b",
    "delta",
    "delta_lo",
    "delta_hi",
    "p_value",
    "p_holm",
    "min_p_holm",
    "pseudo_replicates",
    "interval_collapsed",
    "underpowered",
    "reproduced",
    "verdict",
    "known",
    "paper_a",
    "paper_b",
    "plt_a",
    "plt_b",
    "plt_p",
]


def assess(
    root: str | Path,
    findings: tuple[Finding, ...] = FINDINGS,
    *,
    alpha: float = 0.01,
    n_perm: int = 9999,
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    loaded: dict[str, tuple[traces.TraceSet, pd.DataFrame]] | None = None,
    interval: IntervalMethod = INTERVAL,
    why: bool = False,
) -> pd.DataFrame:
    """One row per (finding, stack, comparison): the finding's state compared between two
    conditions' server traces with :func:`statemine.compare.diff` (``alpha`` is its Holm
    family-wise level; the other options are its own).

    Columns (:data:`ASSESS_COLUMNS`): ``share_a``/``share_b`` pooled shares (0..1),
    ``delta`` = b - a with its bootstrap interval ``delta_lo``/``delta_hi`` (``confidence``),
    ``p_value`` (permutation) and ``p_holm`` (Holm over the comparison's states),
    ``min_p_holm`` (the smallest ``p_holm`` these group sizes allow), ``plt_a``/``plt_b``
    (mean page-load time of the two conditions' runs, s) and ``plt_p`` (Welch's t-test,
    :func:`statemine.outcomes.welch_cell`; NaN when it cannot test), the diff's evidence
    flags, ``runs_a``/``runs_b`` and ``distinct_a``/``distinct_b`` (runs whose state-share
    profiles differ, see :func:`distinct_runs`), ``reproduced`` (``p_holm < alpha``, the
    paper's sign, no flag), ``verdict`` (why not) and ``known`` (the documented reason
    when the comparison names one for the stack, else ""). ``root`` holds one folder per
    scenario; findings whose folder is absent are left out. ``loaded``:
    :func:`load_scenarios` of ``root``, when already read. ``interval``: the bootstrap
    interval's method (:func:`statemine.stats.resampling.bootstrap_delta`; default
    :data:`INTERVAL`). ``why``: each comparison goes through
    :func:`statemine.explain.explain` instead (the same diff, plus why), and a last column
    ``why`` holds its one line on the finding's state (:func:`statemine.explain.why_line`:
    rate or dwell, the leading trigger), the lab's results table lending the path's drops.
    """
    loaded = load_scenarios(root, findings) if loaded is None else loaded
    rows = []
    for f in findings:
        if f.scenario not in loaded:
            continue
        ts, results = loaded[f.scenario]
        conditions = {c.label: c for c in f.conditions}
        for stack, base in _stacks(ts, f.per_stack):
            for comp in f.comparisons:
                ca, cb = conditions[comp.a], conditions[comp.b]
                sa, sb = select(base, ca.where), select(base, cb.where)
                if sa.n_traces == 0 or sb.n_traces == 0:
                    continue
                options: dict[str, Any] = dict(
                    label_a=comp.a,
                    label_b=comp.b,
                    n_perm=n_perm,
                    n_boot=n_boot,
                    seed=seed,
                    alpha=alpha,
                    confidence=confidence,
                    interval=interval,
                )
                reason = None
                if why:
                    runs = results.reset_index()
                    e = explain(sa, sb, runs_a=runs, runs_b=runs, **options)
                    d, reason = e.diff, why_line(e.states, e.triggers, f.state)
                else:
                    d = diff(sa, sb, **options)
                st = d.states.set_index("state")
                r = st.loc[f.state].to_dict() if f.state in st.index else None
                impl = stack.split("@")[0]
                row = {
                    "finding": f.name,
                    "stack": stack,
                    "state": f.state,
                    "a": comp.a,
                    "b": comp.b,
                    "direction": comp.direction,
                    "runs_a": _runs(sa),
                    "runs_b": _runs(sb),
                    "distinct_a": distinct_runs(sa),
                    "distinct_b": distinct_runs(sb),
                    "share_a": 0.0 if r is None else float(r["fraction_a"]),
                    "share_b": 0.0 if r is None else float(r["fraction_b"]),
                    "delta": 0.0 if r is None else float(r["delta"]),
                    "delta_lo": np.nan if r is None else float(r["delta_lo"]),
                    "delta_hi": np.nan if r is None else float(r["delta_hi"]),
                    "p_value": np.nan if r is None else float(r["p_value"]),
                    "p_holm": np.nan if r is None else float(r["p_holm"]),
                    "min_p_holm": d.min_p_holm,
                    "pseudo_replicates": False if r is None else bool(r["pseudo_replicates"]),
                    "interval_collapsed": False if r is None else bool(r["interval_collapsed"]),
                    "underpowered": d.underpowered,
                    "paper_a": ca.paper,
                    "paper_b": cb.paper,
                }
                plt = welch_cell(_plt(results, sa), _plt(results, sb), alpha=alpha)
                row.update(plt_a=plt["mean_a"], plt_b=plt["mean_b"], plt_p=plt["p_value"])
                row["reproduced"], row["verdict"] = verdict(row, alpha=alpha)
                row["known"] = "" if row["reproduced"] else comp.known.get(impl, "")
                if why:
                    row["why"] = reason
                rows.append(row)
    return pd.DataFrame(rows, columns=[*ASSESS_COLUMNS, *(["why"] if why else [])])


def _plt(results: pd.DataFrame, ts: traces.TraceSet) -> np.ndarray:
    """The page-load times (s) of the runs of ``ts``, from the results table."""
    ids = [r for r in sorted(set(ts.traces["run_id"].astype(str))) if r in results.index]
    return results.loc[ids, "plt_s"].to_numpy(dtype=float)


def verdict(row: dict, *, alpha: float) -> tuple[bool, str]:
    """``(reproduced, text)`` for one :func:`assess` row: reproduced when ``p_holm < alpha``,
    ``delta`` has the sign of ``direction``, its bootstrap interval (``delta_lo``,
    ``delta_hi``, when given) excludes 0 and neither evidence flag is raised; else the
    text lists every reason. With ``direction == "either"`` the text is ``effect: up`` /
    ``effect: down`` or ``no effect: ...`` (the reasons).

    >>> verdict({"p_holm": 1e-4, "delta": 0.3, "direction": "up", "pseudo_replicates": False,
    ...          "underpowered": False, "min_p_holm": 1e-4}, alpha=0.01)
    (True, 'reproduced')
    >>> verdict({"p_holm": 0.4, "delta": -0.01, "direction": "up", "pseudo_replicates": True,
    ...          "underpowered": True, "min_p_holm": 0.2}, alpha=0.01)[1]
    'not reproduced: identical runs; underpowered (p >= 0.2); p 0.4 >= 0.01; opposite direction'
    >>> verdict({"p_holm": 0.001, "delta": 0.05, "delta_lo": -0.04, "delta_hi": 0.15,
    ...          "direction": "up", "pseudo_replicates": False, "underpowered": False,
    ...          "min_p_holm": 1e-4}, alpha=0.01)[1]
    'not reproduced: 95% interval includes 0'
    >>> verdict({"p_holm": 0.003, "delta": -0.2, "direction": "either", "pseudo_replicates": False,
    ...          "underpowered": False, "min_p_holm": 1e-4}, alpha=0.01)
    (True, 'effect: down')
    """
    reasons = []
    lo, hi = row.get("delta_lo", np.nan), row.get("delta_hi", np.nan)
    if np.isfinite(lo) and np.isfinite(hi) and lo <= 0.0 <= hi:
        # the permutation test and the bootstrap disagree (e.g. runs of very different
        # lengths, whose pooled shares the permutations mix): not evidence of a difference
        reasons.append("95% interval includes 0")
    if row["pseudo_replicates"]:
        reasons.append("identical runs")
    if row["underpowered"]:
        reasons.append(f"underpowered (p >= {row['min_p_holm']:.2g})")
    p = row["p_holm"]
    if not (p < alpha):
        reasons.append(f"p {p:.2g} >= {alpha:g}" if np.isfinite(p) else "no test")
    either = row["direction"] == "either"
    if not either and np.sign(row["delta"]) != (1 if row["direction"] == "up" else -1):
        reasons.append("opposite direction" if row["delta"] != 0 else "no difference")
    if not reasons:
        return True, (
            "effect: " + ("up" if row["delta"] > 0 else "down")
        ) if either else "reproduced"
    return False, ("no effect: " if either else "not reproduced: ") + "; ".join(reasons)


def distinct_runs(ts: traces.TraceSet, *, tol: float = IDENTICAL_TOL) -> int:
    """How many of the runs of ``ts`` differ: distinct per-run state-share profiles (each
    run's server traces pooled; shares in 0..1 compared on a grid of ``tol``)."""
    if ts.n_traces == 0:
        return 0
    times = trace_state_times(ts)
    per_run = times.groupby(
        ts.traces.set_index("trace")["run_id"].reindex(times.index).to_numpy()
    ).sum()
    per_run = per_run[per_run.sum(axis=1) > 0]
    grid = np.round(trace_shares(per_run.to_numpy()) / tol).astype(np.int64)
    return len(np.unique(grid, axis=0))


def _runs(ts: traces.TraceSet) -> int:
    return int(ts.traces["run_id"].nunique())


def _stacks(ts: traces.TraceSet, per_stack: bool) -> Iterator[tuple[str, traces.TraceSet]]:
    """``(stack label, its traces)``: one per implementation@version, or all traces under
    the implementations' names (``"quic-go"``) when the finding compares versions."""
    if not per_stack:
        yield "+".join(sorted(set(ts.traces["implementation"].astype(str)))), ts
        return
    for impl, version in sorted(set(zip(ts.traces["implementation"], ts.traces["version"]))):
        yield f"{impl}@{version}", select(ts, {"implementation": impl, "version": version})


# -- the tables as text (terminal and docs/findings.md share these cells) --------------------
def records(rows: pd.DataFrame) -> Iterator[Any]:
    """The rows of ``rows`` as named tuples, typed ``Any``: pandas-stubs types every field
    as any scalar, while each column here has one known type."""
    return rows.itertuples(index=False)


VERDICT_HEADERS = (
    "stack",
    "A -> B",
    "A",
    "B",
    "B - A [95% CI]",
    "p (Holm)",
    "runs (distinct)",
    "verdict",
    "PLT A / B (Welch p)",
)
CONDITION_HEADERS = (
    "stack",
    "condition",
    "share",
    "paper",
    "time/run",
    "runs",
    "PLT",
    "declared",
    "dropped",
    "pkt rule",
    "time rule",
)


def verdict_headers(rows: pd.DataFrame) -> tuple[str, ...]:
    """:data:`VERDICT_HEADERS`, and ``why`` when ``rows`` (of :func:`assess`) has that column."""
    return (*VERDICT_HEADERS, "why") if "why" in rows.columns else VERDICT_HEADERS


def verdict_cells(rows: pd.DataFrame) -> list[tuple[str, ...]]:
    """One text row per :func:`assess` row (:func:`verdict_headers`), in the units of
    :mod:`statemine.units` as ``diff`` prints them: shares in %, the difference and its
    interval in percentage points (to the decimals of :func:`delta_cell`), p (Holm), runs
    (distinct runs), the verdict, marked ``[i]`` when a documented cause is listed as note
    ``i`` (1-based row), page-load times; then the ``why`` line as is, when ``rows`` has one
    (``assess(..., why=True)``)."""
    why = "why" in rows.columns
    return [
        (
            r.stack,
            f"{r.a} -> {r.b} ({r.direction})",
            *units.ranking_cells("state", r.share_a, r.share_b, r.delta)[:2],
            delta_cell(r.delta, r.delta_lo, r.delta_hi),
            units.p_value(r.p_holm),
            f"{r.runs_a} ({r.distinct_a}) / {r.runs_b} ({r.distinct_b})",
            r.verdict + (f" [{i + 1}]" if r.known else ""),
            f"{units.seconds(r.plt_a)} / {units.seconds(r.plt_b)} ({units.p_value(r.plt_p)})",
            *([r.why] if why else []),
        )
        for i, r in enumerate(records(rows))
    ]


def delta_cell(delta: float, lo: float, hi: float) -> str:
    """``B - A [lo, hi] pp`` to the decimals the interval supports: whole points when its
    half-width is a point or more (:func:`statemine.units.decimals_for`; such a figure
    moves by points between batches of runs), else tenths.

    >>> delta_cell(-0.176, -0.221, -0.127), delta_cell(0.073, 0.067, 0.078)
    ('-18 [-22, -13] pp', '+7.3 [+6.7, +7.8] pp')
    """
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return units.share_delta_at(delta)
    return units.share_delta_at(delta, lo, hi, decimals=units.decimals_for((hi - lo) / 2))


def condition_cells(rows: pd.DataFrame) -> list[tuple[str, ...]]:
    """One text row per :func:`evaluate` row (:data:`CONDITION_HEADERS`; shares and times in
    the units of :mod:`statemine.units`)."""
    return [
        (
            r.stack,
            r.condition,
            units.share(r.share),
            r.paper or "-",
            units.seconds(r.seconds_per_run),
            str(r.runs),
            units.seconds(r.plt_s),
            str(r.declared_lost),
            str(r.path_dropped),
            str(r.lost_by_packet_rule),
            str(r.lost_by_time_rule),
        )
        for r in records(rows)
    ]


def known_notes(rows: pd.DataFrame) -> list[str]:
    """``[i] stack: known cause: ...`` for the rows of :func:`assess` with a documented cause."""
    return [
        f"[{i + 1}] {r.stack}: known cause: {r.known}"
        for i, r in enumerate(records(rows))
        if r.known
    ]


def markdown(verdicts: pd.DataFrame, conditions: pd.DataFrame, finding: str) -> str:
    """One finding's two tables (and documented causes) as Markdown, the cells of
    :func:`verdict_cells` and :func:`condition_cells` (``|`` escaped); the first has a
    ``why`` column when ``verdicts`` has one."""

    def table(headers, cells):
        esc = lambda text: str(text).replace("|", "\\|")  # noqa: E731
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in cells]
        return "\n".join(lines)

    rows = verdicts[verdicts["finding"] == finding]
    notes = "".join(f"\n{n}\n" for n in known_notes(rows))
    return (
        table(verdict_headers(rows), verdict_cells(rows))
        + "\n"
        + notes
        + "\n"
        + table(CONDITION_HEADERS, condition_cells(conditions[conditions["finding"] == finding]))
        + "\n"
    )
