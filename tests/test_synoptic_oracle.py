"""The native Synoptic engine against outputs of the real Synoptic.

The cases (``../shared/synoptic-oracle/<case>``, format in its README.md) are third-party
data read in place; without ``../shared`` these tests skip and say why.
"""

from __future__ import annotations

import collections
import json
import re
from typing import Any

import networkx as nx
import pytest
from shared_data import SHARED, shared
from synoptic_reference import accepts, invariant_holds

from statemine.infer.synoptic import infer_log
from statemine.infer.synoptic.check import check_model
from statemine.infer.synoptic.formats import (
    model_from_json,
    read_dot,
    read_invariants_txt,
    to_dot,
    to_invariants_txt,
    to_json,
)
from statemine.infer.synoptic.log import EventLog
from statemine.parse.regex import read_regex

#: The oracle cases, read in place (never copied into the repository).
ORACLE = SHARED / "synoptic-oracle"


def oracle_cases(tool: str = "synoptic") -> list:
    """Names of the ``tool``'s cases in ORACLE (``case.json`` without a ``tool`` field is
    Synoptic's), or one placeholder parameter that skips with the reason where ORACLE is
    absent."""
    if not ORACLE.is_dir():
        return [
            pytest.param(
                "absent",
                marks=pytest.mark.skip(
                    reason=f"third-party data {ORACLE} is absent (it lives in ../shared beside the "
                    "repository and is never copied into it)"
                ),
            )
        ]
    return sorted(
        p.name
        for p in ORACLE.iterdir()
        if (p / "case.json").is_file()
        and json.loads((p / "case.json").read_text()).get("tool", "synoptic") == tool
    )


CASES = oracle_cases()
#: Cases whose inference takes seconds: the slow tier runs them.
SLOW_CASES = {"repo-apache-cse142"}


def params(cases: list) -> list:
    """``cases`` as pytest parameters: slow ones marked slow, placeholders unchanged."""
    out = []
    for c in cases:
        if not isinstance(c, str):
            out.append(c)
            continue
        marks = [pytest.mark.slow] if c in SLOW_CASES else []
        out.append(pytest.param(c, marks=marks))
    return out


def synoptic_args(case: str) -> dict:
    """The -r/-s/-m/-i values and log paths of a case's Synoptic command line."""
    args = json.loads((shared("synoptic-oracle", case) / "case.json").read_text())["args"]
    out: dict[str, Any] = {
        "regexes": [],
        "separator": None,
        "mapping": None,
        "ignore": False,
        "files": [],
        "seed": 0,
    }
    k = 0
    while k < len(args):
        a = args[k]
        if a in ("-r", "-s", "-m", "-o"):
            key = {"-r": "regexes", "-s": "separator", "-m": "mapping", "-o": None}[a]
            if key == "regexes":
                out["regexes"].append(args[k + 1])
            elif key:
                out[key] = args[k + 1]
            k += 2
            continue
        if a == "-i":
            out["ignore"] = True
        elif a.startswith("--randomSeed="):
            out["seed"] = int(a.split("=", 1)[1])
        elif not a.startswith("-"):
            out["files"].append(str(ORACLE / case / a))
        k += 1
    return out


_CACHE: dict = {}


def parsed(case: str):
    """(TraceSet, EventLog, SynopticResult) of a case, computed once."""
    if case not in _CACHE:
        a = synoptic_args(case)
        ts = read_regex(a["files"], a["regexes"], a["separator"], a["mapping"], a["ignore"])
        log = EventLog.from_traceset(ts)
        _CACHE[case] = (ts, log, infer_log(log, seed=a["seed"]))
    return _CACHE[case]


def oracle_text(case: str, name: str) -> str:
    return (ORACLE / case / name).read_text()


def oracle_single_node_per_type(case: str) -> bool:
    labels = re.findall(
        r'^\s+\d+ \[label="((?:[^"\\]|\\.)*)"', oracle_text(case, "model.dot"), re.M
    )
    return max(collections.Counter(labels).values()) == 1


@pytest.mark.parametrize("case", params(CASES))
def test_parsed_log_is_synoptics(case):
    _ts, _log, res = parsed(case)
    expected = json.loads(oracle_text(case, "model.json"), parse_float=str, parse_int=str)["log"]
    got = json.loads(to_json(res.model, res.invariants), parse_float=str, parse_int=str)["log"]
    assert got == expected


@pytest.mark.parametrize("case", params(CASES))
def test_invariants_and_support_counts_are_synoptics(case):
    _, _, res = parsed(case)
    assert to_invariants_txt(res.invariants) == oracle_text(case, "model.invariants.txt")
    ours = json.loads(to_json(res.model, res.invariants))["invariants"]
    theirs = json.loads(oracle_text(case, "model.json"))["invariants"]
    assert sorted(map(json.dumps, ours)) == sorted(map(json.dumps, theirs))


@pytest.mark.parametrize("case", params(CASES))
def test_model_accepts_traces_and_satisfies_invariants(case):
    _, log, res = parsed(case)
    g = res.to_networkx()
    for k in range(log.n_traces):
        assert accepts(g, log.trace(k)), f"trace {k} rejected"
    for row in res.invariants.itertuples(index=False):
        assert invariant_holds(g, row.kind, row.first, row.second), row
    report = check_model(g, log, res.invariants)
    assert report.ok


@pytest.mark.parametrize("case", params(CASES))
def test_no_more_nodes_than_synoptic(case):
    _, _, res = parsed(case)
    theirs = read_dot(ORACLE / case / "model.dot").number_of_nodes()
    assert res.model.n_nodes <= theirs


@pytest.mark.parametrize(
    "case", params([c for c in CASES if not isinstance(c, str) or oracle_single_node_per_type(c)])
)
def test_single_node_per_type_gives_synoptics_exact_dot(case):
    _, _, res = parsed(case)
    assert to_dot(res.model) == oracle_text(case, "model.dot")


@pytest.mark.parametrize("case", params(CASES))
def test_synoptic_model_read_back_is_the_same_graph(case):
    """model.json partitions rebuilt over our parse give Synoptic's dot graph (up to the
    order of same-label nodes), and the checker passes Synoptic's own model."""
    _, log, res = parsed(case)
    rebuilt = model_from_json(ORACLE / case / "model.json", log)
    theirs = read_dot(ORACLE / case / "model.dot")
    ours = rebuilt.to_networkx()
    assert nx.is_isomorphic(
        ours,
        theirs,
        node_match=lambda x, y: x["label"] == y["label"] and x["state"] == y["state"],
        edge_match=lambda x, y: (
            x["count"] == y["count"] and abs(x["probability"] - y["probability"]) <= 0.005 + 1e-9
        ),
    )
    assert check_model(theirs, log, res.invariants).ok
    back = read_invariants_txt(ORACLE / case / "model.invariants.txt")
    assert back.values.tolist() == res.invariants.values.tolist()


@pytest.mark.parametrize("case", params(CASES))
def test_array_path_codes_the_same_log(case):
    """The CLI's path (arrays, no TraceSet) codes exactly the log of the TraceSet path."""
    from statemine.parse.regex import read_regex_arrays

    _, log, _ = parsed(case)
    a = synoptic_args(case)
    direct = EventLog.from_regex_events(
        read_regex_arrays(a["files"], a["regexes"], a["separator"], a["mapping"], a["ignore"])
    )
    assert direct.types == log.types and direct.time_texts() == log.time_texts()
    for name in ("codes", "starts", "times", "lines"):
        assert getattr(direct, name).tolist() == getattr(log, name).tolist(), name
