"""statemine explain on qlogs of unmodified quic-go with losses (issue 30: "on a pair of real
qlogs (quic-go, with losses) explain works from packet events alone").

tests/data/qlog-quicgo-loss holds the servers' qlogs of quic-go v0.63.0 over a loopback
relay with 2% random loss, without and with 10 ms jitter (README.md there; generate.sh
made them). No statemine line: the triggers come from quic-go's own ``packet_lost``
events (``trigger``: ``reordering_threshold`` / ``time_threshold``) and its verdicts from
its ``spurious_loss`` events. Every count checked here is computed again from the qlog
JSON with the json module (not statemine's reader).
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from statemine.cli import main
from statemine.explain import TRIGGER_WINDOW_S, explain
from statemine.parse import read

DATA = Path(__file__).resolve().parent / "data" / "qlog-quicgo-loss"
SIDES = ("loss2", "loss2-jitter10")
STATES = {
    "slow_start": "SlowStart",
    "congestion_avoidance": "CongestionAvoidance",
    "recovery": "Recovery",
    "application_limited": "ApplicationLimited",
}
RULES = {"reordering_threshold": "packet", "time_threshold": "time"}
FAST = dict(n_perm=2000, n_boot=200, seed=0)


def records(path: Path) -> list[dict]:
    """The JSON-SEQ records of one gzip'ed qlog (RFC 7464: each led by 0x1E)."""
    text = gzip.decompress(path.read_bytes()).decode("utf-8")
    return [json.loads(part) for part in text.split("\x1e") if part.strip()]


def event_name(record: dict) -> str:
    return str(record.get("name", "")).rsplit(":", 1)[-1]


def connection_facts(path: Path) -> dict:
    """One connection's numbers straight from its qlog: loss declarations by rule, how many
    a later spurious_loss names, and each entry into a congestion state with its trigger
    (the last packet_lost / spurious_loss since the previous state change, at most
    TRIGGER_WINDOW_S before the entry: explain's rule, docs/explain.md)."""
    events = records(path)[1:]  # the first record is the header
    assert all("time" in e for e in events)
    spurious_at: dict[int, list[float]] = {}
    for e in events:
        if event_name(e) == "spurious_loss":
            spurious_at.setdefault(int(e["data"]["packet_number"]), []).append(float(e["time"]))
    declared: Counter[tuple[str, str]] = Counter()
    entries: Counter[tuple[str, str, str]] = Counter()
    state, last_point = None, None
    for e in events:
        name, t = event_name(e), float(e["time"]) / 1e3  # qlog times in ms
        if name == "loss_timer_updated":  # a fired PTO would be a ProbeTimeout state
            data = e["data"]
            assert not (data.get("timer_type") == "pto" and data.get("event_type") == "expired")
        if name == "packet_lost":
            pn = int(e["data"]["header"]["packet_number"])
            later = any(s >= float(e["time"]) for s in spurious_at.get(pn, []))
            verdict = "spurious" if later else "real"
            rule = RULES[e["data"]["trigger"]]
            declared[(rule, verdict)] += 1
            last_point = (t, f"LossDetected rule={rule}", verdict)
        elif name == "spurious_loss":
            last_point = (t, "SpuriousLoss", "")
        elif name == "congestion_state_updated":
            new = STATES[e["data"]["new"]]
            if new != state:
                if last_point is not None and t - last_point[0] <= TRIGGER_WINDOW_S:
                    trigger, verdict = last_point[1], last_point[2]
                else:
                    trigger, verdict = ("trace start" if state is None else f"after {state}"), ""
                entries[(new, trigger, verdict)] += 1
            state, last_point = new, None
    return {
        "declared": declared,
        "entries": entries,
        "spurious_events": sum(map(len, spurious_at.values())),
    }


def side_facts(side: str) -> dict:
    files = sorted((DATA / side).glob("*.sqlog.gz"))
    assert len(files) == 6
    facts = [connection_facts(f) for f in files]
    return {
        "declared": sum((f["declared"] for f in facts), Counter()),
        "entries": sum((f["entries"] for f in facts), Counter()),
        "spurious_events": sum(f["spurious_events"] for f in facts),
    }


@pytest.fixture(scope="module")
def result():
    a, b = (read(DATA / side) for side in SIDES)
    return explain(a, b, label_a=SIDES[0], label_b=SIDES[1], **FAST)


def test_the_files_are_quic_go_qlogs_without_statemine_lines():
    for side in SIDES:
        for path in sorted((DATA / side).glob("*.sqlog.gz")):
            raw = gzip.decompress(path.read_bytes())
            assert b"STATEMINE" not in raw and b"LossDetected" not in raw
            header = records(path)[0]
            assert header["trace"]["vantage_point"]["type"] == "server"
            names = Counter(event_name(e) for e in records(path)[1:])
            assert names["packet_lost"] > 0 and names["congestion_state_updated"] > 0


def test_losses_are_the_qlogs_declarations(result):
    """Per side: declared losses by rule and their spurious/real verdicts (a later
    spurious_loss for the packet number) against the JSON counts."""
    losses = result.losses.set_index("side")
    for side in SIDES:
        want = side_facts(side)
        d = want["declared"]
        row = losses.loc[side]
        assert row["declared"] == sum(d.values())
        assert row["declared_packet"] == d[("packet", "spurious")] + d[("packet", "real")]
        assert row["declared_time"] == d[("time", "spurious")] + d[("time", "real")]
        assert row["spurious"] == d[("packet", "spurious")] + d[("time", "spurious")]
        assert row["real"] == d[("packet", "real")] + d[("time", "real")]
        assert row["unknown"] == 0
        assert row["stack_spurious_events"] == want["spurious_events"]
    # the jitter reorders packets: far more declarations, most of them spurious
    a, b = losses.loc[SIDES[0]], losses.loc[SIDES[1]]
    assert b["spurious"] > 3 * a["spurious"] and b["spurious"] > b["real"]
    # docs/explain.md's figures
    assert (a["declared"], b["declared"], a["spurious"], b["spurious"]) == (36, 205, 9, 179)
    recovery = result.states.set_index("state").loc["Recovery"]
    assert f"{recovery['rate_ratio']:.2g}" == "0.98" and f"{recovery['dwell_ratio']:.2g}" == "1.3"
    lead = result.triggers[result.triggers["state"] == "Recovery"]
    lead_b = lead.loc[lead["entries_b"].idxmax()]
    assert (lead_b["trigger"], lead_b["verdict"]) == ("LossDetected rule=packet", "spurious")


def test_triggers_are_the_qlogs_loss_triggers_and_counts(result):
    """Every entry's trigger and its count per side equal the qlog's own: the entries into
    Recovery follow quic-go's packet_lost events (by their trigger), verdicts from its
    spurious_loss events."""
    t = result.triggers
    for col, side in (("entries_a", SIDES[0]), ("entries_b", SIDES[1])):
        want = side_facts(side)["entries"]
        got = Counter(
            {
                (r.state, r.trigger, r.verdict): int(getattr(r, col))
                for r in t.itertuples(index=False)
                if getattr(r, col) > 0
            }
        )
        assert got == want, side
    recovery = t[t["state"] == "Recovery"]
    assert set(recovery["trigger"]) <= {"LossDetected rule=packet", "LossDetected rule=time"}
    assert set(recovery["evidence"]) <= {
        "stack: SpuriousLoss for its packet",
        "stack: no SpuriousLoss for its packet",
    }
    assert set(recovery["knob"]) == {
        "reordering threshold (packets; STATEMINE_REORDERING_THRESHOLD)",
        "time threshold (x RTT; STATEMINE_TIME_THRESHOLD)",
    }


def test_state_entries_and_rates_against_the_json(result):
    """explain.csv's entries per state equal the JSON's state changes; each rate is entries
    over the side's connection seconds (first state change to the last event, per file)."""
    s = result.states.set_index("state")
    for side, suffix in zip(SIDES, ("a", "b"), strict=True):
        entries = Counter()
        seconds = 0.0
        for path in sorted((DATA / side).glob("*.sqlog.gz")):
            facts = connection_facts(path)
            for (state, _, _), n in facts["entries"].items():
                entries[state] += n
            events = records(path)[1:]
            first = min(
                float(e["time"]) for e in events if event_name(e) == "congestion_state_updated"
            )
            seconds += (max(float(e["time"]) for e in events) - first) / 1e3
        for state in s.index:
            assert s.loc[state, f"entries_{suffix}"] == entries[state], (side, state)
            assert np.isclose(s.loc[state, f"rate_{suffix}"], entries[state] / seconds, rtol=1e-6)
    # the decomposition is exact on these too
    assert np.allclose(s["rate_part"] + s["dwell_part"], s["delta"])


def test_explain_cli_on_the_pair(tmp_path):
    out = tmp_path / "out"
    args = ["explain", str(DATA / SIDES[0]), str(DATA / SIDES[1]), "--out", str(out)]
    res = CliRunner().invoke(main, [*args, "--permutations", "999", "--bootstrap", "100"])
    assert res.exit_code == 0, res.output
    triggers = pd.read_csv(out / "triggers.csv")
    assert (triggers["trigger"] == "LossDetected rule=packet").any()
    assert "Recovery" in (out / "explain.md").read_text(encoding="utf-8")


def test_summary_names_a_knob_without_labels_cleanly(result):
    """qlog traces carry no lab labels: the knob is named without an empty value list."""
    limited = [p for p in result.summary if p.startswith("ApplicationLimited")]
    assert (
        limited
        and "client read rate / receive window (flow control) governs this trigger." in limited[0]
    )
    assert not any("governs this trigger: ." in p for p in result.summary)
