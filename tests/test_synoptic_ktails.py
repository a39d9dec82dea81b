"""k-tails (``--engine ktails``) against its definition (brute-force k-equivalence) and
against the real k-tails' outputs (``../shared/synoptic-oracle/ktails-*``, read in place)."""

from __future__ import annotations

import json
import shutil

import networkx as nx
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from shared_data import shared
from synoptic_reference import accepts
from test_synoptic_oracle import oracle_cases

from statemine.cli import main
from statemine.infer.synoptic.formats import read_dot, to_lts
from statemine.infer.synoptic.ktails import ktails
from statemine.infer.synoptic.log import EventLog
from statemine.infer.synoptic.model import PartitionModel

traces_strategy = st.lists(
    st.lists(st.sampled_from("abc"), min_size=1, max_size=8), min_size=1, max_size=6
)


def brute_k_classes(traces: list[list[str]], k: int) -> list[tuple]:
    """Per event, in log order: the set of label strings of length <= k that start at it
    in its trace's chain (TERMINAL included), with its label: k-tails' equivalence."""
    out = []
    for tr in traces:
        chain = [*tr, "TERMINAL"]
        for i, label in enumerate(tr):
            # (a string can be no longer than the chain: slices past its end repeat)
            strings = {tuple(chain[i : i + n]) for n in range(1, min(k, len(chain)) + 1)}
            out.append((label, frozenset(strings)))
    return out


@settings(max_examples=150, deadline=None)
@given(traces_strategy, st.integers(0, 10) | st.just(2**31 - 1))
def test_ktails_partition_is_k_equivalence(traces, k):
    """Also for k past the longest trace (the largest -k accepted: memory and time
    stay bounded by the traces, not by k)."""
    model = ktails(EventLog.from_sequences(traces), k)
    classes = brute_k_classes(traces, k)
    part = model.part.tolist()
    for i in range(len(part)):
        for j in range(len(part)):
            assert (part[i] == part[j]) == (classes[i] == classes[j])
    g = model.to_networkx()
    assert all(accepts(g, tr) for tr in traces)
    # the sparse edge list: the node pairs of consecutive events, INITIAL -> first and
    # last -> TERMINAL, counted along the traces
    from collections import Counter
    from itertools import pairwise

    walked: Counter = Counter()
    start = 0
    for tr in traces:
        nodes = [0, *(int(x) for x in model.part[start : start + len(tr)]), 1]
        walked.update(pairwise(nodes))
        start += len(tr)
    src, dst, count = model.edge_list()
    assert dict(zip(zip(src.tolist(), dst.tolist()), count.tolist())) == dict(walked)
    assert list(zip(src.tolist(), dst.tolist())) == sorted(walked)


def test_k_one_is_the_initial_graph():
    log = EventLog.from_sequences([["a", "b", "a"], ["b", "c"]])
    assert ktails(log, 1).part.tolist() == PartitionModel.initial(log).part.tolist()
    with pytest.raises(ValueError):
        ktails(log, -1)


@pytest.mark.parametrize("case", oracle_cases("ktails"))
def test_ktails_gives_the_real_ktails_files(case, tmp_path, monkeypatch):
    src = shared("synoptic-oracle", case)
    work = tmp_path / case
    shutil.copytree(src, work)
    for name in ("model.dot", "model.lts"):
        (work / name).rename(work / f"ktails.{name}")
    monkeypatch.chdir(work)
    args = json.loads((work / "case.json").read_text())["args"]
    res = CliRunner().invoke(main, ["infer", "--engine", "ktails", *args])
    assert res.exit_code == 0, res.output
    assert (work / "model.lts").read_text() == (work / "ktails.model.lts").read_text()
    ours, theirs = read_dot(work / "model.dot"), read_dot(work / "ktails.model.dot")
    assert ours.number_of_nodes() == theirs.number_of_nodes()
    assert nx.is_isomorphic(
        ours,
        theirs,
        node_match=lambda x, y: x["label"] == y["label"],
        edge_match=lambda x, y: (
            x["count"] == y["count"] and abs(x["probability"] - y["probability"]) < 1e-9
        ),
    )


def test_ktails_bad_k_and_invariant_options(tmp_path, monkeypatch):
    (tmp_path / "a.log").write_text("x\ny\n")
    monkeypatch.chdir(tmp_path)
    for args, needle in (
        (["-k", "-1"], "--kTailsK (-k) must be 0 or more, not -1"),
        (["--kTailsK=-3"], "--kTailsK (-k) must be 0 or more, not -3"),
        (["-k", "two"], "--kTailsK takes an integer, not 'two'"),
        (["-k", "1.5"], "--kTailsK takes an integer, not '1.5'"),
        (["-k", "2147483648"], "--kTailsK is out of range: 2147483648"),
        (["-k"], "--kTailsK takes an integer, not '-o'"),  # the next argument, verbatim
        (["--outputInvariantsToFile=true"], "option of synoptic"),
    ):
        res = CliRunner().invoke(
            main, ["infer", "--engine", "ktails", *args, "-o", "m", "--outputLTS", "a.log"]
        )
        assert res.exit_code == 2 and needle in res.output, res.output
        assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output
        assert sorted(p.name for p in tmp_path.iterdir()) == ["a.log"]  # nothing written
    res = CliRunner().invoke(
        main, ["infer", "--engine", "ktails", "-k", "1", "--outputLTS", "-o", "m", "a.log"]
    )
    assert res.exit_code == 0, res.output
    assert (tmp_path / "m.lts").read_text() == to_lts(
        ktails(EventLog.from_sequences([["x", "y"]]), 1)
    )


#: k-tails' documented options (``KTailsOptions`` of ModelInference/synoptic, with
#: ``kTailsK``): name -> non-default value to try.  Written independently of statemine's
#: table, so an option missing there fails.
KTAILS_DOCUMENTED = {
    "help": "true",
    "allHelp": "true",
    "version": "true",
    "logLvlQuiet": "true",
    "logLvlVerbose": "true",
    "randomSeed": "7",
    "separatorRegExp": "^c$",
    "regExps": "^(?<TYPE>.+)$",
    "partitionRegExp": r"\k<TYPE>",
    "ignoreNonMatchingLines": "true",
    "keepOrder": "true",
    "recoverFromParseErrors": "true",
    "debugParse": "true",
    "dateFormat": "yyyy",
    "argsFilename": "args.txt",
    "outputPathPrefix": "other",
    "noModelOutput": "true",
    "exportAsGML": "true",
    "outputLTS": "true",
    "dotExecutablePath": "/usr/bin/dot",
    "outputProbLabels": "false",
    "outputCountLabels": "true",
    "showTerminalNode": "false",
    "showInitialNode": "false",
    "outputJSON": "true",
    "dumpTraceGraphDotFile": "true",
    "dumpTraceGraphPngFile": "true",
    "dumpInitialPartitionGraph": "true",
    "dumpIntermediateStages": "true",
    "logLvlExtraVerbose": "true",
    "doBenchmarking": "true",
    "internCommonStrings": "false",
    "runTests": "true",
    "runAllTests": "true",
    "performExtraChecks": "true",
    "kTailsK": "3",
}
#: Accepted options with no visible effect on this log, and why.
KTAILS_NO_EFFECT = {
    "randomSeed": "k-tails does not use it",
    "internCommonStrings": "a Java memory optimisation",
    "dateFormat": "no DATETIME group here",
    "keepOrder": "the log is in file order",
    "regExps": "same events",
    "ignoreNonMatchingLines": "every line matches the default regex",
}


@pytest.mark.parametrize("name", sorted(KTAILS_DOCUMENTED))
def test_every_ktails_option_is_honoured_or_refused(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.log").write_text("a\nb\nc\nb\nd\n==\na\nb\nd\n")
    (tmp_path / "noise.log").write_text("a\n")
    (tmp_path / "args.txt").write_text("--kTailsK=1\n")
    base = ["-s", "^==$", "-o", "out"]

    def run_files(extra):
        res = CliRunner().invoke(main, ["infer", "--engine", "ktails", *base, *extra, "k.log"])
        files = {p.name: p.read_bytes() for p in sorted(tmp_path.glob("out*"))}
        files.update({p.name: p.read_bytes() for p in sorted(tmp_path.glob("other*"))})
        for p in [*tmp_path.glob("out*"), *tmp_path.glob("other*")]:
            p.unlink()
        return res, files

    before, before_files = run_files([])
    assert before.exit_code == 0, before.output
    res, files = run_files([f"--{name}={KTAILS_DOCUMENTED[name]}"])
    if res.exit_code == 2:
        assert f"--{name}" in res.output and "not supported" in res.output, res.output
        assert not files
        return
    assert res.exit_code == 0, res.output
    assert files != before_files or res.output != before.output or name in KTAILS_NO_EFFECT


@pytest.mark.parametrize("case", oracle_cases("ktails"))
def test_ktails_model_checks_on_the_oracle_cases(case, tmp_path, monkeypatch):
    """k-tails on each shared case, read in place: no invariants (k-tails mines none,
    nor does the real one), a model that accepts every trace (reference simulation), no
    more nodes than the real k-tails' model, the same files for the same arguments."""
    src = shared("synoptic-oracle", case)
    monkeypatch.chdir(src)
    args = json.loads((src / "case.json").read_text())["args"]
    outs = []
    for name in ("a", "b"):
        run = [
            str(tmp_path / name) if x == "model" and args[i - 1] == "-o" else x
            for i, x in enumerate(args)
        ]
        res = CliRunner().invoke(main, ["infer", "--engine", "ktails", *run])
        assert res.exit_code == 0, res.output
        outs.append({p.name: p.read_bytes() for p in sorted(tmp_path.glob(f"{name}.*"))})
    assert outs[0] == {k.replace("b.", "a.", 1): v for k, v in outs[1].items()}
    assert sorted(outs[0]) == ["a.dot", "a.lts"]
    ours, theirs = read_dot(tmp_path / "a.dot"), read_dot(src / "model.dot")
    assert ours.number_of_nodes() <= theirs.number_of_nodes()
    from statemine.infer.synoptic.options import parse_args
    from statemine.infer.synoptic.run import read_log

    log = read_log(parse_args(args, "ktails"))
    assert all(accepts(ours, log.trace(k)) for k in range(log.n_traces))
