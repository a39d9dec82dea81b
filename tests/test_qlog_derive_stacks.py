"""Per-stack derivation rules (statemine.parse.derive_stacks, docs/qlog.md "Derived
states"): aioquic's ApplicationLimited with its pacer, quiche's delivery-rate app-limited
period, aioquic's CRYPTO retransmissions, a restored window followed by a new loss, and
the agreement's clock offset. Each expected timeline is worked out by hand in the test
from the stack's rule, on qlogs written here."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from test_qlog_derive import _acked, _metrics, _rollback_and_pto_events, _sent, _write_seq

from statemine.parse.derive_stacks import AioquicPacer
from statemine.parse.qlog import read_qlog


def _write(path, title: str, events: list[dict]) -> None:
    """A JSON-SEQ (0.3) qlog titled ``title`` (the stack is detected from it)."""
    header = {"qlog_format": "JSON-SEQ", "qlog_version": "0.3", "title": title, "trace": {}}
    path.write_bytes(b"".join(b"\x1e" + json.dumps(r).encode() + b"\n" for r in [header, *events]))


def _states(path) -> list[tuple[float, str]]:
    rows = read_qlog(path, derive_states=True).events.query("kind == 'state'")
    return list(zip(rows["time"].round(6), rows["state"].str.removesuffix(" (derived)")))


def _stream(t: float, pn: int, fin: bool = False) -> dict:
    event = _sent(t, pn)
    event["data"]["frames"] = [{"frame_type": "stream", "stream_id": 0, "fin": fin}]
    return event


def test_aioquic_pacer_replica_by_hand():
    """QuicPacketPacer's arithmetic: 12000 B over 30 ms is 400 kB/s, so a packet every
    1200/400000 = 3 ms and a bucket of max(2400, min(12000 // 4, 19200)) / 400000 = 7.5 ms."""
    pacer = AioquicPacer()
    assert not pacer.holds(0.0)  # no rate yet: no pacing
    pacer.update_rate(12000.0, 0.030)
    assert pacer.packet_time == pytest.approx(0.003)
    assert pacer.bucket_max == pytest.approx(0.0075)
    assert not pacer.holds(0.010)  # 10 ms later the bucket is full: 7.5 ms
    pacer.after_send(0.010)
    pacer.after_send(0.010)
    assert pacer.bucket_time == pytest.approx(0.0015)
    assert not pacer.holds(0.010)
    pacer.after_send(0.010)  # 1.5 ms < 3 ms: emptied
    assert pacer.bucket_time == 0.0 and pacer.holds(0.010)
    assert not pacer.holds(0.0115)  # 1.5 ms later: 1.5 ms in the bucket


def _aioquic_events() -> list[dict]:
    """aioquic sends 10 packets at 0 (window full), an ACK at 30 ms frees the window and
    gives the pacer a rate (13200 B / 30 ms: a packet every 2.73 ms, a 7.5 ms bucket),
    3 packets drain the bucket (7.5 - 2 x 2.73 = 2.05 ms < 2.73: emptied), 1 more goes
    at 33 ms (3 ms refilled) and then the application has nothing left: room 8400 B."""
    events = [_stream(0, pn) for pn in range(10)]
    events += [_metrics(0, cwnd=12000, bytes_in_flight=12000)]
    events += [_acked(30, 9), _metrics(30, cwnd=13200, bytes_in_flight=0, smoothed_rtt=30)]
    events += [_stream(30, pn) for pn in (10, 11, 12)]
    events += [_metrics(30, cwnd=13200, bytes_in_flight=3600)]
    events += [_stream(33, 13), _metrics(33, cwnd=13200, bytes_in_flight=4800)]
    events += [_acked(60, 13), _metrics(60, cwnd=14400, bytes_in_flight=0, smoothed_rtt=30)]
    return events


def test_aioquic_application_limited_follows_its_send_opportunities_and_pacer(tmp_path):
    """At 30 ms the window has room (9600 B) but the pacer holds the 4th packet back: not
    application limited (aioquic's instrumentation gives no verdict then). At 33 ms the
    pacer let one packet go and the window keeps 8400 B >= one 1200-byte datagram:
    application limited from there. (The generic rule, quic-go's at each ACK, says so
    only at the ACK at 60 ms.)"""
    path = tmp_path / "aioquic.sqlog"
    _write(path, "aioquic qlog", _aioquic_events())
    assert _states(path) == [(0.0, "SlowStart"), (0.033, "ApplicationLimited")]


def test_quiche_application_limited_is_its_delivery_rate_period(tmp_path):
    """quiche marks the handshake app limited (no stream data yet) until an ACK
    acknowledges an application-space packet (60 ms: largest 14 > the mark); the packet
    with the FIN at 90 ms leaves room (24000 - 1200 B) with nothing queued: marked, and
    the ACK at 120 ms (of that packet, not above the mark's 34... nor above 35) keeps it."""
    events = [_metrics(0, cwnd=12000, bytes_in_flight=0)]
    events += [_stream(30, pn) for pn in range(5, 15)]
    events += [_metrics(30, cwnd=12000, bytes_in_flight=12000)]
    events += [_acked(60, 14), _metrics(60, cwnd=24000, bytes_in_flight=0)]
    events += [_stream(60, pn) for pn in range(15, 35)]
    events += [_metrics(60, cwnd=24000, bytes_in_flight=24000)]
    events += [_acked(90, 34), _metrics(90, cwnd=24000, bytes_in_flight=0)]
    events += [_stream(90, 35, fin=True), _metrics(90, cwnd=24000, bytes_in_flight=1200)]
    events += [_acked(120, 35), _metrics(120, cwnd=24000, bytes_in_flight=0)]
    path = tmp_path / "quiche.sqlog"
    _write(path, "quiche-server qlog", events)
    assert _states(path) == [
        (0.0, "ApplicationLimited"),
        (0.06, "SlowStart"),
        (0.09, "ApplicationLimited"),
    ]


def test_aioquic_crypto_retransmission_is_no_congestion_event(tmp_path):
    """aioquic declares its Handshake packets lost to resend their CRYPTO data at once
    (reschedule_data: no congestion event, the window stays): no recovery period. A loss
    of a 1-RTT packet in flight still begins one."""
    lost = {"time": 10, "name": "recovery:packet_lost", "data": {"type": "handshake"}}
    lost["data"]["packet_number"] = 1
    events = [_metrics(0, cwnd=12000, bytes_in_flight=1457), lost, _metrics(10, cwnd=12000)]
    events += [_stream(20, 3), _metrics(20, cwnd=12000, bytes_in_flight=12000)]
    events += [_acked(50, 3), _metrics(50, cwnd=12000, bytes_in_flight=12000)]
    path = tmp_path / "aioquic.sqlog"
    _write(path, "aioquic qlog", events)
    assert _states(path) == [(0.0, "SlowStart")]
    one_rtt = {"time": 10, "name": "recovery:packet_lost", "data": {"type": "1RTT"}}
    one_rtt["data"]["packet_number"] = 1
    events[1] = one_rtt
    events[1:1] = [_stream(5, 1), _metrics(5, cwnd=12000, bytes_in_flight=12000)]
    _write(path, "aioquic qlog", events)
    assert _states(path) == [(0.0, "SlowStart"), (0.01, "Recovery"), (0.05, "SlowStart")]


def test_a_new_loss_after_a_restored_window_begins_a_new_period(tmp_path):
    """The window cut at 10 ms is restored at 20 ms (a rollback: the period ends there);
    a new cut at 25 ms, before the first period's ACK-time end (30 ms), is a new congestion
    event, lasting until a packet sent after it (pn 5, sent at 26 ms) is acknowledged at
    40 ms."""
    events = _rollback_and_pto_events()[:8]  # the cut, the rollback, the ACK at 30 ms
    events += [_metrics(25, congestion_window=14000, bytes_in_flight=14000, ssthresh=14000)]
    events += [_sent(26, 5), _acked(40, 5)]
    events += [_metrics(45, congestion_window=14000, bytes_in_flight=14000)]
    events.sort(key=lambda e: e["time"])
    path = tmp_path / "rollback.sqlog"
    _write_seq(path, events)
    assert _states(path) == [
        (0.0, "SlowStart"),
        (0.01, "Recovery"),
        (0.02, "CongestionAvoidance"),
        (0.025, "Recovery"),
        (0.04, "CongestionAvoidance"),
    ]


def test_agreement_offset_puts_a_qlog_on_the_logs_clock(tmp_path):
    """A qlog counted from the connection's creation (quiche's) compared with a log of the
    run's clock: its times shifted by ``offset`` give the table of the unshifted file;
    connection_start is the log's first state row."""
    from statemine.parse.qlog.agreement import agreement, connection_start

    events = _rollback_and_pto_events()[:8]
    logged = [
        {"time": 0, "name": "recovery:congestion_state_updated", "data": {"new": "slow_start"}},
        {"time": 10, "name": "recovery:congestion_state_updated", "data": {"new": "recovery"}},
        *events,
    ]
    _write_seq(tmp_path / "logged.sqlog", logged)
    _write_seq(tmp_path / "same.sqlog", events)
    _write_seq(tmp_path / "late.sqlog", [{**e, "time": e["time"] - 5} for e in events])
    log = read_qlog(tmp_path / "logged.sqlog")
    assert connection_start(log) == 0.0
    want = agreement(log, read_qlog(tmp_path / "same.sqlog", derive_states=True))
    late = read_qlog(tmp_path / "late.sqlog", derive_states=True)
    got = agreement(log, late, offset=0.005)
    pd.testing.assert_frame_equal(got, want)
    assert not agreement(log, late)["logged_pct"].equals(want["logged_pct"])


@pytest.mark.slow
@pytest.mark.parametrize("seed, jitter_s", [(1, 0.0), (3, 0.002)])
def test_derived_states_agree_with_aioquics_logged_states(seed, jitter_s, tmp_path):
    """aioquic 1.7.2 in the lab (1 MB, 20 Mbit/s, 15 ms, 1 % loss down): the states derived
    from its qlog against the instrument patch's statemine lines of the same run, per
    state as shares of the time both cover (benchmarks/qlog_derive_agreement.py's runs;
    measured 0.0001 and 0.0001 points, 4.0 and 1.8 with the generic rule)."""
    from statemine.lab.runners import aioquic
    from statemine.lab.scenario import link_config
    from statemine.parse import read
    from statemine.parse.qlog.agreement import agreement

    def link(**kw):
        return link_config(20e6, 60000, 0.015, **kw)

    cfg = {
        "seed": seed,
        "implementation": "aioquic",
        "version": "1.7.2",
        "objects": {"count": 1, "size_bytes": 1_000_000},
        "client": {"profile": "desktop", "read_rate_bps": None, "per_packet_cpu_s": 0.0},
        "path": {"down": link(loss=0.01, jitter_s=jitter_s), "up": link()},
        "reordering_threshold": None,
        "time_threshold": None,
        "time_limit_s": 120.0,
        "log_path": str(tmp_path / "run.log"),
        "result_path": str(tmp_path / "run.result.json"),
    }
    qdir = tmp_path / "qlog"
    qdir.mkdir()
    assert aioquic.run(cfg, qlog_dir=qdir)["ok"]
    derived = read_qlog(qdir / "server.qlog", derive_states=True)  # aioquic logs no states
    logged = read(cfg["log_path"]).select({"role": "server"})
    table = agreement(logged, derived).set_index("state")
    assert table["gap_pts"].abs().max() < 0.01, table
    assert table.loc["Recovery", "logged_pct"] > 10 and table.loc["SlowStart", "logged_pct"] > 2
    assert abs(table.loc["Recovery", "gap_pts"]) < 0.1, table


def test_aioquic_on_a_wall_clock_keeps_the_generic_rule(tmp_path):
    """The same connection with wall-clock times (each packet logged 0.2 ms after the ACK
    that let it go, as aioquic's time.time() per event gives): which send opportunity a
    packet belongs to is not in the log, so the generic rule (quic-go's, at each ACK)
    applies: at the ACK at 60 ms the 4800 B in flight before it were more than three
    packets below cwnd and at most half of it."""
    late = []
    for e in _aioquic_events():
        sent_or_after = e["name"].endswith("packet_sent") or e["data"].get("bytes_in_flight")
        late.append({**e, "time": e["time"] + 0.2} if sent_or_after and e["time"] else e)
    path = tmp_path / "aioquic.sqlog"
    _write(path, "aioquic qlog", late)
    assert _states(path) == [(0.0, "SlowStart"), (0.06, "ApplicationLimited")]


@pytest.mark.parametrize("stack", ["aioquic", "quiche"])
def test_a_connection_read_in_parts_derives_the_same_states(stack, tmp_path):
    """The per-stack rules read a spilled connection chunk by chunk (20 rows at a time)
    and give the rows of the whole read: 40 rounds of the hand-worked connections."""
    from statemine.parse.qlog import read_qlog_parts

    events = []
    for k in range(40):
        shift, base = 100 * k, 40 * k
        for e in _aioquic_events():
            e = json.loads(json.dumps(e))
            e["time"] += shift
            header = e["data"].get("header")
            if header and e["name"].endswith("packet_sent"):
                header["packet_number"] += base
            for frame in e["data"].get("frames", []):
                if "acked_ranges" in frame:
                    frame["acked_ranges"] = [[0, frame["acked_ranges"][0][1] + base]]
            events.append(e)
    path = tmp_path / f"{stack}.sqlog"
    _write(path, f"{stack} qlog", events)
    want = read_qlog(path, derive_states=True)
    spill = tmp_path / "spill"
    spill.mkdir()
    parts = list(read_qlog_parts(path, spill, derive_states=True, slice_rows=20))
    got = pd.concat([p.events for p in parts if p.events is not None], ignore_index=True)
    assert len(parts) > 5
    state = want.events["kind"] == "state"
    assert state.sum() > 40  # both rules gave state changes in every round
    text = {"trace": str, "kind": str, "state": str, "fields": str}
    columns = list(want.events.columns)
    pd.testing.assert_frame_equal(
        got[columns].astype(text), want.events.astype(text), check_dtype=False
    )
