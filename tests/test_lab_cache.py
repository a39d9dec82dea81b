"""A lab folder's ``traces-cache.parquet`` (statemine.parse.labruns, issue 29): the runs
read as one set, loaded while every run's ``traces.parquet`` and ``run.log.gz`` keeps the
``stat`` recorded when it was built (size, mtime, ctime, inode, device) and is not racy
(changed at or after the cache's stamp), or else hashes to the recorded sha256 (a copy, a
checkout: the shipped folders carry their caches). Every case is compared with the read
without a cache (each run's ``traces.parquet`` loaded and joined), and whether the cache
was used is watched (``cached_runs`` spied on)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from test_lab_grid import FakeRunner, run, spec  # noqa: F401  (spec: a fixture)
from test_lab_index import LAB_FOLDERS, _flip_in_footer, _indexed_copy, _relabel
from test_load_many import TRACES, _old_read, _runs, assert_same

import statemine
import statemine.lab
from statemine import traces
from statemine.cli import main
from statemine.errors import InputError
from statemine.parse import labruns


@pytest.fixture
def used(monkeypatch) -> list[bool]:
    """Whether each call of ``cached_runs`` gave the cache's set (True) or None."""
    calls: list[bool] = []
    real = labruns.cached_runs

    def spy(*args, **kwargs):
        got = real(*args, **kwargs)
        calls.append(got is not None)
        return got

    monkeypatch.setattr(labruns, "cached_runs", spy)
    return calls


def _cached_copy(tmp_path: Path, n: int = 6) -> Path:
    out = _indexed_copy(tmp_path, n)
    assert labruns.write_cache(out) is None
    return out


def _files(out: Path) -> list[Path]:
    return sorted(out.glob("runs/*/traces.parquet"))


def test_lab_run_writes_a_cache_read_in_place_of_the_runs(spec, tmp_path, used):  # noqa: F811
    out = tmp_path / "out"
    run(spec, out, FakeRunner())
    assert (out / labruns.CACHE).is_file()
    assert_same(statemine.read(out), _old_read(_files(out)))
    assert used == [True]


@pytest.mark.parametrize("folder", LAB_FOLDERS)
def test_every_shipped_lab_folder_reads_from_its_committed_cache(folder, used):
    """Its traces-cache.parquet is fresh (used: the runs and the readers' sources hash as
    recorded) and gives exactly the runs' set read without it."""
    files = _runs(folder)
    if not files:
        pytest.skip(f"traces/{folder} is not shipped in this checkout")
    rebuild = (
        f"traces/{folder}/traces-cache.parquet is missing, stale (a reader's source, "
        "statemine's version or a numpy/pandas/pyarrow major version changed, or a run) "
        f"or wrong: rebuild it with `statemine lab cache traces/{folder}` and commit it "
        "(CONTRIBUTING.md)"
    )
    got = statemine.read(TRACES / folder)
    assert used == [True], rebuild
    expected = _old_read(files)
    assert labruns.same_set(got, expected), rebuild
    assert_same(got, expected)


@pytest.mark.parametrize("folder", LAB_FOLDERS)
def test_every_shipped_lab_folder_reads_from_a_cache_built_here_as_from_its_runs(
    folder, tmp_path, used
):
    if not _runs(folder):
        pytest.skip(f"traces/{folder} is not shipped in this checkout")
    copy = tmp_path / folder
    shutil.copytree(TRACES / folder, copy)
    (copy / labruns.CACHE).unlink()
    before = statemine.read(copy)  # no cache there
    assert labruns.write_cache(copy) is None
    assert used == [False] * len(used)
    del used[:]
    assert_same(statemine.read(copy), before)
    for spelling in (f"{copy}/", str(copy / "runs" / ".." / "runs" / ".."), os.path.relpath(copy)):
        assert_same(statemine.read(spelling), before)
    assert used == [True] * 4


def test_a_cached_read_scans_no_log_and_reads_no_run(tmp_path, monkeypatch):
    out = _cached_copy(tmp_path)
    before = _old_read(_files(out))

    def refused(*_args, **_kwargs):
        raise AssertionError("a run was read")

    monkeypatch.setattr(labruns, "_read_runs", refused)
    monkeypatch.setattr(traces, "load_many", refused)
    assert_same(statemine.read(out), before)


def _restore_times(path: Path, st: os.stat_result) -> None:
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


TAMPERS = [
    "traces.parquet relabelled",
    "traces.parquet replaced by a relabelled copy",
    "same-size edit, mtime restored",
    "run.log.gz removed",
    "run.log.gz truncated",
    "run added",
    "run removed",
    "cache of another version",
    "cache truncated",
    "cache not a statemine cache",
    "cache entry of another shape",
    "cache naming columns it lacks",
    "cache recording a missing log",
    "cache entry without digests",
]


@pytest.mark.parametrize("tamper", TAMPERS)
def test_a_changed_folder_is_read_from_its_runs(tmp_path, tamper, used):
    out = _cached_copy(tmp_path)
    runs = sorted((out / "runs").iterdir())
    cache = out / labruns.CACHE
    target = runs[1] / "traces.parquet"
    if tamper == "traces.parquet relabelled":
        _relabel(target, profile="edited")
    elif tamper == "traces.parquet replaced by a relabelled copy":
        copy = runs[1] / "copy.parquet"
        traces.save(traces.load(target).with_labels(profile="edited"), copy)
        os.replace(copy, target)
    elif tamper == "traces.parquet touched":
        os.utime(target)
    elif tamper == "same-size edit, mtime restored":  # ctime tells it: no call sets it
        target = runs[-1] / "traces.parquet"  # the last run's meta is the set's
        st = target.stat()
        _flip_in_footer(target, b'"desktop"', b'"deskTOP"')
        _restore_times(target, st)
        assert target.stat().st_size == st.st_size
        assert target.stat().st_mtime_ns == st.st_mtime_ns
    elif tamper == "run.log.gz touched":
        os.utime(runs[1] / "run.log.gz")
    elif tamper == "run.log.gz removed":
        (runs[1] / "run.log.gz").unlink()
    elif tamper == "run.log.gz truncated":
        log = runs[1] / "run.log.gz"
        log.write_bytes(log.read_bytes()[:-30])
    elif tamper == "run added":
        extra = _runs("jitter")[-1]
        shutil.copytree(extra.parent, out / "runs" / extra.parent.name)
    elif tamper == "run removed":
        shutil.rmtree(runs[2])
    else:
        table = pq.read_table(cache)
        info = json.loads(table.schema.metadata[labruns._CACHE_KEY])
        if tamper == "cache of another version":
            info["version"] = labruns.CACHE_VERSION + 1
        elif tamper == "racy entry":  # a run stat-ed no earlier than the stamp
            info["stamp"] = info["runs"][3][1][1]
        elif tamper == "cache entry of another shape":
            info["runs"][2][1] = 7  # not a stat
        elif tamper == "cache recording a missing log":  # the log is there
            info["runs"][2][2] = info["runs"][2][4] = None
        elif tamper == "cache entry without digests":  # as the cache of version 1
            info["runs"] = [e[:3] for e in info["runs"]]
        if tamper == "cache naming columns it lacks":
            meta = dict(table.schema.metadata)
            saved = json.loads(meta[b"statemine"])
            saved["event_columns"].append("nowhere")
            meta[b"statemine"] = json.dumps(saved).encode()
            pq.write_table(table.replace_schema_metadata(meta), cache)
        if tamper == "cache truncated":
            cache.write_bytes(cache.read_bytes()[:-100])
        elif tamper != "cache naming columns it lacks":
            meta = dict(table.schema.metadata)
            if tamper == "cache not a statemine cache":
                del meta[labruns._CACHE_KEY]
            else:
                meta[labruns._CACHE_KEY] = json.dumps(info).encode()
            pq.write_table(table.replace_schema_metadata(meta), cache)
    expected = _old_read(_files(out))
    if "relabelled" in tamper:
        assert set(expected.traces["profile"]) == {"desktop", "edited"}
    if tamper == "same-size edit, mtime restored":
        assert expected.meta["profile"] == "deskTOP"
    assert_same(statemine.read(out), expected)
    assert used == [False]


UNCHANGED = [
    "traces.parquet touched",
    "run.log.gz touched",
    "racy entry",
    "folder copied, times kept",
    "folder copied, times new",
]


@pytest.mark.parametrize("change", UNCHANGED)
def test_a_file_whose_stat_differs_but_not_its_bytes_uses_the_cache(tmp_path, change, used):
    """Checked by content (was refused: the stat alone decided): only the files whose stat
    cannot vouch for them are hashed."""
    out = _cached_copy(tmp_path)
    runs = sorted((out / "runs").iterdir())
    n_hashed = 1
    if change == "traces.parquet touched":
        os.utime(runs[1] / "traces.parquet")
    elif change == "run.log.gz touched":
        os.utime(runs[1] / "run.log.gz")
    elif change == "racy entry":  # the cache's stamp no later than a run's mtime
        cache = out / labruns.CACHE
        table = pq.read_table(cache)
        info = json.loads(table.schema.metadata[labruns._CACHE_KEY])
        keys = [k for e in info["runs"] for k in e[1:3] if k is not None]
        info["stamp"] = sorted(max(k[1], k[2]) for k in keys)[len(keys) // 2]  # half racy
        n_hashed = sum(labruns._racy(k, info["stamp"]) for k in keys)
        assert 0 < n_hashed < len(keys)
        meta = {**table.schema.metadata, labruns._CACHE_KEY: json.dumps(info).encode()}
        pq.write_table(table.replace_schema_metadata(meta), cache)
    else:
        copy = tmp_path / "copy"
        copier = shutil.copy2 if change.endswith("times kept") else shutil.copy
        shutil.copytree(out, copy, copy_function=copier)
        out, n_hashed = copy, 2 * len(runs)
    expected = _old_read(_files(out))
    hashed: list[str] = []
    real = labruns.file_digest
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(labruns, "file_digest", lambda p: (hashed.append(os.fspath(p)), real(p))[1])
        got = statemine.read(out)
    assert_same(got, expected)
    assert used == [True]
    assert len([f for f in hashed if f"{os.sep}runs{os.sep}" in f]) == n_hashed  # not the sources


COPY_EDITS = [
    "traces.parquet same size, mtime restored",
    "traces.parquet other size",
    "run.log.gz same lines, other bytes",
]


@pytest.mark.parametrize("edit", COPY_EDITS)
def test_a_copied_folder_with_one_run_edited_is_read_from_its_runs(tmp_path, edit, used):
    out = _cached_copy(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)  # times kept (copy2), inodes new: every file hashed
    run = sorted((copy / "runs").iterdir())[-1]  # the last run's meta is the set's
    target = run / ("run.log.gz" if "log" in edit else "traces.parquet")
    st = target.stat()
    if edit == "traces.parquet same size, mtime restored":
        _flip_in_footer(target, b'"desktop"', b'"deskTOP"')
        _restore_times(target, st)
        assert (target.stat().st_size, target.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    elif edit == "traces.parquet other size":
        _relabel(target, profile="edited-profile")
        assert target.stat().st_size != st.st_size
    else:
        import gzip

        lines = gzip.decompress(target.read_bytes())
        target.write_bytes(gzip.compress(lines, compresslevel=1, mtime=0))
        assert target.read_bytes() != (out / "runs" / run.name / "run.log.gz").read_bytes()
    expected = _old_read(_files(copy))
    if "traces.parquet" in edit:
        assert expected.meta["profile"] != "desktop"
    assert_same(statemine.read(copy), expected)
    assert used == [False]


@pytest.mark.parametrize(
    "change", ["a reader's source", "pandas major", "numpy major", "pyarrow major"]
)
def test_a_cache_built_by_other_readers_is_not_used(tmp_path, used, monkeypatch, change):
    """Another source of what the set is (traces.py, parse/labruns.py; by content), or
    another major version of numpy, pandas or pyarrow."""
    import numpy
    import pandas
    import pyarrow

    out = _cached_copy(tmp_path)
    key = labruns.code_key()
    assert key[:2] == [labruns.CACHE_VERSION, statemine.__version__]
    assert [f[0] for f in key[3]] == ["parse/labruns.py", "traces.py"]
    if change == "a reader's source":
        key[3][0][1] = "0" * 64
        monkeypatch.setattr(labruns, "code_key", lambda: key)
    else:
        module = {"pandas": pandas, "numpy": numpy, "pyarrow": pyarrow}[change.split()[0]]
        major = int(module.__version__.split(".")[0])
        monkeypatch.setattr(module, "__version__", f"{major + 1}.0.0")
    assert_same(statemine.read(out), _old_read(_files(out)))
    assert used == [False]


def test_a_cache_is_used_after_a_minor_release_of_numpy_pandas_pyarrow(tmp_path, used, monkeypatch):
    import numpy
    import pandas
    import pyarrow

    out = _cached_copy(tmp_path)
    for module in (numpy, pandas, pyarrow):
        major = module.__version__.split(".")[0]
        monkeypatch.setattr(module, "__version__", f"{major}.999.1")
    assert_same(statemine.read(out), _old_read(_files(out)))
    assert used == [True]


def _source_copy(dest: Path) -> Path:
    """statemine/parse/ (its files) and statemine/traces.py copied to ``dest``, every
    mtime set a day back."""
    pkg = Path(statemine.__file__).parent
    (dest / "parse").mkdir(parents=True)
    for name in labruns.code_files(pkg):
        shutil.copyfile(pkg / name, dest / name)  # bytes only: new inodes, times now
        st = (dest / name).stat()
        os.utime(dest / name, ns=(st.st_atime_ns, st.st_mtime_ns - 86400 * 10**9))
    return dest


def test_the_code_record_is_the_same_for_a_copy_of_the_sources_with_other_mtimes(tmp_path):
    pkg = Path(statemine.__file__).parent
    copy = _source_copy(tmp_path / "statemine")
    assert labruns.code_key(copy) == labruns.code_key(pkg) == labruns.code_key()
    (copy / "parse" / "_linescan.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF built")
    assert labruns.code_key(copy) == labruns.code_key()  # a build's output is not a source
    (copy / "parse" / "statemine_log.py").write_text("# a log reader: not what the set is\n")
    assert labruns.code_key(copy) == labruns.code_key()
    source = copy / "parse" / "labruns.py"
    st = source.stat()
    source.write_bytes(source.read_bytes() + b"\n")
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))
    edited = labruns.code_key(copy)
    assert edited != labruns.code_key()
    assert [f for f in edited[3] if f[0] == "parse/labruns.py"] == [
        ["parse/labruns.py", hashlib.sha256(source.read_bytes()).hexdigest()]
    ]


def test_a_truncated_run_fails_as_without_a_cache(tmp_path, used):
    out = _cached_copy(tmp_path)
    target = sorted(out.glob("runs/*/traces.parquet"))[2]
    target.write_bytes(target.read_bytes()[:-50])
    with pytest.raises(InputError) as cached:
        statemine.read(out)
    (out / labruns.CACHE).unlink()
    with pytest.raises(InputError) as before:
        statemine.read(out)
    assert str(cached.value) == str(before.value)
    assert used[0] is False


def test_a_run_newer_than_the_stamp_gets_no_cache(tmp_path):
    out = _indexed_copy(tmp_path, 3)
    future = out / "runs" / sorted(os.listdir(out / "runs"))[0] / "traces.parquet"
    # an hour ahead of now (the copy keeps the checkout's mtime, which can be days old)
    os.utime(future, ns=(future.stat().st_atime_ns, time.time_ns() + 3600 * 10**9))
    why = labruns.write_cache(out, wait_s=0.02)
    assert why is not None and "changed while the cache was built" in why
    assert not (out / labruns.CACHE).exists()


def test_a_stale_cache_is_removed_when_none_can_be_built(tmp_path):
    out = _cached_copy(tmp_path, 2)
    shutil.rmtree(sorted((out / "runs").iterdir())[0])
    assert labruns.write_cache(out) == "fewer than two runs (one is read as a single file)"
    assert not (out / labruns.CACHE).exists()


def test_infer_writes_the_same_files_from_the_cache(tmp_path, used):
    """Byte for byte, but for provenance.json's time of writing."""
    out = _cached_copy(tmp_path, 12)
    dest = tmp_path / "infer"

    def infer() -> dict[str, bytes]:
        shutil.rmtree(dest, ignore_errors=True)
        res = CliRunner().invoke(main, ["infer", str(out), "--out", str(dest), "--no-svg"])
        assert res.exit_code == 0, res.output
        files = {str(p.relative_to(dest)): p.read_bytes() for p in sorted(dest.rglob("*"))}
        record = json.loads(files["provenance.json"])
        assert record.pop("created_utc")
        files["provenance.json"] = json.dumps(record).encode()
        return files

    cached = infer()
    (out / labruns.CACHE).unlink()
    assert infer() == cached
    assert used == [True, False]


def test_lab_cache_command(tmp_path):
    out = _indexed_copy(tmp_path, 3)
    (out / labruns.INDEX).unlink()
    res = CliRunner().invoke(main, ["lab", "cache", str(out)])
    assert res.exit_code == 0, res.output
    assert (out / labruns.INDEX).is_file() and (out / labruns.CACHE).is_file()
    res = CliRunner().invoke(main, ["lab", "cache", str(out / "runs")])
    assert res.exit_code == 2 and "not a folder written by statemine lab run" in res.output
    (out / labruns.CACHE).unlink()
    assert statemine.lab.cache_folder(out) is None  # the library call the command makes
    assert (out / labruns.CACHE).is_file()
    damaged = sorted(out.glob("runs/*/traces.parquet"))[1]
    damaged.write_bytes(b"PAR1 not Parquet PAR1")
    res = CliRunner().invoke(main, ["lab", "cache", str(out)])
    assert res.exit_code == 1 and "no cache written" in res.output
    assert "not a readable Parquet file" in res.output
    assert not (out / labruns.CACHE).exists()  # the stale one removed


def test_saved_table_keeps_the_statemine_metadata_its_own():
    ts = statemine.read(_runs("jitter")[0]) if _runs("jitter") else None
    if ts is None:
        pytest.skip("traces/jitter is not shipped in this checkout")
    with pytest.raises(ValueError):
        traces.saved_table(ts, {b"statemine": b"{}"})
    table = traces.saved_table(ts, {b"other": b"1"})
    assert table.schema.metadata[b"other"] == b"1"
