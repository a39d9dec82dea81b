"""States derived from cwnd/ssthresh metrics, checked against a plain-loop reference."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statemine.parse.derive import derive_states


def reference(cwnds, ssthreshes):
    """The derivation rule of statemine.parse.derive, one update at a time.

    Recovery from a reduction until the window grows; otherwise slow start below the
    threshold (logged, else the window after the latest reduction, else infinite).
    """
    out = []
    prev = None
    in_recovery = False
    inferred = math.inf
    logged = math.nan
    cwnd_known = math.nan
    for cwnd, ssthresh in zip(cwnds, ssthreshes):
        if not math.isnan(ssthresh):
            logged = ssthresh
        if math.isnan(cwnd):
            if math.isnan(cwnd_known):
                continue  # nothing known yet
            cwnd = cwnd_known
        cwnd_known = cwnd
        if prev is not None and cwnd < prev:
            in_recovery, inferred = True, cwnd
        elif prev is not None and cwnd > prev:
            in_recovery = False
        threshold = inferred if math.isnan(logged) else logged
        state = (
            "Recovery"
            if in_recovery
            else "SlowStart"
            if cwnd < threshold
            else "CongestionAvoidance"
        )
        out.append(state)
        prev = cwnd
    return out


def changes(states):
    return [s for i, s in enumerate(states) if i == 0 or s != states[i - 1]]


def test_reduction_recovery_then_avoidance_with_inferred_threshold():
    m = pd.DataFrame({"time": [0.0, 1, 2, 3, 4, 5, 6], "cwnd": [10.0, 20, 40, 20, np.nan, 20, 22]})
    out = derive_states(m)
    assert out[["time", "state"]].values.tolist() == [
        [0.0, "SlowStart"],
        [3.0, "Recovery"],
        [6.0, "CongestionAvoidance"],
    ]
    assert out["ssthresh_inferred"].tolist() == [math.inf, 20, 20]


def test_logged_ssthresh_wins_over_the_inferred_one():
    m = pd.DataFrame(
        {
            "time": [0.0, 1, 2, 3],
            "cwnd": [10.0, 20, 30, 40],
            "ssthresh": [np.nan, 25, np.nan, np.nan],
        }
    )
    out = derive_states(m)
    assert out[["time", "state"]].values.tolist() == [
        [0.0, "SlowStart"],
        [2.0, "CongestionAvoidance"],
    ]
    assert math.isnan(out["ssthresh"].iloc[0]) and out["ssthresh"].iloc[1] == 25.0
    assert out["ssthresh_inferred"].iloc[0] == math.inf and math.isnan(
        out["ssthresh_inferred"].iloc[1]
    )


def test_no_cwnd_gives_no_rows():
    out = derive_states(pd.DataFrame({"time": [0.0, 1.0], "cwnd": [np.nan, np.nan]}))
    assert out.empty and "state" in out.columns


def test_other_columns_are_carried():
    m = pd.DataFrame({"time": [0.0, 1.0], "cwnd": [10.0, 5.0], "line": [7, 9]})
    assert derive_states(m)["line"].tolist() == [7, 9]


windows = st.lists(
    st.one_of(st.just(math.nan), st.integers(1, 6).map(float)), min_size=1, max_size=40
)


@settings(max_examples=300, deadline=None)
@given(cwnds=windows, data=st.data())
def test_matches_the_plain_loop(cwnds, data):
    ssth = data.draw(
        st.lists(
            st.one_of(st.just(math.nan), st.integers(1, 6).map(float)),
            min_size=len(cwnds),
            max_size=len(cwnds),
        )
    )
    m = pd.DataFrame({"time": np.arange(len(cwnds), dtype=float), "cwnd": cwnds, "ssthresh": ssth})
    out = derive_states(m)
    assert out["state"].tolist() == changes(reference(cwnds, ssth))
    # each row is the first update of its state run
    per_update = reference(cwnds, ssth)
    known = [t for t, c in enumerate(cwnds) if not all(math.isnan(x) for x in cwnds[: t + 1])]
    starts = [
        known[i] for i in range(len(per_update)) if i == 0 or per_update[i] != per_update[i - 1]
    ]
    assert out["time"].tolist() == starts


# -- RFC 9002 derivation on qlog with packet events --------------------------------------------
def _write_seq(path, events: list[dict]) -> None:
    """A JSON-SEQ (0.3) qlog of ``events`` (times in ms)."""
    import json

    header = {"qlog_format": "JSON-SEQ", "qlog_version": "0.3", "title": "t", "trace": {}}
    path.write_bytes(b"".join(b"\x1e" + json.dumps(r).encode() + b"\n" for r in [header, *events]))


def _sent(t: float, pn: int) -> dict:
    return {
        "time": t,
        "name": "transport:packet_sent",
        "data": {"header": {"packet_type": "1RTT", "packet_number": pn}},
    }


def _acked(t: float, largest: int) -> dict:
    return {
        "time": t,
        "name": "transport:packet_received",
        "data": {
            "header": {"packet_type": "1RTT", "packet_number": 1000 + largest},
            "frames": [{"frame_type": "ack", "acked_ranges": [[0, largest]]}],
        },
    }


def _metrics(t: float, **data) -> dict:
    return {"time": t, "name": "recovery:metrics_updated", "data": data}


def _rollback_and_pto_events() -> list[dict]:
    """A connection that cuts its window at 10 ms and restores it at 20 ms (quiche CUBIC's
    rollback after a spurious loss: no spurious_loss event), whose first packet sent after
    the cut is acknowledged only at 30 ms, and whose PTO count is 1 from 40 to 50 ms.
    Bytes in flight stay at cwnd (never application limited)."""
    return [
        _metrics(0, congestion_window=20000, bytes_in_flight=20000),
        _sent(1, 1),
        _sent(5, 2),
        _metrics(10, congestion_window=10000, bytes_in_flight=10000, ssthresh=10000),
        _sent(12, 3),
        _acked(15, 2),
        _metrics(20, congestion_window=20000, bytes_in_flight=20000, ssthresh=20000),
        _acked(30, 3),
        _metrics(40, pto_count=1),
        _metrics(45, congestion_window=20000, bytes_in_flight=20000),
        _metrics(50, pto_count=0),
        _sent(60, 4),
    ]


def test_window_growth_ends_recovery_and_pto_count_gives_probe_timeout(tmp_path):
    """RFC 9002 section 7.3.2: cwnd does not grow in recovery, so the restored window at 20
    ms ends the period (not the ACK at 30 ms); section 6.2: a PTO lasts until an ACK, which
    the PTO count going back to 0 shows."""
    from statemine.parse.qlog import read_qlog

    path = tmp_path / "d.sqlog"
    _write_seq(path, _rollback_and_pto_events())
    ts = read_qlog(path, derive_states=True)
    st_rows = ts.events[ts.events["kind"] == "state"]
    got = list(zip(st_rows["time"].round(6), st_rows["state"]))
    assert got == [
        (0.0, "SlowStart (derived)"),
        (0.01, "Recovery (derived)"),
        (0.02, "CongestionAvoidance (derived)"),
        (0.04, "ProbeTimeout (derived)"),
        (0.05, "CongestionAvoidance (derived)"),
    ]
    assert st_rows["fields"].str.startswith("derived=rfc9002").all()


def test_logged_pto_lasts_until_the_pto_count_is_back_at_0(tmp_path):
    """quic-go logs pto_count 1 right after the expired timer: the PTO lasts until the
    update that logs pto_count 0 (the ACK), not until that first update."""
    from statemine.parse.qlog import read_qlog

    events = [
        {"time": 0, "name": "recovery:congestion_state_updated", "data": {"new": "slow_start"}},
        _metrics(0, congestion_window=20000),
        {
            "time": 40,
            "name": "recovery:loss_timer_updated",
            "data": {"timer_type": "pto", "event_type": "expired"},
        },
        _metrics(40, pto_count=1),
        _metrics(45, congestion_window=20000, bytes_in_flight=100),
        _metrics(50, pto_count=0),
        _sent(60, 4),
    ]
    path = tmp_path / "l.sqlog"
    _write_seq(path, events)
    st_rows = read_qlog(path).events.query("kind == 'state'")
    assert list(zip(st_rows["time"].round(6), st_rows["state"])) == [
        (0.0, "SlowStart"),
        (0.04, "ProbeTimeout"),
        (0.05, "SlowStart"),
    ]


def test_agreement_strips_state_events_and_compares_shares(tmp_path):
    """strip_state_events keeps every other record; agreement's shares and gaps against
    the same quantities computed by hand from the rows."""
    from statemine.parse.qlog import read_qlog
    from statemine.parse.qlog.agreement import agreement, strip_state_events

    logged_events = [
        {"time": 0, "name": "recovery:congestion_state_updated", "data": {"new": "slow_start"}},
        {"time": 10, "name": "recovery:congestion_state_updated", "data": {"new": "recovery"}},
        {
            "time": 25,
            "name": "recovery:congestion_state_updated",
            "data": {"new": "congestion_avoidance"},
        },
        *_rollback_and_pto_events()[:8],
    ]
    path = tmp_path / "both.sqlog"
    _write_seq(path, logged_events)
    stripped = strip_state_events(path, tmp_path / "s.sqlog")
    records = [r for r in path.read_bytes().split(b"\x1e") if b"congestion_state" not in r]
    assert stripped.read_bytes() == b"\x1e".join(records)
    table = agreement(read_qlog(path), read_qlog(stripped, derive_states=True))
    t = table.set_index("state")
    # logged: SlowStart 0-10, Recovery 10-25, CA 25-30 ms; derived: 10, 10, 10 ms (of 30)
    assert t["logged_pct"].to_dict() == pytest.approx(
        {"SlowStart": 100 / 3, "Recovery": 50.0, "CongestionAvoidance": 50 / 3}
    )
    assert t["derived_pct"].to_dict() == pytest.approx(
        {"SlowStart": 100 / 3, "Recovery": 100 / 3, "CongestionAvoidance": 100 / 3}
    )
    assert (t["gap_pts"] == t["derived_pct"] - t["logged_pct"]).all()


def test_loss_of_an_ack_only_packet_is_no_congestion_event(tmp_path):
    """RFC 9002 section 7.3.2: only packets in flight count (aioquic's ACK-only packets are
    not); an ACK of any packet sent after the start (an ACK-only one too) ends a period."""
    from statemine.parse.qlog import read_qlog

    def sent(t, pn, frames):
        e = _sent(t, pn)
        e["data"]["frames"] = [{"frame_type": f} for f in frames]
        return e

    def lost(t, pn):
        return {"time": t, "name": "recovery:packet_lost", "data": {"packet_number": pn}}

    events = [
        _metrics(0, congestion_window=20000, bytes_in_flight=20000),
        sent(1, 1, ["stream"]),
        sent(2, 2, ["ack"]),
        sent(3, 3, ["stream"]),
        lost(10, 2),  # ACK-only: nothing
        lost(20, 1),  # in flight: a period from 20 ms
        _metrics(20, congestion_window=10000, bytes_in_flight=10000),
        sent(25, 4, ["ack", "padding"]),
        sent(26, 5, ["stream"]),
        _acked(30, 3),  # sent before the start: still recovering
        _acked(40, 4),  # the ACK-only packet sent after the start: the period ends
        _metrics(50, congestion_window=10000, bytes_in_flight=10000),
    ]
    path = tmp_path / "a.sqlog"
    _write_seq(path, events)
    rows = read_qlog(path, derive_states=True).events.query("kind == 'state'")
    assert list(zip(rows["time"].round(6), rows["state"])) == [
        (0.0, "SlowStart (derived)"),
        (0.02, "Recovery (derived)"),
        (0.04, "CongestionAvoidance (derived)"),
    ]


def test_a_packet_sent_at_the_loss_time_ends_quic_gos_period():
    """quic-go's period ends at the first ACK of a packet numbered above the largest sent
    before the cut (cubic_sender.go InRecovery); in virtual time the next packet is sent at
    the loss's own time. ``ties_after`` counts it as sent after the start (issue 26: a lab
    run's periods were an ACK too long); RFC 9002's reading (the default) does not."""
    from statemine.parse.derive import recovery_periods

    args = (
        np.array([1.0]),
        np.array([0.5]),
        np.array([0.5, 1.0, 2.0]),
        np.array([1.0, 2.0, 3.0]),
        np.array([1.5, 2.5, 3.5]),
        np.array([1.0, 2.0, 3.0]),
    )
    assert recovery_periods(*args) == [(1.0, 3.5, False)]
    assert recovery_periods(*args, ties_after=True) == [(1.0, 2.5, False)]


def test_an_undone_period_restores_the_cutback_before_it():
    """quic-go's OnSpuriousLoss restores ``largestSentAtLastCutback``: after an undone
    period, the loss of a packet sent before that period's start (but after the earlier
    cut) begins a period (issue 26: it was ignored, quic-go v0.65.0 with jitter lost two
    points of Recovery)."""
    from statemine.parse.derive import recovery_periods

    periods = recovery_periods(
        np.array([1.0, 2.0]),  # losses declared of packets 5 and 4
        np.array([0.8, 0.7]),
        np.array([0.7, 0.8, 1.5, 2.5]),
        np.array([4.0, 5.0, 6.0, 7.0]),
        np.array([3.0]),
        np.array([7.0]),
        np.array([5.0, 4.0]),
        np.array([1.2]),  # packet 5's loss proves spurious
        np.array([5.0]),
    )
    assert periods == [(1.0, 1.2, True), (2.0, 3.0, False)]


def test_slow_start_exits_are_read_from_window_limited_acks_without_growth():
    """quic-go leaves slow start by HyStart without a reduction and logs no ssthresh: a
    window-limited ACK whose window grew by less than the bytes acknowledged puts the exit
    at the latest growth before it; none after a reduction, inside recovery, at an ACK
    that was not window-limited, or where slow start's growth (a packet per packet) came.
    Chunked input gives the exits of the whole."""
    from statemine.parse.derive import slow_start_exits

    time = np.arange(10.0)
    cwnd = np.array([10, 20, 20, 20, 30, 30, 15, 15, 15, 15], float) * 1e3
    inflight = np.array([9, 19, 21, 17, 22, 29, 15, 16, 12, 4], float) * 1e3
    # t=3: limited (21 >= 20 - 3.84), grew 0 < 4 acked -> exit at t=1 (the growth)
    # t=4: grew 10 >= acked? inflight rose: no ACK. t=5: rose. t=6: cut (a reduction)
    # t=8: limited (16 >= 15 - 3.84), no growth: but the latest change was the cut
    # t=9: 12 < 15 - 3.84: not window-limited
    whole = slow_start_exits([(time, cwnd, inflight)], [])
    assert whole == [1.0]
    parts = [(time[:3], cwnd[:3], inflight[:3]), (time[3:], cwnd[3:], inflight[3:])]
    assert slow_start_exits(parts, []) == whole
    assert slow_start_exits([(time, cwnd, inflight)], [(2.5, 3.5, False)]) == []


def _quicgo_spurious(path, restore: bool):
    """A quic-go server's JSON-SEQ: packets 1-6 sent, packet 2 lost at 1 s (window 20000
    -> 14000), reported spurious at 1.2 s (with the window restored or not), packet 5 (sent
    after the loss) acknowledged at 3 s; the file ends at 4 s."""
    import json

    def ev(ms, name, data):
        return {"time": ms, "name": name, "data": data}

    def sent(ms, pn):
        header = {"packet_type": "1RTT", "packet_number": pn}
        return ev(
            ms, "transport:packet_sent", {"header": header, "frames": [{"frame_type": "stream"}]}
        )

    def ack(ms, high):
        frame = {"frame_type": "ack", "acked_ranges": [[1, 1], [3, high]]}
        return ev(
            ms,
            "transport:packet_received",
            {"header": {"packet_type": "1RTT", "packet_number": ms}, "frames": [frame]},
        )

    events = [
        ev(0, "recovery:metrics_updated", {"congestion_window": 20000, "bytes_in_flight": 0}),
        *[sent(100 * pn, pn) for pn in (1, 2, 3, 4)],
        ev(900, "recovery:metrics_updated", {"bytes_in_flight": 5000}),
        ack(1000, 4),
        ev(1000, "recovery:packet_lost", {"header": {"packet_type": "1RTT", "packet_number": 2}}),
        ev(1000, "recovery:metrics_updated", {"congestion_window": 14000, "bytes_in_flight": 100}),
        sent(1100, 5),
        sent(1150, 6),
        ev(
            1200,
            "recovery:spurious_loss",
            {"packet_number_space": "application_data", "packet_number": 2},
        ),
        ev(
            1200,
            "recovery:metrics_updated",
            {"congestion_window": 20000 if restore else 14000, "bytes_in_flight": 2000},
        ),
        ack(3000, 5),
        ev(3000, "recovery:metrics_updated", {"bytes_in_flight": 1000}),
        ev(4000, "recovery:metrics_updated", {"bytes_in_flight": 900}),
    ]
    header = {"qlog_format": "JSON-SEQ", "qlog_version": "0.3", "title": "quic-go qlog",
              "trace": {"vantage_point": {"type": "server"}, "common_fields": {"group_id": "g", "time_format": "relative"}}}  # fmt: skip
    path.write_text("".join("\x1e" + json.dumps(x) + "\n" for x in [header, *events]))
    return path


@pytest.mark.parametrize("restore", [True, False])
def test_a_spurious_loss_ends_a_period_only_where_the_window_is_restored(tmp_path, restore):
    """quic-go logs ``spurious_loss`` in every version but undoes the reduction only in
    v0.65.0's Reno (``OnSpuriousLoss``, restoring the window at once); elsewhere the period
    goes on until a packet sent after it is acknowledged (issue 26: every spurious_loss
    ended it)."""
    import statemine
    from statemine.parse.qlog import read_qlog

    ts = read_qlog(_quicgo_spurious(tmp_path / "s.sqlog", restore), derive_states=True)
    states = statemine.summarize(ts)[0]
    seconds = dict(zip(states["state"], states["time_s"].astype(float)))
    assert seconds["Recovery (derived)"] == pytest.approx(0.2 if restore else 2.0, abs=1e-9)
