"""The ``statemine`` entry point (statemine.launch): ``infer --engine
synoptic|ktails|perfume|synoptic-jar`` runs without click and the modules its path does
not use (issue 13: the whole command on a 1e4-event log within 0.2 s, timed by
benchmarks/bench_synoptic.py --cli, not here), and does, prints and exits exactly as
the click command does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from synoptic_reference import generated_event_log

from statemine.infer.synoptic.command import TOOL_OF_ENGINE
from statemine.launch import _echo
from statemine.runtime import engine_in, without_engine

ROOT = Path(__file__).resolve().parents[1]  # this checkout's package

#: Modules the Synoptic engines' command must not import: click (their options are the
#: tool's own), the data-frame stack, the other commands, and numpy or standard modules
#: the path does not use (each is milliseconds of a command of about 0.2 s).
NOT_LOADED = (
    "click",
    "rich",
    "pandas",
    "pyarrow",
    "scipy",
    "networkx",
    "matplotlib",
    "statemine.cli",
    "statemine.commands",
    "statemine.traces",
    "statemine.stats",
    "numpy.ma",
    "tempfile",
    "shutil",
)

REGEX = ["-r", "^(?<DTIME>)(?<TYPE>)$", "-s", "^--$"]


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("STATEMINE_SYNOPTIC_JAR", None)
    env.update(extra)
    return env


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """A generated event log that needs refinement."""
    path = tmp_path / "cc.log"
    path.write_text(generated_event_log(40, seed=3)[1])
    return path


def test_the_synoptic_command_loads_none_of_the_modules_it_does_not_use(log, tmp_path):
    """``python -m statemine infer --engine synoptic ...`` in a fresh interpreter writes
    its files and leaves none of :data:`NOT_LOADED` in ``sys.modules``."""
    seen = tmp_path / "modules.json"
    code = (
        "import atexit, json, runpy, sys\n"
        f"atexit.register(lambda: open({str(seen)!r}, 'w').write(json.dumps(sorted(sys.modules))))\n"
        "sys.argv = ['statemine', *sys.argv[1:]]\n"
        "runpy.run_module('statemine', run_name='__main__')\n"
    )
    args = ["infer", "--engine", "synoptic", *REGEX, "-o", str(tmp_path / "m"), "-j", str(log)]
    args += ["--outputInvariantsToFile=true", "--outputSupportCount=true", "--randomSeed=1"]
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=_env()
    )
    assert done.returncode == 0, done.stderr
    assert "synoptic: 40 traces" in done.stderr
    assert {p.name for p in tmp_path.glob("m.*")} == {"m.dot", "m.json", "m.invariants.txt"}
    loaded = set(json.loads(seen.read_text()))
    assert "statemine.infer.synoptic.engine" in loaded  # the hook saw the whole run
    found = sorted(m for m in loaded if m.split(".")[0] in NOT_LOADED or m in NOT_LOADED)
    found += sorted(m for m in loaded if any(m.startswith(p + ".") for p in NOT_LOADED))
    assert sorted(set(found)) == []


def _run(args: list[str], cwd: Path, via_click: bool, env: dict[str, str]) -> tuple:
    """(exit status, stdout, stderr, {file name: bytes} written in ``cwd``) of ``statemine
    ARGS`` through the entry point or through the click group."""
    before = {p.name for p in cwd.iterdir()}
    if via_click:
        command = [
            sys.executable,
            "-c",
            "from statemine.cli import main; main(prog_name='statemine')",
            *args,
        ]
    else:
        command = [sys.executable, "-m", "statemine", *args]
    done = subprocess.run(command, capture_output=True, cwd=cwd, env=env, timeout=120)
    files = {p.name: p.read_bytes() for p in cwd.iterdir() if p.name not in before}
    for name in files:
        (cwd / name).unlink()
    return done.returncode, done.stdout, done.stderr, files


CASES = {
    "synoptic, files": (
        ["synoptic", *REGEX, "-o", "m", "--outputInvariantsToFile=true", "-j", "cc.log"],
        0,
    ),
    "synoptic, dot on stdout": (["synoptic", *REGEX, "--randomSeed=5", "cc.log"], 0),
    "ktails": (["ktails", *REGEX, "-k", "2", "-o", "k", "cc.log"], 0),
    "perfume": (["perfume", *REGEX, "-o", "p", "cc.log"], 0),
    "help": (["synoptic", "--help"], 0),
    "version": (["perfume", "-V"], 0),
    "unknown option": (["synoptic", *REGEX, "--noSuchOption=1", "cc.log"], 2),
    "missing log": (["synoptic", *REGEX, "missing.log"], 2),
    "bad regex": (["synoptic", "-r", "^(?<TYPE>[a-$", "cc.log"], 2),
    "unwritable prefix": (["synoptic", *REGEX, "-o", "cc.log/m", "cc.log"], 2),
    "no jar": (["synoptic-jar", *REGEX, "cc.log"], 2),
    "ANSI style in the prefix": (["synoptic", *REGEX, "-o", "\x1b[1mm", "cc.log"], 0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_entry_point_does_what_the_click_command_does(case, log):
    """Exit status, stdout, stderr and the files written are byte for byte the click
    command's, for runs, help, and each kind of error (one line, exit 2)."""
    args, status = CASES[case]
    folder = log.parent
    argv = ["infer", "--engine", *args]
    fast, slow = (_run(argv, folder, via, _env()) for via in (False, True))
    assert fast[0] == status, fast[2]
    assert fast == slow
    if status == 2:
        assert fast[1] == b"" and fast[2].count(b"\n") == 1
        assert fast[2].startswith(b"statemine: error: ")


@pytest.mark.parametrize("jar", ["folder", "missing.jar", ""])
def test_the_jar_variable_is_taken_as_click_takes_it(jar, log):
    """``STATEMINE_SYNOPTIC_JAR`` (``--synoptic-jar``'s default): a directory is click's
    error (the entry point leaves it to click), a missing file or an empty value is
    accepted; either way the outcome is the click command's."""
    folder = log.parent
    (folder / "folder").mkdir(exist_ok=True)
    env = _env(STATEMINE_SYNOPTIC_JAR=jar)
    argv = ["infer", "--engine", "synoptic", *REGEX, "-o", "m", "cc.log"]
    fast, slow = (_run(argv, folder, via, env) for via in (False, True))
    assert fast == slow
    assert fast[0] == (2 if jar == "folder" else 0), fast[2]


def test_engine_arguments_and_the_engine_table():
    """The entry point's reading of ``--engine`` is the click command's (one function),
    and every engine the table names is one ``statemine infer --engine`` accepts."""
    assert engine_in(["a.log", "--engine", "ktails", "-k", "2"]) == "ktails"
    assert engine_in(["--engine"]) is None
    assert without_engine(["--engine=perfume", "x"]) == ["x"]
    assert set(TOOL_OF_ENGINE) == {"synoptic", "synoptic-jar", "ktails", "perfume"}


def test_echo_is_click_echo_on_plain_streams(capsys):
    """:func:`_echo` writes as ``click.echo`` does, ANSI styles stripped off a terminal."""
    import click

    for message, kwargs in [("a\n", {"nl": False}), ("line", {"err": True}), ("\x1b[1mx", {})]:
        _echo(message, **kwargs)
        ours = capsys.readouterr()
        click.echo(message, **kwargs)
        assert ours == capsys.readouterr()


def test_exit_process_does_what_an_exit_does_for_the_command(tmp_path):
    """:func:`statemine.launch.exit_process` runs atexit handlers and flushes stdout
    before ending the process with the status; a running non-daemon thread is waited
    for, as a normal exit does."""
    done_file = tmp_path / "thread-done"
    code = (
        "import atexit, sys, threading, time\n"
        "from statemine.launch import exit_process\n"
        "atexit.register(lambda: sys.stderr.write('atexit ran\\n'))\n"
        "def late():\n"
        "    time.sleep(0.2)\n"
        f"    open({str(done_file)!r}, 'w').close()\n"
        "threading.Thread(target=late).start()\n"
        "sys.stdout.write('unflushed output')\n"
        "exit_process(3)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=60
    )
    assert done.returncode == 3
    assert done.stdout == "unflushed output"
    assert done.stderr == "atexit ran\n"
    assert done_file.exists()
    quick = subprocess.run(
        [sys.executable, "-c", code.replace("threading.Thread(target=late).start()\n", "")],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert (quick.returncode, quick.stdout, quick.stderr) == (3, "unflushed output", "atexit ran\n")


def test_a_profiled_run_still_reports(log, tmp_path):
    """Under ``python -m cProfile`` the command exits normally, so the profile is
    written (it is written after the program returns)."""
    out = tmp_path / "run.prof"
    args = ["infer", "--engine", "synoptic", *REGEX, "-o", str(tmp_path / "m"), str(log)]
    done = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "statemine", *args],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size > 0
