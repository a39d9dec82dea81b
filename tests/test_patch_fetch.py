"""statemine.patch.fetch against the real registries (slow: PyPI and the Go module proxy;
downloads are cached under $STATEMINE_CACHE)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile

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


def _tampered_sdist(good: bytes) -> bytes:
    """``good`` (an sdist) with a line added to aioquic's recovery.py."""
    out = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(good)) as src,
        tarfile.open(fileobj=out, mode="w:gz") as tf,
    ):
        for m in src.getmembers():
            f = src.extractfile(m) if m.isreg() else None
            data = f.read() if f is not None else b""
            if m.name.endswith("quic/recovery.py"):
                data += b"\nimport os  # tampered\n"
            m.size = len(data)
            tf.addfile(m, io.BytesIO(data) if m.isreg() else None)
    return out.getvalue()


def _cli_fetch(dest) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "statemine", "patch", "fetch", "--impl", "aioquic"]
    return subprocess.run(
        [*cmd, "--version", "1.7.2", str(dest)], capture_output=True, text=True, timeout=600
    )


def test_a_tampered_cached_aioquic_sdist_or_wheel_is_refused(tmp_path, monkeypatch):
    """Issue 27's case on the real aioquic 1.7.2: a modified sdist, then a foreign .so in
    the cached wheel, in a private copy of the cache: exit 2, one line naming the file,
    nothing in DEST; restored, the fetch works again."""
    fetch("aioquic", "1.7.2", tmp_path / "warm")  # fills the shared cache
    shared = cache_dir() / "pypi" / "aioquic" / "1.7.2"
    private = tmp_path / "cache"
    shutil.copytree(
        shared,
        private / "pypi" / "aioquic" / "1.7.2",
        ignore=lambda d, n: [x for x in n if x.startswith(".tmp-")],
    )
    monkeypatch.setenv("STATEMINE_CACHE", str(private))
    sdist = private / "pypi" / "aioquic" / "1.7.2" / "aioquic-1.7.2.tar.gz"
    good = sdist.read_bytes()
    sdist.write_bytes(_tampered_sdist(good))
    res = _cli_fetch(tmp_path / "dest")
    assert res.returncode == 2 and res.stdout == "", res.stderr
    assert res.stderr.count("\n") == 1 and f"{sdist}: sha256 " in res.stderr
    assert "pinned in" in res.stderr and not (tmp_path / "dest").exists()
    sdist.write_bytes(good)
    (wheel,) = (private / "pypi" / "aioquic" / "1.7.2" / "wheel").glob("*-*/*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    so = next(n for n in names if n.endswith(".so"))
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(so, b"\x7fELF foreign")
    res = _cli_fetch(tmp_path / "dest")
    assert res.returncode == 2 and f"{wheel}: sha256 " in res.stderr, res.stderr
    assert res.stderr.count("\n") == 1 and not (tmp_path / "dest").exists()
    shutil.rmtree(wheel.parent)  # a removed wheel is built again from the checked sdist
    res = _cli_fetch(tmp_path / "dest")
    assert res.returncode == 0, res.stderr
    rec = json.loads((tmp_path / "dest" / ".statemine-source.json").read_text())
    assert rec["pinned"] is True and rec["sha256"] == sha256(sdist)
