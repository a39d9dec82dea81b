"""Statistics of a trace store on Dask: equal to the single-machine results byte for byte
(generated stores and the shipped traces), partition pruning, progress, a killed worker,
bad input. A local cluster of 2 worker processes serves the module."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from test_stream import random_log

import statemine
from statemine.cli import main
from statemine.commands import infer_to_dir, selection_pairs
from statemine.compare import diff_stats
from statemine.distributed import run as dist_run
from statemine.distributed import storestats
from statemine.distributed.cluster import dask_client, parse_dask_spec
from statemine.distributed.run import fetch_trace, store_sides
from statemine.errors import InputError, StatemineError, UsageError
from statemine.output.out_files import diff_files
from statemine.output.provenance import PROVENANCE_FILE
from statemine.stats.options import CompareOptions, StatsOptions
from statemine.stats.tables import tables
from statemine.store import read_store, store_files

REPO = Path(__file__).resolve().parent.parent
INFER_FILES = ("states.csv", "transitions.csv", "model.dot", "model.json")


def make_store(
    root: Path, seed: int, layout: dict[str, int], lines: tuple[int, int] = (20, 400)
) -> Path:
    """A store partitioned by ``env`` (and ``day``): per ``ENV/DAY`` label, that many log
    files of random sizes; one input added twice (its trace ids repeat)."""
    rng = np.random.default_rng(seed)
    logs = root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    store = root / "store"
    first = None
    for part, n_files in layout.items():
        env, day = part.split("/")
        for i in range(n_files):
            log = logs / f"{env}-{day}-{i}.log"
            log.write_text(random_log(rng, int(rng.integers(*lines)), int(rng.integers(1, 9))))
            statemine.store_add([log], store, {"env": env, "day": day})
            first = first or (log, {"env": env, "day": day})
    assert first is not None
    statemine.store_add([first[0]], store, first[1])
    return store


@pytest.fixture(scope="module")
def client():
    with dask_client("local:2") as c:
        yield c


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    layout = {"lab/d1": 3, "lab/d2": 2, "mobile/d1": 4, "wired/d3": 1}
    return make_store(tmp_path_factory.mktemp("gen"), 7, layout)


def _without_why(text: str) -> str:
    """A report page without its Why section's text: it needs the events, so on Dask
    workers it is by design one sentence saying so (statemine explain runs on events)."""
    import re

    return re.sub(r"<h2>Why</h2>.*?(?=<h2>)", "<h2>Why</h2>", text, flags=re.DOTALL)


def _without_provenance(page: Path, *selected: str) -> str:
    """A report page without its provenance block (the inputs' paths and digests, the
    date), the Why section's text, and the Inputs table's ``selected`` cells (as given)."""
    text = page.read_text()
    assert "<h2>Provenance</h2>" in text
    for cell in selected:
        assert f"<td>{cell}</td>" in text
        text = text.replace(f"<td>{cell}</td>", "<td>(selected)</td>")
    return _without_why(text.split("<h2>Provenance</h2>")[0])


def _same_page(a: Path, b: Path) -> bool:
    """Whether two report pages of the same command on the same inputs are the same, but
    for the provenance's date (and version): tests/golden.py's normalizer, and the Why
    section's text."""
    from golden import normalize_provenance

    pages = [_without_why(normalize_provenance(p.read_text())) for p in (a, b)]
    return pages[0] == pages[1]


def _same_files(a: Path, b: Path, names=INFER_FILES) -> None:
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


@pytest.mark.parametrize(
    "options",
    [
        {},
        pytest.param({"stats": StatsOptions(collapse_repeats=True)}, marks=pytest.mark.slow),
        pytest.param(
            {"stats": StatsOptions(end="last-state", n_boot=300, seed=3)}, marks=pytest.mark.slow
        ),
        pytest.param({"selections": ["env=mobile"]}, marks=pytest.mark.slow),
        {"selections": ["env=lab", "day=d2"], "stats": StatsOptions(confidence=0.9)},
    ],
)
def test_dask_infer_equals_single_machine_byte_for_byte(client, generated, tmp_path, options):
    single = infer_to_dir(generated, tmp_path / "single", svg=False, **options)
    dask = infer_to_dir(generated, tmp_path / "dask", svg=False, client=client, **options)
    _same_files(tmp_path / "single", tmp_path / "dask")
    assert (dask.n_traces, dask.n_events) == (single.n_traces, single.n_events)
    # against a count made another way: the rows of the kept files, read with pyarrow
    where = dict(s.split("=") for s in options.get("selections", []))
    rows = sum(f.rows for f in store_files(generated, where))
    assert dask.n_events == rows and dask.n_traces > 0


def test_the_store_s_tables_equal_those_of_its_logs(generated):
    """Reading the store whole is the single-machine reference: it must agree with
    reading the logs the store was made from."""
    logs = sorted((generated.parent / "logs").glob("mobile-*.log"))
    from_store = statemine.summarize(read_store(generated, {"env": "mobile"}), n_boot=100)
    from_logs = statemine.summarize(statemine.read(logs), n_boot=100)
    for a, b in zip(from_store, from_logs):
        assert a.equals(b)


@pytest.mark.parametrize("rows", [1, 7, 64])
def test_traces_crossing_read_blocks_fold_as_whole(generated, monkeypatch, rows):
    """Blocks of a few rows (traces span many): the map's carry keeps whole traces."""
    monkeypatch.setattr(storestats, "BLOCK_ROWS", rows)
    opts = StatsOptions(collapse_repeats=True, n_boot=50)
    got = tables(dist_run.store_summary(generated, None, opts, n_tasks=5), opts)
    want = statemine.summarize(read_store(generated), opts)
    for g, w in zip(got, want):
        assert g.equals(w)


def test_dwell_sketch_is_merged_exactly(generated):
    """Past the dwell budget every task's times go to the sketch; equal to one fold's."""
    opts = StatsOptions(dwell_budget=200, n_boot=0)
    want = statemine.summarize(read_store(generated), opts)[0]
    got = tables(dist_run.store_summary(generated, None, opts, n_tasks=7), opts)[0]
    assert got.attrs["dwell_quantiles"] != "exact" and got.equals(want)


@pytest.mark.slow
@pytest.mark.parametrize("folder", ["mobile", "quiche-bbr", "tcp-jitter"])
def test_shipped_traces_on_dask_equal_the_folder_s_tables(client, tmp_path, folder):
    store = tmp_path / "store"
    statemine.store_add([REPO / "traces" / folder], store, {"set": folder})
    statemine.store_add([REPO / "traces" / "aioquic-versions"], store, {"set": "other"})
    infer_to_dir(REPO / "traces" / folder, tmp_path / "folder", svg=False)
    infer_to_dir(store, tmp_path / "single", svg=False, selections=[f"set={folder}"])
    infer_to_dir(store, tmp_path / "dask", svg=False, selections=[f"set={folder}"], client=client)
    _same_files(tmp_path / "folder", tmp_path / "dask")
    _same_files(tmp_path / "single", tmp_path / "dask")


def _diff_bytes(result) -> dict:
    return diff_files(result, svg=False, title=None)


@pytest.mark.parametrize(
    "sides, options",
    [
        ((["env=lab"], ["env=mobile"]), CompareOptions(n_perm=199, n_boot=99)),
        ((["env=lab", "day=d1"], []), CompareOptions(n_perm=99, n_boot=50, strata=("day",))),
        ((["env=mobile"], ["env=wired"]), CompareOptions(n_perm=99, n_boot=0, end="last-state")),
    ],
)
def test_store_sides_diff_equals_the_whole_trace_sets_diff(generated, monkeypatch, sides, options):
    """The per-trace statistics and traces frames of both sides (mapped here in several
    tasks, as on workers) give the diff of the trace sets read whole, file for file."""
    want = statemine.diff(
        read_store(generated, selection_pairs(sides[0])),
        read_store(generated, selection_pairs(sides[1])),
        options,
        label_a="a",
        label_b="b",
    )
    monkeypatch.setattr("statemine.store.read_store", _no_events)
    monkeypatch.setattr("statemine.store.file_frames", _no_events)
    got_a, got_b = store_sides(
        [(generated, selection_pairs(s)) for s in sides], options, n_tasks=3, task_rows=500
    )
    got = diff_stats(got_a[:2], got_b[:2], options, label_a="a", label_b="b")
    assert _diff_bytes(got) == _diff_bytes(want)
    assert got.notes == want.notes and got.n_traces_a == want.n_traces_a


def _no_events(*args, **kwargs):
    raise AssertionError("the events were read")


def test_store_sides_traces_frame_is_read_store_s(generated):
    """Ids (a repeated input's ``#2``), sources, ends and labels, in the same order."""
    partial, traces, _, _ = store_sides([(generated, None)], StatsOptions(), n_tasks=4)[0]
    want = read_store(generated).traces
    assert partial.n_traces == len(traces) == len(want)
    assert list(traces.columns) == [c for c in want.columns if c in traces.columns]
    assert {"trace", "source", "end", "role", "env", "day"} <= set(traces.columns)
    assert traces["trace"].str.contains("#2").any()
    for column in traces.columns:
        pd.testing.assert_series_equal(
            traces[column].astype(str), want[column].astype(str), check_names=False
        )


@pytest.mark.slow
def test_shipped_traces_diff_and_report_on_dask_equal_the_folders(client, tmp_path):
    """tcp-jitter vs quic-rt-jitter (kernel TCP vs QUIC: the vocabulary note, the
    implementation labels): from a store on 2 workers, the files of the folders' diff and
    their report."""
    from statemine.commands import DIFF_OUTPUTS, diff_to_dir, report_to_file

    store = tmp_path / "store"
    for folder in ("tcp-jitter", "quic-rt-jitter"):
        statemine.store_add([REPO / "traces" / folder], store, {"set": folder})
    opts = dict(label_a="tcp", label_b="quic", compare=CompareOptions(n_perm=499, n_boot=199))
    folders = [str(REPO / "traces" / f) for f in ("tcp-jitter", "quic-rt-jitter")]
    diff_to_dir(*folders, tmp_path / "folders", svg=False, **opts)
    diff_to_dir(
        str(store),
        str(store),
        tmp_path / "dask",
        svg=False,
        select_a=["set=tcp-jitter"],
        select_b=["set=quic-rt-jitter"],
        client=client,
        **opts,
    )
    names = [n for n in DIFF_OUTPUTS if n not in ("diff.svg", PROVENANCE_FILE)]
    _same_files(tmp_path / "folders", tmp_path / "dask", names)
    assert "kernel TCP" in (tmp_path / "dask" / "notes.txt").read_text()
    report = dict(opts, compare=CompareOptions(n_perm=99, n_boot=50))
    report_to_file(*folders, tmp_path / "folders.html", **report)
    report_to_file(
        str(store),
        str(store),
        tmp_path / "dask.html",
        select_a=["set=tcp-jitter"],
        select_b=["set=quic-rt-jitter"],
        client=client,
        **report,
    )
    # the inputs differ (folders; a store and selections): the pages but for them
    html = _without_provenance(tmp_path / "dask.html", "set=tcp-jitter", "set=quic-rt-jitter")
    assert html == _without_provenance(tmp_path / "folders.html", "all traces")
    assert "cwnd timeline of" in html


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["as configured", "sparse"])
def test_dask_diff_and_report_equal_single_machine(
    client, generated, tmp_path, monkeypatch, layout
):
    """Byte for byte, in the dense layout and (``DENSE_CELLS`` 0 on the driver, where the
    tests run) in the sparse one: one statistics core for both paths."""
    from statemine.commands import DIFF_OUTPUTS, diff_to_dir, report_to_file

    if layout == "sparse":
        monkeypatch.setattr("statemine.compare.DENSE_CELLS", 0)

    opts = dict(
        select_a=["env=lab"], select_b=["env=mobile"], compare=CompareOptions(n_perm=199, n_boot=99)
    )
    diff_to_dir(str(generated), str(generated), tmp_path / "single", svg=False, **opts)
    with monkeypatch.context() as m:  # the driver reads no events: only the workers do
        m.setattr("statemine.store.read_store", _no_events)
        m.setattr("statemine.store.file_frames", _no_events)
        diff_to_dir(
            str(generated), str(generated), tmp_path / "dask", svg=False, client=client, **opts
        )
    _same_files(
        tmp_path / "single",
        tmp_path / "dask",
        [n for n in DIFF_OUTPUTS if n not in ("diff.svg", PROVENANCE_FILE)],
    )
    report_to_file(str(generated), None, tmp_path / "a.html", select_a=["env=lab"])
    with monkeypatch.context() as m:
        m.setattr("statemine.store.read_store", _no_events)
        report_to_file(
            str(generated), None, tmp_path / "b.html", select_a=["env=lab"], client=client
        )
    assert _same_page(tmp_path / "a.html", tmp_path / "b.html")
    # two sides, timelines per stratum: one trace fetched per group
    two = dict(opts, compare=CompareOptions(n_perm=99, n_boot=50, strata=("day",)))
    report_to_file(str(generated), str(generated), tmp_path / "c.html", **two)
    with monkeypatch.context() as m:
        m.setattr("statemine.store.read_store", _no_events)
        report_to_file(str(generated), str(generated), tmp_path / "d.html", client=client, **two)
    html = (tmp_path / "d.html").read_text()
    assert _same_page(tmp_path / "c.html", tmp_path / "d.html")
    assert html.count("cwnd timeline of") == 3


def test_fetch_trace_is_the_trace_of_read_store(generated):
    """The one trace a report draws, read alone from its file: as read_store gives it
    (also a repeated input's ``#2`` id)."""
    from statemine.output.timeline import _one

    (side,) = store_sides([(generated, None)], StatsOptions(), facts=True, n_tasks=3)
    whole = read_store(generated)
    ids = side.traces["trace"].astype(str)
    assert (side.facts["stored"] != ids).any()
    for trace in [ids.iloc[0], ids[ids.str.contains("#2")].iloc[0], ids.iloc[-1]]:
        got, want = fetch_trace(side, trace), _one(whole, trace)
        for g, w in ((got.events, want.events), (got.traces, want.traces)):
            pd.testing.assert_frame_equal(
                g.astype(str).reset_index(drop=True), w.astype(str).reset_index(drop=True)
            )
    facts = side.facts
    ev = whole.events
    assert facts["state_lines"].sum() == (ev["kind"] == "state").sum()
    assert facts["event_lines"].sum() == (ev["kind"] == "event").sum()
    assert facts["cwnd_lines"].sum() == ev["cwnd"].notna().sum() > 0
    span = ev.groupby("trace", observed=True)["time"].agg(lambda t: t.max() - t.min())
    span = span.reindex(whole.traces["trace"].astype(str)).to_numpy()
    assert np.array_equal((facts["last_s"] - facts["first_s"]).to_numpy(), span)


def test_selection_prunes_partitions_before_any_file_is_opened(generated, tmp_path):
    # on a copy: the module's store is shared by the other tests (damaging it in place and
    # adding the file back left the removed file's labels file behind)
    store = _broken_copy(generated, tmp_path)
    kept = store_files(store, {"env": "mobile"})
    assert {f.labels["env"] for f in kept} == {"mobile"} and len(kept) == 4
    # a damaged file in another partition is never opened when pruned away
    bad = next((store / "env=wired" / "day=d3").glob("*.parquet"))
    bad.write_bytes(b"PAR1 not parquet")
    assert len(store_files(store, {"env": "mobile"})) == 4
    with pytest.raises(InputError, match="not a readable Parquet file"):
        store_files(store)


@pytest.mark.slow
def test_selection_errors_match_the_single_machine_ones(client, generated):
    for select, message in ((["role=server"], "no label 'role'"), (["env=none"], "no trace")):
        for c in (None, client):
            with pytest.raises(UsageError, match=message):
                infer_to_dir(generated, None, selections=select, client=c)


@pytest.mark.slow
def test_dask_needs_a_store_input(client):
    with pytest.raises(UsageError, match="trace store"):
        infer_to_dir(REPO / "traces" / "mobile", None, client=client)


@pytest.mark.parametrize("command", ["infer", "diff", "report"])
def test_cli_rejects_a_non_store_before_a_cluster_starts(generated, tmp_path, monkeypatch, command):
    def no_cluster(*args, **kwargs):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr("statemine.distributed.cluster.dask_client", no_cluster)
    folder = str(REPO / "traces" / "mobile")
    args = {
        "infer": ["infer", folder, "--no-svg"],
        "diff": ["diff", str(generated), folder, "--out", str(tmp_path / "d")],
        "report": ["report", folder, "--out", str(tmp_path / "r.html")],
    }[command]
    res = CliRunner().invoke(main, [*args, "--dask", "local:2"])
    assert res.exit_code == 2, res.output
    assert "--dask runs on a trace store" in res.stderr and "Traceback" not in res.output
    assert len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "d").exists() and not (tmp_path / "r.html").exists()


_HALVES = ["--select-a", "env=lab", "--select-b", "env=mobile"]


@pytest.mark.parametrize(
    ("command", "extra", "message"),
    [
        ("diff", ["--label-a", "x", "--label-b", "x"], "both sides are labelled 'x'"),
        ("diff", ["--strata", "nosuch"], "--strata 'nosuch': the traces of"),
        ("diff", ["--strata", " "], "--strata: a trace label name is empty"),
        ("diff", ["--select-a", "envlab"], "a selection is LABEL=VALUE, not 'envlab'"),
        ("diff", ["--out-file"], "exists and is not a folder"),
        ("report", ["--label-a", "x", "--label-b", "x"], "both sides are labelled 'x'"),
        ("report", ["--strata", "nosuch"], "--strata 'nosuch': the traces of"),
        ("report", ["--results", "results.csv"], "--results needs --by COLUMN"),
        ("report", ["--results", "missing.csv", "--by", "p"], "--results missing.csv: no such"),
        ("report", ["--out-folder"], "is a folder, not a file"),
        ("report", ["--out-under-file"], "exists and is not a folder"),
    ],
)
def test_cli_rejects_bad_options_before_a_cluster_starts(
    generated, tmp_path, monkeypatch, command, extra, message
):
    """Every diff/report option that needs no trace is checked before ``--dask`` starts a
    cluster (and before any worker runs): exit 2, one line, nothing written."""

    def no_cluster(*args, **kwargs):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr("statemine.distributed.cluster.dask_client", no_cluster)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results.csv").write_text("p,plt_s\na,1\n")
    (tmp_path / "afile").write_text("")
    out = {
        "--out-file": "afile",
        "--out-folder": str(tmp_path),
        "--out-under-file": "afile/r.html",
    }.get(extra[0], "out.html" if command == "report" else "out")
    extra = [] if extra[0] in ("--out-file", "--out-folder", "--out-under-file") else extra
    store = str(generated)
    args = [command, store, store, "--out", out, *_HALVES, *extra, "--dask", "local:2"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], res.stderr
    assert "Traceback" not in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "results.csv"]


def test_each_command_checks_its_options_once(generated, tmp_path, monkeypatch):
    """diff and report check a store's ``--strata`` labels once per side (its labels files'
    key columns read once), and the library calls still check on their own: a bad option
    is refused before ``connect`` would start a cluster."""
    from statemine import store as store_module
    from statemine.commands import diff_to_dir, report_to_file

    reads: list[str] = []
    label_names = store_module.label_names
    monkeypatch.setattr(store_module, "label_names", lambda s: reads.append(s) or label_names(s))
    store = str(generated)
    for command, out, sides in (("diff", "d", [store, store]), ("report", "r.html", [store])):
        reads.clear()
        args = [command, *sides, "--out", str(tmp_path / out), "--strata", "env"]
        res = CliRunner().invoke(main, [*args, "--permutations", "99", "--bootstrap", "0"])
        assert res.exit_code == 0, res.output
        assert list(map(str, reads)) == [store] * len(sides), command

    def no_cluster():
        raise AssertionError("a cluster was started")

    bad = CompareOptions(strata=("nosuch",))
    with pytest.raises(UsageError, match="--strata 'nosuch'"):
        diff_to_dir(store, store, tmp_path / "x", compare=bad, connect=no_cluster)
    with pytest.raises(UsageError, match="--strata 'nosuch'"):
        report_to_file(store, None, tmp_path / "x.html", compare=bad, connect=no_cluster)
    assert not (tmp_path / "x").exists() and not (tmp_path / "x.html").exists()


def test_the_option_checks_accept_what_runs(generated, tmp_path):
    """The checks refuse nothing that runs: a store's partition key and a stored trace
    label stratify, and the output's missing parent folders are made."""
    from statemine.commands import check_diff, check_report

    store = str(generated)
    for strata in (("env",), ("role",), ("day", "conn")):
        opts = CompareOptions(strata=strata)
        assert check_diff(store, store, tmp_path / "d", compare=opts) == ("store (A)", "store (B)")
        check_report(store, None, tmp_path / "new" / "r.html", compare=opts)


BAD_SPECS = [
    "local:0",
    "local:-1",
    "local:abc",
    "local:",
    "local:2x",
    "local:257",
    "tcp://host",
    "tcp://127.0.0.1:0",
    "tcp://127.0.0.1:65536",
    "tcp://127.0.0.1:99999",
    "http://a:1",
    "",
]


@pytest.mark.parametrize("spec", BAD_SPECS)
def test_bad_dask_spec_is_a_usage_error(spec):
    with pytest.raises(UsageError, match="local:N"):
        parse_dask_spec(spec)


@pytest.mark.parametrize("spec", ["local:0", "local:-1", "local:abc", "tcp://127.0.0.1:99999"])
def test_cli_bad_dask_spec_is_one_line_exit_2_before_anything_starts(generated, tmp_path, spec):
    out = tmp_path / "t"
    result = CliRunner().invoke(main, ["infer", str(generated), "--out", str(out), "--dask", spec])
    assert result.exit_code == 2 and "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert lines == [
        f"statemine: error: --dask {spec!r}: give local:N (N workers on this machine, 1 to "
        "256) or tcp://HOST:PORT (a running Dask scheduler; PORT 1 to 65535)"
    ]
    assert not out.exists()


def test_unreachable_scheduler_is_one_clear_error():
    port = _free_port()
    start = time.monotonic()
    message = f"tcp://127.0.0.1:{port}: cannot reach"
    with (
        pytest.raises(StatemineError, match=message),
        dask_client(f"tcp://127.0.0.1:{port}", timeout=1),
    ):
        pass
    assert time.monotonic() - start < 30


@pytest.mark.slow
def test_cli_unreachable_scheduler_exit_2_one_line(generated):
    result = CliRunner().invoke(
        main, ["infer", str(generated), "--dask", f"tcp://127.0.0.1:{_free_port()}"]
    )
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the Dask scheduler" in lines[0]
    assert "Traceback" not in result.output


def _free_port() -> int:
    import socket

    with socket.socket() as s:  # bound, then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _broken_copy(generated: Path, tmp_path: Path) -> Path:
    store = tmp_path / "store"
    shutil.copytree(generated, store)
    return store


@pytest.mark.slow
@pytest.mark.parametrize(
    "damage", ["mixed schema", "missing files", "missing labels", "rows apart", "seq gap"]
)
def test_bad_stores_are_clear_errors_on_both_paths(client, generated, tmp_path, damage):
    import pyarrow.parquet as pq

    store = _broken_copy(generated, tmp_path)
    part = store / "env=mobile" / "day=d1"
    victim = sorted(part.glob("*.parquet"))[1]
    table = pq.read_table(victim)
    if damage == "mixed schema":
        pq.write_table(table.drop_columns(["srtt"]), victim)
        where = victim
    elif damage == "missing files":  # the published version lists them: named one by one
        removed = sorted((store / "env=wired" / "day=d3").glob("*.parquet"))
        for f in removed:
            f.unlink()
        where = removed[0]
    elif damage == "missing labels":
        (store / "_labels" / "env=mobile" / "day=d1" / f"labels-{victim.name[5:]}").unlink()
        where = victim
    else:
        order = np.arange(table.num_rows)
        if damage == "rows apart":
            order = np.r_[order[1:], order[:1]]  # the first trace's first row moves last
        else:
            order = np.r_[order[:1], order[2:]]  # a row of the first trace goes missing
        pq.write_table(table.take(order), victim, row_group_size=1 << 20)
        where = victim
    messages = []
    for c in (None, client):
        with pytest.raises(InputError) as err:
            infer_to_dir(store, None, client=c)
        assert err.value.file == str(where)
        messages.append(str(err.value))
    assert messages[0] == messages[1]
    result = CliRunner().invoke(main, ["infer", str(store), "--dask", "local:1"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("statemine: dask: 1 worker")
    assert lines[1].startswith(f"statemine: error: {where}")


@pytest.mark.slow
def test_too_many_states_names_the_same_line_on_both_paths(client, generated):
    errors = []
    for c in (None, client):
        with pytest.raises(InputError) as err:
            infer_to_dir(generated, None, stats=StatsOptions(max_states=2), client=c)
        errors.append((err.value.file, err.value.line, err.value.reason))
    assert errors[0] == errors[1] and errors[0][1] is not None


@pytest.mark.slow
def test_cli_prints_the_dashboard_and_writes_the_files(generated, tmp_path):
    args = ["infer", str(generated), "--no-svg", "--select", "env=lab"]
    single = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "a")])
    dask = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "b"), "--dask", "local:2"])
    assert single.exit_code == dask.exit_code == 0, dask.output
    assert "dask: 2 workers, dashboard http://127.0.0.1:" in dask.stderr
    assert dask.stdout == single.stdout
    _same_files(tmp_path / "a", tmp_path / "b")


@pytest.mark.slow
def test_a_worker_killed_mid_run_is_retried_with_the_same_result(tmp_path):
    """Dask reruns the killed worker's task elsewhere; the tables do not change. The kill
    happens while that worker is running a map task (checked)."""
    store = make_store(tmp_path, 11, {f"e{i}/d": 2 for i in range(6)}, lines=(4000, 8000))
    want = infer_to_dir(store, tmp_path / "single", svg=False)
    with dask_client("local:2") as c:
        pids = c.run(os.getpid)
        killed: list[str] = []

        def killer() -> None:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not killed:
                busy = [w for w, tasks in c.processing().items() if tasks]
                if busy:
                    os.kill(pids[busy[0]], signal.SIGKILL)
                    killed.append(busy[0])
                time.sleep(0.005)

        thread = threading.Thread(target=killer)
        thread.start()
        got = infer_to_dir(store, tmp_path / "dask", svg=False, client=c)
        thread.join()
    assert killed, "no worker was killed while running a task"
    assert got.n_events == want.n_events
    _same_files(tmp_path / "single", tmp_path / "dask")


@pytest.mark.slow
def test_progress_bar_on_a_terminal_only(client, monkeypatch):
    import io
    import sys

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for tty, shown in ((Terminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr(sys, "stderr", tty)
        mapper = dist_run.dask_mapper(client, progress=True)
        assert mapper(abs, [-1, -2, 3, -4]) == [1, 2, 3, 4]  # results in the items' order
        assert ("tasks" in tty.getvalue() and "4/4" in tty.getvalue()) is shown
