"""Perfume's performance-constrained invariants (``--engine perfume``) against their
definitions (brute force over event pairs) and against the real Perfume's files
(``../shared/synoptic-oracle/perfume-*``, read in place)."""

from __future__ import annotations

import itertools
import json
import shutil
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from perfume_reference import (
    dot_edge_labels,
    edge_labels,
    generated_timed_log,
    read_model_json,
    rejected,
    violated_rows,
)
from shared_data import shared
from synoptic_reference import brute_invariants
from test_synoptic_oracle import oracle_cases

from statemine.cli import main
from statemine.infer.synoptic.formats import model_from_json
from statemine.infer.synoptic.log import EventLog
from statemine.infer.synoptic.model import PartitionModel
from statemine.infer.synoptic.options import parse_args
from statemine.infer.synoptic.perfume import constrained_json, mine_constrained
from statemine.infer.synoptic.perfume_formats import perfume_dot
from statemine.infer.synoptic.perfume_infer import (
    coarsen_timed,
    infer_perfume,
    merge_candidates,
    refine_node_cap,
    refine_timed,
    trace_chain_model,
    triangle_pair,
)
from statemine.infer.synoptic.run import read_log
from statemine.infer.synoptic.timecheck import TimedCodes, exact_ticks, timed_graph, violations
from statemine.parse.regex import read_regex_arrays

steps = st.sampled_from(["0", "1", "2.5", "0.25", "10", "3.0"])
traces_strategy = st.lists(
    st.lists(st.tuples(st.sampled_from("abc"), steps), min_size=1, max_size=7),
    min_size=1,
    max_size=5,
)


def write_log(tmp_path, traces) -> EventLog:
    """Write ``<time> <type>`` traces separated by ``--``; times are running sums."""
    lines = []
    for tr in traces:
        t = Decimal(0)
        for typ, step in tr:
            t += Decimal(step)
            lines.append(f"{t} {typ}")
        lines.append("--")
    path = tmp_path / "p.log"
    path.write_text("\n".join(lines[:-1]) + "\n")
    return EventLog.from_regex_events(read_regex_arrays([path], ["^(?<DTIME>)(?<TYPE>)$"], "^--$"))


def brute_constrained(traces) -> set:
    """(kind, a, b, support, bound, value) from the definitions, pair by pair."""
    seqs = [[typ for typ, _ in tr] for tr in traces]
    times = []
    for tr in traces:
        t, ts = Decimal(0), []
        for _, step in tr:
            t += Decimal(step)
            ts.append(t)
        times.append(ts)
    out: set[tuple[str, str, str, int, str, str | Decimal]] = set()
    untimed = {x for x in brute_invariants(seqs) if x[1] != "INITIAL"}
    types = sorted({t for s in seqs for t in s})
    for a in types:
        for b in types:
            if a == b:
                continue
            twice = any(s.count(a) >= 2 for s in seqs)
            ok = all(
                b in s[i + 1 : j]
                for s in seqs
                for i in range(len(s))
                for j in range(i + 1, len(s))
                if s[i] == a and s[j] == a and a not in s[i + 1 : j]
            )
            if twice and ok:
                untimed.add(("IntrBy", a, b, sum(s.count(a) for s in seqs)))
    for kind, a, b, support in untimed:
        if kind == "NeverFollowedBy":
            out.add((kind, a, b, support, "", ""))
            continue
        second = a if kind == "IntrBy" else b
        deltas = [
            ts[j] - ts[i]
            for s, ts in zip(seqs, times)
            for i in range(len(s))
            for j in range(i + 1, len(s))
            if s[i] == a and s[j] == second
        ]
        out.add((kind, a, b, support, "lowerbound", Decimal(min(deltas))))
        out.add((kind, a, b, support, "upperbound", Decimal(max(deltas))))
    return out


@settings(max_examples=100, deadline=None)
@given(traces_strategy)
def test_constrained_invariants_match_their_definitions(tmp_path_factory, traces):
    log = write_log(tmp_path_factory.mktemp("p"), traces)
    inv = mine_constrained(log)
    got = {
        (r.kind, r.first, r.second, r.support, r.bound, Decimal(r.value) if r.value else "")
        for r in inv.itertuples(index=False)
    }
    assert got == brute_constrained(traces)


@pytest.mark.parametrize("case", oracle_cases("perfume"))
def test_perfume_invariants_are_the_real_perfumes(case, tmp_path, monkeypatch):
    work = tmp_path / case
    shutil.copytree(shared("synoptic-oracle", case), work)
    (work / "model.invariants.txt").rename(work / "perfume.invariants.txt")
    monkeypatch.chdir(work)
    args = json.loads((work / "case.json").read_text())["args"]
    res = CliRunner().invoke(
        main, ["infer", "--engine", "perfume", *args, "--onlyMineInvariants=true"]
    )
    assert res.exit_code == 0, res.output
    assert (work / "model.invariants.txt").read_text() == (
        work / "perfume.invariants.txt"
    ).read_text()
    # the JSON invariants (constraints included) as a set
    log = read_log(parse_args(args, "perfume"))
    theirs = json.loads((work / "model.json").read_text())["invariants"]
    ours = constrained_json(mine_constrained(log))
    assert sorted(map(json.dumps, ours)) == sorted(map(json.dumps, theirs))


def test_perfume_refuses_decreasing_times_with_keep_order(tmp_path, monkeypatch):
    (tmp_path / "d.log").write_text("5 a\n3 b\n")
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(
        main,
        [
            "infer",
            "--engine",
            "perfume",
            "-r",
            "^(?<DTIME>)(?<TYPE>)$",
            "--onlyMineInvariants=true",
            "d.log",
        ],
    )
    assert res.exit_code == 2 and "keepOrder" in res.output and "d.log:2:" in res.output
    res = CliRunner().invoke(
        main,
        [
            "infer",
            "--engine",
            "perfume",
            "-r",
            "^(?<DTIME>)(?<TYPE>)$",
            "--onlyMineInvariants=true",
            "--keepOrder=false",
            "d.log",
        ],
    )
    assert res.exit_code == 0 and "lowerbound = 2" in res.output


def test_perfume_refuses_a_log_without_times(tmp_path, monkeypatch):
    """Perfume on a regex with no time group: a one-line error naming -r, exit 2,
    nothing written (the real Perfume would take line numbers as times)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "n.log").write_text("a\nb\n--\na\nx\nb\n")
    timed = ["-r", "^(?<DTIME>[0-9]+) (?<TYPE>.*)$"]  # matches no line: a timeless -r too
    for extra in ([], ["--onlyMineInvariants=true"], timed):
        res = CliRunner().invoke(
            main,
            [
                "infer",
                "--engine",
                "perfume",
                "-r",
                "^(?<TYPE>.*)$",
                "-s",
                "^--$",
                "-o",
                "m",
                "--outputJSON=true",
                "--outputInvariantsToFile=true",
                *extra,
                "n.log",
            ],
        )
        assert res.exit_code == 2, res.output
        assert "-r '^(?<TYPE>.*)$'" in res.output and "needs event times" in res.output
        assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1
        assert sorted(p.name for p in tmp_path.iterdir()) == ["n.log"]


# -- the model ---------------------------------------------------------------------------


def _oracle_run(case: str, out_dir, extra=()) -> tuple[list[str], Path]:
    """Run ``--engine perfume`` on an oracle case in place (its folder is the working
    directory, the files go to ``out_dir``); returns (args, prefix)."""
    args = json.loads((shared("synoptic-oracle", case) / "case.json").read_text())["args"]
    prefix = Path(out_dir) / "model"
    args = [str(prefix) if a == "model" and args[i - 1] == "-o" else a for i, a in enumerate(args)]
    res = CliRunner().invoke(main, ["infer", "--engine", "perfume", *args, *extra])
    assert res.exit_code == 0, res.output
    return args, prefix


@pytest.mark.parametrize("case", oracle_cases("perfume"))
def test_perfume_model_on_the_oracle_cases(case, tmp_path, monkeypatch):
    """The same invariants (text, JSON) and parsed log as the real Perfume; a model that
    accepts every trace and satisfies every constrained invariant (checked by the
    independent reference on the written model.json); no more nodes than the real
    Perfume's model; every dot edge label as rebuilt from the partitions."""
    theirs = shared("synoptic-oracle", case)
    monkeypatch.chdir(theirs)
    args, prefix = _oracle_run(case, tmp_path)
    ours_txt = Path(f"{prefix}.invariants.txt").read_text()
    assert ours_txt == (theirs / "model.invariants.txt").read_text()
    ours_json = json.loads(Path(f"{prefix}.json").read_text())
    their_json = json.loads((theirs / "model.json").read_text())
    assert ours_json["log"] == their_json["log"]
    assert sorted(map(json.dumps, ours_json["invariants"])) == sorted(
        map(json.dumps, their_json["invariants"])
    )
    g, traces = read_model_json(Path(f"{prefix}.json"))
    log = read_log(parse_args(args, "perfume"))
    rows = mine_constrained(log).to_dict("records")
    assert rejected(g, traces) == []
    assert violated_rows(g, rows) == []
    our_nodes, our_edges = dot_edge_labels(Path(f"{prefix}.dot"))
    their_nodes, _ = dot_edge_labels(theirs / "model.dot")
    assert len(our_nodes) <= len(their_nodes)
    prob = "--outputProbLabels=true" in args
    assert our_edges == edge_labels(g, prob)
    assert sorted(our_nodes) == sorted([g.nodes[n]["label"] for n in g])


@pytest.mark.parametrize("case", oracle_cases("perfume"))
def test_perfume_labels_are_the_real_perfumes(case, monkeypatch):
    """Perfume's model.json partitions rendered by statemine's dot writer give the real
    Perfume's model.dot (node labels and every edge's label, up to node ids)."""
    theirs = shared("synoptic-oracle", case)
    monkeypatch.chdir(theirs)
    args = json.loads((theirs / "case.json").read_text())["args"]
    log = read_log(parse_args(args, "perfume"))
    model = model_from_json(theirs / "model.json", log)
    ticks, _ = exact_ticks(log)
    text = perfume_dot(model, ticks, prob="--outputProbLabels=true" in args)
    ours = dot_edge_labels_text(text)
    assert ours == dot_edge_labels(theirs / "model.dot")
    # and the reference's rebuild of the same partitions agrees too
    g, _ = read_model_json(theirs / "model.json")
    assert ours[1] == edge_labels(g, "--outputProbLabels=true" in args)


def dot_edge_labels_text(text: str):
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.dot"
        path.write_text(text)
        return dot_edge_labels(path)


@pytest.mark.parametrize(
    "case, broken",
    [
        (
            "perfume-repo-radius-auth",
            ["Access-Request AlwaysPrecedes Access-Accept upperbound 352"],
        ),
        ("perfume-hand-split-latency", []),
    ],
)
def test_always_precedes_upper_bound_rule_is_the_real_perfumes(case, broken, monkeypatch):
    """The one AlwaysPrecedes upper-bound rule (first ``a`` of a path to a ``b`` before
    the next ``a``) against the oracle: the real Perfume's own models satisfy every bound
    it mined under that rule, in the reference checker and in the engine's; counting
    every (a, b) pair instead breaks exactly ``broken``.  (The mined values themselves are
    the every-pair maxima: test_perfume_model_on_the_oracle_cases compares the files.)"""
    theirs = shared("synoptic-oracle", case)
    monkeypatch.chdir(theirs)
    args = json.loads((theirs / "case.json").read_text())["args"]
    log = read_log(parse_args(args, "perfume"))
    inv = mine_constrained(log)
    rows = inv.to_dict("records")
    g, _ = read_model_json(theirs / "model.json")
    assert violated_rows(g, rows) == []
    model = model_from_json(theirs / "model.json", log)
    ticks, scale = exact_ticks(log)
    codes = TimedCodes.from_frame(inv, log.types, scale)
    tg = timed_graph(model.part, model.node_type, log, ticks)
    assert not violations(tg, codes, len(log.types)).any()
    every_pair = violated_rows(g, rows, strict=True)
    named = [
        f"{rows[i]['first']} {rows[i]['kind']} {rows[i]['second']} {rows[i]['bound']} "
        f"{rows[i]['value']}"
        for i in every_pair
    ]
    assert named == broken


def _slow_big(cases: list) -> list:
    """The oracle cases, the large one (a few seconds per run) in the slow tier."""
    return [
        pytest.param(c, marks=pytest.mark.slow) if c == "perfume-gen-cc-states-small" else c
        for c in cases
    ]


@pytest.mark.parametrize("case", _slow_big(oracle_cases("perfume")))
def test_perfume_is_deterministic_for_a_seed(case, tmp_path, monkeypatch):
    monkeypatch.chdir(shared("synoptic-oracle", case))
    _, first = _oracle_run(case, tmp_path / "one")
    _, second = _oracle_run(case, tmp_path / "two")
    for suffix in (".dot", ".json", ".invariants.txt"):
        assert Path(f"{first}{suffix}").read_bytes() == Path(f"{second}{suffix}").read_bytes()


GENERATED = Path(__file__).parent / "data" / "perfume"


@pytest.mark.parametrize(
    "kind, n_traces, seed", [("latency", 40, 1), ("retry", 30, 2), ("states", 30, 3)]
)
def test_perfume_on_generated_logs(kind, n_traces, seed, tmp_path):
    """Generated logs with times (tests/data/perfume, remade by the generator here): the
    model accepts every trace, satisfies every constrained invariant (reference checker)
    and is the same for the same seed."""
    path = GENERATED / f"{kind}.log"
    assert path.read_text() == generated_timed_log(kind, n_traces, seed)
    base = ["-r", "^(?<DTIME>)(?<TYPE>)$", "-s", "^--$", "--outputJSON=true", "--randomSeed=3"]
    outs = []
    for name in ("a", "b"):
        args = [*base, "-o", str(tmp_path / name), str(path)]
        res = CliRunner().invoke(main, ["infer", "--engine", "perfume", *args])
        assert res.exit_code == 0, res.output
        outs.append((tmp_path / f"{name}.dot").read_bytes())
    assert outs[0] == outs[1]
    g, traces = read_model_json(tmp_path / "a.json")
    rows = mine_constrained(read_log(parse_args([*base, str(path)], "perfume"))).to_dict("records")
    assert rejected(g, traces) == []
    assert violated_rows(g, rows) == []
    assert len(g) < sum(len(t) for t in traces) + 2  # merged something


@settings(max_examples=60, deadline=None)
@given(traces_strategy, st.integers(0, 2**16))
def test_perfume_model_holds_on_random_logs(tmp_path_factory, traces, seed):
    log = write_log(tmp_path_factory.mktemp("p"), traces)
    inv = mine_constrained(log)
    ticks, scale = exact_ticks(log)
    codes = TimedCodes.from_frame(inv, log.types, scale)
    model = infer_perfume(log, codes, ticks, seed, attempts=1)
    g = _reference_graph(model)
    rows = inv.to_dict("records")
    assert violated_rows(g, rows) == []
    assert rejected(g, [[(t, None) for t in log.trace(k)] for k in range(log.n_traces)]) == []


@settings(max_examples=80, deadline=None)
@given(traces_strategy, st.integers(0, 2**16))
def test_timed_checker_agrees_with_the_reference(tmp_path_factory, traces, seed):
    """On random partitions (random groupings of the events of each type), the engine's
    vectorised checker and the networkx reference flag the same invariants."""
    log = write_log(tmp_path_factory.mktemp("c"), traces)
    inv = mine_constrained(log)
    ticks, scale = exact_ticks(log)
    codes = TimedCodes.from_frame(inv, log.types, scale)
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, 3, log.n_events)
    key = log.codes * 3 + groups
    _, part = np.unique(key, return_inverse=True)
    node_type = np.zeros(part.max() + 1, dtype=np.int64)
    node_type[part] = log.codes
    model = PartitionModel(log, part.ravel() + 2, np.r_[-1, -1, node_type]).compact()
    tg = timed_graph(model.part, model.node_type, log, ticks)
    ours = np.nonzero(violations(tg, codes, len(log.types)))[0].tolist()
    assert ours == violated_rows(_reference_graph(model), inv.to_dict("records"))


def _reference_graph(model: PartitionModel):
    """The reference's graph of an engine model, through its model.json text."""
    import tempfile

    from statemine.infer.synoptic.formats import to_json

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.json"
        path.write_text(to_json(model, mine_constrained(model.log).iloc[:0]))
        g, _ = read_model_json(path)
    return g


def test_perfume_bad_options(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.log").write_text("1 a\n2 b\n")
    base = ["infer", "--engine", "perfume", "-r", "^(?<DTIME>)(?<TYPE>)$", "-o", "m"]
    res = CliRunner().invoke(main, [*base, "--exportAsGML=true", "t.log"])
    assert res.exit_code == 2 and "--exportAsGML" in res.output and "GML text" in res.output
    assert len(res.output.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.log"]
    res = CliRunner().invoke(main, [*base, "--noRefinement=true", "t.log"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "m.dot").read_text() == (
        "digraph G {\n"
        '  0 [label="a"];\n'
        '  1 [label="b"];\n'
        '  2 [label="TERMINAL",shape=diamond];\n'
        '  3 [label="INITIAL",shape=box];\n'
        '0->1 [label="1"];\n'
        '1->2 [label=""];\n'
        '3->0 [label=""];\n'
        "}\n"
    )


def test_perfume_batched_refinement_on_a_larger_log(tmp_path):
    """Beyond 1000 events refinement splits for several violated bounds per step and
    runs one attempt: the model still accepts every trace and keeps every bound."""
    path = tmp_path / "big.log"
    path.write_text(generated_timed_log("latency", 240, 7))
    args = ["-r", "^(?<DTIME>)(?<TYPE>)$", "-s", "^--$", "--outputJSON=true", "--randomSeed=2"]
    res = CliRunner().invoke(
        main, ["infer", "--engine", "perfume", *args, "-o", str(tmp_path / "m"), str(path)]
    )
    assert res.exit_code == 0, res.output
    log = read_log(parse_args([*args, str(path)], "perfume"))
    assert log.n_events > 1000
    g, traces = read_model_json(tmp_path / "m.json")
    assert rejected(g, traces) == []
    assert violated_rows(g, mine_constrained(log).to_dict("records")) == []
    assert len(g) < 40


@settings(max_examples=40, deadline=None)
@given(traces_strategy, st.integers(0, 2**16), st.sampled_from([0, 2, 4]))
def test_perfume_caps_keep_every_invariant(tmp_path_factory, traces, seed, cap):
    """The caps that bound Perfume's cost (refinement past ``refine_nodes`` nodes gives the
    trace-chain model; coarsening stops after ``coarsen_failures`` failed merges): the model
    still accepts every trace and satisfies every constrained invariant (reference checker)."""
    log = write_log(tmp_path_factory.mktemp("p"), traces)
    inv = mine_constrained(log)
    ticks, scale = exact_ticks(log)
    codes = TimedCodes.from_frame(inv, log.types, scale)
    model = infer_perfume(
        log, codes, ticks, seed, attempts=1, refine_nodes=len(log.types) + cap, coarsen_failures=cap
    )
    g = _reference_graph(model)
    assert violated_rows(g, inv.to_dict("records")) == []
    assert rejected(g, [[(t, None) for t in log.trace(k)] for k in range(log.n_traces)]) == []


def test_trace_chain_model_paths_are_the_traces():
    """trace_chain_model: first events share a node per type, last events of longer traces
    too, one-event traces join the first events' node, every other event is its own."""
    log = EventLog.from_sequences([["a", "b", "c"], ["a", "c"], ["a"], ["b", "b", "c"]])
    model = trace_chain_model(log)
    # nodes: first a, first b, last c, b (trace 0), b (trace 3), INITIAL, TERMINAL
    assert model.n_nodes == 7
    part = model.part
    assert part[0] == part[3] == part[5]  # the first a's (the one-event trace too)
    assert part[2] == part[4] == part[8]  # the last c's
    assert len({part[1], part[7], part[6]}) == 3  # inner b's and the first b: distinct


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_stitch_splits_send_the_other_events_to_the_nearer_extreme(tmp_path, seed):
    """A stitch split sends the events off both extremes by which extreme their deltas
    are nearer (not by a coin): on a latency log the slow and the fast Query events part
    at the first split, and refinement ends near the few-regime model (was 272-333 nodes
    on this 2,000-event log, now under 60), still keeping every invariant."""
    path = tmp_path / "lat.log"
    path.write_text(generated_timed_log("latency", 400, 1))
    log = read_log(parse_args(["-r", "^(?<DTIME>)(?<TYPE>)$", "-s", "^--$", str(path)], "perfume"))
    inv = mine_constrained(log)
    ticks, scale = exact_ticks(log)
    codes = TimedCodes.from_frame(inv, log.types, scale)
    model = refine_timed(PartitionModel.initial(log), codes, ticks, np.random.default_rng(seed))
    assert model.n_nodes < 60
    tg = timed_graph(model.part, model.node_type, log, ticks)
    assert not violations(tg, codes, len(log.types)).any()
    assert violated_rows(_reference_graph(model), inv.to_dict("records")) == []


def test_triangle_pair_enumerates_the_pairs_in_order():
    want = [(i, j) for j in range(1, 200) for i in range(j)]
    assert [triangle_pair(k) for k in range(len(want))] == want
    k = 10**15 + 12345  # exact beyond float precision
    i, j = triangle_pair(k)
    assert 0 <= i < j and j * (j - 1) // 2 + i == k


@pytest.mark.parametrize("sizes", [[2], [5, 1, 7], [40, 3, 0, 13], [1, 1]])
def test_lazy_merge_candidates_are_the_eager_pairs_once_each(sizes):
    """The lazy order (beyond ``eager_pairs``) yields every same-type pair exactly once,
    the same set as the listed-and-shuffled order, and is fixed by the seed."""
    start = np.cumsum([0, *sizes])
    same_type = [np.arange(a, b) * 3 + 2 for a, b in itertools.pairwise(start)]
    eager = list(merge_candidates(same_type, np.random.default_rng(1)))
    lazy = list(merge_candidates(same_type, np.random.default_rng(1), eager_pairs=0))
    assert len(lazy) == len(set(lazy)) == len(eager)
    assert (
        set(lazy)
        == set(eager)
        == {
            (int(p), int(q))
            for same in same_type
            for i, p in enumerate(same)
            for q in same[i + 1 :]
        }
    )
    assert lazy == list(merge_candidates(same_type, np.random.default_rng(1), eager_pairs=0))


@pytest.mark.parametrize("seed", [0, 5])
def test_lazy_coarsening_gives_the_eager_model_when_every_merge_holds(tmp_path, seed):
    """From the trace-chain model of a log whose one-node-per-type model already keeps
    every invariant (every delay the same per pair of types), every merge holds whatever
    the order, so the lazy and the eager candidate orders both end at that model."""
    traces = [[("a", "1"), ("b", "2"), ("c", "1")]] * 6 + [[("a", "1"), ("c", "3")]] * 4
    log = write_log(tmp_path, traces)
    inv = mine_constrained(log)
    ticks, scale = exact_ticks(log)
    codes = TimedCodes.from_frame(inv, log.types, scale)
    chain = trace_chain_model(log)
    assert chain.n_nodes > PartitionModel.initial(log).n_nodes
    eager = coarsen_timed(chain, codes, ticks, np.random.default_rng(seed))
    lazy = coarsen_timed(chain, codes, ticks, np.random.default_rng(seed), eager_pairs=0)
    assert np.array_equal(lazy.part, eager.part)
    assert eager.n_nodes == PartitionModel.initial(log).n_nodes


def test_refinement_node_cap_grows_with_the_log_up_to_a_ceiling():
    """The cap past which refinement gives up (the trace-chain model then): 1,000 nodes on
    small logs, a quarter of the events beyond, never more than 2,500 (the ceiling that
    bounds a 1e5-event distinct-delay log's refinement; the 1e4-event cap is unchanged)."""
    assert [refine_node_cap(n) for n in (10, 1_000, 4_000, 8_000, 10_000, 100_000, 10**7)] == [
        1_000,
        1_000,
        1_000,
        2_000,
        2_500,
        2_500,
        2_500,
    ]


def test_perfume_extra_checks_use_no_dense_matrix(tmp_path, monkeypatch):
    """``--performExtraChecks`` checks traces on the edge list: it asked 57 GiB for a nodes
    x nodes matrix on a 1e5-event trace-chain model (87,549 nodes); here the dense matrix
    is refused outright, and a model that rejects a trace is still caught."""
    from statemine.infer.synoptic.check import rejected_traces

    def refuse(self):
        raise AssertionError("dense edge matrix")

    monkeypatch.setattr(PartitionModel, "edge_counts", refuse)
    path = tmp_path / "t.log"
    path.write_text("1 a\n2 b\n--\n1 a\n5 c\n")
    args = ["-r", "^(?<DTIME>)(?<TYPE>)$", "-s", "^--$", "--noRefinement=true"]
    res = CliRunner().invoke(
        main,
        [
            "infer",
            "--engine",
            "perfume",
            *args,
            "--performExtraChecks=true",
            "-o",
            str(tmp_path / "m"),
            str(path),
        ],
    )
    assert res.exit_code == 0, res.output
    labels = ["\0INITIAL", "\0TERMINAL", "a", "b", "c"]
    src, dst = np.array([0, 2, 3, 2]), np.array([2, 3, 1, 4])  # c -> TERMINAL missing
    assert rejected_traces(src, dst, labels, [["a", "b"], ["a", "c"], ["b"]]) == [1, 2]
