"""Synoptic's command-line options: every documented option is honoured (with an
observable effect) or refused with a message naming it; the output switches, filters,
aliases, argument forms and arguments files do what Synoptic's do."""

from __future__ import annotations

import json
import re

import networkx as nx
import pytest
from click.testing import CliRunner
from synoptic_reference import accepts, brute_invariants, generated_event_log, invariant_holds

from statemine.cli import main
from statemine.infer.synoptic.formats import read_dot, to_dot
from statemine.infer.synoptic.log import EventLog

REGEX, SEP = "^(?<DTIME>)(?<TYPE>)$", "^--$"

#: Synoptic's documented options (its wiki page "Synoptic Command Line Options" and the
#: option classes of ModelInference/synoptic): name -> (type, default).  Written here
#: independently of statemine's table, so an option missing there fails this test.
DOCUMENTED = {
    "help": ("bool", False),
    "allHelp": ("bool", False),
    "version": ("bool", False),
    "logLvlQuiet": ("bool", False),
    "logLvlVerbose": ("bool", False),
    "useFSMChecker": ("bool", True),
    "randomSeed": ("long", None),
    "separateVTimeIndexSets": ("str", None),
    "multipleRelations": ("bool", False),
    "stateProcessing": ("bool", False),
    "testGeneration": ("bool", False),
    "supportCountThreshold": ("int", 0),
    "ignoreIntrByInvs": ("bool", True),
    "ignoreNFbyInvs": ("bool", False),
    "separatorRegExp": ("str", None),
    "regExps": ("str", None),
    "partitionRegExp": ("str", r"\k<FILE>"),
    "ignoreNonMatchingLines": ("bool", False),
    "recoverFromParseErrors": ("bool", False),
    "debugParse": ("bool", False),
    "dateFormat": ("str", "dd/MMM/yyyy:HH:mm:ss"),
    "argsFilename": ("str", None),
    "outputPathPrefix": ("str", None),
    "outputSupportCount": ("bool", False),
    "outputInvariantsToFile": ("bool", False),
    "exportAsGML": ("bool", False),
    "dotExecutablePath": ("str", None),
    "outputEdgeLabels": ("bool", True),
    "showTerminalNode": ("bool", True),
    "showInitialNode": ("bool", True),
    "outputProbLabels": ("bool", True),
    "outputCountLabels": ("bool", False),
    "outputJSON": ("bool", False),
    "outputLTS": ("bool", False),
    "keepOrder": ("bool", False),
    "dumpInvariants": ("bool", False),
    "dumpTraceGraphDotFile": ("bool", False),
    "dumpTraceGraphPngFile": ("bool", False),
    "dumpInitialPartitionGraph": ("bool", False),
    "dumpIntermediateStages": ("bool", False),
    "logLvlExtraVerbose": ("bool", False),
    "ignoreInvsOverETypeSet": ("str", None),
    "useTransitiveClosureMining": ("bool", False),
    "mineNeverConcurrentWithInv": ("bool", True),
    "onlyMineInvariants": ("bool", False),
    "noCoarsening": ("bool", False),
    "doBenchmarking": ("bool", False),
    "internCommonStrings": ("bool", True),
    "runTests": ("bool", False),
    "runAllTests": ("bool", False),
    "performExtraChecks": ("bool", False),
    "noRefinement": ("bool", False),
    "enablePerfDebugging": ("bool", False),
    "noModelOutput": ("bool", False),
    "traceNormalization": ("bool", False),  # in SynopticOptions' later versions too
}
#: Non-default values to try for options that are not plain booleans.
VALUES = {
    "randomSeed": "5",
    "separateVTimeIndexSets": "1,2;3,4",
    "supportCountThreshold": "40",
    "separatorRegExp": "^--$",
    "regExps": REGEX,
    "partitionRegExp": r"\k<TYPE>",
    "dateFormat": "yyyy-MM-dd",
    "argsFilename": "args.txt",
    "outputPathPrefix": "other",
    "dotExecutablePath": "/usr/bin/dot",
    "ignoreInvsOverETypeSet": "ack;close",
}
#: Honoured options whose effect Synoptic itself does not make visible on a totally
#: ordered log, with the reason (they must still be accepted).
NO_VISIBLE_EFFECT = {
    "useFSMChecker": "both of Synoptic's checkers give the same verdicts",
    "internCommonStrings": "a Java memory optimisation",
    "mineNeverConcurrentWithInv": "only changes partially ordered logs",
    "dateFormat": "only used by DATETIME groups, which this log has none of",
    "keepOrder": "this log is in time order in the file",
    "separatorRegExp": "the same separator as the base command",
    "regExps": "the same regex as the base command",
    "performExtraChecks": "the check passes; its report is a -v line",
    "randomSeed": "seeds 1 and 5 give the same model here (test_synoptic_engine checks seeds)",
}
#: Arguments added to both runs so that an option's effect can show.
COMPANION = {
    "outputSupportCount": ["--outputInvariantsToFile=true"],
    "supportCountThreshold": ["--outputInvariantsToFile=true"],
    "ignoreNonMatchingLines": ["noise.log"],
}


@pytest.fixture
def work(tmp_path, monkeypatch):
    traces, text = generated_event_log(30, seed=1)  # coarsening matters here
    (tmp_path / "cc.log").write_text(text)
    (tmp_path / "args.txt").write_text(
        f"-r {REGEX}\n-s {SEP}\n--randomSeed=2\n--outputCountLabels=true\n"
    )
    (tmp_path / "noise.log").write_text("1 Init\nnot an event line at all\n2 close\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path, traces


_BASE_RUNS: dict = {}


def base_run(folder, extra: list[str]):
    """(exit code, output, files) of the base command, computed once per extra args."""
    key = tuple(extra)
    if key not in _BASE_RUNS:
        res = run(BASE + extra + ["cc.log"])
        _BASE_RUNS[key] = (res.exit_code, res.output, outputs(folder))
        for p in folder.glob("out*"):
            p.unlink()
    return _BASE_RUNS[key]


def run(args: list[str]):
    return CliRunner().invoke(main, ["infer", "--engine", "synoptic", *args])


def outputs(folder, prefix: str = "out") -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.glob(prefix + "*"))}


BASE = ["-r", REGEX, "-s", SEP, "-o", "out", "--randomSeed=1"]


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_every_documented_option_is_honoured_or_refused(work, name):
    folder, _ = work
    _kind, default = DOCUMENTED[name]
    value = VALUES.get(name, "false" if default is True else "true")
    extra = COMPANION.get(name, [])
    base_code, base_output, before = base_run(folder, extra)
    assert base_code in (0, 2), base_output
    res = run(BASE + extra + [f"--{name}={value}", "cc.log"])
    if res.exit_code == 2:
        assert f"--{name}" in res.output and "not supported" in res.output, res.output
        assert len(res.output.split(":", 3)[-1]) > 30  # says why
        assert not list(folder.glob("out*"))
        return
    assert res.exit_code == 0, res.output
    after = {**outputs(folder), **outputs(folder, "other")}
    changed = after != before or res.output != base_output or base_code != 0
    assert changed or name in NO_VISIBLE_EFFECT, f"--{name}={value} had no effect"


def test_help_and_version(work):
    for flag in ("-h", "--help", "-H"):
        res = run([flag])
        assert res.exit_code == 0 and "--randomSeed" in res.output
    assert "refused" in run(["-H"]).output
    assert run(["-V"]).exit_code == 0 and "statemine" in run(["-V"]).output


def test_output_switches(work):
    folder, _traces = work
    assert run([*BASE, "cc.log"]).exit_code == 0
    assert sorted(p.name for p in folder.glob("out*")) == ["out.dot"]  # Synoptic's defaults
    g = read_dot(folder / "out.dot")
    assert all(d["count"] == -1 and d["probability"] >= 0 for *_, d in g.edges(data=True))
    assert (
        run(
            [
                *BASE,
                "--outputInvariantsToFile=true",
                "--outputJSON=true",
                "--outputCountLabels=true",
                "--outputProbLabels=false",
                "cc.log",
            ]
        ).exit_code
        == 0
    )
    inv_text = (folder / "out.invariants.txt").read_text()
    assert "support count" not in inv_text and inv_text.count("\n") > 10
    assert json.loads((folder / "out.json").read_text())["log"]
    counts = read_dot(folder / "out.dot")
    assert all(
        (d["count"] > 0 and d["probability"] != d["probability"]) or d["probability"] == -1
        for *_, d in counts.edges(data=True)
    )
    assert (
        run(
            [*BASE, "--outputInvariantsToFile=true", "--outputSupportCount=true", "cc.log"]
        ).exit_code
        == 0
    )
    with_counts = (folder / "out.invariants.txt").read_text().splitlines()
    assert [line.split("\t")[0] for line in with_counts] == inv_text.splitlines()
    assert all("\tsupport count " in line for line in with_counts)
    assert run([*BASE, "--outputEdgeLabels=false", "cc.log"]).exit_code == 0
    assert all(
        line.endswith(" [];")
        for line in (folder / "out.dot").read_text().splitlines()
        if "->" in line
    )


def well_formed_gml(text: str) -> str:
    """Synoptic's GML made readable by networkx: without the comma it writes after an
    edge's label (``,]``), which GML parsers refuse, and marked ``directed 1`` (Synoptic
    leaves it out, so readers take the graph as undirected)."""
    assert "\n,]\n" in text or "label" not in text.split("edge", 1)[-1]
    return text.replace("\n,]\n", "\n]\n").replace("graph [\n", "graph [\ndirected 1\n", 1)


def test_show_node_switches_and_gml(work):
    folder, _ = work
    assert run([*BASE, "--outputCountLabels=true", "cc.log"]).exit_code == 0
    full = read_dot(folder / "out.dot")
    for flag, hidden in (
        ("--showInitialNode=false", "INITIAL"),
        ("--showTerminalNode=false", "TERMINAL"),
    ):
        assert run([*BASE, "--outputCountLabels=true", flag, "cc.log"]).exit_code == 0
        text = (folder / "out.dot").read_text()
        assert f'label="{hidden}"' not in text
        kept = [n for n, d in full.nodes(data=True) if d["label"] != hidden]
        assert text.count(" [label=") - text.count("->") == len(kept)
        assert text.count("->") == full.subgraph(kept).number_of_edges()
    (folder / "out.dot").unlink()
    assert run([*BASE, "--outputCountLabels=true", "--exportAsGML=true", "cc.log"]).exit_code == 0
    assert not (folder / "out.dot").exists()  # GML instead of dot, not beside it
    gml = nx.parse_gml(well_formed_gml((folder / "out.gml").read_text()), label="id")
    assert sorted(d["label"] for _, d in gml.nodes(data=True)) == sorted(
        d["label"] for _, d in full.nodes(data=True)
    )
    assert {(u, v): d["label"] for u, v, d in gml.edges(data=True)} == {
        (u, v): f"P: {d['probability']:.2f}, Cnt: {d['count']}" for u, v, d in full.edges(data=True)
    }


def test_gml_and_dot_escape_hostile_labels(tmp_path):
    from statemine.infer.synoptic import infer_log
    from statemine.infer.synoptic.formats import to_gml

    res = infer_log(EventLog.from_sequences([['a"]\n[x', "b&c"], ["é"]]))
    text = to_gml(res.model)
    g = nx.parse_gml(well_formed_gml(text), label="id")
    assert {d["label"] for _, d in g.nodes(data=True)} >= {'a"]\n[x', "b&c", "é"}


@pytest.mark.parametrize(
    "threshold,nfby,types",
    [
        (0, False, None),
        (3, False, None),
        (0, True, None),
        (1, True, "ack;close"),
        (0, False, "INITIAL;Init;ack"),
    ],
)
def test_invariant_filters_match_their_definitions(work, threshold, nfby, types):
    folder, traces = work
    args = [
        *BASE,
        "--outputInvariantsToFile=true",
        "--outputSupportCount=true",
        f"--supportCountThreshold={threshold}",
        f"--ignoreNFbyInvs={str(nfby).lower()}",
    ]
    if types:
        args.append(f"--ignoreInvsOverETypeSet={types}")
    assert run([*args, "cc.log"]).exit_code == 0
    ignored = set(types.split(";")) if types else set()
    expected = {
        (k, a, b, s)
        for k, a, b, s in brute_invariants(traces)
        if s > threshold
        and not (nfby and k == "NeverFollowedBy")
        and not (a in ignored and b in ignored)
    }
    lines = (folder / "out.invariants.txt").read_text().splitlines()
    got = set()
    for line in lines:
        text, count = line.split("\tsupport count ")
        a, kind, b = text.split(" ")
        got.add((kind.replace("(t)", ""), a, b, int(count)))
    assert got == expected
    g = read_dot(folder / "out.dot")
    for tr in traces:
        assert accepts(g, tr)
    for kind, a, b, _ in expected:
        assert invariant_holds(g, kind, a, b)


def test_argument_forms_and_aliases_are_the_same_command(work):
    folder, _ = work
    forms = {
        "short": ["-r", REGEX, "-s", SEP, "-o", "out", "--randomSeed=5", "-i", "-j", "cc.log"],
        "long": [
            "--regExps",
            REGEX,
            "--separatorRegExp",
            SEP,
            "--outputPathPrefix",
            "out",
            "--randomSeed",
            "5",
            "-i=true",
            "--outputJSON=true",
            "cc.log",
        ],
        "equals": [
            f"--regExps={REGEX}",
            f"--separatorRegExp={SEP}",
            "--outputPathPrefix=out",
            "--seed",
            "5",
            "--ignoreNonMatchingLines=true",
            "-j=true",
            "cc.log",
        ],
    }
    seen = {}
    for name, args in forms.items():
        res = run(args)
        assert res.exit_code == 0, (name, res.output)
        seen[name] = outputs(folder)
    assert seen["short"] == seen["long"] == seen["equals"]
    assert set(seen["short"]) == {"out.dot", "out.json"}


def test_arguments_file(work):
    folder, _ = work
    assert run(["-c", "args.txt", "-o", "out", "cc.log"]).exit_code == 0
    from_file = outputs(folder)
    assert (
        run(
            ["-r", REGEX, "-s", SEP, "--randomSeed=2", "-o", "out", "--outputCountLabels", "cc.log"]
        ).exit_code
        == 0
    )
    assert outputs(folder) == from_file and "Cnt: " in (folder / "out.dot").read_text()
    # the command line overrides the file
    assert (
        run(["-c", "args.txt", "-o", "out", "--outputCountLabels=false", "cc.log"]).exit_code == 0
    )
    assert "Cnt: " not in (folder / "out.dot").read_text()
    (folder / "a.txt").write_text("-c b.txt\n")
    (folder / "b.txt").write_text("# comment\n--argsFilename=a.txt\n")
    res = run(["-c", "a.txt", "cc.log"])
    assert res.exit_code == 2 and "loop" in res.output and "a.txt" in res.output
    res = run(["-c", "missing.txt", "cc.log"])
    assert res.exit_code == 2 and "missing.txt" in res.output


@pytest.mark.parametrize(
    "args,needle",
    [
        (["-i=maybe"], "--ignoreNonMatchingLines takes true or false"),
        (["--randomSeed=x"], "--randomSeed takes an integer"),
        (["--randomSeed"], "--randomSeed needs a value"),
        (["--supportCountThreshold=99999999999"], "out of range"),
        (["--kTailsK=2"], "option of ktails"),
        (["--nope"], "unknown option --nope"),
    ],
)
def test_bad_options_are_one_line_errors(work, args, needle):
    folder, _ = work
    res = run(BASE + args + ["cc.log"] if args != ["--randomSeed"] else BASE + args)
    assert res.exit_code == 2 and needle in res.output, res.output
    assert "Traceback" not in res.output and not list(folder.glob("out*"))


def test_only_mine_and_initial_graph_dump(work):
    folder, traces = work
    res = run(["-r", REGEX, "-s", SEP, "--onlyMineInvariants=true", "cc.log"])
    assert res.exit_code == 0 and "AlwaysFollowedBy(t)" in res.output
    assert run([*BASE, "--dumpInitialPartitionGraph=true", "cc.log"]).exit_code == 0
    assert (folder / "out.condensed.dot").read_text() == to_dot(
        __import__(
            "statemine.infer.synoptic.model", fromlist=["PartitionModel"]
        ).PartitionModel.initial(EventLog.from_sequences(traces))
    )


# -- DATETIME groups and --dateFormat ------------------------------------------------------
from datetime import UTC, datetime, timedelta, timezone  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from statemine.infer.synoptic.javadate import compile_date_format  # noqa: E402

_PATTERNS = [  # (Java pattern, strftime equivalent)
    ("dd/MMM/yyyy:HH:mm:ss", "%d/%b/%Y:%H:%M:%S"),
    ("yyyy-MM-dd'T'HH:mm:ss", "%Y-%m-%dT%H:%M:%S"),
    ("EEE, d MMMM yyyy hh:mm:ss a", "%a, %-d %B %Y %I:%M:%S %p"),
    ("yyyyDDD HHmmss", "%Y%j %H%M%S"),
]


@settings(max_examples=200, deadline=None)
@given(
    st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 12, 31)),
    st.sampled_from(_PATTERNS),
    st.integers(-720, 720),
)
def test_java_date_patterns_against_python_datetime(when, pattern, offset_min):
    when = when.replace(microsecond=0)
    java, fmt = pattern
    expected = int(when.replace(tzinfo=UTC).timestamp()) * 1000
    assert compile_date_format(java)(when.strftime(fmt)) == expected
    zone = timezone(timedelta(minutes=offset_min))
    text = when.strftime("%Y-%m-%d %H:%M:%S") + when.replace(tzinfo=zone).strftime(" %z")
    assert (
        compile_date_format("yyyy-MM-dd HH:mm:ss Z")(text)
        == int(when.replace(tzinfo=zone).timestamp()) * 1000
    )


@pytest.mark.parametrize(
    "pattern,text",
    [
        ("yyyy-MM-dd", "2020-13-01"),
        ("yyyy-MM-dd", "2020-1-x"),
        ("dd/MMM/yyyy", "01/Foo/2020"),
        ("HH:mm", "1:2:3"),
    ],
)
def test_bad_dates_are_value_errors(pattern, text):
    with pytest.raises(ValueError, match="date"):
        compile_date_format(pattern)(text)
    with pytest.raises(ValueError, match="not supported"):
        compile_date_format("yyyy-ww")


def test_datetime_groups_order_events_by_date(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.log").write_text(
        "10/Oct/2000:13:55:36 login\n10/Oct/2000:13:55:30 start\n10/Oct/2000:13:56:00 logout\n"
        "--\n11/Oct/2000:01:00:05 login\n11/Oct/2000:01:00:00 start\n"
    )
    args = ["-r", r"^(?<DATETIME>\S+) (?<TYPE>\w+)$", "-s", SEP, "-o", "m", "-j"]
    res = run([*args, "d.log"])
    assert res.exit_code == 0, res.output
    log = json.loads((tmp_path / "m.json").read_text())["log"]
    assert [[e["eventType"] for e in t["events"]] for t in log] == [
        ["start", "login", "logout"],
        ["start", "login"],
    ]
    stamp = int(datetime(2000, 10, 10, 13, 55, 30, tzinfo=UTC).timestamp() * 1000)
    assert log[0]["events"][0]["timestamp"] == stamp and log[0]["events"][0]["logLine"] == 2
    (tmp_path / "bad.log").write_text("10/Oct/2000:13:55:36 login\n32/Oct/2000:13:55:30 start\n")
    before = {p.name: p.read_bytes() for p in tmp_path.glob("m.*")}
    res = run([*args, "bad.log"])
    assert res.exit_code == 2 and "bad.log:2: DATETIME" in res.output
    assert {p.name: p.read_bytes() for p in tmp_path.glob("m.*")} == before  # nothing written
    res = run([*args, "-i", "bad.log"])
    assert res.exit_code == 0
    res = run([*args, "--dateFormat=yyyy-MM-dd", "d.log"])
    assert res.exit_code == 2 and "does not match the date format" in res.output


# -- output forms no oracle case was run with, derived from one that was ----------------
#: An oracle case whose model keeps one node per type: statemine's dot is Synoptic's byte
#: for byte (test_synoptic_oracle), so the other forms can be derived from Synoptic's file.
FORM_CASE = "repo-simple-email"
_NODE_LINE = re.compile(r'^  (\d+) \[label="(.*?)"(,shape=\w+)?\];$')
_EDGE_LINE = re.compile(r'^(\d+)->(\d+) \[label="P: ([0-9.]+), Cnt: (\d+)"\];$')


def synoptic_form(dot: str, prob: bool, count: bool, initial: bool, terminal: bool, gml: bool):
    """What Synoptic writes for these switches, derived from its own ``model.dot`` (written
    with P and Cnt labels) by the rules of its GraphExporter / DotExportFormatter /
    GmlExportFormatter (ModelInference/synoptic, read for the format): a hidden
    INITIAL/TERMINAL is dropped before ids are given (ids stay consecutive in the same
    order) with its edges; an edge label is ``P: p, Cnt: c``, ``P: p``, ``Cnt: c`` or
    absent (dot ``u->v [];``, GML no label line and no comma)."""
    nodes, edges = [], []
    for line in dot.splitlines():
        if m := _NODE_LINE.match(line):
            nodes.append((int(m.group(1)), m.group(2), m.group(3) or ""))
        elif m := _EDGE_LINE.match(line):
            edges.append((int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)))
    hidden = {"INITIAL"} - ({"INITIAL"} if initial else set())
    hidden |= {"TERMINAL"} - ({"TERMINAL"} if terminal else set())
    kept = [(k, label, shape) for k, label, shape in nodes if not (shape and label in hidden)]
    new = {k: i for i, (k, _, _) in enumerate(kept)}
    parts = (["P: {p}"] if prob else []) + (["Cnt: {c}"] if count else [])
    label = ", ".join(parts)
    out = []
    if not gml:
        out.append("digraph G {")
        out += [f'  {new[k]} [label="{lab}"{shape}];' for k, lab, shape in kept]
        for u, v, p, c in edges:
            if u in new and v in new:
                text = label.format(p=p, c=c)
                attributes = f'label="{text}"' if text else ""
                out.append(f"{new[u]}->{new[v]} [{attributes}];")
        out.append("}")
    else:
        out.append("graph [")
        kinds = {",shape=box": "rectangle", ",shape=diamond": "rhombus", "": "oval"}
        for k, lab, shape in kept:
            out += ["node", "[", f"  id {new[k]}", f'  label "{lab}"', "graphics ["]
            out += [f'  type "{kinds[shape]}"', "]", "]"]
        for u, v, p, c in edges:
            if u in new and v in new:
                out += ["edge", "[", f"  source {new[u]}", f"  target {new[v]}"]
                text = label.format(p=p, c=c)
                out += [f'  label "{text}"', ",]"] if text else ["]"]
        out.append("]")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("gml", [False, True])
@pytest.mark.parametrize(
    "prob,count,initial,terminal",
    [
        (True, True, True, True),
        (True, False, True, True),
        (False, True, True, True),
        (False, False, True, True),
        (True, True, False, True),
        (True, True, True, False),
        (False, True, False, False),
    ],
)
def test_label_and_hidden_node_forms_are_synoptics(tmp_path, prob, count, initial, terminal, gml):
    """P:-only / Cnt:-only / no labels, hidden INITIAL/TERMINAL and GML: statemine's file
    against Synoptic's model.dot of an oracle case turned into that form by Synoptic's
    export rules (no oracle case was run with these switches)."""
    from shared_data import shared

    case = shared("synoptic-oracle", FORM_CASE)  # skips with the reason where absent
    args = json.loads((case / "case.json").read_text())["args"]
    keep = [a for a in args[:-1] if not a.startswith(("--output", "--dump"))]
    keep = [a for a, before in zip(keep, ["", *keep]) if a != "-o" and before != "-o"]
    flags = [
        f"--outputProbLabels={str(prob).lower()}",
        f"--outputCountLabels={str(count).lower()}",
        f"--showInitialNode={str(initial).lower()}",
        f"--showTerminalNode={str(terminal).lower()}",
        f"--exportAsGML={str(gml).lower()}",
    ]
    result = run([*keep, *flags, "-o", str(tmp_path / "m"), str(case / args[-1])])
    assert result.exit_code == 0, result.output
    ours = (tmp_path / ("m.gml" if gml else "m.dot")).read_text()
    theirs = (case / "model.dot").read_text()
    assert ours == synoptic_form(theirs, prob, count, initial, terminal, gml)


# -- bad input on the command line (issue 13): one line naming the file or option, exit 2,
# -- nothing written --------------------------------------------------------------------
def one_line_error(res, needle: str, folder) -> str:
    """The error line of a run that must fail with exit 2 naming ``needle``, no traceback
    and no output file; returns the line."""
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("statemine: error: "), res.output
    assert needle in lines[0], lines[0]
    assert res.exc_info is None or isinstance(res.exc_info[1], SystemExit)
    assert not list(folder.glob("out*"))
    return lines[0]


def _write_args_files(folder) -> None:
    (folder / "self.txt").write_text("-c self.txt\n")
    (folder / "a3.txt").write_text("-c b3.txt\n")
    (folder / "b3.txt").write_text("--argsFilename=c3.txt\n")
    (folder / "c3.txt").write_text("# back to the first\nargsFilename a3.txt\n")
    (folder / "folder").mkdir()
    (folder / "binary.txt").write_bytes(b"-r " + REGEX.encode() + b"\n\n\xff\xfe\x00x\n")
    (folder / "latin1.txt").write_bytes(b"-r x\n--dateFormat=d\xe9c\n")
    (folder / "nul.txt").write_bytes(b"-r x\n-s a\x00b\n")
    (folder / "huge.txt").write_bytes(b"#" + b"x" * (1 << 20) + b"\n")


@pytest.mark.parametrize(
    "path,needle",
    [
        ("self.txt", "loop: "),
        ("a3.txt", "a3.txt -> " + "{d}/b3.txt -> {d}/c3.txt -> {d}/a3.txt"),
        ("missing.txt", "-c missing.txt: cannot read the arguments file: No such file"),
        ("folder", "-c folder: not a regular file"),
        ("binary.txt", "-c binary.txt:3: a NUL byte"),
        ("latin1.txt", "-c latin1.txt:2: not UTF-8 text (byte 0xe9)"),
        ("nul.txt", "-c nul.txt:2: a NUL byte"),
        ("huge.txt", "-c huge.txt: the arguments file is over 1 MB"),
        ("cc.log/x", "-c cc.log/x: cannot read the arguments file: Not a directory"),
    ],
)
def test_bad_arguments_files_are_one_line_errors(work, path, needle):
    folder, _ = work
    _write_args_files(folder)
    needle = needle.replace("{d}", str(folder.resolve()))
    for flag in ("-c", "--argsFilename", "--argsfile"):
        res = run([*BASE, flag, path, "cc.log"])
        one_line_error(res, needle, folder)


def test_unreadable_arguments_file(work, monkeypatch):
    """Permission denied (simulated: the tests may run as root, who reads every file)."""
    folder, _ = work
    from statemine.infer.synoptic import options

    real_open = open

    def guarded(path, *args, **kwargs):
        if str(path).endswith("args.txt"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(options, "open", guarded, raising=False)
    res = run([*BASE, "-c", "args.txt", "cc.log"])
    one_line_error(res, "-c args.txt: cannot read the arguments file: Permission denied", folder)


def test_arguments_file_read_is_bounded(work, monkeypatch):
    """A large arguments file is refused after reading one byte more than the limit."""
    folder, _ = work
    from statemine.infer.synoptic import options

    (folder / "big.txt").write_bytes(b"#" * (4 << 20))
    sizes = []
    real_open = open

    class Counting:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def read(self, n=-1):
            sizes.append(n)
            return self.fh.read(n)

    monkeypatch.setattr(options, "open", lambda p, m: Counting(real_open(p, m)), raising=False)
    one_line_error(run([*BASE, "-c", "big.txt", "cc.log"]), "over 1 MB", folder)
    assert sizes == [options.ARGS_FILE_LIMIT + 1]


@pytest.mark.parametrize(
    "pattern,needle",
    [
        ("GGGG yyyy", "--dateFormat: pattern letter 'G' is not supported"),
        ("YYYY-MM-dd", "--dateFormat: pattern letter 'Y' is not supported"),
        ("ww", "--dateFormat: pattern letter 'w' is not supported"),
        ("qq", "--dateFormat: pattern letter 'q' is not supported"),
        ("dd'x", '--dateFormat: date format "dd\'x": unterminated quote'),
    ],
)
def test_bad_date_formats_name_the_option(work, pattern, needle):
    folder, _ = work
    (folder / "d.log").write_text("10/Oct/2000:13:55:36 login\n")
    args = ["-r", r"^(?<DATETIME>\S+) (?<TYPE>\w+)$", "-o", "out", f"--dateFormat={pattern}"]
    one_line_error(run([*args, "d.log"]), needle, folder)


def test_bad_dates_name_their_file_and_line_and_dash_i_skips_them(work):
    """The date's own file and line, also when ``-m`` joins lines of several files into one
    trace (the trace's first file was named before); ``-i`` (``-i=true``) drops the line."""
    folder, _ = work
    (folder / "d1.log").write_text("10/Oct/2000:13:55:36 login\n")
    (folder / "d2.log").write_text("10/Oct/2000:13:55:40 start\n31/Feb/2000:13:55:41 stop\n")
    args = ["-r", r"^(?<DATETIME>\S+) (?<TYPE>\w+)$", "-m", "one", "-o", "out", "-j"]
    line = one_line_error(run([*args, "d1.log", "d2.log"]), "d2.log:2: DATETIME:", folder)
    assert "day is out of range" in line
    for skip in ("-i", "-i=true", "--ignoreNonMatchingLines"):
        res = run([*args, skip, "d1.log", "d2.log"])
        assert res.exit_code == 0, res.output
        log = json.loads((folder / "out.json").read_text())["log"]
        assert [e["eventType"] for t in log for e in t["events"]] == ["login", "start"]
        (folder / "out.json").unlink()
        (folder / "out.dot").unlink()


def test_keep_order_refusal_names_the_file_and_line(work):
    """A trace whose times decrease in file order: the first such line, in its own file
    (several files, and several files joined by ``-m``)."""
    folder, _ = work
    (folder / "k1.log").write_text("1 a\n3 b\n")
    (folder / "k2.log").write_text("1 a\n3 b\n2 c\n4 d\n")
    (folder / "late.log").write_text("5 a\n6 b\n")
    (folder / "early.log").write_text("1 a\n2 b\n")
    base = ["-r", "^(?<TIME>)(?<TYPE>)$", "-o", "out", "--keepOrder"]
    one_line_error(run([*base, "k1.log", "k2.log"]), "k2.log:3: --keepOrder=true", folder)
    joined = [*base, "-m", "one"]
    one_line_error(run([*joined, "late.log", "early.log"]), "early.log:1: --keepOrder", folder)
    assert run([*joined, "early.log", "late.log"]).exit_code == 0
    assert run([*joined, "--keepOrder=false", "late.log", "early.log"]).exit_code == 0


def test_a_nul_byte_in_a_log_name(work):
    """From an arguments file's ``\\u0000`` escape (a command line cannot hold one); the
    pipe and device cases, which would block a test run on failure, are in test_hostile."""
    folder, _ = work
    (folder / "nul-name.txt").write_text("-r x\nlog\\u0000name\n")
    one_line_error(run([*BASE, "-c", "nul-name.txt"]), "a file name with a NUL byte", folder)


#: Output switches at their non-default value, each with the file it shows in.
SWITCHES = {
    "outputProbLabels": ("false", "out.dot"),
    "outputCountLabels": ("true", "out.dot"),
    "outputSupportCount": ("true", "out.invariants.txt"),
    "outputInvariantsToFile": ("true", "out.invariants.txt"),
    "outputJSON": ("true", "out.json"),
    "exportAsGML": ("true", "out.gml"),
    "showInitialNode": ("false", "out.dot"),
    "showTerminalNode": ("false", "out.dot"),
}


@pytest.mark.parametrize("name", sorted(SWITCHES))
def test_output_switch_both_ways(work, name):
    """Each switch changes its file; the other value given later on the command line (or
    on the command line over an arguments file) undoes it, as plume-lib's last value wins."""
    folder, _ = work
    value, shown = SWITCHES[name]
    other = "true" if value == "false" else "false"
    companion = ["--outputInvariantsToFile=true"] if name == "outputSupportCount" else []
    assert run([*BASE, *companion, "cc.log"]).exit_code == 0
    base = outputs(folder)
    for p in folder.glob("out*"):
        p.unlink()
    assert run([*BASE, *companion, f"--{name}={value}", "cc.log"]).exit_code == 0
    changed = outputs(folder)
    assert changed != base and changed.get(shown) != base.get(shown), name
    for p in folder.glob("out*"):
        p.unlink()
    assert (
        run([*BASE, *companion, f"--{name}={value}", f"--{name}={other}", "cc.log"]).exit_code == 0
    )
    assert outputs(folder) == base
    for p in folder.glob("out*"):
        p.unlink()
    (folder / "switch.txt").write_text(f"{name}={value}\n")
    res = run([*BASE, *companion, "-c", "switch.txt", f"--{name}={other}", "cc.log"])
    assert res.exit_code == 0 and outputs(folder) == base
