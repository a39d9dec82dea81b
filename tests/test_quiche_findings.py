"""quiche findings on the shipped traces (docs/findings.md sections 8-10) that are about
page-load time: statemine.outcomes' Welch test per cell, and the same numbers computed
another way (scipy on the raw results, the means by hand). The state-share findings are
asserted with the others in tests/test_lab_findings.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from statemine.outcomes import compare_outcomes

TRACES = Path(__file__).resolve().parents[1] / "traces"


@pytest.fixture(scope="module")
def bbr() -> pd.DataFrame:
    return pd.read_csv(TRACES / "quiche-bbr" / "results.csv")


def test_every_run_succeeded_with_20_per_cell(bbr):
    assert bbr["ok"].all() and len(bbr) == 360
    assert (bbr.groupby(["cc", "loss", "object_size_bytes"]).size() == 20).all()


#: (loss, object bytes) -> the sign of BBR2's PLT minus CUBIC's where significant (p < 0.01),
#: or 0 where not (docs/findings.md section 8).
EXPECTED_PLT = {
    (0.0, 100_000): 0,
    (0.0, 1_000_000): 0,
    (0.0, 10_000_000): +1,
    (0.01, 100_000): 0,
    (0.01, 1_000_000): 0,
    (0.01, 10_000_000): -1,
    (0.05, 100_000): 0,
    (0.05, 1_000_000): -1,
    (0.05, 10_000_000): -1,
}


def test_bbr2_ahead_for_large_objects_under_loss(bbr):
    """ModQUIC's comparison: BBR2's page loads faster than CUBIC's under loss for 1 MB
    (5%) and 10 MB (1%, 5%) objects; no significant difference for 100 KB."""
    table = compare_outcomes(bbr, by="cc", a="cubic", b="bbr2", cells=["loss", "object_size_bytes"])
    assert len(table) == len(EXPECTED_PLT)
    for r in table.itertuples():
        sign = EXPECTED_PLT[(r.loss, r.object_size_bytes)]
        # another way: scipy's Welch test and the means on the raw rows
        cell = bbr[(bbr["loss"] == r.loss) & (bbr["object_size_bytes"] == r.object_size_bytes)]
        a = cell.loc[cell["cc"] == "cubic", "plt_s"].to_numpy()
        b = cell.loc[cell["cc"] == "bbr2", "plt_s"].to_numpy()
        p = stats.ttest_ind(a, b, equal_var=False).pvalue
        assert r.p_value == pytest.approx(p, rel=1e-9)
        assert r.pct_diff == pytest.approx(100 * (b.mean() - a.mean()) / a.mean())
        assert r.significant == (p < 0.01) == (sign != 0), (r, p)
        if sign:
            assert np.sign(b.mean() - a.mean()) == sign


def test_quiche_page_under_jitter_lies_between_the_quic_go_versions():
    """docs/findings.md section 10: with 10 ms jitter quiche's PLT is below v0.63.0's and
    above v0.65.0's, each at p < 0.01."""
    res = pd.read_csv(TRACES / "quiche-jitter" / "results.csv")
    assert res["ok"].all() and (res.groupby(["stack", "jitter_ms"]).size() == 20).all()
    shaky = res[res["jitter_ms"] == 10]
    quiche = shaky.loc[shaky["stack"] == "quiche@0.30.0", "plt_s"].to_numpy()
    for other, sign in (("quic-go@v0.63.0", -1), ("quic-go@v0.65.0", +1)):
        row = compare_outcomes(
            shaky, by="stack", a=other, b="quiche@0.30.0", cells=["jitter_ms"]
        ).iloc[0]
        them = shaky.loc[shaky["stack"] == other, "plt_s"].to_numpy()
        assert row.p_value == pytest.approx(stats.ttest_ind(them, quiche, equal_var=False).pvalue)
        assert row.significant and np.sign(quiche.mean() - them.mean()) == sign
