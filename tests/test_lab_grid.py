"""The grid runner (statemine/lab/grid.py) with a fake, fast runner: results table,
failure recording, resume without redoing finished runs, atomic run folders, manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from statemine import traces
from statemine.errors import UsageError
from statemine.lab import grid
from statemine.lab import scenario as sc


class FakeRunner:
    """Writes a two-state log; fails as told by the run's rtt (the grid axis)."""

    def __init__(self, fail_rtt: float | None = None, raise_rtt: float | None = None) -> None:
        self.calls: list[dict] = []
        self.built: list[str] = []
        self.caches: list = []  # the cache_dir of each build and run call
        self.fail_rtt, self.raise_rtt = fail_rtt, raise_rtt

    def build(self, version, cache_dir):
        self.built.append(version)
        self.caches.append(cache_dir)
        return None

    def run(self, config, cache_dir=None):
        self.calls.append(config)
        self.caches.append(cache_dir)
        rtt = round(config["path"]["down"]["delay_s"] * 2000)
        if rtt == self.raise_rtt:
            raise RuntimeError("boom")
        if rtt == self.fail_rtt:
            return {"ok": False, "error": "virtual time limit reached (10 s)"}
        plt = rtt / 1000 * 10
        with open(config["log_path"], "w") as f:
            f.write(f"STATEMINE t=0.0 conn=c{config['seed']} role=server state=SlowStart\n")
            f.write(f"STATEMINE t={plt / 2} conn=c{config['seed']} role=server state=Recovery\n")
            f.write(f"STATEMINE t={plt} conn=c{config['seed']} role=server event=Close\n")
        size = config["objects"]["count"] * config["objects"]["size_bytes"]
        return {
            "ok": True,
            "error": None,
            "plt_s": plt,
            "bytes": size,
            "throughput_bps": 8 * size / plt,
            "retransmissions": config["seed"],
            "packets_sent": 100,
            "packets_dropped": 1,
            "virtual_time_s": plt,
            "wall_time_s": 0.01,
        }


SCENARIO = """[scenario]
name = "fake"
runs = 2
seed = 5
time_limit_s = 10
[grid]
stack = "aioquic@1.7.2"
rtt_ms = [20, 40, 80]
object_size_bytes = 1000
"""


@pytest.fixture
def spec(tmp_path):
    p = tmp_path / "fake.toml"
    p.write_text(SCENARIO)
    return sc.load(p)


def run(spec, out, runner, **kw):
    return grid.run_grid(
        spec,
        out,
        runners={"aioquic": runner},
        progress=False,
        jobs=2,
        command=["statemine", "lab", "run", "fake.toml"],
        **kw,
    )


def test_results_table_has_one_row_per_run(spec, tmp_path):
    out = tmp_path / "out"
    table = run(spec, out, FakeRunner())
    assert len(table) == 6 and table["ok"].all()
    assert sorted(table["rtt_ms"].unique()) == [20.0, 40.0, 80.0]
    assert sorted(table["seed"].unique()) == [5, 6]
    # PLT is what the runner measured; throughput is 8*bytes/plt
    row = table[table["rtt_ms"] == 40.0].iloc[0]
    assert row["plt_s"] == pytest.approx(0.4)
    assert row["throughput_bps"] == pytest.approx(8 * 1000 / 0.4)
    on_disk = pd.read_csv(out / "results.csv")
    assert len(on_disk) == 6 and set(on_disk["run_id"]) == set(table["run_id"])
    assert len(pd.read_parquet(out / "results.parquet")) == 6


def test_each_run_has_log_traces_config_result(spec, tmp_path):
    out = tmp_path / "out"
    table = run(spec, out, FakeRunner())
    d = out / "runs" / table["run_id"].iloc[0]
    assert {p.name for p in d.iterdir()} >= {
        "run.log.gz",
        "traces.parquet",
        "config.json",
        "result.json",
    }
    ts = traces.load(d / "traces.parquet")
    assert ts.events["state"].tolist() == ["SlowStart", "Recovery", "Close"]
    assert ts.traces["rtt_ms"].iloc[0] in {"20", "40", "80"}
    assert ts.traces["run_id"].iloc[0] == table["run_id"].iloc[0]
    assert not list((out / "runs").glob(".tmp-*"))


def test_resume_skips_finished_runs(spec, tmp_path):
    out = tmp_path / "out"
    first = FakeRunner()
    run(spec, out, first, only={"rtt_ms": "40"})
    assert len(first.calls) == 2
    second = FakeRunner()
    table = run(spec, out, second)
    assert len(second.calls) == 4  # only the 4 runs not done before
    assert len(table) == 6
    third = FakeRunner()
    run(spec, out, third)
    assert third.calls == [] and third.built == []  # nothing left: not even a build


def test_interrupted_run_leaves_no_finished_folder(spec, tmp_path):
    out = tmp_path / "out"

    class Interrupting(FakeRunner):
        def run(self, config, cache_dir=None):
            if len(self.calls) == 1:
                raise KeyboardInterrupt
            return super().run(config, cache_dir)

    with pytest.raises(KeyboardInterrupt):
        grid.run_grid(spec, out, runners={"aioquic": Interrupting()}, progress=False, jobs=1)
    done = [p for p in (out / "runs").iterdir() if not p.name.startswith(".")]
    assert len(done) == 1  # the first run only, complete
    assert (done[0] / "result.json").is_file()
    assert len(pd.read_csv(out / "results.csv")) == 1  # the table matches what finished
    again = FakeRunner()
    table = run(spec, out, again)
    assert len(again.calls) == 5 and len(table) == 6 and table["ok"].all()


def test_failures_are_recorded_and_the_rest_kept(spec, tmp_path):
    out = tmp_path / "out"
    table = run(spec, out, FakeRunner(fail_rtt=20, raise_rtt=80))
    by = table.set_index("rtt_ms")
    assert (
        not by.loc[20.0, "ok"].any() and not by.loc[80.0, "ok"].any() and by.loc[40.0, "ok"].all()
    )
    assert (by.loc[20.0, "error"] == "virtual time limit reached (10 s)").all()
    assert by.loc[80.0, "error"].str.contains("RuntimeError: boom").all()
    # failed runs are finished runs: not rerun, unless asked
    again = FakeRunner()
    run(spec, out, again)
    assert again.calls == []
    fixed = FakeRunner()
    table = run(spec, out, fixed, retry_failed=True)
    assert len(fixed.calls) == 4 and table["ok"].all()


def test_unpatched_log_fails_the_run(spec, tmp_path):
    class Silent(FakeRunner):
        def run(self, config, cache_dir=None):
            res = super().run(config, cache_dir)
            Path(config["log_path"]).write_text("no statemine line here\n")
            return res

    table = run(spec, tmp_path / "out", Silent(), only={"rtt_ms": "20"})
    assert not table["ok"].any()
    assert table["error"].str.contains("no statemine line").all()


def test_runs_use_the_cache_they_were_built_in(spec, tmp_path):
    runner = FakeRunner()
    run(spec, tmp_path / "out", runner, cache_dir=tmp_path / "cache")
    assert len(runner.built) == 1 and len(runner.calls) == 6
    assert runner.caches == [tmp_path / "cache"] * 7  # the build, then every run
    default = FakeRunner()
    run(spec, tmp_path / "out2", default, only={"rtt_ms": "20"})
    assert default.caches == [None] * 3


def test_build_failure_fails_its_runs(spec, tmp_path):
    class NoBuild(FakeRunner):
        def build(self, version, cache_dir):
            raise RuntimeError("compiler missing")

    runner = NoBuild()
    table = run(spec, tmp_path / "out", runner)
    assert runner.calls == [] and len(table) == 6 and not table["ok"].any()
    assert table["error"].str.contains("build of aioquic@1.7.2 failed: compiler missing").all()


def test_manifest_makes_runs_reproducible(spec, tmp_path):
    out = tmp_path / "out"
    table = run(spec, out, FakeRunner())
    m = json.loads((out / "manifest.json").read_text())
    assert m["command"] == ["statemine", "lab", "run", "fake.toml"]
    assert m["scenario"]["sha256"] == spec.sha256 and m["statemine_version"]
    assert set(m["runs"]) == set(table["run_id"])
    some = m["runs"][table["run_id"].iloc[0]]
    cfg = json.loads((out / "runs" / table["run_id"].iloc[0] / "config.json").read_text())
    assert {k: v for k, v in cfg.items() if k not in ("log_path", "result_path")} == some["config"]
    assert m["stacks"]["aioquic@1.7.2"]["patch_sha256"]


def test_only_filters_and_rejects_unknown_keys(spec, tmp_path):
    assert len(grid.plan(spec, {"rtt_ms": "80", "seed": "6"})) == 1
    with pytest.raises(UsageError):
        grid.plan(spec, {"colour": "red"})
