"""The lab's bookkeeping never drops a finished run (issue 25 item 4): a folder's results
and manifest are the union of all its runs, a rerun replaces its own older result,
``lab run`` exits non-zero naming the first failure, a missing ``lab`` extra is named with
its install command, shipped scenarios run by name, and ``lab findings`` without ROOT
says where traces are. The stacks are fakes (test_lab_grid.FakeRunner, or a stub aioquic
package for aioquic's real runner subprocess): fast tier."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from test_lab_grid import SCENARIO, FakeRunner

import statemine.lab
from statemine.cli import main
from statemine.errors import InputError, StatemineError, UsageError
from statemine.lab import commands, extras, findings, grid
from statemine.lab import scenario as sc
from statemine.lab.runners import aioquic
from statemine.resources import data_dir

TRACES = Path(__file__).resolve().parents[1] / "traces"


def invoke(*args):
    return CliRunner().invoke(main, ["lab", *map(str, args)])


@pytest.fixture
def spec(tmp_path):
    p = tmp_path / "fake.toml"
    p.write_text(SCENARIO)
    return sc.load(p)


def run(spec, out, runner, **kw):
    return grid.run_grid(spec, out, runners={"aioquic": runner}, progress=False, jobs=1, **kw)


def on_disk(out: Path) -> dict[str, dict]:
    """Every run folder's result.json, by run id (the other way to count the runs)."""
    return {p.parent.name: json.loads(p.read_text()) for p in (out / "runs").glob("*/result.json")}


def test_two_only_calls_keep_both_calls_runs(spec, tmp_path):
    out = tmp_path / "out"
    run(spec, out, FakeRunner(), only={"rtt_ms": "20"})
    table = run(spec, out, FakeRunner(), only={"rtt_ms": "40"})
    disk = on_disk(out)
    assert len(disk) == 4
    csv = pd.read_csv(out / "results.csv")
    for frame in (table, csv, pd.read_parquet(out / "results.parquet")):
        assert sorted(frame["run_id"]) == sorted(disk)
    by_id = csv.set_index("run_id")
    for run_id, res in disk.items():
        assert by_id.loc[run_id, "plt_s"] == pytest.approx(res["plt_s"])
        assert by_id.loc[run_id, "rtt_ms"] == res["cell"]["rtt_ms"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(manifest["runs"]) == sorted(disk)
    for run_id, entry in manifest["runs"].items():
        config = json.loads((out / "runs" / run_id / "config.json").read_text())
        assert entry["config"] == {
            k: v for k, v in config.items() if k not in ("log_path", "result_path")
        }


def test_a_rerun_replaces_its_own_older_result(spec, tmp_path):
    out = tmp_path / "out"
    first = run(spec, out, FakeRunner(fail_rtt=20), only={"rtt_ms": "20"})
    assert not first["ok"].any()
    run(spec, out, FakeRunner(), only={"rtt_ms": "40"})
    fixed = FakeRunner()
    table = run(spec, out, fixed, only={"rtt_ms": "20"}, retry_failed=True)
    assert len(fixed.calls) == 2
    assert len(table) == 4 and table["run_id"].is_unique and table["ok"].all()
    assert sorted(table["run_id"]) == sorted(on_disk(out))


def test_findings_count_runs_an_old_results_csv_left_out(tmp_path):
    """A folder whose results.csv lists only the last call's runs (what statemine wrote
    before): the earlier runs on disk are read all the same."""
    doc = SCENARIO.replace('name = "fake"', 'name = "mobile"')
    (tmp_path / "mobile.toml").write_text(doc)
    spec = sc.load(tmp_path / "mobile.toml")
    out = tmp_path / "root" / "mobile"
    run(spec, out, FakeRunner(), only={"rtt_ms": "20"})
    last = run(spec, out, FakeRunner(), only={"rtt_ms": "40"})
    last[last["rtt_ms"] == 40].to_csv(out / "results.csv", index=False)  # the old table
    assert len(pd.read_csv(out / "results.csv")) == 2
    ts, results = findings._load_folder(out)
    assert sorted(set(ts.traces["run_id"])) == sorted(on_disk(out))
    assert sorted(results.index) == sorted(on_disk(out))
    for run_id, res in on_disk(out).items():
        assert results.loc[run_id, "plt_s"] == pytest.approx(res["plt_s"])


def test_shipped_results_are_their_runs_on_disk():
    """results.csv of every shipped folder is the table of its run folders' result.json."""
    folders = [p for p in TRACES.iterdir() if (p / "runs").is_dir()] if TRACES.is_dir() else []
    if not folders:
        pytest.skip("the shipped traces/ folders are absent (an sdist or wheel)")
    for folder in folders:
        csv = pd.read_csv(folder / "results.csv").set_index("run_id")
        disk = on_disk(folder)
        assert sorted(csv.index) == sorted(disk), folder.name
        for run_id, res in disk.items():
            assert bool(csv.loc[run_id, "ok"]) == bool(res["ok"])
            if res["ok"]:
                assert csv.loc[run_id, "plt_s"] == pytest.approx(res["plt_s"], rel=1e-12)
        assert grid.folder_results(folder).equals(pd.read_csv(folder / "results.csv"))


def test_lab_run_exits_1_naming_the_first_failure(tmp_path, monkeypatch):
    import statemine.lab.runners as runners

    monkeypatch.setattr(runners, "runner_for", lambda impl: FakeRunner(fail_rtt=40))
    (tmp_path / "fake.toml").write_text(SCENARIO)
    res = invoke("run", tmp_path / "fake.toml", "--out", tmp_path / "out", "--no-progress")
    assert res.exit_code == 1, res.output
    failed = pd.read_csv(tmp_path / "out" / "results.csv").query("not ok")
    first = failed["run_id"].iloc[0]
    assert res.stderr.splitlines()[-1] == (
        f"statemine: error: 2 of 6 runs failed; the first, {first}: virtual time limit "
        "reached (10 s) (--retry-failed runs them again)"
    )
    monkeypatch.setattr(runners, "runner_for", lambda impl: FakeRunner())
    res = invoke("run", tmp_path / "fake.toml", "--out", tmp_path / "out", "--retry-failed")
    assert res.exit_code == 0 and "6 runs in" in res.stdout and "0 failed" in res.stdout


def test_a_missing_lab_extra_is_named_with_its_install_command(tmp_path, monkeypatch):
    real = extras.importlib.util.find_spec
    monkeypatch.setattr(
        extras.importlib.util, "find_spec", lambda n, *a: None if n == "certifi" else real(n, *a)
    )
    assert extras.missing_lab_modules() == ["certifi"]
    with pytest.raises(StatemineError, match=r"No module named 'certifi'\): pip install"):
        aioquic.build("1.7.2", tmp_path / "cache")
    assert not (tmp_path / "cache").exists()  # refused before fetching anything
    # lab run with the real aioquic runner: every run fails with it; exit 1 names it
    (tmp_path / "fake.toml").write_text(SCENARIO)
    res = invoke("run", tmp_path / "fake.toml", "--out", tmp_path / "out", "--only", "rtt_ms=20")
    assert res.exit_code == 1
    assert res.stderr.splitlines()[-1].endswith(
        "build of aioquic@1.7.2 failed: aioquic needs statemine's lab extra, which is not "
        "installed (No module named 'certifi'): pip install 'statemine[lab]' "
        "(--retry-failed runs them again)"
    )


def test_a_run_subprocess_missing_a_lab_module_names_the_extra():
    tail = "runner exited with status 1: ModuleNotFoundError: No module named 'certifi'"
    assert extras.explain_missing_module(tail) == (
        f"{tail} (statemine's lab extra is not installed: pip install 'statemine[lab]')"
    )
    other = "runner exited with status 1: ModuleNotFoundError: No module named 'numpyx'"
    assert extras.explain_missing_module(other) == other


def test_aioquic_runs_without_certifi_say_which_extra(tmp_path, monkeypatch, spec):
    """aioquic's runner subprocess failing to import certifi (a package that raises on
    import first on PYTHONPATH; the aioquic tree a stub whose connection module imports
    certifi at the top, as aioquic's tls.py does): the run's error names the install
    command. (No real stack: the parent's check passes, the subprocess is real.)"""
    blocker = tmp_path / "block" / "certifi"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'certifi'\", name='certifi')\n"
    )
    stub = tmp_path / "tree" / "aioquic" / "quic"
    stub.mkdir(parents=True)
    (stub.parent / "__init__.py").write_text("__version__ = 'stub'\n")
    (stub / "__init__.py").write_text("")
    (stub / "connection.py").write_text("import certifi\n")
    monkeypatch.setattr(aioquic, "build", lambda version, cache=None: tmp_path / "tree")
    monkeypatch.setenv("PYTHONPATH", str(blocker.parent))
    table = run(spec, tmp_path / "out", aioquic, only={"rtt_ms": "20", "seed": "5"})
    assert len(table) == 1 and not table["ok"].iloc[0]
    error = table["error"].iloc[0]
    assert error.startswith("runner exited with status 1: ")
    assert error.endswith(
        "No module named 'certifi' (statemine's lab extra is not installed: "
        "pip install 'statemine[lab]')"
    )


def test_shipped_scenarios_run_by_name(tmp_path, monkeypatch):
    shipped = data_dir("examples/scenarios")
    monkeypatch.chdir(tmp_path)
    assert commands.scenario_path("mobile") == shipped / "mobile.toml"
    assert commands.scenario_path("mobile.toml") == shipped / "mobile.toml"
    (tmp_path / "mobile.toml").write_text(SCENARIO)  # a file of that name here wins
    assert commands.scenario_path("mobile.toml") == Path("mobile.toml")
    with pytest.raises(InputError, match=r"nope: no such scenario file.*\(aioquic-versions, "):
        commands.scenario_path("nope")
    with pytest.raises(InputError, match="no such scenario file"):
        commands.scenario_path("sub/mobile")  # a path is a path, never a name
    listed = statemine.lab.list_scenarios()
    assert set(listed["name"]) == {p.stem for p in shipped.glob("*.toml")}

    import statemine.lab.runners as runners

    made: list[FakeRunner] = []
    monkeypatch.setattr(runners, "runner_for", lambda impl: made.append(FakeRunner()) or made[-1])
    res = invoke("run", "cellular", "--out", "o", "--only", "profile=desktop", "--only", "seed=1")
    assert res.exit_code == 0, res.output
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert manifest["scenario"]["file"] == str(shipped / "cellular.toml")
    assert sum(len(r.calls) for r in made) == 2  # one desktop run per stack, seed 1


def test_lab_findings_without_root_says_where_traces_are(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(commands, "checkout_traces", lambda: None)  # an installed wheel
    res = invoke("findings")
    assert res.exit_code == 2 and res.stderr.count("\n") == 1
    assert res.stderr.startswith("statemine: error: no traces/ folder here: give ROOT")
    assert "not with the installed package" in res.stderr
    with pytest.raises(UsageError, match="statemine lab run mobile --out ROOT/mobile"):
        statemine.lab.measure_findings()
    monkeypatch.setattr(commands, "checkout_traces", lambda: TRACES)
    res = invoke("findings")
    assert f"the shipped traces are in {TRACES} (statemine lab findings {TRACES})" in res.stderr


def test_lab_replicate_without_root_says_where_traces_are(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(commands, "checkout_traces", lambda: TRACES)
    res = invoke("replicate", "--out", "fresh")
    assert res.exit_code == 2 and res.stderr.count("\n") == 1, res.output
    assert res.stderr.startswith("statemine: error: no traces/ folder here: give ROOT")
    assert f"(statemine lab replicate {TRACES})" in res.stderr
    assert not (tmp_path / "fresh").exists()  # refused before any run


def test_the_checkout_traces_are_found_from_a_checkout():
    if not (TRACES / "mobile" / "runs").is_dir():
        pytest.skip("the shipped traces/ folders are absent (an sdist or wheel)")
    assert commands.checkout_traces() == TRACES.resolve()
