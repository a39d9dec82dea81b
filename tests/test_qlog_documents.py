"""qlog JSON documents read in bounded memory (issue 14): gzip decompressed once, invalid
or cut-off documents of any size streamed, the error one line naming file and line; and
picoquic's packed BBR state numbers decoded."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from pathlib import Path

import pytest

import statemine.parse.qlog as q
from statemine.errors import InputError
from statemine.parse.qlog import read_qlog

DATA = Path(__file__).parent / "data" / "qlog"


def _peak_mib(func) -> float:
    """Peak Python memory (MiB) of ``func()`` (ijson's C parser works in its read buffer)."""
    tracemalloc.start()
    try:
        func()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak / 2**20


def _rows(ts):
    return ts.events.drop(columns=["line"]).reset_index(drop=True)


@pytest.mark.parametrize("name", ["draft01.qlog", "v04.qlog", "draft01_picoquic.qlog"])
def test_gzip_document_is_decompressed_once(tmp_path, monkeypatch, name):
    """One gzip reader is opened over the file (was: one to measure it, two for the two
    streamed passes), and the result is the plain file's."""
    packed = tmp_path / (name + ".gz")
    packed.write_bytes(gzip.compress((DATA / name).read_bytes()))
    opened = []
    real = gzip.GzipFile.__init__

    def counting(self, *args, **kwargs):
        opened.append(1)
        real(self, *args, **kwargs)

    monkeypatch.setattr(gzip.GzipFile, "__init__", counting)
    ts = read_qlog(packed, source=name)
    assert len(opened) == 1
    plain = read_qlog(DATA / name)
    assert _rows(ts).equals(_rows(plain))
    assert ts.traces.drop(columns="source").equals(plain.traces.drop(columns="source"))


def test_large_invalid_document_names_the_line_in_bounded_memory(tmp_path):
    """A 24 MiB document (streamed) with a syntax error near its end: one line naming file
    and line, with a few MiB of Python memory (it was parsed whole: hundreds of MiB)."""
    event = '["1", "transport", "packet_sent", {"packet_number": 7}],\n'
    n = (24 << 20) // len(event)
    f = tmp_path / "big.qlog"
    with open(f, "w") as fh:
        fh.write('{"qlog_version": "draft-01",\n"traces": [{"events": [\n')
        fh.writelines(event for _ in range(n))
        fh.write('["2", "recovery", oops]]}]}\n')
    bad_line = n + 3
    errors = []

    def run():
        with pytest.raises(InputError) as caught:
            read_qlog(f)
        errors.append(caught.value)

    peak = _peak_mib(run)
    (err,) = errors
    assert err.file == str(f) and err.line == bad_line, (err.line, bad_line)
    assert "not valid JSON" in err.reason and "\n" not in str(err)
    assert peak < 16, peak


@pytest.mark.parametrize(
    "text, line",
    [
        ('{"qlog_version": "draft-01",\n "traces": [\n {"events": [[1, "a" "b"]]}]}', 3),
        ('{"traces": [{"events": []}]}\n\n  x', 3),
        ('{"traces": [{"events": [\n[1, "recovery", "x", {"a": tru}]]}]}', 2),
    ],
)
def test_streamed_syntax_error_names_the_line_of_the_bad_byte(tmp_path, monkeypatch, text, line):
    monkeypatch.setattr(q, "_STREAM_MIN_BYTES", 0)
    f = tmp_path / "bad.qlog"
    f.write_text(text)
    with pytest.raises(InputError) as err:
        read_qlog(f)
    assert err.value.line == line and "not valid JSON" in err.value.reason


def test_cut_off_document_is_streamed_up_to_the_cut(monkeypatch):
    """Over the streaming size, a cut-off document keeps every complete event, as the
    whole-document repair does, with a warning (no whole read)."""
    whole = read_qlog(DATA / "truncated.qlog")
    monkeypatch.setattr(q, "_STREAM_MIN_BYTES", 0)
    seen = []
    real = q._streamed_document_traces
    monkeypatch.setattr(q, "_streamed_document_traces", lambda *a: seen.append(1) or real(*a))
    streamed = read_qlog(DATA / "truncated.qlog")
    assert seen == [1]
    assert _rows(streamed).equals(_rows(whole))
    (warning,) = json.loads(streamed.meta["warnings"])
    assert "the JSON document ends before it is complete" in warning


def test_streamed_document_shape_errors(tmp_path, monkeypatch):
    monkeypatch.setattr(q, "_STREAM_MIN_BYTES", 0)
    cases = {
        "none.qlog": ('{"qlog_version": "0.3"}', "no 'traces' array"),
        "scalar.qlog": ('{"traces": 5}', "no 'traces' array"),
    }
    for name, (text, reason) in cases.items():
        f = tmp_path / name
        f.write_text(text)
        with pytest.raises(InputError, match=reason):
            read_qlog(f)
    f = tmp_path / "events.qlog"
    f.write_text(
        '{"traces": [{"events": {"a": 1}}, {"title": "picoquic", "events": '
        '[[0, "recovery", "congestion_state_updated", {"new": 0}]]}]}'
    )
    ts = read_qlog(f)
    assert "trace 0: 'events' is not an array; skipped" in " ".join(json.loads(ts.meta["warnings"]))


def test_picoquic_bbr_packed_states_keep_phase_and_flags(tmp_path):
    """picoquic's BBR numbers: the low byte is the state (bbr.c's enum), ProbeBW's
    sub-phase and the bits above the low byte stay in ``fields``."""
    values = [655360, 721665, 2, 3, 4, 5, 6, 0x10000 | 2]
    events = [
        [k * 1000, 0, "recovery", "congestion_state_updated", {"new": v}]
        for k, v in enumerate(values)
    ]
    doc = {
        "qlog_version": "draft-01",
        "title": "picoquic",
        "traces": [
            {
                "title": "picoquic",
                "event_fields": ["relative_time", "path_id", "category", "event", "data"],
                "configuration": {"time_units": "us"},
                "events": events,
            }
        ],
    }
    f = tmp_path / "bbr.qlog"
    f.write_text(json.dumps(doc))
    ts = read_qlog(f)
    ev = ts.events[ts.events["kind"] == "state"]
    assert ev["state"].tolist() == [
        "BBRStartup",
        "BBRDrain",
        "BBRProbeBW",
        "BBRProbeBW",
        "BBRProbeBW",
        "BBRProbeBW",
        "BBRProbeRTT",
        "BBRProbeBW",
    ]
    phases = [dict(kv.split("=", 1) for kv in f.split())["bbr_phase"] for f in ev["fields"]]
    flags = [dict(kv.split("=", 1) for kv in f.split())["bbr_flags"] for f in ev["fields"]]
    assert phases == [
        "startup",
        "drain",
        "probe_bw_down",
        "probe_bw_cruise",
        "probe_bw_refill",
        "probe_bw_up",
        "probe_rtt",
        "probe_bw_down",
    ]
    assert flags == [hex(v >> 8) for v in values]
    assert ts.traces["implementation"].tolist() == ["picoquic-bbr"]
