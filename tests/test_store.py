"""The trace store: round trip through pyarrow (and DuckDB), counts, bad input."""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from shared_data import shared

import statemine
from statemine.cli import main
from statemine.commands import ReadOptions
from statemine.errors import InputError, StatemineError, UsageError
from statemine.store import read_store

REPO = Path(__file__).resolve().parent.parent
QLOG = REPO / "tests" / "data" / "qlog" / "draft02.qlog"
COLUMNS = ["trace", "seq", "time", "kind", "state", "line", "cwnd", "inflight", "ssthresh", "srtt"]
EVENT_COLUMNS = [*COLUMNS, "fields"]


def _log(path: Path, conns: int = 3, lines: int = 7) -> Path:
    rows = []
    for c in range(conns):
        for i in range(lines):
            state = ("SlowStart", "Recovery", "CongestionAvoidance")[(i + c) % 3]
            rows.append(f"STATEMINE t={i * 0.25 + c:.6f} conn=c{c} state={state} cwnd={1000 + i}\n")
    path.write_text("".join(rows))
    return path


def _events(ts: statemine.TraceSet) -> pd.DataFrame:
    """The events, ``fields`` included (as text, None where missing or absent)."""
    ev = ts.events.reindex(columns=EVENT_COLUMNS).astype(
        {"trace": str, "kind": str, "state": str, "seq": "int64", "line": "int64"}
    )
    return _fields_as_text(ev).sort_values(["trace", "seq"]).reset_index(drop=True)


def _fields_as_text(ev: pd.DataFrame) -> pd.DataFrame:
    """``ev`` with its ``fields`` column as objects, None where missing."""
    fields = ev["fields"].astype(object)
    return ev.assign(fields=fields.where(fields.notna(), None))


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
    ev = _fields_as_text(ev[EVENT_COLUMNS].astype({"trace": str, "kind": str, "state": str}))
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


def test_polars_reads_the_published_files_as_statemine_does(inputs, tmp_path):
    """Polars given `store files`' list (docs/store.md) reads the same events per partition
    as statemine's own reader, labels from the folder names."""
    pl = pytest.importorskip("polars", reason="polars not installed (the test extra has it)")
    store = tmp_path / "store"
    statemine.store_add([inputs["log"], inputs["qlog"]], store, {"impl": "x", "version": "1"})
    statemine.store_add([inputs["parquet"]], store, {"version": "2", "impl": "y"})
    files = [str(p) for p in statemine.store.published_files(store)]
    frame = pl.scan_parquet(files, hive_partitioning=True).collect()
    for impl, version, sources in (
        ("x", "1", [inputs["log"], inputs["qlog"]]),
        ("y", "2", [inputs["parquet"]]),
    ):
        part = frame.filter(
            (pl.col("impl") == impl) & (pl.col("version").cast(pl.String) == version)
        )
        got = (
            part.select(EVENT_COLUMNS).to_pandas().astype({"trace": str, "kind": str, "state": str})
        )
        got = _fields_as_text(got).sort_values(["trace", "seq"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(got, _events(statemine.read(sources)))


def test_duckdb_reads_the_store_unchanged(inputs, tmp_path):
    duckdb = pytest.importorskip("duckdb", reason="duckdb not installed")
    store = tmp_path / "store"
    statemine.store_add([inputs["log"]], store, {"impl": "x"})
    got = duckdb.sql(
        f"select impl, count(*), count(distinct trace) from "
        f"read_parquet('{store}/**/part-*.parquet', hive_partitioning=true) group by impl"
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
        "impl=a\nb",
        "impl=..a",
        "impl=" + "a" * 201,
        "k" * 201 + "=a",
        "k" * 100 + "=" + "v" * 200,  # each part allowed, the folder name too long for Linux
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


def test_files_no_version_lists_are_ignored_and_listed_ones_checked(inputs, tmp_path):
    """What no version lists (an empty partition folder, a stray Parquet file: a killed
    add's) is not the store's; a listed data file of another schema, damaged or gone is
    an error naming it."""
    store = tmp_path / "store"
    statemine.store_add([inputs["log"]], store, {"impl": "x"})
    want = statemine.store_info(store)
    (store / "impl=y").mkdir()
    assert statemine.store_info(store) == want  # was "a partition without data files"
    pq.write_table(pa.table({"trace": ["a"], "time": [1.0]}), store / "impl=y" / "part-0.parquet")
    (store / "impl=x" / "x=1").mkdir()
    assert statemine.store_info(store) == want and read_store(store).n_traces == 3
    (data,) = (store / "impl=x").glob("part-*.parquet")
    saved = data.read_bytes()
    pq.write_table(pa.table({"trace": ["a"], "time": [1.0]}), data)
    with pytest.raises(InputError, match="mixed schemas"):
        statemine.store_info(store)
    data.write_bytes(b"PAR1 truncated")
    with pytest.raises(InputError, match="not a readable Parquet"):
        statemine.store_info(store)
    data.unlink()
    with pytest.raises(InputError, match=r"listed by the store's version but missing"):
        statemine.store_info(store)
    data.write_bytes(saved)
    assert statemine.store_info(store) == want
    with pytest.raises(InputError, match="not a statemine store"):
        statemine.store_info(tmp_path)


def test_a_failed_add_publishes_nothing(inputs, tmp_path):
    """An add is one version: an input that fails leaves the store as it was, also the
    earlier inputs of the same add (each used to stay), and a new store does not appear."""
    store = tmp_path / "store"
    bad = tmp_path / "bad.log"
    bad.write_text("STATEMINE t=0 conn=a state=X\nSTATEMINE t=zz conn=a state=Y\n")
    statemine.store_add([inputs["log"]], store, {"impl": "x"})
    before = _snapshot(store)
    for partition in ("x", "new"):
        with pytest.raises(StatemineError, match=r"bad\.log"):
            statemine.store_add([inputs["log"], bad], store, {"impl": partition})
        assert _snapshot(store) == before
    with pytest.raises(StatemineError, match=r"bad\.log"):
        statemine.store_add([inputs["log"], bad], tmp_path / "new", {"impl": "x"})
    assert not (tmp_path / "new").exists()  # a new store appears with its first version
    info = statemine.store_info(store)
    assert info.events == inputs["log"].read_text().count("STATEMINE t=") and info.version == 1
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
    assert "│ impl=x               │     1 │      3 │     21 │" in res.output
    assert "│ total (1 partitions) │     1 │      3 │     21 │" in res.output


def table_cells(text: str) -> list[list[str]]:
    """The body rows of the rich tables in ``text``, as stripped cell texts."""
    rows = [line for line in text.splitlines() if line.startswith("│")]
    return [[c.strip() for c in line.strip("│").split("│")] for line in rows]


def test_cli_info_is_a_table_that_fits_the_terminal_or_csv(inputs, tmp_path):
    """`store info` prints the fitted table the other commands print (whole rows when piped
    or --wide) and, with --csv, one CSV row per partition: the numbers of store_info, and
    the events those of the logs (counted here from their lines)."""
    import csv
    import io
    import re

    store = tmp_path / "store"
    for impl in ("quic-go-with-a-long-name", "x"):
        statemine.store_add([inputs["log"]], store, {"impl": impl, "day": "2026-11-24"})
    events = inputs["log"].read_text().count("STATEMINE t=")
    args = ["store", "info", "--store", str(store)]
    rows = list(csv.DictReader(io.StringIO(CliRunner().invoke(main, [*args, "--csv"]).stdout)))
    assert [(r["partition"], r["files"], r["events"]) for r in rows] == [
        ("impl=quic-go-with-a-long-name/day=2026-11-24", "1", str(events)),
        ("impl=x/day=2026-11-24", "1", str(events)),
    ]
    info = statemine.store_info(store)
    assert [int(r["traces"]) for r in rows] == [p.traces for p in info.partitions]
    assert [r["trace labels"] for r in rows] == [",".join(p.trace_labels) for p in info.partitions]
    tty = {"COLUMNS": "40", "TTY_COMPATIBLE": "1", "NO_COLOR": "1", "TERM": "xterm"}
    plain = lambda text: re.sub(r"\x1b\[[0-9;]*m", "", text)  # noqa: E731
    fitted = CliRunner().invoke(main, args, env=tty)
    assert fitted.exit_code == 0 and max(map(len, plain(fitted.stdout).splitlines())) <= 40
    wide = CliRunner().invoke(main, [*args, "--wide"], env=tty)
    piped = CliRunner().invoke(main, args, env={"COLUMNS": "40"})
    assert plain(wide.stdout) == piped.stdout
    assert piped.stdout.startswith("partition keys: impl, day")
    cells = table_cells(piped.stdout)
    assert cells[-1][:4] == ["total (2 partitions)", "2", str(info.traces), str(2 * events)]
    assert cells[0][0] == "impl=quic-go-with-a-long-name/day=2026-11-24"  # whole


def _interleaved_log(path: Path) -> Path:
    """Connections interleaved through the file, one of them long, with roles, metrics,
    other fields on some lines (``fields``, UTF-8 too), a point event and a Close (the
    trace's end)."""
    rows = []
    for i in range(60):
        c = i % 4 if i < 40 else 0  # conn 0 continues alone: a long trace
        state = ("SlowStart", "Recovery", "CongestionAvoidance")[(i * 7) % 3]
        role = " role=server" if c != 3 else ""
        extra = (
            f" rule=packet pn={i}" if i % 3 == 0 else " why=d\u00e9j\u00e0-\u20ac" * (i % 5 == 1)
        )
        rows.append(
            f"STATEMINE t={i * 0.5:.3f} conn=c{c}{role} state={state} cwnd={1000 + i}{extra}\n"
        )
        if i == 30:
            rows.append(f"STATEMINE t={i * 0.5:.3f} conn=c2 role=server event=Close\n")
    path.write_text("".join(rows))
    return path


def _plain(table: pa.Table) -> pd.DataFrame:
    return table.to_pandas().astype({c: str for c in ("trace", "kind", "state", "source")})


@pytest.mark.parametrize("batch_rows", [1, 7, 1 << 20])
def test_streamed_add_equals_the_trace_set_read_whole(tmp_path, monkeypatch, batch_rows):
    import functools

    import statemine.store as store_module
    import statemine.store_stream as stream
    from statemine.parse.statemine_log import LogScan
    from statemine.store import to_table

    log = _interleaved_log(tmp_path / "a.log")
    held: list[int] = []
    monkeypatch.setattr(stream, "LogScan", functools.partial(LogScan, chunk_bytes=200))
    real = store_module.rows_table

    def counting(rows, *args):
        held.append(len(rows["trace"]))
        return real(rows, *args)

    monkeypatch.setattr(store_module, "rows_table", counting)
    out = statemine.store_add([log], tmp_path / "s", {"impl": "x"}, batch_rows=batch_rows)
    got = _plain(pq.read_table(out.files[0]))
    want = _plain(to_table(statemine.read(log)))
    assert want["fields"].str.contains("pn=").sum() == 20
    assert want["fields"].str.contains("\u20ac").sum() == 8
    pd.testing.assert_frame_equal(got, want)
    assert (out.events, out.traces) == (len(want), want["trace"].nunique())
    # memory: a batch holds at most batch_rows events, or one trace's slice of one block
    blocks = len(list(LogScan(log, chunk_bytes=200)))
    assert blocks > 3 and len(held) > (blocks if batch_rows == 1 else 0)
    longest = pd.Series(next(iter(LogScan(log, chunk_bytes=200))).trace).value_counts().max()
    assert max(held) <= max(batch_rows, 1) + 2 * longest or batch_rows == 1 << 20
    assert not [p for p in (tmp_path / "s").iterdir() if p.name.startswith(".")]  # no spill


def _long_labels(traces: pd.DataFrame) -> pd.DataFrame:
    """Each trace's labels as rows trace, key, value (text), one trace after another."""
    rows = [
        (str(t), key, str(value))
        for t, row in zip(
            traces["trace"], traces.drop(columns=["trace", "source", "end"]).to_dict("records")
        )
        for key, value in row.items()
        if value is not None and value == value  # not None, not NaN
    ]
    return pd.DataFrame(rows, columns=["trace", "key", "value"])


def test_trace_labels_and_metrics_are_stored(tmp_path):
    store = tmp_path / "s"
    log = _interleaved_log(tmp_path / "a.log")
    statemine.store_add([log, QLOG], store, {"impl": "x"})
    want = pd.concat([_long_labels(statemine.read(f).traces) for f in (log, QLOG)])
    labels = pads.dataset(store / "_labels", format="parquet", partitioning="hive").to_table()
    got = labels.to_pandas()[["trace", "key", "value"]].astype(str)
    key = ["trace", "key"]
    pd.testing.assert_frame_equal(
        got.sort_values(key).reset_index(drop=True), want.sort_values(key).reset_index(drop=True)
    )
    metrics = statemine.read(QLOG).metrics
    table = pads.dataset(store / "_metrics", format="parquet", partitioning="hive").to_table()
    stored = table.to_pandas()
    assert len(stored) == len(metrics) > 0
    for col in metrics.columns:
        if col != "trace":
            np.testing.assert_array_equal(stored[col].to_numpy(float), metrics[col].to_numpy(float))
    info = statemine.store_info(store)
    assert info.partitions[0].metrics == len(metrics)
    assert set(info.partitions[0].trace_labels) == set(want["key"])
    res = CliRunner().invoke(main, ["store", "info", "--store", str(store)])
    row = table_cells(res.output)[0]
    want_row = ["impl=x", "2", str(info.partitions[0].traces), str(info.events), str(len(metrics))]
    assert row[:5] == want_row and "conn" in row[5]


def test_labels_and_metrics_files_are_checked(inputs, tmp_path):
    store = tmp_path / "s"
    statemine.store_add([inputs["qlog"]], store, {"impl": "x"})
    (labels,) = (store / "_labels" / "impl=x").iterdir()
    (metrics,) = (store / "_metrics" / "impl=x").iterdir()
    saved, saved_metrics = labels.read_bytes(), metrics.read_bytes()
    labels.unlink()
    with pytest.raises(InputError, match="labels file is missing"):
        statemine.store_info(store)
    pq.write_table(pa.table({"trace": ["a"]}), labels)
    with pytest.raises(InputError, match="mixed schemas"):
        statemine.store_info(store)
    labels.write_bytes(saved)
    metrics.write_bytes(b"not parquet")
    with pytest.raises(InputError, match="not a readable Parquet"):
        statemine.store_info(store)
    metrics.unlink()
    with pytest.raises(InputError, match="metrics file is missing"):  # the labels say it was
        statemine.store_info(store)
    metrics.write_bytes(saved_metrics)
    want = statemine.store_info(store)
    orphan = store / "_metrics" / "impl=x" / "metrics-123.parquet"
    orphan.write_bytes(b"")  # a killed add's: not listed, ignored (was "interrupted add")
    assert statemine.store_info(store) == want
    assert statemine.store_vacuum(store, grace=0).removed == (orphan,)
    assert statemine.store_info(store) == want


def test_a_failed_data_file_write_removes_its_labels(tmp_path, monkeypatch):
    import statemine.store as st

    log = _interleaved_log(tmp_path / "a.log")
    store = tmp_path / "s"
    statemine.store_add([log], store, {"impl": "x"})
    before = sorted(p.relative_to(store) for p in store.rglob("*"))

    def fail(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(st, "_write_streamed", fail)
    with pytest.raises(KeyboardInterrupt):
        statemine.store_add([log], store, {"impl": "x"})
    assert sorted(p.relative_to(store) for p in store.rglob("*")) == before
    statemine.store_info(store)


def _same_set(got: statemine.TraceSet, want: statemine.TraceSet, partition: dict) -> None:
    """``got`` (read from a store) holds ``want``'s events, per-trace labels (dtypes
    included) and metrics, and every trace carries the ``partition`` labels."""
    pd.testing.assert_frame_equal(_events(got), _events(want))
    tr = got.traces
    for key, value in partition.items():
        assert (tr[key] == value).all()
    pd.testing.assert_frame_equal(tr.drop(columns=list(partition)), want.traces)
    if want.metrics is None:
        assert got.metrics is None
        return
    as_text = {"trace": str}
    pd.testing.assert_frame_equal(
        got.metrics.astype(as_text), want.metrics.astype(as_text), check_like=False
    )


ROUND_TRIP = [
    "qlog/draft02.qlog",
    "qlog/draft00_mvfst.qlog",
    "qlog/draft01_picoquic.qlog",
    "qlog/v03.sqlog",
    "qlog/v04.qlog",
    "qlog/file_schema.sqlog",
    "tcp/record-cubic-3kb-loss.txt.gz",
    "tcp/perf-script-reno-tbf.txt.gz",
    "tcp/trace-cmd-report-reno-tbf.txt.gz",
]


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_labels_and_metrics_round_trip_through_the_store(tmp_path, name):
    path = REPO / "tests" / "data" / name
    store = tmp_path / "s"
    statemine.store_add([path], store, {"fleet": "a", "env": "lab"})
    statemine.store_add([_log(tmp_path / "other.log")], store, {"fleet": "b", "env": "lab"})
    want = statemine.read(path)
    partition = {"fleet": "a", "env": "lab"}
    _same_set(read_store(store, {"fleet": "a"}), want, partition)  # the other partition pruned
    # the same through the commands' reader, with a selection
    from statemine.commands import read_inputs

    _same_set(read_inputs(store, selections=["fleet=a"]), want, partition)
    everything = read_store(store)
    assert set(everything.traces["fleet"]) == {"a", "b"}
    assert len(everything.metrics) == len(want.metrics) if want.metrics is not None else True


def test_an_input_added_twice_keeps_its_metrics_under_the_renamed_trace(tmp_path):
    store = tmp_path / "s"
    for _ in range(2):
        statemine.store_add([QLOG], store, {"fleet": "a"})
    got = read_store(store)
    want = statemine.read(QLOG)
    (trace,) = want.traces["trace"]
    assert list(got.traces["trace"]) == [trace, f"{trace}#2"]
    metrics = got.metrics.astype({"trace": str})
    for name in (trace, f"{trace}#2"):
        one = metrics[metrics["trace"] == name].drop(columns="trace").reset_index(drop=True)
        pd.testing.assert_frame_equal(one, want.metrics.drop(columns="trace"))


def test_a_label_given_twice_in_a_labels_file_is_an_input_error(tmp_path):
    store = tmp_path / "s"
    statemine.store_add([QLOG], store, {"fleet": "a"})
    (labels,) = (store / "_labels" / "fleet=a").iterdir()
    table = pq.read_table(labels)
    pq.write_table(pa.concat_tables([table, table]), labels)
    with pytest.raises(InputError, match="same label twice"):
        read_store(store)


def _ftrace(path: Path, sockets: int, lines: int) -> Path:
    """A tracefs text of ``sockets`` senders' interleaved probes and state changes, some
    lines out of time order (per-CPU buffers), one 4-tuple reused by a second socket."""
    rng = np.random.default_rng(3)
    rows = ["# tracer: nop\n"]
    for i in range(lines):
        s = int(rng.integers(sockets))
        t = 100 + i * 1e-3 - (2e-3 if i % 17 == 5 else 0)
        head = f"  iperf3-1 [00{s % 2}] ..s1. {t:.6f}: "
        if i % 9 == 4:
            rows.append(
                head + f"tcp_cong_state_set: family=AF_INET sport={40000 + s} dport=5201 "
                f"saddr=10.0.0.1 daddr=10.0.0.2 saddrv6=::1 daddrv6=::2 cong_state={i % 5}\n"
            )
        else:
            cookie = 7 if (s == 0 and i > lines // 2) else s + 1
            rows.append(
                head + f"tcp_probe: family=AF_INET src=10.0.0.1:{40000 + s} dest=10.0.0.2:5201 "
                f"mark=0x0 data_len=0 snd_nxt=0x{i + 900:x} snd_una=0x{i:x} snd_cwnd={10 + i % 7} "
                f"ssthresh=2147483647 snd_wnd=6 srtt={50 + i % 3} rcv_wnd=6 sock_cookie={cookie:x}\n"
            )
    path.write_text("".join(rows))
    return path


@pytest.mark.parametrize("batch_rows", [1, 40, 1 << 20])
def test_ftrace_is_added_in_batches_with_the_set_read_whole(tmp_path, monkeypatch, batch_rows):
    import statemine.parse.ftrace as ft

    log = _ftrace(tmp_path / "trace.txt", sockets=12, lines=600)
    held: list[int] = []
    real = ft._build

    def counting(path, source, data, *args):
        held.append(len(data["time"]))
        return real(path, source, data, *args)

    monkeypatch.setattr(ft, "_build", counting)
    store = tmp_path / "s"
    out = statemine.store_add([log], store, {"fleet": "a"}, batch_rows=batch_rows)
    pieces = list(held)
    want = statemine.read(log)
    held.clear()
    _same_set(read_store(store), want, {"fleet": "a"})
    assert (out.traces, out.events) == (want.n_traces, len(want.events))
    # memory: a batch holds at most batch_rows lines, or one 4-tuple's lines
    per_tuple = np.bincount(
        [int(m) for m in re.findall(r"(?:sport=|src=10\.0\.0\.1:)4(\d{4})", log.read_text())]
    )
    assert sum(pieces) == per_tuple.sum() == 600
    assert max(pieces) <= max(batch_rows, per_tuple.max())
    assert len(pieces) == (12 if batch_rows == 1 else 1 if batch_rows > 600 else len(pieces))
    assert len(pieces) > 1 or batch_rows > 600
    metrics = pq.ParquetFile(next((store / "_metrics").rglob("*.parquet")))
    assert metrics.metadata.num_row_groups >= len(pieces)
    assert not [p for p in store.iterdir() if p.name.startswith(".")]  # no spill left
    # many small blocks (out-of-order lines across them): the pieces join to the whole set
    spill = tmp_path / "spill"
    spill.mkdir()
    joined = statemine.concat(
        ft.read_ftrace_batches(log, spill, batch_rows=batch_rows, chunk_bytes=4096)
    )
    assert (spill / "time.bin").stat().st_size == 600 * 8
    # (the reader numbers a block's sockets state lines first: the order follows the blocks)
    want = ft.read_ftrace(log, chunk_bytes=4096)
    text = {"trace": str, "kind": str, "state": str}
    pd.testing.assert_frame_equal(joined.events.astype(text), want.events.astype(text))
    pd.testing.assert_frame_equal(joined.traces, want.traces)
    as_text = {"trace": str}
    pd.testing.assert_frame_equal(joined.metrics.astype(as_text), want.metrics.astype(as_text))


def _qlog_connections(path: Path, conns: int, events: int) -> Path:
    """A JSON-SEQ qlog whose ``conns`` connections (group_id) interleave."""
    import json

    header = {"qlog_format": "JSON-SEQ", "qlog_version": "0.3", "title": "quic-go", "trace": {}}
    rows = ["\x1e" + json.dumps(header) + "\n"]
    for i in range(events):
        g, t = f"g{i % conns}", i * 0.5
        if i % 7 == 0:
            ev = {"name": "recovery:congestion_state_updated", "data": {"new": "slow_start"}}
            if i % 14 == 0:
                ev["data"] = {"new": "congestion_avoidance"}
        else:
            ev = {"name": "recovery:metrics_updated", "data": {"congestion_window": 1000 + i}}
        rows.append("\x1e" + json.dumps({"time": t, "group_id": g, **ev}) + "\n")
    path.write_text("".join(rows))
    return path


def test_qlog_is_added_one_connection_at_a_time(tmp_path, monkeypatch):
    import statemine.store as st

    log = _qlog_connections(tmp_path / "c.sqlog", conns=5, events=400)
    sizes: list[int] = []
    real = st.metrics_table

    def counting(metrics):
        sizes.append(len(metrics))
        return real(metrics)

    monkeypatch.setattr(st, "metrics_table", counting)
    statemine.store_add([log], tmp_path / "s", {"fleet": "a"}, batch_rows=16)
    want = statemine.read(log)
    _same_set(read_store(tmp_path / "s"), want, {"fleet": "a"})
    assert want.n_traces == 5 and len(want.metrics) > 5 * 16
    # the metrics are written 16 rows at a time, connection by connection
    assert max(sizes) <= 16 and sum(sizes) == len(want.metrics)
    assert len(sizes) >= 5 * np.ceil(len(want.metrics) / 5 / 16)


def test_a_failed_qlog_add_leaves_nothing(tmp_path):
    store = tmp_path / "s"
    bad = tmp_path / "bad.sqlog"
    bad.write_text('\x1e{"qlog_format": "JSON-SEQ", "qlog_version": "0.3", "trace": {}}\n')
    with pytest.raises(InputError):
        statemine.store_add([bad], store, {"fleet": "a"})
    assert not store.exists()


@pytest.mark.parametrize("name", ["parallel_10_50KB_f5.qlog", "doublevantage_100ms.qlog"])
def test_real_qlogs_round_trip_through_the_store_connection_by_connection(tmp_path, name):
    """Real qlogs (one with two traces; states derived: they log metrics only) added
    connection by connection read back as the file read whole."""
    path = shared("real-qlog", *name.split("/"))
    want = statemine.read(path, derive_states=True)
    read = ReadOptions(derive_states=True)
    statemine.store_add([path], tmp_path / "s", {"fleet": "real"}, read, batch_rows=64)
    _same_set(read_store(tmp_path / "s"), want, {"fleet": "real"})
    assert want.n_traces == (2 if name.startswith("doublevantage") else 1)


def _qlog_events(seed: int, n: int, groups: tuple[str, ...]) -> list[dict]:
    """``n`` random qlog events (time in ms, ordered) of the connections ``groups`` (a
    group named ``m...`` logs metrics only, one named ``p...`` metrics, packets, losses and
    PTO timers, so their states are derived, from cwnd alone or with RFC 9002 periods):
    state changes (a missing ``new``, an ``old`` that breaks the chain, names no table
    knows), metrics updates (some logging pto_count), PTO timers, losses, spurious losses,
    mvfst app-limited and metric updates, packets sent and acknowledged. A connection
    with states begins with a metrics update, then a state change (a ``start=old`` row)."""
    import random

    rng = random.Random(seed)
    names = ["slow_start", "congestion_avoidance", "recovery", "Turbo", "17"]
    t, sent, last = 0.0, dict.fromkeys(groups, 0), dict.fromkeys(groups, "slow_start")
    seen = dict.fromkeys(groups, 0)
    out = []
    for _ in range(n):
        g = rng.choice(groups)
        t += rng.choice([0.0, 0.25, 1.0])
        r = rng.random()
        if g.startswith(("m", "p")):  # no states: metrics (and packets, losses, timers)
            r = 0.1 + (0.25 if g.startswith("m") else 0.65) * rng.random()
        if seen[g] < 2 and not g.startswith(("m", "p")):
            r = (0.2, 0.0)[seen[g]]
        seen[g] += 1
        if r < 0.1:
            new = "congestion_avoidance" if seen[g] == 2 else rng.choice(names)
            data: dict = {"new": new, "old": last[g] if rng.random() < 0.8 else "Other"}
            data = data if rng.random() > 0.05 else {"old": "x"}
            last[g] = new
            name = "recovery:congestion_state_updated"
        elif r < 0.35:
            data = {"congestion_window": 1000 + rng.randrange(50000)}
            data["bytes_in_flight"] = rng.randrange(40000)
            if rng.random() < 0.5:
                data["pto_count"] = rng.choice([0, 0, 1])
            name = "recovery:metrics_updated"
        elif r < 0.45:
            pn = sent[g] = sent[g] + 1
            data = {"header": {"packet_type": "1RTT", "packet_number": pn}}
            name = "transport:packet_sent"
        elif r < 0.52:
            top = max(sent[g] - rng.randrange(3), 0)
            frames = [{"frame_type": "ack", "acked_ranges": [[0, top]]}]
            data, name = (
                {"header": {"packet_type": "1RTT"}, "frames": frames},
                "transport:packet_received",
            )
        elif r < 0.6:
            data = {"timer_type": "pto", "event_type": rng.choice(["expired", "set"])}
            name = "recovery:loss_timer_updated"
        elif r < 0.7:
            data = {
                "header": {"packet_number": rng.randrange(sent[g] + 1)},
                "trigger": "time_threshold",
            }
            name = "recovery:packet_lost"
        elif r < 0.75:
            data, name = {"packet_number": rng.randrange(sent[g] + 1)}, "recovery:spurious_loss"
        elif r < 0.85:
            data = {"app_limited": rng.choice(["app limited", "app unlimited", "sometimes"])}
            name = "recovery:app_limited_update"
        else:
            data = {"current_cwnd": rng.randrange(5000, 60000), "state": rng.choice(["Steady", ""])}
            name = "recovery:congestion_metric_update"
        out.append({"time": t, "group_id": g, "name": name, "data": data})
    return out


def _sliced_qlog(tmp_path: Path, layout: str) -> Path:
    """A generated qlog: ``seq`` (JSON-SEQ, three interleaved connections and a derived
    one), ``one`` (JSON-SEQ, one connection), ``doc`` (a JSON document of two traces, the
    second mixing connections), each also gzip'ed (``...-gz``)."""
    import gzip
    import json

    kind = layout.removesuffix("-gz")
    if kind == "doc":
        traces = [_qlog_events(3, 600, ("a",)), _qlog_events(4, 600, ("a", "b"))]
        for event in traces[0]:
            del event["group_id"]
        doc = {
            "qlog_version": "0.3",
            "title": "quic-go",
            "traces": [{"vantage_point": {"type": "server"}, "events": e} for e in traces],
        }
        text = json.dumps(doc)
    else:
        groups = ("a", "b", "c", "m") if kind == "seq" else ("a",)
        header = {"qlog_format": "JSON-SEQ", "qlog_version": "0.3", "title": "quic-go", "trace": {}}
        events = _qlog_events(1 if kind == "seq" else 2, 1200, groups)
        text = "".join("\x1e" + json.dumps(r) + "\n" for r in [header, *events])
    path = tmp_path / f"{layout}.{'qlog' if kind == 'doc' else 'sqlog'}"
    if layout.endswith("-gz"):
        path = path.with_name(path.name + ".gz")
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("layout", "rows", "derive"),
    [
        *[(layout, 2, False) for layout in ("seq", "one", "doc", "seq-gz", "doc-gz")],
        ("seq", 2, True),
        ("doc", 2, True),
        ("seq", 50, False),
    ],
)
def test_long_qlog_connections_are_added_in_slices(tmp_path, layout, rows, derive):
    """A qlog whose connections pass ``batch_rows`` is spilled and built slice by slice
    (several row groups per connection; one each before): the store holds what reading
    the file whole gives, with PTO ends, start=old rows, app-limited marks, unknown names
    and (with ``derive``) a connection of derived states among interleaved ones."""
    path = _sliced_qlog(tmp_path, layout)
    want = statemine.read(path, derive_states=derive)
    store = tmp_path / "s"
    statemine.store_add(
        [path], store, {"fleet": "a"}, ReadOptions(derive_states=derive), batch_rows=rows
    )
    _same_set(read_store(store), want, {"fleet": "a"})
    states = want.events["fields"].astype(str)
    assert states.str.contains("after=pto").any() and states.str.contains("start=old").any()
    assert want.traces["derived"].any() == (derive and layout.startswith("seq"))
    (data,) = store.rglob("part-*.parquet")
    groups = pq.ParquetFile(data).num_row_groups
    derived = want.traces.loc[want.traces["derived"], "trace"]
    sliced = int((~want.events["trace"].astype(str).isin(derived)).sum())
    assert groups >= sliced / rows > want.n_traces if rows < 50 else groups > 1
    assert not list(store.glob(".spill-*"))


def test_qlog_parts_are_bounded_by_the_slice_size(tmp_path, monkeypatch):
    """Each part holds at most ``slice_rows`` events or metrics rows, and no more than
    ``slice_rows`` congestion events are held before they go to the spill files."""
    from statemine.parse.qlog import read_qlog_parts
    from statemine.parse.qlog.connections import _Connection

    held: list[int] = []
    real = _Connection.flush

    def flush(self, stem):
        held.append(len(self.items) + len(self.metric_rows()))
        real(self, stem)

    monkeypatch.setattr(_Connection, "flush", flush)
    path = _sliced_qlog(tmp_path, "seq")
    parts = list(read_qlog_parts(path, tmp_path, slice_rows=20))
    sizes = [len(p.events) for p in parts if p.events is not None]
    sizes += [len(p.metrics) for p in parts if p.metrics is not None]
    assert max(sizes) <= 20 and len(sizes) > 30
    assert held and max(held) <= 20
    want = statemine.read(path)
    events = pd.concat([p.events for p in parts if p.events is not None], ignore_index=True)
    text = {"trace": str, "kind": str, "state": str}
    events = events.sort_values(["trace", "seq"], kind="stable").reset_index(drop=True)
    expected = want.events.sort_values(["trace", "seq"], kind="stable").reset_index(drop=True)
    columns = list(expected.columns)
    pd.testing.assert_frame_equal(
        events[columns].astype(text), expected.astype(text), check_dtype=False
    )
    assert sum(p.first for p in parts) == want.n_traces
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(("seq-", "0-"))]


def test_an_unordered_qlog_connection_is_added_whole(tmp_path):
    """A connection whose events go back in time is sorted, so read back and built whole;
    the store still holds what the whole read gives."""
    import json

    events = _qlog_events(5, 1200, ("a", "b"))
    for k, event in enumerate(events):
        if event["group_id"] == "b" and k % 9 == 0:
            event["time"] = max(event["time"] - 5.0, 0.0)
    header = {"qlog_format": "JSON-SEQ", "qlog_version": "0.3", "title": "quic-go", "trace": {}}
    path = tmp_path / "u.sqlog"
    path.write_text("".join("\x1e" + json.dumps(r) + "\n" for r in [header, *events]))
    want = statemine.read(path)
    statemine.store_add([path], tmp_path / "s", {"fleet": "a"}, batch_rows=4)
    _same_set(read_store(tmp_path / "s"), want, {"fleet": "a"})


def test_a_qlog_cut_off_after_spilling_leaves_nothing(tmp_path):
    """A gzip'ed qlog cut off past its first spills: one error naming the file, no store,
    no spill folder, and an existing store unchanged."""
    import gzip

    path = _sliced_qlog(tmp_path, "seq-gz")
    whole = path.read_bytes()
    cut = tmp_path / "cut.sqlog.gz"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    with pytest.raises(InputError, match=r"cut\.sqlog\.gz"):
        statemine.store_add([cut], tmp_path / "new", {"fleet": "a"}, batch_rows=8)
    assert not (tmp_path / "new").exists()
    store = tmp_path / "s"
    statemine.store_add([QLOG], store, {"fleet": "a"})
    before = sorted(p.relative_to(store) for p in store.rglob("*"))
    with pytest.raises(InputError, match=r"cut\.sqlog\.gz"):
        statemine.store_add([cut], store, {"fleet": "a"}, batch_rows=8)
    assert sorted(p.relative_to(store) for p in store.rglob("*")) == before
    result = CliRunner().invoke(
        main, ["store", "add", str(cut), "--store", str(store), "--label", "fleet=a"]
    )
    assert result.exit_code == 2 and "cut.sqlog.gz" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert sorted(p.relative_to(store) for p in store.rglob("*")) == before
    assert gzip.decompress(whole)  # the whole file is valid


@pytest.mark.parametrize(
    "name",
    [
        "doublevantage_100ms.qlog",
        "parallel_10_50KB_f5.qlog",
        "picoquic/multipath_qlog_ref.txt",
        "picoquic/qlog_trace_ecn_ref.txt",
        "picoquic/qlog_trace_ref.txt",
        pytest.param("qvis/quictrace_example_github.qlog.gz", marks=pytest.mark.slow),
    ],
)
@pytest.mark.parametrize("rows", [1, 2, 50])
def test_real_qlogs_round_trip_in_slices(tmp_path, name, rows):
    """Real qlogs (read in place) added with slices of one, two and 50 rows (with one,
    every connection is spilled after each event; states derived where a connection has
    none) read back as the file read whole."""
    path = shared("real-qlog", *name.split("/"))
    want = statemine.read(path, derive_states=True)
    read = ReadOptions(derive_states=True)
    statemine.store_add([path], tmp_path / "s", {"fleet": "real"}, read, batch_rows=rows)
    _same_set(read_store(tmp_path / "s"), want, {"fleet": "real"})


def _derived_qlog(tmp_path: Path, seed: int, groups: tuple[str, ...], losses: bool = True) -> Path:
    """A generated JSON-SEQ qlog of 1,500 events of ``groups`` (:func:`_qlog_events`),
    without packet_lost events unless ``losses`` (recovery periods from window cuts)."""
    import json

    events = _qlog_events(seed, 1500, groups)
    if not losses:
        events = [e for e in events if e["name"] != "recovery:packet_lost"]
    header = {"qlog_format": "JSON-SEQ", "qlog_version": "0.3", "title": "quic-go", "trace": {}}
    path = tmp_path / f"derived-{seed}.sqlog"
    path.write_text("".join("\x1e" + json.dumps(r) + "\n" for r in [header, *events]))
    return path


@pytest.mark.parametrize("rows", [2, 50])
@pytest.mark.parametrize(
    ("seed", "groups", "losses"),
    [(11, ("p",), True), (12, ("p", "a", "p2", "m"), True), (13, ("p", "p2"), False)],
)
def test_derived_qlog_connections_are_added_in_slices(tmp_path, seed, groups, losses, rows):
    """Connections whose states are derived (RFC 9002 recovery periods from their packets,
    PTO counts, app-limited verdicts) are added slice by slice and read back as the file
    read whole: alone, among a connection with states and one derived from cwnd alone,
    and with periods from window cuts (no packet_lost)."""
    path = _derived_qlog(tmp_path, seed, groups, losses)
    want = statemine.read(path, derive_states=True)
    fields = want.events["fields"].astype(str)
    assert fields.str.contains("derived=rfc9002").any()
    assert {"Recovery (derived)", "ApplicationLimited (derived)", "ProbeTimeout (derived)"} <= set(
        want.events["state"].astype(str)
    )
    store = tmp_path / "s"
    read = ReadOptions(derive_states=True)
    statemine.store_add([path], store, {"fleet": "a"}, read, batch_rows=rows)
    _same_set(read_store(store), want, {"fleet": "a"})
    assert not list(store.glob(".spill-*"))


@pytest.mark.parametrize("group", ["p", "m"])
def test_a_derived_qlog_connection_is_built_in_parts(tmp_path, group):
    """A long connection whose states are derived from its metrics and packets (``p``) or
    from cwnd alone (``m``) comes out in parts of at most ``slice_rows`` events (it was
    read back and built whole, one part), which joined are the whole read's rows; no spill
    file is left behind."""
    from statemine.parse.qlog import read_qlog_parts

    path = _derived_qlog(tmp_path, 12, (group,))
    spill = tmp_path / "spill"
    spill.mkdir()
    parts = list(read_qlog_parts(path, spill, derive_states=True, slice_rows=20))
    sizes = [len(p.events) for p in parts if p.events is not None]
    want = statemine.read(path, derive_states=True)
    assert bool(want.traces["derived"].all()) and want.n_traces == 1
    assert len(sizes) > 5 and max(sizes) <= 20 and sum(sizes) == len(want.events)
    assert sum(p.first for p in parts) == 1 and bool(parts[0].traces["derived"].all())
    events = pd.concat([p.events for p in parts if p.events is not None], ignore_index=True)
    text = {"trace": str, "kind": str, "state": str, "fields": str}
    columns = list(want.events.columns)
    pd.testing.assert_frame_equal(
        events[columns].astype(text), want.events.astype(text), check_dtype=False
    )
    assert not list(spill.iterdir())


# -- bad stores and interrupted appends (issue 17) -----------------------------------------
def _snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` (hidden ones too) with its bytes (None for a folder)."""
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob("*"))
    }


def _cli_error(args: list[str]) -> str:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("statemine: error: "), res.stderr
    assert res.exception is None or isinstance(res.exception, SystemExit)
    return lines[0]


def test_a_missing_labels_or_metrics_file_is_an_error_when_reading(inputs, tmp_path):
    """A data file whose labels file is gone, or whose metrics file is gone although its
    labels file says one was written: store info and every read name the data file (a
    read used to go on without the labels or metrics)."""
    store = tmp_path / "s"
    statemine.store_add([inputs["qlog"]], store, {"impl": "x"})
    (data,) = (store / "impl=x").iterdir()
    (labels,) = (store / "_labels" / "impl=x").iterdir()
    (metrics,) = (store / "_metrics" / "impl=x").iterdir()
    for gone, what in ((metrics, "metrics"), (labels, "labels")):
        saved = gone.read_bytes()
        gone.unlink()
        needle = f"{data}: its {what} file is missing (missing files): {gone}"
        with pytest.raises(InputError) as err:
            read_store(store)
        assert str(err.value) == needle
        out = ["--out", str(tmp_path / "out.parquet")]
        for args in (["store", "info", "--store", str(store)], ["infer", str(store)]):
            assert _cli_error(args) == f"statemine: error: {needle}"
        assert _cli_error(["read", str(store), *out]) == f"statemine: error: {needle}"
        assert not (tmp_path / "out.parquet").exists()
        gone.write_bytes(saved)
    read_store(store)


def test_a_store_without_metrics_needs_no_metrics_file(inputs, tmp_path):
    store = tmp_path / "s"
    statemine.store_add([inputs["log"]], store, {"impl": "x"})
    assert not (store / "_metrics").exists()
    assert read_store(store).n_traces == 3 and statemine.store_info(store).events == 21


def test_a_store_without_partitions_is_named(inputs, tmp_path):
    """A store whose version lists no files (its metadata written, its first add killed
    before it published), and a store whose listed data file is gone."""
    store = tmp_path / "s"
    statemine.store_add([inputs["log"]], store, {"impl": "x"})
    (data,) = (store / "impl=x").glob("part-*")
    data.unlink()
    line = _cli_error(["infer", str(store)])
    assert line == (
        f"statemine: error: {data}: listed by the store's version but missing (missing files)"
    )
    shutil.rmtree(store / "_statemine_log")
    line = _cli_error(["infer", str(store)])
    assert line == f"statemine: error: {store}: the store has no partitions (missing files)"


@pytest.mark.parametrize(
    "table,needle",
    [
        (
            pa.table({"x": [1]}),
            "missing trace, seq, time, kind, state and 8 more; not in the store: x",
        ),
        (None, "time is string, not double"),
    ],
)
def test_mixed_schema_names_the_columns(inputs, tmp_path, table, needle):
    store = tmp_path / "s"
    statemine.store_add([inputs["log"]], store, {"impl": "x"})
    (data,) = (store / "impl=x").iterdir()
    if table is None:
        table = pq.read_table(data)
        table = table.set_column(2, "time", table["time"].cast(pa.string()))
    pq.write_table(table, data)
    for args in (["store", "info", "--store"], ["infer"]):
        line = _cli_error([*args, str(store)])
        assert (
            line
            == f"statemine: error: {data}: schema differs from the store's (mixed schemas): {needle}"
        )


def _fail_on_data_write(monkeypatch, after: int) -> list[int]:
    """Writing a data file's row group (into ``part-*`` or a spilled ``data.parquet``)
    past the first ``after`` raises KeyboardInterrupt, as Ctrl-C would there; returns the
    count of such writes (one element)."""
    calls = [0]
    real = pq.ParquetWriter.write_table

    def write(self, *args, **kwargs):
        name = Path(str(self.where)).name
        if "part-" in name or name == "data.parquet":
            calls[0] += 1
            if calls[0] > after:
                raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", write)
    return calls


@pytest.mark.parametrize("kind", ["statemine", "qlog", "regex"])
@pytest.mark.parametrize("partition", ["x", "new"])
def test_an_interrupted_add_leaves_the_store_unchanged(
    inputs, tmp_path, monkeypatch, kind, partition
):
    """A failure while one input's data file is written (at its second row group for the
    streamed statemine log and qlog, at its only one for the -r input): the store is byte
    for byte as before, to an existing or a new partition (whose empty folders used to
    stay and read as "a partition without data files"), and reads."""
    store = tmp_path / "s"
    statemine.store_add([inputs["log"]], store, {"impl": "x"})
    before = _snapshot(store)
    read = None
    if kind == "statemine":
        log = _log(tmp_path / "c.log", conns=9)
    elif kind == "qlog":
        log = _qlog_connections(tmp_path / "c.sqlog", conns=5, events=30)
    else:
        log = tmp_path / "r.log"
        log.write_text("".join(f"{i} s{i % 3}\n" for i in range(50)))
        read = ReadOptions(fmt="regex", regex=(r"^(?<TIME>)(?<TYPE>)$",))
    after = 0 if kind == "regex" else 1
    calls = _fail_on_data_write(monkeypatch, after)
    with pytest.raises(KeyboardInterrupt):
        statemine.store_add([log], store, {"impl": partition}, read, batch_rows=5)
    monkeypatch.undo()
    assert calls == [after + 1]
    assert _snapshot(store) == before
    assert statemine.store_info(store).events == 21 and read_store(store).n_traces == 3


def test_an_interrupted_first_add_leaves_no_store(tmp_path, monkeypatch):
    """Into a new store: no folder afterwards (or, in a folder that existed, only what
    was there)."""
    log = _log(tmp_path / "c.log", conns=9)
    for existing in (False, True):
        store = tmp_path / f"s{existing}"
        if existing:
            store.mkdir()
            (store / ".keep").write_text("mine")
        _fail_on_data_write(monkeypatch, after=1)
        with pytest.raises(KeyboardInterrupt):
            statemine.store_add([log], store, {"i": "x"}, batch_rows=5)
        monkeypatch.undo()
        if existing:
            assert sorted(p.name for p in store.iterdir()) == [".keep"]
        else:
            assert not store.exists()


def _picoquic_qlog(tmp_path: Path, values: tuple[int, ...], hint: bool) -> Path:
    """A JSON-SEQ qlog of one picoquic connection (no controller named) of 300 numeric
    state changes cycling through ``values``, each followed by a metrics update at its
    time (with ``hint``, a state-1 change's cc_param is that window: newreno's)."""
    import json

    header = {"qlog_format": "JSON-SEQ", "qlog_version": "0.3", "title": "picoquic", "trace": {}}
    events: list[dict] = []
    for k in range(300):
        t, value = float(k), values[k % len(values)]
        cwnd = 10_000 + 37 * k
        param = cwnd if hint and value == 1 else cwnd + 5
        data = {"new": str(value), "cc_param": param}
        events.append({"time": t, "name": "recovery:congestion_state_updated", "data": data})
        events.append({"time": t, "name": "recovery:metrics_updated", "data": {"cwnd": cwnd}})
    path = tmp_path / f"pico-{'-'.join(map(str, values))}-{int(hint)}.sqlog"
    path.write_text("".join("\x1e" + json.dumps(r) + "\n" for r in [header, *events]))
    return path


@pytest.mark.parametrize(
    ("values", "hint", "table"),
    [
        ((0, 1), True, "picoquic-newreno"),
        ((0, 1), False, "picoquic-newreno"),
        ((0, 1, 2), False, "picoquic-cubic"),
        ((0, 4, 2), False, "picoquic-bbr"),
        ((0, 2, 655360), False, "picoquic-bbr"),
    ],
)
def test_a_picoquic_connection_is_built_in_parts(tmp_path, values, hint, table):
    """picoquic's numeric states: the controller table is chosen from the connection's
    summary (distinct state values, the cc_param hint), so a long connection comes out in
    parts of at most ``slice_rows`` rows (it was read back and built whole, one part), with
    the table a whole read chooses; stored in parts of 2 and 50 rows it reads back as the
    file read whole."""
    from statemine.parse.qlog import read_qlog_parts

    path = _picoquic_qlog(tmp_path, values, hint)
    want = statemine.read(path)
    assert list(want.traces["implementation"]) == [table]
    assert ("cc_param equals the window" in want.meta["warnings"]) == hint
    spill = tmp_path / "spill"
    spill.mkdir()
    parts = list(read_qlog_parts(path, spill, slice_rows=20))
    sizes = [len(p.events) for p in parts if p.events is not None]
    assert len(sizes) > 5 and max(sizes) <= 20 and sum(sizes) == len(want.events)
    assert list(parts[0].traces["implementation"]) == [table]
    for rows in (2, 50):
        store = tmp_path / f"s{rows}"
        statemine.store_add([path], store, {"fleet": "p"}, batch_rows=rows)
        _same_set(read_store(store), want, {"fleet": "p"})


# -- versions, migration and vacuum (issue 27) ---------------------------------------------
def _as_format(store: Path, fmt: int) -> None:
    """``store`` (written by this version) as a store of an older format: the same files,
    no versions, its metadata saying ``fmt``."""
    import json

    shutil.rmtree(store / "_statemine_log")
    meta = store / "_statemine_store.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "format": fmt}))


def test_an_older_store_is_refused_until_migrated(inputs, tmp_path):
    """A store of format 3 (files in folders, no versions), with what killed adds of that
    format left (an empty partition folder, a labels file without its data file), is
    refused in one line naming `statemine store migrate` by every reader and by store add,
    which writes nothing; migrated, it reads as before and takes adds; migrating again is
    refused."""
    store = tmp_path / "s"
    statemine.store_add([inputs["log"], inputs["qlog"]], store, {"impl": "x"})
    want = read_store(store)
    _as_format(store, 3)
    (store / "impl=y").mkdir()
    (labels,) = list((store / "_labels" / "impl=x").glob("labels-*"))[:1]
    orphan = labels.with_name("labels-123-1-deadbeef.parquet")
    shutil.copy(labels, orphan)
    before = _snapshot(store)
    needle = (
        f"statemine: error: {store}: a store of format 3, without versions (older statemine): "
        f"run `statemine store migrate --store {store}` once, then use it"
    )
    for args in (
        ["store", "info", "--store", str(store)],
        ["infer", str(store)],
        ["store", "add", str(inputs["log"]), "--store", str(store), "--label", "impl=x"],
        ["store", "vacuum", "--store", str(store), "--grace", "0"],
    ):
        assert _cli_error(args) == needle
    assert _snapshot(store) == before
    res = CliRunner().invoke(main, ["store", "migrate", "--store", str(store)])
    assert res.exit_code == 0, res.output
    assert res.output == f"{store}: format 3 -> 4: version 1 lists 2 data files\n"
    got = read_store(store)
    pd.testing.assert_frame_equal(got.events, want.events)
    pd.testing.assert_frame_equal(got.traces, want.traces)
    assert statemine.store_info(store).version == 1
    out = statemine.store_vacuum(store, grace=0)
    assert set(out.removed) == {orphan, store / "impl=y"} and out.version == 1
    statemine.store_add([inputs["log"]], store, {"impl": "x"})
    assert statemine.store_info(store).events == 2 * 21 + len(want.events) - 21
    line = _cli_error(["store", "migrate", "--store", str(store)])
    assert line == f"statemine: error: {store}: already of store format 4; nothing to migrate"


def test_a_format_1_store_migrates_with_empty_labels(inputs, tmp_path):
    """A format 1 store (data files only, as benchmarks/bench_dask.py synthesizes) gets
    an empty labels file per data file: its traces read with their partition labels."""
    store = tmp_path / "s"
    statemine.store_add([inputs["log"]], store, {"impl": "x"})
    want = read_store(store)
    _as_format(store, 1)
    shutil.rmtree(store / "_labels")
    out = statemine.store_migrate(store)
    assert (out.format, out.version, out.files) == (1, 1, 1)
    got = read_store(store)
    pd.testing.assert_frame_equal(got.events, want.events)
    assert list(got.traces["impl"]) == ["x"] * 3 and "conn" not in got.traces


def test_vacuum_removes_only_old_unpublished_files_of_the_store(inputs, tmp_path):
    """A killed add's files (data, labels, temporary, spill folder, empty partition
    folder) and older version files go once older than the grace; younger ones (a running
    add's) stay, and so does any file statemine does not write."""
    store = tmp_path / "s"
    statemine.store_add([inputs["log"]], store, {"impl": "x"})
    statemine.store_add([inputs["qlog"]], store, {"impl": "x"})
    want = _content_of(store)
    (data,) = [p for p in (store / "impl=x").glob("part-*")][:1]
    left = [
        store / "impl=x" / "part-1-2-0badf00d.parquet",
        store / "_labels" / "impl=x" / "labels-1-2-0badf00d.parquet",
        store / "impl=x" / ".part-1-2-0badf00d.parquet.77-0badf00d.tmp",
        store / ".spill-abc" / "time.bin",
        store / "impl=new" / "part-9-9-0badf00d.parquet",
    ]
    for path in left:
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(data, path)
    mine = [store / "impl=x" / "notes.txt", store / "_labels" / "x.json"]
    for path in mine:
        path.write_text("mine")
    assert _content_of(store) == want  # none of it is read
    kept = statemine.store_vacuum(store)  # all of it younger than a day: a running add's
    assert kept.removed == () and kept.bytes == 0 and kept.version == 2 and kept.files == 2
    old = time.time() - 2 * 3600
    for path in store.rglob("*"):
        os.utime(path, (old, old), follow_symlinks=False)
    res = CliRunner().invoke(main, ["store", "vacuum", "--store", str(store), "--grace", "3600"])
    assert res.exit_code == 0, res.output
    gone = {*left[:3], left[4], store / ".spill-abc", store / "impl=new"}  # a folder whole
    gone.add(store / "_statemine_log" / f"{1:020d}.json")
    size = sum(len(data.read_bytes()) for _ in left)  # and version 1's file
    assert res.output.startswith(f"{store}: removed {len(gone)} files and folders (")
    assert not any(p.exists() for p in [*gone, *left]) and all(
        p.read_text() == "mine" for p in mine
    )
    assert size <= int(res.output.split("(")[1].split(" ")[0])
    assert _content_of(store) == want


def _content_of(store: Path) -> tuple:
    """The store's partitions and its event rows as a reader sees them (comparable)."""
    info = statemine.store_info(store)
    rows = _events(read_store(store)).astype(str).to_numpy()
    return info.partitions, tuple(map(tuple, rows))


@pytest.mark.parametrize(
    "doc, needle",
    [
        ("not json", "not JSON"),
        ('{"version": 7, "files": []}', "not the document of version 1"),
        ('{"version": 1}', "no list of files"),
        (
            '{"version": 1, "files": [{"partition": ["..", "etc"], "id": "a", "rows": 1, '
            '"metrics": false}]}',
            "not a file entry of this store",
        ),
        (
            '{"version": 1, "files": [{"partition": ["impl=x"], "id": "../../x", "rows": 1, '
            '"metrics": false}]}',
            "not a file entry of this store",
        ),
        (
            '{"version": 1, "files": [{"partition": ["impl=x"], "id": "a", "rows": -1, '
            '"metrics": false}]}',
            "not a file entry of this store",
        ),
    ],
)
def test_a_damaged_version_file_is_one_line_naming_it(inputs, tmp_path, doc, needle):
    store = tmp_path / "s"
    statemine.store_add([inputs["log"]], store, {"impl": "x"})
    version = store / "_statemine_log" / f"{1:020d}.json"
    version.write_text(doc)
    for args in (["store", "info", "--store", str(store)], ["infer", str(store)]):
        line = _cli_error(args)
        assert line.startswith(f"statemine: error: {version}: damaged store version: {needle}")


def test_adds_racing_for_a_version_both_publish(inputs, tmp_path, monkeypatch):
    """An add that lost the race for version N (another add published N after it read
    N - 1) publishes N + 1 with both adds' files: nothing lost or listed twice."""
    import statemine.store_log as log

    store = tmp_path / "s"
    statemine.store_add([inputs["log"]], store, {"impl": "x"})
    real = log.latest
    calls = [0]

    def stale_once(root, check):
        calls[0] += 1
        if calls[0] == 1:  # meanwhile another add publishes version 2
            statemine.store_add([inputs["parquet"]], store, {"impl": "y"})
            return _at(root, check, 1)
        return real(root, check)

    def _at(root, check, number):
        path = log.version_path(root, number)
        return log.Version(number, path, log.parse_version(path, path.read_bytes(), number, check))

    monkeypatch.setattr(log, "latest", stale_once)
    out = statemine.store_add([inputs["qlog"]], store, {"impl": "x"})
    monkeypatch.undo()
    assert out.version == 3
    info = statemine.store_info(store)
    parquet_rows = pq.ParquetFile(inputs["parquet"]).metadata.num_rows
    assert [p.files for p in info.partitions] == [2, 1]
    assert info.events == 21 + len(statemine.read(inputs["qlog"]).events) + parquet_rows


def test_store_files_lists_the_published_version_for_other_readers(inputs, tmp_path):
    """`statemine store files` prints the latest version's files; DuckDB given them reads
    that version, not a file an add has not published."""
    duckdb = pytest.importorskip("duckdb", reason="duckdb not installed")
    store = tmp_path / "s"
    statemine.store_add([inputs["log"]], store, {"impl": "x"})
    statemine.store_add([inputs["qlog"]], store, {"impl": "y"})
    (data,) = (store / "impl=x").glob("part-*")
    shutil.copy(data, data.with_name("part-1-2-0badf00d.parquet"))  # not published
    res = CliRunner().invoke(main, ["store", "files", "--store", str(store)])
    assert res.exit_code == 0, res.output
    paths = res.output.split()
    assert paths == [str(p) for p in statemine.store.published_files(store)]
    assert len(paths) == 2 and str(data) == paths[0]
    con = duckdb.connect()
    rows = con.execute(
        "SELECT impl, count(*) FROM read_parquet(?, hive_partitioning = true) GROUP BY impl "
        "ORDER BY impl",
        [paths],
    ).fetchall()
    qlog_rows = len(statemine.read(inputs["qlog"]).events)
    assert rows == [("x", 21), ("y", qlog_rows)]
    for kind, top in (("labels", "_labels"), ("metrics", "_metrics")):
        res = CliRunner().invoke(main, ["store", "files", "--store", str(store), "--kind", kind])
        listed = res.output.split()
        assert listed and all(p.startswith(str(store / top)) for p in listed)
    assert len(listed) == 1  # only the qlog logs metrics


def test_a_store_written_before_the_fields_column_still_reads(tmp_path):
    """Data files of format 4 without ``fields`` (written before it) read with the column
    missing, beside newer files that have it; info, files and reads work, no migration."""
    store = tmp_path / "s"
    old = statemine.store_add([_interleaved_log(tmp_path / "a.log")], store, {"impl": "x"})
    table = pq.read_table(old.files[0])
    assert table.schema.names.index("fields") == 10 and table["fields"].null_count < len(table)
    pq.write_table(table.drop_columns(["fields"]), old.files[0])  # as written before
    statemine.store_add([_log(tmp_path / "b.log")], store, {"impl": "y"})
    new = statemine.store_add([QLOG], store, {"impl": "y"})
    assert statemine.store_info(store).events == len(table) + 21 + len(statemine.read(QLOG).events)
    got = read_store(store, {"impl": "x"})
    want = statemine.read(tmp_path / "a.log")
    assert "fields" not in got.events.columns  # every value missing
    pd.testing.assert_frame_equal(_events(got), _events(want).assign(fields=None))
    both = _events(read_store(store))
    fields = both.loc[both["trace"].str.startswith("a.log"), "fields"]
    assert len(fields) == len(table) and fields.isna().all() and both["fields"].notna().any()
    pd.testing.assert_frame_equal(
        _events(read_store(store, {"impl": "y"})),
        _events(statemine.read([tmp_path / "b.log", QLOG])),
    )
    old_names = pq.read_schema(old.files[0]).names
    assert pq.read_schema(new.files[0]).names == [*old_names[:10], "fields", *old_names[10:]]
