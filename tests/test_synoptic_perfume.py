"""Perfume's performance-constrained invariants (``--engine perfume``) against their
definitions (brute force over event pairs) and against the real Perfume's files
(``../shared/synoptic-oracle/perfume-*``, read in place)."""

from __future__ import annotations

import json
import shutil
from decimal import Decimal

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from shared_data import shared
from synoptic_reference import brute_invariants
from test_synoptic_oracle import oracle_cases

from statemine.cli import main
from statemine.infer.synoptic.log import EventLog
from statemine.infer.synoptic.perfume import constrained_json, mine_constrained
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
    from statemine.infer.synoptic.options import parse_args
    from statemine.infer.synoptic.run import read_log

    log = read_log(parse_args(args, "perfume"))
    theirs = json.loads((work / "model.json").read_text())["invariants"]
    ours = constrained_json(mine_constrained(log))
    assert sorted(map(json.dumps, ours)) == sorted(map(json.dumps, theirs))
    # the model itself is refused, not faked
    res = CliRunner().invoke(main, ["infer", "--engine", "perfume", *args])
    assert res.exit_code == 2 and "refinement is not implemented" in res.output


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


def test_perfume_without_a_time_group_uses_line_numbers(tmp_path, monkeypatch):
    """Perfume on a log with no times does not fail: an event's time is its line number
    (separator lines count), as the real Perfume does (README-perfume-ktails.md)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "n.log").write_text("a\nb\n--\na\nx\nb\n")
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
            "--onlyMineInvariants=true",
            "n.log",
        ],
    )
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert "Binary inv:a AlwaysFollowedBy(t) b, Constraint: lowerbound = 1" in lines  # 2 - 1
    assert "Binary inv:a AlwaysFollowedBy(t) b, Constraint: upperbound = 2" in lines  # 6 - 4
