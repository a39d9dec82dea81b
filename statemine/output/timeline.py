"""One connection over time: the congestion window (and bytes in flight) with the
background shaded by the controller's state, like the congestion-window figures of
"Taking a Long Look at QUIC" (IMC 2017); and throughput over time.

Data functions (:func:`state_spans`, :func:`metric_series`, :func:`throughput_series`)
return tidy frames with times in seconds from the trace's first line; the plotting
functions draw them on matplotlib Figures made without pyplot (no window, no global state).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from ..errors import UsageError
from ..stats.options import StatsOptions
from ..stats.summary import trace_state_times, visits
from ..stats.visits import trace_ends
from ..traces import TraceSet

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: A matplotlib colour: a name or hex string, or RGBA in [0, 1].
Colour = str | tuple[float, float, float, float]

#: Fixed colours of the common states, so every plot shades a state alike.
STATE_COLOURS = {
    "Init": "#bdbdbd",
    "SlowStart": "#a6cee3",
    "ConservativeSlowStart": "#cab2d6",
    "CongestionAvoidance": "#b2df8a",
    "CongestionAvoidanceMaxed": "#33a02c",
    "ApplicationLimited": "#fdbf6f",
    "Recovery": "#fb9a99",
    "RetransmissionTimeout": "#e31a1c",
    "TailLossProbe": "#ff7f00",
    "ProbeTimeout": "#6a3d9a",
    "PersistentCongestion": "#b15928",
}
#: Keys of ``fields`` read as a cumulative count of bytes delivered/acknowledged.
COUNTER_KEYS = ("delivered", "bytes_acked", "acked")


def state_colour(state: str, others: list[str]) -> Colour:
    """The shading colour of ``state``; states outside :data:`STATE_COLOURS` take a tab20
    colour by their rank in ``others`` (the sorted unknown states of the plot)."""
    if state in STATE_COLOURS:
        return STATE_COLOURS[state]
    from matplotlib import colormaps

    return colormaps["tab20"](others.index(state) % 20) if state in others else "#eeeeee"


def pick_trace(ts: TraceSet, rule: Literal["median", "longest"] = "median") -> str:
    """A representative trace id: the one of median duration (or the longest), a trace
    lasting from its first line to its end (:func:`~statemine.stats.visits.trace_ends`:
    its Close line, else its last line).

    >>> ts = TraceSet.from_events(pd.DataFrame({"trace": ["a", "a", "b", "b", "c", "c"],
    ...     "time": [0, 1, 0, 5, 0, 3.0], "state": ["SlowStart", "Recovery"] * 3}))
    >>> pick_trace(ts), pick_trace(ts, "longest")
    ('c', 'b')
    """
    if ts.n_traces == 0:
        raise UsageError("the trace set is empty: no trace to plot")
    times = ts.events.groupby("trace", observed=True)["time"]
    first, last = times.min(), times.max()
    explicit = ts.traces.set_index("trace")["end"].reindex(first.index).to_numpy(float)
    return span_pick(
        first.index.astype(str), first.to_numpy(float), last.to_numpy(float), explicit, rule
    )


def span_pick(
    ids: np.ndarray | pd.Index,
    first: np.ndarray,
    last: np.ndarray,
    explicit: np.ndarray,
    rule: Literal["median", "longest"] = "median",
) -> str:
    """:func:`pick_trace` from per-trace arrays (traces in the set's order): ids, first and
    last line's seconds, explicit end (seconds, NaN when none).

    >>> span_pick(np.array(["a", "b", "c"]), np.zeros(3), np.array([1.0, 5, 3]), np.full(3, np.nan))
    'c'
    """
    end = trace_ends(explicit, last, "close")
    span = pd.Series(end - first, index=ids).sort_values(kind="stable")
    if rule == "longest":
        return str(span.index[-1])
    if rule != "median":
        raise UsageError(f"rule must be 'median' or 'longest', not {rule!r}")
    return str(span.index[(len(span) - 1) // 2])


def representative_trace(
    ts: TraceSet, state: str, *, options: StatsOptions | None = None
) -> tuple[str, float]:
    """``(trace id, its share)``: the trace whose own share of time in ``state`` (0..1) is
    the median of ``ts``'s traces (the lower median for an even count; ties by trace id),
    so a timeline of it shows what a typical trace of the set does in that state. Traces
    lasting 0 s are left out. The shares are the per-trace seconds of the statistics
    (:func:`~statemine.stats.summary.trace_state_times`, visits made by ``options``).

    >>> ts = TraceSet.from_events(pd.DataFrame({"trace": list("aabbcc"), "time": [0, 1, 0, 3, 0, 1.0],
    ...     "state": ["Recovery", "SlowStart", "Recovery", "SlowStart", "SlowStart", "Recovery"]}))
    >>> representative_trace(ts, "Recovery")   # shares a 1.0, b 1.0, c 0.0
    ('a', 1.0)
    """
    if ts.n_traces == 0:
        raise UsageError("the trace set is empty: no trace to plot")
    return share_pick(trace_state_times(ts, options), state)


def share_pick(times: pd.DataFrame, state: str) -> tuple[str, float]:
    """:func:`representative_trace` from the set's seconds per trace (rows, index: trace
    ids, in the set's order) and state (columns, named).

    >>> share_pick(pd.DataFrame({"Recovery": [1.0, 3, 0], "SlowStart": [0.0, 0, 1]}, index=list("abc")), "Recovery")
    ('a', 1.0)
    """
    total = times.sum(axis=1)
    times = times[total > 0]
    if times.empty:
        raise UsageError("every trace lasts 0 s: no trace to plot")
    share = (times[state] if state in times.columns else pd.Series(0.0, index=times.index)) / total[
        total > 0
    ]
    return median_share(share.index.astype(str).to_numpy(), share.to_numpy())


def median_share(ids: np.ndarray, share: np.ndarray) -> tuple[str, float]:
    """The trace (of ``ids``) whose ``share`` is the median (the lower one of an even
    count), ties by id: ``(id, share)``.

    >>> median_share(np.array(["b", "a", "c"]), np.array([0.5, 0.5, 0.9]))
    ('b', 0.5)
    """
    order = pd.DataFrame({"share": share, "trace": ids}).sort_values(
        ["share", "trace"], kind="stable"
    )
    pick = order.iloc[(len(order) - 1) // 2]
    return str(pick["trace"]), float(pick["share"])


def _one(ts: TraceSet, trace: str) -> TraceSet:
    """The sub-set of one trace (a UsageError naming a few known ids when it is absent)."""
    trace = str(trace)
    known = ts.traces["trace"].astype(str)
    if not (known == trace).any():
        raise UsageError(f"no trace {trace!r} in the set (e.g. {', '.join(known.head(5))})")
    ev = ts.events[ts.events["trace"].astype(str) == trace]
    metrics = (
        None
        if ts.metrics is None
        else ts.metrics[ts.metrics["trace"].astype(str) == trace].reset_index(drop=True)
    )
    return TraceSet(
        ev.reset_index(drop=True),
        ts.traces[known == trace].reset_index(drop=True),
        ts.meta,
        metrics,
    )


def _origin(one: TraceSet) -> float:
    return float(one.events["time"].min()) if len(one.events) else 0.0


def state_spans(ts: TraceSet, trace: str, *, options: StatsOptions | None = None) -> pd.DataFrame:
    """The state visits of one trace: ``state, start, end`` in seconds from its first line
    (:func:`~statemine.stats.summary.visits`, made by ``options``' rules: ``end``,
    ``collapse_repeats``).

    >>> ts = TraceSet.from_events(pd.DataFrame({"trace": "a", "time": [10.0, 11.0, 14.0],
    ...     "state": ["SlowStart", "Recovery", "SlowStart"]}))
    >>> state_spans(ts, "a").values.tolist()
    [['SlowStart', 0.0, 1.0], ['Recovery', 1.0, 4.0], ['SlowStart', 4.0, 4.0]]
    """
    one = _one(ts, trace)
    v = visits(one, options)
    t0 = _origin(one)
    return pd.DataFrame(
        {"state": v["state"].astype(str), "start": v["start"] - t0, "end": v["end"] - t0}
    )


def metric_series(ts: TraceSet, trace: str, column: str) -> pd.DataFrame:
    """``time`` (seconds from the trace's first line) and ``value`` of a numeric column
    (``cwnd``, ``inflight``, ``ssthresh`` in bytes; ``srtt`` in seconds) where logged: every
    metrics update from the set's metrics table where it has one (qlog), else the values
    carried on the trace's rows. Empty when the trace never logs it."""
    one = _one(ts, trace)
    if one.metrics is not None and column in one.metrics.columns and len(one.metrics):
        m = one.metrics[one.metrics[column].notna() & np.isfinite(one.metrics[column])]
        return pd.DataFrame(
            {
                "time": (m["time"] - _origin(one)).to_numpy(),
                "value": m[column].to_numpy(dtype=float),
            }
        )
    if column not in one.events.columns:
        return pd.DataFrame({"time": pd.Series(dtype=float), "value": pd.Series(dtype=float)})
    ev = one.events[one.events[column].notna() & np.isfinite(one.events[column])]
    return pd.DataFrame(
        {"time": (ev["time"] - _origin(one)).to_numpy(), "value": ev[column].to_numpy(dtype=float)}
    )


def throughput_series(ts: TraceSet, trace: str, *, bin_s: float = 0.1) -> tuple[pd.DataFrame, str]:
    """Throughput over time of one trace, bits per second, in bins of ``bin_s`` seconds.

    Uses a cumulative byte counter from ``fields`` (:data:`COUNTER_KEYS`) when the trace
    logs one: rate = 8 x bytes delivered in the bin / ``bin_s``. Otherwise, when ``cwnd`` and
    ``srtt`` are logged, the window-limited rate ``8 cwnd / srtt`` (an estimate: the sender
    may send less). Returns ``(frame with time, bps; method name)``; a UsageError when the
    trace logs neither.
    """
    if bin_s <= 0:
        raise UsageError(f"bin_s must be > 0, not {bin_s}")
    one = _one(ts, trace)
    ev = one.events
    t0 = _origin(one)
    if "fields" in ev.columns:
        for key in COUNTER_KEYS:
            raw = ev["fields"].astype(str).str.extract(rf"(?:^|\s){key}=(\S+)", expand=False)
            value = pd.to_numeric(raw, errors="coerce")
            ok = value.notna()
            if ok.sum() >= 2:
                return _binned_rate(
                    (ev["time"][ok] - t0).to_numpy(), value[ok].to_numpy(float), bin_s
                ), key
    cwnd, srtt = metric_series(ts, trace, "cwnd"), metric_series(ts, trace, "srtt")
    if len(cwnd) and len(srtt):
        both = pd.merge_asof(cwnd, srtt.rename(columns={"value": "srtt"}), on="time")
        both = both[both["srtt"] > 0]
        return pd.DataFrame(
            {"time": both["time"], "bps": 8 * both["value"] / both["srtt"]}
        ), "cwnd/srtt"
    raise UsageError(
        f"trace {trace!r} logs no byte counter ({', '.join(k + '=' for k in COUNTER_KEYS)}) "
        "and not both cwnd and srtt: no throughput over time"
    )


def _binned_rate(time: np.ndarray, counter: np.ndarray, bin_s: float) -> pd.DataFrame:
    """Rate (bit/s) per bin from a cumulative byte counter sampled at ``time`` (seconds)."""
    edges = np.arange(0.0, time.max() + bin_s, bin_s)
    at_edges = np.interp(edges, time, np.maximum.accumulate(counter))
    return pd.DataFrame({"time": edges[:-1], "bps": 8 * np.diff(at_edges) / bin_s})


def plot_cwnd(
    ts: TraceSet,
    trace: str | None = None,
    *,
    inflight: bool = True,
    ssthresh: bool = False,
    events: bool = True,
    options: StatsOptions | None = None,
    title: str | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Congestion window (kB) over time, background shaded by state, for one trace
    (default: :func:`pick_trace`). Bytes in flight and ssthresh when asked and logged;
    ``events`` marks point events (losses) under the curve; ``options`` make the visits
    (:func:`state_spans`). Returns the Figure."""
    from matplotlib.patches import Patch

    trace = pick_trace(ts) if trace is None else str(trace)
    fig, ax = _axes(ax)
    spans = state_spans(ts, trace, options=options)
    handles = _shade(ax, spans)
    lines = []
    metrics: tuple[tuple[str, bool, dict[str, Any]], ...] = (
        ("cwnd", True, {"color": "black", "lw": 1.4}),
        ("inflight", inflight, {"color": "#555555", "lw": 0.8, "ls": "--"}),
        ("ssthresh", ssthresh, {"color": "#8c510a", "lw": 0.8, "ls": ":"}),
    )
    for column, on, style in metrics:
        s = metric_series(ts, trace, column)
        if on and len(s):
            end_t = max(float(spans["end"].max()) if len(spans) else 0.0, float(s["time"].max()))
            x = np.r_[s["time"].to_numpy(), end_t]
            y = np.r_[s["value"].to_numpy(), s["value"].iloc[-1]] / 1000.0
            lines += ax.step(x, y, where="post", label=f"{column} (kB)", **style)
    if events:
        _mark_events(ax, ts, trace)
    if not lines:
        ax.text(0.5, 0.5, "this trace logs no cwnd", transform=ax.transAxes, ha="center")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("kB")
    ax.set_ylim(bottom=0)
    ax.set_title(title if title is not None else f"trace {trace}")
    ax.set_xlim(0, max(float(spans["end"].max()) if len(spans) else 1.0, 1e-9))
    legend: list[Artist] = [*lines, *(Patch(color=c, alpha=0.5, label=s) for s, c in handles)]
    ax.legend(
        handles=legend,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
        frameon=False,
    )
    return fig


def plot_throughput(
    ts: TraceSet,
    trace: str | None = None,
    *,
    bin_s: float = 0.1,
    title: str | None = None,
    options: StatsOptions | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Throughput (Mbit/s) over time for one trace (see :func:`throughput_series`), over the
    same state shading as :func:`plot_cwnd`. Returns the Figure."""
    trace = pick_trace(ts) if trace is None else str(trace)
    series, method = throughput_series(ts, trace, bin_s=bin_s)
    fig, ax = _axes(ax)
    _shade(ax, state_spans(ts, trace, options=options))
    ax.step(series["time"], series["bps"] / 1e6, where="post", color="black", lw=1.2)
    ax.set_ylabel(
        "cwnd/srtt (Mbit/s, estimate)"
        if method == "cwnd/srtt"
        else f"throughput (Mbit/s, {bin_s:g} s bins)"
    )
    ax.set_xlabel("time (s)")
    ax.set_title(title if title is not None else f"trace {trace}")
    return fig


def root_figure(ax: Axes) -> Figure:
    """The figure ``ax`` is drawn in (the top one when it sits in a subfigure)."""
    from matplotlib.figure import Figure

    fig = ax.figure
    return fig if isinstance(fig, Figure) else fig.figure


def _axes(ax: Axes | None) -> tuple[Figure, Axes]:
    if ax is not None:
        return root_figure(ax), ax
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.2), layout="constrained")
    return fig, fig.add_subplot()


def _shade(ax: Axes, spans: pd.DataFrame) -> list[tuple[str, Colour]]:
    """Shade each span's x range by its state: one PolyCollection per state (fast for many
    visits). Returns ``[(state, colour)]`` in order of first appearance, for the legend."""
    from matplotlib.collections import PolyCollection

    order = list(pd.unique(spans["state"]))
    others = sorted(s for s in order if s not in STATE_COLOURS)
    out: list[tuple[str, Colour]] = []
    for state in order:
        part = spans[spans["state"] == state]
        x0, x1 = part["start"].to_numpy(), part["end"].to_numpy()
        verts = np.stack(
            [
                np.c_[x0, np.zeros_like(x0)],
                np.c_[x1, np.zeros_like(x1)],
                np.c_[x1, np.ones_like(x1)],
                np.c_[x0, np.ones_like(x0)],
            ],
            axis=1,
        )
        colour = state_colour(state, others)
        ax.add_collection(
            PolyCollection(
                list(verts),
                facecolors=colour,
                edgecolors="none",
                alpha=0.5,
                transform=ax.get_xaxis_transform(),
                zorder=0,
            ),
            autolim=False,
        )
        out.append((state, colour))
    return out


def _mark_events(ax: Axes, ts: TraceSet, trace: str) -> None:
    one = _one(ts, trace)
    ev = one.events[(one.events["kind"] == "event") & (one.events["state"] != "Close")]
    if len(ev):
        ax.plot(
            ev["time"] - _origin(one),
            np.zeros(len(ev)),
            "|",
            color="#b2182b",
            ms=10,
            transform=ax.get_xaxis_transform(),
            label="events",
            clip_on=False,
        )


__all__ = [
    "STATE_COLOURS",
    "median_share",
    "metric_series",
    "pick_trace",
    "plot_cwnd",
    "plot_throughput",
    "representative_trace",
    "state_colour",
    "state_spans",
    "throughput_series",
]
