"""The two-sided diff diagram: escaping, emphasis and one-sided styles."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
from test_diff_data import make_set, one_trace

from statemine.compare import diff
from statemine.output.diagram import format_fraction
from statemine.output.diff_diagram import DOWN, NEUTRAL, UP, diff_to_dot, render_diff
from statemine.traces import TraceSet
from statemine.units import p_value_report


def test_emphasis_follows_significance():
    d = diff(
        make_set("a", 30, seed=1),
        make_set("b", 30, seed=2, recovery_mean=0.5),
        n_perm=299,
        n_boot=0,
    )
    dot = diff_to_dot(d)
    states = d.states.set_index("state")
    rec_line = next(line for line in dot.splitlines() if "<b>Recovery</b>" in line)
    assert states.loc["Recovery", "significant"] and f'color="{UP}"' in rec_line
    ca_line = next(line for line in dot.splitlines() if "<b>CongestionAvoidance</b>" in line)
    assert f'color="{DOWN}"' in ca_line
    for state in states.index[~states["significant"]]:
        line = next(line for line in dot.splitlines() if f"<b>{state}</b>" in line)
        assert f'color="{NEUTRAL}"' in line and "penwidth=1.00" in line
    # both sides' numbers appear: Figure-13 percentages "A | B"
    expected = (
        f"{format_fraction(states.loc['Recovery', 'fraction_a'])} | "
        f"{format_fraction(states.loc['Recovery', 'fraction_b'])}"
    )
    assert f'<font color="red">{expected}</font>' in rec_line


def test_labels_are_escaped_and_one_sided_items_styled():
    evil = '<script>alert("x")</script>&'
    a = TraceSet.from_events(
        pd.concat(
            [one_trace(f"a{i}", [0, 1, 2 + i], ["SlowStart", evil, "SlowStart"]) for i in range(3)]
        )
    )
    b = TraceSet.from_events(
        pd.concat(
            [
                one_trace(f"b{i}", [0, 1, 3 + i], ["SlowStart", "Recovery", "SlowStart"])
                for i in range(3)
            ]
        )
    )
    d = diff(a, b, label_a="<b>desk</b>", label_b="mob&ile", n_perm=50)
    dot = diff_to_dot(d, title="<i>t</i>")
    assert "<script>" not in dot and "&lt;script&gt;" in dot
    assert (
        "&lt;b&gt;desk&lt;/b&gt;" in dot and "mob&amp;ile" in dot and "&lt;i&gt;t&lt;/i&gt;" in dot
    )
    evil_line = next(
        line for line in dot.splitlines() if "&lt;script&gt;" in line and "->" not in line
    )
    assert "dashed" in evil_line
    rec_line = next(line for line in dot.splitlines() if "<b>Recovery</b>" in line)
    assert "dotted" in rec_line


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' is not installed")
def test_render_svg_and_dot(tmp_path):
    d = diff(make_set("a", 6, seed=1), make_set("b", 6, seed=2), n_perm=50, n_boot=0)
    svg = render_diff(d, tmp_path / "diff.svg")
    dot = render_diff(d, tmp_path / "diff.dot")
    assert svg.read_text().lstrip().startswith("<?xml") and "<svg" in svg.read_text()
    assert dot.read_text() == diff_to_dot(d)
    with pytest.raises(ValueError):
        render_diff(d, tmp_path / "diff.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["diff.dot", "diff.svg"]


def test_copies_and_power_are_marked():
    from test_diff_evidence import FAST, SLOW, copies

    d = diff(copies("a", 3, FAST), copies("b", 3, SLOW), n_perm=99, n_boot=0)
    dot = diff_to_dot(d)
    for state in ("SlowStart", "Recovery", "CongestionAvoidance"):
        line = next(line for line in dot.splitlines() if f"<b>{state}</b>" in line)
        assert "identical runs</font>" in line and f'color="{NEUTRAL}"' in line
    shown = p_value_report(d.min_p_holm)  # the report's p-value form, as in its tables
    assert f"underpowered: the smallest possible p is {shown} after Holm" in dot
    real = diff(
        make_set("a", 30, seed=1),
        make_set("b", 30, seed=2, recovery_mean=0.5),
        n_perm=299,
        n_boot=0,
    )
    assert "identical runs" not in diff_to_dot(real) and "underpowered" not in diff_to_dot(real)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' is not installed")
def test_marked_diagram_renders(tmp_path):
    from test_diff_evidence import FAST, SLOW, copies

    svg = render_diff(
        diff(copies("a", 3, FAST), copies("b", 3, SLOW), n_perm=99, n_boot=0), tmp_path / "d.svg"
    )
    text = svg.read_text()
    assert "identical runs" in text and "underpowered" in text
