"""A lab folder's runs read from their logs and Parquet footers in one pass
(statemine.parse.labruns, issue 29): exactly the set that loading each run's
``traces.parquet`` and concatenating gives, without reading the Parquet rows; a run whose
log does not match its footer, or that has no log, falls back to the Parquet files."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_load_many import TRACES, _old_read, _runs, assert_same

import statemine
from statemine.parse import labruns
from statemine.parse.labruns import read_lab_runs

FOLDERS = sorted(p.name for p in TRACES.iterdir() if (p / "runs").is_dir()) or ["none"]


def _check_folder(folder: str) -> None:
    files = _runs(folder)
    if not files:
        pytest.skip(f"traces/{folder} is not shipped in this checkout")
    got = labruns._read_runs(files, [f.parent.name for f in files])  # not the folder's cache
    before = _old_read(files)
    if before.meta.get("format") != "statemine":  # e.g. kernel TCP: ftrace logs
        assert got is None
        return
    assert got is not None
    assert_same(got, before)


def test_shipped_jitter_folder_from_its_logs_as_from_its_parquet_files():
    _check_folder("jitter")


@pytest.mark.slow
@pytest.mark.parametrize("folder", FOLDERS)
def test_every_shipped_lab_folder_from_its_logs_as_from_its_parquet_files(folder):
    _check_folder(folder)


def test_the_parquet_rows_are_not_read(monkeypatch):
    files = _runs("jitter")
    if not files:
        pytest.skip("traces/jitter is not shipped in this checkout")
    before = _old_read(files)

    def no_rows(*_args, **_kwargs):
        raise AssertionError("a run's Parquet rows were read")

    monkeypatch.setattr(labruns, "cached_runs", lambda *_args: None)  # the runs read
    monkeypatch.setattr(pq.ParquetFile, "read", no_rows)
    monkeypatch.setattr(pq.ParquetFile, "read_row_group", no_rows)
    monkeypatch.setattr(pq, "read_table", no_rows)
    assert_same(statemine.read(TRACES / "jitter"), before)


def _small_lab_folder(tmp_path: Path, n: int = 4) -> list[Path]:
    files = _runs("jitter")[:n]
    if not files:
        pytest.skip("traces/jitter is not shipped in this checkout")
    out = tmp_path / "lab"
    (out / "runs").mkdir(parents=True)
    shutil.copy(TRACES / "jitter" / "manifest.json", out)
    for f in files:
        shutil.copytree(f.parent, out / "runs" / f.parent.name)
    return sorted((out / "runs").glob("*/traces.parquet"))


def _edit_log(log: Path, edit) -> None:
    lines = gzip.decompress(log.read_bytes()).decode().splitlines(keepends=True)
    log.write_bytes(gzip.compress("".join(edit(lines)).encode()))


@pytest.mark.parametrize(
    "damage",
    [
        "drop the last statemine line",
        "rename a connection",
        "cut the gzip stream",
        "no log",
    ],
)
def test_a_run_whose_log_differs_reads_from_the_parquet_files(tmp_path, damage):
    files = _small_lab_folder(tmp_path)
    log = files[1].parent / "run.log.gz"
    if damage == "drop the last statemine line":
        _edit_log(log, lambda ls: ls[: max(i for i, s in enumerate(ls) if "STATEMINE t=" in s)])
    elif damage == "rename a connection":
        _edit_log(log, lambda ls: [s.replace(" conn=", " conn=x", 1) for s in ls])
    elif damage == "cut the gzip stream":
        log.write_bytes(log.read_bytes()[:-20])
    else:
        log.unlink()
    assert read_lab_runs(files) is None
    assert_same(statemine.read(files[0].parents[2]), _old_read(files))
