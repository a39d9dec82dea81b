"""Provenance: provenance.json in every --out set and the report's provenance block.

The digests are checked against ``sha256sum`` itself (coreutils), run the way the
documentation says reproduces them; the command line against the arguments given; the
date against the clock around the run.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import os
import re
import shlex
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from golden import ROOT
from test_diff_data import make_set

import statemine
from statemine.cli import main
from statemine.output.provenance import input_digest, input_digests, provenance, relative_names
from statemine.traces import save

needs_sha256sum = pytest.mark.skipif(
    shutil.which("sha256sum") is None, reason="coreutils' sha256sum is not installed"
)


def sha256sum_of_listing(folder: Path, names: list[str]) -> str:
    """What the docs say reproduces a folder's digest: ``sha256sum FILES | sha256sum``."""
    listing = subprocess.run(
        ["sha256sum", "--", *names], cwd=folder, capture_output=True, check=True
    ).stdout
    return (
        subprocess.run(["sha256sum"], input=listing, capture_output=True, check=True)
        .stdout.split()[0]
        .decode()
    )


@needs_sha256sum
def test_a_lab_folders_digest_is_sha256sum_of_its_traces_and_results():
    folder = ROOT / "traces" / "mobile"
    runs = sorted(p.relative_to(folder).as_posix() for p in folder.glob("runs/*/traces.parquet"))
    got = input_digest(folder)
    assert got["kind"] == "folder" and got["files"] == len(runs) + 1 == 81
    assert got["sha256"] == sha256sum_of_listing(folder, [*runs, "results.parquet"])
    sizes = sum((folder / n).stat().st_size for n in [*runs, "results.parquet"])
    assert got["bytes"] == sizes


@needs_sha256sum
def test_a_log_folders_digest_covers_its_log_files_in_reading_order(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.log").write_text("0.0 conn=c cc_state SlowStart\n")
    (tmp_path / "a.log").write_text("0.0 conn=a cc_state SlowStart\n")
    (tmp_path / "notes.md").write_text("not a log: not read, not digested\n")
    got = input_digest(tmp_path)
    assert got["files"] == 2
    assert got["sha256"] == sha256sum_of_listing(tmp_path, ["a.log", "b/x.log"])
    (tmp_path / "notes.md").write_text("changed")
    assert input_digest(tmp_path) == got
    (tmp_path / "b" / "x.log").write_text("0.0 conn=c cc_state Recovery\n")
    assert input_digest(tmp_path)["sha256"] != got["sha256"]


def test_a_files_digest_is_its_sha256(tmp_path):
    path = tmp_path / "t.parquet"
    save(make_set("a", 3, seed=1), path)
    want = hashlib.sha256(path.read_bytes()).hexdigest()
    assert input_digest(path) == {
        "kind": "file",
        "files": 1,
        "bytes": path.stat().st_size,
        "sha256": want,
    }


def test_digests_computed_beforehand_are_recorded_as_given(tmp_path):
    """infer computes the inputs' digests on a thread while it reads them
    (input_digests) and hands them to provenance, which then reads no file again."""
    path = tmp_path / "t.parquet"
    save(make_set("a", 3, seed=1), path)
    digests = input_digests([path])
    assert digests == {str(path): input_digest(path)}
    given = {str(path): {**digests[str(path)], "sha256": "0" * 64}}
    path.unlink()  # nothing left to read: the given digest is used
    record = provenance("infer", [statemine.output.provenance.Input(path)], digests=given)
    assert record["inputs"][0]["sha256"] == "0" * 64


@needs_sha256sum
def test_a_stores_digest_is_of_its_manifest(tmp_path):
    """Sizes and names of every file, as the documented find | sort | sha256sum gives it;
    another append changes it."""
    logs = ROOT / "traces/quic-go-versions/runs/quic-go-v0.65.0-s12-3c2638cc86bc/run.log.gz"
    store = tmp_path / "store"
    statemine.store_add([logs], store, {"set": "x"})
    shell = "find . -type f ! -name '.*' -printf '%s  %P\\n' | LC_ALL=C sort -k2 | sha256sum"
    documented = subprocess.run(
        ["sh", "-c", shell], cwd=store, capture_output=True, check=True, text=True
    )
    names = [p for p in store.rglob("*") if p.is_file() and not p.name.startswith(".")]
    assert len(names) >= 2  # the metadata file and a data file at least
    got = input_digest(store)
    assert got["kind"] == "store" and got["files"] == len(names)
    assert got["bytes"] == sum(p.stat().st_size for p in names)
    assert got["sha256"] == documented.stdout.split()[0]
    statemine.store_add([logs], store, {"set": "y"})
    assert input_digest(store)["sha256"] != got["sha256"]


def test_the_record_says_what_was_run_when_and_by_which_version(tmp_path):
    path = tmp_path / "a.parquet"
    save(make_set("a", 3, seed=1), path)
    record = provenance(
        "diff",
        [],
        command_line=["diff", str(path), "it's", "--out", "x y"],
        now=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC),
    )
    assert record["created_utc"] == "2025-01-02T03:04:05Z"
    assert record["statemine_version"] == statemine.__version__
    assert shlex.split(record["command_line"]) == [
        "statemine",
        "diff",
        str(path),
        "it's",
        "--out",
        "x y",
    ]
    assert provenance("infer", [])["command_line"] is None  # called from Python


def _run(*args: str) -> tuple[datetime, datetime]:
    before = datetime.now(UTC).replace(microsecond=0)
    res = CliRunner().invoke(main, list(args))
    assert res.exit_code == 0, res.output
    return before, datetime.now(UTC)


def _check_record(record: dict, command: str, args: tuple[str, ...], when) -> None:
    assert record["command"] == command
    assert shlex.split(record["command_line"]) == ["statemine", *args]
    assert record["statemine_version"] == statemine.__version__
    made = datetime.strptime(record["created_utc"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert when[0] <= made <= when[1]


def test_every_out_set_holds_provenance_json(tmp_path):
    """infer, diff and explain --out: the command line as given, each input's role,
    selections and digest (the file's sha256), the statistics' options."""
    a, b = tmp_path / "desk top.parquet", tmp_path / "mobile.parquet"
    save(make_set("a", 6, seed=1, cwnd=True), a)
    save(make_set("b", 6, seed=2, cwnd=True), b)
    sha = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (a, b)}

    args = ("infer", str(a), str(b), "--bootstrap", "7", "--out", str(tmp_path / "infer"))
    when = _run(*args)
    record = json.loads((tmp_path / "infer" / "provenance.json").read_text())
    _check_record(record, "infer", args, when)
    assert [(i["role"], i["path"], i["sha256"]) for i in record["inputs"]] == [
        ("input", str(a), sha[a]),
        ("input", str(b), sha[b]),
    ]
    assert record["options"]["stats"]["n_boot"] == 7

    for command in ("diff", "explain"):
        out = tmp_path / command
        args = (command, str(a), str(b), "--permutations", "99", "--out", str(out))
        res = CliRunner().invoke(main, [*args, "--select-a", "x=1"])  # no such label
        assert res.exit_code == 2 and not out.exists()  # refused: no provenance.json alone
        when = _run(*args)
        record = json.loads((out / "provenance.json").read_text())
        _check_record(record, command, args, when)
        assert [(i["role"], i["sha256"], i["selections"]) for i in record["inputs"]] == [
            ("A", sha[a], []),
            ("B", sha[b], []),
        ]
        assert record["options"]["stats"]["n_perm"] == 99


def test_selections_are_recorded_per_side(tmp_path):
    out = tmp_path / "d"
    with contextlib.chdir(ROOT):
        got = statemine.diff_to_dir(
            "traces/mobile",
            "traces/mobile",
            out,
            select_a=["role=server", "profile=desktop"],
            select_b=["role=server", "profile=mobile"],
            compare=statemine.CompareOptions(n_perm=99, n_boot=0),
        )
    assert "provenance.json" in got.written
    record = json.loads((out / "provenance.json").read_text())
    assert record["command_line"] is None  # a library call
    assert [i["selections"] for i in record["inputs"]] == [
        ["role=server", "profile=desktop"],
        ["role=server", "profile=mobile"],
    ]
    assert record["inputs"][0]["sha256"] == input_digest(ROOT / "traces/mobile")["sha256"]


def test_the_report_ends_with_its_provenance_and_is_titled_by_its_selection(tmp_path):
    """A one-sided report of one version's servers, no --title: the title names the
    selection; the page's provenance block has the command line, version, date, inputs."""
    out = tmp_path / "r.html"
    args = (
        "report",
        "traces/quic-go-versions",
        "--select",
        "role=server",
        "--select",
        "version=v0.65.0",
        "--bootstrap",
        "0",
        "--out",
        str(out),
    )
    with contextlib.chdir(ROOT):
        when = _run(*args)
        digest = input_digest("traces/quic-go-versions")
    page = out.read_text()
    title = "statemine: quic-go-versions (role=server, version=v0.65.0)"
    assert f"<title>{title}</title>" in page and f"<h1>{title}</h1>" in page
    block = page.split("<h2>Provenance</h2>")[1]

    line = html.unescape(re.search(r"<dt>command line</dt><dd><code>(.*?)</code>", block)[1])
    assert shlex.split(line) == ["statemine", *args]
    assert re.search(r'id="prov-version">([^<]*)<', block)[1] == statemine.__version__
    made = datetime.strptime(
        re.search(r'id="prov-date">([^<]*)<', block)[1], "%Y-%m-%dT%H:%M:%SZ"
    ).replace(tzinfo=UTC)
    assert when[0] <= made <= when[1]
    assert "selected: role=server version=v0.65.0" in block
    assert digest["sha256"] in block and f"{digest['files']} file(s)" in block


def test_a_report_made_from_python_says_so(tmp_path):
    path = tmp_path / "a.parquet"
    save(make_set("a", 4, seed=1, cwnd=True), path)
    out, _ = statemine.report_to_file(str(path), None, tmp_path / "r.html")
    block = out.read_text().split("<h2>Provenance</h2>")[1]
    assert "<dd>called from Python (statemine report)</dd>" in block
    assert hashlib.sha256(path.read_bytes()).hexdigest() in block
    assert "selected: all traces" in block


def _statemine_lines(n: int, conns: int = 7, noise: bool = False) -> bytes:
    """``n`` statemine lines over ``conns`` connections (times rise per connection);
    ``noise``: each with 32 random bytes as hex (so gzip cannot shrink them much)."""
    import random

    rng = random.Random(n)
    return b"".join(
        b"STATEMINE t=%d.%03d conn=c%d state=%s cwnd=%d%s\n"
        % (
            i // conns,
            i % 1000,
            i % conns,
            [b"SlowStart", b"Recovery"][(i // conns) % 2],
            i,
            b" x=%s" % rng.randbytes(32).hex().encode() if noise else b"",
        )
        for i in range(n)
    )


@pytest.mark.parametrize("on_thread", [False, True])
def test_scan_files_takes_each_files_sha256_from_the_bytes_it_reads(
    tmp_path, monkeypatch, on_thread
):
    """Blocks of 4 KiB (lines cut at block ends, a last line without a newline, CRLF), a
    small gzip file (its compressed bytes), small plain files (opened, read and scanned in
    C, ``Scanner.feed_files``, which hands their bytes back); left out, so provenance reads
    it itself: a big gzip file (not seen raw); hashed on a worker thread beside the scan or
    on the reading thread."""
    import gzip

    from statemine.parse import lines
    from statemine.parse.statemine_log import scan_files

    if on_thread:
        monkeypatch.setattr(lines, "_HASH_ON_THREAD_BYTES", 1)
    big, crlf, small = tmp_path / "big.log", tmp_path / "crlf.log", tmp_path / "small.log"
    big.write_bytes(_statemine_lines(3001)[:-1])  # 190 kB, no newline at the end
    crlf.write_bytes(_statemine_lines(2000).replace(b"\n", b"\r\n"))
    small.write_bytes(_statemine_lines(5))
    small2 = tmp_path / "small2.log"
    small2.write_bytes(_statemine_lines(7).replace(b"\n", b"\r\n"))
    small_gz, big_gz = tmp_path / "small.log.gz", tmp_path / "big.log.gz"
    small_gz.write_bytes(gzip.compress(_statemine_lines(6)))
    big_gz.write_bytes(gzip.compress(_statemine_lines(3000, noise=True)))
    files = [big, crlf, small, small2, small_gz, big_gz]
    digests = lines.ReadDigests()
    rows = sum(
        len(b.time)
        for b in scan_files(files, chunk_bytes=4096, digests=digests)
        if hasattr(b, "time")
    )
    assert rows == 3001 + 2000 + 5 + 7 + 6 + 3000
    want = {
        str(p.resolve()): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_size)
        for p in (big, crlf, small, small2, small_gz)
    }
    assert digests.records() == want


def test_infer_reads_a_streamed_log_once_for_its_digest(tmp_path, monkeypatch):
    """provenance.json's sha256 of statemine logs comes from the scan's own reading: no
    second read of a streamed file (hashlib.file_digest is what a second read would
    call), a small log scanned in C (under 64 KiB) included; a big gzip log, which the
    scan sees decompressed, is read again. The digests are sha256sum's."""
    import gzip

    from statemine.commands import infer_to_dir

    logs = tmp_path / "logs"
    logs.mkdir()
    plain, small = logs / "a.log", logs / "b.log"
    plain.write_bytes(_statemine_lines(2000))  # over the 64 kB read whole with the sniff
    small.write_bytes(_statemine_lines(9))
    packed = tmp_path / "c.log.gz"
    packed.write_bytes(gzip.compress(_statemine_lines(3000, noise=True)))
    assert packed.stat().st_size > 65536  # not read whole with the sniff
    second_reads: list[str] = []
    real = hashlib.file_digest

    def counting(f, name):
        second_reads.append(f.name)
        return real(f, name)

    monkeypatch.setattr(hashlib, "file_digest", counting)
    infer_to_dir([plain, logs], tmp_path / "out", svg=False)
    assert second_reads == []
    record = json.loads((tmp_path / "out" / "provenance.json").read_text())
    assert [i["sha256"] for i in record["inputs"]] == [
        hashlib.sha256(plain.read_bytes()).hexdigest(),
        hashlib.sha256(
            f"{hashlib.sha256(plain.read_bytes()).hexdigest()}  a.log\n"
            f"{hashlib.sha256(small.read_bytes()).hexdigest()}  b.log\n".encode()
        ).hexdigest(),
    ]
    infer_to_dir([packed], tmp_path / "out2", svg=False)
    assert second_reads == [str(packed)]
    record = json.loads((tmp_path / "out2" / "provenance.json").read_text())
    assert record["inputs"][0]["sha256"] == hashlib.sha256(packed.read_bytes()).hexdigest()


def test_infer_reads_small_logs_once_and_tells_their_format_from_that_read(tmp_path, monkeypatch):
    """``infer`` of small statemine logs (format auto) neither sniffs them beforehand nor
    hashes them again: Python opens none of them (C opens, reads, sniffs and scans each
    once). Inputs that are not all statemine logs (a qlog among them) are read whole, as
    ``statemine.read`` reads them, with the same tables and sha256sum's digests."""
    import os

    import numpy as np

    from statemine.commands import infer_to_dir
    from statemine.stats.summary import summarize

    logs = tmp_path / "logs"
    logs.mkdir()
    for i in range(5):
        (logs / f"r{i}.log").write_bytes(_statemine_lines(20 + i))
    opened: list[str] = []
    real_open = os.open

    def counting(path, *args, **kwargs):
        opened.append(os.fsdecode(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting)
    out = infer_to_dir([logs], tmp_path / "out", svg=False)
    assert [p for p in opened if p.endswith(".log")] == []
    record = json.loads((tmp_path / "out" / "provenance.json").read_text())
    listing = "".join(
        f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}\n" for p in sorted(logs.iterdir())
    )
    assert record["inputs"][0]["sha256"] == hashlib.sha256(listing.encode()).hexdigest()
    assert out.n_traces == statemine.read(logs).n_traces

    qlog = Path(__file__).parent / "data" / "qlog" / "draft01.qlog"
    mixed = [logs, qlog]
    out = infer_to_dir(mixed, tmp_path / "out2", svg=False)
    ts = statemine.read(mixed)
    states, _ = summarize(ts)
    assert out.n_traces == ts.n_traces and out.n_events == len(ts.events)
    assert list(out.states["state"]) == list(states["state"])
    for column in ("time_s", "time_fraction", "visits"):
        np.testing.assert_allclose(out.states[column], states[column], rtol=1e-12)
    record = json.loads((tmp_path / "out2" / "provenance.json").read_text())
    assert record["inputs"][0]["sha256"] == hashlib.sha256(listing.encode()).hexdigest()
    assert record["inputs"][1]["sha256"] == hashlib.sha256(qlog.read_bytes()).hexdigest()


@needs_sha256sum
def test_a_qlog_folders_small_files_are_opened_once_by_infer(tmp_path, monkeypatch):
    """``infer --out`` of a folder of qlog files: each small plain one is opened and read
    once, by the format sniff, whose bytes the qlog reader and provenance.json's sha256
    take (issue 29); a gzip one and one over 64 KiB are read as before. The folder's
    digest is ``sha256sum FILES | sha256sum``'s."""
    import builtins
    import io
    import os

    from statemine.commands import infer_to_dir

    data = ROOT / "tests" / "data" / "qlog"
    folder = tmp_path / "qlogs"
    folder.mkdir()
    small = ["draft01.qlog", "file_schema.sqlog", "v03.sqlog", "v04.qlog"]
    for name in small:
        shutil.copyfile(data / name, folder / name)
    packed = sorted((ROOT / "tests" / "data" / "corpus").glob("*/*.sqlog.gz"))[0]
    shutil.copyfile(packed, folder / "w.sqlog.gz")
    text = (data / "v03.sqlog").read_text()
    first, rest = text.split("\n", 1)  # the header record, then events
    big = first + "\n" + rest.replace('"conn-1"', '"conn-big"') * (70_000 // len(rest) + 1)
    (folder / "x.sqlog").write_text(big)
    assert (folder / "x.sqlog").stat().st_size > 65536
    want = statemine.read(folder)
    opened: list[str] = []
    real = builtins.open, io.open, os.open

    def counted(which: int):
        def opener(file, *args, **kwargs):
            opened.append(os.fsdecode(file) if isinstance(file, (str, bytes, Path)) else "")
            return real[which](file, *args, **kwargs)

        return opener

    monkeypatch.setattr(builtins, "open", counted(0))
    monkeypatch.setattr(io, "open", counted(1))
    monkeypatch.setattr(os, "open", counted(2))
    result = infer_to_dir(folder, tmp_path / "out", svg=False)
    monkeypatch.undo()
    assert result.n_traces == want.n_traces
    # the first file is opened and read in C by the statemine scan, which hands its
    # bytes on when it declines it; each other small one by the format sniff alone
    assert [opened.count(str(folder / name)) for name in small] == [0, 1, 1, 1]
    assert opened.count(str(folder / "w.sqlog.gz")) >= 2  # read, then hashed
    record = json.loads((tmp_path / "out" / "provenance.json").read_text())
    (got,) = record["inputs"]
    names = sorted(p.name for p in folder.iterdir())
    assert got["files"] == 6
    assert got["sha256"] == sha256sum_of_listing(folder, names)


@pytest.mark.parametrize(
    "top",
    [".", "d", "d/e f", "./d", "d/../d", "/", "/tmp", "..", "../x", "é/\udcff", ".hidden"],
)
def test_relative_names_equal_relpath_and_abspath_on_odd_names(top, tmp_path, monkeypatch):
    """Cut from the text where it can be, asked of os.path where not: the same names as
    ``os.path.relpath`` and ``os.path.abspath`` of each file give."""
    monkeypatch.chdir(tmp_path)
    base = Path(top)
    rests = ["a", "a b", "x/y.z", "..a", "a..", "a/.b", ".c", "é\udcfe/ü", "a/./b", "a/../b"]
    files: list[str | Path] = [base / r for r in rests]
    # as text: not normalized by pathlib
    files += [str(base) + "/" + r for r in ("x//y", "x/.", "..", "./a", "a/", "b/../c")]
    files += [Path("/elsewhere/f"), "other/f", str(base) + "//a"]
    got = relative_names(files, base)
    assert got == [
        (os.path.relpath(f, base).replace(os.sep, "/"), os.path.abspath(f)) for f in files
    ]
