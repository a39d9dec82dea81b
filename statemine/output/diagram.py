"""Drawing state machines: DOT text, and SVG/PNG through Graphviz, in the style of
Figure 13 of "Taking a Long Look at QUIC" (IMC 2017): each state shows its share of time
in red under its name; each edge shows its transition probability in black.

Every label is the HTML-escaped display form of the name (:mod:`statemine.escape`:
control characters made visible, shortened past 80 characters; node ids are generated,
never taken from input), so any state name from an untrusted log -- empty, NUL, escape
sequences, 200 KB -- renders and cannot break the DOT or inject markup into the SVG.
Graphviz failures are :class:`StatemineError` (one line), never a traceback.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Union

from ..errors import StatemineError
from ..escape import DISPLAY_CHARS, html_text, one_line
from ..fileio import write_atomic
from ..parse.statenames import is_derived
from ..stats.tables import INITIAL, TERMINAL

if TYPE_CHECKING:  # networkx loads only where a graph is made (~0.14 s of CPU)
    import networkx as nx

    from ..infer.observed import ModelGraph

#: A model graph: networkx's, or the observed model's own (:class:`~statemine.infer.observed.ModelGraph`).
Graph = Union["nx.DiGraph", "ModelGraph"]

FORMATS = ("dot", "svg", "png")
#: Longest shown title (characters).
TITLE_CHARS = 200
#: Most states drawn as a diagram (Graphviz's layout time grows faster than the graph:
#: ~3 s at 1,000 states here, more than 8 minutes at 10,000); larger models get DOT only.
DRAWN_STATES = 1000
#: Longest time Graphviz may take to lay out one diagram (seconds).
GRAPHVIZ_TIMEOUT_S = 300.0


def format_fraction(fraction: float | None) -> str:
    """A time fraction as the figure prints it: whole percent from 1% up, one decimal
    below (as the tables show it: 0.5% is not rounded up to 1%), ``<0.1%`` for a small
    non-zero share.

    >>> format_fraction(0.583), format_fraction(0.005), format_fraction(0.0004), format_fraction(0.0)
    ('58%', '0.5%', '<0.1%', '0%')
    """
    if fraction is None or (isinstance(fraction, float) and math.isnan(fraction)):
        return "n/a"
    if fraction == 0 or fraction >= 0.0095:
        return f"{round(fraction * 100):.0f}%"
    if fraction < 0.0005:
        return "<0.1%"
    return f"{fraction:.1%}"


def format_probability(probability: float) -> str:
    """An edge probability with two decimals (``<.01`` for small non-zero).

    >>> format_probability(0.4349), format_probability(0.001), format_probability(1.0)
    ('0.43', '<.01', '1.00')
    """
    if 0 < probability < 0.005:
        return "<.01"
    return f"{probability:.2f}"


def to_dot(G: Graph, *, title: str | None = None, min_probability: float = 0.0) -> str:
    """The DOT text of a model graph (observed-state or Synoptic).

    Node label: the ``label`` attribute (else the node name); a ``time_fraction``
    attribute is shown in red under it. Edge label: ``probability`` (black), with the
    count in grey when present. Edges below ``min_probability`` are left out.

    >>> import networkx as nx
    >>> G = nx.DiGraph(); G.add_node("Recovery", time_fraction=0.25); G.add_edge("INITIAL", "Recovery", probability=1.0)
    >>> 'color="red">25%' in to_dot(G)
    True
    """
    ids = {node: f"n{i}" for i, node in enumerate(_ordered_nodes(G))}
    lines = [
        "digraph statemine {",
        '  graph [rankdir=TB, fontname="Helvetica"];',
        '  node [fontname="Helvetica", shape=box, style=rounded];',
        '  edge [fontname="Helvetica"];',
    ]
    if title:
        lines.append(f'  labelloc="t"; label=<{html_text(title, TITLE_CHARS)}>;')
    for node, nid in ids.items():
        attrs = G.nodes[node]
        name = html_text(attrs.get("label", node), DISPLAY_CHARS)
        if node == INITIAL or attrs.get("kind") == "initial":
            lines.append(
                f'  {nid} [label=<{name}>, shape=box, style="filled", fillcolor="#eeeeee"];'
            )
        elif node == TERMINAL or attrs.get("kind") == "terminal":
            lines.append(f'  {nid} [label=<{name}>, shape=diamond, style=""];')
        else:
            extra = ""
            if "time_fraction" in attrs:
                extra = f'<br/><font color="red">{html_text(format_fraction(attrs["time_fraction"]))}</font>'
            # a state derived from metrics (qlog without state events): dashed outline
            style = ', style="rounded,dashed"' if is_derived(node) else ""
            lines.append(f"  {nid} [label=<<b>{name}</b>{extra}>{style}];")
    for src, dst, attrs in sorted(G.edges(data=True), key=lambda e: (ids[e[0]], ids[e[1]])):
        p = attrs.get("probability")
        if p is not None and p < min_probability:
            continue
        label = html_text(format_probability(p)) if p is not None else ""
        if "count" in attrs:
            label += f'<br/><font point-size="9" color="gray40">n={int(attrs["count"])}</font>'
        width = 1.0 + 2.0 * (p if p is not None else 0.0)
        lines.append(f"  {ids[src]} -> {ids[dst]} [label=<{label}>, penwidth={width:.2f}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def graphviz_available() -> bool:
    """Whether Graphviz's ``dot`` program is on PATH (needed for SVG/PNG)."""
    return shutil.which("dot") is not None


def dot_to(dot: str, fmt: str, *, timeout_s: float = GRAPHVIZ_TIMEOUT_S) -> bytes:
    """Lay out DOT text with Graphviz into ``fmt`` (``svg`` or ``png``) bytes.

    Raises :class:`StatemineError` with one line (Graphviz's last message) when Graphviz
    is missing, fails, or takes longer than ``timeout_s`` seconds.
    """
    import subprocess

    if fmt not in ("svg", "png"):
        raise ValueError(f"format must be svg or png, not {fmt!r}")
    dot_program = shutil.which("dot")
    if dot_program is None:
        raise StatemineError("Graphviz's 'dot' program is not installed (apt-get install graphviz)")
    try:
        done = subprocess.run(
            [dot_program, f"-T{fmt}"],
            input=dot.encode("utf-8"),
            capture_output=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        raise StatemineError(
            f"Graphviz took longer than {timeout_s:g} s to lay out the diagram "
            "(too many states?); use --no-svg"
        ) from None
    except OSError as exc:
        raise StatemineError(f"cannot run Graphviz's dot: {exc.strerror or exc}") from None
    if done.returncode != 0 or not done.stdout:
        said = [
            line for line in done.stderr.decode("utf-8", "replace").splitlines() if line.strip()
        ]
        reason = one_line(said[-1].strip()[:300]) if said else f"exit status {done.returncode}"
        raise StatemineError(f"Graphviz failed to lay out the diagram: {reason}")
    return done.stdout


def render(
    G: Graph, path: str | Path, *, title: str | None = None, min_probability: float = 0.0
) -> Path:
    """Write the model to ``path``; the suffix (.dot, .svg, .png) chooses the format."""
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {path.suffix!r}; use one of {FORMATS}")
    dot = to_dot(G, title=title, min_probability=min_probability)
    return write_atomic(path, dot if fmt == "dot" else dot_to(dot, fmt))


def _ordered_nodes(G: Graph) -> list:
    """INITIAL first, TERMINAL last, the rest by name (stable, reproducible output)."""
    middle = sorted((n for n in G.nodes if n not in (INITIAL, TERMINAL)), key=str)
    return ([INITIAL] if INITIAL in G else []) + middle + ([TERMINAL] if TERMINAL in G else [])
