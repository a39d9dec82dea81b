"""qlog reader: one hand-written file per schema generation, real aioquic files, bad input."""

from __future__ import annotations

import doctest
import gzip
import json
import math
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shared_data import shared

import statemine.parse.derive
import statemine.parse.qlog
import statemine.parse.statenames
from statemine.errors import InputError
from statemine.parse.qlog import read_qlog, sniff_qlog
from statemine.traces import TraceSet, load, save

DATA = Path(__file__).parent / "data" / "qlog"


def states(ts, trace=None):
    """[(time s rounded to 1 us, state)] of the state rows (of one trace)."""
    ev = ts.events
    if trace is not None:
        ev = ev[ev["trace"] == trace]
    ev = ev[ev["kind"] == "state"]
    return [(round(t, 6), s) for t, s in zip(ev["time"], ev["state"])]


def warnings_of(ts):
    return json.loads(ts.meta["warnings"])


def trace_row(ts, trace):
    return ts.traces.set_index("trace").loc[trace]


# -- one file per schema generation ------------------------------------------------------------
def test_draft00_cc_state_update_with_event_fields_and_trigger_column():
    ts = read_qlog(DATA / "draft00.qlog")
    assert states(ts) == [(0.001, "SlowStart"), (0.251, "Recovery"), (0.4, "CongestionAvoidance")]
    row = trace_row(ts, "draft00.qlog#0")
    assert (row["role"], row["conn"], row["qlog_version"], row["end"]) == (
        "server",
        "aaaa",
        "draft-00",
        1.0,
    )
    assert not row["derived"]
    st = ts.events[ts.events["kind"] == "state"].reset_index(drop=True)
    # metrics known at each state change, in log order (the reduced window is logged after
    # the Recovery event, so Recovery still carries 60000)
    assert st["cwnd"].tolist() == [14720, 60000, 30000]
    assert st["inflight"].tolist() == [0, 50000, 50000]
    assert st["ssthresh"].isna().tolist() == [True, True, False] and st["ssthresh"].iloc[2] == 30000
    assert math.isnan(st["srtt"].iloc[0]) and st["srtt"].iloc[1] == pytest.approx(0.040)
    assert st["fields"].iloc[1] == "raw=RECOVERY old=SLOW_START trigger=LOSS ev=4"
    loss = ts.events[ts.events["kind"] == "event"]
    assert loss["state"].tolist() == ["LossDetected"] and loss["fields"].tolist() == [
        "rule=time pn=17 ev=3"
    ]
    assert loss["time"].tolist() == [0.25]
    assert warnings_of(ts) == []


def test_draft00_mvfst_congestion_metric_update_and_app_limited_events():
    ts = read_qlog(DATA / "draft00_mvfst.qlog")
    assert states(ts) == [
        (0.0, "SlowStart"),
        (0.05, "CongestionAvoidance"),
        (0.08, "ApplicationLimited"),
        (0.12, "CongestionAvoidance"),
        (0.15, "Recovery"),
        (0.2, "CongestionAvoidance"),
    ]
    row = trace_row(ts, "draft00_mvfst.qlog#0")
    assert (row["implementation"], row["conn"], row["end"]) == ("mvfst", "bbbb", 0.3)
    st = ts.events[ts.events["kind"] == "state"]
    assert st["cwnd"].tolist() == [12320, 40000, 40000, 40000, 28000, 28000]
    # bytes_in_flight missing from the Steady update at 50 ms: the latest known value (1200) carries on
    assert st["inflight"].tolist() == [0, 1200, 1200, 800, 30000, 30000]
    assert st["fields"].iloc[3] == "raw=Steady after=app_limited ev=5"


def test_draft01_picoquic_numeric_states_and_microseconds():
    ts = read_qlog(DATA / "draft01_picoquic.qlog")
    assert states(ts) == [(0.0, "SlowStart"), (0.2, "Recovery"), (0.35, "CongestionAvoidance")]
    row = trace_row(ts, "draft01_picoquic.qlog#0")
    assert (row["implementation"], row["end"], row["role"]) == ("picoquic-cubic", 0.5, "client")
    assert row["conn"] is None or pd.isna(row["conn"])
    st = ts.events[ts.events["kind"] == "state"]
    assert st["srtt"].iloc[1] == pytest.approx(0.025)  # 25000 us


def test_draft01_two_vantage_points_are_two_traces():
    ts = read_qlog(DATA / "draft01.qlog")
    assert ts.traces["trace"].tolist() == ["draft01.qlog#0", "draft01.qlog#1"]
    assert ts.traces["role"].tolist() == ["client", "server"]
    assert ts.traces["end"].tolist() == [0.3, 0.2]
    assert states(ts, "draft01.qlog#0") == [(0.0, "SlowStart"), (0.1, "CongestionAvoidance")]
    assert states(ts, "draft01.qlog#1") == [
        (0.005, "SlowStart"),
        (0.05, "Recovery"),
        (0.08, "CongestionAvoidance"),
        (0.12, "ApplicationLimited"),
    ]


def test_draft02_delta_times_quiche_names_and_unknown_name_kept_with_warning():
    ts = read_qlog(DATA / "draft02.qlog")
    assert states(ts) == [
        (0.01, "SlowStart"),
        (0.03, "ConservativeSlowStart"),
        (0.045, "BBRProbeBW"),
        (0.05, "BBRProbeBW"),
        (0.055, "warp_drive"),
    ]
    row = trace_row(ts, "draft02.qlog#0")
    assert (row["implementation"], row["end"]) == ("quiche", 0.1)
    assert ts.events["srtt"].iloc[0] == pytest.approx(0.0305)
    (warning,) = warnings_of(ts)
    assert "'warp_drive'" in warning and "kept as is" in warning and "draft02.qlog" in warning


def test_v03_json_seq_quic_go_lines_loss_and_metrics():
    ts = read_qlog(DATA / "v03.sqlog")
    assert states(ts) == [
        (0.0002, "SlowStart"),
        (0.1205, "Recovery"),
        (0.18, "CongestionAvoidance"),
        (0.25, "ApplicationLimited"),
    ]
    st = ts.events[ts.events["kind"] == "state"]
    assert st["line"].tolist() == [3, 5, 7, 8]
    assert st["cwnd"].tolist() == [32000, 32000, 22400, 22400]
    assert st["srtt"].tolist() == [0.01] * 4
    loss = ts.events[ts.events["kind"] == "event"]
    assert loss["fields"].tolist() == ["rule=packet pn=42 ev=2"] and loss["line"].tolist() == [4]
    row = trace_row(ts, "v03.sqlog#0")
    assert (row["implementation"], row["qlog_version"], row["conn"], row["end"]) == (
        "quic-go",
        "0.3",
        "eeee",
        0.4,
    )


def test_v04_quic_namespace_and_u64_max_ssthresh_is_infinite():
    ts = read_qlog(DATA / "v04.qlog")
    assert states(ts) == [(0.002, "SlowStart"), (0.03, "Recovery"), (0.06, "CongestionAvoidance")]
    st = ts.events[ts.events["kind"] == "state"]
    assert st["ssthresh"].tolist() == [math.inf, math.inf, 9000]
    loss = ts.events[ts.events["kind"] == "event"]
    assert loss["fields"].tolist() == ["rule=time pn=7 ev=2"]
    assert trace_row(ts, "v04.qlog#0")["implementation"] == "neqo"


def test_file_schema_contained_splits_connections_by_group_id():
    ts = read_qlog(DATA / "file_schema.qlog")
    assert ts.traces["trace"].tolist() == ["file_schema.qlog#0/c1", "file_schema.qlog#0/c2"]
    assert ts.traces["conn"].tolist() == ["c1", "c2"]
    assert ts.traces["end"].tolist() == [1.1, 1.05]
    assert ts.traces["qlog_version"].tolist() == ["urn:ietf:params:qlog:file:contained"] * 2
    assert states(ts, "file_schema.qlog#0/c1") == [
        (1.0, "SlowStart"),
        (1.04, "CongestionAvoidance"),
    ]
    assert states(ts, "file_schema.qlog#0/c2") == [(1.001, "SlowStart"), (1.02, "Recovery")]


def test_file_schema_sequential_relative_to_previous_event():
    ts = read_qlog(DATA / "file_schema.sqlog")
    assert states(ts) == [(0.005, "SlowStart"), (0.1, "CongestionAvoidance")]
    assert trace_row(ts, "file_schema.sqlog#0")["end"] == pytest.approx(0.11)
    assert ts.events["srtt"].iloc[1] == pytest.approx(0.0125)


def test_ndjson_absolute_times_and_blank_lines():
    ts = read_qlog(DATA / "draft02.ndjson")
    st = ts.events[ts.events["kind"] == "state"]
    assert st["state"].tolist() == ["SlowStart", "Recovery", "CongestionAvoidance"]
    assert np.diff(st["time"]).round(6).tolist() == [0.1, 0.2]
    assert st["time"].iloc[0] == 1600000000.0
    assert st["line"].tolist() == [2, 4, 5]


def _same_rows(a, b):
    cols = [
        "seq",
        "time",
        "kind",
        "state",
        "line",
        "fields",
        "cwnd",
        "inflight",
        "ssthresh",
        "srtt",
    ]
    pd.testing.assert_frame_equal(a.events[cols], b.events[cols])


@pytest.mark.parametrize("name", ["v03.sqlog", "draft01.qlog", "draft02.ndjson"])
def test_gzip_is_detected_by_magic_bytes_not_name(tmp_path, name):
    packed = tmp_path / (name + ".bin")
    packed.write_bytes(gzip.compress((DATA / name).read_bytes()))
    _same_rows(read_qlog(packed), read_qlog(DATA / name))
    assert sniff_qlog(packed.read_bytes()[:4096])


# -- truncated and bad input ---------------------------------------------------------------------
def test_truncated_json_seq_last_record_is_reported_and_the_rest_kept():
    ts = read_qlog(DATA / "v03_truncated.sqlog")
    assert states(ts) == states(read_qlog(DATA / "v03.sqlog"))
    assert trace_row(ts, "v03_truncated.sqlog#0")["end"] == 0.25
    (warning,) = warnings_of(ts)
    assert warning.startswith(f"{DATA / 'v03_truncated.sqlog'}:9: the last record is cut off")


@pytest.mark.parametrize("fmt", ["auto", "qlog"])
@pytest.mark.parametrize("keep", [0.3, 0.8])
def test_truncated_gzip_stream_is_refused_under_every_format(tmp_path, fmt, keep):
    from statemine.parse import read

    packed = gzip.compress((DATA / "v03.sqlog").read_bytes())
    cut = tmp_path / "cut.sqlog.gz"
    cut.write_bytes(packed[: int(len(packed) * keep)])
    with pytest.raises(InputError, match="gzip stream is cut off") as err:
        read(cut, fmt)
    assert err.value.file == str(cut)


def test_truncated_qlog_document_is_salvaged_up_to_the_last_complete_event():
    ts = read_qlog(DATA / "truncated.qlog")
    full = read_qlog(DATA / "draft01.qlog")
    assert states(ts, "truncated.qlog#0") == states(full, "draft01.qlog#0")
    assert states(ts, "truncated.qlog#1") == states(full, "draft01.qlog#1")[:3]
    assert trace_row(ts, "truncated.qlog#1")["end"] == 0.08
    (warning,) = warnings_of(ts)
    assert warning.startswith(
        f"{DATA / 'truncated.qlog'}:23: the JSON document ends before it is complete"
    )


def test_truncated_document_complete_last_event_is_kept(tmp_path):
    text = (DATA / "draft01.qlog").read_text()
    cut = text.index('["200", "transport"') - 1  # after the complete application_limited event
    f = tmp_path / "cut.qlog"
    f.write_text(text[:cut].rstrip().rstrip(","))
    ts = read_qlog(f)
    assert states(ts, "cut.qlog#1")[-1] == (0.12, "ApplicationLimited")


def test_truncated_document_with_nothing_to_salvage(tmp_path):
    f = tmp_path / "head.qlog"
    f.write_text('{"qlog_version": "draft-01", "tra')
    with pytest.raises(InputError, match="no 'traces' array"):
        read_qlog(f)


def test_malformed_document_names_the_line(tmp_path):
    f = tmp_path / "bad.qlog"
    f.write_text('{"qlog_version": "draft-01",\n "traces": [\n {"events": [[1, "a" "b"]]}]}')
    with pytest.raises(InputError) as err:
        read_qlog(f)
    assert err.value.file == str(f) and err.value.line == 3 and "not valid JSON" in err.value.reason


def test_invalid_record_in_the_middle_is_skipped_with_a_warning():
    ts = read_qlog(DATA / "bad_middle.ndjson")
    assert states(ts) == [(0.0, "SlowStart"), (0.02, "Recovery")]
    first, last = warnings_of(ts)
    assert ":3: record is not valid JSON" in first and "skipped" in first
    assert ":5: the last record is cut off" in last


@pytest.mark.parametrize(
    "content, line, reason",
    [
        (b"", None, "empty file"),
        (b" \n\t\n", None, "empty file"),
        (bytes(range(256)) * 8, 1, "not a qlog file"),
        (b"STATEMINE t=0 conn=1 state=SlowStart\n", 1, "not a qlog file"),
        (b'\x1e["not", "an", "object"]\n', 1, "not a JSON object"),
        (b'\x1e{"qlog_format": "JSON-SEQ", "trace": {\n', 1, "first record is not valid JSON"),
        (b"[1, 2, 3]", 1, "not a qlog file"),
    ],
)
def test_bad_input_gives_one_clear_error(tmp_path, content, line, reason):
    f = tmp_path / "in.qlog"
    f.write_bytes(content)
    with pytest.raises(InputError) as err:
        read_qlog(f)
    assert err.value.file == str(f) and err.value.line == line and reason in err.value.reason


def test_garbage_fixture_file_is_refused():
    with pytest.raises(InputError, match="not a qlog file"):
        read_qlog(DATA / "garbage.bin")
    with pytest.raises(InputError, match="empty file"):
        read_qlog(DATA / "empty.qlog")


def test_unreadable_path():
    with pytest.raises(InputError, match="cannot open"):
        read_qlog(DATA / "no-such-file.qlog")


def _peak_mib(func):
    tracemalloc.start()
    try:
        func()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak / 2**20


def test_100_mb_single_line_record_is_refused_in_bounded_memory(tmp_path):
    f = tmp_path / "huge.ndjson"
    with open(f, "wb") as fh:
        fh.write(
            b'{"qlog_format":"NDJSON","qlog_version":"draft-02","trace":{}}\n{"time": 1, "name": "'
        )
        block = b"x" * (1 << 20)
        for _ in range(100):
            fh.write(block)
        fh.write(b'"}\n')
    errors = []

    def run(limit):
        with pytest.raises(InputError) as err:
            read_qlog(f, max_record_bytes=limit)
        errors.append(err.value)

    peak = _peak_mib(lambda: run(8 << 20))
    assert errors[0].line == 2 and "longer than 8388608 bytes" in errors[0].reason
    assert peak < 24, f"peak {peak:.1f} MiB"
    peak = _peak_mib(lambda: run(statemine.parse.qlog.DEFAULT_MAX_RECORD_BYTES))
    assert errors[1].line == 2 and peak < 90, f"peak {peak:.1f} MiB"


def test_100_mb_single_line_document_is_refused_above_the_document_cap(tmp_path):
    f = tmp_path / "huge.qlog"
    with open(f, "wb") as fh:
        fh.write(b'{"qlog_version": "draft-01", "traces": [{"events": [')
        block = b'["1", "transport", "packet_sent", {}],' * 30000
        for _ in range((100 << 20) // len(block)):
            fh.write(block)
    err = []

    def run():
        with pytest.raises(InputError) as e:
            read_qlog(f, max_document_bytes=16 << 20)
        err.append(e.value)

    peak = _peak_mib(run)
    assert "larger than 16777216 bytes" in err[0].reason and peak < 48, f"peak {peak:.1f} MiB"


def test_100_mb_binary_line_is_refused_after_reading_its_head(tmp_path):
    f = tmp_path / "huge.bin"
    with open(f, "wb") as fh:
        for _ in range(100):
            fh.write(b"\x00garbage" * (1 << 17))

    def refuse():
        with pytest.raises(InputError):
            read_qlog(f)

    peak = _peak_mib(refuse)
    assert peak < 4


def test_events_out_of_time_order_are_sorted_with_a_warning(tmp_path):
    f = tmp_path / "order.sqlog"
    recs = [
        '{"qlog_format":"JSON-SEQ","qlog_version":"0.3","trace":{"common_fields":{"time_format":"relative"}}}',
        '{"time":50,"name":"recovery:congestion_state_updated","data":{"new":"recovery"}}',
        '{"time":10,"name":"recovery:congestion_state_updated","data":{"new":"slow_start"}}',
        '{"time":"soon","name":"recovery:congestion_state_updated","data":{"new":"recovery"}}',
    ]  # an infinite time ("1e400") is refused: tests/test_time_range.py
    f.write_text("".join("\x1e" + r + "\n" for r in recs))
    ts = read_qlog(f)
    assert states(ts) == [(0.01, "SlowStart"), (0.05, "Recovery")]
    w = warnings_of(ts)
    assert any("not in time order" in x for x in w) and any(
        ":4: " in x and "no finite numeric time" in x for x in w
    )


def test_traces_without_congestion_events_are_left_out_with_a_warning(tmp_path):
    doc = json.loads((DATA / "draft01.qlog").read_text())
    doc["traces"].append({"vantage_point": {"type": "client"}, "events": []})
    doc["traces"].append(
        {
            "event_fields": ["relative_time", "category", "event_type", "data"],
            "events": [["1", "transport", "packet_sent", {}]],
        }
    )
    doc["traces"].append({"error_description": "File could not be found", "uri": "/x.qlog"})
    f = tmp_path / "mixed.qlog"
    f.write_text(json.dumps(doc))
    ts = read_qlog(f)
    assert ts.traces["trace"].tolist() == ["mixed.qlog#0", "mixed.qlog#1"]
    w = warnings_of(ts)
    assert any("trace 2 has no events" in x for x in w)
    assert any("trace mixed.qlog#3: no congestion events at all" in x for x in w)
    assert any("trace 4 is a TraceError ('File could not be found')" in x for x in w)


def test_file_without_any_congestion_event_is_refused(tmp_path):
    f = tmp_path / "packets.qlog"
    f.write_text(
        json.dumps(
            {
                "qlog_version": "draft-01",
                "traces": [
                    {
                        "event_fields": ["relative_time", "category", "event_type", "data"],
                        "events": [["1", "transport", "packet_sent", {}]],
                    }
                ],
            }
        )
    )
    with pytest.raises(InputError, match="no congestion_state_updated / CC_STATE_UPDATE"):
        read_qlog(f, derive_states=True)
    f.write_text(json.dumps({"qlog_version": "draft-01", "traces": [{"events": []}]}))
    with pytest.raises(InputError, match="the file has no qlog events"):
        read_qlog(f)


# -- real third-party files ----------------------------------------------------------------------
def test_real_aioquic_files_without_state_events_are_refused_clearly():
    with pytest.raises(InputError) as err:
        read_qlog(shared("real-qlog", "doublevantage_100ms.qlog"))
    assert "no congestion state" in err.value.reason and "derive_states=True" in err.value.reason
    assert "1817 metrics updates" in err.value.reason


def _reference_derivation(cwnds):
    """Per-update states by the rule of statemine.parse.derive, written as a plain loop."""
    out, prev, in_rec, ssthresh = [], None, False, math.inf
    for cwnd in cwnds:
        if prev is not None and cwnd < prev:
            in_rec, ssthresh = True, cwnd
        elif prev is not None and cwnd > prev:
            in_rec = False
        out.append(
            "Recovery" if in_rec else "SlowStart" if cwnd < ssthresh else "CongestionAvoidance"
        )
        prev = cwnd
    return out


@pytest.mark.parametrize("name", ["doublevantage_100ms.qlog", "parallel_10_50KB_f5.qlog"])
def test_real_aioquic_files_with_derived_states(name):
    path = shared("real-qlog", name)
    ts = read_qlog(path, derive_states=True)
    doc = json.loads(path.read_text())
    assert len(ts.traces) == len(doc["traces"])
    assert ts.traces["derived"].all() and (ts.traces["implementation"] == "aioquic").all()
    for i, trace in enumerate(doc["traces"]):
        tid = f"{name}#{i}"
        row = trace_row(ts, tid)
        assert row["role"] == trace["vantage_point"]["type"]
        assert row["conn"] == trace["common_fields"]["ODCID"]
        assert row["end"] == max(float(e[0]) for e in trace["events"]) / 1000
        # aioquic's own ApplicationLimited where an opportunity's events share one time
        verdicts = _aioquic_verdicts(trace["events"]) if _one_time(trace["events"]) else None
        expected = _reference_rfc9002(trace["events"], verdicts=verdicts)
        assert states(ts, tid) == [(round(t, 6), s + " (derived)") for t, s in expected]
    assert any("states derived from cwnd/ssthresh" in w for w in warnings_of(ts))
    # without packet events the window-only rule applies (checked on the same files)
    for i, trace in enumerate(doc["traces"]):
        metric = [
            (float(e[0]) / 1000, e[3]["cwnd"])
            for e in trace["events"]
            if e[1] == "recovery" and "cwnd" in e[3]
        ]
        expected_states = _reference_derivation([c for _, c in metric])
        expected = [
            (round(t, 6), s + " (derived)")
            for (t, _), s, before in zip(metric, expected_states, [None, *expected_states[:-1]])
            if s != before
        ]
        kept = [e for e in trace["events"] if e[2] not in ("packet_sent", "packet_received")]
        only = read_qlog(_with_events(path, doc, i, kept), derive_states=True)
        assert states(only) == expected


def _with_events(path, doc, index, events):
    """A copy of trace ``index`` of ``doc`` with ``events``, written beside the test's tmp files."""
    import tempfile

    one = {**doc, "traces": [{**doc["traces"][index], "events": events}]}
    out = Path(tempfile.mkdtemp()) / path.name
    out.write_text(json.dumps(one))
    return out


def _one_time(events):
    """Whether at least half the application-space ACKs received are followed (in log
    order) by a packet sent at their very time (a virtual-time log)."""
    acks, followed, last = 0, 0, None
    for e in events:
        t, kind, d = float(e[0]) / 1000, e[2], e[3]
        space = str(d.get("packet_type", d.get("header", {}).get("packet_type", ""))).lower()
        if space in ("initial", "handshake"):
            continue
        if kind == "packet_sent" and t == last:
            followed, last = followed + 1, None
        elif kind == "packet_received" and any(
            f.get("frame_type") == "ack" and f.get("acked_ranges") for f in d.get("frames", [])
        ):
            acks, last = acks + 1, t
    return acks > 0 and 2 * followed >= acks


def _aioquic_verdicts(events, datagram=1200.0):
    """[(time s, limited)]: aioquic's ApplicationLimited verdicts by plain loops over
    draft-01 array events (docs/qlog.md): at each time with an application-space packet
    sent or ACK received (after the first such packet sent), unless its pacer (aioquic's
    QuicPacketPacer, replayed: rate cwnd/srtt, a packet every datagram/rate seconds, a
    bucket of max(2 datagrams, min(cwnd // 4, 16 datagrams))/rate, set at a time whose
    updates log smoothed_rtt (an RTT sample) or cut cwnd) holds the next packet back,
    whether cwnd - bytes in flight leaves a datagram."""
    groups: dict[float, dict] = {}
    for e in events:
        t, kind, d = float(e[0]) / 1000, e[2], e[3]
        g = groups.setdefault(t, {"ack": False, "sent": 0, "metrics": []})
        space = str(d.get("packet_type", d.get("header", {}).get("packet_type", ""))).lower()
        if kind == "packet_sent" and space not in ("initial", "handshake"):
            g["sent"] += 1
        elif kind == "packet_received" and space not in ("initial", "handshake"):
            g["ack"] = g["ack"] or any(f.get("frame_type") == "ack" for f in d.get("frames", []))
        elif e[1] == "recovery" and kind.startswith("metric"):  # metric(s)_update(d)
            g["metrics"].append(d)
    out, cwnd, inflight, srtt, started = [], None, None, None, False
    bucket, evaluated, packet_time, bucket_max = 0.0, 0.0, None, 0.0

    def refill(now):
        nonlocal bucket, evaluated
        if now > evaluated:
            bucket, evaluated = min(bucket + now - evaluated, bucket_max), now

    for t in sorted(groups):
        g = groups[t]
        sampled = cut = False
        for d in g["metrics"]:
            if "cwnd" in d and cwnd is not None and d["cwnd"] < cwnd:
                cut = True
            cwnd = d.get("cwnd", cwnd)
            inflight = d.get("bytes_in_flight", inflight)
            if "smoothed_rtt" in d:
                srtt, sampled = d["smoothed_rtt"] / 1000, True
        if (sampled or cut) and cwnd is not None and srtt is not None:
            rate = cwnd / max(srtt, 1e-6)
            packet_time = max(1e-6, min(datagram / rate, 1.0))
            bucket_max = max(2 * datagram, min(cwnd // 4, 16 * datagram)) / rate
            bucket = min(bucket, bucket_max)
        for _ in range(g["sent"]):
            if packet_time is not None:
                refill(t)
                bucket = 0.0 if bucket < packet_time else bucket - packet_time
        started = started or g["sent"] > 0
        if not started or not (g["sent"] or g["ack"]) or inflight is None:
            continue
        if packet_time is not None:
            refill(t)
            if bucket <= 1e-9:
                continue
        out.append((t, cwnd - inflight >= datagram))
    return out


def _reference_rfc9002(events, slack=3 * 1280.0, verdicts=None):
    """[(time s, state)] by plain loops over draft-01 array events: RFC 9002 recovery
    periods (a loss of a packet sent after the latest period's start -- or, without
    packet_lost events, a window cut -- starts one outside a period; it ends at the first
    ACK whose largest acknowledged reaches the first packet sent after its start, or when
    that loss proves spurious); ApplicationLimited at an ACK (in flight fell) whose prior
    in flight was more than 3 packets below cwnd (and at most half of it in slow start),
    kept until the next ACK (or, given, the stack's own ``verdicts``: [(time, limited)],
    each until the next); else SlowStart / CongestionAvoidance against the inferred
    ssthresh (cuts in undone periods do not count)."""
    sends, acks, losses, spurious, metrics = [], [], [], [], []
    for e in events:
        t, kind, d = float(e[0]) / 1000, e[2], e[3]
        space = str(d.get("packet_type", d.get("header", {}).get("packet_type", ""))).lower()
        if kind == "packet_sent" and space not in ("initial", "handshake"):
            sends.append((t, float(d["header"]["packet_number"])))
        elif kind == "packet_received" and space not in ("initial", "handshake"):
            tops = [
                float(r[-1])
                for f in d.get("frames", [])
                if f.get("frame_type") == "ack"
                for r in f.get("acked_ranges", [])
            ]
            if tops:
                acks.append((t, max(tops)))
        elif kind == "packet_lost":
            losses.append((t, float(d.get("header", d).get("packet_number"))))
        elif kind == "spurious_loss":
            spurious.append((t, float(d["packet_number"])))
        elif e[1] == "recovery":
            metrics.append((t, d.get("cwnd"), d.get("bytes_in_flight")))
    events_ = []
    for t, pn in losses:
        sent_t = [st for st, spn in sends if spn == pn]
        events_.append((t, sent_t[-1] if sent_t else t, pn))
    if not losses:
        last = None
        for t, c, _ in metrics:
            if c is not None:
                if last is not None and c < last:
                    events_.append((t, t, None))
                last = c
    periods, start, end = [], -math.inf, -math.inf
    for now, sent_t, pn in sorted(events_, key=lambda x: x[0]):
        if sent_t <= start or now < end:
            continue
        start = now
        after = [spn for st, spn in sends if st > start]
        end, best = math.inf, -math.inf
        if after:
            for t, largest in acks:
                best = max(best, largest)
                if t > start and best >= after[0]:
                    end = t
                    break
        undone = [t for t, spn in spurious if spn == pn and start < t < end]
        if undone:
            end = min(undone)
        periods.append((start, end, bool(undone)))
    points = [(t, c, f) for t, c, f in metrics]
    points += [(b, None, None) for p in periods for b in p[:2] if b != math.inf]
    points += [(t, None, None) for t, _ in verdicts or ()]
    points.sort(key=lambda x: x[0])  # stable: metrics before period bounds at equal times
    out, cwnd, inflight, prior, prev_cwnd, ssthresh, limited = (
        [],
        None,
        None,
        None,
        None,
        math.inf,
        False,
    )
    for t, c, f in points:
        cwnd = c if c is not None else cwnd
        prior, inflight = inflight, (f if f is not None else inflight)
        if cwnd is None:
            continue
        undone_here = any(a <= t <= b for a, b, u in periods if u)
        if prev_cwnd is not None and cwnd < prev_cwnd and not undone_here:
            ssthresh = cwnd
        prev_cwnd = cwnd
        slow = cwnd < ssthresh
        if verdicts is not None:
            limited = bool([v for vt, v in verdicts if vt <= t][-1:] == [True])
        elif inflight is not None and prior is not None and inflight < prior:  # an ACK
            limited = not (prior >= cwnd - slack or (slow and prior > cwnd / 2))
        if any(a <= t < b for a, b, _ in periods):
            state = "Recovery"
        elif limited:
            state = "ApplicationLimited"
        else:
            state = "SlowStart" if slow else "CongestionAvoidance"
        if not out or out[-1][1] != state:
            out.append((t, state))
    return out


def test_real_file_sniffs_as_qlog():
    files = sorted(shared("real-qlog").glob("*.qlog"))
    assert len(files) >= 2
    for f in files:
        assert sniff_qlog(f.read_bytes()[:65536])


# -- names, implementation, labels --------------------------------------------------------------
def test_user_names_override_the_tables():
    ts = read_qlog(
        DATA / "draft01_picoquic.qlog", names={"1": "CongestionAvoidance", "2": "Recovery"}
    )
    assert [s for _, s in states(ts)] == ["SlowStart", "CongestionAvoidance", "Recovery"]
    from statemine.parse.statenames import load_names

    ts = read_qlog(DATA / "draft02.qlog", names=load_names(DATA / "names.json"))
    assert states(ts)[-1] == (0.055, "BBRStartup") and warnings_of(ts) == []
    ts = read_qlog(DATA / "draft02.qlog", names=load_names(DATA / "names.txt"))
    assert states(ts)[-1] == (0.055, "SlowStart")


def test_forced_implementation_selects_the_table():
    ts = read_qlog(DATA / "draft02.qlog", implementation="quic-go")
    assert (ts.traces["implementation"] == "quic-go").all()
    # statemine's own names are always known; quiche's phase names only in quiche's table
    assert states(ts)[1:3] == [(0.03, "ConservativeSlowStart"), (0.045, "bbr_probe_bw_up")]
    assert any("'bbr_probe_bw_up'" in w and "quic-go table" in w for w in warnings_of(ts))
    ts = read_qlog(DATA / "draft00_mvfst.qlog", implementation="lsquic")
    assert states(ts)[0] == (0.0, "Hystart")
    assert any("no state-name table for implementation 'lsquic'" in w for w in warnings_of(ts))


def test_source_names_the_trace_ids():
    ts = read_qlog(DATA / "draft01.qlog", source="run1/draft01.qlog")
    assert ts.traces["trace"].tolist() == ["run1/draft01.qlog#0", "run1/draft01.qlog#1"]
    assert (ts.traces["source"] == str(DATA / "draft01.qlog")).all()


def test_only_state_and_event_rows_so_time_fractions_ignore_metrics():
    for f in ["draft00.qlog", "v03.sqlog", "draft00_mvfst.qlog"]:
        ts = read_qlog(DATA / f)
        assert set(ts.events["kind"]) <= {"state", "event"}
    ts = read_qlog(shared("real-qlog", "doublevantage_100ms.qlog"), derive_states=True)
    assert set(ts.events["kind"]) == {"state"}


def test_trace_set_survives_parquet(tmp_path):
    ts = read_qlog(DATA / "file_schema.qlog")
    back = load(save(ts, tmp_path / "t.parquet"))
    pd.testing.assert_frame_equal(back.events, ts.events, check_dtype=False)
    assert back.traces["trace"].tolist() == ts.traces["trace"].tolist()
    assert json.loads(back.meta["warnings"]) == []


@pytest.mark.parametrize(
    "name", sorted(p.name for p in DATA.iterdir() if p.suffix in (".qlog", ".sqlog", ".ndjson"))
)
def test_sniff_recognises_every_fixture(name):
    head = (DATA / name).read_bytes()[:65536]
    assert sniff_qlog(head) == (name != "empty.qlog")


def test_sniff_refuses_other_content():
    assert not sniff_qlog(b"")
    assert not sniff_qlog(b"STATEMINE t=0 conn=1 state=SlowStart\n")
    assert not sniff_qlog(bytes(range(256)))
    assert not sniff_qlog(b'{"name": "not qlog", "values": [1, 2]}')
    assert not sniff_qlog(b"\x1f\x8b\x08garbage")


@pytest.mark.parametrize(
    "module", [statemine.parse.qlog, statemine.parse.statenames, statemine.parse.derive]
)
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


# -- robustness: whatever the content, a TraceSet or an InputError ------------------------------
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(
        [
            "",
            "0",
            "1",
            "2",
            "slow_start",
            "recovery",
            "Steady",
            "app limited",
            "app unlimited",
            "1e400",
            "nan",
            "delta",
            "relative_to_previous_event",
            "us",
        ]
    ),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["new", "old", "state", "cwnd", "x"]), inner, max_size=3),
    ),
    max_leaves=6,
)
_names = st.sampled_from(
    [
        "recovery:congestion_state_updated",
        "quic:congestion_state_updated",
        "recovery:metrics_updated",
        "quic:recovery_metrics_updated",
        "recovery:packet_lost",
        "transport:packet_sent",
        "metric_update:congestion_metric_update",
        "APP_LIMITED_UPDATE:app_limited_update",
        "CC_STATE_UPDATE",
        "no_colon",
        "",
    ]
)
_data = st.fixed_dictionaries(
    {},
    optional={
        "new": _values,
        "old": _values,
        "state": _values,
        "congestion_window": _values,
        "cwnd": _values,
        "current_cwnd": _values,
        "ssthresh": _values,
        "smoothed_rtt": _values,
        "bytes_in_flight": _values,
        "app_limited": _values,
        "trigger": _values,
        "header": _values,
    },
)
_object_events = st.fixed_dictionaries(
    {"name": st.one_of(_names, _values)},
    optional={
        "time": st.one_of(st.floats(0, 1e6), _values),
        "data": st.one_of(_data, _values),
        "group_id": st.one_of(st.sampled_from(["a", "b"]), _values),
        "time_format": _values,
    },
)
_array_events = st.tuples(
    st.one_of(st.integers(0, 10**6).map(str), _values),
    _scalars,
    _names.map(lambda n: n.rpartition(":")[2]),
    st.one_of(_data, _values),
).map(list)
_headers = st.fixed_dictionaries(
    {},
    optional={
        "vantage_point": st.one_of(
            st.fixed_dictionaries({"type": _values, "name": _values}), _values
        ),
        "common_fields": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "time_format": _values,
                    "group_id": _values,
                    "ODCID": _values,
                    "time_units": _values,
                },
            ),
            _values,
        ),
        "configuration": st.one_of(
            st.fixed_dictionaries({}, optional={"time_units": _values, "time_offset": _values}),
            _values,
        ),
        "title": _values,
        "event_fields": st.one_of(
            st.just(["relative_time", "category", "event_type", "data"]), _values
        ),
    },
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    header=_headers,
    events=st.lists(st.one_of(_object_events, _array_events, _values), max_size=12),
    layout=st.sampled_from(["document", "seq", "ndjson"]),
    derive=st.booleans(),
    cut=st.integers(0, 400),
)
def test_any_qlog_shaped_content_gives_a_trace_set_or_an_input_error(
    tmp_path, header, events, layout, derive, cut
):
    f = tmp_path / "fuzz.qlog"
    if layout == "document":
        text = json.dumps({"qlog_version": "0.3", "traces": [{**header, "events": events}]})
    else:
        head = {
            "qlog_format": "JSON-SEQ" if layout == "seq" else "NDJSON",
            "qlog_version": "0.3",
            "trace": header,
        }
        sep = "\x1e" if layout == "seq" else ""
        text = "".join(sep + json.dumps(r) + "\n" for r in [head, *events])
    if cut and cut < len(text):
        text = text[:-cut]
    f.write_text(text)
    try:
        ts = read_qlog(f, derive_states=derive)
    except InputError as err:
        assert err.file == str(f) and err.reason
        return
    ts.validate()
    assert set(ts.events["kind"]) <= {"state", "event"}
    assert np.isfinite(ts.events["time"]).all()
    assert isinstance(json.loads(ts.meta["warnings"]), list)


@pytest.mark.parametrize(
    "name", ["draft00.qlog", "v03_truncated.sqlog", "truncated.qlog", "bad_middle.ndjson"]
)
def test_standard_library_json_fallback_reads_the_same(monkeypatch, name):
    fast = read_qlog(DATA / name)
    monkeypatch.setattr(statemine.parse.qlog.reading, "_loads", json.loads)
    slow = read_qlog(DATA / name)
    _same_rows(slow, fast)
    assert len(warnings_of(slow)) == len(warnings_of(fast))


@pytest.mark.parametrize("name", ["v03.sqlog", "draft01_picoquic.qlog", "v04.qlog"])
def test_metrics_table_saved_to_and_loaded_from_parquet(tmp_path, name):
    """TraceSet.metrics survives statemine.traces.save/load unchanged, beside the events."""
    ts = read_qlog(DATA / name)
    assert ts.metrics is not None and len(ts.metrics)
    back = load(save(ts, tmp_path / "t.parquet"))
    pd.testing.assert_frame_equal(back.events, ts.events)
    pd.testing.assert_frame_equal(back.traces, ts.traces)
    pd.testing.assert_frame_equal(back.metrics, ts.metrics)
    assert back.meta == ts.meta
    assert not (back.events["kind"] == "metrics").any()


def test_parquet_without_metrics_loads_with_none(tmp_path):
    ts = read_qlog(DATA / "v03.sqlog")
    bare = TraceSet(ts.events, ts.traces, ts.meta, None)
    back = load(save(bare, tmp_path / "t.parquet"))
    assert back.metrics is None
    pd.testing.assert_frame_equal(back.events, ts.events)
