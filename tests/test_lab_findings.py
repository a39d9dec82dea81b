"""The paper's findings on the shipped lab traces (traces/): the direction and a
meaningful size of each effect, and the findings arithmetic checked against the raw logs."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from statemine import units
from statemine.cli import main
from statemine.compare import diff
from statemine.lab import findings
from statemine.traces import TraceSet, load, save

TRACES = Path(__file__).resolve().parents[1] / "traces"
MOBILE = tuple(f for f in findings.FINDINGS if f.name == "mobile-vs-desktop")
#: The findings of the virtual-time lab alone (QUIC); the kernel-TCP ones are tested apart.
QUIC_ONLY = {
    "mobile-vs-desktop",
    "jitter-recovery",
    "quic-go-adaptive-reordering",
    "cellular-mobile-vs-desktop",
    "quiche-cubic-recovery-under-loss",
    "quiche-bbr-startup-vs-size",
    "quiche-bbr-probebw-vs-size",
    "quiche-jitter-recovery",
}


# -- constructed lab folders: every printed number against a value computed another way ----
def lab_folder(root: Path, runs: int, *, noise: float, seed: int = 0) -> Path:
    """A ``statemine lab run``-shaped folder for the mobile scenario: per stack and profile,
    ``runs`` runs of one server trace SlowStart -> CongestionAvoidance -> ApplicationLimited.
    quic-go's mobile server is ApplicationLimited 60% of the time (desktop 10%); aioquic's
    10% on both. Each duration is scaled by ``1 + noise * U(-1, 1)`` (0: identical runs)."""
    rng = np.random.default_rng(seed)
    folder = root / "mobile"
    (folder / "runs").mkdir(parents=True)
    (folder / "manifest.json").write_text("{}")
    results = []
    for impl, version in (("aioquic", "1.7.2"), ("quic-go", "v0.65.0")):
        for profile in ("desktop", "mobile"):
            limited = 0.6 if impl == "quic-go" and profile == "mobile" else 0.1
            for i in range(runs):
                run_id = f"{impl}-{profile}-{i}"
                d = {
                    "SlowStart": 0.2,
                    "CongestionAvoidance": 0.8 - limited,
                    "ApplicationLimited": limited,
                }
                t, rows = 0.0, list[dict[str, Any]]()
                for state, seconds in d.items():
                    rows.append(
                        {"trace": f"{run_id}#1/server", "time": t, "kind": "state", "state": state}
                    )
                    t += seconds * (1 + noise * rng.uniform(-1, 1))
                rows.append(
                    {"trace": f"{run_id}#1/server", "time": t, "kind": "event", "state": "Close"}
                )
                labels = pd.DataFrame(
                    {
                        "trace": [f"{run_id}#1/server"],
                        "role": "server",
                        "run_id": run_id,
                        "implementation": impl,
                        "version": version,
                        "profile": profile,
                    }
                )
                (folder / "runs" / run_id).mkdir()
                save(
                    TraceSet.from_events(pd.DataFrame(rows), labels),
                    folder / "runs" / run_id / "traces.parquet",
                )
                results.append(
                    {
                        "run_id": run_id,
                        "plt_s": t,
                        "retransmissions": 0,
                        "packets_dropped": 0,
                        "limited_s": t - (rows[2]["time"]),
                        "impl": impl,
                        "profile": profile,
                    }
                )
    pd.DataFrame(results).to_csv(folder / "results.csv", index=False)
    return root


def pooled_share(root: Path, impl: str, profile: str) -> float:
    """The pooled ApplicationLimited share from the generator's own numbers (results.csv):
    seconds limited over seconds in all, summed over the runs."""
    r = pd.read_csv(root / "mobile" / "results.csv")
    r = r[(r["impl"] == impl) & (r["profile"] == profile)]
    return r["limited_s"].sum() / r["plt_s"].sum()


@pytest.fixture(scope="module")
def varied(tmp_path_factory) -> tuple[Path, dict]:
    """20 varied runs per stack and profile (built and read once: 80 small trace sets)."""
    root = lab_folder(tmp_path_factory.mktemp("lab"), 20, noise=0.3)
    return root, findings.load_scenarios(root, MOBILE)


def test_assess_reproduces_with_varied_runs_and_names_the_known_cause(varied):
    root, loaded = varied
    table = findings.assess(root, MOBILE, n_perm=999, n_boot=500, loaded=loaded).set_index("stack")
    assert list(table.columns) == [c for c in findings.ASSESS_COLUMNS if c != "stack"]
    qg, aq = table.loc["quic-go@v0.65.0"], table.loc["aioquic@1.7.2"]
    for row, impl in ((qg, "quic-go"), (aq, "aioquic")):
        assert row["share_a"] == pytest.approx(pooled_share(root, impl, "desktop"))
        assert row["share_b"] == pytest.approx(pooled_share(root, impl, "mobile"))
        assert row["delta"] == pytest.approx(row["share_b"] - row["share_a"])
        assert row["runs_a"] == row["runs_b"] == 20 and row["distinct_a"] == row["distinct_b"] == 20
        assert not row["pseudo_replicates"] and not row["underpowered"]
        assert row["min_p_holm"] == pytest.approx(
            3 / 1000
        )  # Monte Carlo floor 1 / (999 + 1), 3 states
        assert row["delta_lo"] <= row["delta"] <= row["delta_hi"]
    # quic-go: perfectly separated sides, so no random relabelling is as extreme: p = 1 / 1000
    assert qg["p_value"] == pytest.approx(1 / 1000) and qg["p_holm"] < 0.01
    assert qg["reproduced"] and qg["verdict"] == "reproduced" and qg["known"] == ""
    assert (
        not aq["reproduced"] and aq["p_holm"] >= 0.01 and aq["known"].startswith("aioquic grants")
    )
    # the same numbers as statemine.diff on the same selections
    qgo = findings.select(loaded["mobile"][0], {"implementation": "quic-go"})
    d = diff(
        findings.select(qgo, {"profile": "desktop"}),
        findings.select(qgo, {"profile": "mobile"}),
        label_a="desktop",
        label_b="mobile",
        n_perm=999,
        n_boot=500,
        alpha=0.01,
        interval="studentized",  # the findings' interval (findings.INTERVAL), not diff's default
    ).states.set_index("state")
    al = d.loc["ApplicationLimited"]
    assert (al["delta_lo"], al["delta_hi"], al["p_holm"]) == pytest.approx(
        (qg["delta_lo"], qg["delta_hi"], qg["p_holm"])
    )


def test_assess_refuses_identical_runs(tmp_path):
    root = lab_folder(tmp_path, 3, noise=0.0)
    table = findings.assess(root, MOBILE, n_perm=999, n_boot=100).set_index("stack")
    qg = table.loc["quic-go@v0.65.0"]
    assert (
        qg["delta"] == pytest.approx(0.5) and qg["pseudo_replicates"] and qg["interval_collapsed"]
    )
    assert qg["underpowered"] and qg["min_p_holm"] == pytest.approx(min(1, 3 * 2 / 20))
    assert qg["distinct_a"] == qg["distinct_b"] == 1 and not qg["reproduced"]
    assert qg["verdict"] == "not reproduced: identical runs; underpowered (p >= 0.3); p 0.3 >= 0.01"


def test_cli_prints_each_number_of_the_table(varied, tmp_path):
    root, loaded = varied
    out = tmp_path / "f.csv"
    res = CliRunner().invoke(
        main,
        [
            "lab",
            "findings",
            str(root),
            "--csv",
            str(out),
            "--permutations",
            "999",
            "--bootstrap",
            "300",
        ],
        env={"COLUMNS": "220"},
    )
    assert res.exit_code == 0, res.output
    table = pd.read_csv(out, keep_default_na=False)
    ref = findings.assess(root, MOBILE, n_perm=999, n_boot=300, loaded=loaded)
    assert np.allclose(table["p_holm"], ref["p_holm"]) and list(table["verdict"]) == list(
        ref["verdict"]
    )
    for r in ref.itertuples():
        line = next(
            ln for ln in res.output.splitlines() if ln.startswith(f"│ {r.stack}") and "->" in ln
        )
        for text in (
            f"{r.share_a:.1%}",
            f"{r.share_b:.1%}",
            f"{r.p_holm:.2g}",
            # whole points when the interval's half-width is a point or more, else tenths
            "{0:+.{n}f} [{1:+.{n}f}, {2:+.{n}f}] pp".format(
                100 * r.delta,
                100 * r.delta_lo,
                100 * r.delta_hi,
                n=0 if r.delta_hi - r.delta_lo >= 0.02 else 1,
            ),
            f"{r.runs_a} ({r.distinct_a}) / {r.runs_b} ({r.distinct_b})",
        ):
            assert text in line, (text, line)
    # the condition table: shares from the generator's numbers, PLT the mean of results.csv by hand
    results = pd.read_csv(root / "mobile" / "results.csv")
    for impl, stack in (("aioquic", "aioquic@1.7.2"), ("quic-go", "quic-go@v0.65.0")):
        for profile in ("desktop", "mobile"):
            line = next(
                ln
                for ln in res.output.splitlines()
                if ln.startswith(f"│ {stack}") and f"│ {profile} " in ln and "->" not in ln
            )
            plt = results.loc[(results["impl"] == impl) & (results["profile"] == profile), "plt_s"]
            assert (
                f"{pooled_share(root, impl, profile):.1%}" in line
                and units.seconds(sum(plt) / len(plt)) in line
            ), line
    assert "quic-go@v0.65.0: known cause" not in res.output
    assert "aioquic@1.7.2: known cause: aioquic grants flow-control credit" in " ".join(
        res.output.split()
    )
    assert (
        "1 of 2 comparisons reproduced at p < 0.01 in the paper's direction; 1 not reproduced for a "
        "documented cause" in " ".join(res.output.split())
    )


def test_plt_columns_are_the_runs_means_and_welch(varied):
    """plt_a / plt_b: the mean PLT of each condition's runs from results.csv; plt_p: Welch's
    two-sided t-test on them, computed here with scipy."""
    from scipy import stats

    root, loaded = varied
    ref = findings.assess(root, MOBILE, n_perm=99, n_boot=20, loaded=loaded)
    results = pd.read_csv(root / "mobile" / "results.csv")
    for r in ref.itertuples():
        impl = r.stack.split("@")[0]
        a = results.loc[(results["impl"] == impl) & (results["profile"] == "desktop"), "plt_s"]
        b = results.loc[(results["impl"] == impl) & (results["profile"] == "mobile"), "plt_s"]
        assert r.plt_a == pytest.approx(a.mean()) and r.plt_b == pytest.approx(b.mean())
        assert r.plt_p == pytest.approx(stats.ttest_ind(b, a, equal_var=False).pvalue)


def test_a_finding_pools_folders_joined_with_plus(tmp_path):
    """``scenario = "x+y"`` reads both folders: the conditions select across them, and the
    finding is left out while one folder is missing."""
    import shutil

    root = lab_folder(tmp_path, 3, noise=0.2)
    (root / "other").mkdir()
    shutil.move(str(root / "mobile" / "runs"), str(root / "other" / "runs"))
    (root / "mobile" / "runs").mkdir()
    results = pd.read_csv(root / "mobile" / "results.csv")
    for name, impl in (("mobile", "aioquic"), ("other", "quic-go")):
        for run in (root / "other" / "runs").glob(f"{impl}-*"):
            shutil.move(str(run), str(root / name / "runs" / run.name))
        results[results["impl"] == impl].to_csv(root / name / "results.csv", index=False)
    (root / "other" / "manifest.json").write_text("{}")
    pooled = findings.Finding(
        "pooled",
        "mobile+other",
        "ApplicationLimited",
        "test",
        (
            findings.Condition(
                "aioquic mobile", {"implementation": "aioquic", "profile": "mobile"}
            ),
            findings.Condition(
                "quic-go mobile", {"implementation": "quic-go", "profile": "mobile"}
            ),
        ),
        (findings.Comparison("aioquic mobile", "quic-go mobile", "up"),),
        per_stack=False,
    )
    table = findings.evaluate(root, (pooled,))
    assert list(table["runs"]) == [3, 3]
    expected = []
    for name in ("mobile", "other"):  # aioquic, then quic-go
        r = pd.read_csv(root / name / "results.csv")
        r = r[r["profile"] == "mobile"]
        expected.append(r["limited_s"].sum() / r["plt_s"].sum())
    assert table["share"].tolist() == pytest.approx(expected)
    missing = findings.Finding("gone", "mobile+absent", "Recovery", "", pooled.conditions)
    assert findings.evaluate(root, (missing,)).empty


def test_cli_markdown_is_the_library_markdown_unwrapped(varied):
    root, _loaded = varied
    res = CliRunner().invoke(
        main,
        ["lab", "findings", str(root), "--markdown", "--permutations", "999", "--bootstrap", "300"],
        env={"COLUMNS": "60"},
    )
    assert res.exit_code == 0, res.output
    verdicts, conditions = findings.measure(root, MOBILE, n_perm=999, n_boot=300)
    block = findings.markdown(verdicts, conditions, "mobile-vs-desktop")
    assert block in res.output and "| quic-go@v0.65.0 | desktop -> mobile (up) |" in block
    assert block.count("\n[1] aioquic@1.7.2: known cause: aioquic grants") == 1


def test_verdict_reasons():
    base = {
        "p_holm": 1e-3,
        "delta": 0.2,
        "direction": "up",
        "pseudo_replicates": False,
        "underpowered": False,
        "min_p_holm": 1e-4,
    }
    assert findings.verdict(base, alpha=0.01) == (True, "reproduced")
    assert findings.verdict({**base, "direction": "down"}, alpha=0.01) == (
        False,
        "not reproduced: opposite direction",
    )
    assert findings.verdict({**base, "p_holm": 0.01}, alpha=0.01) == (
        False,
        "not reproduced: p 0.01 >= 0.01",
    )
    assert not findings.verdict({**base, "pseudo_replicates": True}, alpha=0.01)[0]


@pytest.fixture(scope="module")
def loaded():
    return findings.load_scenarios(TRACES)


@pytest.fixture(scope="module")
def table(loaded) -> pd.DataFrame:
    return findings.evaluate(TRACES, loaded=loaded)


def row(table, finding, stack, condition) -> pd.Series:
    sel = table[
        (table["finding"] == finding)
        & (table["stack"] == stack)
        & (table["condition"] == condition)
    ]
    assert len(sel) == 1, (finding, stack, condition)
    r = sel.iloc[0]
    assert r["runs"] >= 20, "each shipped condition has at least 20 runs"
    return r


def test_every_finding_has_its_traces(table):
    assert set(table["finding"]) == {f.name for f in findings.FINDINGS}


# -- the findings on the shipped traces, through statemine's own statistics (issue 10) ------
#: (finding, stack, condition B) -> True: reproduced at p (Holm) < 0.01 in the paper's
#: direction; else the start of the verdict and of the documented cause (docs/findings.md).
EXPECTED = {
    ("mobile-vs-desktop", "aioquic@1.7.2", "mobile"): (
        "not reproduced",
        "aioquic grants flow-control credit",
    ),
    ("mobile-vs-desktop", "quic-go@v0.65.0", "mobile"): True,
    **{
        ("jitter-recovery", stack, b): True
        for stack in ("aioquic@1.7.2", "quic-go@v0.63.0")
        for b in (
            "10 ms jitter, reordering threshold 3",
            "10 ms jitter, reordering threshold 10",
            "10 ms jitter, reordering 10 + time threshold 1.5",
        )
    },
    ("quic-go-adaptive-reordering", "quic-go", "v0.65.0, 10 ms jitter"): True,
    # the question no paper asked: no effect either way, the interval tight around 0
    ("cellular-mobile-vs-desktop", "aioquic@1.7.2", "mobile"): ("no effect", ""),
    ("cellular-mobile-vs-desktop", "quic-go@v0.65.0", "mobile"): ("no effect", ""),
    # quiche (docs/findings.md sections 8-10)
    ("quiche-cubic-recovery-under-loss", "quiche@0.30.0", "CUBIC, 10 MB, 1% loss"): True,
    ("quiche-cubic-recovery-under-loss", "quiche@0.30.0", "CUBIC, 10 MB, 5% loss"): True,
    ("quiche-bbr-startup-vs-size", "quiche@0.30.0", "BBR2, 10 MB"): True,
    ("quiche-bbr-probebw-vs-size", "quiche@0.30.0", "BBR2, 10 MB"): True,
    # the jitter questions: jitter lowers quiche's share; both quic-go versions spend more
    ("quiche-jitter-recovery", "quic-go+quiche", "quiche, 10 ms jitter"): ("effect: down", ""),
    ("quiche-jitter-recovery", "quic-go+quiche", "quic-go v0.63.0, 10 ms jitter"): (
        "effect: up",
        "",
    ),
    ("quiche-jitter-recovery", "quic-go+quiche", "quic-go v0.65.0, 10 ms jitter"): (
        "effect: up",
        "",
    ),
}


@pytest.fixture(scope="module")
def verdicts(loaded) -> pd.DataFrame:
    # the command's defaults (9999 relabellings, 2000 resamples), with --why as in
    # docs/findings.md: each comparison through statemine.explain (the same diff)
    return findings.assess(TRACES, loaded=loaded, why=True)


def test_why_leaves_the_shipped_comparisons_unchanged(verdicts, loaded):
    """docs/findings.md's tables without the why column are `lab findings` without --why."""
    pd.testing.assert_frame_equal(
        verdicts.drop(columns="why"), findings.assess(TRACES, loaded=loaded)
    )


def test_each_finding_at_p_001_in_the_papers_direction_or_its_documented_cause(verdicts):
    quic = verdicts[verdicts["finding"].isin(QUIC_ONLY)]
    assert {(r.finding, r.stack, r.b) for r in quic.itertuples()} == set(EXPECTED)
    for r in quic.itertuples():
        # at least 20 runs a side, and they differ: no two runs give the same state profile
        assert min(r.runs_a, r.runs_b) >= 20 and (r.distinct_a, r.distinct_b) == (
            r.runs_a,
            r.runs_b,
        ), r
        assert not r.pseudo_replicates and not r.interval_collapsed and not r.underpowered, r
        assert r.min_p_holm < 0.01
        expected = EXPECTED[(r.finding, r.stack, r.b)]
        if expected is True:
            sign = 1 if r.direction == "up" else -1
            assert r.reproduced and r.verdict == "reproduced" and r.p_holm < 0.01, r
            assert sign * r.delta_lo > 0 and sign * r.delta_hi > 0, r  # the interval excludes 0
        elif expected[0].startswith("effect"):  # a question answered: an effect, p < 0.01
            assert r.reproduced and r.verdict == expected[0] and r.p_holm < 0.01, r
            assert r.delta_lo * r.delta_hi > 0 and r.delta_lo * r.delta > 0, r  # excludes 0
        else:
            assert not r.reproduced and r.verdict.startswith(expected[0]) and r.p_holm >= 0.01, r
            assert r.known.startswith(expected[1]), r
            assert r.delta_lo < 0 < r.delta_hi and abs(r.delta) < 0.01, (
                r
            )  # no effect: 0 inside a tight interval


def test_reproduced_findings_survive_holm_over_all_claims(verdicts):
    """docs/findings.md: Holm once more over the claimed comparisons keeps every reproduced one below 0.01."""
    from statemine.stats.resampling import holm

    claims = verdicts[(verdicts["direction"] != "either") & verdicts["finding"].isin(QUIC_ONLY)]
    again = holm(claims["p_holm"].to_numpy())
    assert len(claims) == 13 and (again[claims["reproduced"].to_numpy()] < 0.01).all()
    assert (
        again[~claims["reproduced"].to_numpy()] >= 0.01
    ).all()  # and the one not reproduced stays out


def _per_run_seconds(folder: Path, run_ids, state: str) -> tuple[np.ndarray, np.ndarray]:
    """Per run, the server's seconds in ``state`` and in all, from the raw logs by hand."""
    inside, total = [], []
    for run_id in run_ids:
        per_state, _ = _shares_from_raw_log(folder / "runs" / run_id / "run.log.gz")
        inside.append(per_state.get(state, 0.0))
        total.append(sum(per_state.values()))
    return np.array(inside), np.array(total)


@pytest.mark.parametrize("stack", ["aioquic@1.7.2", "quic-go@v0.65.0"])
def test_mobile_numbers_against_raw_logs_and_scipy(verdicts, stack):
    """The mobile finding's shares from the raw logs, and its p-value from scipy's
    permutation test on those per-run seconds (two-sided, 9999 random relabellings)."""
    r = verdicts[(verdicts["finding"] == "mobile-vs-desktop") & (verdicts["stack"] == stack)].iloc[
        0
    ]
    results = pd.read_csv(TRACES / "mobile" / "results.csv")
    runs = results[results["stack"] == stack]
    ia, ta = _per_run_seconds(
        TRACES / "mobile", runs.loc[runs["profile"] == "desktop", "run_id"], "ApplicationLimited"
    )
    ib, tb = _per_run_seconds(
        TRACES / "mobile", runs.loc[runs["profile"] == "mobile", "run_id"], "ApplicationLimited"
    )
    assert r["share_a"] == pytest.approx(ia.sum() / ta.sum(), rel=1e-6)
    assert r["share_b"] == pytest.approx(ib.sum() / tb.sum(), rel=1e-6)
    _same_p(r["p_value"], _pooled_p(ia, ta, ib, tb))


def test_mobile_does_not_limit_an_aioquic_sender_through_flow_control(table):
    # docs/findings.md: aioquic returns flow-control credit on arrival, so the slow
    # mobile reader does not make its server ApplicationLimited (not reproducible)
    desk = row(table, "mobile-vs-desktop", "aioquic@1.7.2", "desktop")
    mob = row(table, "mobile-vs-desktop", "aioquic@1.7.2", "mobile")
    assert mob["share"] < 2 * desk["share"]
    # the application's reading still shows: 5 MB at 20 Mbit/s takes at least 2 s
    assert mob["plt_s"] >= 8 * 5_000_000 / 20e6 > 1.5 * desk["plt_s"]


def test_mobile_makes_the_quic_go_sender_application_limited(table):
    # docs/findings.md: quic-go returns flow-control credit as the application reads;
    # the phone's application (20 Mbit/s on a 50 Mbit/s path) holds the credit back, so
    # the server is flow-control blocked, not cwnd-limited, most of the transfer
    desk = row(table, "mobile-vs-desktop", "quic-go@v0.65.0", "desktop")
    mob = row(table, "mobile-vs-desktop", "quic-go@v0.65.0", "mobile")
    assert mob["share"] > 3 * desk["share"] and mob["share"] > 0.5
    assert mob["seconds_per_run"] > 5 * desk["seconds_per_run"]
    # the application's reading bounds the page load: 5 MB at 20 Mbit/s is 2 s
    assert mob["plt_s"] >= 8 * 5_000_000 / 20e6 > 1.5 * desk["plt_s"]


@pytest.mark.parametrize("stack", ["aioquic@1.7.2", "quic-go@v0.63.0"])
def test_jitter_multiplies_time_in_recovery_through_spurious_losses(table, stack):
    calm = row(table, "jitter-recovery", stack, "no jitter, reordering threshold 3")
    jit = row(table, "jitter-recovery", stack, "10 ms jitter, reordering threshold 3")
    assert jit["share"] > 1.3 * calm["share"]
    assert jit["seconds_per_run"] > 5 * calm["seconds_per_run"]
    assert jit["plt_s"] > 3 * calm["plt_s"]
    # the path dropped nothing: every loss the server declared under jitter was spurious
    assert jit["path_dropped"] == 0 and jit["declared_lost"] > 0


@pytest.mark.parametrize("stack", ["aioquic@1.7.2", "quic-go@v0.63.0"])
def test_larger_thresholds_bring_recovery_back_down(table, stack):
    jit = row(table, "jitter-recovery", stack, "10 ms jitter, reordering threshold 3")
    rt10 = row(table, "jitter-recovery", stack, "10 ms jitter, reordering threshold 10")
    both = row(table, "jitter-recovery", stack, "10 ms jitter, reordering 10 + time threshold 1.5")
    assert rt10["seconds_per_run"] < jit["seconds_per_run"]
    assert rt10["lost_by_packet_rule"] < 0.5 * jit["lost_by_packet_rule"]
    assert both["seconds_per_run"] < 0.3 * jit["seconds_per_run"]
    assert both["share"] < jit["share"]
    # with the packet rule relaxed, the time rule is what is left, and 1.5 x RTT cuts it
    assert both["lost_by_time_rule"] < 0.5 * max(rt10["lost_by_time_rule"], 1)


def test_quic_go_v065_spends_far_less_time_in_recovery_under_jitter(table):
    old = row(table, "quic-go-adaptive-reordering", "quic-go", "v0.63.0, 10 ms jitter")
    new = row(table, "quic-go-adaptive-reordering", "quic-go", "v0.65.0, 10 ms jitter")
    assert new["share"] < old["share"] / 2
    assert new["seconds_per_run"] < old["seconds_per_run"] / 10
    assert new["plt_s"] < old["plt_s"] / 3


def _shares_from_raw_log(path: Path, role: str = "server") -> tuple[dict[str, float], int]:
    """Time per state and LossDetected count of one role, from the raw log by hand."""
    times, states, losses, close = [], [], 0, None
    text = gzip.decompress(path.read_bytes()).decode()
    for line in text.splitlines():
        m = re.search(r"STATEMINE t=(\S+) conn=\S+ role=(\S+) (state|event)=(\S+)", line)
        if not m or m[2] != role:
            continue
        t = float(m[1])
        if m[3] == "state":
            times.append(t)
            states.append(m[4])
        elif m[4] == "Close":
            close = t
        elif m[4] == "LossDetected":
            losses += 1
        last = t
    end = close if close is not None else last
    total: dict[str, float] = {}
    for i, s in enumerate(states):
        stop = times[i + 1] if i + 1 < len(states) else end
        total[s] = total.get(s, 0.0) + stop - times[i]
    return total, losses


def test_findings_arithmetic_matches_the_raw_logs():
    folder = TRACES / "quic-go-versions"
    results = pd.read_csv(folder / "results.csv")
    pick = results[results["jitter_ms"] == 10.0]
    time_in, total, declared = 0.0, 0.0, 0
    for run_id in pick["run_id"]:
        per_state, losses = _shares_from_raw_log(folder / "runs" / run_id / "run.log.gz")
        time_in += per_state.get("Recovery", 0.0)
        total += sum(per_state.values())
        declared += losses
    ts = findings.select(findings.server_only(findings.load_runs(folder)), {"jitter_ms": "10"})
    share, seconds = findings.state_time(ts, "Recovery")
    assert share == pytest.approx(time_in / total, rel=1e-6)
    assert seconds == pytest.approx(time_in, rel=1e-6)
    by_packet, by_time = findings.loss_rules(ts)
    assert by_packet + by_time == declared
    assert declared == pick["retransmissions"].sum()  # the runners' own counts agree


def test_cli_one_finding_on_the_shipped_traces(tmp_path):
    out = tmp_path / "f.csv"
    res = CliRunner().invoke(
        main,
        [
            "lab",
            "findings",
            str(TRACES),
            "--finding",
            "quic-go-adaptive-reordering",
            "--csv",
            str(out),
            "--permutations",
            "999",
            "--bootstrap",
            "200",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "quic-go-adaptive-reordering" in res.output and "mobile-vs-desktop" not in res.output
    assert list(pd.read_csv(out)["finding"]) == ["quic-go-adaptive-reordering"]


def test_finding_names_match_the_cli_choices():
    from statemine.cli.lab import findings_cmd

    option = next(p for p in findings_cmd.params if p.name == "names")
    assert list(option.type.choices) == [f.name for f in findings.FINDINGS]


def test_cli_on_a_folder_without_traces(tmp_path):
    res = CliRunner().invoke(main, ["lab", "findings", str(tmp_path)])
    assert res.exit_code == 2 and "no scenario folder" in res.output


def test_failed_runs_are_left_out(tmp_path):
    root = lab_folder(tmp_path, 3, noise=0.2)
    results = pd.read_csv(root / "mobile" / "results.csv")
    results["ok"] = results["run_id"] != "quic-go-mobile-0"
    results.to_csv(root / "mobile" / "results.csv", index=False)
    ts, _ = findings.load_scenarios(root, MOBILE)["mobile"]
    assert set(ts.traces["run_id"]) == set(results.loc[results["ok"], "run_id"])
    assert not (ts.events["trace"] == "quic-go-mobile-0#1/server").any()


def test_docs_hold_the_commands_output(verdicts, table):
    """docs/findings.md pastes `statemine lab findings traces --markdown --why` unchanged."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "findings.md").read_text(encoding="utf-8")
    assert "statemine lab findings traces --markdown --why" in doc
    for f in findings.FINDINGS:
        assert findings.markdown(verdicts, table, f.name) in doc, (
            f"docs/findings.md: {f.name}'s tables are stale"
        )


def test_hostile_stack_labels_are_shown_literally(tmp_path):
    root = lab_folder(tmp_path, 3, noise=0.2)
    for path in (root / "mobile" / "runs").glob("quic-go-*/traces.parquet"):
        ts = load(path)
        save(TraceSet.from_events(ts.events, ts.traces.assign(version="[bold]x\x1b[31m|=1")), path)
    out = tmp_path / "f.csv"
    res = CliRunner().invoke(
        main,
        [
            "lab",
            "findings",
            str(root),
            "--permutations",
            "99",
            "--bootstrap",
            "20",
            "--csv",
            str(out),
        ],
        env={"COLUMNS": "200"},
    )
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.output and "quic-go@[bold]x\\x1b[31m|=1" in res.output
    md = CliRunner().invoke(
        main,
        ["lab", "findings", str(root), "--permutations", "99", "--bootstrap", "20", "--markdown"],
    )
    assert "\x1b" not in md.output and "quic-go@[bold]x\\x1b[31m\\|=1" in md.output


def test_cli_tables_fit_the_terminal_and_are_whole_otherwise(varied):
    """On a terminal of 80 columns every line fits; piped (or --wide) the rows are whole."""
    root, _loaded = varied
    args = ["lab", "findings", str(root), "--permutations", "99", "--bootstrap", "50"]
    tty = {"COLUMNS": "80", "TTY_COMPATIBLE": "1", "NO_COLOR": "1", "TERM": "xterm"}
    fitted = CliRunner().invoke(main, args, env=tty)
    assert fitted.exit_code == 0, fitted.output
    assert max(len(line) for line in _plain(fitted.stdout).splitlines()) <= 80
    wide = CliRunner().invoke(main, [*args, "--wide"], env=tty)
    piped = CliRunner().invoke(main, args, env={"COLUMNS": "80"})
    assert _plain(wide.stdout) == piped.stdout
    assert max(len(line) for line in piped.stdout.splitlines()) > 80
    # a whole verdict row on one line: stack, conditions and the verdict
    assert any(
        line.startswith("│ quic-go@v0.65.0 │ desktop -> mobile (up)") and "reproduced" in line
        for line in piped.stdout.splitlines()
    )


def test_cli_scenarios_folder_is_an_argument_like_findings_root(tmp_path):
    examples = Path(__file__).resolve().parents[1] / "examples" / "scenarios"
    positional = CliRunner().invoke(main, ["lab", "scenarios", str(examples)])
    assert positional.exit_code == 0, positional.output
    assert "mobile.toml" in positional.stdout and positional.stderr == ""
    old = CliRunner().invoke(main, ["lab", "scenarios", "--dir", str(examples)])
    assert old.exit_code == 0 and old.stdout == positional.stdout
    assert "--dir is deprecated" in old.stderr
    default = CliRunner().invoke(main, ["lab", "scenarios"])
    assert default.stdout.replace(str(examples), "X") == positional.stdout.replace(
        str(examples), "X"
    )
    both = CliRunner().invoke(main, ["lab", "scenarios", str(examples), "--dir", str(examples)])
    assert both.exit_code == 2 and "give the folder once" in both.output
    tty = {"COLUMNS": "80", "TTY_COMPATIBLE": "1", "NO_COLOR": "1", "TERM": "xterm"}
    fitted = CliRunner().invoke(main, ["lab", "scenarios", str(examples)], env=tty)
    assert max(len(line) for line in _plain(fitted.stdout).splitlines()) <= 80


def _plain(text: str) -> str:
    """``text`` without the terminal's style sequences (bold, ...)."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


# -- kernel TCP (real time, traces/tcp-*) beside QUIC (virtual time) -------------------------
def _tcp_recovery_from_raw_log(run_dir: Path) -> tuple[float, float]:
    """Seconds the server socket spent in Recovery and in all, read from the raw ftrace text
    by hand: the socket's events are the lines naming its port as source; it is Open until
    its first cong_state, its trace runs from its first to its last event."""
    port = json.loads((run_dir / "result.json").read_text())["server_port"]
    times, states = [], []
    for line in gzip.decompress((run_dir / "run.log.gz").read_bytes()).decode().splitlines():
        m = re.search(r"\s(\d+\.\d+): (tcp_cong_state_set|tcp_probe): (.*)", line)
        if not m:
            continue
        body = m[3]
        if f"sport={port} " not in body and f":{port} dest=" not in body:
            continue
        t = float(m[1])
        state = re.search(r"cong_state=(\d)", body)
        times.append(t)
        states.append(int(state[1]) if state else None)
    order = np.argsort(times, kind="stable")
    t_sorted = np.asarray(times)[order]
    current, recovery = 0, 0.0
    for i, k in enumerate(order):
        if states[k] is not None:
            current = states[k]
        if i + 1 < len(order) and current == 3:
            recovery += t_sorted[i + 1] - t_sorted[i]
    return recovery, float(t_sorted[-1] - t_sorted[0])


def test_tcp_recovery_shares_against_the_raw_traces(table):
    """Every kernel-TCP share the findings print, recomputed from the ftrace text by hand."""
    for scenario, name, where in (
        ("tcp-jitter", "quic-vs-tcp-jitter", {"jitter_ms": 10.0}),
        ("tcp-mobile", "tcp-mobile-vs-desktop", {"profile": "desktop"}),
        ("tcp-mobile", "tcp-mobile-vs-desktop", {"profile": "mobile"}),
    ):
        results = pd.read_csv(TRACES / scenario / "results.csv")
        key, value = next(iter(where.items()))
        ids = results.loc[results[key] == value, "run_id"]
        rec, total = zip(*(_tcp_recovery_from_raw_log(TRACES / scenario / "runs" / r) for r in ids))
        cond = "TCP cubic" if name == "quic-vs-tcp-jitter" else value
        r = table[(table["finding"] == name) & (table["condition"] == cond)].iloc[0]
        assert r["runs"] == len(ids) == 20
        assert r["share"] == pytest.approx(sum(rec) / sum(total), abs=1e-6)
        assert r["plt_s"] == pytest.approx(results.loc[results[key] == value, "plt_s"].mean())


def test_quic_spends_more_time_in_recovery_than_kernel_tcp_under_jitter(verdicts):
    """The paper's comparison at 112 ms RTT, 10 ms jitter: quic-go v0.63.0 (fixed threshold 3)
    more time in Recovery than kernel TCP cubic (RACK-TLP) at p (Holm) < 0.01, but its
    studentized interval includes 0 (TCP's per-run shares are skewed: 12 runs near 0, 8 at
    9-62%; re-recorded when lab findings moved to that interval, docs/findings.md "Which
    interval"), as aioquic's; quic-go v0.65.0 (adaptive threshold) no different. Page-load time: both fixed-threshold stacks far slower
    than TCP (Welch p < 0.01); v0.65.0 slightly faster."""
    rows = verdicts[verdicts["finding"] == "quic-vs-tcp-jitter"].set_index("b")
    assert set(rows.index) == {"quic-go v0.63.0", "aioquic 1.7.2", "quic-go v0.65.0"}
    assert (rows["a"] == "TCP cubic").all() and (rows[["runs_a", "runs_b"]] == 20).all().all()
    go63, aio, go65 = (rows.loc[k] for k in ("quic-go v0.63.0", "aioquic 1.7.2", "quic-go v0.65.0"))
    assert not go63["reproduced"] and go63["verdict"] == "not reproduced: 95% interval includes 0"
    assert go63["p_holm"] < 0.01 and go63["delta_lo"] < 0 < go63["delta"] < go63["delta_hi"]
    assert not aio["reproduced"] and "interval includes 0" in aio["verdict"]
    assert go65["verdict"].startswith("no effect")
    for r in (go63, aio):
        assert r["plt_b"] > 2 * r["plt_a"] and r["plt_p"] < 0.01
    assert go65["plt_b"] < go65["plt_a"] and go65["plt_p"] < 0.01


def test_tcp_mobile_client_cuts_recovery_and_doubles_plt(verdicts):
    """Kernel TCP with the mobile client (20 Mbit/s reader on a 50 Mbit/s path): the sender is
    held back by the receive window, fills the queue less and spends less time in Recovery
    (p (Holm) < 0.01, the interval below 0); the page takes about twice as long."""
    r = verdicts[verdicts["finding"] == "tcp-mobile-vs-desktop"].iloc[0]
    assert r["stack"] == "tcp@cubic" and r["verdict"] == "effect: down" and r["p_holm"] < 0.01
    assert r["delta_hi"] < 0
    assert 1.5 < r["plt_b"] / r["plt_a"] < 3 and r["plt_p"] < 0.01
    # the read rate bounds the page: 5 MB at 20 Mbit/s is 2 s
    assert r["plt_b"] > 5e6 * 8 / 20e6


def test_quic_go_real_time_shares_against_the_raw_logs(table):
    """Finding 7's real-time shares and PLTs, recomputed from the raw statemine logs and
    results.csv by hand (the virtual-time side is checked above)."""
    folder = TRACES / "quic-go-rt-jitter"
    results = pd.read_csv(folder / "results.csv")
    for version in ("v0.63.0", "v0.65.0"):
        ids = results.loc[results["stack"] == f"quic-go-rt@{version}", "run_id"]
        inside, total = _per_run_seconds(folder, ids, "Recovery")
        r = table[
            (table["finding"] == "quic-go-real-vs-virtual")
            & (table["condition"] == f"{version} real")
        ].iloc[0]
        assert r["runs"] == len(ids) == 20
        assert r["share"] == pytest.approx(inside.sum() / total.sum(), rel=1e-6)
        assert r["plt_s"] == pytest.approx(
            results.loc[results["stack"] == f"quic-go-rt@{version}", "plt_s"].mean()
        )


def test_real_time_does_not_change_quic_gos_recovery(verdicts):
    """Finding 7: quic-go's share of time in Recovery under jitter is the same in real and
    in virtual time (no effect at p < 0.01 for either version, 20 distinct runs a side)."""
    rows = verdicts[verdicts["finding"] == "quic-go-real-vs-virtual"]
    assert len(rows) == 2
    for r in rows.itertuples():
        assert r.verdict.startswith("no effect") and r.p_holm >= 0.01, r
        assert r.delta_lo < 0 < r.delta_hi and (r.distinct_a, r.distinct_b) == (20, 20)


def _pooled_p(ia, ta, ib, tb) -> float:
    """scipy's two-sided permutation p (9999 relabellings of runs) of the pooled shares'
    difference, computed from per-run seconds in the state and in all."""
    from scipy import stats

    seconds, totals = np.r_[ia, ib], np.r_[ta, tb]

    def stat(xa, xb, axis):
        xa, xb = xa.astype(int), xb.astype(int)
        return np.abs(
            seconds[xb].sum(axis=axis) / totals[xb].sum(axis=axis)
            - seconds[xa].sum(axis=axis) / totals[xa].sum(axis=axis)
        )

    return stats.permutation_test(  # type: ignore[return-value]  # a float for 1-d samples
        (np.arange(len(ia)), np.arange(len(ia), len(seconds))),
        stat,
        vectorized=True,
        permutation_type="independent",
        alternative="greater",
        n_resamples=9999,
        rng=np.random.default_rng(1),
    ).pvalue


def _same_p(got: float, ref: float) -> None:
    if ref <= 1e-4:  # both at the Monte Carlo floor 1 / (9999 + 1)
        assert got == pytest.approx(1e-4)
    else:
        assert abs(got - ref) < 5 * np.sqrt(ref * (1 - ref) / 9999) + 1e-4


@pytest.mark.parametrize(
    ("stack", "cond"),
    [
        ("aioquic-rt@1.7.2", "aioquic 1.7.2 real"),
        ("quiche-rt@0.30.0", "quiche 0.30.0 real"),
        ("quic-go-rt@v0.63.0", "quic-go v0.63.0 real"),
    ],
)
def test_quic_real_time_shares_and_p_against_the_raw_logs(table, verdicts, stack, cond):
    """Finding 11's real-time QUIC shares and PLTs recomputed by hand from the raw statemine
    logs and results.csv, its TCP side from the raw ftrace text, and the comparison's
    p-value against scipy's permutation test on those per-run seconds."""
    folder = TRACES / ("quic-go-rt-jitter" if stack.startswith("quic-go") else "quic-rt-jitter")
    results = pd.read_csv(folder / "results.csv")
    runs = results[results["stack"] == stack]
    inside, total = _per_run_seconds(folder, runs["run_id"], "Recovery")
    r = table[(table["finding"] == "quic-rt-vs-tcp-jitter") & (table["condition"] == cond)].iloc[0]
    assert r["runs"] == len(runs) == 20 and runs["ok"].all()
    assert r["share"] == pytest.approx(inside.sum() / total.sum(), rel=1e-6)
    assert r["plt_s"] == pytest.approx(runs["plt_s"].mean())
    tcp = pd.read_csv(TRACES / "tcp-jitter" / "results.csv")
    ids = tcp.loc[tcp["jitter_ms"] == 10.0, "run_id"]
    rec, tot = (
        np.array(x)
        for x in zip(*(_tcp_recovery_from_raw_log(TRACES / "tcp-jitter" / "runs" / i) for i in ids))
    )
    v = verdicts[(verdicts["finding"] == "quic-rt-vs-tcp-jitter") & (verdicts["b"] == cond)].iloc[0]
    assert v["share_a"] == pytest.approx(rec.sum() / tot.sum(), rel=1e-6)
    _same_p(v["p_value"], _pooled_p(rec, tot, inside, total))


def test_quic_in_real_time_against_kernel_tcp_under_jitter(verdicts):
    """Finding 11 (every stack on the real clock, 112 ms RTT, 10 ms jitter): quic-go v0.63.0's
    and aioquic's Recovery differences from TCP are not robust (permutation p < 0.01 but
    the studentized interval includes 0, as in virtual time; quic-go's was above 0 with the
    percentile interval, re-recorded deliberately); quiche spends less (interval below 0); quic-go v0.65.0 no different.
    Page-load time: the fixed-threshold stacks far slower than TCP, quiche slower, v0.65.0
    slightly faster (Welch p < 0.01 each)."""
    rows = verdicts[verdicts["finding"] == "quic-rt-vs-tcp-jitter"].set_index("b")
    names = ["aioquic 1.7.2 real", "quic-go v0.63.0 real", "quiche 0.30.0 real"]
    assert set(rows.index) == {*names, "quic-go v0.65.0 real"}
    assert (rows["a"] == "TCP cubic").all()
    assert (rows[["runs_a", "runs_b", "distinct_a", "distinct_b"]] == 20).all().all()
    assert not rows["pseudo_replicates"].any() and not rows["underpowered"].any()
    aio, go63, quiche, go65 = (rows.loc[k] for k in [*names, "quic-go v0.65.0 real"])
    assert not go63["reproduced"] and go63["verdict"] == "not reproduced: 95% interval includes 0"
    assert go63["p_holm"] < 0.01 and go63["delta_lo"] < 0 < go63["delta"] < go63["delta_hi"]
    assert not aio["reproduced"] and "interval includes 0" in aio["verdict"]
    assert aio["p_holm"] < 0.01 and aio["delta_lo"] < 0 < aio["delta"] < aio["delta_hi"]
    assert quiche["reproduced"] and quiche["verdict"] == "effect: down"
    assert quiche["p_holm"] < 0.01 and quiche["delta_hi"] < 0
    assert go65["verdict"].startswith("no effect") and go65["p_holm"] >= 0.01
    for r in (aio, go63):
        assert r["plt_b"] > 5 * r["plt_a"] and r["plt_p"] < 0.01
    assert 2 * quiche["plt_a"] < quiche["plt_b"] < go63["plt_b"] and quiche["plt_p"] < 0.01
    assert go65["plt_b"] < go65["plt_a"] and go65["plt_p"] < 0.01


def test_real_time_does_not_change_aioquic_or_quiches_recovery(verdicts, table):
    """Finding 12: the share of time in Recovery is the same in real and virtual time for
    aioquic and quiche (no effect, intervals within 1 point of 0, 20 distinct runs a side);
    aioquic's page is slower in real time (Welch p < 0.01, under 20%), quiche's is not."""
    rows = verdicts[verdicts["finding"] == "quic-rt-real-vs-virtual"].set_index("b")
    assert set(rows.index) == {"aioquic real", "quiche real"}
    for r in rows.itertuples():
        assert r.verdict.startswith("no effect") and r.p_holm >= 0.01, r
        assert -0.01 < r.delta_lo < 0 < r.delta_hi < 0.01, r
        assert (r.distinct_a, r.distinct_b) == (20, 20)
    aio, quiche = rows.loc["aioquic real"], rows.loc["quiche real"]
    assert 1 < aio["plt_b"] / aio["plt_a"] < 1.2 and aio["plt_p"] < 0.01
    assert quiche["plt_p"] >= 0.01
    virtual = table[
        (table["finding"] == "quic-rt-real-vs-virtual") & (table["condition"] == "quiche virtual")
    ].iloc[0]
    same = table[(table["finding"] == "quiche-jitter-recovery")]
    assert virtual["share"] == pytest.approx(
        same.loc[same["condition"] == "quiche, 10 ms jitter", "share"].iloc[0]
    )
