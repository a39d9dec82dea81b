"""The wheel: built from a copy of the sources, installed into a fresh virtual environment
outside the checkout, it carries everything ``statemine patch`` and ``statemine lab``
need (instrument patches, scenarios, the Go harness, certificates) and runs them."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: What a wheel is built from (what a source distribution holds, see MANIFEST.in).
SOURCES = (
    "setup.py",
    "setup.cfg",
    "pyproject.toml",
    "MANIFEST.in",
    "README.md",
    "LICENSE",
    "statemine",
    "instrument-patches",
    "examples/scenarios",
)
#: A scenario small enough for a test: one aioquic run of 100 kB.
TINY_SCENARIO = """\
[scenario]
name = "tiny"
runs = 1
seed = 1
time_limit_s = 60

[grid]
stack = "aioquic@1.7.2"
rate_mbps = 10
rtt_ms = 20
object_size_bytes = 100_000
"""


def _files(root: Path) -> set[str]:
    """Every file below ``root`` (POSIX paths relative to it), caches and build output
    (Python's, cargo's ``target/``) left out."""
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and not {"__pycache__", "target"} & set(p.parts) and p.suffix != ".pyc"
    }


def _tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for rel in sorted(_files(root)):
        h.update(rel.encode() + b"\0" + (root / rel).read_bytes())
    return h.hexdigest()


def _copy_sources(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "_data")
    for rel in SOURCES:
        src = REPO / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel, ignore=ignore)
        else:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _run(cmd: list, cwd: Path, env: dict | None = None, timeout: float = 900) -> str:
    proc = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"{cmd}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


@pytest.mark.slow
def test_wheel_carries_the_data_and_runs_patch_and_lab_outside_the_checkout(tmp_path):
    src, dist, work = tmp_path / "src", tmp_path / "dist", tmp_path / "work"
    work.mkdir()
    _copy_sources(src)
    # a fresh virtual environment outside the checkout (pip's cache keeps this quick)
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], work)
    py, exe = venv / "bin" / "python", venv / "bin" / "statemine"
    # build as a release would: the sdist, then the wheel from the sdist (so MANIFEST.in
    # is tested too); build isolation takes setuptools from the registry or pip's cache
    _run([py, "-m", "pip", "install", "--quiet", "build"], work)
    _run([py, "-m", "build", "--outdir", dist, src], work)
    (wheel,) = dist.glob("statemine-*.whl")

    # the package data: every file of the shipped folders, the Go harness and certificates
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("instrument-patches", "examples/scenarios"):
        missing = {f"statemine/_data/{folder}/{f}" for f in _files(REPO / folder)} - names
        assert not missing, sorted(missing)[:5]
    for folder in ("statemine/lab/quicgo", "statemine/lab/quiche", "statemine/lab/data"):
        missing = {f"{folder}/{f}" for f in _files(REPO / folder)} - names
        assert not missing, sorted(missing)[:5]
    stubs = {"statemine/parse/_linescan.pyi", "statemine/parse/qlog/_runscan.pyi"}
    assert {"statemine/py.typed", *stubs} <= names
    for module in ("parse/_linescan", "parse/qlog/_runscan"):
        assert any(re.fullmatch(rf"statemine/{module}\..*\.so", n) for n in names), module

    _run([py, "-m", "pip", "install", "--quiet", f"{wheel}[lab]"], work)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "STATEMINE_PATCHES")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"

    where = _run([py, "-c", "import statemine; print(statemine.__file__)"], work).strip()
    assert Path(where).is_relative_to(venv), where
    version = re.search(r'__version__ = "([^"]+)"', (REPO / "statemine/__init__.py").read_text())
    assert version is not None
    assert _run([exe, "--version"], work).split()[-1] == version[1]
    meta = _run([py, "-c", "import importlib.metadata as m; print(m.version('statemine'))"], work)
    assert meta.strip() == version[1]

    # patch list: every implementation and version of the repository's patches
    listed = _run([exe, "patch", "list"], work)
    for impl in sorted(p for p in (REPO / "instrument-patches").iterdir() if p.is_dir()):
        for ver in sorted(v.name for v in impl.iterdir() if (v / "statemine.patch").is_file()):
            assert re.search(rf"{re.escape(impl.name)}\s+{re.escape(ver)}\s", listed), (impl, ver)
    # lab scenarios: the shipped example scenarios
    shown = _run([exe, "lab", "scenarios", "--wide"], work)
    for toml in (REPO / "examples/scenarios").glob("*.toml"):
        assert toml.name in shown, toml.name

    # patch fetch + apply + revert (aioquic from the registry)
    tree = work / "aioquic"
    _run([exe, "patch", "fetch", "--impl", "aioquic", "--version", "1.7.2", tree], work, env)
    pristine = _tree_hash(tree)
    _run([exe, "patch", "apply", "--impl", "aioquic", "--version", "1.7.2", tree], work, env)
    assert (tree / "src/aioquic/quic/statemine.py").is_file() and _tree_hash(tree) != pristine
    _run([exe, "patch", "revert", "--impl", "aioquic", "--version", "1.7.2", tree], work, env)
    assert _tree_hash(tree) == pristine

    # a small lab run: the patched aioquic built from the shipped patch, one transfer
    (work / "tiny.toml").write_text(TINY_SCENARIO)
    out = work / "out"
    said = _run([exe, "lab", "run", "tiny.toml", "--out", out, "--no-progress"], work, env)
    assert "1 runs" in said and "1 ok" in said, said
    check = (
        "import sys, statemine; ts = statemine.load(sys.argv[1]); "
        "print(sorted(set(ts.traces['role'])), 'SlowStart' in set(ts.events['state']))"
    )
    (run_dir,) = (out / "runs").iterdir()
    seen = _run([py, "-c", check, run_dir / "traces.parquet"], work)
    assert seen.strip() == "['client', 'server'] True"
