"""``statemine lab findings`` reports the studentized bootstrap interval (issue 25 item 5:
the intervals the findings ship must hold across batches; docs/findings.md "Which
interval"), ``--interval percentile`` gives ``statemine diff``'s, and ``lab replicate``
keeps comparing against both."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from test_lab_findings import MOBILE, lab_folder

from statemine.cli import main
from statemine.lab import findings
from statemine.lab.commands import measure_findings
from statemine.stats.resampling import bootstrap_delta

QUICK = {"n_perm": 99, "n_boot": 400}


def _clustered_root(tmp_path):
    """The fake mobile folder with runs of very different lengths: the studentized and the
    percentile intervals of its differences differ visibly."""
    return lab_folder(tmp_path, 12, noise=0.9, seed=3)


def test_findings_default_to_the_studentized_interval(tmp_path):
    root = _clustered_root(tmp_path)
    loaded = findings.load_scenarios(root, MOBILE)
    got = measure_findings(root, ["mobile-vs-desktop"], **QUICK).verdicts
    t = findings.assess(root, MOBILE, loaded=loaded, interval="studentized", **QUICK)
    pct = findings.assess(root, MOBILE, loaded=loaded, interval="percentile", **QUICK)
    cols = ["delta", "delta_lo", "delta_hi"]
    assert np.allclose(got[cols], t[cols])
    assert not np.allclose(t[["delta_lo", "delta_hi"]], pct[["delta_lo", "delta_hi"]])
    # and the library default of assess is the findings' interval, not diff's
    assert findings.INTERVAL == "studentized"
    assert np.allclose(findings.assess(root, MOBILE, loaded=loaded, **QUICK)[cols], t[cols])


def test_the_studentized_bounds_are_bootstrap_t_of_the_per_run_seconds(tmp_path):
    """The interval ``lab findings`` reports, against bootstrap_delta on the per-run seconds
    read straight from each run's trace (state seconds, other seconds)."""
    root = _clustered_root(tmp_path)
    row = measure_findings(root, ["mobile-vs-desktop"], **QUICK).verdicts
    qg = row[row["stack"] == "quic-go@v0.65.0"].iloc[0]
    ts, _ = findings.load_scenarios(root, MOBILE)["mobile"]
    from statemine.lab.replicate import per_run

    base = findings.select(ts, {"implementation": "quic-go"})
    xa = per_run(findings.select(base, {"profile": "desktop"}), "ApplicationLimited")
    xb = per_run(findings.select(base, {"profile": "mobile"}), "ApplicationLimited")
    # diff resamples the per-trace table (one server trace per run here): the same rows
    lo, hi = bootstrap_delta(xa, xb, n_boot=400, seed=0, method="studentized")
    assert (qg["delta_lo"], qg["delta_hi"]) == pytest.approx((lo[0], hi[0]), rel=1e-12)
    pct = bootstrap_delta(xa, xb, n_boot=400, seed=0)  # and not the percentile one
    assert abs(qg["delta_lo"] - pct[0][0]) > 0.005


def test_cli_interval_option(tmp_path):
    root = _clustered_root(tmp_path)
    quick = ["--permutations", "99", "--bootstrap", "400"]
    csv_t, csv_p = tmp_path / "t.csv", tmp_path / "p.csv"
    res_t = CliRunner().invoke(main, ["lab", "findings", str(root), *quick, "--csv", str(csv_t)])
    res_p = CliRunner().invoke(
        main,
        ["lab", "findings", str(root), *quick, "--interval", "percentile", "--csv", str(csv_p)],
    )
    assert res_t.exit_code == 0 and res_p.exit_code == 0, (res_t.output, res_p.output)
    assert "95% studentized interval" in res_t.output
    assert "95% percentile interval" in res_p.output
    loaded = findings.load_scenarios(root, MOBILE)
    for path, method in ((csv_t, "studentized"), (csv_p, "percentile")):
        table = pd.read_csv(path, keep_default_na=False)
        ref = findings.assess(root, MOBILE, loaded=loaded, interval=method, **QUICK)
        assert np.allclose(table[["delta_lo", "delta_hi"]], ref[["delta_lo", "delta_hi"]])
    bad = CliRunner().invoke(main, ["lab", "findings", str(root), "--interval", "bca"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_differences_are_shown_no_more_precisely_than_their_interval(tmp_path):
    """The B - A cell: whole points when the interval's half-width is a point or more (the
    figure moves by points between batches), tenths otherwise; a wide folder and a tight
    one, so both cases are exercised."""
    quick = ["--permutations", "99", "--bootstrap", "400"]
    seen = set()
    for name, noise in (("wide", 0.9), ("tight", 0.02)):
        root = lab_folder(tmp_path / name, 12, noise=noise, seed=3)
        res = CliRunner().invoke(
            main, ["lab", "findings", str(root), *quick, "--markdown"], env={"COLUMNS": "250"}
        )
        assert res.exit_code == 0, res.output
        ref = findings.assess(root, MOBILE, **QUICK)
        for r in ref.itertuples():
            n = 0 if r.delta_hi - r.delta_lo >= 0.02 else 1
            lo, hi, d = (f"{100 * v:+.{n}f}" for v in (r.delta_lo, r.delta_hi, r.delta))
            line = next(ln for ln in res.output.splitlines() if ln.startswith(f"| {r.stack} |"))
            assert f"| {d} [{lo}, {hi}] pp |" in line, (line, r.delta_lo, r.delta_hi)
            seen.add(n)
    assert seen == {0, 1}
