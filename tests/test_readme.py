"""The README as a new user pastes it: its library snippet runs as printed (it makes its own
inputs from the shipped traces) and every example notebook is named."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _library_snippet() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    (snippet,) = [b for b in blocks if "statemine.read(" in b and "report_to_file" in b]
    return snippet


@pytest.mark.skipif(not (ROOT / "traces").is_dir(), reason="shipped traces/ absent")
def test_library_snippet_runs_as_pasted(tmp_path: Path) -> None:
    (tmp_path / "traces").symlink_to(ROOT / "traces")
    done = subprocess.run(
        [sys.executable, "-c", _library_snippet()],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for made in ("model.svg", "out/states.csv", "a.parquet", "b.parquet", "diff", "report.html"):
        assert (tmp_path / made).exists(), made


def test_every_notebook_is_named() -> None:
    for notebook in sorted((ROOT / "examples").glob("*.ipynb")):
        assert f"examples/{notebook.name}" in README, notebook.name
