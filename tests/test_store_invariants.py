"""Synoptic's invariants of a trace store (``statemine store invariants``): the oracle's
``model.invariants.txt`` byte for byte from a store of its logs, on one machine and on a
local Dask cluster of 2 workers; generated stores mined on workers equal the
single-machine mining of the same traces and the definitions (brute force); any split of
the traces merges into the same evidence; ``--select`` pruning; bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import test_distributed
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from synoptic_reference import brute_invariants
from test_stream import random_log
from test_synoptic_oracle import CASES, ORACLE, synoptic_args

import statemine
from statemine.cli import main
from statemine.distributed import storestats
from statemine.distributed.run import dask_mapper, store_evidence, store_invariants
from statemine.infer.synoptic import infer_synoptic
from statemine.infer.synoptic.evidence import Evidence, trace_evidence
from statemine.infer.synoptic.formats import to_invariants_txt
from statemine.infer.synoptic.invariants import invariants_of, mine_invariants
from statemine.infer.synoptic.log import EventLog
from statemine.store import read_store

#: The local 2-worker cluster and the generated store of test_distributed (module fixtures).
client = test_distributed.client
generated = test_distributed.generated


def _oracle_store(case: str, root: Path) -> Path:
    """A store made by ``statemine store add`` from the case's logs with its -r/-s/-m/-i."""
    a = synoptic_args(case)
    args = ["store", "add", "--store", str(root / "store"), *a["files"]]
    args += [x for r in a["regexes"] for x in ("-r", r)]
    args += ["-s", a["separator"]] if a["separator"] else []
    args += ["-m", a["mapping"]] if a["mapping"] else []
    args += ["-i"] if a["ignore"] else []
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    return root / "store"


@pytest.mark.parametrize("case", CASES)
def test_store_of_an_oracle_log_gives_synoptic_s_invariants_file(case, tmp_path):
    store = _oracle_store(case, tmp_path)
    out = tmp_path / "model.invariants.txt"
    args = ["store", "invariants", "--store", str(store), "--support-count", "--out", str(out)]
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    assert out.read_bytes() == (ORACLE / case / "model.invariants.txt").read_bytes()


@pytest.mark.parametrize("case", CASES)
def test_oracle_invariants_on_two_workers(case, tmp_path, client):
    store = _oracle_store(case, tmp_path)
    inv = store_invariants(store, mapper=dask_mapper(client), n_tasks=4)
    assert to_invariants_txt(inv) == (ORACLE / case / "model.invariants.txt").read_text()


#: A small automaton (type -> next types; "" ends the trace): its walks hold invariants of
#: every kind (Init first, Loss always followed by Recovery, Recovery preceded by Loss...).
_WALK = {
    "Init": ["SlowStart"],
    "SlowStart": ["SlowStart", "Loss", "CongestionAvoidance", ""],
    "CongestionAvoidance": ["CongestionAvoidance", "Loss", "Idle", ""],
    "Loss": ["Recovery"],
    "Recovery": ["CongestionAvoidance", "Recovery"],
    "Idle": ["SlowStart", ""],
}


def _walk(rng: np.random.Generator) -> list[str]:
    out = ["Init"]
    while out[-1] and len(out) < 60:
        nxt = _WALK[out[-1]]
        out.append(nxt[int(rng.integers(len(nxt)))])
    return [t for t in out if t]


@pytest.fixture(scope="module")
def walks(tmp_path_factory) -> Path:
    """A store of Synoptic-style logs of :data:`_WALK` walks in 3 partitions (env), 8
    files of 1-40 traces each, added with -r/-s."""
    rng = np.random.default_rng(11)
    root = tmp_path_factory.mktemp("walks")
    for i in range(8):
        env = ("lab", "mobile", "wired")[i % 3]
        log = root / f"walks-{i}.log"
        log.write_text(
            "--\n".join(
                "".join(f"{t}\n" for t in _walk(rng)) for _ in range(int(rng.integers(1, 40)))
            )
        )
        args = ["store", "add", "--store", str(root / "store"), "--label", f"env={env}", str(log)]
        done = CliRunner().invoke(main, [*args, "-r", r"^(?<TYPE>\w+)$", "-s", "^--$"])
        assert done.exit_code == 0, done.output
    return root / "store"


def _event_sequences(store: Path, where: dict[str, str] | None = None) -> list[list[str]]:
    """The traces of ``store`` as read whole: each trace's event names (state rows and
    point events) in order."""
    ev = read_store(store, where).events
    out = [
        g["state"].astype(str).tolist() for _, g in ev.groupby("trace", observed=True, sort=False)
    ]
    return [seq for seq in out if seq]


def _rows(inv) -> set[tuple[str, str, str, int]]:
    return set(zip(inv["kind"], inv["first"], inv["second"], map(int, inv["support"])))


@pytest.mark.parametrize("store", ["walks", "generated"])
def test_stores_on_workers_are_the_single_machine_mining(store, request, client):
    root = request.getfixturevalue(store)
    traces = _event_sequences(root)
    whole = mine_invariants(EventLog.from_sequences(traces))
    # many small tasks, so that the reduce merges several workers' evidence
    on_dask = store_invariants(root, mapper=dask_mapper(client), n_tasks=8, task_rows=300)
    here = store_invariants(root)
    expected = to_invariants_txt(whole)
    assert to_invariants_txt(on_dask) == expected == to_invariants_txt(here)
    assert _rows(on_dask) == brute_invariants(traces)
    log = EventLog.from_sequences(traces)
    assert store_evidence(root).same(trace_evidence(log.types, log.codes, log.starts))


@pytest.mark.parametrize("rows", [1, 7, 100])
@pytest.mark.parametrize("store", ["walks", "generated"])
def test_traces_crossing_read_blocks_give_the_same_evidence(store, request, monkeypatch, rows):
    root = request.getfixturevalue(store)
    whole = store_evidence(root)
    monkeypatch.setattr(storestats, "BLOCK_ROWS", rows)
    assert store_evidence(root, task_rows=500, n_tasks=3).same(whole)


def _merge_tree(parts: list[Evidence], data: st.DataObject) -> Evidence:
    """The parts merged in a random binary tree (their order kept)."""
    if len(parts) == 1:
        return parts[0]
    cut = data.draw(st.integers(1, len(parts) - 1))
    return _merge_tree(parts[:cut], data).merge(_merge_tree(parts[cut:], data))


def _evidence(traces: list[list[str]]) -> Evidence:
    if not traces:
        return Evidence.empty()
    log = EventLog.from_sequences(traces)
    return trace_evidence(log.types, log.codes, log.starts)


@settings(max_examples=80, deadline=None)
@given(
    traces=st.lists(st.lists(st.sampled_from("abcdE"), min_size=1, max_size=12), max_size=10),
    data=st.data(),
)
def test_any_split_merged_in_any_order_is_the_evidence_of_the_whole(traces, data):
    n_parts = data.draw(st.integers(1, 5))
    part_of = data.draw(
        st.lists(st.integers(0, n_parts - 1), min_size=len(traces), max_size=len(traces))
    )
    parts = [_evidence([t for t, p in zip(traces, part_of) if p == k]) for k in range(n_parts)]
    parts = data.draw(st.permutations(parts))
    merged = _merge_tree(list(parts), data)
    whole = _evidence(traces)
    assert merged.same(whole)
    if traces:
        assert to_invariants_txt(invariants_of(merged)) == to_invariants_txt(
            mine_invariants(EventLog.from_sequences(traces))
        )
        assert _rows(invariants_of(merged)) == brute_invariants(traces)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=12), min_size=1, max_size=10))
def test_trace_evidence_counts_are_their_definitions(traces):
    """trace_evidence's arrays against event-by-event counts (types 0..5 with some absent,
    so its renumbering is exercised): #a, the traces holding a, #F(a, b) the a before the
    last b of their trace, #P(a, b) the b after the first a of theirs."""
    names = [f"t{k}" for k in range(6)]
    codes = np.array([c for t in traces for c in t], np.int64)
    starts = np.r_[0, np.cumsum([len(t) for t in traces])]
    ev = trace_evidence(names, codes, starts)
    present = sorted({c for t in traces for c in t})
    assert ev.types == tuple(names[c] for c in present) and ev.n_traces == len(traces)
    F = [[0] * len(present) for _ in present]
    P = [[0] * len(present) for _ in present]
    for t in traces:
        for i, a in enumerate(present):
            for j, b in enumerate(present):
                if b in t:
                    last_b = len(t) - 1 - t[::-1].index(b)
                    F[i][j] += t[:last_b].count(a)
                if a in t:
                    P[i][j] += t[t.index(a) + 1 :].count(b)
    assert ev.count.tolist() == [sum(t.count(a) for t in traces) for a in present]
    assert ev.traces.tolist() == [sum(a in t for t in traces) for a in present]
    assert ev.F.tolist() == F and ev.P.tolist() == P


def test_same_tells_different_evidence_apart():
    a = _evidence([["a", "b"], ["b"]])
    assert a.same(_evidence([["b"], ["a", "b"]]))
    assert not a.same(_evidence([["a", "b"], ["b", "a"]]))
    assert not a.same(_evidence([["a", "b"]]))
    assert not a.same(a.merge(_evidence([["c"]])))


def test_select_prunes_to_the_partition_s_traces(walks):
    seen: list[Path] = []

    def mapper(fn, items):
        seen.extend(p for item in items for p in item)
        return map(fn, items)

    inv = store_invariants(walks, {"env": "mobile"}, mapper)
    traces = _event_sequences(walks, {"env": "mobile"})
    assert to_invariants_txt(inv) == to_invariants_txt(
        mine_invariants(EventLog.from_sequences(traces))
    )
    assert seen and all("env=mobile" in p.parts for p in seen)
    assert to_invariants_txt(inv) != to_invariants_txt(store_invariants(walks))
    done = CliRunner().invoke(
        main, ["store", "invariants", "--store", str(walks), "--select", "env=mobile"]
    )
    assert done.exit_code == 0 and done.output == to_invariants_txt(inv, support=False)


def _cli_error(args: list[str]) -> str:
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 2, done.output
    assert done.output.count("\n") == 1 and "Traceback" not in done.output
    return done.output


#: Two connections of a statemine log with point events (LossDetected, Close).
_POINT_EVENTS = "".join(
    f"I1120 x.go:1] STATEMINE t={t} conn={c} {what} cwnd=1200\n"
    for t, c, what in [
        (0.0, "c1", "state=SlowStart"),
        (0.0, "c2", "state=SlowStart"),
        (0.5, "c1", "event=LossDetected"),
        (0.5, "c1", "state=Recovery"),
        (0.7, "c2", "event=LossDetected"),
        (0.8, "c2", "state=Recovery"),
        (0.9, "c1", "state=CongestionAvoidance"),
        (1.0, "c2", "state=CongestionAvoidance"),
        (1.5, "c1", "event=Close"),
    ]
)


@pytest.mark.parametrize("text", [_POINT_EVENTS, "random"])
def test_point_events_are_events_as_infer_synoptic_takes_them(tmp_path, text):
    """Every event row is a Synoptic event, a point event too (as every line a Synoptic
    regex matches is): the store's invariants are those infer_synoptic mines from the log
    read whole (the store's miner took state rows only, so the two differed)."""
    log = tmp_path / "events.log"
    log.write_text(random_log(np.random.default_rng(5), 400, 5) if text == "random" else text)
    statemine.store_add([log], tmp_path / "s")
    whole = infer_synoptic(statemine.read(log)).invariants
    mined = to_invariants_txt(store_invariants(tmp_path / "s"))
    assert mined == to_invariants_txt(whole)
    assert "LossDetected AlwaysFollowedBy(t) Recovery" in mined or text == "random"
    assert "LossDetected" in mined
    args = ["store", "invariants", "--store", str(tmp_path / "s"), "--support-count"]
    assert CliRunner().invoke(main, args).output == mined


def test_bad_input_is_one_line_exit_2_and_no_output(generated, tmp_path):
    base = ["store", "invariants", "--store", str(generated)]
    assert "no label 'role'" in _cli_error([*base, "--select", "role=server"])
    assert "no trace matches" in _cli_error([*base, "--select", "env=none"])
    assert "not a statemine store" in _cli_error(["store", "invariants", "--store", str(tmp_path)])
    message = _cli_error([*base, "--max-types", "2"])
    assert "more than 2 distinct event types" in message and ".log:" in message


@pytest.mark.slow
def test_cli_on_a_local_cluster_writes_the_single_machine_file(walks, tmp_path):
    here = CliRunner().invoke(
        main, ["store", "invariants", "--store", str(walks), "--support-count"]
    )
    out = tmp_path / "inv.txt"
    args = ["store", "invariants", "--store", str(walks), "--support-count", "--out", str(out)]
    done = CliRunner().invoke(main, [*args, "--dask", "local:2"])
    assert done.exit_code == 0, done.output
    assert "dask: 2 workers" in done.output
    assert out.read_text() == here.output and here.output.count("\tsupport count ") > 20
