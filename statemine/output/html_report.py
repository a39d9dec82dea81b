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

_CSS = """
body{font-family:Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;color:#222;line-height:1.4}
h1{font-size:1.6em}h2{font-size:1.25em;border-bottom:1px solid #ccc;margin-top:2em}h3{font-size:1.05em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}th,td{padding:.2em .6em;border-bottom:1px solid #eee;text-align:right}
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}
img{max-width:100%;height:auto;border:0}.note{background:#fff7e0;border-left:4px solid #e6a700;padding:.4em .8em;margin:.3em 0}
.muted{color:#777;font-size:.85em}.evidence{background:#eef4fb;border-left:4px solid #2166ac;padding:.4em .8em}
"""

#: Most heatmap facets drawn (one per value of the scenario columns that are not rows/cols).
MAX_FACETS = 12
#: The report's statistics unless told otherwise: the diff's, with 1000 bootstrap resamples.
REPORT_OPTIONS = CompareOptions(n_boot=1000)


@dataclass(frozen=True)
class Outcomes:
    """How to compare outcome metrics in a report: the results table (one row per run),
    the column telling the sides apart and its value for each side, the metric, the
    heatmap axes and the significance threshold (the paper's p < 0.01)."""

    results: pd.DataFrame
    by: str
    value_a: object
    value_b: object
    metric: str = "plt_s"
    rows: str = "rate_mbps"
    cols: str = "object_size_bytes"
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
    """
    opts = CompareOptions.of(compare or REPORT_OPTIONS, **changes)
    strata = list(opts.strata) or None
    title = title or (
        f"statemine: {label_a} vs {label_b}" if b is not None else f"statemine: {label_a}"
    )
    side_a = a if isinstance(a, Side) else traceset_side(a, opts)
    side_b = b if b is None or isinstance(b, Side) else traceset_side(b, opts)
    parts = [
        f"<h1>{_e(title)}</h1>",
        _inputs_section([(label_a, side_a)] + ([(label_b, side_b)] if side_b is not None else [])),
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
        parts.append(_diff_section(result))
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
    body = "\n".join(parts)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n"
        '<p class="muted">Generated by statemine. Time fractions are pooled over traces; '
        "intervals are percentile bootstraps over traces.</p>\n</body></html>\n"
    )


def write_report(
    path: str | os.PathLike, a: TraceSet | Side, b: TraceSet | Side | None = None, **options: Any
) -> Path:
    """Build the report (see :func:`build_report`) and write it to ``path`` atomically."""
    return write_atomic(Path(path), build_report(a, b, **options))


# -- sections ----------------------------------------------------------------------------
def _inputs_section(sides: Sequence[tuple[str, Side]]) -> str:
    rows = []
    for label, side in sides:
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
                "traces": side.n_traces,
                "files": side.traces["source"].nunique(),
                "state lines": int(facts["state_lines"].sum()),
                "event lines": int(facts["event_lines"].sum()),
                "median trace length (s)": float(span.median()) if len(span) else float("nan"),
                "implementation": impl or "-",
            }
        )
    return "<h2>Inputs</h2>" + _table(pd.DataFrame(rows))


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
    shown = states[
        [
            "state",
            "time_fraction",
            "time_fraction_lo",
            "time_fraction_hi",
            "dwell_mean",
            "dwell_median",
            "visits",
            "traces",
        ]
    ]
    derived = states["state"].map(is_derived)
    if derived.any():  # a column and a note, as in states.csv; the diagram draws them dashed
        shown = shown.assign(derived=derived.to_numpy())
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
        + _table(
            shown,
            {
                **dict.fromkeys(
                    ("time_fraction", "time_fraction_lo", "time_fraction_hi"), units.share
                ),
                **dict.fromkeys(("dwell_mean", "dwell_median"), units.seconds),
            },
        )
        + "<h2>Transitions</h2>"
        + _table(
            trans,
            dict.fromkeys(("probability", "probability_lo", "probability_hi"), units.probability),
        )
    )


def _diff_section(result: DiffResult) -> str:
    from .out_files import diff_files

    label_a, label_b = result.label_a, result.label_b
    files = diff_files(result, svg=True, title=None)  # as diff --out
    svg = files.pop("diff.svg")
    notes = "".join(f'<p class="note">{_e(n)}</p>' for n in result.notes)
    ranking = result.ranking(None)
    top = (
        _ranking_table(ranking, label_a, label_b)
        if len(ranking)
        else "<p>No significant change.</p>"
    )
    states = result.states.rename(
        columns={"fraction_a": f"fraction {label_a}", "fraction_b": f"fraction {label_b}"}
    )
    trans = result.transitions.rename(
        columns={"prob_a": f"prob {label_a}", "prob_b": f"prob {label_b}"}
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
        + _table(
            states,
            {
                **dict.fromkeys(
                    (f"fraction {label_a}", f"fraction {label_b}", "sd_a", "sd_b"), units.share
                ),
                **dict.fromkeys(("delta", "delta_lo", "delta_hi"), units.share_delta),
                **dict.fromkeys(("time_a_s", "time_b_s"), units.seconds),
            },
        )
        + "<h3>Transitions</h3>"
        + _table(
            trans,
            {
                **dict.fromkeys((f"prob {label_a}", f"prob {label_b}"), units.probability),
                "delta": units.probability_delta,
            },
        )
        + ("<h3>Seen on one side only</h3>" + _one_sided_table(one_sided) if len(one_sided) else "")
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
    from ..explain import explain
    from .explain_md import TRIGGERS_SHOWN, rate

    why = explain(a, b, opts, label_a=label_a, label_b=label_b, runs_a=runs[0], runs_b=runs[1])
    paragraphs = "".join(f"<p>{_e(p)}</p>" for p in why.summary) or (
        "<p>No state changed significantly.</p>"
    )
    changed = why.states[why.states["changed"]]
    split = pd.DataFrame(
        {
            "state": changed["state"],
            "change": changed["delta"].map(units.share_delta),
            f"entries/s {label_a}": changed["rate_a"].map(rate),
            f"entries/s {label_b}": changed["rate_b"].map(rate),
            "p entries (Holm)": changed["rate_p_holm"].map(units.p_value),
            f"dwell {label_a}": changed["dwell_a"].map(units.seconds),
            f"dwell {label_b}": changed["dwell_b"].map(units.seconds),
            "p dwell (Holm)": changed["dwell_p_holm"].map(units.p_value),
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
            "p (Holm)": triggers["p_holm"].map(units.p_value),
            "of the change": triggers["share_of_change"].map(units.share),
            "knob": triggers["knob"],
        }
    )
    return (
        "<h2>Why</h2><p>Each changed state's share split into how often it is entered and "
        "how long a visit lasts, and the events that led into it (statemine explain).</p>"
        + paragraphs
        + (_table(split) + _table(shown) if len(changed) else "")
    )


def _evidence(result: DiffResult) -> str:
    """The power and pseudo-replicate verdicts of a diff, as one paragraph."""
    power = (
        f"Power: the smallest p-value these traces allow is {result.min_p:.3g}, "
        f"{result.min_p_holm:.3g} after Holm over the states: "
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
    from ..outcomes import compare_outcomes
    from .heatmap import heatmap

    table = compare_outcomes(
        o.results, by=o.by, a=o.value_a, b=o.value_b, metric=o.metric, alpha=o.alpha
    )
    out = [
        f"<h2>Outcomes: {_e(o.metric)}</h2><p>Per scenario cell: percent difference of the mean "
        f"({_e(o.value_b)} vs {_e(o.value_a)}) and Welch's t-test; coloured when p &lt; {o.alpha:g}, "
        "white (n.s.) otherwise. A cell whose runs on a side are identical (copies of one run, "
        '<code>identical_runs</code>) gets no test ("no test").</p>'
    ]
    facets = [
        c
        for c in table.columns
        if c not in (o.rows, o.cols) and c in o.results.columns and c != o.by
    ]
    if o.rows in table.columns and o.cols in table.columns:
        groups = list(table.groupby(facets, sort=True, dropna=False)) if facets else [((), table)]
        for key, part in groups[:MAX_FACETS]:
            key = key if isinstance(key, tuple) else (key,)
            name = ", ".join(f"{c}={v}" for c, v in zip(facets, key))
            fig = heatmap(
                part,
                rows=o.rows,
                cols=o.cols,
                title=name or None,
                label=f"% difference in {o.metric}",
            )
            out.append(_img(_figure_svg(fig), "image/svg+xml", f"heatmap {name}"))
        if len(groups) > MAX_FACETS:
            out.append(
                f'<p class="note">{len(groups) - MAX_FACETS} more heatmaps left out; see the table.</p>'
            )
    else:
        out.append(
            f'<p class="note">No heatmap: the scenario cells do not vary in both {_e(o.rows)} '
            f"and {_e(o.cols)}.</p>"
        )
    out.append(_table(table))
    return "\n".join(out)


# -- helpers -----------------------------------------------------------------------------
def _e(text: object) -> str:
    return html_text(text)


def _table(df: pd.DataFrame, formats: Mapping[str, Callable[[float], str]] | None = None) -> str:
    """An escaped HTML table; columns named in ``formats`` shown with their formatter
    (:mod:`statemine.units`), other float columns with 4 significant digits."""
    shown = df.copy()
    formats = formats or {}
    for col in shown.columns:
        if col in formats:
            shown[col] = shown[col].map(lambda x, f=formats[col]: "" if pd.isna(x) else f(x))
        elif pd.api.types.is_float_dtype(shown[col]):
            shown[col] = shown[col].map(lambda x: "" if pd.isna(x) else f"{x:.4g}")
    return shown.to_html(index=False, escape=True, border=0, na_rep="")


def _ranking_table(ranking: pd.DataFrame, label_a: str, label_b: str) -> str:
    """The ranking of changes with each row in its kind's units (statemine.units)."""
    rows: Iterable[Any] = ranking.itertuples(index=False)  # fields typed as any scalar
    cells = [units.ranking_cells(r.kind, r.a, r.b, r.delta, r.delta_lo, r.delta_hi) for r in rows]
    shown = pd.DataFrame(
        {
            "kind": ranking["kind"],
            "name": ranking["name"],
            label_a: [c[0] for c in cells],
            label_b: [c[1] for c in cells],
            "B - A [95% CI]": [c[2] for c in cells],
            "p (Holm)": [units.p_value(p) for p in ranking["p_holm"]],
        }
    )
    return _table(shown)


def _one_sided_table(one_sided: pd.DataFrame) -> str:
    """Items seen on one side only; ``share`` is a share of time for states and a
    transition probability for transitions."""
    shown = one_sided.copy()
    shown["share"] = [
        units.share(v) if kind == "state" else units.probability(v)
        for kind, v in zip(shown["kind"], shown["share"])
    ]
    return _table(shown)


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
