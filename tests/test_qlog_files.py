"""Many qlog files read as one trace set (issue 29): ``statemine.read`` of several qlog
files (a QLOGDIR) gathers their rows and builds one TraceSet; it must equal the files'
own trace sets read one by one (``read_qlog``) and joined, warnings and skipped files
included."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import statemine
from statemine.errors import InputError
from statemine.parse import _source_names
from statemine.parse.qlog import NoCongestionData, _connections
from statemine.parse.qlog.common import _Report
from statemine.parse.qlog.connections import _Connection
from statemine.parse.qlog.rows import _build, batch_order
from statemine.traces import TraceSet, concat, merge_meta

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "qlog"
SHARED = HERE.parent.parent / "shared" / "real-qlog"

#: Test files that read as qlog (the bad ones, empty.qlog and garbage.bin, are left out).
SMALL = [
    DATA / name
    for name in (
        "draft00.qlog",
        "draft00_mvfst.qlog",
        "draft01.qlog",
        "draft01_picoquic.qlog",
        "draft02.qlog",
        "draft02.ndjson",
        "v03.sqlog",
        "v04.qlog",
        "file_schema.qlog",
        "file_schema.sqlog",
        "v03_truncated.sqlog",
        "truncated.qlog",
        "bad_middle.ndjson",
    )
]
CORPUS = sorted((HERE / "data" / "corpus").glob("*/*.gz"))
LOSS = sorted((HERE / "data" / "qlog-quicgo-loss").glob("*/*.sqlog.gz"))


def _whole(path: Path, derive: bool, source: str | None = None) -> TraceSet:
    """``read_qlog`` as it was before issue 29: every connection parsed and held whole (no
    spill folder), then built."""
    report = _Report(path)
    connections = list(_connections(path, report, None, derive, 64 << 20, 1 << 30))
    ts = _build(path, source or path.name, connections, None, derive, report)
    assert ts is not None
    return ts


def _one_by_one(files: list[Path], derive: bool) -> TraceSet:
    """What ``read`` gave before issue 29: each file's whole read, joined, a file without
    congestion data skipped with a note."""
    sources = _source_names(files)
    sets, notes = [], []
    for f in files:
        try:
            sets.append(_whole(f, derive, sources[f]))
        except NoCongestionData as exc:
            notes.append(f"{exc}; file skipped (--strict makes this an error)")
    return concat(sets, merge_meta([*(s.meta for s in sets), {"warnings": json.dumps(notes)}]))


def _equal(a: TraceSet, b: TraceSet) -> None:
    pd.testing.assert_frame_equal(a.events, b.events)
    # the traces frame's text columns: pd.concat of the files' frames gave object where
    # one file's column was all None; one frame gives pandas' string dtype, as one file does
    assert list(a.traces.dtypes.astype(str)) == [
        "str" if str(d) == "object" and str(a_d) == "str" else str(d)
        for d, a_d in zip(b.traces.dtypes, a.traces.dtypes)
    ]
    pd.testing.assert_frame_equal(a.traces, b.traces, check_dtype=False)
    assert (a.metrics is None) == (b.metrics is None)
    if a.metrics is not None and b.metrics is not None:
        pd.testing.assert_frame_equal(a.metrics, b.metrics)
    assert a.meta == b.meta


@pytest.mark.parametrize("slice_rows", [None, 20])
@pytest.mark.parametrize("derive", [False, True])
@pytest.mark.parametrize("name", ["small", "corpus", "loss", "shared", "all"])
def test_files_read_together_equal_one_by_one(name, derive, slice_rows, monkeypatch):
    """Also through the bounded walk with connections spilled every 20 events (built from
    their spill files in slices of 20 rows)."""
    if slice_rows is not None:
        monkeypatch.setattr("statemine.parse.qlog._SLICE_ROWS", slice_rows)
    files = {
        "small": SMALL,
        "corpus": CORPUS,
        "loss": LOSS,
        "shared": sorted(p for p in SHARED.rglob("*") if p.is_file() and p.suffix != ".md"),
    }
    files["all"] = SMALL + CORPUS + LOSS
    chosen = files[name]
    if name == "shared" and not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent (third-party qlogs, read in place)")
    assert len(chosen) > 1
    _equal(statemine.read(chosen, derive_states=derive), _one_by_one(chosen, derive))


def test_batch_order_sorts_each_connection_on_its_own():
    """One sort of all the gathered rows equals a stable (time, seq) sort of each
    connection's rows, the connections kept in order (Python's sorted, per block)."""
    rng = np.random.default_rng(29)
    sizes = [0, 1, 7, 0, 30, 3, 12]
    time = rng.integers(0, 4, sum(sizes)).astype(float) / 2  # many ties
    seq = rng.integers(-1, 3, sum(sizes)).astype(float)
    expected, at = [], 0
    for n in sizes:
        block = range(at, at + n)
        expected += sorted(block, key=lambda i: (time[i], seq[i]))
        at += n
    assert batch_order(time, seq, sizes).tolist() == expected
    assert batch_order(np.array([]), np.array([]), []).tolist() == []


def test_a_folder_is_built_once(tmp_path, monkeypatch):
    """One TraceSet built for a folder of qlog files (was one per file and one more for
    the join)."""
    for k, f in enumerate(CORPUS[:6]):
        (tmp_path / f"{k}-{f.name}").write_bytes(f.read_bytes())
    built = []
    original = TraceSet.from_events.__func__

    def counted(cls, *args, **kwargs):
        built.append(1)
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(TraceSet, "from_events", classmethod(counted))
    ts = statemine.read(tmp_path, derive_states=True)
    assert len(built) == 1
    assert len(ts.traces) == 6


def test_a_file_without_congestion_data_is_skipped_or_raised(tmp_path):
    header = '\x1e{"qlog_format": "JSON-SEQ", "qlog_version": "0.3", "trace": {}}\n'
    dead = tmp_path / "b-dead.sqlog"
    dead.write_text(header + '\x1e{"time": 1, "name": "transport:packet_sent", "data": {}}\n')
    (tmp_path / "a.sqlog").write_bytes((DATA / "v03.sqlog").read_bytes())
    ts = statemine.read(tmp_path)
    warnings = json.loads(ts.meta["warnings"])
    assert any(w.startswith(f"{dead}: no congestion state") for w in warnings)
    _equal(ts, _one_by_one(sorted(tmp_path.iterdir()), False))
    with pytest.raises(NoCongestionData):
        statemine.read(tmp_path, strict=True)
    (tmp_path / "a.sqlog").unlink()
    (tmp_path / "c-dead.sqlog").write_bytes(dead.read_bytes())
    with pytest.raises(InputError, match="none of the 2 files has congestion data"):
        statemine.read(tmp_path)


def test_the_same_trace_id_in_two_files_is_refused(tmp_path):
    """Two files of one name in two folders get their paths as sources; the same file
    given twice is read once (expand_paths), so a clash needs two names made alike."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "x.sqlog").write_bytes((DATA / "v03.sqlog").read_bytes())
    (b / "x.sqlog").write_bytes((DATA / "v03.sqlog").read_bytes())
    ts = statemine.read([a, b])
    assert sorted(ts.traces["trace"].astype(str)) == sorted(
        f"{p}#0" for p in (a / "x.sqlog", b / "x.sqlog")
    )


@pytest.mark.parametrize("derive", [False, True])
def test_one_file_is_read_through_the_stores_walk(derive, monkeypatch):
    """``read`` of one qlog goes through the walk ``store add`` uses: its long connections
    are spilled and built in slices (here every 20 events), and the trace set equals the
    whole read, file by file."""
    monkeypatch.setattr("statemine.parse.qlog._SLICE_ROWS", 20)
    flushed: list[int] = []
    real = _Connection.flush

    def flush(self, stem):
        flushed.append(len(self.items))
        real(self, stem)

    monkeypatch.setattr(_Connection, "flush", flush)
    read = 0
    for path in [*CORPUS, *LOSS[:2]]:
        flushed.clear()
        try:
            want = _whole(path, derive)
        except NoCongestionData as exc:
            with pytest.raises(NoCongestionData, match=re.escape(str(exc).split(": ", 1)[1])):
                statemine.read(path, derive_states=derive)
            continue
        _equal(statemine.read(path, derive_states=derive), want)
        if len(want.events) > 20:  # quiche logs a few states only: nothing to slice
            assert flushed, path
            read += 1
    assert read >= (11 if derive else 5)


def test_the_one_read_sniff_agrees_with_detect_format():
    """``_sniff`` (one read a file) names qlog files as :func:`detect_format` does."""
    from statemine.parse import _sniff, detect_format

    files = [*SMALL, DATA / "garbage.bin", DATA / "empty.qlog", *CORPUS]
    if SHARED.is_dir():
        files += [p for p in SHARED.rglob("*") if p.is_file() and p.suffix != ".md"]
    named = 0
    for f in files:
        sniffed = _sniff(f)
        if sniffed is not None:
            assert sniffed == detect_format(f) == "qlog", f
            named += 1
    assert named >= len(SMALL)
