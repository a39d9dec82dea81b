"""The library calls that mirror the commands write exactly what the commands write.

Each call is compared with the golden outputs of the command line it mirrors
(tests/golden.py, with its comparison: numbers within its tolerance), so a notebook gets the files of ``statemine infer --out`` (etc.) with
one call.
"""

from __future__ import annotations

import contextlib
import json

import pytest
from golden import CASES, ROOT, differing, mismatch, normalize, read_golden

import statemine
from statemine.errors import UsageError


def _files(folder, names):
    return {n: normalize(n, (folder / n).read_bytes(), str(folder)) for n in names}


def _argv(case: str, out) -> list[str]:
    """The golden case's command line (after ``statemine``) with its output path: what
    the CLI passes as ``command_line``, so provenance.json is the golden one too."""
    return [a.replace("{out}", str(out)) for a in CASES[case]]


def test_infer_to_dir_writes_what_infer_out_writes(tmp_path):
    out = tmp_path / "out"
    with contextlib.chdir(ROOT):
        got = statemine.infer_to_dir(
            "traces/quic-go-versions",
            out,
            selections=["role=server", "version=v0.63.0", "jitter_ms=10"],
            command_line=_argv("infer-readme", out),
        )
    golden = read_golden("infer-readme")
    assert got.written == (
        "states.csv",
        "transitions.csv",
        "model.dot",
        "model.json",
        "model.svg",
        "provenance.json",
    )
    assert differing({n: golden[n] for n in got.written}, _files(out, got.written)) == []
    assert got.n_traces == 20 and got.notes == () and got.warnings == ()
    # the returned table is the CSV's, as numbers: fractions sum to 1 (seconds / seconds)
    assert got.states["time_fraction"].sum() == pytest.approx(1.0)
    assert got.states["time_s"].sum() > 0


def test_infer_to_dir_streamed_log_and_no_out(tmp_path):
    with contextlib.chdir(ROOT):
        got = statemine.infer_to_dir(
            "traces/quic-go-versions/runs/quic-go-v0.65.0-s12-3c2638cc86bc/run.log.gz"
        )
    assert got.written == () and got.n_traces == 2 and got.n_events == 97
    assert list(tmp_path.iterdir()) == []


def test_diff_to_dir_writes_what_diff_writes(tmp_path):
    parquet = "tests/data/diff/quic-go-mobile-servers.parquet"  # as the case names it
    out = tmp_path / "out"
    with contextlib.chdir(ROOT):
        got = statemine.diff_to_dir(
            parquet,
            parquet,
            out,
            select_a=["profile=desktop"],
            select_b=["profile=mobile"],
            command_line=_argv("diff-parquet", out),
        )
    golden = read_golden("diff-parquet")
    assert "provenance.json" in got.written
    assert differing({n: golden[n] for n in got.written}, _files(out, got.written)) == []
    assert got.result.label_a == "quic-go-mobile-servers (A)"


def test_report_to_file_writes_what_report_writes(tmp_path):
    out = tmp_path / "report.html"
    with contextlib.chdir(ROOT):
        path, warnings = statemine.report_to_file(
            "traces/quic-go-versions",
            None,
            out,
            select_a=["role=server", "version=v0.65.0"],
            title="quic-go <v0.65.0>",
            command_line=_argv("report-single", tmp_path),
        )
    assert path == out and warnings == ()
    recorded = read_golden("report-single")["report.html"]
    page = normalize("report.html", out.read_bytes(), str(tmp_path))
    assert not mismatch("report.html", recorded, page)


def test_read_options_are_honoured(tmp_path):
    log = ROOT / "tests/data/golden/inputs/custom.log"
    read = statemine.ReadOptions(
        fmt="regex",
        regex=(r"(?<DTIME>\S+) quic conn=(?<conn>\S+) cc_state (?<TYPE>\S+).*",),
        ignore_nonmatching=True,
        mapping=r"\k<conn>",
    )
    ts = statemine.read_inputs(log, read, selections=["partition=2/server"])
    assert ts.n_traces == 1
    with pytest.raises(UsageError, match="no trace matches"):
        statemine.read_inputs(log, read, selections=["partition=nope"])


def test_read_to_file_writes_what_read_writes(tmp_path):
    """`statemine read` is read_to_file plus printing: the same Parquet file, and the counts
    and warnings it returns are those of the file read back."""
    from click.testing import CliRunner

    from statemine.cli import main

    log = ROOT / "tests/data/golden/inputs/custom.log"
    regex = r"(?<DTIME>\S+) quic conn=(?<conn>\S+) cc_state (?<TYPE>\S+).*"
    read = statemine.ReadOptions(fmt="regex", regex=(regex,), ignore_nonmatching=True)
    got = statemine.read_to_file(log, tmp_path / "lib.parquet", read, labels={"env": "lab"})
    args = ["read", str(log), "--out", str(tmp_path / "cli.parquet"), "--label", "env=lab"]
    res = CliRunner().invoke(main, [*args, "--format", "regex", "-r", regex, "-i"])
    assert res.exit_code == 0, res.output
    lib, cli = statemine.load(got.path), statemine.load(tmp_path / "cli.parquet")
    assert lib.events.equals(cli.events) and lib.traces.equals(cli.traces)
    cc_lines = sum("cc_state" in line for line in log.read_text().splitlines())
    assert (got.n_traces, got.n_events) == (lib.n_traces, len(lib.events)) == (1, cc_lines)
    assert set(lib.traces["env"]) == {"lab"}
    assert got.warnings == tuple(json.loads(lib.meta.get("warnings", "[]")))
    assert f"wrote 1 traces, {cc_lines} events to {tmp_path / 'cli.parquet'}" in res.output
