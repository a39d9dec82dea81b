"""The trace store: round trip through pyarrow (and DuckDB), counts, bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import statemine
from statemine.cli import main
from statemine.errors import InputError, StatemineError, UsageError

REPO = Path(__file__).resolve().parent.parent
QLOG = REPO / "tests" / "data" / "qlog" / "draft02.qlog"
COLUMNS = ["trace", "seq", "time", "kind", "state", "line", "cwnd", "inflight", "ssthresh", "srtt"]


def _log(path: Path, conns: int = 3, lines: int = 7) -> Path:
    rows = []
    for c in range(conns):
        for i in range(lines):
            state = ("SlowStart", "Recovery", "CongestionAvoidance")[(i + c) % 3]
            rows.append(f"STATEMINE t={i * 0.25 + c:.6f} conn=c{c} state={state} cwnd={1000 + i}\n")
    path.write_text("".join(rows))
    return path


def _events(ts: statemine.TraceSet) -> pd.DataFrame:
    ev = ts.events.reindex(columns=COLUMNS).astype(
        {"trace": str, "kind": str, "state": str, "seq": "int64", "line": "int64"}
    )
    return ev.sort_values(["trace", "seq"]).reset_index(drop=True)


def _dataset_events(store: Path, **labels: str) -> pd.DataFrame:
    # labels as text (by default readers infer numbers and dates from folder names)
    keys = statemine.store_info(store).keys
    hive = pads.partitioning(pa.schema([(k, pa.string()) for k in keys]), flavor="hive")
    dataset = pads.dataset(store, format="parquet", partitioning=hive)
    cond = None
    for key, value in labels.items():
        term = pads.field(key) == value
        cond = term if cond is None else cond & term
    ev = dataset.to_table(filter=cond).to_pandas()
    ev = ev[COLUMNS].astype({"trace": str, "kind": str, "state": str})
    return ev.sort_values(["trace", "seq"]).reset_index(drop=True)


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    log = _log(tmp_path / "a.log")
    saved = statemine.save(
        statemine.read(_log(tmp_path / "b.log", conns=2)), tmp_path / "b.parquet"
    )
    return {"log": log, "parquet": saved, "qlog": QLOG}


def test_round_trip_per_partition(inputs, tmp_path):
    store = tmp_path / "store"
    statemine.store_add([inputs["log"], inputs["qlog"]], store, {"impl": "x", "version": "1"})
    statemine.store_add([inputs["parquet"]], store, {"version": "2", "impl": "y"})
    want_x = _events(statemine.read([inputs["log"], inputs["qlog"]]))
    pd.testing.assert_frame_equal(_dataset_events(store, impl="x", version="1"), want_x)
    want_y = _events(statemine.read(inputs["parquet"]))
    pd.testing.assert_frame_equal(_dataset_events(store, impl="y", version="2"), want_y)
    # the qlog's metrics are kept per event
    assert want_x["cwnd"].notna().any()


def test_info_counts_match_an_independent_count(inputs, tmp_path):
    store = tmp_path / "store"
    statemine.store_add([inputs["log"]], store, {"impl": "x"})
    statemine.store_add([inputs["log"], inputs["parquet"]], store, {"impl": "y"})
    info = statemine.store_info(store)
    lines = inputs["log"].read_text().count("STATEMINE t=")
    conns = {
        w for line in inputs["log"].read_text().split() for w in [line] if w.startswith("conn=")
    }
    by = {p.labels["impl"]: p for p in info.partitions}
    assert info.keys == ("impl",)
    assert (by["x"].events, by["x"].traces, by["x"].files) == (lines, len(conns), 1)
    parquet_rows = pq.ParquetFile(inputs["parquet"]).metadata.num_rows
    assert by["y"].events == lines + parquet_rows and by["y"].files == 2
    assert info.events == 2 * lines + parquet_rows


def test_duckdb_reads_the_store_unchanged(inputs, tmp_path):
    duckdb = pytest.importorskip("duckdb", reason="duckdb not installed")
    store = tmp_path / "store"
    statemine.store_add([inputs["log"]], store, {"impl": "x"})
    got = duckdb.sql(
        f"select impl, count(*), count(distinct trace) from "
        f"read_parquet('{store}/**/*.parquet', hive_partitioning=true) group by impl"
    ).fetchall()
    assert got == [("x", 21, 3)]


@pytest.mark.parametrize(
    "label",
    [
        "impl=a/b",
        "impl=a=b",
        "impl=..",
        "impl=",
        "impl=a b",
        "impl=a%2Fb",
        "=x",
        "impl=.x",
        "trace=x",
    ],
)
def test_bad_label_is_one_line_exit_2_and_writes_nothing(inputs, tmp_path, label):
    store = tmp_path / "store"
    args = ["store", "add", str(inputs["log"]), "--store", str(store), "--label", label]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("statemine: error:")
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert not store.exists()


def test_a_nul_in_a_label_is_refused_by_the_library(inputs, tmp_path):
    with pytest.raises(UsageError, match="cannot name a partition"):
        statemine.store_add([inputs["log"]], tmp_path / "store", {"impl": "a\x00b"})
    assert not (tmp_path / "store").exists()


def test_other_label_keys_than_the_store_s_are_an_error(inputs, tmp_path):
    store = tmp_path / "store"
    statemine.store_add([inputs["log"]], store, {"impl": "x"})
    with pytest.raises(UsageError, match="partitioned by impl"):
        statemine.store_add([inputs["log"]], store, {"date": "2026-01-01"})


def test_mixed_schema_and_missing_files_are_errors(inputs, tmp_path):
    store = tmp_path / "store"
    statemine.store_add([inputs["log"]], store, {"impl": "x"})
    (store / "impl=y").mkdir()
    with pytest.raises(InputError, match="missing files"):
        statemine.store_info(store)
    pq.write_table(pa.table({"trace": ["a"], "time": [1.0]}), store / "impl=y" / "part-0.parquet")
    with pytest.raises(InputError, match="mixed schemas"):
        statemine.store_info(store)
    (store / "impl=y" / "part-0.parquet").write_bytes(b"PAR1 truncated")
    with pytest.raises(InputError, match="not a readable Parquet"):
        statemine.store_info(store)
    (store / "impl=y" / "part-0.parquet").unlink()
    (store / "impl=y" / "x=1").mkdir()
    with pytest.raises(InputError, match="not a data file"):
        statemine.store_info(store)
    with pytest.raises(InputError, match="not a statemine store"):
        statemine.store_info(tmp_path)


def test_a_failed_add_leaves_only_whole_files(inputs, tmp_path):
    store = tmp_path / "store"
    bad = tmp_path / "bad.log"
    bad.write_text("STATEMINE t=0 conn=a state=X\nSTATEMINE t=zz conn=a state=Y\n")
    with pytest.raises(StatemineError, match=r"bad\.log"):
        statemine.store_add([inputs["log"], bad], store, {"impl": "x"})
    with pytest.raises(StatemineError, match=r"bad\.log"):
        statemine.store_add([bad], tmp_path / "new", {"impl": "x"})
    assert not (tmp_path / "new").exists()  # a new store appears with its first file
    files = sorted((store / "impl=x").iterdir())
    assert [f.name.startswith("part-") and f.suffix == ".parquet" for f in files] == [True]
    info = statemine.store_info(store)
    assert info.events == inputs["log"].read_text().count("STATEMINE t=")
    assert np.isfinite(_dataset_events(store)["time"]).all()


def test_cli_add_then_info(inputs, tmp_path):
    store = str(tmp_path / "store")
    res = CliRunner().invoke(
        main, ["store", "add", str(inputs["log"]), "--store", store, "--label", "impl=x"]
    )
    assert res.exit_code == 0, res.output
    assert "added 21 events of 3 traces in 1 files" in res.output
    res = CliRunner().invoke(main, ["store", "info", "--store", store])
    assert res.exit_code == 0, res.output
    assert "impl=x\tfiles=1\ttraces=3\tevents=21" in res.output
