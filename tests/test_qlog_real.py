"""qlog written by real stacks (../shared/real-qlog, read in place), read as their authors
meant: picoquic's per-controller numbers, the starting state from ``old``, one trace per
path. Every figure is checked against a plain loop over the file's JSON."""

from __future__ import annotations

import gzip
import json
import math
import re

import pytest
from shared_data import shared

from statemine.parse.qlog import read_qlog
from statemine.stats.summary import state_stats

NEWRENO = {"0": "SlowStart", "1": "CongestionAvoidance"}


def warnings_of(ts):
    return json.loads(ts.meta["warnings"])


def picoquic_events(path):
    """[(time s, path_id, event name, data)] of a picoquic draft-00 text qlog, by a plain loop."""
    doc = json.loads(path.read_text())
    trace = doc["traces"][0]
    fields = trace["event_fields"]
    per_second = 1e6 if trace["configuration"]["time_units"] == "us" else 1e3
    out = []
    for event in trace["events"]:
        record = dict(zip(fields, event))
        out.append(
            (
                record["relative_time"] / per_second,
                record.get("path_id"),
                record["event"],
                record["data"],
            )
        )
    return out


@pytest.mark.parametrize("name", ["qlog_trace_ref.txt", "qlog_trace_ecn_ref.txt"])
def test_picoquic_reference_trace_is_newreno_from_its_cc_param_and_starts_in_old(name):
    path = shared("real-qlog", "picoquic", name)
    events = picoquic_events(path)
    # the loop: the first state event's old is the state from the first event on
    changes = [(t, d) for t, _, e, d in events if e == "congestion_state_updated"]
    start, end = events[0][0], max(t for t, *_ in events)
    expected = [(start, NEWRENO[changes[0][1]["old"]])] + [
        (t, NEWRENO[d["new"]]) for t, d in changes
    ]

    ts = read_qlog(path)
    rows = ts.events[ts.events["kind"] == "state"]
    assert [(round(t, 9), s) for t, s in zip(rows["time"], rows["state"])] == [
        (round(t, 9), s) for t, s in expected
    ]
    row = ts.traces.iloc[0]
    assert row["implementation"] == "picoquic-newreno" and row["end"] == pytest.approx(
        end, abs=1e-12
    )
    assert row["file_events"] == len(events)
    assert any(
        "picoquic's controller read as picoquic-newreno" in w and "cc_param" in w
        for w in warnings_of(ts)
    )
    # no time unattributed: fractions over [first event, end] from the loop's change times
    fractions = state_stats(ts).set_index("state")["time_fraction"]
    spans = {}
    bounds = [t for t, _ in expected] + [end]
    for (t0, state), t1 in zip(expected, bounds[1:]):
        spans[state] = spans.get(state, 0.0) + (t1 - t0)
    total = end - start
    for state, span in spans.items():
        assert fractions[state] == pytest.approx(span / total, abs=1e-9)
    assert fractions.sum() == pytest.approx(1.0, abs=1e-9)


def test_picoquic_reference_trace_forced_cubic_reads_recovery():
    ts = read_qlog(
        shared("real-qlog", "picoquic", "qlog_trace_ref.txt"), implementation="picoquic-cubic"
    )
    assert ts.events.loc[ts.events["kind"] == "state", "state"].tolist() == [
        "SlowStart",
        "Recovery",
    ]
    assert ts.traces["implementation"].tolist() == ["picoquic-cubic"]


def test_picoquic_multipath_one_trace_per_path_with_its_own_metrics() -> None:
    path = shared("real-qlog", "picoquic", "multipath_qlog_ref.txt")
    events = picoquic_events(path)
    per_path: dict[int, list] = {}
    for t, p, e, d in events:
        per_path.setdefault(p, []).append((t, e, d))
    ts = read_qlog(path, derive_states=True)
    traces = ts.traces.set_index("path")
    assert sorted(traces.index) == sorted(str(p) for p in per_path)
    for p, evs in per_path.items():
        row = traces.loc[str(p)]
        assert row["trace"].endswith(f"/path{p}")
        assert row["file_events"] == len(evs)
        assert row["end"] == pytest.approx(max(t for t, *_ in evs), abs=1e-12)
        cwnds = {d["cwnd"] for _, e, d in evs if e == "metrics_updated" and "cwnd" in d}
        mine = ts.events.loc[ts.events["trace"] == row["trace"], "cwnd"].dropna()
        assert set(mine) <= cwnds  # never another path's window
    # path 1 follows path 0's window nowhere: its derived states have no Recovery
    one = ts.events[
        (ts.events["trace"] == traces.loc["1", "trace"]) & (ts.events["kind"] == "state")
    ]
    assert "Recovery" not in set(one["state"])


def test_chromium_trace_app_limited_pacing_and_losses():
    path = shared("real-qlog", "qvis", "quictrace_example_github.qlog.gz")
    doc = json.loads(gzip.decompress(path.read_bytes()))
    trace = doc["traces"][0]
    fields = [f.lower() for f in trace["event_fields"]]
    records = [dict(zip(fields, e)) for e in trace["events"]]
    lost = sum(1 for r in records if str(r.get("event_type")).upper() == "PACKET_LOST")
    limited = [
        float(r["relative_time"]) / 1e6
        for r in records
        if str(r.get("event_type")).upper() == "CUSTOM_CC_APPLICATION_LIMITED"
    ]
    last_pacing = [
        r["data"]["pacing_rate"]
        for r in records
        if str(r.get("event_type")).upper() == "METRIC_UPDATE" and "pacing_rate" in r["data"]
    ][-1]
    ts = read_qlog(path, derive_states=True)
    ev = ts.events
    assert (ev["state"] == "LossDetected").sum() == lost == 238
    app = ev[(ev["state"] == "ApplicationLimited") & (ev["kind"] == "event")]  # the logged mark
    assert app["time"].tolist() == pytest.approx(limited) and len(limited) == 1
    assert ev["pacing_rate"].dropna().iloc[-1] == last_pacing
    assert ts.traces["file_events"].tolist() == [len([r for r in records if r.get("event_type")])]
    # the converter's closing empty event "[]" is no event, and no warning
    assert trace["events"][-1] == [] and not any("event 18556" in w for w in warnings_of(ts))


# -- hand-written: quic-go v0.65 vocabulary, quiche by its names, bad input ---------------------
def seq(tmp_path, header: dict, events: list[dict], name="t.sqlog"):
    path = tmp_path / name
    path.write_bytes(b"".join(b"\x1e" + json.dumps(r).encode() + b"\n" for r in [header, *events]))
    return path


V065 = {
    "file_schema": "urn:ietf:params:qlog:file:sequential",
    "serialization_format": "application/qlog+json-seq",
    "title": "quic-go qlog",
    "trace": {"vantage_point": {"type": "server"}, "common_fields": {"group_id": "ab"}},
    "qlog_format": "JSON-SEQ",
    "qlog_version": "0.3",
}


def test_quicgo_v065_header_spurious_loss_pto_and_loss_triggers(tmp_path):
    events = [
        {"time": 0, "name": "recovery:congestion_state_updated", "data": {"new": "slow_start"}},
        {
            "time": 1,
            "name": "recovery:metrics_updated",
            "data": {"congestion_window": 40960, "pacing_rate": 8e6},
        },
        {
            "time": 2,
            "name": "recovery:loss_timer_updated",
            "data": {"event_type": "set", "timer_type": "pto"},
        },
        {
            "time": 3,
            "name": "recovery:loss_timer_updated",
            "data": {
                "event_type": "expired",
                "timer_type": "ack",
                "packet_number_space": "application_data",
            },
        },
        {
            "time": 3,
            "name": "recovery:packet_lost",
            "data": {"header": {"packet_number": 7}, "trigger": "time_threshold"},
        },
        {
            "time": 4,
            "name": "recovery:packet_lost",
            "data": {"header": {"packet_number": 8}, "trigger": "reordering_threshold"},
        },
        {
            "time": 5,
            "name": "recovery:spurious_loss",
            "data": {"packet_number": 7, "reordering_packets": 5},
        },
        {
            "time": 10,
            "name": "recovery:loss_timer_updated",
            "data": {"event_type": "expired", "timer_type": "pto"},
        },
        {"time": 12, "name": "transport:packet_sent", "data": {}},
        {"time": 14, "name": "recovery:metrics_updated", "data": {"bytes_in_flight": 100}},
        {"time": 20, "name": "transport:packet_received", "data": {}},
    ]
    ts = read_qlog(seq(tmp_path, V065, events))
    ev = ts.events
    got = [
        (round(t * 1e3, 6), k, s, f)
        for t, k, s, f in zip(ev["time"], ev["kind"], ev["state"], ev["fields"])
    ]
    assert got == [
        (0.0, "state", "SlowStart", "raw=slow_start ev=0"),
        (3.0, "event", "LossDetected", "rule=time pn=7 ev=4"),
        (4.0, "event", "LossDetected", "rule=packet pn=8 ev=5"),
        (5.0, "event", "SpuriousLoss", "pn=7 ev=6"),
        (10.0, "state", "ProbeTimeout", "raw=pto_expired ev=7"),  # only a fired PTO timer
        (
            14.0,
            "state",
            "SlowStart",
            "raw=slow_start after=pto",
        ),  # the next metrics update (an ACK)
    ]
    assert (
        math.isnan(ev["pacing_rate"].iloc[0]) and ev["pacing_rate"].iloc[1:].tolist() == [8e6] * 5
    )
    row = ts.traces.iloc[0]
    assert (
        row["qlog_version"] == "urn:ietf:params:qlog:file:sequential"
    )  # the newer schema, not "0.3"
    assert row["file_events"] == len(events) and row["end"] == 0.02


def test_quiche_recognised_by_its_state_names_whatever_the_title(tmp_path):
    header = {"qlog_format": "JSON-SEQ", "qlog_version": "0.3", "title": "my app", "trace": {}}
    names = [
        "bbr_startup",
        "bbr_drain",
        "bbr_probe_bw_down",
        "bbr_probe_bw_cruise",
        "bbr_probe_bw_refill",
        "bbr_probe_bw_up",
        "bbr_probe_rtt",
        "conservative_slow_start",
    ]
    events = [
        {"time": i, "name": "recovery:congestion_state_updated", "data": {"new": n}}
        for i, n in enumerate(names)
    ]
    ts = read_qlog(seq(tmp_path, header, events))
    assert ts.traces["implementation"].tolist() == ["quiche"]
    st = ts.events
    assert st["state"].tolist() == ["BBRStartup", "BBRDrain"] + ["BBRProbeBW"] * 4 + [
        "BBRProbeRTT",
        "ConservativeSlowStart",
    ]
    # the ProbeBW sub-phases stay available
    assert st["fields"].str.extract(r"raw=(\S+)")[0].tolist() == names
    assert warnings_of(ts) == []


def test_bad_input_is_warned_about_with_what_was_assumed(tmp_path):
    header = {
        "qlog_format": "JSON-SEQ",
        "qlog_version": "0.3",
        "title": "quic-go qlog",
        "trace": {},
    }
    events = [
        {
            "time": 0,
            "name": "recovery:congestion_state_updated",
            "data": {"old": "slow_start", "new": "recovery"},
        },
        {"time": 1, "name": "recovery:metrics_updated", "data": {"congestion_window": "lots"}},
        {
            "time": 2,
            "name": "recovery:congestion_state_updated",
            "data": {"old": "slow_start", "new": "congestion_avoidance"},
        },  # old contradicts the chain
        {
            "time": 3,
            "name": "recovery:metrics_updated",
            "path_id": 1.5,
            "data": {"congestion_window": 10},
        },
    ]
    ts = read_qlog(seq(tmp_path, header, events))
    w = warnings_of(ts)
    assert any(":3:" in x and "'lots' is not a number; read as not logged" in x for x in w)
    assert any(
        ":4:" in x and "'old' is 'slow_start' but the previous state event entered 'recovery'" in x
        for x in w
    )
    assert any(":5:" in x and "path_id 1.5 (float) is not a path number" in x for x in w)
    # the path's own connection has metrics only: left out, said so
    assert any("t.sqlog#0/path1.5: no congestion_state_updated events" in x for x in w)
    assert ts.traces["trace"].tolist() == ["t.sqlog#0"]
    # numbers as state names without a table: kept, and the warning says how to choose one
    header = {"qlog_format": "JSON-SEQ", "qlog_version": "0.3", "trace": {}}
    numbers = [
        {"time": t, "name": "recovery:congestion_state_updated", "data": {"new": n}}
        for t, n in ((0, "1"), (5, "2"))
    ]
    ts = read_qlog(seq(tmp_path, header, numbers, "n.sqlog"))
    w = [x for x in warnings_of(ts) if "state name '1'" in x]
    assert len(w) == 1 and "kept as is" in w[0] and "--implementation" in w[0]
    assert set(ts.events["state"]) == {"1", "2"}


def test_picoquic_numbers_without_hint_say_they_are_ambiguous(tmp_path):
    doc = {
        "qlog_version": "draft-01",
        "title": "picoquic",
        "traces": [
            {
                "vantage_point": {"type": "server"},
                "event_fields": ["relative_time", "path_id", "category", "event", "data"],
                "configuration": {"time_units": "us"},
                "events": [
                    [0, 0, "transport", "packet_sent", {}],
                    [100, 0, "recovery", "congestion_state_updated", {"old": "0", "new": "1"}],
                    [200, 0, "transport", "packet_sent", {}],
                ],
            }
        ],
    }
    path = tmp_path / "p.qlog"
    path.write_text(json.dumps(doc))
    ts = read_qlog(path)
    (w,) = [x for x in warnings_of(ts) if "picoquic" in x]
    assert (
        "ambiguous" in w
        and "picoquic-newreno" in w
        and "--implementation" in w
        and "picoquic-cubic" in w
    )
    assert ts.events["state"].tolist() == ["SlowStart", "CongestionAvoidance"]
    ts = read_qlog(path, implementation="picoquic-bbr")
    assert ts.events["state"].tolist() == ["BBRStartup", "BBRDrain"]
    assert not [x for x in warnings_of(ts) if "picoquic" in x]


# -- a folder with a dead connection ------------------------------------------------------------
def test_folder_skips_a_file_without_congestion_data_unless_strict(tmp_path):
    from click.testing import CliRunner

    from statemine.cli import main
    from statemine.parse import read

    header = {
        "qlog_format": "JSON-SEQ",
        "qlog_version": "0.3",
        "title": "quic-go qlog",
        "trace": {},
    }
    good = [
        {"time": 0, "name": "recovery:congestion_state_updated", "data": {"new": "slow_start"}},
        {"time": 10, "name": "recovery:congestion_state_updated", "data": {"new": "recovery"}},
    ]
    dead = [{"time": 0, "name": "transport:packet_sent", "data": {}}]
    folder = tmp_path / "runs"
    folder.mkdir()
    seq(folder, header, good, "a.sqlog")
    seq(folder, header, dead, "b.sqlog")
    ts = read(folder)
    assert ts.n_traces == 1
    (w,) = [x for x in warnings_of(ts) if "b.sqlog" in x]
    assert "no congestion state" in w and "file skipped" in w and "--strict" in w
    res = CliRunner().invoke(main, ["infer", str(folder)])
    assert res.exit_code == 0 and "b.sqlog" in res.output
    res = CliRunner().invoke(main, ["infer", "--strict", str(folder)])
    assert res.exit_code == 2 and "b.sqlog" in res.output and "Traceback" not in res.output
    (folder / "a.sqlog").unlink()
    seq(folder, header, dead, "c.sqlog")
    res = CliRunner().invoke(main, ["infer", str(folder)])
    assert res.exit_code == 2 and "none of the 2 files has congestion data" in res.output


# -- documents streamed (two ijson passes) read as documents read whole ----------------------------
DATA = __import__("pathlib").Path(__file__).parent / "data" / "qlog"


@pytest.mark.parametrize(
    "name",
    [
        "draft00.qlog",
        "draft00_mvfst.qlog",
        "draft01.qlog",
        "draft01_picoquic.qlog",
        "draft02.qlog",
        "v04.qlog",
        "file_schema.qlog",
    ],
)
def test_streamed_document_reads_like_the_whole_document(name, monkeypatch):
    import statemine.parse.qlog as q

    whole = read_qlog(DATA / name, derive_states=True)
    monkeypatch.setattr(q, "_STREAM_MIN_BYTES", 0)
    seen = []
    real = q._streamed_document_traces
    monkeypatch.setattr(q, "_streamed_document_traces", lambda *a: seen.append(1) or real(*a))
    streamed = read_qlog(DATA / name, derive_states=True)
    assert seen == [1]
    pd_testing = __import__("pandas").testing
    pd_testing.assert_frame_equal(streamed.events, whole.events)
    pd_testing.assert_frame_equal(streamed.traces, whole.traces)
    assert warnings_of(streamed) == warnings_of(whole)


def test_cut_off_document_is_not_streamed_but_repaired(monkeypatch):
    import statemine.parse.qlog as q

    monkeypatch.setattr(q, "_STREAM_MIN_BYTES", 0)
    ts = read_qlog(DATA / "truncated.qlog")
    assert any("ends before it is complete" in w for w in warnings_of(ts))


# -- derived states against the states quic-go logs (real quic-go, the project's lab) ------------
@pytest.mark.slow
@pytest.mark.parametrize("version", ["v0.48.2", "v0.65.0"])
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("jitter", [0.0, 0.002])
def test_derived_states_agree_with_quic_gos_logged_states(version, seed, jitter, tmp_path):
    """quic-go logs its states and the packets: with the state events removed, the RFC 9002
    derivation (recovery periods from packets and ACKs, ApplicationLimited from bytes in
    flight at ACKs, quic-go's own rules: docs/qlog.md) gives each state's time fraction
    within 1 point of the logged one (1 % loss, alone and with 2 ms jitter, seeds 1-3,
    two 1 MB objects; before issue 26's per-stack rules up to several points)."""
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from test_quicgo import link, make_config

    from statemine.lab.runners import quicgo
    from statemine.stats.summary import state_stats

    qdir = tmp_path / "qlog"
    qdir.mkdir()
    res = quicgo.run(
        make_config(
            tmp_path, version, seed=seed, down=link(loss=0.01, jitter_s=jitter), size=1_000_000
        ),
        qlog_dir=qdir,
    )
    assert res["ok"], res["error"]
    (server,) = qdir.glob("*_server.*qlog")
    records = server.read_bytes().split(b"\x1e")
    stripped = tmp_path / "stripped.sqlog"
    stripped.write_bytes(b"\x1e".join(r for r in records if b"congestion_state_updated" not in r))
    logged = read_qlog(server)
    derived = read_qlog(stripped, derive_states=True)
    assert derived.traces["derived"].all() and not logged.traces["derived"].any()
    assert (
        derived.events.loc[derived.events["kind"] == "state", "fields"].str.startswith(
            "derived=rfc9002"
        )
    ).all()
    a = state_stats(logged).set_index("state")["time_fraction"]
    b = state_stats(derived).set_index("state")["time_fraction"]
    assert all(
        name.endswith(" (derived)") for name in b.index
    )  # marked, never pooled with logged states
    b.index = [name.removesuffix(" (derived)") for name in b.index]
    for state in set(a.index) | set(b.index):
        assert abs(a.get(state, 0.0) - b.get(state, 0.0)) < 0.01, (
            state,
            a.get(state),
            b.get(state),
        )
    assert a.get("Recovery", 0) > 0.05  # the lossy path gave recovery periods to compare


def test_derived_states_are_marked_in_every_output(tmp_path):
    """A derived trace's states carry ' (derived)' in the printed table, states.csv,
    transitions.csv, model.json and the diagram; pooled with logged traces they stay apart."""
    from click.testing import CliRunner

    from statemine.cli import main

    header = {
        "qlog_format": "JSON-SEQ",
        "qlog_version": "0.3",
        "title": "quic-go qlog",
        "trace": {},
    }
    logged = [
        {"time": 0, "name": "recovery:congestion_state_updated", "data": {"new": "slow_start"}},
        {"time": 10, "name": "recovery:congestion_state_updated", "data": {"new": "recovery"}},
        {"time": 20, "name": "transport:packet_sent", "data": {}},
    ]
    metrics = [
        {"time": t, "name": "recovery:metrics_updated", "data": {"congestion_window": c}}
        for t, c in [(0, 10000), (5, 20000), (10, 10000), (15, 10000), (20, 12000)]
    ]
    folder = tmp_path / "in"
    folder.mkdir()
    seq(folder, header, logged, "a.sqlog")
    seq(folder, header, metrics, "b.sqlog")
    out = tmp_path / "out"
    res = CliRunner().invoke(
        main, ["infer", "--derive-states", "--no-svg", "--out", str(out), str(folder)]
    )
    assert res.exit_code == 0, res.output
    assert "Recovery (derived)" in res.output and "SlowStart (derived)" in res.output
    states = __import__("pandas").read_csv(out / "states.csv")
    names = set(states["state"])
    assert {"SlowStart", "Recovery", "SlowStart (derived)", "Recovery (derived)"} <= names
    # each kept apart: the logged ones' time from a.sqlog only (10 ms SlowStart, 10 ms Recovery)
    t = states.set_index("state")["time_s"]
    assert t["SlowStart"] == pytest.approx(0.010) and t["Recovery"] == pytest.approx(0.010)
    assert t["SlowStart (derived)"] == pytest.approx(0.010) and t[
        "Recovery (derived)"
    ] == pytest.approx(0.010)
    # a derived column: true exactly for the marked names (transitions: either end)
    assert (states["derived"] == states["state"].str.endswith(" (derived)")).all()
    trans = __import__("pandas").read_csv(out / "transitions.csv")
    either = trans["src"].str.endswith(" (derived)") | trans["dst"].str.endswith(" (derived)")
    assert (trans["derived"] == either).all() and either.any() and not either.all()
    model = json.loads((out / "model.json").read_text())
    flagged = {n["id"] for n in model["nodes"] if n.get("derived")}
    assert flagged == {n for n in names if n.endswith(" (derived)")}
    dot = (out / "model.dot").read_text()
    assert "Recovery (derived)" in dot
    # drawn dashed, the logged states not
    lines = [line for line in dot.splitlines() if "<b>" in line]
    assert all(("dashed" in line) == ("(derived)" in line) for line in lines) and len(lines) == len(
        names
    )
    # the HTML report: the names, the derived column and a note saying what the mark means
    html = tmp_path / "r.html"
    res = CliRunner().invoke(main, ["report", "--derive-states", "--out", str(html), str(folder)])
    assert res.exit_code == 0, res.output
    page = html.read_text()
    assert "Recovery (derived)" in page and "derived from qlog metrics" in page
    assert re.search(r"<th[^>]*>derived</th>", page), re.findall(r"<th[^>]*>[^<]*</th>", page)[:40]
    # logged states only: no derived column, no note, no node attribute
    plain = tmp_path / "plain"
    res = CliRunner().invoke(
        main, ["infer", "--no-svg", "--out", str(plain), str(folder / "a.sqlog")]
    )
    assert res.exit_code == 0, res.output
    assert "derived" not in (plain / "states.csv").read_text().splitlines()[0]
    assert '"derived"' not in (plain / "model.json").read_text()


def test_metrics_table_keeps_every_update_and_timelines_draw_from_it():
    from statemine.output.timeline import metric_series

    path = shared("real-qlog", "qvis", "quictrace_example_github.qlog.gz")
    doc = json.loads(gzip.decompress(path.read_bytes()))
    trace = doc["traces"][0]
    fields = [f.lower() for f in trace["event_fields"]]
    updates = [
        (float(r["relative_time"]) / 1e6, r["data"])
        for r in (dict(zip(fields, e)) for e in trace["events"])
        if str(r.get("event_type")).upper() == "METRIC_UPDATE"
    ]
    ts = read_qlog(path, derive_states=True)
    m = ts.metrics
    assert len(m) == len(updates) == 3679
    assert m["time"].tolist() == pytest.approx([t for t, _ in updates], abs=1e-12)
    cwnd = [(t, d["cwnd"]) for t, d in updates if "cwnd" in d]
    series = metric_series(ts, ts.traces["trace"].iloc[0], "cwnd")
    origin = ts.events["time"].min()
    assert len(series) == len(cwnd) > 10 * (ts.events["kind"] == "state").sum()  # full resolution
    assert series["value"].tolist() == [c for _, c in cwnd]
    assert series["time"].tolist() == pytest.approx([t - origin for t, _ in cwnd], abs=1e-9)
    pacing = [d["pacing_rate"] for _, d in updates if "pacing_rate" in d]
    assert m["pacing_rate"].dropna().tolist() == pacing
    # kept through select and concat
    assert len(ts.select({"role": "server"}).metrics) == 3679
    from statemine.traces import concat

    other = read_qlog(shared("real-qlog", "picoquic", "qlog_trace_ref.txt"))
    both = concat([ts, other])
    assert len(both.metrics) == 3679 + len(other.metrics) and set(both.metrics["trace"]) == set(
        both.traces["trace"]
    )


def test_printed_table_counts_the_files_events_and_statemine_rows():
    from click.testing import CliRunner

    from statemine.cli import main

    path = shared("real-qlog", "picoquic", "qlog_trace_ref.txt")
    n_file = len(picoquic_events(path))
    ts = read_qlog(path)
    res = CliRunner().invoke(main, ["infer", str(path)])
    assert res.exit_code == 0, res.output
    assert f"1 traces, {len(ts.events)} rows from {n_file} events in the files" in " ".join(
        res.output.split()
    )
