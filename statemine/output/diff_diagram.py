"""The two-sided diagram of a :class:`~statemine.compare.DiffResult`: one state machine whose
nodes and edges carry both sides' Figure-13 numbers (time fraction in red under the state
name, edge probability in black, each written ``A | B``), coloured and widened by change.

Only significant changes are emphasised: a significant increase (B more than A) is red, a
decrease blue, with the line width growing with ``|delta|``; everything else is thin grey.
States whose traces are pseudo-replicates say "identical runs"; the legend says when the
comparison is underpowered.
States and edges seen on one side only are dashed (only in A) or dotted (only in B).
Node ids are generated and every label is the HTML-escaped display form of the name
(:mod:`statemine.escape`), so names from logs cannot break the DOT or inject markup.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..escape import DISPLAY_CHARS, html_text
from ..fileio import write_atomic
from ..stats.tables import INITIAL, TERMINAL
from ..units import p_value_report
from .diagram import dot_to, format_fraction, format_probability

if TYPE_CHECKING:
    from ..compare import DiffResult

UP, DOWN, NEUTRAL = "#b2182b", "#2166ac", "gray55"
UP_FILL, DOWN_FILL = "#fbe3de", "#dde9f5"
STYLE_OF_PRESENCE = {"both": "", "only_a": "dashed", "only_b": "dotted"}


def diff_to_dot(result: DiffResult, *, title: str | None = None) -> str:
    """DOT text of the two-sided diagram of ``result`` (a :class:`~statemine.compare.DiffResult`).

    >>> import numpy as np, pandas as pd
    >>> from statemine.compare import diff
    >>> from statemine.traces import TraceSet
    >>> ev = lambda p, d: pd.DataFrame({"trace": [f"{p}{i}" for i in range(4) for _ in range(2)],
    ...     "time": [t for i in range(4) for t in (0.0, d + i)], "state": ["SlowStart", "Recovery"] * 4})
    >>> dot = diff_to_dot(diff(TraceSet.from_events(ev("a", 1)), TraceSet.from_events(ev("b", 9)), n_perm=50))
    >>> dot.startswith("digraph statemine_diff {") and "SlowStart" in dot
    True
    """
    states, trans = result.states, result.transitions
    names = sorted(set(states["state"]))
    ids = {INITIAL: "init", TERMINAL: "term", **{name: f"s{i}" for i, name in enumerate(names)}}
    lines = [
        "digraph statemine_diff {",
        '  graph [rankdir=TB, fontname="Helvetica", labelloc="b"];',
        '  node [fontname="Helvetica", shape=box, style="rounded"];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    lines.append(f"  label=<{_legend(result, title)}>;")
    used = set(trans["src"]) | set(trans["dst"])
    if INITIAL in used:
        lines.append(f'  {ids[INITIAL]} [label=<{INITIAL}>, style="filled", fillcolor="#eeeeee"];')
    if TERMINAL in used:
        lines.append(f'  {ids[TERMINAL]} [label=<{TERMINAL}>, shape=diamond, style=""];')
    row: Any  # a frame row: pandas-stubs types every field as any scalar
    for row in states.sort_values("state").itertuples(index=False):
        numbers = f"{format_fraction(row.fraction_a)} | {format_fraction(row.fraction_b)}"
        colour, width = _emphasis(row.delta, row.significant)
        fill = (UP_FILL if row.delta > 0 else DOWN_FILL) if row.significant else "white"
        style = ",".join(
            ["rounded", "filled"]
            + ([STYLE_OF_PRESENCE[row.presence]] if row.presence != "both" else [])
        )
        copies = (
            f'<br/><font color="{NEUTRAL}" point-size="9">identical runs</font>'
            if row.pseudo_replicates
            else ""
        )
        lines.append(
            f'  {ids[row.state]} [label=<<b>{_esc(row.state)}</b><br/><font color="red">{_esc(numbers)}</font>{copies}>, '
            f'color="{colour}", penwidth={width:.2f}, style="{style}", fillcolor="{fill}"];'
        )
    for row in trans.sort_values(["src", "dst"]).itertuples(index=False):
        numbers = f"{_probability(row.prob_a)} | {_probability(row.prob_b)}"
        delta = row.delta if not _isnan(row.delta) else 0.0
        colour, width = _emphasis(delta, row.significant)
        style = STYLE_OF_PRESENCE[row.presence]
        attrs = (
            f'label=<{_esc(numbers)}>, color="{colour}", fontcolor="black", penwidth={width:.2f}'
        )
        if style:
            attrs += f', style="{style}"'
        lines.append(f"  {ids[row.src]} -> {ids[row.dst]} [{attrs}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_diff(result: DiffResult, path: str | Path, *, title: str | None = None) -> Path:
    """Write the two-sided diagram to ``path`` (.dot, or .svg/.png through Graphviz), atomically."""
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower()
    if fmt not in ("dot", "svg", "png"):
        raise ValueError(f"unknown diagram format {path.suffix!r}; use .dot, .svg or .png")
    dot = diff_to_dot(result, title=title)
    return write_atomic(path, dot if fmt == "dot" else dot_to(dot, fmt))


def _emphasis(delta: float, significant: bool) -> tuple[str, float]:
    """Colour and pen width: when significant red (up) or blue (down), 1.5 pt plus 9 pt per
    unit of ``|delta|`` (an absolute scale, so diagrams compare; at most 6 pt); else grey 1 pt."""
    if not significant:
        return NEUTRAL, 1.0
    return (UP if delta > 0 else DOWN), min(6.0, 1.5 + 9.0 * abs(delta))


def _legend(result: DiffResult, title: str | None) -> str:
    a, b = _esc(result.label_a), _esc(result.label_b)
    parts = [
        f"<b>{_esc(title)}</b><br/>" if title else "",
        f"numbers: {a} | {b} (time share in red, transition probability in black)<br/>",
        f'<font color="{UP}">red</font>: significantly more in {b}, ',
        f'<font color="{DOWN}">blue</font>: significantly less (Holm, alpha={result.alpha:g}); ',
        f"width: size of the change<br/>dashed: only in {a}; dotted: only in {b}",
    ]
    if result.underpowered:
        parts.append(
            f"<br/>underpowered: the smallest possible p is {p_value_report(result.min_p_holm)} after Holm "
            f"(&gt;= alpha): no change can be significant"
        )
    if len(result.pseudo_replicated):
        parts.append(
            "<br/>identical runs: a side's traces are copies for the states so marked (never significant)"
        )
    return "".join(parts)


def _probability(p: float) -> str:
    return "-" if _isnan(p) else format_probability(float(p))


def _isnan(x: object) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _esc(text: object) -> str:
    """The escaped display form for a Graphviz HTML-like label (control characters made
    visible, shortened past :data:`~statemine.escape.DISPLAY_CHARS`)."""
    return html_text(text, DISPLAY_CHARS)


__all__ = ["diff_to_dot", "render_diff"]
