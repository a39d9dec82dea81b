"""``statemine infer --engine synoptic|synoptic-jar`` and ``statemine check-model``."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from shared_data import shared
from synoptic_reference import generated_event_log

from statemine.cli import main

CASE = "repo-osx-login"
STATE_CASE = "repo-simple-email"  # one node per type: our files equal Synoptic's


def case_args(case: str) -> list[str]:
    return json.loads((shared("synoptic-oracle", case) / "case.json").read_text())["args"]


@pytest.fixture
def in_case(tmp_path, monkeypatch):
    """Work in a temporary copy of an oracle case folder (read from ../shared; skips
    where it is absent)."""

    def enter(case: str):
        work = tmp_path / case
        shutil.copytree(shared("synoptic-oracle", case), work)
        for name in ("model.dot", "model.json", "model.invariants.txt"):
            (work / name).rename(work / f"synoptic.{name}")
        monkeypatch.chdir(work)
        return work

    return enter


def test_synoptic_arguments_run_unchanged_and_give_synoptics_files(in_case):
    work = in_case(STATE_CASE)
    result = CliRunner().invoke(main, ["infer", "--engine", "synoptic", *case_args(STATE_CASE)])
    assert result.exit_code == 0, result.output
    for name in ("model.dot", "model.invariants.txt"):
        assert (work / name).read_text() == (work / f"synoptic.{name}").read_text()
    ours, theirs = (
        json.loads((work / n).read_text()) for n in ("model.json", "synoptic.model.json")
    )
    assert ours["log"] == theirs["log"]
    key = lambda p: json.dumps(p, sort_keys=True)  # noqa: E731
    assert sorted(map(key, ours["partitions"])) == sorted(map(key, theirs["partitions"]))


def test_check_model_accepts_good_models_and_rejects_broken_ones(in_case):
    work = in_case(CASE)
    args = case_args(CASE)
    runner = CliRunner()
    assert runner.invoke(main, ["infer", "--engine", "synoptic", *args]).exit_code == 0
    opts = ["-r", args[args.index("-r") + 1], "-s", args[args.index("-s") + 1]]
    for model in ("model.dot", "synoptic.model.dot", "model.json"):
        res = runner.invoke(main, ["check-model", model, "trace.txt", *opts])
        assert res.exit_code == 0, res.output
        assert "5/5 traces accepted; 16/16 invariants hold" in res.output
    # drop one edge: a trace is rejected; the initial graph: invariants fail
    lines = (work / "model.dot").read_text().splitlines()
    edge = next(i for i, line in enumerate(lines) if "->" in line)
    (work / "broken.dot").write_text("\n".join(lines[:edge] + lines[edge + 1 :]) + "\n")
    res = runner.invoke(main, ["check-model", "broken.dot", "trace.txt", *opts])
    assert res.exit_code == 1 and "rejected trace" in res.output
    assert (
        runner.invoke(
            main, ["infer", "--engine", "synoptic", *args, "--noRefinement=true", "-o", "flat"]
        ).exit_code
        == 0
    )
    res = runner.invoke(main, ["check-model", "flat.dot", "trace.txt", *opts])
    assert res.exit_code == 1 and "violated:" in res.output


REGEX, SEP = "^(?<DTIME>)(?<TYPE>)$", "^--$"


@pytest.fixture
def generated(tmp_path, monkeypatch):
    """A generated event log (needs refinement) in a temporary working folder."""
    traces, text = generated_event_log(40, seed=3)
    (tmp_path / "cc.log").write_text(text)
    monkeypatch.chdir(tmp_path)
    return tmp_path, traces


def test_generated_log_end_to_end(generated):
    """Without ../shared: the command's files describe the engine's model of the parsed
    log, check-model accepts it, and the unrefined graph fails the check."""
    from statemine.infer.synoptic import infer_log
    from statemine.infer.synoptic.formats import read_dot, to_dot, to_invariants_txt
    from statemine.infer.synoptic.log import EventLog

    work, traces = generated
    runner = CliRunner()
    res = runner.invoke(
        main,
        [
            "infer",
            "--engine",
            "synoptic",
            "-r",
            REGEX,
            "-s",
            SEP,
            "-o",
            "model",
            "--randomSeed=2",
            "--outputCountLabels=true",
            "--outputInvariantsToFile=true",
            "--outputSupportCount=true",
            "-j",
            "cc.log",
        ],
    )
    assert res.exit_code == 0, res.output
    expected = infer_log(EventLog.from_sequences(traces), seed=2)
    assert (work / "model.dot").read_text() == to_dot(expected.model)
    assert (work / "model.invariants.txt").read_text() == to_invariants_txt(expected.invariants)
    logged = json.loads((work / "model.json").read_text())["log"]
    assert [[e["eventType"] for e in tr["events"]] for tr in logged] == traces
    assert (
        read_dot(work / "model.dot").number_of_nodes() > len({t for tr in traces for t in tr}) + 2
    )
    res = runner.invoke(main, ["check-model", "model.dot", "cc.log", "-r", REGEX, "-s", SEP])
    assert res.exit_code == 0 and "40/40 traces accepted" in res.output, res.output
    assert (
        runner.invoke(
            main,
            [
                "infer",
                "--engine",
                "synoptic",
                "-r",
                REGEX,
                "-s",
                SEP,
                "-o",
                "flat",
                "--noRefinement=true",
                "cc.log",
            ],
        ).exit_code
        == 0
    )
    res = runner.invoke(main, ["check-model", "flat.dot", "cc.log", "-r", REGEX, "-s", SEP])
    assert res.exit_code == 1 and "violated:" in res.output


def test_bad_input_writes_nothing(generated):
    work, _ = generated
    (work / "bad.txt").write_text("login attempt\n\n--\n")
    res = CliRunner().invoke(
        main, ["infer", "--engine", "synoptic", "-r", "^(?<TYPE>\\w+)$", "-o", "out", "bad.txt"]
    )
    assert res.exit_code == 2
    assert "bad.txt:1: lines match none of the regexes" in res.output
    assert not list(work.glob("out*")) and not list(work.glob(".out*"))
    res = CliRunner().invoke(
        main, ["infer", "--engine", "synoptic", "-r", "^(?<TYPE>", "-o", "out", "cc.log"]
    )
    assert res.exit_code == 2 and "does not compile" in res.output


def test_synoptic_jar_engine_runs_java_and_reads_its_files(in_case, tmp_path, monkeypatch):
    """A stand-in ``java`` on PATH plays Synoptic: it records its arguments and writes the
    oracle's files to the -o prefix, which statemine copies and reads back."""
    work = in_case(CASE)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    java = bindir / "java"
    java.write_text(
        "#!/bin/sh\n"
        'printf "%s\\n" "$@" > "$FAKE_SYNOPTIC/args.txt"\n'
        'prev=""; for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done\n'
        'for f in dot json invariants.txt; do cp "$FAKE_SYNOPTIC/synoptic.model.$f" "$out.$f"; done\n'
    )
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    jar = tmp_path / "synoptic.jar"
    jar.write_bytes(b"")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SYNOPTIC", str(work))
    monkeypatch.setenv("STATEMINE_SYNOPTIC_JAR", str(jar))
    res = CliRunner().invoke(main, ["infer", "--engine", "synoptic-jar", *case_args(CASE)])
    assert res.exit_code == 0, res.output
    assert (work / "model.dot").read_text() == (work / "synoptic.model.dot").read_text()
    sent = (work / "args.txt").read_text().splitlines()
    assert sent[:4] == [
        "-ea",
        "-cp",
        f"{jar.resolve()}{os.pathsep}{jar.resolve().parent}/*",
        "synoptic.main.SynopticMain",
    ]
    assert "(?<TYPE>.+)" in sent and "--randomSeed=1" in sent and "--outputJSON=true" in sent


def test_synoptic_jar_without_a_jar_is_a_usage_error(in_case, monkeypatch):
    in_case(CASE)
    monkeypatch.delenv("STATEMINE_SYNOPTIC_JAR", raising=False)
    res = CliRunner().invoke(main, ["infer", "--engine", "synoptic-jar", *case_args(CASE)])
    assert res.exit_code == 2 and "STATEMINE_SYNOPTIC_JAR" in res.output


def test_library_call_takes_the_commands_options_and_writes_its_files(generated):
    """``synoptic(...)`` (a notebook's call, Synoptic's option names as keywords) writes
    the files the command writes for the same options, byte for byte, and returns the
    model; ``check_model_files`` is check-model's verdict."""
    from statemine.infer.synoptic.command import check_model_files, synoptic

    work, traces = generated
    args = ["-r", REGEX, "-s", SEP, "--randomSeed=2", "--outputInvariantsToFile=true", "-j"]
    res = CliRunner().invoke(main, ["infer", "--engine", "synoptic", *args, "-o", "cli", "cc.log"])
    assert res.exit_code == 0, res.output
    done = synoptic(
        "cc.log",
        regExps=[REGEX],
        separatorRegExp=SEP,
        randomSeed=2,
        outputInvariantsToFile=True,
        outputJSON=True,
        outputPathPrefix="lib",
    )
    assert [p.name for p in done.written] == ["lib.invariants.txt", "lib.dot", "lib.json"]
    for suffix in (".dot", ".invariants.txt", ".json"):
        assert (work / f"lib{suffix}").read_bytes() == (work / f"cli{suffix}").read_bytes()
    assert done.result.model.n_nodes == len(done.result.to_networkx())
    assert done.messages[-1].startswith("synoptic: ") and "wrote" in done.messages[-1]
    # without a prefix nothing is written and the dot model is the output
    bare = synoptic("cc.log", regExps=[REGEX], separatorRegExp=SEP, randomSeed=2)
    assert bare.written == [] and bare.stdout == (work / "lib.dot").read_text()
    assert check_model_files(work / "lib.dot", ["cc.log"], [REGEX], SEP).report.ok
    flat = check_model_files(work / "lib.dot", ["cc.log"], [REGEX], SEP, invariants_file=None)
    assert flat.log.n_traces == len(traces)


def test_library_call_refuses_what_the_command_refuses(generated):
    from statemine.errors import UsageError
    from statemine.infer.synoptic.command import synoptic

    with pytest.raises(UsageError, match="multipleRelations"):
        synoptic("cc.log", regExps=[REGEX], multipleRelations=True)
    with pytest.raises(UsageError, match="unknown Synoptic engine"):
        synoptic("cc.log", engine="nope")
    assert not list(generated[0].glob("model*"))


def test_a_small_log_runs_without_pandas_or_pyarrow(generated, tmp_path, monkeypatch):
    """The command's start-up is most of its time on small logs (issue 13: a 1e4-event
    log within 0.2 s, see benchmarks/bench_synoptic.py): it reads, infers and writes
    every file without importing pandas or pyarrow (each import costs more than the
    work), nor scipy, networkx, matplotlib, the other commands' modules or the
    statistics stack (``statemine.commands``, ``statemine.stats``), and writes what the
    Arrow paths (large inputs) write."""
    import subprocess
    import sys

    import statemine.infer.synoptic.formats as formats
    import statemine.parse.regex as regex_mod

    folder, _ = generated

    def args(prefix):
        return [
            "infer",
            "--engine",
            "synoptic",
            "-r",
            "^(?<DTIME>)(?<TYPE>)$",
            "-s",
            "^--$",
            "-o",
            str(prefix),
            "--outputInvariantsToFile=true",
            "--outputSupportCount=true",
            "-j",
            str(folder / "cc.log"),
        ]

    heavy = ("pandas", "pyarrow", "scipy", "networkx", "matplotlib", "statemine.commands")
    heavy += ("statemine.stats", "statemine.output", "statemine.traces")
    heavy += tuple(f"statemine.cli.{m}" for m in ("compare", "lab", "patch", "store", "tcp"))
    code = (
        "import sys\n"
        "from statemine.cli import main\n"
        "try:\n"
        f"    main({args(tmp_path / 'plain')!r})\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )
    root = str(Path(__file__).resolve().parents[1])  # this checkout's package
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout
    monkeypatch.setattr(regex_mod, "SMALL_INPUT_BYTES", -1)
    monkeypatch.setattr(formats, "PLAIN_JSON_EVENTS", 0)
    result = CliRunner().invoke(main, args(tmp_path / "arrow"))
    assert result.exit_code == 0, result.output
    for suffix in (".dot", ".invariants.txt", ".json"):
        plain = (tmp_path / f"plain{suffix}").read_bytes()
        assert plain == (tmp_path / f"arrow{suffix}").read_bytes(), suffix
