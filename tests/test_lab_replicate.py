"""``statemine lab replicate`` (statemine/lab/replicate.py, lab/commands.py) with a fake,
fast runner: fresh seeds disjoint from the shipped ones, only the compared cells run,
the shipped and fresh numbers against the fake's own shares, the library call against
the command, bad input in one line; and (slow) one shipped finding replicated by the
real quic-go stacks."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from statemine.cli import main
from statemine.errors import UsageError
from statemine.lab import findings, grid, replicate
from statemine.lab.commands import replicate_findings

ADAPTIVE = tuple(f for f in findings.FINDINGS if f.name == "quic-go-adaptive-reordering")
CLUSTERS = (0.01, 0.20)


def recovery_share(version: str, jitter_s: float, seed: int) -> float:
    """The fake's share of Recovery: v0.65.0 under jitter in two clusters by seed."""
    if jitter_s == 0:
        return 0.21 + 0.001 * (seed % 7)
    if version == "v0.63.0":
        return 0.28 + 0.002 * (seed % 9)
    return CLUSTERS[seed % 2] + 0.001 * (seed % 5)


class ShareRunner:
    """Writes one server connection: SlowStart, then Recovery for the share of
    :func:`recovery_share`, then Close at the page-load time (1 + seed / 100 s)."""

    def __init__(self) -> None:
        self.seeds: list[int] = []

    def build(self, version, cache_dir):
        return None

    def run(self, config, cache_dir=None):
        seed, version = config["seed"], config["version"]
        self.seeds.append(seed)
        share = recovery_share(version, config["path"]["down"]["jitter_s"], seed)
        plt = 1.0 + seed / 100
        with open(config["log_path"], "w") as f:
            f.write(f"STATEMINE t=0.0 conn=c{seed} role=server state=SlowStart\n")
            f.write(f"STATEMINE t={plt * (1 - share)} conn=c{seed} role=server state=Recovery\n")
            f.write(f"STATEMINE t={plt} conn=c{seed} role=server event=Close\n")
        return {
            "ok": True,
            "error": None,
            "plt_s": plt,
            "bytes": 1,
            "throughput_bps": 8 / plt,
            "retransmissions": 0,
            "packets_sent": 10,
            "packets_dropped": 0,
            "virtual_time_s": plt,
            "wall_time_s": 0.01,
        }


def pooled(version: str, seeds: range) -> float:
    """The pooled share of Recovery of v0.x under jitter over ``seeds``, from the fake's formula."""
    plt = np.array([1.0 + s / 100 for s in seeds])
    share = np.array([recovery_share(version, 0.01, s) for s in seeds])
    return float((share * plt).sum() / plt.sum())


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> Path:
    """A root with the shipped quic-go-versions scenario run by the fake (seeds 1-20)."""
    root = tmp_path_factory.mktemp("shipped")
    spec = replicate._spec("quic-go-versions")
    grid.run_grid(
        spec, root / "quic-go-versions", runners={"quic-go": ShareRunner()}, progress=False, jobs=2
    )
    return root


def test_plan_runs_only_the_compared_cells_on_fresh_seeds(shipped):
    (batch,) = replicate.plan(shipped, ADAPTIVE, runs=20)
    assert batch.folder == "quic-go-versions"
    assert batch.shipped_seeds == tuple(range(1, 21))
    assert batch.seeds == (1001, 1020)
    # the compared conditions are the jitter cells of both versions: 2 of the 4 cells
    assert sorted((c["stack"], c["jitter_ms"]) for c in batch.scenario.cells) == [
        ("quic-go@v0.63.0", 10.0),
        ("quic-go@v0.65.0", 10.0),
    ]
    # each kept cell holds the runs the condition selects from the shipped traces
    ts = findings.load_scenarios(shipped, ADAPTIVE)["quic-go-versions"][0]
    for where in replicate.compared_conditions(ADAPTIVE[0]):
        labels = findings.select(ts, where).traces
        cells = [c for c in batch.scenario.cells if replicate.cell_matches(c, where)]
        stacks = set(labels["implementation"].astype(str) + "@" + labels["version"].astype(str))
        assert len(cells) == 1 and stacks == {cells[0]["stack"]}
        assert set(labels["jitter_ms"].astype(str)) == {"10"} == {where["jitter_ms"]}
    with pytest.raises(UsageError, match=r"quic-go-versions: seed 15 .* choose --seed past 20"):
        replicate.plan(shipped, ADAPTIVE, runs=20, seed=15)
    with pytest.raises(UsageError, match="no shipped runs"):
        replicate.plan(shipped / "nowhere", ADAPTIVE)


def test_replicate_compares_the_batches_with_the_fakes_numbers(shipped, tmp_path):
    runner = ShareRunner()
    rep = replicate_findings(
        shipped,
        tmp_path / "fresh",
        ["quic-go-adaptive-reordering"],
        runs=20,
        n_perm=199,
        n_boot=300,
        runners={"quic-go": runner},
        csv=tmp_path / "lib.csv",
    )
    assert sorted(set(runner.seeds)) == list(range(1001, 1021)) and len(runner.seeds) == 40
    assert rep.seeds == (1001, 1020) and rep.failures == () and rep.skipped == ()
    (row,) = rep.comparisons.to_dict("records")
    d_shipped = pooled("v0.65.0", range(1, 21)) - pooled("v0.63.0", range(1, 21))
    d_fresh = pooled("v0.65.0", range(1001, 1021)) - pooled("v0.63.0", range(1001, 1021))
    assert row["delta_shipped"] == pytest.approx(d_shipped)
    assert row["delta_fresh"] == pytest.approx(d_fresh)
    assert row["inside"] == (row["lo_shipped"] <= d_fresh <= row["hi_shipped"])
    assert row["inside_t"] == (row["lo_shipped_t"] <= d_fresh <= row["hi_shipped_t"])
    assert row["lo_fresh_t"] < d_fresh < row["hi_fresh_t"]
    assert row["runs_shipped"] == row["runs_fresh"] == "20 / 20"
    # z: the gap over the delta-method SE of four independent pooled shares
    assert math.isfinite(row["z_between"]) and row["runs_for_2pp"] > 20
    # the clustered condition is found clustered, its modes near the fake's clusters
    conds = rep.conditions.set_index("condition")
    m = conds.loc["v0.65.0, 10 ms jitter", "modes_shipped"]
    assert m.clustered and all(min(abs(c - v) for c in CLUSTERS) < 0.03 for v in m.locations)
    assert not conds.loc["v0.63.0, 10 ms jitter", "clustered"]
    # the command prints the same, from the same call
    shutil.rmtree(tmp_path / "fresh")
    import statemine.lab.runners as runners

    mp = pytest.MonkeyPatch()
    mp.setattr(runners, "runner_for", lambda impl: ShareRunner())
    try:
        res = CliRunner().invoke(
            main,
            [
                *("lab", "replicate", str(shipped), "--out", str(tmp_path / "fresh")),
                *("--no-progress", "--finding", "quic-go-adaptive-reordering"),
                *(
                    "--permutations",
                    "199",
                    "--bootstrap",
                    "300",
                    "--csv",
                    str(tmp_path / "cli.csv"),
                ),
            ],
        )
    finally:
        mp.undo()
    assert res.exit_code == 0, res.output
    assert (tmp_path / "cli.csv").read_bytes() == (tmp_path / "lib.csv").read_bytes()
    assert "seeds 1001-1020" in res.stdout
    assert "clustered: " in res.stdout
    n = replicate.decimals(next(replicate.records(rep.comparisons)))
    assert f"{100 * d_fresh:+.{n}f}" in res.stdout


def test_replicate_refuses_bad_input_in_one_line(shipped, tmp_path):
    res = CliRunner().invoke(
        main,
        [
            *("lab", "replicate", str(shipped), "--out", str(tmp_path / "o")),
            *("--first-seed", "3", "--finding", "quic-go-adaptive-reordering"),
        ],
    )
    assert res.exit_code == 2
    assert "seed 3 of the fresh batch 3-22 was used by a shipped run" in res.output
    assert "Traceback" not in res.output and not (tmp_path / "o").exists()
    res = CliRunner().invoke(
        main,
        [
            *("lab", "replicate", str(shipped), "--out", str(tmp_path / "o")),
            *("--finding", "tcp-mobile-vs-desktop"),
        ],
    )
    assert res.exit_code == 2 and "real time" in res.output


def test_figures_are_shown_to_the_decimals_that_replicate():
    row = {
        "delta_shipped": -0.176,
        "delta_fresh": -0.143,
        "lo_shipped_t": -0.22,
        "hi_shipped_t": -0.13,
    }
    assert replicate.decimals(type("R", (), row)) == 0
    row = {
        "delta_shipped": 0.108,
        "delta_fresh": 0.106,
        "lo_shipped_t": 0.102,
        "hi_shipped_t": 0.114,
    }
    assert replicate.decimals(type("R", (), row)) == 1


@pytest.mark.slow
def test_a_fresh_batch_of_quic_go_lands_inside_the_shipped_interval(tmp_path):
    """Finding 3 (quic-go v0.63.0 -> v0.65.0 under jitter) on 20 fresh seeds (1001-1020):
    the real stacks, the same verdict, the fresh difference inside the shipped interval."""
    root = Path(__file__).parent.parent / "traces"
    if not (root / "quic-go-versions" / "runs").is_dir():
        pytest.skip("traces/quic-go-versions is not in this checkout")
    pytest.importorskip("statemine.lab.runners.quicgo")
    rep = replicate_findings(root, tmp_path, ["quic-go-adaptive-reordering"], runs=20, jobs=2)
    assert rep.failures == ()
    (row,) = rep.comparisons.to_dict("records")
    assert row["verdict_shipped"] == row["verdict_fresh"] == "reproduced"
    assert row["inside"] and row["inside_t"]
    assert abs(row["z_between"]) < 2
