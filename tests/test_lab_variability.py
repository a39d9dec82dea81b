"""Every random source on at once, end to end with the real stacks (slow: builds the
patched aioquic and the quic-go harness): runs of one cell differ, and `statemine lab
rerun` of a run reproduces its log byte for byte, also after the output folder moved
(the link traces are referred to relative to the run)."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest
from click.testing import CliRunner

from statemine.cli import main
from statemine.lab.scenario import link_config

ALL_SOURCES = """
[scenario]
name = "all"
runs = 2
time_limit_s = 60
[grid]
stack = "{stack}"
rtt_ms = 40
loss = 0.003
jitter_ms = 2
up_jitter_ms = 1
cross_load = 0.2
cross_on_off_ms = [[100, 200]]
link_trace = "synthetic:verizon-lte-down"
up_link_trace = "synthetic:verizon-lte-up"
profile = "mobile"
read_rate_mbps = 4
read_rate_cv = 0.3
per_packet_cpu_ms = 0.1
per_packet_cpu_cv = 0.5
object_size_bytes = 300000
"""


@pytest.mark.slow
@pytest.mark.parametrize("stack", ["aioquic@1.7.2", "quic-go@v0.65.0"])
def test_all_sources_runs_differ_and_rerun_is_byte_identical(stack, tmp_path):
    scen = tmp_path / "all.toml"
    scen.write_text(ALL_SOURCES.format(stack=stack))
    out = tmp_path / "out"
    res = CliRunner().invoke(
        main, ["lab", "run", str(scen), "--out", str(out), "--no-progress", "-j", "1"]
    )
    assert res.exit_code == 0, res.output
    runs = sorted((out / "runs").iterdir())
    assert len(runs) == 2 and len(list((out / "link-traces").iterdir())) == 2
    logs = [gzip.decompress((r / "run.log.gz").read_bytes()) for r in runs]
    assert logs[0] != logs[1]  # the seeds differ
    results = [json.loads((r / "result.json").read_text()) for r in runs]
    assert all(r["ok"] for r in results) and results[0]["plt_s"] != results[1]["plt_s"]
    cfg = json.loads((runs[0] / "config.json").read_text())
    assert cfg["path"]["down"]["link_trace"]["file"].startswith("../../link-traces/")
    moved = tmp_path / "moved"
    shutil.move(out, moved)  # relative trace paths still resolve
    again = CliRunner().invoke(
        main,
        [
            "lab",
            "rerun",
            str(moved / "runs" / runs[0].name / "config.json"),
            "--out",
            str(tmp_path / "again"),
        ],
    )
    assert again.exit_code == 0, again.output
    assert (tmp_path / "again" / "run.log").read_bytes() == logs[0]


def test_rerun_refuses_a_missing_or_changed_link_trace(tmp_path):
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    link = link_config(
        1e6, 30000, 0.01, link_trace={"file": "../../link-traces/x.trace", "sha256": "0" * 64}
    )
    cfg = {
        "seed": 1,
        "implementation": "aioquic",
        "version": "1.7.2",
        "path": {"down": link, "up": dict(link)},
    }
    (run / "config.json").write_text(json.dumps(cfg))
    res = CliRunner().invoke(
        main, ["lab", "rerun", str(run / "config.json"), "--out", str(tmp_path / "o")]
    )
    assert res.exit_code == 2 and "cannot read" in res.output and "Traceback" not in res.output
    (tmp_path / "link-traces").mkdir()
    (tmp_path / "link-traces" / "x.trace").write_text("1\n2\n")
    res = CliRunner().invoke(
        main, ["lab", "rerun", str(run / "config.json"), "--out", str(tmp_path / "o")]
    )
    assert res.exit_code == 2 and "sha256 differs" in res.output
    assert not (tmp_path / "o").exists()
