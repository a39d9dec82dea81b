"""Running a real Synoptic (``synoptic.jar``) and reading its outputs back.

Synoptic is not on any package registry: build it from ModelInference/synoptic
(``ant synoptic`` in the repository root makes ``lib/synoptic.jar``; see
docs/synoptic-engine.md, which also notes the patch it needs to run on JDK 17).  It runs
as ``java -ea -cp lib/synoptic.jar:lib/* synoptic.main.SynopticMain ...``.  The jar is
found from the argument, or the environment variable ``STATEMINE_SYNOPTIC_JAR``; ``java``
must be on PATH.  Synoptic
runs in a temporary directory with ``-o <tmp>/model`` plus the flags that make it write
``model.invariants.txt`` and ``model.json``; the model is rebuilt from its ``model.json``
partitions over statemine's own parse of the same logs (which must agree with Synoptic's
``log``), so both engines give the same :class:`~.model.PartitionModel` object.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ...errors import InputError, UsageError
from .formats import model_from_json, read_invariants_txt
from .log import EventLog
from .model import PartitionModel

#: Environment variable naming the jar.
JAR_ENV = "STATEMINE_SYNOPTIC_JAR"
#: Synoptic's entry point; the jar's directory (``lib/`` of the Synoptic checkout, with
#: plume.jar and the other dependencies) is on the class path too.
MAIN_CLASS = "synoptic.main.SynopticMain"
#: Flags always given so that Synoptic writes every file statemine reads.
OUTPUT_FLAGS = (
    "--outputInvariantsToFile=true",
    "--outputJSON=true",
    "--outputSupportCount=true",
    "--outputProbLabels=true",
    "--outputCountLabels=true",
)


@dataclass
class JarRun:
    """A finished Synoptic run: its files' text and the rebuilt model."""

    model: PartitionModel
    invariants: pd.DataFrame
    texts: dict[str, str]
    log_text: str


def find_jar(jar: str | os.PathLike | None) -> Path:
    """The jar to run (argument, else ``$STATEMINE_SYNOPTIC_JAR``); UsageError if none."""
    value = jar or os.environ.get(JAR_ENV)
    if not value:
        raise UsageError(
            "--engine synoptic-jar needs --synoptic-jar PATH or "
            f"${JAR_ENV} (see docs/synoptic-engine.md for building it)"
        )
    path = Path(value)
    if not path.is_file():
        raise UsageError(f"synoptic jar {path} does not exist")
    if shutil.which("java") is None:
        raise UsageError("--engine synoptic-jar needs java on PATH")
    return path


def synoptic_args(
    regexes: Sequence[str],
    separator: str | None,
    mapping: str | None,
    ignore_nonmatching: bool,
    seed: int,
    extra: Sequence[str],
) -> list[str]:
    """Synoptic's argument list (without ``-o`` and the logs)."""
    args: list[str] = []
    for r in regexes:
        args += ["-r", r]
    if separator is not None:
        args += ["-s", separator]
    if mapping is not None:
        args += ["-m", mapping]
    if ignore_nonmatching:
        args.append("-i")
    args.append(f"--randomSeed={seed}")
    keep = [a for a in extra if not a.startswith(("--randomSeed", "--output")) and a != "-i"]
    return args + keep + list(OUTPUT_FLAGS)


def run_jar(
    jar: str | os.PathLike | None,
    logs: Sequence[str | os.PathLike],
    log: EventLog,
    regexes: Sequence[str],
    separator: str | None,
    mapping: str | None,
    ignore_nonmatching: bool,
    seed: int,
    extra: Sequence[str] = (),
    timeout: float | None = None,
) -> JarRun:
    """Run Synoptic on ``logs`` and rebuild its model over ``log`` (statemine's parse of
    the same logs).  :class:`InputError` with Synoptic's own output if it fails."""
    jar_path = find_jar(jar)
    with tempfile.TemporaryDirectory(prefix="statemine-synoptic-") as tmp:
        prefix = Path(tmp) / "model"
        classpath = os.pathsep.join([str(jar_path.resolve()), str(jar_path.resolve().parent / "*")])
        cmd = [
            "java",
            "-ea",
            "-cp",
            classpath,
            MAIN_CLASS,
            *synoptic_args(regexes, separator, mapping, ignore_nonmatching, seed, extra),
            "-o",
            str(prefix),
            *[str(Path(p).resolve()) for p in logs],
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp)
        except subprocess.TimeoutExpired:
            raise InputError(jar_path, None, f"Synoptic did not finish in {timeout} s") from None
        output = (proc.stdout or "") + (proc.stderr or "")
        files = {
            name: Path(tmp) / name for name in ("model.dot", "model.invariants.txt", "model.json")
        }
        if proc.returncode != 0 or not all(p.is_file() for p in files.values()):
            tail = "\n".join(output.strip().splitlines()[-15:])
            raise InputError(jar_path, None, f"Synoptic failed (exit {proc.returncode}):\n{tail}")
        model = model_from_json(files["model.json"], log)
        invariants = read_invariants_txt(files["model.invariants.txt"])
        texts = {name: p.read_text(encoding="utf-8") for name, p in files.items()}
    return JarRun(model, invariants, texts, output)
