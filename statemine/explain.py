"""Why a state's share changed between two trace sets (issue 30): rate or dwell, the
triggers of the entries, spurious or real loss declarations, and the knob that governs them.

:func:`explain` compares sides A and B as :func:`statemine.diff` does (the same
:class:`~statemine.stats.options.CompareOptions`, traces as the unit of replication) and
then, per state:

1. **Rate or dwell.** A state's pooled share is ``s = r * d``: ``r`` its entries (visits)
   per second of connection, ``d`` its mean dwell (seconds per visit), both pooled over the
   side's traces (``r = sum entries / sum seconds``, ``d = sum seconds in it / sum
   entries``, so ``r * d`` is exactly the share :func:`~statemine.compare.diff` compares).
   The change ``s_B - s_A`` splits exactly into a rate part ``(r_B - r_A)(d_A + d_B) / 2``
   and a dwell part ``(d_B - d_A)(r_A + r_B) / 2`` (the symmetric, Shapley split of a
   product: the two sum to the change to rounding). ``r`` and ``d`` each get a bootstrap
   interval of ``B - A`` and a permutation p-value over traces
   (:func:`~statemine.stats.resampling.bootstrap_delta`,
   :func:`~statemine.stats.resampling.permutation_pvalues` with explicit denominators),
   Holm-adjusted over the states.
2. **Triggers.** Each entry's trigger is the last point event between the previous state
   line and the entry, when it lies at most :data:`TRIGGER_WINDOW_S` before the entry (the
   event the stack logged as it changed state: ``LossDetected rule=packet|time``,
   ``SpuriousLoss``, ``HyStartExit``, a qlog ``packet_lost`` or fired PTO timer, ...);
   otherwise the state it came from (``after <state>``: kernel TCP's ftrace has no point
   events, its previous state is the trigger) or ``trace start``. Triggers partition the
   entries, so per state the trigger rates (entries with that trigger per second of
   connection) sum to the entry rate and their differences to the change in entries
   (``share_of_change`` sums to 1). Each trigger's rate difference gets an interval and a
   permutation p, Holm-adjusted over the state's triggers.
3. **Spurious or real.** A loss declaration (``LossDetected``) is ``spurious`` when the
   stack later logs ``SpuriousLoss`` for its packet number (RFC 9002 section 7.5: the
   packet was acknowledged after all); else, where the lab's results table says the run's
   path dropped no packet, ``spurious`` (lab ground truth); else, a packet-threshold
   declaration in a run whose path had no jitter (the path model reorders only through
   jitter, statemine/lab/path.py) is ``real`` (lab ground truth); else, when the stack
   logs ``SpuriousLoss`` events at all (some trace of this implementation on either side
   does), ``real``; else ``unknown``. ``evidence`` says which rule decided.
4. **The knob.** Each trigger is tied to what governs it (:func:`knob_of`) and the trace
   labels that set it, with their values per side; labels differing between the sides are
   listed (:func:`differing_labels`).
5. **Summary.** One paragraph per significantly changed state, built only from cells of
   the states and triggers tables (:func:`summary_paragraphs`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .compare import DiffResult, _strata_labels, check_options, diff_stats
from .stats.options import CompareOptions
from .stats.partial import PartialStats, map_traces
from .stats.resampling import bootstrap_delta, holm, permutation_pvalues, pooled_ratio
from .stats.visits import trace_codes
from .traces import TraceSet

#: An event counts as an entry's trigger when it is at most this many seconds before the
#: entry (the stacks log the declaration and the state change in one call: the same time in
#: virtual time, microseconds apart in real time); older events between the previous state
#: line and the entry happened during the previous visit and did not start this one.
TRIGGER_WINDOW_S = 1e-3

#: Columns of explain.csv (fractions in [0, 1], rates in entries per second of connection,
#: dwell in seconds per visit; every ``*_part`` a fraction of connection time, summing to
#: ``delta``).
STATE_COLUMNS = [
    "state",
    "changed",
    "share_a",
    "share_b",
    "delta",
    "delta_lo",
    "delta_hi",
    "p_holm",
    "entries_a",
    "entries_b",
    "seconds_a",
    "seconds_b",
    "rate_a",
    "rate_b",
    "rate_ratio",
    "rate_delta",
    "rate_lo",
    "rate_hi",
    "rate_p",
    "rate_p_holm",
    "dwell_a",
    "dwell_b",
    "dwell_ratio",
    "dwell_delta",
    "dwell_lo",
    "dwell_hi",
    "dwell_p",
    "dwell_p_holm",
    "rate_part",
    "dwell_part",
    "rate_part_share",
    "dwell_part_share",
    "carried_by",
    "side_a",
    "side_b",
    "differing_labels",
]
#: Columns of triggers.csv: one row per (state, trigger, verdict).
TRIGGER_COLUMNS = [
    "state",
    "trigger",
    "verdict",
    "evidence",
    "entries_a",
    "entries_b",
    "rate_a",
    "rate_b",
    "rate_delta",
    "rate_lo",
    "rate_hi",
    "p_value",
    "p_holm",
    "share_of_change",
    "share_of_entries_a",
    "share_of_entries_b",
    "knob",
    "knob_values",
]
#: Columns of the per-side loss declarations table.
LOSS_COLUMNS = [
    "side",
    "traces",
    "declared",
    "declared_packet",
    "declared_time",
    "spurious",
    "real",
    "unknown",
    "stack_spurious_events",
    "path_dropped",
    "evidence",
]
#: Trace labels that identify a trace or run rather than describe its conditions.
_ID_LABELS = frozenset(
    {
        "trace",
        "source",
        "end",
        "conn",
        "role",
        "run_id",
        "seed",
        "saddr",
        "sport",
        "daddr",
        "dport",
        "bytes_acked",
        "probes",
        "state_events",
        "file_events",
        "label",
    }
)
#: A label with more distinct values than this on a side is an id, not a condition.
_MAX_CONDITION_VALUES = 8
_PN = re.compile(r"(?:^|\s)pn=(\S+)")
_RULE = re.compile(r"(?:^|\s)rule=(\S+)")
_LOSS = "LossDetected"
_SPURIOUS = "SpuriousLoss"
_CLOSE = "Close"

_READ_SIDE = (
    "profile",
    "read_rate_mbps",
    "read_rate_cv",
    "per_packet_cpu_ms",
    "max_data_bytes",
    "max_stream_data_bytes",
    "socket_buffer_bytes",
)
_PATH = ("jitter_ms", "up_jitter_ms", "loss", "up_loss", "gilbert")


@dataclass(frozen=True)
class ExplainResult:
    """What :func:`explain` found (every difference is B minus A).

    ``states``: explain.csv (:data:`STATE_COLUMNS`), one row per state, changed states
    first; ``triggers``: triggers.csv (:data:`TRIGGER_COLUMNS`); ``losses``: per side, the
    loss declarations and how many were spurious or real (:data:`LOSS_COLUMNS`);
    ``differing``: the condition labels whose values differ (label, values_a, values_b);
    ``summary``: one paragraph per changed state; ``diff``: the underlying comparison."""

    states: pd.DataFrame
    triggers: pd.DataFrame
    losses: pd.DataFrame
    differing: pd.DataFrame
    summary: tuple[str, ...]
    diff: DiffResult
    label_a: str
    label_b: str
    alpha: float
    notes: tuple[str, ...] = ()


def explain(
    a: TraceSet,
    b: TraceSet,
    options: CompareOptions | None = None,
    *,
    label_a: str = "A",
    label_b: str = "B",
    runs_a: pd.DataFrame | None = None,
    runs_b: pd.DataFrame | None = None,
    **changes: Any,
) -> ExplainResult:
    """Explain the differences between trace sets ``a`` and ``b`` (module doc).

    ``options``/``changes``: as :func:`statemine.diff`. ``runs_a``/``runs_b``: the lab's
    results table of each side (``run_id``, ``packets_dropped``; ``statemine lab``'s
    results.csv), the ground truth of what the path dropped; None when unknown. Raises
    :class:`~statemine.errors.UsageError` as :func:`statemine.diff` does."""
    opts = CompareOptions.of(options, **changes)
    check_options(opts, (label_a, label_b))
    pa, pb = map_traces(a, opts), map_traces(b, opts)
    result = diff_stats((pa, a.traces), (pb, b.traces), opts, label_a=label_a, label_b=label_b)
    names = sorted(set(pa.names) | set(pb.names))
    sides = [
        _Side.of(ts, p, names, opts, label) for ts, p, label in ((a, pa, label_a), (b, pb, label_b))
    ]
    strata = list(opts.strata) or None
    ga, gb = (_strata_labels(s.traces, strata, s.label) for s in sides)
    if ga is not None and gb is not None:
        ga, gb = ga[sides[0].keep], gb[sides[1].keep]
    spurious_logged = _spurious_implementations(a, b)
    found = [_entries(ts, opts, runs, spurious_logged) for ts, runs in ((a, runs_a), (b, runs_b))]
    entries = [e for e, _ in found]
    differing = differing_labels(a.traces, b.traces)
    states = _state_table(result, sides, (ga, gb), opts, differing)
    triggers = _trigger_table(names, sides, entries, (ga, gb), opts, a.traces, b.traces)
    losses = pd.DataFrame(
        [
            _losses(s.label, decl, runs, ts)
            for s, (_, decl), runs, ts in zip(sides, found, (runs_a, runs_b), (a, b), strict=True)
        ],
        columns=LOSS_COLUMNS,
    )
    summary = summary_paragraphs(states, triggers, opts.alpha)
    return ExplainResult(
        states=states,
        triggers=triggers,
        losses=losses,
        differing=differing,
        summary=tuple(summary),
        diff=result,
        label_a=label_a,
        label_b=label_b,
        alpha=opts.alpha,
        notes=tuple(result.notes),
    )


# -- per side: seconds, entries -----------------------------------------------------------
@dataclass(frozen=True)
class _Side:
    """One side's per-trace tables (traces with time only, as :func:`diff` keeps them):
    ``seconds`` and ``visits`` (traces x states of ``names``), ``total`` (traces x 1,
    seconds of connection), ``keep`` (which rows of the traces frame they are)."""

    label: str
    traces: pd.DataFrame
    seconds: np.ndarray
    visits: np.ndarray
    total: np.ndarray
    keep: np.ndarray

    @classmethod
    def of(
        cls, ts: TraceSet, p: PartialStats, names: list[str], opts: CompareOptions, label: str
    ) -> _Side:
        column = np.searchsorted(names, p.names)
        seconds = np.zeros((p.n_traces, len(names)))
        seconds[:, column] = p.trace_state_seconds()
        visits = np.zeros((p.n_traces, len(names)))
        trace, state = p.state_keys >> 32, p.state_keys & 0xFFFFFFFF
        visits[trace, column[state]] = p.visits
        total = seconds.sum(axis=1)
        keep = total > 0
        return cls(label, ts.traces, seconds[keep], visits[keep], total[keep, None], keep)


def _entries(
    ts: TraceSet,
    opts: CompareOptions,
    runs: pd.DataFrame | None,
    spurious_logged: set[str],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One row per entry into a state (the visits :func:`map_traces` counts): ``row`` (the
    trace's row in ``ts.traces``), ``state``, ``trigger``, ``verdict``, ``evidence``; and one
    row per loss declaration: its event ``index``, ``verdict``, ``evidence``, ``rule``."""
    ev = ts.events
    row = trace_codes(ev["trace"], ts.traces["trace"])
    kind = ev["kind"].astype(str).to_numpy()
    name = ev["state"].astype(str).to_numpy()
    time = ev["time"].to_numpy()
    is_state = kind == "state"
    if opts.collapse_repeats:  # a repeated state line continues the visit: not an entry
        pos = np.flatnonzero(is_state)
        same = np.r_[False, (row[pos][1:] == row[pos][:-1]) & (name[pos][1:] == name[pos][:-1])]
        is_state[pos[same]] = False
    n = len(ev)
    idx = np.arange(n)
    # the previous entry (state row) of each entry, within its trace
    prev_of_entry = np.full(n, -1, np.int64)
    st_pos = np.flatnonzero(is_state)
    before = pd.Series(np.where(is_state, idx, np.nan)).groupby(row).shift(1)
    shifted = pd.Series(before).groupby(row).ffill().to_numpy()
    prev_of_entry[st_pos] = np.nan_to_num(shifted[st_pos], nan=-1).astype(np.int64)
    fields = (
        ev["fields"].astype(object).where(ev["fields"].notna(), "").astype(str).to_numpy()
        if "fields" in ev.columns
        else np.full(n, "", object)
    )
    verdicts = _declaration_verdicts(ts, row, name, kind, fields, runs, spurious_logged)
    # the last event before each entry (its trigger when recent enough)
    is_event = (kind == "event") & (name != _CLOSE)
    latest = pd.Series(np.where(is_event, idx, np.nan)).groupby(row).ffill()
    last_event = latest.groupby(row).shift(1).to_numpy()  # strictly before the row
    out_trigger, out_verdict, out_evidence = [], [], []
    for i in st_pos:
        j = last_event[i]
        prev = prev_of_entry[i]
        if np.isfinite(j) and int(j) > prev and time[i] - time[int(j)] <= TRIGGER_WINDOW_S:
            j = int(j)
            rule = _RULE.search(fields[j])
            label = f"{name[j]} rule={rule.group(1)}" if rule and name[j] == _LOSS else name[j]
            verdict, evidence = verdicts.get(j, ("", ""))
        else:
            label = f"after {name[prev]}" if prev >= 0 else "trace start"
            verdict, evidence = "", ""
        out_trigger.append(label)
        out_verdict.append(verdict)
        out_evidence.append(evidence)
    entries = pd.DataFrame(
        {
            "row": row[st_pos],
            "state": name[st_pos],
            "trigger": out_trigger,
            "verdict": out_verdict,
            "evidence": out_evidence,
        }
    )
    declarations = pd.DataFrame(
        [(k, v[0], v[1], _rule_of(fields[k])) for k, v in verdicts.items()],
        columns=["index", "verdict", "evidence", "rule"],
    )
    return entries, declarations


def _rule_of(fields: str) -> str:
    rule = _RULE.search(fields)
    return rule.group(1) if rule else ""


def _declaration_verdicts(
    ts: TraceSet,
    row: np.ndarray,
    name: np.ndarray,
    kind: np.ndarray,
    fields: np.ndarray,
    runs: pd.DataFrame | None,
    spurious_logged: set[str],
) -> dict[int, tuple[str, str]]:
    """Per loss declaration (its row index in the events): ``(verdict, evidence)`` by the
    rules of the module doc, in their order."""
    is_event = kind == "event"
    loss = np.flatnonzero(is_event & (name == _LOSS))
    spurious = np.flatnonzero(is_event & (name == _SPURIOUS))
    undone: dict[tuple[int, str], list[int]] = {}
    for k in spurious:
        pn = _PN.search(fields[k])
        if pn:
            undone.setdefault((int(row[k]), pn.group(1)), []).append(int(k))
    dropped = _dropped_per_trace(ts.traces, runs)
    no_jitter = _no_jitter(ts.traces)
    impl = (
        ts.traces["implementation"].astype(str).to_numpy()
        if "implementation" in ts.traces.columns
        else np.full(len(ts.traces), "", object)
    )
    out: dict[int, tuple[str, str]] = {}
    for k in loss:
        r = int(row[k])
        pn = _PN.search(fields[k])
        later = undone.get((r, pn.group(1)), []) if pn else []
        if any(s > k for s in later):
            out[int(k)] = ("spurious", "stack: SpuriousLoss for its packet")
        elif dropped[r] == 0:
            out[int(k)] = ("spurious", "lab: the path dropped no packet of the run")
        elif no_jitter[r] and _rule_of(fields[k]) == "packet":
            out[int(k)] = ("real", "lab: the path reordered no packet (no jitter)")
        elif pn and impl[r] in spurious_logged:  # without its packet number: not known
            out[int(k)] = ("real", "stack: no SpuriousLoss for its packet")
        else:
            out[int(k)] = ("unknown", "")
    return out


def _dropped_per_trace(traces: pd.DataFrame, runs: pd.DataFrame | None) -> np.ndarray:
    """Packets the lab's path dropped in each trace's run (NaN when unknown)."""
    if runs is None or "run_id" not in traces.columns or "packets_dropped" not in runs.columns:
        return np.full(len(traces), np.nan)
    by_run = pd.Series(
        pd.to_numeric(runs["packets_dropped"], errors="coerce").to_numpy(),
        index=runs["run_id"].astype(str),
    )
    by_run = by_run[~by_run.index.duplicated()]
    return traces["run_id"].astype(str).map(by_run).to_numpy(dtype=float)


def _no_jitter(traces: pd.DataFrame) -> np.ndarray:
    """Per trace: the lab's labels say neither path direction had jitter (the path model
    reorders packets only through jitter)."""
    if "jitter_ms" not in traces.columns:
        return np.zeros(len(traces), bool)
    out = np.ones(len(traces), bool)
    for col in ("jitter_ms", "up_jitter_ms"):
        if col in traces.columns:
            value = pd.to_numeric(traces[col].replace("default", "0"), errors="coerce")
            out &= (value == 0).to_numpy()
    return out


def _spurious_implementations(a: TraceSet, b: TraceSet) -> set[str]:
    """The ``implementation`` labels of traces (either side) that log SpuriousLoss events."""
    out: set[str] = set()
    for ts in (a, b):
        if "implementation" not in ts.traces.columns:
            continue
        ev = ts.events
        mask = (ev["kind"] == "event").to_numpy() & (ev["state"] == _SPURIOUS).to_numpy()
        if mask.any():
            traces = set(ev["trace"][mask].astype(str))
            out |= set(ts.traces.loc[ts.traces["trace"].isin(traces), "implementation"].astype(str))
    return out


# -- 1: rate or dwell ----------------------------------------------------------------------
def _state_table(
    result: DiffResult,
    sides: Sequence[_Side],
    strata: tuple[np.ndarray | None, np.ndarray | None],
    opts: CompareOptions,
    differing: pd.DataFrame,
) -> pd.DataFrame:
    """explain.csv: the decomposition of every state's change (module doc, 1)."""
    sa, sb = sides
    ga, gb = strata
    kw: dict[str, Any] = dict(strata_a=ga, strata_b=gb)
    names = list(result.states["state"].sort_values())

    def ratio_test(num: str, den: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Permutation p and bootstrap interval of pooled ``num / den`` (B - A)."""
        xa, xb, da, db = getattr(sa, num), getattr(sb, num), getattr(sa, den), getattr(sb, den)
        p = permutation_pvalues(
            xa, xb, den_a=da, den_b=db, n_perm=opts.n_perm, seed=opts.seed, **kw
        )
        lo, hi = bootstrap_delta(
            xa,
            xb,
            den_a=da,
            den_b=db,
            n_boot=opts.n_boot,
            confidence=opts.confidence,
            seed=opts.seed,
            **kw,
        )
        return p, lo, hi

    rate_p, rate_lo, rate_hi = ratio_test("visits", "total")  # entries per second
    dwell_p, dwell_lo, dwell_hi = ratio_test("seconds", "visits")  # seconds per visit
    ra, rb = pooled_ratio(sa.visits, sa.total), pooled_ratio(sb.visits, sb.total)
    da, db = pooled_ratio(sa.seconds, sa.visits), pooled_ratio(sb.seconds, sb.visits)
    rate_part, dwell_part = decompose(ra, rb, da, db)
    diff_rows = result.states.set_index("state").loc[names]
    delta = diff_rows["delta"].to_numpy(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate_share = np.where(delta != 0, rate_part / delta, np.nan)
        dwell_share = np.where(delta != 0, dwell_part / delta, np.nan)
        rate_ratio, dwell_ratio = rb / ra, db / da
    labels = "; ".join(
        f"{r.label} {r.values_a} vs {r.values_b}" for r in differing.itertuples(index=False)
    )
    out = pd.DataFrame(
        {
            "state": names,
            "changed": diff_rows["significant"].to_numpy(bool),
            "share_a": diff_rows["fraction_a"].to_numpy(float),
            "share_b": diff_rows["fraction_b"].to_numpy(float),
            "delta": delta,
            "delta_lo": diff_rows["delta_lo"].to_numpy(float),
            "delta_hi": diff_rows["delta_hi"].to_numpy(float),
            "p_holm": diff_rows["p_holm"].to_numpy(float),
            "entries_a": sa.visits.sum(axis=0).astype(np.int64),
            "entries_b": sb.visits.sum(axis=0).astype(np.int64),
            "seconds_a": sa.seconds.sum(axis=0),
            "seconds_b": sb.seconds.sum(axis=0),
            "rate_a": ra,
            "rate_b": rb,
            "rate_ratio": rate_ratio,
            "rate_delta": rb - ra,
            "rate_lo": rate_lo,
            "rate_hi": rate_hi,
            "rate_p": rate_p,
            "rate_p_holm": holm(rate_p),
            "dwell_a": da,
            "dwell_b": db,
            "dwell_ratio": dwell_ratio,
            "dwell_delta": db - da,
            "dwell_lo": dwell_lo,
            "dwell_hi": dwell_hi,
            "dwell_p": dwell_p,
            "dwell_p_holm": holm(dwell_p),
            "rate_part": rate_part,
            "dwell_part": dwell_part,
            "rate_part_share": rate_share,
            "dwell_part_share": dwell_share,
            "carried_by": np.where(np.abs(rate_part) >= np.abs(dwell_part), "entries", "dwell"),
            "side_a": sa.label,
            "side_b": sb.label,
            "differing_labels": labels,
        }
    )
    out = out.assign(size=np.abs(delta)).sort_values(
        ["changed", "size", "state"], ascending=[False, False, True], kind="stable"
    )
    return out[STATE_COLUMNS].reset_index(drop=True)


def decompose(
    ra: np.ndarray, rb: np.ndarray, da: np.ndarray, db: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The rate and dwell parts of ``rb * db - ra * da`` (the symmetric split of a product's
    change: ``(rb - ra)(da + db) / 2`` and ``(db - da)(ra + rb) / 2``, which sum to it). A
    side without entries (rate 0, dwell undefined) takes the other side's dwell: the whole
    change is then the rate's.

    >>> [v.tolist() for v in decompose(np.array([1.0]), np.array([3.0]), np.array([2.0]), np.array([2.0]))]
    [[4.0], [0.0]]
    """
    da = np.where(np.isfinite(da), da, db)
    db = np.where(np.isfinite(db), db, da)
    da, db = np.nan_to_num(da), np.nan_to_num(db)
    return (rb - ra) * (da + db) / 2.0, (db - da) * (ra + rb) / 2.0


# -- 2: triggers -----------------------------------------------------------------------------
def _trigger_table(
    names: list[str],
    sides: Sequence[_Side],
    entries: Sequence[pd.DataFrame],
    strata: tuple[np.ndarray | None, np.ndarray | None],
    opts: CompareOptions,
    traces_a: pd.DataFrame,
    traces_b: pd.DataFrame,
) -> pd.DataFrame:
    """triggers.csv (module doc, 2-4)."""
    keys = pd.concat([e[["state", "trigger", "verdict"]] for e in entries]).drop_duplicates()
    keys = keys.sort_values(["state", "trigger", "verdict"], kind="stable").reset_index(drop=True)
    if not len(keys):
        return pd.DataFrame(columns=TRIGGER_COLUMNS)
    key_index = pd.MultiIndex.from_frame(keys)
    counts = []
    for side, e in zip(sides, entries, strict=True):
        rows_kept = np.flatnonzero(side.keep)
        position = np.full(len(side.keep), -1, np.int64)
        position[rows_kept] = np.arange(len(rows_kept))
        col = key_index.get_indexer(pd.MultiIndex.from_frame(e[["state", "trigger", "verdict"]]))
        pos = position[e["row"].to_numpy()]
        ok = pos >= 0
        c = np.zeros((len(rows_kept), len(keys)))
        np.add.at(c, (pos[ok], col[ok]), 1.0)
        counts.append(c)
    ca, cb = counts
    sa, sb = sides
    ga, gb = strata
    kw: dict[str, Any] = dict(strata_a=ga, strata_b=gb, den_a=sa.total, den_b=sb.total)
    p = permutation_pvalues(ca, cb, n_perm=opts.n_perm, seed=opts.seed, **kw)
    lo, hi = bootstrap_delta(
        ca, cb, n_boot=opts.n_boot, confidence=opts.confidence, seed=opts.seed, **kw
    )
    ra, rb = pooled_ratio(ca, sa.total), pooled_ratio(cb, sb.total)
    out = keys.copy()
    out["entries_a"] = ca.sum(axis=0).astype(np.int64)
    out["entries_b"] = cb.sum(axis=0).astype(np.int64)
    out["rate_a"], out["rate_b"], out["rate_delta"] = ra, rb, rb - ra
    out["rate_lo"], out["rate_hi"], out["p_value"] = lo, hi, p
    out["p_holm"] = np.nan
    for _, idx in out.groupby("state", sort=False).groups.items():
        out.loc[idx, "p_holm"] = holm(out.loc[idx, "p_value"].to_numpy(float))
    by_state = out.groupby("state")
    delta_state = by_state["rate_delta"].transform("sum")
    with np.errstate(invalid="ignore", divide="ignore"):
        out["share_of_change"] = np.where(delta_state != 0, out["rate_delta"] / delta_state, np.nan)
        out["share_of_entries_a"] = out["entries_a"] / by_state["entries_a"].transform("sum")
        out["share_of_entries_b"] = out["entries_b"] / by_state["entries_b"].transform("sum")
    found = pd.concat([e[["state", "trigger", "verdict", "evidence"]] for e in entries])
    evidence = (
        found[found["evidence"] != ""]
        .groupby(["state", "trigger", "verdict"])["evidence"]
        .agg(lambda s: "; ".join(sorted(set(s))))
    )
    records: list[Any] = list(out.itertuples(index=False))  # fields typed "any scalar"
    out["evidence"] = [evidence.get((r.state, r.trigger, r.verdict), "") for r in records]
    knobs = [knob_of(r.state, r.trigger) for r in records]
    out["knob"] = [k for k, _ in knobs]
    out["knob_values"] = [_label_values(labels, traces_a, traces_b) for _, labels in knobs]
    out = out.assign(size=out["rate_delta"].abs()).sort_values(
        ["state", "size", "trigger", "verdict"], ascending=[True, False, True, True], kind="stable"
    )
    del names
    return out[TRIGGER_COLUMNS].reset_index(drop=True)


# -- 3: losses per side ------------------------------------------------------------------------
def _losses(label: str, decl: pd.DataFrame, runs: pd.DataFrame | None, ts: TraceSet) -> list[Any]:
    """One row of the losses table (:data:`LOSS_COLUMNS`)."""
    ev = ts.events
    spurious_events = int(((ev["kind"] == "event") & (ev["state"] == _SPURIOUS)).sum())
    dropped = np.nan
    if runs is not None and "run_id" in ts.traces.columns and "packets_dropped" in runs.columns:
        ids = set(ts.traces["run_id"].astype(str))
        mine = runs[runs["run_id"].astype(str).isin(ids)]
        dropped = float(pd.to_numeric(mine["packets_dropped"], errors="coerce").sum())
    evidence = "; ".join(sorted(set(decl["evidence"]) - {""}))
    return [
        label,
        ts.n_traces,
        len(decl),
        int((decl["rule"] == "packet").sum()),
        int((decl["rule"] == "time").sum()),
        int((decl["verdict"] == "spurious").sum()),
        int((decl["verdict"] == "real").sum()),
        int((decl["verdict"] == "unknown").sum()),
        spurious_events,
        dropped,
        evidence,
    ]


# -- 4: knobs --------------------------------------------------------------------------------
def knob_of(state: str, trigger: str) -> tuple[str, tuple[str, ...]]:
    """What governs entries into ``state`` by ``trigger``, where statemine knows it, and the
    lab's trace labels that set it ("" and none where it does not).

    >>> knob_of("Recovery", "LossDetected rule=packet")[0]
    'reordering threshold (packets; STATEMINE_REORDERING_THRESHOLD)'
    """
    if trigger == f"{_LOSS} rule=packet":
        return (
            "reordering threshold (packets; STATEMINE_REORDERING_THRESHOLD)",
            ("reordering_threshold", *_PATH),
        )
    if trigger == f"{_LOSS} rule=time":
        return (
            "time threshold (x RTT; STATEMINE_TIME_THRESHOLD)",
            ("time_threshold", *_PATH),
        )
    if trigger.startswith(_LOSS):
        return "path loss and jitter", _PATH
    if trigger == _SPURIOUS:
        return (
            "reordering and time thresholds",
            ("reordering_threshold", "time_threshold", *_PATH),
        )
    event = "" if trigger.startswith("after ") else trigger.lower()
    if state == "ApplicationLimited" or "limited" in event or "blocked" in event:
        return "client read rate / receive window (flow control)", _READ_SIDE
    if trigger in ("ProbeTimeout", "PTO") or state in (
        "ProbeTimeout",
        "RetransmissionTimeout",
        "Loss",
    ):
        return "path loss and delay (probe / retransmission timeout)", _PATH
    if state in ("Disorder", "Recovery") and trigger.startswith("after "):
        return "path reordering and loss (reordering threshold, jitter)", (
            "reordering_threshold",
            *_PATH,
        )
    if state == "CWR":
        return "ECN congestion marks", ()
    return "", ()


def _label_values(labels: Sequence[str], a: pd.DataFrame, b: pd.DataFrame) -> str:
    """``label=A|B`` for each of ``labels`` either side carries (values joined by ``/``)."""
    parts = []
    for label in labels:
        if label in a.columns or label in b.columns:
            parts.append(f"{label}={_values(a, label)}|{_values(b, label)}")
    return " ".join(parts)


def _values(traces: pd.DataFrame, label: str) -> str:
    if label not in traces.columns:
        return "-"
    return "/".join(sorted(traces[label].dropna().astype(str).unique())) or "-"


def differing_labels(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """The condition labels (not ids: :data:`_ID_LABELS`, nor labels with more than
    :data:`_MAX_CONDITION_VALUES` values on a side) whose values differ between the sides:
    ``label``, ``values_a``, ``values_b`` (``/``-joined)."""
    rows = []
    for label in sorted((set(a.columns) | set(b.columns)) - _ID_LABELS):
        va, vb = _values(a, label), _values(b, label)
        if va == vb or max(va.count("/"), vb.count("/")) >= _MAX_CONDITION_VALUES:
            continue
        rows.append((label, va, vb))
    return pd.DataFrame(rows, columns=["label", "values_a", "values_b"])


# -- 5: the summary ---------------------------------------------------------------------------
def _g(value: float, digits: int = 2) -> str:
    """A number as the summary shows it: ``digits`` significant digits."""
    return f"{value:.{digits}g}"


def summary_paragraphs(
    states: pd.DataFrame,
    triggers: pd.DataFrame,
    alpha: float,
    *,
    p: Callable[[float], str] = _g,
) -> list[str]:
    """One paragraph per changed state, from cells of ``states`` and ``triggers`` only:
    shares and parts in percent (x 100), ratios, p-values (as ``p`` shows them: 2
    significant digits unless told; the HTML report passes its own format), and the
    leading trigger of the change in entries with its verdict, evidence and knob."""
    out = []
    row: Any
    for row in states[states["changed"]].itertuples(index=False):
        words = [
            f"{row.state} {100 * row.delta:+.1f} pp ({row.side_a} {100 * row.share_a:.1f}% -> "
            f"{row.side_b} {100 * row.share_b:.1f}%):",
            f"entries {_ratio_words(row.rate_ratio, row.rate_p_holm, alpha, p)},",
            f"dwell {_ratio_words(row.dwell_ratio, row.dwell_p_holm, alpha, p)};",
        ]
        if np.isfinite(row.rate_part_share):
            carrier = "entries" if row.carried_by == "entries" else "dwell"
            share = row.rate_part_share if carrier == "entries" else row.dwell_part_share
            verb = "carry" if carrier == "entries" else "carries"
            words.append(f"the {carrier} {verb} {100 * share:.0f}% of the change.")
        lead = _lead_trigger(triggers, row.state)
        if lead is not None:
            verdict = f", {lead.verdict}" if lead.verdict else ""
            evidence = f" ({lead.evidence})" if lead.evidence else ""
            words.append(
                f"{100 * lead.share_of_change:.0f}% of the change in entries comes from "
                f"entries {_after(lead.trigger)}{verdict}{evidence}, p {p(lead.p_holm)} (Holm)."
            )
            if lead.knob:
                values = f": {lead.knob_values}" if lead.knob_values else ""
                words.append(f"{lead.knob} governs this trigger{values}.")
        if row.differing_labels:
            words.append(f"Labels that differ: {row.differing_labels}.")
        out.append(" ".join(words))
    return out


def why_line(states: pd.DataFrame, triggers: pd.DataFrame, state: str) -> str:
    """One line on why ``state``'s share changed, from cells of ``states`` and ``triggers``
    only (as :func:`summary_paragraphs`, whether or not the change is significant): the
    entry rate's and the dwell's ratio B / A with their Holm p, the part of the change the
    larger of the two carries (%), and the leading trigger of the change in entries with
    its verdict, share of that change (%) and Holm p. ``"state absent"`` when neither side
    has it.

    >>> st = pd.DataFrame({"state": ["Recovery"], "rate_ratio": [3.14], "rate_p_holm": [0.0005],
    ...     "dwell_ratio": [1.02], "dwell_p_holm": [0.7], "carried_by": ["entries"],
    ...     "rate_part_share": [0.96], "dwell_part_share": [0.04]})
    >>> tr = pd.DataFrame({"state": ["Recovery"], "trigger": ["LossDetected rule=packet"],
    ...     "verdict": ["spurious"], "share_of_change": [0.94], "p_holm": [0.0005]})
    >>> why_line(st, tr, "Recovery")
    'entries x3.1 (p 0.0005), dwell x1 (p 0.7): entries carry 96%; lead: LossDetected rule=packet, spurious (94% of the change in entries, p 0.0005)'
    """
    mine = states[states["state"] == state]
    if not len(mine):
        return "state absent"
    row: Any = next(mine.itertuples(index=False))
    words = f"entries {_ratio_cell(row.rate_ratio, row.rate_p_holm)}, dwell " + _ratio_cell(
        row.dwell_ratio, row.dwell_p_holm
    )
    if np.isfinite(row.rate_part_share):
        entries = row.carried_by == "entries"
        share = row.rate_part_share if entries else row.dwell_part_share
        words += f": {'entries carry' if entries else 'dwell carries'} {100 * share:.0f}%"
    lead = _lead_trigger(triggers, state)
    if lead is not None:
        verdict = f", {lead.verdict}" if lead.verdict else ""
        words += (
            f"; lead: {lead.trigger}{verdict} ({100 * lead.share_of_change:.0f}% of the change "
            f"in entries, p {_g(lead.p_holm)})"
        )
    return words


def _ratio_cell(ratio: float, p: float) -> str:
    """``x<ratio> (p <p>)`` (2 significant digits), ``on one side only`` for an infinite or
    undefined ratio."""
    return f"x{_g(ratio)} (p {_g(p)})" if np.isfinite(ratio) else "on one side only"


def _after(trigger: str) -> str:
    """An entry's trigger as words: ``after <event>`` (triggers by state are so already)."""
    return trigger if trigger.startswith(("after ", "trace start")) else f"after {trigger}"


def _ratio_words(ratio: float, p: float, alpha: float, shown: Callable[[float], str] = _g) -> str:
    if not np.isfinite(ratio):
        return "on one side only"
    verdict = "" if np.isfinite(p) and p < alpha else ", not significant"
    return f"x{_g(ratio)} (p {shown(p)}{verdict})"


def _lead_trigger(triggers: pd.DataFrame, state: str) -> Any:
    """The trigger with the largest share of the state's change in entries (None if none)."""
    mine = triggers[(triggers["state"] == state) & np.isfinite(triggers["share_of_change"])]
    if not len(mine):
        return None
    return next(
        mine.sort_values("share_of_change", ascending=False, kind="stable").itertuples(index=False)
    )
