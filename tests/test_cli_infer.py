"""`statemine infer` / `statemine read` end to end, and the observed model + rendering."""

from __future__ import annotations

import json

import networkx as nx
import pandas as pd
import pytest
from click.testing import CliRunner

from statemine.cli import main
from statemine.infer.observed import model_from_json, model_to_json, observed_model
from statemine.output.diagram import graphviz_available, render, to_dot
from statemine.traces import TraceSet, load

LOG = (
    "".join(
        f"STATEMINE t={t} conn={c} role=server state={s}\n"
        for c in ("a", "b")
        for t, s in [
            (0.0, "SlowStart"),
            (1.0, "Recovery"),
            (1.5, "CongestionAvoidance"),
            (4.0, "ApplicationLimited"),
        ]
    )
    + "STATEMINE t=5.0 conn=a role=server event=Close\nSTATEMINE t=5.0 conn=b role=server event=Close\n"
)


@pytest.fixture
def log(tmp_path):
    p = tmp_path / "run.log"
    p.write_text(LOG)
    return p


def test_infer_writes_everything(tmp_path, log):
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["infer", str(log), "--out", str(out), "--bootstrap", "50"])
    assert res.exit_code == 0, res.output
    assert "CongestionAvoidance" in res.output
    states = pd.read_csv(out / "states.csv").set_index("state")
    assert {"time_fraction", "time_fraction_lo", "time_fraction_hi", "visits"} <= set(
        states.columns
    )
    # by hand: SlowStart 1/5, Recovery 0.5/5, CA 2.5/5, AppLimited 1/5
    assert states.loc["CongestionAvoidance", "time_fraction"] == pytest.approx(0.5)
    assert states.loc["Recovery", "time_fraction"] == pytest.approx(0.1)
    trans = pd.read_csv(out / "transitions.csv")
    assert list(trans.columns[:4]) == ["src", "dst", "count", "probability"]
    G = model_from_json((out / "model.json").read_text())
    assert G.edges["SlowStart", "Recovery"]["count"] == 2
    assert "digraph" in (out / "model.dot").read_text()
    if graphviz_available():
        assert (out / "model.svg").read_text().lstrip().startswith(("<?xml", "<svg"))


@pytest.mark.parametrize(
    "content",
    ["", "STATEMINE t=1 conn=a state=A\nSTATEMINE t=0 conn=a state=B\n", "\x00\x01garbage"],
)
def test_bad_input_exit_2_no_partial_output(tmp_path, content):
    bad = tmp_path / "bad.log"
    bad.write_text(content)
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["infer", str(bad), "--out", str(out)])
    assert res.exit_code == 2
    assert "bad.log" in res.output
    assert not out.exists() or not any(out.iterdir())


def test_unknown_format_and_synoptic_flag_without_engine(log):
    res = CliRunner().invoke(main, ["infer", str(log), "--format", "nope"])
    assert res.exit_code == 2
    res = CliRunner().invoke(main, ["infer", str(log), "--outputJSON=true"])
    assert res.exit_code == 2 and "engine synoptic" in res.output


def test_read_command_round_trip(tmp_path, log):
    out = tmp_path / "t.parquet"
    res = CliRunner().invoke(
        main, ["read", str(log), "--out", str(out), "--label", "environment=mobile"]
    )
    assert res.exit_code == 0, res.output
    ts = load(out)
    assert ts.n_traces == 2 and set(ts.traces.environment) == {"mobile"}
    # a saved set is an input like any log
    res = CliRunner().invoke(main, ["infer", str(out)])
    assert res.exit_code == 0 and "Recovery" in res.output


def test_model_graph_and_json_round_trip():
    ts = TraceSet.from_events(
        pd.DataFrame(
            {
                "trace": ["a"] * 3,
                "time": [0.0, 1.0, 4.0],
                "state": ["SlowStart", "Recovery", "SlowStart"],
            }
        )
    )
    G = observed_model(ts, n_boot=0)
    assert set(G.nodes) == {"INITIAL", "SlowStart", "Recovery", "TERMINAL"}
    assert G.nodes["Recovery"]["time_fraction"] == pytest.approx(0.75)
    out_p = [d["probability"] for _, _, d in G.out_edges("SlowStart", data=True)]
    assert sum(out_p) == pytest.approx(1.0)
    H = model_from_json(model_to_json(G))
    assert nx.utils.graphs_equal(G, H) or set(G.edges) == set(H.edges)
    json.loads(model_to_json(G))  # NaN CIs are written as null: valid JSON


def test_labels_are_escaped_in_dot_and_svg(tmp_path):
    evil = 'Evil"];<script>alert(1)</script>'
    ts = TraceSet.from_events(
        pd.DataFrame({"trace": ["a", "a"], "time": [0.0, 1.0], "state": [evil, "B"]})
    )
    G = observed_model(ts, n_boot=0)
    dot = to_dot(G)
    assert "<script>" not in dot and "&lt;script&gt;" in dot
    if graphviz_available():
        svg = render(G, tmp_path / "m.svg").read_text()
        assert "<script>" not in svg


def test_concat_keeps_every_files_warnings():
    from statemine.traces import concat

    a = TraceSet.from_events(
        pd.DataFrame({"trace": ["a"], "time": [0.0], "state": ["X"]}),
        meta={"warnings": '["f1:3: cut"]'},
    )
    b = TraceSet.from_events(
        pd.DataFrame({"trace": ["b"], "time": [0.0], "state": ["X"]}),
        meta={"warnings": '["f2:9: cut"]'},
    )
    assert json.loads(concat([a, b]).meta["warnings"]) == ["f1:3: cut", "f2:9: cut"]


def test_qlog_files_with_the_same_name_in_two_folders(tmp_path):
    from statemine.parse import read

    doc = (
        '{"qlog_version": "0.3", "traces": [{"vantage_point": {"type": "server"}, "events": ['
        '{"time": 0, "name": "recovery:congestion_state_updated", "data": {"new": "slow_start"}},'
        '{"time": 10, "name": "recovery:congestion_state_updated", "data": {"new": "recovery"}}]}]}'
    )
    for folder in ("x", "y"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "c.qlog").write_text(doc)
    ts = read([tmp_path / "x" / "c.qlog", tmp_path / "y" / "c.qlog"])
    assert ts.n_traces == 2


def test_reader_warnings_and_zero_duration_are_reported(tmp_path):
    cut = tmp_path / "cut.sqlog"
    cut.write_text(
        '\x1e{"qlog_version": "0.3", "qlog_format": "JSON-SEQ", "trace": {"vantage_point": {"type": "server"}}}\n'
        '\x1e{"time": 0, "name": "recovery:congestion_state_updated", "data": {"new": "slow_start"}}\n'
        '\x1e{"time": 5, "name": "recovery:congestion_state_upd'
    )
    res = CliRunner().invoke(main, ["infer", str(cut)])
    assert res.exit_code == 0, res.output
    assert "warning" in res.output and "cut.sqlog" in res.output
    assert "n/a" in res.output and "time fractions are undefined" in res.output


def test_model_graph_is_networkx_digraph_semantics():
    """ModelGraph (what infer --out draws from, without networkx) behaves as a networkx
    DiGraph under the same adds, in random order: nodes and edges with their attributes
    in the same order (attributes merged, an edge's missing ends added), so model.json
    equals networkx's own node-link dump and model.dot the DOT of the DiGraph."""
    import random

    from statemine.infer.observed import ModelGraph, _nan_to_none

    rng = random.Random(5)
    names = ["INITIAL", "TERMINAL", "SlowStart", "Recovery", "é\n<b>", "x" * 90, ""]
    for _ in range(50):
        mine, ref = ModelGraph(engine="observed"), nx.DiGraph(engine="observed")
        for _ in range(rng.randrange(0, 30)):
            if rng.random() < 0.4:
                node = rng.choice(names)
                key = rng.choice(["time_fraction", "visits", "kind", "label"])
                value = {
                    "time_fraction": rng.choice([0.25, float("nan"), 0.0004]),
                    "visits": rng.randrange(5),
                    "kind": rng.choice(["state", "initial", "terminal"]),
                    "label": rng.choice(names),
                }[key]
                mine.add_node(node, **{key: value})
                ref.add_node(node, **{key: value})
            else:
                u, v = rng.choice(names), rng.choice(names)
                key = rng.choice(["count", "probability", "probability_lo"])
                value = rng.randrange(9) if key == "count" else rng.choice([0.5, 0.001, 1.0])
                mine.add_edge(u, v, **{key: value})
                ref.add_edge(u, v, **{key: value})
        assert list(mine.nodes(data=True)) == list(ref.nodes(data=True))
        assert mine.edges(data=True) == list(ref.edges(data=True))
        assert all((n in mine) == (n in ref) for n in names)
        want = json.dumps(
            _nan_to_none(nx.node_link_data(ref, edges="edges")), indent=1, sort_keys=True
        )
        assert model_to_json(mine) == want == model_to_json(ref)
        assert to_dot(mine, title="t") == to_dot(ref, title="t")
        back = mine.to_networkx()
        assert list(back.nodes(data=True)) == list(ref.nodes(data=True))
        assert list(back.edges(data=True)) == list(ref.edges(data=True))
        assert back.graph == ref.graph


def test_infer_files_model_equals_the_networkx_model(tmp_path):
    """The model.dot and model.json infer --out writes (through ModelGraph) are the DOT
    and JSON of the networkx DiGraph of model_from_stats, which observed_model returns."""
    from statemine.output.out_files import infer_files
    from statemine.stats.summary import summarize

    ts = TraceSet.from_events(
        pd.DataFrame(
            {
                "trace": ["a"] * 4 + ["b"] * 3,
                "time": [0.0, 1.0, 1.5, 4.0, 0.0, 2.0, 2.5],
                "state": ["SlowStart", "Recovery", "SlowStart", "<i>", "Recovery", "<i>", "X"],
            }
        )
    )
    states, transitions = summarize(ts, n_boot=20, seed=1)
    G = observed_model(ts, n_boot=20, seed=1)
    files, _ = infer_files(states, transitions, svg=False, title="T")
    assert files["model.json"] == model_to_json(G)
    assert files["model.dot"] == to_dot(G, title="T")
    assert set(G.edges) == {
        ("INITIAL", "SlowStart"),
        ("INITIAL", "Recovery"),
        ("SlowStart", "Recovery"),
        ("Recovery", "SlowStart"),
        ("SlowStart", "<i>"),
        ("Recovery", "<i>"),
        ("<i>", "X"),
        ("<i>", "TERMINAL"),
        ("X", "TERMINAL"),
    }
