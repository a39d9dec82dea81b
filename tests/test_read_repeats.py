"""The same trace met twice among a read's inputs (statemine/parse/repeats.py, issue 25
item 3): one lab run shipped in two folders is read once with a note naming both; two
different runs under one id, or one trace id in two files, are refused in one line naming
both files (exit 2, no traceback)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import statemine
from statemine.cli import main
from statemine.commands import reader_warnings
from statemine.errors import InputError
from statemine.parse import read
from statemine.stats.summary import state_stats
from statemine.store import read_store

TRACES = Path(__file__).resolve().parents[1] / "traces"
#: A quic-go run shipped both in quic-go-versions/ and quiche-jitter/.
SHARED = "quic-go-v0.63.0-s1-0fa2ac5ace3f"
#: Runs of quic-go-versions/ only.
OWN = ("quic-go-v0.63.0-s1-84e762021345", "quic-go-v0.63.0-s10-53d6848361e0")


def lab_folder(dest: Path, runs: list[tuple[str, str]]) -> Path:
    """A minimal ``statemine lab run`` output folder at ``dest`` holding copies of shipped
    runs: (shipped folder, run id) each."""
    (dest / "runs").mkdir(parents=True)
    (dest / "manifest.json").write_text(json.dumps({"runs": {r: {} for _, r in runs}}))
    for folder, run_id in runs:
        shutil.copytree(TRACES / folder / "runs" / run_id, dest / "runs" / run_id)
    return dest


def test_shipped_folders_share_that_run():
    """The premise: the run is in both shipped folders, with one log and differing files."""
    a, b = (TRACES / f / "runs" / SHARED for f in ("quic-go-versions", "quiche-jitter"))
    assert (a / "run.log.gz").read_bytes() == (b / "run.log.gz").read_bytes()
    assert (a / "traces.parquet").read_bytes() != (b / "traces.parquet").read_bytes()


def test_a_run_in_two_folders_is_read_once_with_a_note(tmp_path):
    a = lab_folder(tmp_path / "a", [("quic-go-versions", SHARED), ("quic-go-versions", OWN[0])])
    b = lab_folder(tmp_path / "b", [("quiche-jitter", SHARED), ("quic-go-versions", OWN[1])])
    ts = read([a, b])
    runs = sorted(set(ts.traces["run_id"]))
    assert runs == sorted([SHARED, *OWN])
    # another way: the three run folders' own trace sets, each read alone
    alone = [
        statemine.load(TRACES / "quic-go-versions" / "runs" / r / "traces.parquet")
        for r in (SHARED, *OWN)
    ]
    assert ts.n_traces == sum(s.n_traces for s in alone)
    assert len(ts.events) == sum(len(s.events) for s in alone)
    expected = state_stats(statemine.traces.concat(alone), n_boot=0).set_index("state")
    got = state_stats(ts, n_boot=0).set_index("state")
    assert got["time_s"].to_dict() == pytest.approx(expected["time_s"].to_dict(), rel=1e-12)
    notes = reader_warnings(ts)
    assert notes == [
        f"1 run of {b} also in {a} (same run id, same log; e.g. {SHARED}): read once, from {a}"
    ]


def test_the_cli_reads_the_shipped_pair_and_says_so(tmp_path):
    a = lab_folder(tmp_path / "a", [("quic-go-versions", SHARED)])
    b = lab_folder(tmp_path / "b", [("quiche-jitter", SHARED)])
    res = CliRunner().invoke(main, ["infer", str(a), str(b), "--bootstrap", "0"])
    assert res.exit_code == 0, res.output
    assert f"1 run of {b} also in {a}" in res.stderr
    assert "(2 traces," in res.stdout  # one client and one server trace, once


def test_two_different_runs_under_one_id_are_refused(tmp_path):
    a = lab_folder(tmp_path / "a", [("quic-go-versions", SHARED)])
    b = lab_folder(tmp_path / "b", [("quiche-jitter", SHARED)])
    log = b / "runs" / SHARED / "run.log.gz"
    text = gzip.decompress(log.read_bytes()).replace(b"STATEMINE t=", b"STATEMINE  t=", 1)
    log.write_bytes(gzip.compress(text))
    with pytest.raises(InputError) as err:
        read([a, b])
    assert str(b / "runs" / SHARED / "traces.parquet") in str(err.value)
    assert str(a / "runs" / SHARED / "traces.parquet") in str(err.value)
    res = CliRunner().invoke(main, ["infer", str(a), str(b)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert res.stderr.count("\n") == 1 and "two different runs under one id" in res.stderr


def test_the_same_gzip_log_compressed_differently_is_the_same_run(tmp_path):
    """The content compared is the decompressed log, not its gzip bytes."""
    a = lab_folder(tmp_path / "a", [("quic-go-versions", SHARED)])
    b = lab_folder(tmp_path / "b", [("quiche-jitter", SHARED)])
    log = b / "runs" / SHARED / "run.log.gz"
    log.write_bytes(gzip.compress(gzip.decompress(log.read_bytes()), compresslevel=1, mtime=7))
    assert read([a, b]).n_traces == 2


def test_one_trace_id_in_two_files_is_refused_naming_both(tmp_path):
    src = TRACES / "quic-go-versions" / "runs" / OWN[0] / "traces.parquet"
    (tmp_path / "copy").mkdir()
    shutil.copy(src, tmp_path / "one.parquet")
    shutil.copy(src, tmp_path / "copy" / "two.parquet")
    with pytest.raises(InputError) as err:
        read([tmp_path / "one.parquet", tmp_path / "copy" / "two.parquet"])
    message = str(err.value)
    assert message.startswith(str(tmp_path / "copy" / "two.parquet") + ": trace ")
    assert f"is also in {tmp_path / 'one.parquet'}" in message
    res = CliRunner().invoke(main, ["read", str(tmp_path), "--out", str(tmp_path / "out.parquet")])
    assert res.exit_code == 2 and res.stderr.count("\n") == 1, res.output
    assert "Traceback" not in res.output and not (tmp_path / "out.parquet").exists()


def test_store_add_stores_a_run_in_two_folders_once_with_the_same_note(tmp_path):
    a = lab_folder(tmp_path / "a", [("quic-go-versions", SHARED), ("quic-go-versions", OWN[0])])
    b = lab_folder(tmp_path / "b", [("quiche-jitter", SHARED), ("quic-go-versions", OWN[1])])
    ts = read([a, b])
    out = statemine.store_add([a, b], tmp_path / "s", {"env": "lab"})
    assert list(out.notes) == reader_warnings(ts)
    assert len(out.files) == 3 and (out.traces, out.events) == (ts.n_traces, len(ts.events))
    stored = read_store(tmp_path / "s")
    assert sorted(stored.traces["trace"]) == sorted(ts.traces["trace"])  # no "#2" copies
    assert sorted(set(stored.traces["run_id"])) == sorted([SHARED, *OWN])
    res = CliRunner().invoke(main, ["store", "add", str(a), str(b), "--store", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    assert res.stderr == f"statemine: warning: {reader_warnings(ts)[0]}\n"
    assert f"added {len(ts.events)} events of {ts.n_traces} traces in 3 files" in res.stdout


def test_store_add_refuses_two_different_runs_under_one_id(tmp_path):
    a = lab_folder(tmp_path / "a", [("quic-go-versions", SHARED)])
    b = lab_folder(tmp_path / "b", [("quiche-jitter", SHARED)])
    log = b / "runs" / SHARED / "run.log.gz"
    text = gzip.decompress(log.read_bytes()).replace(b"STATEMINE t=", b"STATEMINE  t=", 1)
    log.write_bytes(gzip.compress(text))
    store = tmp_path / "s"
    statemine.store_add([a], store, {"env": "lab"})
    before = sorted((p, p.read_bytes() if p.is_file() else None) for p in store.rglob("*"))
    args = ["store", "add", str(a), str(b), "--label", "env=lab", "--store"]
    res = CliRunner().invoke(main, [*args, str(store)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert res.stderr.count("\n") == 1 and "two different runs under one id" in res.stderr
    for f in (a, b):
        assert str(f / "runs" / SHARED / "traces.parquet") in res.stderr
    assert sorted((p, p.read_bytes() if p.is_file() else None) for p in store.rglob("*")) == before
    res = CliRunner().invoke(main, [*args, str(tmp_path / "n")])
    assert res.exit_code == 2 and not (tmp_path / "n").exists()


def test_run_ids_are_found_in_path_strings_as_pathlib_splits_them():
    """run_id_of splits a plain path string itself; every spelling Path would split
    otherwise (``.``, ``..``, doubled slashes, hidden names) gives Path's answer."""
    import itertools
    import os

    from statemine.parse.repeats import RUN_TRACES, run_id_of

    def by_pathlib(text: str) -> str | None:
        path = Path(text)
        if not os.fspath(text).endswith(RUN_TRACES) or path.name != RUN_TRACES:
            return None
        return path.parent.name if path.parent.parent.name == "runs" else None

    parts = ["runs", "r1", ".", "..", "", ".h", "runs.", RUN_TRACES]
    for n in range(4):
        for combo in itertools.product(parts, repeat=n):
            for lead in ("", "/", "./", "../"):
                text = lead + "/".join((*combo, RUN_TRACES))
                assert run_id_of(text) == by_pathlib(text), text
                assert run_id_of(Path(text)) == by_pathlib(text), text
    assert run_id_of("lab/runs/r1/traces.parquet") == "r1"
