"""Every reading command over every shipped trace folder and every pair of them (issue 25
item 3): each ends in exit 0, or exit 2 with one ``statemine: error:`` line (check-model
also 1: "the model does not accept the traces", its documented verdict), never a
traceback. The shipped folders share runs (quic-go-versions/ and quiche-jitter/), carry
different label columns and different stacks, so their unions are the inputs a user meets
first.

The commands run in process (click's runner). So that 66 inputs x 8 commands fit in
minutes, a Parquet file is loaded once (``statemine.traces.load`` memoized: a pure
function of the file) and one list of inputs is read once
(``statemine.parse.read`` memoized per arguments): every command still gets what the
reader returns for exactly its inputs, and every first read runs the real reader. Slow
tier: on the shared 2-core machine at load 11, 12.6 min wall with ``-n 2`` for all but
explain (report alone 60% of it) and 5.8 min with ``-n 1`` for explain.

Not run here: ``store add`` (writes a store, 20 s per pair; tests/test_store.py),
``lab run/rerun`` (run stacks; tests/test_lab_*.py), ``tcp record`` (root, ftrace).
"""

from __future__ import annotations

import functools
import itertools
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import statemine.parse
import statemine.traces
from statemine.cli import main

TRACES = Path(__file__).resolve().parents[1] / "traces"
FOLDERS = sorted(p for p in TRACES.iterdir() if (p / "runs").is_dir())
#: Every shipped folder alone, then every pair of them.
INPUTS = [(f,) for f in FOLDERS] + list(itertools.combinations(FOLDERS, 2))

pytestmark = pytest.mark.slow


def _freeze(value: object) -> object:
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return value if isinstance(value, (str, int, float, bool, type(None))) else str(value)


@pytest.fixture(scope="module")
def memoized() -> Iterator[None]:
    """``statemine.traces.load`` and ``statemine.parse.read`` memoized for this module."""
    load = functools.lru_cache(maxsize=None)(statemine.traces.load)
    reads: dict = {}
    real_read = statemine.parse.read

    def read(paths, *args, **kwargs):
        key = (_freeze(paths), _freeze(args), _freeze(kwargs))
        if key not in reads:
            reads[key] = real_read(paths, *args, **kwargs)
        return reads[key]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(statemine.traces, "load", load)
        mp.setattr(statemine.parse, "read", read)
        yield


def _args(command: str, inputs: tuple[Path, ...], tmp: Path, model: Path) -> list[str]:
    """The command line of ``command`` over ``inputs`` (a diff of one folder: with itself)."""
    paths = [str(p) for p in inputs]
    quick = ["--permutations", "9", "--bootstrap", "0"]
    return {
        "infer": ["infer", *paths, "--bootstrap", "0"],
        "read": ["read", *paths, "--out", str(tmp / "read.parquet")],
        "diff": ["diff", paths[0], paths[-1], "--out", str(tmp / "diff"), "--no-svg", *quick],
        "explain": [
            "explain",
            *(paths[0], paths[-1]),
            *("--out", str(tmp / "explain"), "--permutations", "199", "--bootstrap", "0"),
        ],
        "report": ["report", *paths[:2], "--out", str(tmp / "report.html"), *quick],
        "tcp read": ["tcp", "read", *paths, "--out", str(tmp / "tcp.parquet")],
        "infer --engine synoptic": ["infer", "--engine", "synoptic", *paths, "-o", str(tmp / "s")],
        "check-model": ["check-model", str(model), *paths],
        "lab findings": ["lab", "findings", str(tmp / "root"), *quick],
    }[command]


COMMANDS = (
    "infer",
    "read",
    "diff",
    "explain",
    "report",
    "tcp read",
    "infer --engine synoptic",
    "check-model",
    "lab findings",
)


@pytest.mark.parametrize("first", [f.name for f in FOLDERS] or ["-"])
@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_reads_every_shipped_folder_and_pair(command, first, memoized, tmp_path):
    """``command`` over the folder ``first`` alone and with each later folder (one test
    item per first folder, so that pytest-xdist spreads the work)."""
    if len(FOLDERS) < 2:
        pytest.skip("the shipped traces/ folders are absent (an sdist or wheel)")
    model = tmp_path / "model.dot"  # a model of one folder, checked against every input
    runner = CliRunner()
    res = runner.invoke(
        main, ["infer", str(TRACES / "tcp-mobile"), "--out", str(tmp_path), "--no-svg"]
    )
    assert res.exit_code == 0, res.output
    failures = []
    for inputs in (i for i in INPUTS if i[0].name == first):
        work = tmp_path / "work"
        shutil.rmtree(work, ignore_errors=True)
        (work / "root").mkdir(parents=True)
        for folder in inputs:  # lab findings reads ROOT/<scenario>
            (work / "root" / folder.name).symlink_to(folder)
        res = runner.invoke(main, _args(command, inputs, work, model))
        names = " + ".join(f.name for f in inputs)
        lines = res.stderr.splitlines()
        if res.exception is not None and not isinstance(res.exception, SystemExit):
            failures.append(f"{names}: {type(res.exception).__name__}: {res.exception}")
        elif "Traceback" in res.output:
            failures.append(f"{names}: a traceback: {res.output[-800:]!r}")
        elif res.exit_code == 2:
            errors = [line for line in lines if line.startswith("statemine: error: ")]
            if errors != lines[-1:]:
                failures.append(f"{names}: exit 2 without one error line: {res.stderr!r}")
        elif res.exit_code not in ((0, 1) if command == "check-model" else (0,)):
            failures.append(f"{names}: exit {res.exit_code}: {res.output[-500:]!r}")
    assert not failures, "\n".join(failures)
