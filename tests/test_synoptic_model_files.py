"""``statemine check-model`` on every file Synoptic, Perfume and k-tails write: Perfume's
``model.dot`` (time-range edge labels) and constrained ``model.invariants.txt``, Synoptic's
``--exportAsGML`` file, the ``.lts`` of Synoptic and k-tails.  Verdicts are compared with
the independent reference of tests/perfume_reference.py (networkx, exact decimals, on
``model.json``)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import networkx as nx
import pytest
from click.testing import CliRunner
from perfume_reference import read_model_json, violated_rows
from shared_data import shared

from statemine.cli import main
from statemine.infer.synoptic.command import check_model_files
from statemine.infer.synoptic.formats import read_dot
from statemine.infer.synoptic.model_files import (
    read_any_dot,
    read_constrained_txt,
    read_gml,
    read_lts,
)
from statemine.infer.synoptic.perfume import constrained_invariants_txt, mine_constrained
from statemine.infer.synoptic.timed_model import label_ticks

PERFUME = ["perfume-repo-radius-auth", "perfume-hand-split-latency", "perfume-gen-cc-states-small"]
KTAILS = ["ktails-repo-ktails-test", "ktails-hand-handshake-k1"]


def _case(case: str) -> tuple[Path, list[str], list[str]]:
    """(folder, log files, check-model's -r/-s/-m options) of an oracle case."""
    folder = shared("synoptic-oracle", case)
    args = json.loads((folder / "case.json").read_text())["args"]
    opts = []
    for flag in ("-r", "-s", "-m"):
        if flag in args:
            opts += [flag, args[args.index(flag) + 1]]
    return folder, [args[-1]], opts


def _check(folder: Path, model: str, logs: list[str], opts: list[str], *extra: str):
    from click.testing import Result

    runner = CliRunner()
    res: Result = runner.invoke(
        main, ["check-model", str(folder / model), *[str(folder / p) for p in logs], *opts, *extra]
    )
    return res


@pytest.mark.parametrize("case", PERFUME)
def test_perfume_dot_and_json_give_the_references_verdict(case):
    """The real Perfume's model.dot and model.json: every trace accepted; the constrained
    invariants that fail are those the independent reference finds on model.json (none on
    two cases, 17 of 44 on gen-cc-states-small, whose real model ignores positive cycles),
    whether mined from the log or read from Perfume's invariants file, and none undecided
    (the dot pins every trace to one path, so its edge times are exact)."""
    folder, logs, opts = _case(case)
    g, _ = read_model_json(folder / "model.json")
    rows = read_constrained_txt(folder / "model.invariants.txt")
    expected = [rows.iloc[i] for i in violated_rows(g, rows.to_dict("records"))]
    want = sorted(
        f"{r['first']} {r['kind']} {r['second']} {r['bound']} {r['value']}" for r in expected
    )
    for model in ("model.dot", "model.json"):
        for inv in (None, folder / "model.invariants.txt"):
            checked = check_model_files(
                folder / model,
                [folder / p for p in logs],
                [opts[opts.index("-r") + 1]],
                opts[opts.index("-s") + 1] if "-s" in opts else None,
                opts[opts.index("-m") + 1] if "-m" in opts else None,
                invariants_file=inv,
            )
            rep = checked.report
            assert checked.constrained and rep.rejected == [] and rep.undecided.empty
            got = sorted(
                f"{r.first} {r.kind} {r.second} {r.bound} {r.value}"
                for r in rep.violated.itertuples()
            )
            assert got == want, (model, inv)
            assert rep.n_invariants == len(rows)
    assert len(want) == {"perfume-gen-cc-states-small": 17}.get(case, 0)
    res = _check(folder, "model.dot", logs, opts)
    assert res.exit_code == (1 if want else 0), res.output
    assert f"{len(rows) - len(want)}/{len(rows)} constrained invariants hold" in res.output


@pytest.mark.parametrize("case", PERFUME)
def test_perfume_invariants_file_reads_back_as_mined(case):
    """Perfume's model.invariants.txt read back is the frame statemine mines (which
    writes that file byte for byte), and statemine's own text reads back the same."""
    from statemine.infer.synoptic.command import check_model_files

    folder, logs, opts = _case(case)
    log = check_model_files(
        folder / "model.json",
        [folder / p for p in logs],
        [opts[opts.index("-r") + 1]],
        opts[opts.index("-s") + 1] if "-s" in opts else None,
        opts[opts.index("-m") + 1] if "-m" in opts else None,
        traces_only=True,
    ).log
    mined = mine_constrained(log)
    read = read_constrained_txt(folder / "model.invariants.txt")
    assert read.astype(str).values.tolist() == mined.astype(str).values.tolist()
    assert constrained_invariants_txt(read) == (folder / "model.invariants.txt").read_text()


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_widened_perfume_edge_breaks_its_bound_and_a_dropped_one_a_trace(tmp_path):
    """Editing the real Perfume's dot: an edge's time raised from 5 to [5,9] ms breaks
    the upper bounds through it (its new largest delta matches no trace's, so only the
    rounded ranges are known: other bounds are undecided); dropping INITIAL's edge
    rejects the traces."""
    folder, logs, opts = _case("perfume-hand-split-latency")
    lines = (folder / "model.dot").read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("2->6 "))
    assert lines[i] == '2->6 [label="5 1.00"];'
    _write(tmp_path / "slow.dot", [*lines[:i], '2->6 [label="[5,9] 1.00"];', *lines[i + 1 :]])
    j = next(k for k, line in enumerate(lines) if line.startswith("14->"))  # INITIAL's
    _write(tmp_path / "cut.dot", [*lines[:j], *lines[j + 1 :]])
    res = _check(tmp_path, "slow.dot", [], opts, str(folder / logs[0]))
    assert res.exit_code == 1 and "violated: Binary inv:" in res.output, res.output
    assert (
        "violated: Binary inv:Connect AlwaysFollowedBy(t) Query, Constraint: upperbound = 10"
        in (res.output)
    )
    res = _check(tmp_path, "cut.dot", [], opts, str(folder / logs[0]))
    assert res.exit_code == 1 and "rejected trace" in res.output, res.output


def test_rounded_times_that_cannot_settle_a_bound_are_undecided(tmp_path):
    """Two Init nodes with the same edge (a trace fits both paths): only the label's
    rounding is known, 1.23E+3 = [1225, 1235] ms, so the mined upper bound 1234 is
    undecided; a bound of 1240 holds, one of 1220 fails."""
    (tmp_path / "a.log").write_text("0 a\n1234 b\n--\n0 a\n1230 b\n")
    dot = [
        "digraph G {",
        '  0 [label="a"];',
        '  1 [label="a"];',
        '  2 [label="b"];',
        '  3 [label="TERMINAL",shape=diamond];',
        '  4 [label="INITIAL",shape=box];',
        '0->2 [label="1.23E+3"];',
        '1->2 [label="1.23E+3"];',
        '2->3 [label=""];',
        '4->0 [label=""];',
        '4->1 [label=""];',
        "}",
    ]
    _write(tmp_path / "m.dot", dot)
    opts = ["-r", r"^(?<DTIME>\d+) (?<TYPE>\S+)$", "-s", "^--$"]
    res = _check(tmp_path, "m.dot", ["a.log"], opts)
    assert res.exit_code == 1 and "undecided (the dot's 3-digit edge times)" in res.output
    assert "a AlwaysFollowedBy(t) b, Constraint: upperbound = 1234" in res.output
    for value, verdict in (("1240", 0), ("1220", 1)):
        _write(
            tmp_path / "inv.txt",
            [f"Binary inv:a AlwaysFollowedBy(t) b, Constraint: upperbound = {value}"],
        )
        res = _check(tmp_path, "m.dot", ["a.log"], opts, "--invariants", str(tmp_path / "inv.txt"))
        assert res.exit_code == verdict, res.output
        assert ("violated:" in res.output) == bool(verdict)
        assert "undecided" not in res.output


def test_label_ticks_are_the_values_that_print_as_the_label():
    """Every delta of a grid prints (Perfume's 3-digit rounding) as a label whose range
    holds it, and no delta outside the range prints as that label."""
    from statemine.infer.synoptic.perfume_formats import time_text

    for scale in (0, 1, 3):
        unit = Decimal(1).scaleb(-scale)
        printed: dict[str, list[int]] = {}
        for k in range(0, 30000, 7):
            printed.setdefault(time_text(k * unit), []).append(k)
        for text, ks in printed.items():
            lo, hi = label_ticks(text, scale)
            assert lo <= min(ks) and max(ks) <= hi, (text, scale)
            for k in (int(lo) - 1, int(hi) + 1):
                assert time_text(k * unit) != text


def _same_graph(a: nx.DiGraph, b: nx.DiGraph) -> bool:
    return nx.is_isomorphic(a, b, node_match=lambda x, y: x["label"] == y["label"])


def test_gml_and_lts_read_back_as_the_dot(tmp_path, monkeypatch):
    """Synoptic's GML and LTS exports (statemine writes them in the real layouts) read
    back to the dot's graph (the LTS less its edges into TERMINAL from states that also
    continue), and check-model accepts both."""
    folder, logs, opts = _case("repo-osx-login")
    monkeypatch.chdir(tmp_path)
    log = str(folder / logs[0])
    exports = ["--exportAsGML=true", "--outputLTS=true"]
    run = CliRunner().invoke(
        main, ["infer", "--engine", "synoptic", *opts, "-o", "m", "--randomSeed=1", log, *exports]
    )
    assert run.exit_code == 0, run.output
    run = CliRunner().invoke(
        main, ["infer", "--engine", "synoptic", *opts, "-o", "d", "--randomSeed=1", log]
    )
    assert run.exit_code == 0, run.output
    dot = read_dot(tmp_path / "d.dot")
    assert _same_graph(read_gml(tmp_path / "m.gml"), dot)
    lts = read_lts(tmp_path / "m.lts")
    assert lts.number_of_nodes() == dot.number_of_nodes()
    for model in ("m.gml", "m.lts"):
        res = _check(tmp_path, model, [], opts, str(folder / logs[0]))
        assert res.exit_code == 0 and "5/5 traces accepted; 16/16 invariants hold" in res.output


@pytest.mark.parametrize("case", KTAILS)
def test_ktails_lts_is_its_dot(case):
    """The real k-tails' model.lts is its model.dot (same states and transitions; the
    dot's edges into TERMINAL from STOP states), and both accept every trace."""
    folder, logs, opts = _case(case)
    dot, lts = read_any_dot(folder / "model.dot"), read_lts(folder / "model.lts")
    term = next(n for n, d in dot.nodes(data=True) if d["label"] == "TERMINAL")
    stop_only = dot.copy()
    for u in list(dot.predecessors(term)):
        if dot.out_degree(u) > 1:
            stop_only.remove_edge(u, term)
    assert _same_graph(lts, stop_only)
    for model in ("model.dot", "model.lts"):
        res = _check(folder, model, logs, opts, "--traces-only")
        assert res.exit_code == 0 and "traces accepted; 0/0 invariants hold" in res.output


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("m.dot", 'digraph G {\n  0 [label="a"];\n0->0 [label="[5,3] 1.00"];\n}\n', 3),
        ("m.dot", 'digraph G {\n  0 [label="a"];\n0->0 [label="fast"];\n}\n', 3),
        ("m.gml", 'graph [\nnode\n[\n  id 0\n  label "a"\n]\nedge\n[\n  source x\n]\n]\n', 7),
        ("m.gml", "graph [\nnode\n[\n  id 0\n", None),
        ("m.lts", "Synoptic = S0,\n\nS0 = (a -> S1\n\t\t| b -> S1),\n\nS1 = STOP.\n", 4),
        ("m.lts", "Synoptic = S0,\n\nS0 = whatever\n", 3),
        ("inv.txt", "Binary inv:a AlwaysFollowedBy(t) b, Constraint: upperbound = x\n", 1),
    ],
)
def test_bad_model_files_are_one_line_naming_file_and_line(tmp_path, name, text, line):
    (tmp_path / name).write_text(text)
    (tmp_path / "a.log").write_text("0 a\n1 b\n")
    opts = ["-r", r"^(?<DTIME>\d+) (?<TYPE>\S+)$"]
    model, extra = (
        (name, []) if name != "inv.txt" else ("m.dot", ["--invariants", str(tmp_path / name)])
    )
    if name == "inv.txt":
        _write(tmp_path / "m.dot", ["digraph G {", "}"])
    res = CliRunner().invoke(
        main, ["check-model", str(tmp_path / model), str(tmp_path / "a.log"), *opts, *extra]
    )
    assert res.exit_code == 2, res.output
    out = res.output.strip()
    assert len(out.splitlines()) == 1 and "Traceback" not in out, out
    assert name in out and (line is None or f"{name}:{line}" in out), out
