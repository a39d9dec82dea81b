"""The paper's findings on the shipped lab traces (traces/): the direction and a
meaningful size of each effect, and the findings arithmetic checked against the raw logs."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from statemine.cli import main
from statemine.lab import findings

TRACES = Path(__file__).resolve().parents[1] / "traces"


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return findings.evaluate(TRACES)


def row(table, finding, stack, condition) -> pd.Series:
    sel = table[(table["finding"] == finding) & (table["stack"] == stack) & (table["condition"] == condition)]
    assert len(sel) == 1, (finding, stack, condition)
    r = sel.iloc[0]
    assert r["runs"] >= 3, "each shipped condition has at least three runs"
    return r


def test_every_finding_has_its_traces(table):
    assert set(table["finding"]) == {f.name for f in findings.FINDINGS}


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
    old = row(table, "quic-go-adaptive-reordering", "all", "v0.63.0, 10 ms jitter")
    new = row(table, "quic-go-adaptive-reordering", "all", "v0.65.0, 10 ms jitter")
    assert new["share"] < old["share"] / 3
    assert new["seconds_per_run"] < old["seconds_per_run"] / 10
    assert new["plt_s"] < old["plt_s"] / 3


def _shares_from_raw_log(path: Path, role: str = "server") -> tuple[dict[str, float], int]:
    """Time per state and LossDetected count of one role, from the raw log by hand."""
    times, states, losses, close = [], [], 0, None
    for line in gzip.open(path, "rt"):
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
    assert declared == pick["retransmissions"].sum()   # the runners' own counts agree


def test_cli_prints_the_table(tmp_path):
    out = tmp_path / "f.csv"
    res = CliRunner().invoke(main, ["lab", "findings", str(TRACES), "--csv", str(out)])
    assert res.exit_code == 0, res.output
    assert "mobile-vs-desktop" in res.output and "ApplicationLimited" in res.output
    assert len(pd.read_csv(out)) == len(findings.evaluate(TRACES))


def test_cli_one_finding():
    res = CliRunner().invoke(main, ["lab", "findings", str(TRACES), "--finding", "jitter-recovery"])
    assert res.exit_code == 0, res.output
    assert "jitter-recovery" in res.output and "mobile-vs-desktop" not in res.output


def test_finding_names_match_the_cli_choices():
    from statemine.cli.lab import findings_cmd

    option = next(p for p in findings_cmd.params if p.name == "names")
    assert list(option.type.choices) == [f.name for f in findings.FINDINGS]


def test_cli_on_a_folder_without_traces(tmp_path):
    res = CliRunner().invoke(main, ["lab", "findings", str(tmp_path)])
    assert res.exit_code == 2 and "no scenario folder" in res.output
