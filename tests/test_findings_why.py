"""`statemine lab findings --why` (issue 30): each comparison's one line on why, from
statemine.explain's tables; the tables without --why unchanged."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from test_lab_findings import MOBILE, lab_folder

from statemine.cli import main
from statemine.explain import explain, why_line
from statemine.lab import findings

TRACES = Path(__file__).resolve().parents[1] / "traces"
FAST = dict(n_perm=999, n_boot=300, seed=0)
#: The why cell (explain.why_line): ratios and p-values at 2 significant digits, shares in %.
WHY = re.compile(
    r"entries x(?P<rate>\S+) \(p (?P<rate_p>\S+)\), dwell x(?P<dwell>\S+) \(p (?P<dwell_p>\S+)\)"
    r": (?P<carrier>entries carry|dwell carries) (?P<part>-?\d+)%"
    r"; lead: (?P<trigger>.+?)(?:, (?P<verdict>spurious|real|unknown))?"
    r" \((?P<share>-?\d+)% of the change in entries, p (?P<lead_p>\S+)\)$"
)


@pytest.fixture(scope="module")
def varied(tmp_path_factory) -> tuple[Path, dict]:
    root = lab_folder(tmp_path_factory.mktemp("lab"), 12, noise=0.3)
    return root, findings.load_scenarios(root, MOBILE)


def sides(loaded: dict, finding: findings.Finding, row: pd.Series):
    """The two selections of one assess row, made here from the finding's conditions."""
    ts, results = loaded[finding.scenario]
    impl, version = row["stack"].split("@")
    base = ts.select({"implementation": impl, "version": version})
    conditions = {c.label: c for c in finding.conditions}
    return base.select(conditions[row["a"]].where), base.select(conditions[row["b"]].where), results


def two(value: float) -> float:
    """A number at the 2 significant digits the why cell shows."""
    return float(f"{value:.2g}")


def check_cell(cell: str, e, state: str) -> re.Match:
    """The numbers of ``cell`` are cells of explain's tables for ``state``."""
    m = WHY.match(cell)
    assert m, cell
    st = e.states.set_index("state").loc[state]
    assert float(m["rate"]) == two(st["rate_ratio"])
    assert float(m["rate_p"]) == two(st["rate_p_holm"])
    assert float(m["dwell"]) == two(st["dwell_ratio"])
    assert float(m["dwell_p"]) == two(st["dwell_p_holm"])
    # the larger part (by size) of the exact split rate_part + dwell_part = delta
    assert np.isclose(st["rate_part"] + st["dwell_part"], st["delta"])
    by_entries = abs(st["rate_part"]) >= abs(st["dwell_part"])
    assert m["carrier"] == ("entries carry" if by_entries else "dwell carries")
    part = st["rate_part"] if by_entries else st["dwell_part"]
    assert int(m["part"]) == round(100 * part / st["delta"])
    # the lead trigger: the largest share of the state's change in entries
    t = e.triggers[e.triggers["state"] == state]
    lead = t.loc[t["share_of_change"].idxmax()]
    assert np.isclose(t["rate_delta"].sum(), st["rate_b"] - st["rate_a"])
    assert m["trigger"] == lead["trigger"] and (m["verdict"] or "") == lead["verdict"]
    assert int(m["share"]) == round(100 * lead["rate_delta"] / t["rate_delta"].sum())
    assert float(m["lead_p"]) == two(lead["p_holm"])
    return m


def test_why_cells_are_cells_of_explains_tables(varied):
    root, loaded = varied
    verdicts = findings.assess(root, MOBILE, loaded=loaded, why=True, **FAST)
    assert list(verdicts.columns) == [*findings.ASSESS_COLUMNS, "why"]
    assert len(verdicts) == 2
    for _, row in verdicts.iterrows():
        sa, sb, results = sides(loaded, MOBILE[0], row)
        e = explain(sa, sb, runs_a=results.reset_index(), runs_b=results.reset_index(), **FAST)
        m = check_cell(row["why"], e, "ApplicationLimited")
        if row["stack"].startswith("quic-go"):  # 10% -> 60% of the time, dwell x6 in the generator
            assert m["carrier"] == "dwell carries" and 4 < float(m["dwell"]) < 8


def test_without_why_the_tables_are_unchanged(varied):
    """--why adds a last column; every other cell (through explain's diff) is the same."""
    root, loaded = varied
    plain = findings.assess(root, MOBILE, loaded=loaded, **FAST)
    with_why = findings.assess(root, MOBILE, loaded=loaded, why=True, **FAST)
    assert "why" not in plain.columns
    pd.testing.assert_frame_equal(with_why.drop(columns="why"), plain)
    conditions = findings.evaluate(root, MOBILE, loaded=loaded)
    name = MOBILE[0].name
    old, new = (findings.markdown(v, conditions, name) for v in (plain, with_why))
    assert old == findings.markdown(with_why.drop(columns="why"), conditions, name)
    head_old, head_new = old.split("\n")[0], new.split("\n")[0]
    assert head_new == head_old[: -len(" |")] + " | why |"
    # each row of the first table gains exactly its why cell
    for line_old, line_new, why in zip(
        old.split("\n")[2:4], new.split("\n")[2:4], with_why["why"], strict=True
    ):
        assert line_new == f"{line_old} {why} |"


def test_why_line_without_the_state():
    states = pd.DataFrame({"state": ["Recovery"]})
    assert why_line(states, pd.DataFrame(), "ApplicationLimited") == "state absent"


def test_cli_why_markdown_and_csv(varied, tmp_path):
    root, loaded = varied
    csv = tmp_path / "findings.csv"
    args = ["lab", "findings", str(root), "--permutations", "999", "--bootstrap", "300"]
    res = CliRunner().invoke(main, [*args, "--markdown", "--why", "--csv", str(csv)])
    assert res.exit_code == 0, res.output
    verdicts = findings.assess(root, MOBILE, loaded=loaded, why=True, **FAST)
    conditions = findings.evaluate(root, MOBILE, loaded=loaded)
    assert findings.markdown(verdicts, conditions, MOBILE[0].name) in res.output
    written = pd.read_csv(csv)
    assert written["why"].tolist() == verdicts["why"].tolist()
    res = CliRunner().invoke(main, [*args, "--csv", str(csv)])
    assert res.exit_code == 0, res.output
    assert "why" not in pd.read_csv(csv).columns and "why" not in res.output
    res = CliRunner().invoke(main, [*args, "--why"], env={"COLUMNS": "400"})
    assert res.exit_code == 0, res.output
    for why in verdicts["why"]:
        assert why in res.output


@pytest.mark.slow
def test_jitter_why_on_the_shipped_traces():
    """aioquic 1.7.2 and quic-go v0.63.0, no jitter vs 10 ms (threshold 3): the extra
    Recovery is carried by entries, led by spurious packet-threshold declarations."""
    jitter = tuple(f for f in findings.FINDINGS if f.name == "jitter-recovery")
    loaded = findings.load_scenarios(TRACES, jitter)
    verdicts = findings.assess(TRACES, jitter, loaded=loaded, why=True, n_perm=2000, n_boot=200)
    first = verdicts[verdicts["b"] == "10 ms jitter, reordering threshold 3"]
    assert len(first) == 2
    for _, row in first.iterrows():
        sa, sb, results = sides(loaded, jitter[0], row)
        runs = results.reset_index()
        e = explain(sa, sb, runs_a=runs, runs_b=runs, n_perm=2000, n_boot=200, seed=0)
        m = check_cell(row["why"], e, "Recovery")
        assert m["carrier"] == "entries carry" and float(m["rate"]) > 2
        assert m["trigger"] == "LossDetected rule=packet" and m["verdict"] == "spurious"
        assert float(m["lead_p"]) < 0.01
