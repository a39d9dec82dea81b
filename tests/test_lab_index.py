"""A lab folder's ``traces-index.json`` (statemine.parse.labruns, issue 29): each run's
Parquet footer taken from its own bytes when they hash as indexed, so reading a folder
parses no footer with Arrow; any run the index cannot vouch for (not indexed, footer
changed, index damaged or of another version) is read as before. Every case is compared
with loading each run's ``traces.parquet`` and joining (the reader before issue 29)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_lab_grid import FakeRunner, run, spec  # noqa: F401  (spec: a fixture)
from test_load_many import TRACES, _old_read, _runs, assert_same

import statemine
from statemine import traces
from statemine.errors import InputError
from statemine.parse import labruns

LAB_FOLDERS = sorted(p.name for p in TRACES.iterdir() if (p / "runs").is_dir()) or ["none"]


def _footer(path: Path) -> bytes:
    """The file's last ``8 + n`` bytes, ``n`` read from its last 8 (the Parquet layout)."""
    data = path.read_bytes()
    assert data[-4:] == b"PAR1"
    n = int.from_bytes(data[-8:-4], "little")
    return data[-8 - n :]


def test_lab_run_writes_an_index_of_every_run(spec, tmp_path):  # noqa: F811
    out = tmp_path / "out"
    table = run(spec, out, FakeRunner())
    index = json.loads((out / labruns.INDEX).read_text())
    assert index["version"] == labruns.INDEX_VERSION
    assert set(index["runs"]) == set(table["run_id"])
    for rid, (size, length, sha, at, n, num_rows, columns) in index["runs"].items():
        path = out / "runs" / rid / "traces.parquet"
        footer = _footer(path)
        meta = pq.ParquetFile(path).metadata
        assert size == path.stat().st_size and length == len(footer)
        assert sha == hashlib.sha256(footer).hexdigest()
        assert footer[at : at + n] == meta.metadata[b"statemine"]
        assert num_rows == meta.num_rows == 3
        assert columns == pq.read_schema(path).names
    assert_same(statemine.read(out), _old_read(sorted(out.glob("runs/*/traces.parquet"))))


@pytest.mark.parametrize("folder", LAB_FOLDERS)
def test_every_shipped_lab_folder_is_indexed_as_its_footers_say(folder):
    files = _runs(folder)
    if not files:
        pytest.skip(f"traces/{folder} is not shipped in this checkout")
    index = labruns.read_index(TRACES / folder)
    assert set(index) == {f.parent.name for f in files}
    for f in files:
        assert labruns.indexed_head(f, index[f.parent.name]) == traces.read_saved_head(f)


def test_an_indexed_folder_parses_no_footer_with_arrow(monkeypatch):
    files = _runs("jitter")
    if not files:
        pytest.skip("traces/jitter is not shipped in this checkout")
    before = _old_read(files)

    def no_footer(*_args, **_kwargs):
        raise AssertionError("a run's footer was parsed by Arrow")

    monkeypatch.setattr(labruns, "cached_runs", lambda *_args: None)  # the runs read
    monkeypatch.setattr(pq, "read_metadata", no_footer)
    monkeypatch.setattr(pq, "ParquetFile", no_footer)
    assert_same(statemine.read(TRACES / "jitter"), before)


def _indexed_copy(tmp_path: Path, n: int = 6) -> Path:
    """A lab folder of ``n`` runs of traces/jitter (manifest, results, runs), indexed."""
    files = _runs("jitter")[:n]
    if not files:
        pytest.skip("traces/jitter is not shipped in this checkout")
    out = tmp_path / "lab"
    (out / "runs").mkdir(parents=True)
    for name in ("manifest.json", "results.csv", "results.parquet"):
        shutil.copy(TRACES / "jitter" / name, out)
    for f in files:
        shutil.copytree(f.parent, out / "runs" / f.parent.name)
    labruns.write_index(out)
    assert len(labruns.read_index(out)) == n
    return out


def _relabel(path: Path, **labels: str) -> None:
    """Rewrite a run's traces.parquet with other labels (same log, same trace ids)."""
    traces.save(traces.load(path).with_labels(**labels), path)


def _flip_in_footer(path: Path, old: bytes, new: bytes) -> None:
    """Replace ``old`` by ``new`` (same length) in the footer's statemine metadata, after
    its last ``"profile": "desktop"`` (the run's meta)."""
    data = path.read_bytes()
    at = data.rindex(b'"profile": "desktop"')
    data = data[:at] + data[at:].replace(old, new, 1)
    path.write_bytes(data)


TAMPERS = [
    "results.csv row edited",
    "run deleted",
    "extra run folder",
    "traces.parquet relabelled",
    "traces.parquet of another run",
    "footer bytes edited",
    "index of another version",
    "index damaged",
    "index entry of another run",
]


@pytest.mark.parametrize("tamper", TAMPERS)
def test_a_tampered_folder_reads_as_its_parquet_files(tmp_path, tamper):
    out = _indexed_copy(tmp_path)
    runs = sorted((out / "runs").iterdir())
    index_file = out / labruns.INDEX
    if tamper == "results.csv row edited":
        csv = out / "results.csv"
        csv.write_text(csv.read_text().replace(",desktop,", ",mobile,"))
    elif tamper == "run deleted":
        shutil.rmtree(runs[2])
    elif tamper == "extra run folder":
        extra = _runs("mobile")[:1] or _runs("jitter")[-1:]
        shutil.copytree(extra[0].parent, out / "runs" / extra[0].parent.name)
    elif tamper == "traces.parquet relabelled":
        _relabel(runs[1] / "traces.parquet", profile="edited")
    elif tamper == "traces.parquet of another run":
        shutil.copy(runs[0] / "traces.parquet", runs[1] / "traces.parquet")
    elif tamper == "footer bytes edited":
        _flip_in_footer(runs[-1] / "traces.parquet", b'"desktop"', b'"deskTOP"')
    elif tamper == "index of another version":
        index = json.loads(index_file.read_text())
        index["version"] = labruns.INDEX_VERSION + 1
        index_file.write_text(json.dumps(index))
    elif tamper == "index damaged":
        index_file.write_text(index_file.read_text()[:-40])
    else:
        index = json.loads(index_file.read_text())
        a, b = runs[0].name, runs[1].name
        index["runs"][a], index["runs"][b] = index["runs"][b], index["runs"][a]
        index_file.write_text(json.dumps(index))
    files = sorted(out.glob("runs/*/traces.parquet"))
    if tamper == "traces.parquet of another run":  # two runs name the same traces
        with pytest.raises(InputError) as indexed:
            statemine.read(out)
        index_file.unlink()  # the reader before the index
        with pytest.raises(InputError) as before:
            statemine.read(out)
        assert str(indexed.value) == str(before.value)
        return
    expected = _old_read(files)
    if tamper == "traces.parquet relabelled":
        assert set(expected.traces["profile"]) == {"desktop", "edited"}
    if tamper == "footer bytes edited":
        assert expected.meta["profile"] == "deskTOP"  # the run's meta, last of the runs
    assert_same(statemine.read(out), expected)


def test_a_footer_edited_in_place_is_read_by_arrow(tmp_path, monkeypatch):
    """Same size, other bytes: the index no longer vouches for the footer."""
    out = _indexed_copy(tmp_path, 2)
    path = sorted(out.glob("runs/*/traces.parquet"))[-1]
    entry = labruns.read_index(out)[path.parent.name]
    size = path.stat().st_size
    _flip_in_footer(path, b'"desktop"', b'"deskTOP"')
    assert path.stat().st_size == size
    calls = []
    real = traces.read_saved_head

    def spy(p):
        calls.append(p)
        return real(p)

    monkeypatch.setattr(traces, "read_saved_head", spy)
    head = labruns.indexed_head(path, entry)
    assert calls == [path]
    assert head.meta["profile"] == "deskTOP"


def test_a_lab_folders_runs_are_listed_as_glob_lists_them(tmp_path):
    from statemine.parse import _lab_runs, expand_paths

    out = tmp_path / "lab"
    runs = out / "runs"
    for name in ("b-run", "a-run", ".tmp-c", "no-traces", "d-run"):
        (runs / name).mkdir(parents=True)
        if name != "no-traces":
            (runs / name / "traces.parquet").write_bytes(b"PAR1")
    (runs / "a-file").write_text("not a run")
    (runs / "e-link").symlink_to(runs / "b-run")
    (runs / "f-broken").symlink_to(tmp_path / "nowhere")
    (out / "manifest.json").write_text("{}")
    listed = [p for p, _ in _lab_runs(out)]
    assert listed == sorted(runs.glob("*/traces.parquet"))
    assert [p.parent.name for p in listed] == [".tmp-c", "a-run", "b-run", "d-run", "e-link"]
    assert expand_paths([out]) == listed[:4]  # e-link is b-run met again


JSON_CASES = [
    b'{"a": 1, "a": 2}',  # the last of a repeated key
    b"[12345678901234567890123, -9223372036854775809, 18446744073709551616]",  # beyond 64 bits
    b"[9223372036854775807, -9223372036854775808, 123456789012345678, 1.5e300, -0.0]",
    b"[NaN, Infinity, -Infinity, 1e400]",  # json's extensions, orjson refuses them
    b'["\\ud800", "\\u00e9", "\\ud83d\\ude00"]',  # a lone surrogate, escapes
    b'\xef\xbb\xbf{"bom": 1}',
    '{"utf16": 1}'.encode("utf-16"),
    b'{"x": "0123456789012345678901"}',  # 19 digits inside text: json parses it
    b"[1, 2,]",  # refused by both
    b'{"a": 1} {"b": 2}',
]


@pytest.mark.parametrize("raw", JSON_CASES)
def test_footer_json_is_parsed_as_json_parses_it(raw):
    """The footers' statemine JSON is parsed by orjson where that gives json's value."""
    try:
        expected = json.loads(raw)
    except ValueError:
        with pytest.raises(ValueError):
            traces.loads_json(raw)
        return
    got = traces.loads_json(raw)
    assert repr(got) == repr(expected)  # also tells int from float, -0.0 from 0.0, NaN


def test_footer_json_numbers_as_json_parses_them():
    import random

    rng = random.Random(29)
    for _ in range(20_000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 24)))
        tail = rng.choice(["", ".5", "e5", "E-7", ".1234567890123456789e-300", "e308"])
        raw = f"[{rng.choice(['', '-'])}{digits.lstrip('0') or '0'}{tail}]".encode()
        assert repr(traces.loads_json(raw)) == repr(json.loads(raw)), raw


def test_a_big_integer_label_in_an_indexed_footer_reads_as_arrow_reads_it(tmp_path):
    """A traces-frame value beyond 64 bits (orjson would make it a float) read through the
    index equals the file read by Arrow."""
    out = _indexed_copy(tmp_path, 3)
    path = sorted(out.glob("runs/*/traces.parquet"))[1]
    table = pq.read_table(path)
    extra = json.loads(table.schema.metadata[b"statemine"])
    at = extra["traces"]["columns"].index("seed")
    for row in extra["traces"]["data"]:
        row[at] = 12345678901234567890123
    meta = {**table.schema.metadata, b"statemine": json.dumps(extra).encode()}
    pq.write_table(table.replace_schema_metadata(meta), path, compression="zstd")
    labruns.write_index(out)
    files = sorted(out.glob("runs/*/traces.parquet"))
    assert labruns.indexed_head(files[1], labruns.read_index(out)[path.parent.name]) == (
        traces.read_saved_head(files[1])
    )
    expected = _old_read(files)
    assert 12345678901234567890123 in set(expected.traces["seed"])
    assert_same(statemine.read(out), expected)


def test_a_runs_lab_folder_is_found_as_pathlib_finds_it():
    """labruns.lab_folder_of splits a path string itself where Path would split it alike
    (the folder whose index vouches for the run), else asks Path."""
    import itertools

    parts = ["runs", "r1", ".", "..", "", ".h", "lab", "traces.parquet"]
    for n in range(5):
        for combo in itertools.product(parts, repeat=n):
            for lead in ("", "/", "./", "../", "//"):
                text = lead + "/".join((*combo, "traces.parquet"))
                expected = str(Path(text).parent.parent.parent)
                assert labruns.lab_folder_of(text) == expected, text
                assert labruns.lab_folder_of(Path(text)) == expected, text
