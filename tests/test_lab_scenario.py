"""Scenario files (statemine/lab/scenario.py): validation errors name file, line and key;
the grid and the run configs are what the file says, in the protocol's units."""

from __future__ import annotations

from pathlib import Path

import pytest

from statemine.errors import InputError
from statemine.lab import scenario as sc
from statemine.lab.path import PathModel

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "scenarios"
HEAD = '[scenario]\nname = "t"\n'


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(text, encoding="utf-8")
    return p


def test_grid_is_the_product_of_the_axes(tmp_path):
    s = sc.load(
        write(
            tmp_path,
            HEAD + 'runs = 3\nseed = 10\n[grid]\nstack = "aioquic@1.7.2"\n'
            'rtt_ms = [36, 112]\njitter_ms = [0, 10]\nprofile = ["desktop", "mobile"]\n',
        )
    )
    assert len(s.cells) == 8
    assert [(c["rtt_ms"], c["jitter_ms"], c["profile"]) for c in s.cells[:3]] == [
        (36.0, 0.0, "desktop"),
        (36.0, 0.0, "mobile"),
        (36.0, 10.0, "desktop"),
    ]
    assert s.runs_of(s.cells[0]) == [10, 11, 12]
    assert all(c["rate_mbps"] == sc.GRID_KEYS["rate_mbps"].default for c in s.cells)


def test_run_config_converts_units(tmp_path):
    s = sc.load(
        write(
            tmp_path,
            HEAD + '[grid]\nstack = "quic-go@v0.65.0"\nrate_mbps = 5\nrtt_ms = 112\n'
            'buffer_bytes = 30000\njitter_ms = 10\nloss = 0.01\nprofile = "mobile"\n'
            "read_rate_mbps = 8\nper_packet_cpu_ms = 0.25\nreordering_threshold = 10\n"
            "rate_schedule_mbps = [1, 5]\nobject_size_bytes = 5000\nobject_count = 200\n",
        )
    )
    cfg = sc.run_config(s.cells[0], seed=4, time_limit_s=60.0)
    down = cfg["path"]["down"]
    assert (cfg["implementation"], cfg["version"], cfg["seed"]) == ("quic-go", "v0.65.0", 4)
    assert down["rate_bps"] == 5e6 and down["buffer_bytes"] == 30000
    assert down["delay_s"] == pytest.approx(0.056) and cfg["path"]["up"][
        "delay_s"
    ] == pytest.approx(0.056)
    assert down["jitter_s"] == pytest.approx(0.010) and down["loss"] == 0.01
    assert down["rate_schedule"] == {"lo_bps": 1e6, "hi_bps": 5e6, "interval_s": 1.0}
    assert cfg["client"] == {"profile": "mobile", "read_rate_bps": 8e6, "per_packet_cpu_s": 0.00025}
    assert cfg["reordering_threshold"] == 10 and cfg["time_threshold"] is None
    assert cfg["objects"] == {"count": 200, "size_bytes": 5000}
    PathModel.from_config(cfg["path"], cfg["seed"])  # the path model accepts it


def test_default_buffer_is_one_bdp_at_least_30kb(tmp_path):
    s = sc.load(
        write(
            tmp_path, HEAD + '[grid]\nstack = "aioquic@1.7.2"\nrate_mbps = [5, 50]\nrtt_ms = 36\n'
        )
    )
    buffers = [sc.run_config(c, 1, 10)["path"]["down"]["buffer_bytes"] for c in s.cells]
    assert buffers == [30000, 225000]


def test_threshold_default_spelling(tmp_path):
    s = sc.load(
        write(
            tmp_path,
            HEAD + '[grid]\nstack = "aioquic@1.7.2"\nreordering_threshold = ["default", 10]\n',
        )
    )
    assert [c["reordering_threshold"] for c in s.cells] == [None, 10]


def test_run_ids_are_stable_and_distinct(tmp_path):
    s = sc.load(
        write(tmp_path, HEAD + 'runs = 2\n[grid]\nstack = "aioquic@1.7.2"\nrtt_ms = [36, 112]\n')
    )
    ids = [sc.run_id(sc.run_config(c, seed, 10)) for c in s.cells for seed in s.runs_of(c)]
    assert len(set(ids)) == 4
    again = sc.load(s.source)
    assert ids == [
        sc.run_id(sc.run_config(c, seed, 10)) for c in again.cells for seed in again.runs_of(c)
    ]


@pytest.mark.parametrize(
    "body, key, line",
    [
        ("[grid]\nrate_mbps = -5\n", "grid.rate_mbps", 4),
        ("[grid]\nloss = 1.5\n", "grid.loss", 4),
        ("[grid]\njitter_ms = [0, -1]\n", "grid.jitter_ms", 4),
        ("[grid]\nbogus = 1\n", "grid.bogus", 4),
        ('colour = "red"\n[grid]\n', "scenario.colour", 3),
        ('[grid]\nstack = "aioquic@9.9.9"\n', "grid.stack", 4),
        ('[grid]\nstack = "msquic@1.0"\n', "grid.stack", 4),
        ('[grid]\nstack = "aioquic"\n', "grid.stack", 4),
        ('[grid]\nprofile = "tablet"\n', "grid.profile", 4),
        ("[grid]\ngilbert = {p_gb = 0.1, p_bg = 3}\n", "grid.gilbert", 4),
        ("[grid]\nrate_schedule_mbps = [10, 5]\n", "grid.rate_schedule_mbps", 4),
        ("[grid]\nobject_count = 0\n", "grid.object_count", 4),
        ("[grid]\ntime_threshold = 0.5\n", "grid.time_threshold", 4),
        ("runs = 0\n[grid]\n", "scenario.runs", 3),
        ("[grid]\nrtt_ms = []\n", "grid.rtt_ms", 4),
        ("[grid]\nobject_count = 200\nobject_size_bytes = 10000000\n", "grid.object_size_bytes", 5),
        # issue 11 item 10: absurd values have documented ranges
        ("[grid]\nrate_mbps = 1e-300\n", "grid.rate_mbps", 4),
        ("[grid]\nrtt_ms = 1e300\n", "grid.rtt_ms", 4),
        ("time_limit_s = 1e308\n[grid]\n", "scenario.time_limit_s", 3),
        ("runs = 1000000000000\n[grid]\n", "scenario.runs", 3),
        ("[grid]\nreordering_threshold = 70000\n", "grid.reordering_threshold", 4),
        ("[grid]\nbuffer_bytes = 10000000000000\n", "grid.buffer_bytes", 4),
        # issue 10 "Bad input": cross traffic at load >= 1, a distribution with a negative mean
        ("[grid]\ncross_load = 1\n", "grid.cross_load", 4),
        ("[grid]\ncross_load = 0.2\ncross_on_off_ms = [-1, 10]\n", "grid.cross_on_off_ms", 5),
        ("[grid]\nper_packet_cpu_ms = -0.1\n", "grid.per_packet_cpu_ms", 4),
        ("[grid]\nread_rate_mbps = -3\n", "grid.read_rate_mbps", 4),
        ("[grid]\nper_packet_cpu_cv = -1\n", "grid.per_packet_cpu_cv", 4),
        ("[grid]\nread_rate_cv = 11\n", "grid.read_rate_cv", 4),
        ('[grid]\nlink_trace = "synthetic:nowhere"\n', "grid.link_trace", 4),
        ("[grid]\nlink_trace = 5\n", "grid.link_trace", 4),
    ],
)
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
    with pytest.raises(InputError, match=r"not valid TOML"):
        sc.load(write(tmp_path, "[scenario\n"))
    with pytest.raises(InputError, match=r"cannot read"):
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
    assert not (tmp_path / "out").exists()  # nothing written for a bad scenario
    res = CliRunner().invoke(
        main,
        [
            "lab",
            "run",
            str(EXAMPLES / "mobile.toml"),
            "--out",
            str(tmp_path / "o2"),
            "--only",
            "colour=red",
        ],
    )
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


def test_grid_size_is_capped_before_the_grid_is_built(tmp_path):
    """A 12-axis grid (10^12 cells) is refused at once, its size computed, not built."""
    import time

    axes = "".join(
        f"{k} = [{', '.join(str(v) for v in vals)}]\n"
        for k, vals in {
            "rate_mbps": range(1, 11),
            "rtt_ms": range(10, 20),
            "jitter_ms": range(10),
            "loss": [i / 100 for i in range(10)],
            "up_loss": [i / 100 for i in range(10)],
            "up_jitter_ms": range(10),
            "object_size_bytes": range(1000, 1010),
            "per_packet_cpu_ms": range(10),
            "read_rate_mbps": range(1, 11),
            "reordering_threshold": range(1, 11),
            "cross_load": [i / 20 for i in range(10)],
            "time_threshold": range(1, 11),
        }.items()
    )
    p = write(tmp_path, HEAD + "[grid]\n" + axes)
    t0 = time.perf_counter()
    with pytest.raises(InputError, match=r"1e\+12 cells .*at most 10000"):
        sc.load(p)
    assert time.perf_counter() - t0 < 5
    p = write(
        tmp_path,
        HEAD
        + "runs = 10000\n[grid]\nrtt_ms = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21]\n",
    )
    with pytest.raises(InputError, match=r"scenario.runs: 21 cells x 10000 runs"):
        sc.load(p)


def test_variability_keys_reach_the_run_config(tmp_path):
    s = sc.load(
        write(
            tmp_path,
            HEAD + '[grid]\nstack = "aioquic@1.7.2"\nrate_mbps = 10\ncross_load = 0.25\n'
            'cross_on_off_ms = [50, 150]\nprofile = "mobile"\nper_packet_cpu_ms = 0.2\n'
            "per_packet_cpu_cv = 0.5\nread_rate_mbps = 8\nread_rate_cv = 0.3\n",
        )
    )
    cfg = sc.run_config(s.cells[0], 1, 10.0)
    assert cfg["path"]["down"]["cross_traffic"] == {
        "load": 0.25,
        "packet_bytes": 1500,
        "mean_on_s": 0.05,
        "mean_off_s": 0.15,
    }
    assert cfg["path"]["up"]["cross_traffic"] is None
    assert cfg["client"] == {
        "profile": "mobile",
        "read_rate_bps": 8e6,
        "per_packet_cpu_s": 0.0002,
        "per_packet_cpu_cv": 0.5,
        "read_rate_cv": 0.3,
        "read_rate_interval_s": 0.1,
    }
    PathModel.from_config(cfg["path"], 1)
    # off at zero: no key appears
    plain = sc.run_config(
        sc.load(write(tmp_path, HEAD + '[grid]\nprofile = "mobile"\n')).cells[0], 1, 10.0
    )
    assert plain["path"]["down"]["cross_traffic"] is None
    assert "per_packet_cpu_cv" not in plain["client"] and "read_rate_cv" not in plain["client"]


def test_link_traces_from_a_file_and_a_profile(tmp_path):
    (tmp_path / "t.down").write_text("0\n0\n1\n2\n4\n")
    s = sc.load(
        write(
            tmp_path,
            HEAD + '[grid]\nlink_trace = ["t.down", "synthetic:verizon-lte-down"]\n'
            'up_link_trace = "synthetic:verizon-lte-up"\nrtt_ms = 40\n',
        )
    )
    assert set(s.link_traces) == {
        "t.down",
        "synthetic:verizon-lte-down",
        "synthetic:verizon-lte-up",
    }
    file_trace = s.link_traces["t.down"]
    assert file_trace.text == b"0\n0\n1\n2\n4\n" and file_trace.mean_rate_bps == pytest.approx(
        5 * 12000 / 0.004
    )
    cfg = sc.run_config(s.cells[0], 3, 10.0, s.link_traces)
    down = cfg["path"]["down"]
    assert down["link_trace"] == {
        "file": f"../../link-traces/{file_trace.file_name}",
        "sha256": file_trace.sha256,
        "offset_ms": None,
    }
    assert down["rate_bps"] == file_trace.mean_rate_bps
    assert down["buffer_bytes"] == max(30000, int(file_trace.mean_rate_bps * 0.040 / 8))
    up = cfg["path"]["up"]
    assert up["rate_bps"] == pytest.approx(s.link_traces["synthetic:verizon-lte-up"].mean_rate_bps)
    # the synthetic trace is the same on every load (its own fixed seed)
    assert (
        sc.load(s.source).link_traces["synthetic:verizon-lte-up"].sha256
        == s.link_traces["synthetic:verizon-lte-up"].sha256
    )


@pytest.mark.parametrize(
    "text, line, words",
    [
        (None, None, "cannot read the link trace"),
        ("", None, "empty link trace"),
        ("1\nfast\n", 2, "not a whole number"),
        ("3\n2\n", 2, "timestamps decrease"),
        ("0\n0\n", None, "every timestamp is 0"),
    ],
)
def test_bad_link_trace_names_the_trace_file_and_line_and_starts_no_run(
    tmp_path, text, line, words
):
    from click.testing import CliRunner

    from statemine.cli import main

    trace = tmp_path / "cell.down"
    if text is not None:
        trace.write_text(text)
    p = write(tmp_path, HEAD + '[grid]\nstack = "aioquic@1.7.2"\nlink_trace = "cell.down"\n')
    with pytest.raises(InputError) as info:
        sc.load(p)
    assert info.value.file == str(trace) and info.value.line == line and words in info.value.reason
    res = CliRunner().invoke(main, ["lab", "run", str(p), "--out", str(tmp_path / "out")])
    assert res.exit_code == 2 and str(trace) in res.output and "Traceback" not in res.output
    assert not (tmp_path / "out").exists()


def test_lab_honours_statemine_patches(tmp_path, monkeypatch):
    """A patch in $STATEMINE_PATCHES (e.g. one `patch port` made) is a valid stack."""
    import shutil

    root = Path(__file__).resolve().parents[1] / "instrument-patches"
    mine = tmp_path / "patches"
    shutil.copytree(root, mine)
    shutil.copytree(mine / "aioquic" / "1.7.2", mine / "aioquic" / "1.7.3")
    text = HEAD + '[grid]\nstack = "aioquic@1.7.3"\n'
    with pytest.raises(InputError, match=r"no instrument patch"):
        sc.load(write(tmp_path, text))
    monkeypatch.setenv("STATEMINE_PATCHES", str(mine))
    assert sc.load(write(tmp_path, text)).cells[0]["stack"] == "aioquic@1.7.3"
    assert "1.7.3" in sc.patched_versions("aioquic")


def test_aioquic_build_cache_is_keyed_by_the_patch(tmp_path, monkeypatch):
    """Two patches of one version build two trees (a ported patch never reuses a stale one)."""
    import json
    import shutil

    from statemine import patch as sm_patch
    from statemine.lab.runners import aioquic

    def fake_fetch(impl, version, dest):
        Path(dest).mkdir(parents=True)
        (Path(dest) / ".statemine-source.json").write_text(json.dumps({"python_path": "src"}))

    def fake_apply(impl, version, dest):
        (Path(dest) / ".statemine-patch.json").write_text("{}")

    monkeypatch.setattr(sm_patch, "fetch", fake_fetch)
    monkeypatch.setattr(sm_patch, "apply", fake_apply)
    root = Path(__file__).resolve().parents[1] / "instrument-patches"
    mine = tmp_path / "patches"
    shutil.copytree(root, mine)
    monkeypatch.setenv("STATEMINE_PATCHES", str(mine))
    a = aioquic.build("1.7.2", tmp_path / "cache")
    (mine / "aioquic" / "1.7.2" / "statemine.patch").write_text("changed\n")
    b = aioquic.build("1.7.2", tmp_path / "cache")
    assert a != b and a.parent.parent == b.parent.parent


def test_link_config_holds_every_link_key_and_round_trips():
    """link_config (the one builder of a run config's path direction) writes exactly the
    keys the path model reads, each value as given, and LinkConfig reads it back whole."""
    from statemine.lab.path import LinkConfig

    full = sc.link_config(
        5e6,
        30_000,
        0.018,
        jitter_s=0.002,
        loss=0.01,
        gilbert={"p_gb": 0.01, "p_bg": 0.3, "loss_good": 0.0, "loss_bad": 1.0},
        cross_traffic={"load": 0.2, "packet_bytes": 1500, "mean_on_s": 0.1, "mean_off_s": 0.2},
        link_trace={"file": "x.trace", "sha256": "0" * 64, "offset_ms": None},
    )
    assert tuple(full) == LinkConfig.KEYS
    assert LinkConfig.from_dict(full).to_dict() == full
    assert (full["rate_bps"], full["buffer_bytes"], full["delay_s"]) == (5e6, 30_000, 0.018)
    plain = sc.link_config(1e6, 1000, 0.0)
    assert LinkConfig.from_dict(plain) == LinkConfig(1e6, 1000, 0.0)
    assert [k for k, v in plain.items() if v is not None] == [
        "rate_bps",
        "buffer_bytes",
        "delay_s",
        "jitter_s",
        "loss",
    ]
    gilbert = {"p_gb": 0.1, "p_bg": 0.2}
    assert sc.link_config(1e6, 1, 0.0, gilbert=gilbert)["gilbert"] is not gilbert  # a copy


def test_run_configs_give_the_shipped_run_ids():
    """Every run folder of the shipped traces is named by the run id its scenario's
    run_config gives today (so resuming finds them, and the config builder did not drift)."""
    root = Path(__file__).resolve().parents[1]
    checked = 0
    for folder in sorted((root / "traces").iterdir()):
        scenario_file = root / "examples" / "scenarios" / f"{folder.name}.toml"
        if not (folder / "runs").is_dir() or not scenario_file.exists():
            continue
        s = sc.load(scenario_file)
        ids = {
            sc.run_id(sc.run_config(c, seed, s.time_limit_s, s.link_traces))
            for c in s.cells
            for seed in s.runs_of(c)
        }
        assert ids == {p.name for p in (folder / "runs").iterdir()}, folder.name
        checked += 1
    assert checked >= 10
