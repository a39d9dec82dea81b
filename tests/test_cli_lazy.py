"""The command line loads a command's module only when that command runs
(statemine.cli.COMMAND_MODULES): the table must name every command the modules define."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import click
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
    code = (
        "import sys\n"
        "from statemine.cli import main\n"
        "try:\n"
        "    main(['check-model', '--help'])\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "print(sorted(m for m in sys.modules if m.startswith('statemine.cli.')))\n"
    )
    root = str(Path(__file__).resolve().parents[1])  # this checkout's package
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "['statemine.cli.synoptic']"
