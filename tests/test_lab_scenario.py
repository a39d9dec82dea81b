"""Scenario files (statemine/lab/scenario.py): validation errors name file, line and key;
the grid and the run configs are what the file says, in the protocol's units."""

from __future__ import annotations

from pathlib import Path

import pytest

from statemine.errors import InputError
from statemine.lab import scenario as sc
from statemine.lab.path import Path as NetPath

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "scenarios"
HEAD = '[scenario]\nname = "t"\n'


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(text, encoding="utf-8")
    return p


def test_grid_is_the_product_of_the_axes(tmp_path):
    s = sc.load(write(tmp_path, HEAD + 'runs = 3\nseed = 10\n[grid]\nstack = "aioquic@1.7.2"\n'
                      'rtt_ms = [36, 112]\njitter_ms = [0, 10]\nprofile = ["desktop", "mobile"]\n'))
    assert len(s.cells) == 8
    assert [(c["rtt_ms"], c["jitter_ms"], c["profile"]) for c in s.cells[:3]] == [
        (36.0, 0.0, "desktop"), (36.0, 0.0, "mobile"), (36.0, 10.0, "desktop")]
    assert s.runs_of(s.cells[0]) == [10, 11, 12]
    assert all(c["rate_mbps"] == sc.GRID_KEYS["rate_mbps"].default for c in s.cells)


def test_run_config_converts_units(tmp_path):
    s = sc.load(write(tmp_path, HEAD + '[grid]\nstack = "quic-go@v0.65.0"\nrate_mbps = 5\nrtt_ms = 112\n'
                      'buffer_bytes = 30000\njitter_ms = 10\nloss = 0.01\nprofile = "mobile"\n'
                      'read_rate_mbps = 8\nper_packet_cpu_ms = 0.25\nreordering_threshold = 10\n'
                      'rate_schedule_mbps = [1, 5]\nobject_size_bytes = 5000\nobject_count = 200\n'))
    cfg = sc.run_config(s.cells[0], seed=4, time_limit_s=60.0)
    down = cfg["path"]["down"]
    assert (cfg["implementation"], cfg["version"], cfg["seed"]) == ("quic-go", "v0.65.0", 4)
    assert down["rate_bps"] == 5e6 and down["buffer_bytes"] == 30000
    assert down["delay_s"] == pytest.approx(0.056) and cfg["path"]["up"]["delay_s"] == pytest.approx(0.056)
    assert down["jitter_s"] == pytest.approx(0.010) and down["loss"] == 0.01
    assert down["rate_schedule"] == {"lo_bps": 1e6, "hi_bps": 5e6, "interval_s": 1.0}
    assert cfg["client"] == {"profile": "mobile", "read_rate_bps": 8e6, "per_packet_cpu_s": 0.00025}
    assert cfg["reordering_threshold"] == 10 and cfg["time_threshold"] is None
    assert cfg["objects"] == {"count": 200, "size_bytes": 5000}
    NetPath.from_config(cfg["path"], cfg["seed"])  # the path model accepts it


def test_default_buffer_is_one_bdp_at_least_30kb(tmp_path):
    s = sc.load(write(tmp_path, HEAD + '[grid]\nstack = "aioquic@1.7.2"\nrate_mbps = [5, 50]\nrtt_ms = 36\n'))
    buffers = [sc.run_config(c, 1, 10)["path"]["down"]["buffer_bytes"] for c in s.cells]
    assert buffers == [30000, 225000]


def test_threshold_default_spelling(tmp_path):
    s = sc.load(write(tmp_path, HEAD + '[grid]\nstack = "aioquic@1.7.2"\nreordering_threshold = ["default", 10]\n'))
    assert [c["reordering_threshold"] for c in s.cells] == [None, 10]


def test_run_ids_are_stable_and_distinct(tmp_path):
    s = sc.load(write(tmp_path, HEAD + 'runs = 2\n[grid]\nstack = "aioquic@1.7.2"\nrtt_ms = [36, 112]\n'))
    ids = [sc.run_id(sc.run_config(c, seed, 10)) for c in s.cells for seed in s.runs_of(c)]
    assert len(set(ids)) == 4
    again = sc.load(s.source)
    assert ids == [sc.run_id(sc.run_config(c, seed, 10)) for c in again.cells for seed in again.runs_of(c)]


@pytest.mark.parametrize("body, key, line", [
    ('[grid]\nrate_mbps = -5\n', "grid.rate_mbps", 4),
    ('[grid]\nloss = 1.5\n', "grid.loss", 4),
    ('[grid]\njitter_ms = [0, -1]\n', "grid.jitter_ms", 4),
    ('[grid]\nbogus = 1\n', "grid.bogus", 4),
    ('colour = "red"\n[grid]\n', "scenario.colour", 3),
    ('[grid]\nstack = "aioquic@9.9.9"\n', "grid.stack", 4),
    ('[grid]\nstack = "msquic@1.0"\n', "grid.stack", 4),
    ('[grid]\nstack = "aioquic"\n', "grid.stack", 4),
    ('[grid]\nprofile = "tablet"\n', "grid.profile", 4),
    ('[grid]\ngilbert = {p_gb = 0.1, p_bg = 3}\n', "grid.gilbert", 4),
    ('[grid]\nrate_schedule_mbps = [10, 5]\n', "grid.rate_schedule_mbps", 4),
    ('[grid]\nobject_count = 0\n', "grid.object_count", 4),
    ('[grid]\ntime_threshold = 0.5\n', "grid.time_threshold", 4),
    ('runs = 0\n[grid]\n', "scenario.runs", 3),
    ('[grid]\nrtt_ms = []\n', "grid.rtt_ms", 4),
    ('[grid]\nobject_count = 200\nobject_size_bytes = 10000000\n', "grid.object_size_bytes", 5),
])
def test_bad_values_name_file_line_and_key(tmp_path, body, key, line):
    p = write(tmp_path, HEAD + body)
    with pytest.raises(InputError) as info:
        sc.load(p)
    err = info.value
    assert err.file == str(p) and err.line == line
    assert err.reason.startswith(key + ":")


def test_version_without_patch_lists_the_patched_ones(tmp_path):
    with pytest.raises(InputError, match=r"no instrument patch .*1\.7\.2"):
        sc.load(write(tmp_path, HEAD + '[grid]\nstack = "aioquic@0.0.1"\n'))


def test_toml_syntax_error_and_missing_file(tmp_path):
    with pytest.raises(InputError, match="not valid TOML"):
        sc.load(write(tmp_path, "[scenario\n"))
    with pytest.raises(InputError, match="cannot read"):
        sc.load(tmp_path / "absent.toml")
    with pytest.raises(InputError, match=r"\[scenario\]"):
        sc.load(write(tmp_path, "[grid]\n"))


def test_shipped_scenarios_are_valid():
    files = sorted(EXAMPLES.glob("*.toml"))
    assert len(files) >= 4
    for f in files:
        s = sc.load(f)
        assert s.cells and s.name


def test_cli_reports_a_bad_scenario_in_one_line(tmp_path):
    from click.testing import CliRunner

    from statemine.cli import main

    p = write(tmp_path, HEAD + '[grid]\nstack = "aioquic@1.7.2"\nloss = 2\n')
    res = CliRunner().invoke(main, ["lab", "run", str(p), "--out", str(tmp_path / "out")])
    assert res.exit_code == 2
    assert f"{p}:5: grid.loss: is a probability" in res.output
    assert not (tmp_path / "out").exists()           # nothing written for a bad scenario
    res = CliRunner().invoke(main, ["lab", "run", str(EXAMPLES / "mobile.toml"), "--out",
                                    str(tmp_path / "o2"), "--only", "colour=red"])
    assert res.exit_code == 2 and "not a grid key" in res.output
    assert not (tmp_path / "o2").exists()


def test_cli_lists_scenarios_and_keys():
    from click.testing import CliRunner

    from statemine.cli import main

    res = CliRunner().invoke(main, ["lab", "scenarios"])
    assert res.exit_code == 0 and "jitter.toml" in res.output and "mobile" in res.output
    res = CliRunner().invoke(main, ["lab", "keys"])
    assert res.exit_code == 0
    assert all(key in res.output for key in ("rate_mbps", "jitter_ms", "reordering_threshold"))
