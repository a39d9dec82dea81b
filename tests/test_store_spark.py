"""Spark reads a trace store unchanged (issue 17, part 1): ``spark.read.parquet(STORE)``
with Hive partition discovery gives statemine's own events, labels and metrics.

Slow (a JVM starts: one local Spark session for the module, loopback only). Skipped with
the reason when pyspark or java is absent, unless ``STATEMINE_REQUIRE_SPARK=1`` (CI sets
it: there a missing Spark fails)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from test_store import QLOG, _events, _fields_as_text, _interleaved_log, _log, _long_labels

import statemine
from statemine.cli import main
from statemine.store import read_store

pytestmark = [
    pytest.mark.slow,
    # pyspark warns about pandas 3 for its own Arrow conversions, which these tests do not use
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas"),
]

KEYS = ("impl", "version", "date", "build")
# labels a Spark reader would type differently by default: a date, a number with leading
# zeros, a version that is a number in one partition and text in the other
PARTITIONS = {
    "quic-go": {"impl": "quic-go", "version": "0.65.0", "date": "2026-11-24", "build": "007"},
    "aioquic": {"impl": "aioquic", "version": "1", "date": "2026-11-25", "build": "010"},
}


def _need_spark() -> Any:
    """The pyspark module, or a skip naming what is missing (a failure when Spark is
    required)."""
    required = os.environ.get("STATEMINE_REQUIRE_SPARK") == "1"
    try:
        import pyspark
    except ImportError:
        missing = "pyspark is not installed (pip install '.[spark]')"
    else:
        java_home = os.environ.get("JAVA_HOME")
        if shutil.which("java") or (java_home and (Path(java_home) / "bin" / "java").exists()):
            return pyspark
        missing = "java is not installed (Spark needs a JRE 17+)"
    if required:
        pytest.fail(f"STATEMINE_REQUIRE_SPARK=1 but {missing}")
    pytest.skip(missing)


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One local Spark session for the module: one core, a small heap, no UI, bound to
    127.0.0.1 (no traffic beyond loopback)."""
    _need_spark()
    from pyspark.sql import SparkSession

    tmp = tmp_path_factory.mktemp("spark")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPARK_LOCAL_IP", "127.0.0.1")
        mp.setenv("SPARK_LOCAL_HOSTNAME", "localhost")
        mp.setenv("PYSPARK_PYTHON", os.environ.get("PYSPARK_PYTHON", "python3"))
        session = (
            SparkSession.builder.master("local[1]")
            .appName("statemine-store-test")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.memory", "512m")
            # a short-lived JVM: the quick compiler only, one GC thread (halves the test here)
            .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
            .config("spark.sql.shuffle.partitions", "1")
            .config("spark.sql.warehouse.dir", str(tmp / "warehouse"))
            .getOrCreate()
        )
        session.sparkContext.setLogLevel("ERROR")
        try:
            yield session
        finally:
            session.stop()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """The files of each partition: a statemine log with per-trace labels (conn, role) and
    an end; a qlog (metrics) and a second log."""
    tmp = tmp_path_factory.mktemp("logs")
    return {"quic-go": [_interleaved_log(tmp / "a.log")], "aioquic": [QLOG, _log(tmp / "b.log")]}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, inputs: dict[str, list[Path]]) -> Path:
    """The two partitions, written by ``statemine store add``."""
    tmp = tmp_path_factory.mktemp("store")
    root = tmp / "fleet"
    for name, labels in PARTITIONS.items():
        args = [str(p) for p in inputs[name]]
        for key, value in labels.items():
            args += ["--label", f"{key}={value}"]
        res = CliRunner().invoke(main, ["store", "add", *args, "--store", str(root)])
        assert res.exit_code == 0, res.output
    return root


def _frame(rows: list[Any], columns: list[str]) -> pd.DataFrame:
    """Spark rows as a pandas frame (no Arrow conversion: pyspark's needs older pandas)."""
    return pd.DataFrame([[r[c] for c in columns] for r in rows], columns=columns)


def _as_text(spark: Any, path: Path, columns: list[str]) -> pd.DataFrame:
    """``path`` read by Spark with partition values kept as text (the documented way)."""
    key = "spark.sql.sources.partitionColumnTypeInference.enabled"
    spark.conf.set(key, "false")
    try:
        df = spark.read.parquet(str(path))
        assert [f.name for f in df.schema.fields][-len(KEYS) :] == list(KEYS)
        assert {df.schema[k].dataType.simpleString() for k in KEYS} == {"string"}
        return _frame(df.collect(), columns + list(KEYS))
    finally:
        spark.conf.unset(key)


def test_spark_infers_partition_types_unless_told_not_to(spark, store):
    from pyspark.sql.types import DateType, IntegerType, StringType

    df = spark.read.parquet(str(store))  # Spark's defaults: types inferred from the folders
    types = {k: type(df.schema[k].dataType) for k in KEYS}
    assert types == {
        "impl": StringType,
        "version": StringType,
        "date": DateType,
        "build": IntegerType,
    }
    assert sorted(r["build"] for r in df.select("build").distinct().collect()) == [7, 10]  # not 007
    # a version that is a number in every partition read is typed as one
    metrics = spark.read.parquet(str(store / "_metrics"))
    assert type(metrics.schema["version"].dataType) is IntegerType
    got = _as_text(spark, store, ["trace"])
    assert {tuple(r) for r in got[list(KEYS)].drop_duplicates().to_numpy()} == {
        tuple(p[k] for k in KEYS) for p in PARTITIONS.values()
    }


def test_spark_reads_the_events_as_statemine_does(spark, store):
    columns = [f.name for f in spark.read.parquet(str(store)).schema.fields][: -len(KEYS)]
    assert columns == [*_events(statemine.read(QLOG)).columns, "source", "end"]
    got = _as_text(spark, store, columns)
    info = statemine.store_info(store)
    assert info.keys == KEYS
    by_partition = got.groupby(list(KEYS)).agg(events=("seq", "size"), traces=("trace", "nunique"))
    want = {tuple(p.labels[k] for k in KEYS): (p.events, p.traces) for p in info.partitions}
    assert {k: tuple(v) for k, v in zip(by_partition.index, by_partition.to_numpy())} == want
    for labels in PARTITIONS.values():
        ts = read_store(store, labels)
        part = got[(got[list(KEYS)] == pd.Series(labels)).all(axis=1)]
        # per trace: the event counts, then every event (state names decoded, times exact)
        pd.testing.assert_series_equal(
            part.groupby("trace").size(),
            ts.events.astype({"trace": str}).groupby("trace").size(),
        )
        events = _fields_as_text(part.drop(columns=["source", "end", *KEYS]))
        events = events.astype({c: "float64" for c in ("cwnd", "inflight", "ssthresh", "srtt")})
        want_ev = _events(ts)
        pd.testing.assert_frame_equal(
            events.sort_values(["trace", "seq"]).reset_index(drop=True),
            want_ev,
            check_dtype=True,
        )
        assert got["time"].dtype == np.float64
        traces = ts.traces.assign(trace=ts.traces["trace"].astype(str)).set_index("trace")
        # Spark sees NaN where the file holds NaN (no explicit end), null where it holds
        # null (a metric not logged)
        from pyspark.sql import functions as F

        df = spark.read.parquet(str(store)).where(F.col("impl") == labels["impl"])
        nan_end = int(want_ev.merge(traces["end"], on="trace")["end"].isna().sum())
        assert (
            df.where(F.isnan("end")).count() == nan_end and df.where(F.isnull("end")).count() == 0
        )
        no_inflight = int(want_ev["inflight"].isna().sum())
        assert df.where(F.isnull("inflight")).count() == no_inflight
        assert df.where(F.isnan("inflight")).count() == 0
        # per trace: source and end as the traces frame has them (NaN: no explicit end)
        per_trace = part.groupby("trace")[["source", "end"]].agg(["min", "max"])
        for col in ("source", "end"):
            pd.testing.assert_series_equal(
                per_trace[(col, "min")], per_trace[(col, "max")], check_names=False
            )
            pd.testing.assert_series_equal(
                per_trace[(col, "min")].sort_index(),
                traces[col].astype(per_trace[(col, "min")].dtype).sort_index(),
                check_names=False,
            )


def test_spark_reads_the_labels_and_metrics(spark, store, inputs):
    everything = read_store(store)
    labels = _as_text(spark, store / "_labels", ["trace", "key", "value"])
    # each input's own labels, as reading it gives them (value as text: "7", "False")
    files = [path for paths in inputs.values() for path in paths]
    want = pd.concat([_long_labels(statemine.read(path).traces) for path in files])
    want = want.sort_values(["trace", "key"]).reset_index(drop=True)
    got = labels.drop(columns=list(KEYS)).sort_values(["trace", "key"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want)
    assert {"conn", "role", "file_events"} <= set(got["key"])

    metric_columns = list(everything.metrics.columns)
    metrics = _as_text(spark, store / "_metrics", metric_columns)
    assert len(metrics) == len(everything.metrics) > 0
    assert set(metrics["impl"]) == {"aioquic"}
    want_m = everything.metrics.astype({"trace": str}).sort_values(["trace", "time"])
    got_m = metrics[metric_columns].astype({c: "float64" for c in metric_columns[1:]})
    pd.testing.assert_frame_equal(
        got_m.sort_values(["trace", "time"]).reset_index(drop=True),
        want_m.reset_index(drop=True),
    )


def test_spark_reads_one_version_from_the_listed_files(spark, store, tmp_path):
    """Given the latest version's files (``store files``) with the store as basePath,
    Spark reads that version, with the partition columns, and not a data file no version
    lists (a killed add's), which reading the folder would include."""
    from statemine.store import published_files

    copy = tmp_path / "fleet"
    shutil.copytree(store, copy)
    files = published_files(copy)
    stray = files[0].with_name("part-1-2-0badf00d.parquet")
    shutil.copy(files[0], stray)
    key = "spark.sql.sources.partitionColumnTypeInference.enabled"
    spark.conf.set(key, "false")
    try:
        df = spark.read.option("basePath", str(copy)).parquet(*map(str, files))
        assert [f.name for f in df.schema.fields][-len(KEYS) :] == list(KEYS)
        events = len(read_store(store).events)
        assert df.count() == events
        by_impl = {r["impl"]: r["count"] for r in df.groupBy("impl").count().collect()}
        want = {p.labels["impl"]: p.events for p in statemine.store_info(store).partitions}
        assert by_impl == want
        folder = spark.read.parquet(str(copy)).count()
        assert folder == events + pq_rows(stray)
    finally:
        spark.conf.unset(key)


def pq_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows
