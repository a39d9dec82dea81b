"""statemine.patch.fetch against the real registries (slow: PyPI and the Go module proxy;
downloads are cached under $STATEMINE_CACHE)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from statemine.errors import StatemineError, UsageError
from statemine.patch import apply, cache_dir, check, fetch, revert, versions

pytestmark = pytest.mark.slow


def sha256(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_pypi_fetch_record_matches_the_cached_sdist(tmp_path):
    root = fetch("aioquic", "1.7.2", tmp_path / "src")
    rec = json.loads((root / ".statemine-source.json").read_text())
    sdist = cache_dir() / "pypi" / "aioquic" / "1.7.2" / "aioquic-1.7.2.tar.gz"
    assert rec["impl"] == "aioquic" and rec["version"] == "1.7.2"
    assert rec["sha256"] == sha256(sdist) and rec["python_path"] == "src"
    assert rec["built"] and all((root / p).is_file() for p in rec["built"])
    assert (root / "src/aioquic/quic/recovery.py").is_file() and (root / "setup.py").is_file()
    proc = subprocess.run(
        [sys.executable, "-c", "import aioquic._buffer, aioquic; print(aioquic.__version__)"],
        env={**os.environ, "PYTHONPATH": str(root / "src")},
        capture_output=True,
        text=True,
    )
    assert proc.stdout.strip() == "1.7.2", proc.stderr


def test_fetch_failure_leaves_nothing(tmp_path):
    with pytest.raises(StatemineError, match="pip download"):
        fetch("aioquic", "0.0.999", tmp_path / "nope")
    assert not (tmp_path / "nope").exists()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("mine")
    with pytest.raises(UsageError, match="not an empty directory"):
        fetch("aioquic", "1.7.2", tmp_path / "full")
    assert (tmp_path / "full" / "x").read_text() == "mine"


@pytest.mark.parametrize("version", versions("quic-go"))
def test_go_module_fetch_and_patch_round_trip(version, tmp_path):
    root = fetch("quic-go", version, tmp_path / "src")
    rec = json.loads((root / ".statemine-source.json").read_text())
    assert rec["source"] == f"go:github.com/quic-go/quic-go@{version}"
    zip_path = (
        cache_dir()
        / "gomod"
        / "cache"
        / "download"
        / "github.com"
        / "quic-go"
        / "quic-go"
        / "@v"
        / f"{version}.zip"
    )
    assert rec["sha256"] == sha256(zip_path) and rec["go_sum"].startswith("h1:")
    assert (root / "go.mod").read_text().startswith("module github.com/quic-go/quic-go")
    before = {
        p: sha256(p)
        for p in root.rglob("*")
        if p.is_file() and not p.name.startswith(".statemine-")
    }
    assert check("quic-go", version, root).status == "would apply"
    assert apply("quic-go", version, root).status == "applied"
    assert revert("quic-go", version, root).status == "reverted"
    after = {
        p: sha256(p)
        for p in root.rglob("*")
        if p.is_file() and not p.name.startswith(".statemine-")
    }
    assert after == before
