"""Readers for every model and invariant file Synoptic, Perfume and k-tails write, for
``statemine check-model``.

* ``model.dot``: Synoptic's and k-tails' edge labels (``P: 0.43, Cnt: 12``, ...) and
  Perfume's (``[0.75,1.13] 0.43``, ``64``, `` 1.00``, empty): :func:`~.formats.read_dot`
  for the former, :func:`read_any_dot` adds Perfume's time ranges as edge attributes
  ``time_lo`` / ``time_hi`` (the texts, 3 significant digits as Perfume rounds them).
* ``model.gml`` (Synoptic's ``--exportAsGML``: :func:`~.formats.to_gml`'s layout),
  :func:`read_gml`.
* ``model.lts`` (Synoptic's ``--outputLTS`` and k-tails': :func:`~.formats.to_lts`'s
  layout), :func:`read_lts`.  An LTS does not record which states end traces besides
  the ``STOP`` ones; the caller adds those the log's traces end in
  (:func:`add_trace_ends`).
* Perfume's ``model.invariants.txt`` (``Binary inv:a AlwaysFollowedBy(t) b, Constraint:
  upperbound = 12``, untimed ``a NeverFollowedBy(t) b``), :func:`read_constrained_txt`,
  as the frame :func:`~.perfume.mine_constrained` gives.

Every reader raises :class:`~...errors.InputError` naming the file and line of what it
does not understand.
"""

from __future__ import annotations

import html
import os
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import InputError
from .formats import _DOT_EDGE, _read_text, read_dot, synthetic_node
from .invariants import KINDS
from .log import INITIAL, TERMINAL

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd

_NUM = r"-?[0-9]+(?:\.[0-9]+)?(?:E[+-]?[0-9]+)?"
#: Perfume's edge label: optional time (one value or [lo,hi]), optional " P".
_PERFUME_LABEL = re.compile(rf"^(?:({_NUM})|\[({_NUM}),({_NUM})\])?(?: ([0-9]+\.[0-9]{{2}}))?$")
_DOT_ANY_EDGE = re.compile(r'^\s*(\d+)->(\d+) \[(?:label="((?:[^"\\]|\\.)*)")?\];\s*$')
_CONSTRAINED = re.compile(
    r"^Binary inv:(.*) (" + "|".join([*KINDS, "IntrBy"]) + r")\(t\) (.*), Constraint: "
    r"(lowerbound|upperbound) = (" + _NUM + r")(?:\tsupport count (\d+))?$"
)
_UNTIMED = re.compile(
    r"^(.*) (" + "|".join([*KINDS, "IntrBy"]) + r")\(t\) (.*?)(?:\tsupport count (\d+))?$"
)


def _time(text: str, path: Path, no: int) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation:
        raise InputError(path, no, f"not a time on a Perfume edge: {text!r}") from None


def read_any_dot(path: str | os.PathLike) -> nx.DiGraph:
    """A Synoptic, k-tails or Perfume ``model.dot`` as a DiGraph (node attrs ``label``,
    ``state``, ``shape``; edges ``count``/``probability`` as :func:`~.formats.read_dot`
    gives them, or Perfume's ``time_lo``/``time_hi`` Decimal texts, None on edges without
    a time).  ``graph.graph["engine"]`` is ``"perfume"`` when an edge carries a time."""
    g = read_dot(path, _perfume_edge)
    for _, _, attrs in g.edges(data=True):
        attrs.setdefault("time_lo", None)
        attrs.setdefault("time_hi", None)
        if attrs["time_lo"] is not None:
            g.graph["engine"] = "perfume"
    return g


def _perfume_edge(line: str, path: Path, no: int) -> tuple[int, int, dict]:
    """A Perfume dot edge line: its source, target and ``probability`` (NaN when not
    labelled), ``count`` -1, ``time_lo``/``time_hi`` (the label's texts, None without)."""
    m = _DOT_ANY_EDGE.match(line)
    p = _PERFUME_LABEL.match(m.group(3) or "") if m else None
    if m is None or p is None:
        raise InputError(path, no, f"not a Synoptic or Perfume dot line: {line[:80]!r}")
    lo = p.group(1) or p.group(2)
    hi = p.group(1) or p.group(3)
    if lo is not None and _time(lo, path, no) > _time(hi, path, no):
        raise InputError(path, no, f"edge time range [{lo},{hi}] is reversed")
    probability = float(p.group(4)) if p.group(4) else float("nan")
    return (
        int(m.group(1)),
        int(m.group(2)),
        dict(probability=probability, count=-1, time_lo=lo, time_hi=hi),
    )


_GML_TOKEN = re.compile(r'"[^"]*"|\[|\]|,|[^\s\[\],"]+')


def _gml_tokens(text: str) -> list[tuple[str, int]]:
    """GML tokens with their line numbers (Synoptic's ``,]`` gives a lone ``,``)."""
    out = []
    for m in _GML_TOKEN.finditer(text):
        out.append((m.group(0), text.count("\n", 0, m.start()) + 1))
    return out


def _gml_unquote(token: str) -> str:
    r"""A GML string's text: ``&#N;`` entities and Synoptic's doubled ``\``."""
    return html.unescape(token[1:-1].replace("\\\\", "\\"))


def _gml_blocks(path: Path, tokens: list[tuple[str, int]]) -> list[tuple[str, dict, int]]:
    """The ``node`` / ``edge`` blocks of a ``graph [ ... ]``: (kind, {key: value}, line);
    a nested block (``graphics [ type "oval" ]``) flattens into its parent's keys."""
    if len(tokens) < 2 or tokens[0][0] != "graph" or tokens[1][0] != "[":
        raise InputError(path, 1, "not a Synoptic GML file (no 'graph [' header)")
    out: list[tuple[str, dict, int]] = []
    i, depth = 2, 1
    current: dict | None = None
    kind, at = "", 0
    while i < len(tokens):
        tok, no = tokens[i]
        if tok == ",":
            i += 1
        elif tok == "]":
            depth -= 1
            if depth == 1 and current is not None:
                out.append((kind, current, at))
                current = None
            if depth == 0:
                if i + 1 != len(tokens):
                    raise InputError(path, tokens[i + 1][1], "text after the graph's end")
                return out
            i += 1
        elif depth == 1 and tok in ("node", "edge") and i + 1 < len(tokens):
            if tokens[i + 1][0] != "[":
                raise InputError(path, no, f"'{tok}' without a '[' block")
            kind, at, current, depth = tok, no, {}, 2
            i += 2
        elif depth >= 2 and i + 1 < len(tokens) and tokens[i + 1][0] == "[":
            depth += 1
            i += 2
        elif depth >= 2 and current is not None and i + 1 < len(tokens):
            current[tok] = tokens[i + 1][0]
            i += 2
        else:
            raise InputError(path, no, f"unexpected GML token {tok[:40]!r}")
    raise InputError(path, None, "the GML graph is not closed by ']'")


def read_gml(path: str | os.PathLike) -> nx.DiGraph:
    """A Synoptic ``model.gml`` (``--exportAsGML``) as :func:`read_any_dot` gives a dot
    file: INITIAL is the ``rectangle`` node, TERMINAL the ``rhombus`` one."""
    import networkx as nx

    path = Path(path)
    g: nx.DiGraph = nx.DiGraph(engine="synoptic")
    for kind, keys, no in _gml_blocks(path, _gml_tokens(_read_text(path))):
        try:
            if kind == "node":
                label = _gml_unquote(keys["label"])
                shape = _gml_unquote(keys.get("type", '""'))
                state = None if synthetic_node(label, shape) else label
                g.add_node(int(keys["id"]), label=label, shape=shape, state=state)
            else:
                text = _gml_unquote(keys["label"]) if "label" in keys else ""
                m = _DOT_EDGE.match(f'0->0 [label="{text}"];') if text else None
                g.add_edge(
                    int(keys["source"]),
                    int(keys["target"]),
                    probability=float(m.group(3)) if m and m.group(3) else float("nan"),
                    count=int(m.group(4)) if m and m.group(4) else -1,
                )
        except (KeyError, ValueError) as exc:
            raise InputError(path, no, f"bad GML {kind}: missing or bad {exc}") from None
    missing = [n for n in g.nodes if "label" not in g.nodes[n]]
    if missing:
        raise InputError(path, None, f"edges name undeclared nodes {missing[:5]}")
    return g


_LTS_HEAD = re.compile(r"^(\w+) = S0,$")
_LTS_STOP = re.compile(r"^S(\d+) = STOP([,.])$")
_LTS_OPEN = re.compile(r"^S(\d+) = \((.*) -> S(\d+)(\)[,.])?$")
_LTS_ALT = re.compile(r"^\s*\| (.*) -> S(\d+)(\)[,.])?$")
_LTS_TAIL = re.compile(r"^\|\|MTS_(\w+) = \((\w+)\)\.$")


def read_lts(path: str | os.PathLike) -> nx.DiGraph:
    """A ``model.lts`` (FSP, the layout of Synoptic's and k-tails' LTS export) as a
    DiGraph like :func:`read_any_dot`'s: state ``S0`` is INITIAL, every other state a node
    labelled by the event of its incoming transitions (all must agree), a ``STOP`` state
    gets an edge to TERMINAL.  ``graph.graph["stop_only_ends"]`` is True: the file does
    not say which other states end traces."""
    import networkx as nx

    path = Path(path)
    lines = _read_text(path).splitlines()
    if not lines or not _LTS_HEAD.match(lines[0]):
        raise InputError(path, 1, "not an LTS file (no 'Synoptic = S0,' header)")
    edges: list[tuple[int, str, int, int]] = []
    stops: list[int] = []
    state: int | None = None
    declared: set[int] = set()
    for no, line in enumerate(lines[1:], start=2):
        if not line.strip() or _LTS_TAIL.match(line):
            continue
        m = _LTS_STOP.match(line)
        if m:
            stops.append(int(m.group(1)))
            declared.add(int(m.group(1)))
            state = None
            continue
        m = _LTS_OPEN.match(line)
        if m:
            state = int(m.group(1))
            declared.add(state)
            edges.append((state, m.group(2), int(m.group(3)), no))
            state = None if m.group(4) else state
            continue
        m = _LTS_ALT.match(line)
        if m and state is not None:
            edges.append((state, m.group(1), int(m.group(2)), no))
            state = None if m.group(3) else state
            continue
        raise InputError(path, no, f"not an LTS state or transition line: {line[:80]!r}")
    label: dict[int, str] = {}
    for _, lab, dst, no in edges:
        if dst == 0:
            raise InputError(path, no, "a transition into S0 (the initial state)")
        if label.setdefault(dst, lab) != lab:
            raise InputError(
                path, no, f"S{dst} is entered by {label[dst]!r} and {lab!r}: not a model"
            )
    g: nx.DiGraph = nx.DiGraph(engine="lts", stop_only_ends=True)
    g.add_node("S0", label=INITIAL, shape="box", state=None)
    g.add_node("TERMINAL", label=TERMINAL, shape="diamond", state=None)
    for s in sorted(declared | set(label)):
        if s != 0 and s not in label:
            raise InputError(path, None, f"S{s} is never entered: not a model")
        if s != 0:
            g.add_node(f"S{s}", label=label[s], shape=None, state=label[s])
    undeclared = sorted(set(label) - declared)
    if undeclared:
        raise InputError(path, None, f"transitions name undeclared states S{undeclared[0]}")
    for src, _, dst, _ in edges:
        g.add_edge(f"S{src}", f"S{dst}", probability=float("nan"), count=-1)
    for s in stops:
        if s != 0:
            g.add_edge(f"S{s}", "TERMINAL", probability=float("nan"), count=-1)
    return g


def add_trace_ends(g: nx.DiGraph, traces: list[list[str]]) -> int:
    """Give ``g`` (an LTS's graph) an edge to TERMINAL from every state where one of
    ``traces`` can end (a run from S0 through the transitions): the LTS does not record
    them unless the state is ``STOP``.  Returns the number of edges added."""
    init = next(n for n, d in g.nodes(data=True) if d["state"] is None and d["label"] == INITIAL)
    term = next(n for n, d in g.nodes(data=True) if d["state"] is None and d["label"] == TERMINAL)
    succ: dict[object, dict[str, set]] = {}
    for u, v in g.edges:
        succ.setdefault(u, {}).setdefault(g.nodes[v]["label"], set()).add(v)
    ends: set = set()
    for trace in traces:
        cur = {init}
        for ev in trace:
            cur = set().union(*(succ.get(u, {}).get(ev, ()) for u in cur))
            if not cur:
                break
        ends |= cur
    new = [u for u in ends if not g.has_edge(u, term)]
    for u in new:
        g.add_edge(u, term, probability=float("nan"), count=-1)
    return len(new)


def is_constrained_txt(path: str | os.PathLike) -> bool:
    """Is ``path`` Perfume's invariants file (a ``Binary inv:`` or ``IntrBy(t)`` line)?"""
    text = _read_text(Path(path))
    return any(
        line.startswith("Binary inv:") or " IntrBy(t) " in line for line in text.splitlines()
    )


def read_constrained_txt(path: str | os.PathLike) -> pd.DataFrame:
    """Perfume's ``model.invariants.txt`` as the frame of
    :func:`~.perfume.mine_constrained`: ``kind, first, second, support`` (-1 without
    support counts), ``bound`` (``lowerbound``/``upperbound``, empty for an untimed
    line), ``value`` (the bound's text)."""
    import pandas as pd

    path = Path(path)
    rows = []
    for no, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        m = _CONSTRAINED.match(line)
        if m:
            rows.append(
                (m.group(2), m.group(1), m.group(3), int(m.group(6) or -1), m.group(4), m.group(5))
            )
            continue
        m = None if line.startswith("Binary inv:") else _UNTIMED.match(line)
        if m and m.group(2) != "IntrBy":
            rows.append((m.group(2), m.group(1), m.group(3), int(m.group(4) or -1), "", ""))
            continue
        raise InputError(path, no, f"not a Perfume invariant: {line[:80]!r}")
    return pd.DataFrame(rows, columns=["kind", "first", "second", "support", "bound", "value"])
