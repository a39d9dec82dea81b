"""One self-contained HTML page about one trace set, or comparing two: tables, the state
machine (or the two-sided diff diagram), cwnd timelines and outcome heatmaps.

Everything is inline (images as base64 ``data:`` URIs, CSS in a ``<style>`` element, no
script, no external reference), so the page reads offline and can be mailed. Every label
from the input (state names, trace ids, side labels, table cells) is HTML-escaped.
"""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from .. import units
from ..errors import UsageError
from ..escape import html_text
from ..fileio import write_atomic
from ..stats.options import CompareOptions, StatsOptions
from ..traces import TraceSet
from .sides import Side, traceset_side

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..compare import DiffResult

#: The page's style: a 1,100 px column (narrower windows: the window, less a margin);
#: a table wider than the column scrolls inside its own box (``.scroll``); a number with
#: its unit never wraps (``td.n``); long words (trace ids, label lists) break anywhere
#: rather than widen the page.
_CSS = """
body{font-family:Helvetica,Arial,sans-serif;margin:2em auto;padding:0 1em;max-width:1100px;color:#222;line-height:1.4;overflow-wrap:anywhere}
h1{font-size:1.6em}h2{font-size:1.25em;border-bottom:1px solid #ccc;margin-top:2em}h3{font-size:1.05em}
.scroll{overflow-x:auto;max-width:100%;margin:.5em 0}
table{border-collapse:collapse;font-size:.85em;overflow-wrap:normal}th,td{padding:.2em .6em;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{background:#f4f4f4;font-weight:600;min-width:4em}td.n,th.n{text-align:right;white-space:nowrap}td.k{white-space:nowrap}
img{max-width:100%;height:auto;border:0}.note{background:#fff7e0;border-left:4px solid #e6a700;padding:.4em .8em;margin:.3em 0}
.muted{color:#777;font-size:.85em}.evidence{background:#eef4fb;border-left:4px solid #2166ac;padding:.4em .8em}
dl.provenance{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.2em 1em;font-size:.85em}
dl.provenance dt{font-weight:600}dl.provenance dd{margin:0}code{overflow-wrap:anywhere}
"""

#: Most heatmap facets drawn (one per value of the scenario columns that are not rows/cols).
MAX_FACETS = 12
#: The report's statistics unless told otherwise: the diff's, with 1000 bootstrap resamples.
REPORT_OPTIONS = CompareOptions(n_boot=1000)


@dataclass(frozen=True)
class Outcomes:
    """How to compare outcome metrics in a report: the results table (one row per run),
    the column telling the sides apart and its value for each side, the metric, the
    heatmap axes (None: chosen from the scenario columns that vary, :func:`heatmap_axes`)
    and the significance threshold (the paper's p < 0.01)."""

    results: pd.DataFrame
    by: str
    value_a: object
    value_b: object
    metric: str = "plt_s"
    rows: str | None = None
    cols: str | None = None
    alpha: float = 0.01


def build_report(
    a: TraceSet | Side,
    b: TraceSet | Side | None = None,
    *,
    label_a: str = "A",
    label_b: str = "B",
    title: str | None = None,
    outcomes: Outcomes | None = None,
    compare: CompareOptions | None = None,
    runs: tuple[pd.DataFrame | None, pd.DataFrame | None] = (None, None),
    selections: tuple[Sequence[str], Sequence[str]] = ((), ()),
    provenance: Mapping[str, Any] | None = None,
    **changes: Any,
) -> str:
    """The HTML text of the report on ``a`` (and its comparison with ``b`` when given).

    Two trace sets also get a "Why" section (:func:`statemine.explain.explain`; ``runs``:
    each side's lab results table, the ground truth of what the path dropped).

    The statistical options (``compare`` and/or its fields as keywords; 1000 bootstrap
    resamples unless given) are those of :func:`statemine.compare.diff` (two sides) or
    :func:`statemine.stats.summary.state_stats` (one side); ``outcomes`` adds the per-cell
    outcome comparison and heatmaps. A side is a trace set, or a :class:`~.sides.Side`
    (its statistics and per-trace facts, e.g. summarized on Dask workers, made with the
    same options): both give the same page.

    ``selections``: each side's ``LABEL=VALUE`` selections, shown with its inputs and, for
    one side, in the default title; ``provenance`` (:func:`~.provenance.provenance`): the
    block that ends the page (how it was made).
    """
    opts = CompareOptions.of(compare or REPORT_OPTIONS, **changes)
    strata = list(opts.strata) or None
    title = title or default_title(label_a, label_b if b is not None else None, selections[0])
    side_a = a if isinstance(a, Side) else traceset_side(a, opts)
    side_b = b if b is None or isinstance(b, Side) else traceset_side(b, opts)
    parts = [
        f"<h1>{_e(title)}</h1>",
        _inputs_section(
            [(label_a, side_a, selections[0])]
            + ([(label_b, side_b, selections[1])] if side_b is not None else [])
        ),
    ]
    if side_b is None:
        parts.append(_single_section(side_a, label_a, opts))
        parts.append(_timeline_section([(label_a, side_a)], opts))
    else:
        from ..compare import diff_stats

        result = diff_stats(
            (side_a.partial, side_a.traces),
            (side_b.partial, side_b.traces),
            opts,
            label_a=label_a,
            label_b=label_b,
        )
        parts.append(_diff_section(result, opts.confidence))
        assert b is not None  # side_b is not None
        parts.append(_why_section(a, b, opts, label_a, label_b, runs))
        parts.append(
            _timeline_section(
                [(label_a, side_a), (label_b, side_b)],
                opts,
                state=reported_state(result),
                strata=strata,
            )
        )
    if outcomes is not None:
        parts.append(_outcome_section(outcomes))
    if provenance is not None:
        parts.append(provenance_section(provenance))
    body = "\n".join(parts)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n"
        '<p class="muted">Generated by statemine. Time fractions are pooled over traces; '
        "intervals are percentile bootstraps over traces; p-values below 0.0001 are shown as "
        "&lt; 0.0001.</p>\n</body></html>\n"
    )


def default_title(label_a: str, label_b: str | None, selections: Sequence[str] = ()) -> str:
    """The page's title unless given: the sides' labels, and for one side what was
    selected of it (a folder of many versions' traces reported for one of them).

    >>> default_title("quic-go-versions", None, ["role=server", "version=v0.65.0"])
    'statemine: quic-go-versions (role=server, version=v0.65.0)'
    >>> default_title("desktop", "mobile", ["profile=desktop"])
    'statemine: desktop vs mobile'
    """
    if label_b is not None:
        return f"statemine: {label_a} vs {label_b}"
    return f"statemine: {label_a}" + (f" ({', '.join(selections)})" if selections else "")


def write_report(
    path: str | os.PathLike, a: TraceSet | Side, b: TraceSet | Side | None = None, **options: Any
) -> Path:
    """Build the report (see :func:`build_report`) and write it to ``path`` atomically."""
    return write_atomic(Path(path), build_report(a, b, **options))


# -- sections ----------------------------------------------------------------------------
def _inputs_section(sides: Sequence[tuple[str, Side, Sequence[str]]]) -> str:
    rows = []
    for label, side, selected in sides:
        facts = side.facts
        span = (facts["last_s"] - facts["first_s"]).dropna()
        impl = ", ".join(
            sorted(
                {str(v) for v in side.traces.get("implementation", pd.Series(dtype=str)).dropna()}
            )
        )
        rows.append(
            {
                "side": label,
                "selected": " ".join(selected) or "all traces",
                "traces": _count(side.n_traces),
                "files": _count(side.traces["source"].nunique()),
                "state lines": _count(int(facts["state_lines"].sum())),
                "event lines": _count(int(facts["event_lines"].sum())),
                "median trace length": units.seconds(float(span.median()) if len(span) else None),
                "implementation": impl or "-",
            }
        )
    return "<h2>Inputs</h2>" + _table(pd.DataFrame(rows), text=("selected", "implementation"))


def _single_section(side: Side, label: str, opts: StatsOptions) -> str:
    from ..parse.statenames import is_derived
    from ..stats.tables import tables
    from .out_files import infer_files

    if side.n_traces == 0 or not side.facts["state_lines"].sum():
        raise UsageError(f"{label} has no state lines: nothing to report")
    states, trans = tables(side.partial, opts)  # one pass, one bootstrap for both tables
    files, not_drawn = infer_files(states, trans, svg=True, title=label)  # as infer --out
    figure = (
        _img(files.pop("model.svg"), "image/svg+xml", f"state machine of {label}")
        if "model.svg" in files
        else f'<p class="note">{_e(not_drawn)}</p>'
    )
    level = f"{opts.confidence:.0%}"
    shown = pd.DataFrame(
        {
            "state": states["state"],
            "share of time": states["time_fraction"].map(units.share),
            f"{level} interval": [
                units.share_interval(lo, hi)
                for lo, hi in zip(states["time_fraction_lo"], states["time_fraction_hi"])
            ],
            "mean dwell": states["dwell_mean"].map(units.seconds),
            "median dwell": states["dwell_median"].map(units.seconds),
            "visits": states["visits"].map(_count),
            "traces": states["traces"].map(_count),
        }
    )
    derived = states["state"].map(is_derived)
    if derived.any():  # a column and a note, as in states.csv; the diagram draws them dashed
        shown = shown.assign(derived=derived.map(_yes_no).to_numpy())
    return (
        "<h2>State machine</h2><p>Figure-13 style: share of time in red under each state, "
        "transition probability on each edge.</p>"
        + (
            '<p class="note">States marked &quot;(derived)&quot; (dashed) were derived from '
            "qlog metrics and packets, not logged by the stack (docs/qlog.md).</p>"
            if derived.any()
            else ""
        )
        + figure
        + _downloads(files, "statemine infer --out")
        + "<h2>States</h2>"
        + _table(shown)
        + "<h2>Transitions</h2>"
        + _table(
            pd.DataFrame(
                {
                    "from": trans["src"],
                    "to": trans["dst"],
                    "count": trans["count"].map(_count),
                    "probability": trans["probability"].map(units.probability),
                    f"{level} interval": [
                        _probability_interval(lo, hi)
                        for lo, hi in zip(trans["probability_lo"], trans["probability_hi"])
                    ],
                }
            ),
            keys=("from", "to"),
        )
    )


def _diff_section(result: DiffResult, confidence: float) -> str:
    from .out_files import diff_files

    label_a, label_b = result.label_a, result.label_b
    files = diff_files(result, svg=True, title=None)  # as diff --out
    svg = files.pop("diff.svg")
    notes = "".join(f'<p class="note">{_e(n)}</p>' for n in result.notes)
    ranking = result.ranking(None)
    top = (
        _ranking_table(ranking, label_a, label_b, confidence)
        if len(ranking)
        else "<p>No significant change.</p>"
    )
    st, tr = result.states, result.transitions
    seen = {"both": "both", "only_a": f"only {label_a}", "only_b": f"only {label_b}"}
    states = pd.DataFrame(
        {
            "state": st["state"],
            f"share of time {label_a}": st["fraction_a"].map(units.share),
            f"share of time {label_b}": st["fraction_b"].map(units.share),
            f"B - A [{confidence:.0%} CI]": [
                units.ranking_cells("state", 0.0, 0.0, d, lo, hi)[2]
                for d, lo, hi in zip(st["delta"], st["delta_lo"], st["delta_hi"])
            ],
            "p": st["p_value"].map(units.p_value_report),
            "p (Holm)": st["p_holm"].map(units.p_value_report),
            "significant": st["significant"].map(_yes_no),
            f"time {label_a}": st["time_a_s"].map(units.seconds),
            f"time {label_b}": st["time_b_s"].map(units.seconds),
            f"traces {label_a}": st["traces_a"].map(_count),
            f"traces {label_b}": st["traces_b"].map(_count),
            "seen on": st["presence"].map(lambda v: seen.get(str(v), str(v))),
            f"sd of trace shares {label_a}": st["sd_a"].map(_share_points),
            f"sd of trace shares {label_b}": st["sd_b"].map(_share_points),
            "pseudo-replicates": st["pseudo_replicates"].map(_yes_no),
            "interval collapsed": st["interval_collapsed"].map(_yes_no),
        }
    )
    trans = pd.DataFrame(
        {
            "from": tr["src"],
            "to": tr["dst"],
            f"probability {label_a}": tr["prob_a"].map(units.probability),
            f"probability {label_b}": tr["prob_b"].map(units.probability),
            "B - A": tr["delta"].map(units.probability_delta),
            "p (source)": tr["p_value"].map(units.p_value_report),
            "p (source, Holm)": tr["p_holm"].map(units.p_value_report),
            "p (edge, Holm)": tr["p_edge"].map(units.p_value_report),
            "significant": tr["significant"].map(_yes_no),
            f"count {label_a}": tr["count_a"].map(_count),
            f"count {label_b}": tr["count_b"].map(_count),
            "test": tr["test"],
            "seen on": tr["presence"].map(lambda v: seen.get(str(v), str(v))),
        }
    )
    one_sided = result.one_sided()
    return (
        "<h2>What changed</h2>"
        + notes
        + f"<p>{_e(label_a)}: {result.n_traces_a} traces; {_e(label_b)}: {result.n_traces_b} traces. "
        f"Differences are {_e(label_b)} minus {_e(label_a)}; significant at family-wise "
        f"alpha = {result.alpha:g} (Holm).</p>"
        + _evidence(result)
        + "<h3>Largest significant changes</h3>"
        + top
        + "<h3>Two-sided state machine</h3>"
        + _img(svg, "image/svg+xml", "diff diagram")
        + _downloads(files, "statemine diff --out")
        + "<h3>States</h3>"
        + '<p class="muted">p: permutation test over traces; p (Holm): adjusted over the '
        "states; sd of trace shares: the spread, in percentage points, of each trace's own "
        "share of the state.</p>"
        + _table(states)
        + "<h3>Transitions</h3>"
        + '<p class="muted">p (source): the test of the source state\'s exit probabilities; '
        "p (edge, Holm): the edge's own test, adjusted within its source.</p>"
        + _table(trans, keys=("from", "to"), text=("test",))
        + (
            "<h3>Seen on one side only</h3>" + _one_sided_table(one_sided, label_a, label_b)
            if len(one_sided)
            else ""
        )
    )


def _why_section(
    a: TraceSet | Side,
    b: TraceSet | Side,
    opts: CompareOptions,
    label_a: str,
    label_b: str,
    runs: tuple[pd.DataFrame | None, pd.DataFrame | None],
) -> str:
    """Why the changed states changed (``statemine explain``): the summary paragraphs, the
    rate/dwell split and each changed state's leading triggers."""
    if isinstance(a, Side) or isinstance(b, Side):
        return (
            "<h2>Why</h2><p>Not available for statistics summarized on Dask workers: "
            "explaining needs the events (run <code>statemine explain</code>).</p>"
        )
    from ..explain import explain, summary_paragraphs
    from .explain_md import TRIGGERS_SHOWN, rate

    why = explain(a, b, opts, label_a=label_a, label_b=label_b, runs_a=runs[0], runs_b=runs[1])
    summary = summary_paragraphs(why.states, why.triggers, opts.alpha, p=units.p_value_report)
    paragraphs = "".join(f"<p>{_e(p)}</p>" for p in summary) or (
        "<p>No state changed significantly.</p>"
    )
    changed = why.states[why.states["changed"]]
    split = pd.DataFrame(
        {
            "state": changed["state"],
            "change": changed["delta"].map(units.share_delta),
            f"entries/s {label_a}": changed["rate_a"].map(rate),
            f"entries/s {label_b}": changed["rate_b"].map(rate),
            "p entries (Holm)": changed["rate_p_holm"].map(units.p_value_report),
            f"dwell {label_a}": changed["dwell_a"].map(units.seconds),
            f"dwell {label_b}": changed["dwell_b"].map(units.seconds),
            "p dwell (Holm)": changed["dwell_p_holm"].map(units.p_value_report),
            "by entries": changed["rate_part"].map(units.share_delta),
            "by dwell": changed["dwell_part"].map(units.share_delta),
        }
    )
    triggers = why.triggers[why.triggers["state"].isin(changed["state"])]
    triggers = triggers.groupby("state", sort=False).head(TRIGGERS_SHOWN)
    shown = pd.DataFrame(
        {
            "state": triggers["state"],
            "trigger": triggers["trigger"],
            "verdict": triggers["verdict"],
            f"{label_a} /s": triggers["rate_a"].map(rate),
            f"{label_b} /s": triggers["rate_b"].map(rate),
            "p (Holm)": triggers["p_holm"].map(units.p_value_report),
            "of the change": triggers["share_of_change"].map(units.share),
            "knob": triggers["knob"],
        }
    )
    return (
        "<h2>Why</h2><p>Each changed state's share split into how often it is entered and "
        "how long a visit lasts, and the events that led into it (statemine explain).</p>"
        + paragraphs
        + (
            _table(split) + _table(shown, text=("trigger", "verdict", "knob"))
            if len(changed)
            else ""
        )
    )


def _evidence(result: DiffResult) -> str:
    """The power and pseudo-replicate verdicts of a diff, as one paragraph."""
    power = (
        f"Power: the smallest p-value these traces allow is {units.p_value_report(result.min_p)}, "
        f"{units.p_value_report(result.min_p_holm)} after Holm over the states: "
    )
    power += (
        "<b>underpowered</b>, no state can be significant."
        if result.underpowered
        else f"below alpha = {result.alpha:g}, a significant change is possible."
    )
    pseudo = result.pseudo_replicated
    copies = (
        f" <b>Pseudo-replicates</b> (a side's traces give identical shares): {_e(', '.join(pseudo))}; "
        "not tested as significant."
        if pseudo
        else " No pseudo-replicates (every tested state varies between the traces of each side)."
    )
    return f'<p class="evidence">{power}{copies}</p>'


def reported_state(result: DiffResult) -> str:
    """The state a diff is about: its largest significant state change, else its largest
    state change (``states`` is sorted by ``|delta|``)."""
    ranked = result.ranking(None)
    ranked = ranked[ranked["kind"] == "state"]
    return str(ranked["name"].iloc[0] if len(ranked) else result.states["state"].iloc[0])


def _timeline_section(
    sides: Sequence[tuple[str, Side]],
    options: StatsOptions,
    *,
    state: str | None = None,
    strata: str | Sequence[str] | None = None,
) -> str:
    """cwnd (and throughput) timelines: one trace per side (and per stratum) -- the trace of
    median length, or with ``state``, the trace whose share of ``state`` is its group's median;
    visits made by ``options`` (as the statistics)."""
    from .timeline import plot_cwnd, plot_throughput, span_pick

    how = (
        f"the trace whose share of time in {_e(state)} is the median of its group"
        if state
        else "the trace of median length"
    )
    out = [
        f"<h2>Timelines</h2><p>One connection per side, and per stratum (or implementation, when a side "
        f"mixes several) ({how}): congestion window and bytes in flight, background shaded by state.</p>"
    ]
    for label, group, side in _groups(sides, strata):
        if side.n_traces == 0:
            continue
        if state is None:
            f = side.facts
            ids = side.traces["trace"].astype(str).to_numpy()
            trace, caption = (
                span_pick(ids, f["first_s"].to_numpy(), f["last_s"].to_numpy(), side.end()),
                "",
            )
        else:
            trace, share = side.share_pick(state)
            caption = (
                f" ({state} {units.share(share)} of its time, median of {side.n_traces} traces)"
            )
        name = f"{label}{' / ' + group if group else ''}"
        if not side.facts["cwnd_lines"].sum():
            out.append(
                f'<p class="note">{_e(name)}: the traces log no cwnd; no window timeline.</p>'
            )
            continue
        out.append(f"<h3>{_e(name)}: trace {_e(trace)}{_e(caption)}</h3>")
        ts = side.fetch(trace)
        out.append(
            _img(
                _figure_svg(plot_cwnd(ts, trace, options=options, title=f"{name}: {trace}")),
                "image/svg+xml",
                f"cwnd timeline of {name}",
            )
        )
        try:
            fig = plot_throughput(ts, trace, options=options, title=f"{name}: {trace}")
        except UsageError as exc:
            out.append(f'<p class="muted">No throughput timeline: {_e(exc)}</p>')
        else:
            out.append(_img(_figure_svg(fig), "image/svg+xml", f"throughput timeline of {name}"))
    return "\n".join(out)


def _groups(
    sides: Sequence[tuple[str, Side]], strata: str | Sequence[str] | None
) -> Iterator[tuple[str, str, Side]]:
    """``(side label, stratum text or "", traces)`` per side, and per stratum when given --
    or per implementation when a side mixes several (one stack's trace would hide another's)."""
    columns = [] if strata is None else ([strata] if isinstance(strata, str) else list(strata))
    if not columns and any(
        ts.traces.get("implementation", pd.Series(dtype=str)).astype(str).nunique() > 1
        for _, ts in sides
    ):
        columns = ["implementation"]
    for label, ts in sides:
        if not columns or any(c not in ts.traces.columns for c in columns):
            yield label, "", ts
            continue
        keys = ts.traces[columns].astype(str).drop_duplicates().sort_values(columns)
        for key in keys.itertuples(index=False):
            where = dict(zip(columns, key))
            yield label, ", ".join(f"{c}={v}" for c, v in where.items()), ts.select(where)


def _outcome_section(o: Outcomes) -> str:
    from ..outcomes import OUTCOME_TABLE_COLUMNS, compare_outcomes
    from .heatmap import heatmap

    table = compare_outcomes(
        o.results, by=o.by, a=o.value_a, b=o.value_b, metric=o.metric, alpha=o.alpha
    )
    out = [
        f"<h2>Outcomes: {_e(o.metric)}</h2><p>Per scenario cell: percent difference of the mean "
        f"({_e(o.value_b)} vs {_e(o.value_a)}) and Welch's t-test; coloured when p &lt; {o.alpha:g}, "
        "white (n.s.) otherwise. A cell whose runs on a side are identical (copies of one run) "
        'gets no test ("no test").</p>'
    ]
    cells = [c for c in table.columns if c not in OUTCOME_TABLE_COLUMNS]
    axes = heatmap_axes(table, cells, o.rows, o.cols)
    if isinstance(axes, str):  # axes asked for that cannot be drawn
        out.append(f'<p class="note">No heatmap: {_e(axes)}.</p>')
    elif axes is not None:
        rows, cols = axes
        facets = [c for c in cells if c not in axes]
        groups = list(table.groupby(facets, sort=True, dropna=False)) if facets else [((), table)]
        for key, part in groups[:MAX_FACETS]:
            key = key if isinstance(key, tuple) else (key,)
            name = ", ".join(f"{c}={v}" for c, v in zip(facets, key))
            fig = heatmap(
                part, rows=rows, cols=cols, title=name or None, label=f"% difference in {o.metric}"
            )
            out.append(_img(_figure_svg(fig), "image/svg+xml", f"heatmap {name}"))
        if len(groups) > MAX_FACETS:
            out.append(
                f'<p class="note">{len(groups) - MAX_FACETS} more heatmaps left out; see the table.</p>'
            )
    out.append(_outcome_table(table, cells, o))
    return "\n".join(out)


#: Heatmap axes tried first when they vary: the paper's bottleneck rate (rows) and object
#: size (columns).
PREFERRED_AXES = ("rate_mbps", "object_size_bytes")


def heatmap_axes(
    table: pd.DataFrame, cells: Sequence[str], rows: str | None = None, cols: str | None = None
) -> tuple[str, str] | str | None:
    """The (rows, cols) of the outcome heatmaps: the scenario columns among ``cells`` whose
    values vary in ``table`` -- ``rows``/``cols`` when given, else :data:`PREFERRED_AXES`
    first, then numeric columns, then the others, in the table's order. None when fewer
    than two vary (the table says it all); a reason (text) when a given axis does not vary.

    >>> t = pd.DataFrame({"stack": ["a", "b", "a", "b"], "loss": [0, 0, 0.01, 0.01],
    ...                   "object_size_bytes": [1, 1, 1, 1]})
    >>> heatmap_axes(t, ["stack", "loss", "object_size_bytes"])
    ('loss', 'stack')
    >>> heatmap_axes(t[t["loss"] == 0], ["stack", "loss"]) is None
    True
    >>> heatmap_axes(t, ["stack", "loss", "object_size_bytes"], rows="object_size_bytes")
    '--rows object_size_bytes is not a scenario column that varies (those that do: stack, loss)'
    """
    varying = [c for c in cells if table[c].astype(str).nunique() > 1]
    for flag, given in (("--rows", rows), ("--cols", cols)):
        if given is not None and given not in varying:
            return (
                f"{flag} {given} is not a scenario column that varies "
                f"(those that do: {', '.join(varying) or 'none'})"
            )

    def rank(column: str) -> tuple[int, int]:
        if column in PREFERRED_AXES:
            return 0, PREFERRED_AXES.index(column)
        return (1 if pd.api.types.is_numeric_dtype(table[column]) else 2), varying.index(column)

    free = sorted((c for c in varying if c not in (rows, cols)), key=rank)
    rows = rows if rows is not None else (free.pop(0) if free else None)
    cols = cols if cols is not None else (free.pop(0) if free else None)
    return (rows, cols) if rows is not None and cols is not None else None


def _outcome_table(table: pd.DataFrame, cells: Sequence[str], o: Outcomes) -> str:
    """The per-cell outcome comparison with each number in its unit (the metric's, from
    :data:`statemine.outcomes.METRICS`)."""
    metric = _metric_format(o.metric)
    shown = pd.DataFrame({scenario_title(c): table[c].map(_scenario_value) for c in cells})
    a, b = str(o.value_a), str(o.value_b)
    shown[f"runs {a}"] = table["n_a"].map(_count)
    shown[f"runs {b}"] = table["n_b"].map(_count)
    shown[f"mean {o.metric} {a}"] = table["mean_a"].map(metric)
    shown[f"mean {o.metric} {b}"] = table["mean_b"].map(metric)
    shown["difference of the means"] = table["pct_diff"].map(_percent_difference)
    shown["Welch t"] = table["t"].map(lambda t: units.NA if pd.isna(t) else f"{t:.2f}")
    shown["p (Welch)"] = table["p_value"].map(units.p_value_report)
    shown[f"significant (p < {o.alpha:g})"] = table["significant"].map(_yes_no)
    shown["identical runs"] = table["identical_runs"].map(_yes_no)
    shown["note"] = table["note"]
    return _table(shown, keys=[scenario_title(c) for c in cells], text=("note",))


def scenario_title(column: str) -> str:
    """A scenario column's title with its unit, from the unit suffix of its name.

    >>> scenario_title("object_size_bytes"), scenario_title("rate_mbps"), scenario_title("stack")
    ('object size (bytes)', 'rate (Mbit/s)', 'stack')
    """
    for suffix, unit in _SUFFIX_UNITS.items():
        if column.endswith(suffix) and len(column) > len(suffix):
            return f"{column[: -len(suffix)].replace('_', ' ')} ({unit})"
    return column.replace("_", " ")


#: Unit suffixes of scenario column names (docs/lab.md, ``statemine lab keys``).
_SUFFIX_UNITS = {
    "_bytes": "bytes",
    "_mbps": "Mbit/s",
    "_bps": "bit/s",
    "_ms": "ms",
    "_s": "s",
    "_pkts": "packets",
    "_packets": "packets",
}


def _scenario_value(value: object) -> str:
    """A scenario cell's value: a whole number without ``.0``, other numbers with ``:g``."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return f"{value:g}" if isinstance(value, float) else str(value)


def _metric_format(metric: str) -> Callable[[float], str]:
    """How a metric's values are shown (its unit from :data:`statemine.outcomes.METRICS`)."""
    from ..outcomes import METRICS

    unit = METRICS.get(metric)
    if unit == "s":
        return units.seconds
    if unit == "bit/s":
        return units.bit_rate
    return lambda v: units.NA if pd.isna(v) else f"{v:.4g}" + (f" {unit}" if unit else "")


def _percent_difference(value: float) -> str:
    """A percent difference of two means: ``+99.9%``."""
    return units.NA if pd.isna(value) else f"{value:+.1f}%"


# -- helpers -----------------------------------------------------------------------------
def _e(text: object) -> str:
    return html_text(text)


def _table(df: pd.DataFrame, *, keys: Sequence[str] = (), text: Sequence[str] = ()) -> str:
    """An escaped HTML table of display strings (cells already formatted through
    :mod:`statemine.units`; NaN or None shown empty) in a box that scrolls sideways when it
    is wider than the page. The first column and ``keys`` are names (left, not wrapped),
    ``text`` columns words (left, wrapped), the others numbers with their units (right,
    never wrapped)."""
    names = {str(df.columns[0]), *keys} if len(df.columns) else set()
    kinds = ["k" if str(c) in names else ("" if c in text else "n") for c in df.columns]
    head = "".join(
        f'<th class="{kind}">{_e(c)}</th>' if kind == "n" else f"<th>{_e(c)}</th>"
        for c, kind in zip(df.columns, kinds)
    )
    body = []
    for row in df.itertuples(index=False):
        cells = []
        for value, kind in zip(row, kinds):
            shown = "" if value is None or (isinstance(value, float) and value != value) else value
            cells.append(
                f'<td class="{kind}">{_e(shown)}</td>' if kind else f"<td>{_e(shown)}</td>"
            )
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def provenance_section(record: Mapping[str, Any]) -> str:
    """How the page was made (:func:`~.provenance.provenance`): the command line, the
    statemine version, the date and each input's selections and digest."""
    line = record.get("command_line")
    inputs = []
    for item in record.get("inputs", []):
        selected = " ".join(item.get("selections", [])) or "all traces"
        what = "" if item["role"] == "results" else f", selected: {_e(selected)}"
        inputs.append(
            f"<li>{_e(item['role'])}: <code>{_e(item['path'])}</code>{what}; {_e(item['kind'])}, "
            f"{_count(item['files'])} file(s), {units.byte_size(item['bytes'])}, sha256 "
            f"<code>{_e(item['sha256'])}</code></li>"
        )
    return (
        '<h2>Provenance</h2><dl class="provenance">'
        "<dt>command line</dt><dd>"
        + (
            f"<code>{_e(line)}</code>"
            if line
            else f"called from Python (statemine {_e(record.get('command', ''))})"
        )
        + "</dd>"
        f'<dt>statemine</dt><dd id="prov-version">{_e(record.get("statemine_version"))}</dd>'
        f'<dt>made (UTC)</dt><dd id="prov-date">{_e(record.get("created_utc"))}</dd>'
        f"<dt>inputs</dt><dd><ul>{''.join(inputs)}</ul>"
        f'<p class="muted">Digests: {_e(record.get("digest_method", ""))}.</p></dd></dl>'
    )


def _count(value: float | None) -> str:
    """A count (traces, visits, runs; whole, or a float from a column with gaps) as a whole
    number; missing as n/a."""
    return units.NA if value is None or value != value else str(int(value))


def _yes_no(value: object) -> str:
    """A flag as a word: ``yes`` or ``no`` (missing: empty)."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return "yes" if bool(value) else "no"


def _share_points(value: float) -> str:
    """A spread of shares (a fraction) in percentage points, unsigned: ``4.9 pp``."""
    return units.NA if pd.isna(value) else f"{100 * value:.1f} pp"


def _probability_interval(lo: float, hi: float) -> str:
    """An interval of probabilities: ``0.18-0.24`` (empty when there is none)."""
    return "" if pd.isna(lo) or pd.isna(hi) else f"{lo:.2f}-{hi:.2f}"


def _ranking_table(ranking: pd.DataFrame, label_a: str, label_b: str, confidence: float) -> str:
    """The ranking of changes with each row in its kind's units (statemine.units)."""
    rows: Iterable[Any] = ranking.itertuples(index=False)  # fields typed as any scalar
    cells = [units.ranking_cells(r.kind, r.a, r.b, r.delta, r.delta_lo, r.delta_hi) for r in rows]
    shown = pd.DataFrame(
        {
            "kind": ranking["kind"],
            "name": ranking["name"],
            label_a: [c[0] for c in cells],
            label_b: [c[1] for c in cells],
            f"B - A [{confidence:.0%} CI]": [c[2] for c in cells],
            "p (Holm)": [units.p_value_report(p) for p in ranking["p_holm"]],
        }
    )
    return _table(shown, keys=("name",))


def _one_sided_table(one_sided: pd.DataFrame, label_a: str, label_b: str) -> str:
    """Items seen on one side only: a state's share of time, a transition's probability."""
    shown = pd.DataFrame(
        {
            "kind": one_sided["kind"],
            "name": one_sided["name"],
            "seen only on": one_sided["side"],
            "share of time or probability": [
                units.share(v) if kind == "state" else units.probability(v)
                for kind, v in zip(one_sided["kind"], one_sided["share"])
            ],
            "count": one_sided["count"].map(_count),
        }
    )
    return _table(shown, keys=("name", "seen only on"))


#: The media type of each kind of file a report carries (by suffix).
_MEDIA_TYPES = {".csv": "text/csv", ".dot": "text/vnd.graphviz", ".json": "application/json"}


def _downloads(files: Mapping[str, bytes | str], command: str) -> str:
    """Links that download ``files`` (name -> content, the files ``command`` writes) from
    ``data:`` URIs, so the page carries them with no external reference."""
    links = []
    for name, content in files.items():
        uri = _data_uri(content, _MEDIA_TYPES.get(Path(name).suffix, "text/plain"))
        links.append(f'<a download="{_e(name)}" href="{uri}">{_e(name)}</a>')
    return (
        f'<p class="muted">The files <code>{_e(command)}</code> writes for these traces and '
        f"options: {' · '.join(links)}</p>"
    )


def _img(data: bytes | str, mime: str, alt: str) -> str:
    return f'<p><img alt="{_e(alt)}" src="{_data_uri(data, mime)}"></p>'


def _data_uri(content: bytes | str, mime: str) -> str:
    """``content`` (text as UTF-8) as a base64 ``data:`` URI of media type ``mime``."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def _figure_svg(fig: Figure) -> bytes:
    """The figure as SVG bytes, the same for the same figure: no creation date in the
    metadata and a fixed salt for matplotlib's clip-path and glyph ids (otherwise random),
    so one input gives one report byte for byte."""
    import matplotlib

    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "statemine"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    return buf.getvalue()


__all__ = ["Outcomes", "build_report", "reported_state", "write_report"]
