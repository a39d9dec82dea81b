"""The ``statemine lab`` commands as library calls (statemine/lab/commands.py): each call
gives what its command gives (the same files, the same numbers), and the numbers are
checked against values computed another way (the scenario file read with tomllib, the
grid keys table, the fake runner's own results)."""

from __future__ import annotations

import json
import math
import tomllib

import pandas as pd
import pytest
from click.testing import CliRunner
from test_lab_findings import MOBILE, varied  # noqa: F401 (a fixture)
from test_lab_grid import SCENARIO, FakeRunner

import statemine.lab
from statemine.cli import main
from statemine.lab import scenario as sc
from statemine.lab.commands import RERUN_FIELDS
from statemine.resources import data_dir


def invoke(*args, **kw):
    return CliRunner().invoke(main, ["lab", *map(str, args)], **kw)


@pytest.fixture
def fake(monkeypatch):
    """``runner_for`` gives a fake runner (each call a new one, as the real ones are modules)."""
    import statemine.lab.runners as runners

    monkeypatch.setattr(runners, "runner_for", lambda impl: FakeRunner(fail_rtt=40))


def _stable(table: pd.DataFrame) -> pd.DataFrame:
    """The results without the columns that depend on when or how fast it ran."""
    return table.drop(columns=[c for c in table.columns if "wall" in c or c.endswith("_at")])


def test_run_scenario_is_the_run_command(tmp_path, fake):
    (tmp_path / "fake.toml").write_text(SCENARIO)
    lib = statemine.lab.run_scenario(tmp_path / "fake.toml", tmp_path / "lib", jobs=1)
    res = invoke("run", tmp_path / "fake.toml", "--out", tmp_path / "cli")
    assert res.exit_code == 1, res.output  # a run failed (tests/test_lab_books.py)
    # the fake runner fails every run at rtt 40 ms: 2 of the 6 runs (3 rtts x 2 runs)
    assert (len(lib.table), lib.ok, len(lib.failures)) == (6, 4, 2)
    assert f"6 runs in {tmp_path / 'cli'}: 4 ok, 2 failed" in res.stdout
    for run_id, error in lib.failures:
        assert error == "virtual time limit reached (10 s)"
        assert f"failed {run_id}: {error}" in res.stderr
    cli = pd.read_csv(tmp_path / "cli" / "results.csv")
    pd.testing.assert_frame_equal(
        _stable(pd.read_csv(tmp_path / "lib" / "results.csv")), _stable(cli)
    )
    ok = cli[cli["ok"]]  # the fake runner's page-load time: 10 round trips
    assert (ok["plt_s"] == ok["rtt_ms"] / 100).all()
    assert sorted(p.name for p in (tmp_path / "lib" / "runs").iterdir()) == sorted(
        cli["run_id"].astype(str)
    )


def test_list_scenarios_counts_against_the_toml(tmp_path):
    frame = statemine.lab.list_scenarios()
    shipped = data_dir("examples/scenarios")
    assert frame.attrs["directory"] == str(shipped)
    assert list(frame["file"]) == sorted(p.name for p in shipped.glob("*.toml"))
    for row in frame.itertuples(index=False):
        doc = tomllib.loads((shipped / row.file).read_text())
        sizes = [len(v) if isinstance(v, list) else 1 for v in doc.get("grid", {}).values()]
        cells = math.prod(sizes)  # the grid is the product of its axes
        assert row.cells == cells, row.file
        assert row.runs == cells * doc["scenario"].get("runs", sc.load(shipped / row.file).runs)
    res = invoke("scenarios", shipped, "--wide")
    assert res.exit_code == 0, res.output
    for row in frame.itertuples(index=False):
        line = next(x for x in res.stdout.splitlines() if f" {row.file} " in x)
        assert f" {row.cells} " in line and f" {row.runs} " in line and row.name in line


def test_list_keys_is_the_keys_table_and_the_command():
    frame = statemine.lab.list_keys()
    assert list(frame["key"]) == list(sc.GRID_KEYS)
    for row in frame.itertuples(index=False):
        spec = sc.GRID_KEYS[row.key]
        assert row.default == ("-" if spec.default is None else str(spec.default))
        assert row.meaning == spec.doc
    res = invoke("keys", "--wide")
    assert res.exit_code == 0
    first = [line.split("│")[1].strip() for line in res.stdout.splitlines() if "│" in line]
    assert [k for k in first if k] == list(frame["key"])  # the first column, in order


def test_measure_findings_writes_what_the_command_writes(varied, tmp_path):  # noqa: F811
    root, _loaded = varied
    opts = ["--permutations", "199", "--bootstrap", "100", "--finding", "mobile-vs-desktop"]
    res = invoke("findings", root, *opts, "--csv", tmp_path / "cli.csv")
    assert res.exit_code == 0, res.output
    found = statemine.lab.measure_findings(
        root, ["mobile-vs-desktop"], n_perm=199, n_boot=100, csv=tmp_path / "lib.csv"
    )
    assert (tmp_path / "lib.csv").read_bytes() == (tmp_path / "cli.csv").read_bytes()
    assert found.findings == MOBILE
    assert set(found.verdicts["finding"]) == {"mobile-vs-desktop"}
    # the shares it prints, against the pooled shares of the generator's own numbers
    r = pd.read_csv(root / "mobile" / "results.csv")
    for row in found.verdicts.itertuples(index=False):
        impl = row.stack.split("@")[0]
        for side, share in (("desktop", row.share_a), ("mobile", row.share_b)):
            m = r[(r["impl"] == impl) & (r["profile"] == side)]
            assert share == pytest.approx(m["limited_s"].sum() / m["plt_s"].sum())
            assert f"{share:.1%}" in res.stdout


def test_measure_findings_errors_name_the_folder_or_the_finding(tmp_path):
    with pytest.raises(statemine.UsageError, match=str(tmp_path)):
        statemine.lab.measure_findings(tmp_path)
    with pytest.raises(statemine.UsageError, match="unknown finding 'nope'"):
        statemine.lab.measure_findings(tmp_path, ["nope"])


def test_rerun_is_the_rerun_command(tmp_path, fake):
    (tmp_path / "fake.toml").write_text(SCENARIO)
    run = statemine.lab.run_scenario(tmp_path / "fake.toml", tmp_path / "grid", jobs=1)
    run_id = run.table.loc[run.table["ok"].astype(bool), "run_id"].iloc[0]
    config = tmp_path / "grid" / "runs" / run_id / "config.json"
    result = statemine.lab.rerun(config, tmp_path / "lib")
    res = invoke("rerun", config, "--out", tmp_path / "cli")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == {k: result.get(k) for k in RERUN_FIELDS}
    rtt_ms = json.loads(config.read_text())["path"]["down"]["delay_s"] * 2000
    assert result["plt_s"] == pytest.approx(rtt_ms / 100)
    assert (tmp_path / "lib" / "run.log").read_text() == (tmp_path / "cli" / "run.log").read_text()
    (tmp_path / "bad.json").write_text("[1]")
    with pytest.raises(statemine.InputError, match="not a run config"):
        statemine.lab.rerun(tmp_path / "bad.json", tmp_path / "x")


def test_results_columns_are_one_list_that_imports_no_statistics():
    """The lab's results columns are the outcome columns' head (statemine/columns.py), and
    importing them loads neither scipy nor pandas (the lab writes them; outcomes reads)."""
    import subprocess
    import sys

    from statemine import outcomes
    from statemine.columns import OUTCOME_COLUMNS, RESULT_COLUMNS
    from statemine.lab import grid

    assert OUTCOME_COLUMNS[: len(RESULT_COLUMNS)] == RESULT_COLUMNS
    assert grid.RESULT_COLUMNS is RESULT_COLUMNS and outcomes.OUTCOME_COLUMNS is OUTCOME_COLUMNS
    code = "import sys, statemine.columns; print(sorted({'scipy', 'pandas', 'numpy'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_run_only_is_parsed_as_key_values(tmp_path, fake):
    (tmp_path / "fake.toml").write_text(SCENARIO)
    res = invoke("run", tmp_path / "fake.toml", "--out", tmp_path / "o", "--only", "rtt_ms")
    assert res.exit_code == 2 and "--only takes KEY=VALUE, not 'rtt_ms'" in res.stderr
    res = invoke("run", tmp_path / "fake.toml", "--out", tmp_path / "o", "--only", "rtt_ms = 20")
    assert res.exit_code == 0, res.output
    lib = statemine.lab.run_scenario(tmp_path / "fake.toml", tmp_path / "l", only={"rtt_ms": "20"})
    assert "2 runs in" in res.stdout and len(lib.table) == 2  # one cell, two runs
