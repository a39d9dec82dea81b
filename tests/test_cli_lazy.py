"""The command line loads a command's module only when that command runs
(statemine.cli.COMMAND_MODULES): the table must name every command the modules define."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from statemine.cli import COMMAND_MODULES, main


def test_the_table_names_every_command_and_its_module():
    """Importing every module of the table registers exactly the table's commands, each
    defined in the module the table names (a new command missing from the table, or a
    stale entry, fails here)."""
    for module in sorted(set(COMMAND_MODULES.values())):
        importlib.import_module(f"statemine.cli.{module}")
    assert set(main.commands) == set(COMMAND_MODULES)
    for name, command in main.commands.items():
        callback = command.callback
        assert callback is not None, name
        defined_in = sys.modules[callback.__module__].__name__
        assert defined_in == f"statemine.cli.{COMMAND_MODULES[name]}", name


def test_help_lists_every_command_and_each_runs():
    """``statemine --help`` lists the commands without them being loaded first, and each
    one's own ``--help`` works through the lazy lookup."""
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0, result.output
    for name in COMMAND_MODULES:
        assert f"  {name} " in result.output, name
        sub = CliRunner().invoke(main, [name, "--help"])
        assert sub.exit_code == 0, (name, sub.output)
        assert "Usage:" in sub.output
    assert main.get_command(click.Context(main), "nope") is None


def test_one_command_loads_only_its_module():
    """``statemine check-model --help`` in a fresh process imports statemine.cli.synoptic
    and none of the other commands' modules."""
    loaded = _loaded_after(["check-model", "--help"], "m.startswith('statemine.cli.')")
    assert loaded == "['statemine.cli.synoptic']"


def _loaded_after(args: list[str], which: str) -> str:
    """``statemine ARGS`` run in a fresh Python process (this checkout's package): the
    sorted list of the modules ``m`` in sys.modules for which the expression ``which``
    holds, as Python prints it."""
    code = (
        "import sys\n"
        "from statemine.cli import main\n"
        "try:\n"
        f"    main({args!r})\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        f"print(sorted(m for m in sys.modules if {which}))\n"
    )
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_infer_of_a_log_loads_no_graph_library_nor_the_store(tmp_path):
    """``statemine infer LOG --out DIR --no-svg`` of a statemine log, in a fresh process,
    writes its files without importing networkx (~0.14 s of CPU: the model's DOT and JSON
    come from infer.observed.ModelGraph), statemine.store (is_store is store_meta's), the
    Synoptic engines' command module, subprocess (only Graphviz needs it) or numpy.ma
    (np.unique and np.quantile load it: stats use a sort and a partition instead)."""
    log = tmp_path / "run.log"
    log.write_text(
        "STATEMINE t=0.0 conn=a role=server state=SlowStart\n"
        "STATEMINE t=1.0 conn=a role=server state=Recovery\n"
        "STATEMINE t=3.0 conn=a role=server state=SlowStart\n"
    )
    out = tmp_path / "out"
    heavy = ("networkx", "statemine.store", "statemine.infer.synoptic.command")
    heavy += ("subprocess", "numpy.ma")
    assert (
        _loaded_after(["infer", str(log), "--out", str(out), "--no-svg"], f"m in {heavy!r}") == "[]"
    )
    assert sorted(p.name for p in out.iterdir()) == [
        "model.dot",
        "model.json",
        "provenance.json",
        "states.csv",
        "transitions.csv",
    ]
    model = json.loads((out / "model.json").read_text())
    edges = {(e["source"], e["target"]): e["count"] for e in model["edges"]}
    assert edges == {
        ("INITIAL", "SlowStart"): 1,
        ("SlowStart", "Recovery"): 1,
        ("Recovery", "SlowStart"): 1,
        ("SlowStart", "TERMINAL"): 1,
    }


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["diff", "a", "b", "--permutations", "0"], "'--permutations'"),
        (["infer", "--bootstrap", "-1", "x.log"], "'--bootstrap'"),
        (["diff", "--no-such-option", "a", "b"], "--no-such-option"),
        (["infer"], "'LOGS...'"),
        (["nope"], "'nope'"),
        (["store", "info"], "'--store'"),
    ],
)
def test_usage_error_is_one_line_exit_2(args, names):
    """A bad option value, an unknown option or command, a missing argument: one line on
    stderr naming it and pointing at the command's help, exit 2, nothing on stdout (click
    itself prints a usage block over several lines)."""
    proc = subprocess.run(
        [sys.executable, "-m", "statemine", *args], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("statemine: error: "), lines
    assert names in lines[0] and "--help" in lines[0], lines


def test_bare_group_still_shows_its_help():
    """``statemine store`` without a command shows the group's help (click's own
    behaviour), not an error line."""
    proc = subprocess.run(
        [sys.executable, "-m", "statemine", "store"], capture_output=True, text=True, timeout=60
    )
    assert "Commands:" in proc.stdout + proc.stderr
    assert "statemine: error" not in proc.stderr
