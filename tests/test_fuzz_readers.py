"""Differential fuzzing of the statemine-log and qlog readers (hypothesis; issue 11, "Tests").

* statemine log: generated files mixing valid lines with hostile ones (control bytes,
  NUL, escape sequences, bad numbers, bytes that are not UTF-8, CR, repeated fields) are
  read by two independent paths -- the streamed statistics (compiled scanner, fold,
  :func:`statemine.stats.stream.summarize_logs`) and the trace set (:func:`statemine.read` then
  :func:`statemine.summarize`) -- and gzip-compressed: every path must refuse the file
  with an :class:`InputError` at the same FILE:LINE, or give the same tables.
* qlog: generated connections are written as a JSON document, JSON-SEQ and NDJSON, plain
  and gzip (in one or two members): all nine give the same events (apart from the source
  line, which a document does not have); any cut of the gzip
  stream is refused; any byte-level damage gives a trace set or an InputError.

The fast tier runs a short fuzz (20 examples each); a long run is one command (about 30
minutes on one core for 5000 examples each)::

    STATEMINE_FUZZ_EXAMPLES=5000 python3 -m pytest tests/test_fuzz_readers.py -q

(regex-reader fuzzing is in tests/test_synoptic_regex.py.)
"""

from __future__ import annotations

import gzip
import json
import math
import os

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import statemine
from statemine.errors import InputError
from statemine.parse.qlog import read_qlog
from statemine.stats.stream import summarize_logs

EXAMPLES = int(os.environ.get("STATEMINE_FUZZ_EXAMPLES", "20"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

STATES = [
    "SlowStart",
    "Recovery",
    "CongestionAvoidance",
    "[/bold]",
    "=1+2",
    "a\\x1b",
    "\u202eX",
    "Ünïcode",
]
_hostile_bytes = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b""))
_junk = st.sampled_from(
    [
        "\x00",
        "\x1b[31m",
        "\r",
        "\t",
        "=",
        " ",
        "t=",
        "state=",
        "conn=",
        "STATEMINE ",
        "nan",
        "inf",
        "1e999",
        "-1",
        "\u2028",
        "\ufeff",
    ]
)


@st.composite
def statemine_file(draw) -> bytes:
    """Lines of a statemine log: mostly valid (per-connection times never decrease), some
    mangled, some arbitrary bytes."""
    clocks: dict[str, float] = {}
    lines: list[bytes] = []
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(st.integers(0, 9))
        conn = draw(st.sampled_from(["a", "b", "c"]))
        clocks[conn] = clocks.get(conn, 0.0) + draw(st.sampled_from([0.0, 0.25, 1.0, 1e-7]))
        what = (
            f"state={draw(st.sampled_from(STATES))}"
            if kind < 6
            else "event=Close"
            if kind == 6
            else "event=LossDetected rule=packet"
        )
        role = draw(st.sampled_from(["", " role=server", " role=client"]))
        line = f"STATEMINE t={clocks[conn]:.9g} conn={conn}{role} {what} cwnd={draw(st.integers(0, 10**6))}"
        if kind == 8:  # a mangled line: junk spliced in somewhere
            at = draw(st.integers(0, len(line)))
            line = line[:at] + draw(_junk) + line[at:]
        data = line.encode("utf-8")
        if kind == 9:
            data = draw(_hostile_bytes)
        lines.append(draw(st.sampled_from([b"", b"I1120 x.go:1] "])) + data)
    ending = draw(st.sampled_from([b"\n", b"\r\n"]))
    return b"".join(line + ending for line in lines)


def _outcome(fn):
    """``("error", line)`` for an InputError (checked to name ``path``), else ``("ok", tables)``."""
    try:
        return "ok", fn()
    except InputError as err:
        assert err.reason and "\n" not in err.reason
        return "error", (err.file, err.line)


def _same(a, b) -> None:
    assert a[0] == b[0], (a, b)
    if a[0] == "error":
        assert a[1][1] == b[1][1], (a, b)  # the same line
        return
    for x, y, keys in zip(a[1], b[1], (["state"], ["src", "dst"])):
        # rows in name order: the two paths order rows of equal time fraction differently
        x, y = (f.sort_values(keys, kind="stable").reset_index(drop=True) for f in (x, y))
        pd.testing.assert_frame_equal(x, y, check_exact=False, rtol=1e-9, atol=1e-12)


@FUZZ
@given(data=statemine_file())
def test_statemine_log_paths_agree_on_any_file(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("fuzz")
    plain, packed = folder / "run.log", folder / "run.log.gz"
    plain.write_bytes(data)
    packed.write_bytes(gzip.compress(data))
    opts = dict(n_boot=0)

    def in_memory(path):
        return lambda: statemine.summarize(statemine.read(path, "statemine"), **opts)

    def streamed(path):
        def run():
            s = summarize_logs([path], **opts)
            return s.states, s.transitions

        return run

    results = {
        (name, path): _outcome(fn(path))
        for path in (plain, packed)
        for name, fn in (("memory", in_memory), ("stream", streamed))
    }
    for (name, path), result in results.items():
        if result[0] == "error":
            assert result[1][0] == str(path), (name, result)
    first = results[("memory", plain)]
    for result in results.values():
        _same(first, result)


# -- qlog ----------------------------------------------------------------------------------------
_state_names = st.sampled_from(
    [
        "slow_start",
        "congestion_avoidance",
        "recovery",
        "application_limited",
        "[/bold]",
        "=HYPERLINK(1)",
        "\x1b[2J",
        "",
        "x" * 300,
        "Ünïcode",
    ]
)


@st.composite
def qlog_connection(draw) -> list[dict]:
    """Events of one connection, times in ms, never decreasing."""
    now = 0.0
    events = []
    for _ in range(draw(st.integers(1, 15))):
        now += draw(st.sampled_from([0.0, 0.5, 3.0, 1000.0]))
        kind = draw(st.integers(0, 3))
        if kind <= 1:
            events.append(
                {
                    "time": now,
                    "name": "recovery:congestion_state_updated",
                    "data": {"new": draw(_state_names)},
                }
            )
        elif kind == 2:
            events.append(
                {
                    "time": now,
                    "name": "recovery:metrics_updated",
                    "data": {
                        "congestion_window": draw(st.integers(0, 10**7)),
                        "bytes_in_flight": draw(st.integers(0, 10**7)),
                    },
                }
            )
        else:
            events.append(
                {
                    "time": now,
                    "name": "recovery:packet_lost",
                    "data": {
                        "trigger": draw(st.sampled_from(["reordering_threshold", "time_threshold"]))
                    },
                }
            )
    return events


def _serialize(events: list[dict], layout: str) -> bytes:
    trace = {"vantage_point": {"type": "server"}, "common_fields": {"ODCID": "abcd"}}
    if layout == "document":
        return json.dumps(
            {"qlog_version": "0.3", "qlog_format": "JSON", "traces": [{**trace, "events": events}]}
        ).encode()
    head = {
        "qlog_version": "0.3",
        "qlog_format": "JSON-SEQ" if layout == "seq" else "NDJSON",
        "trace": trace,
    }
    sep = "\x1e" if layout == "seq" else ""
    return "".join(sep + json.dumps(r) + "\n" for r in [head, *events]).encode()


def _read(path):
    """The events of ``path`` without the source line (which a .qlog document has not)."""
    try:
        ts = read_qlog(path, source="conn")
    except InputError as err:
        return "error", err.reason
    return "ok", ts.events.drop(columns="line")


@FUZZ
@given(events=qlog_connection(), split=st.floats(0, 1))
def test_qlog_layouts_and_gzip_give_the_same_events(tmp_path_factory, events, split):
    folder = tmp_path_factory.mktemp("q")
    results = {}
    for layout in ("document", "seq", "ndjson"):
        data = _serialize(events, layout)
        cut = int(len(data) * split)
        for packing, content in (
            ("plain", data),
            ("gzip", gzip.compress(data)),
            ("two-members", gzip.compress(data[:cut]) + gzip.compress(data[cut:])),
        ):
            path = folder / f"{layout}-{packing}.qlog"
            path.write_bytes(content)
            results[layout, packing] = _read(path)
    kinds = {r[0] for r in results.values()}
    assert len(kinds) == 1, results
    if kinds == {"ok"}:
        first = next(iter(results.values()))[1]
        for key, (_, frame) in results.items():
            pd.testing.assert_frame_equal(
                frame.reset_index(drop=True), first.reset_index(drop=True), obj=str(key)
            )
        assert math.isfinite(first["time"].sum())


@FUZZ
@given(
    events=qlog_connection(),
    layout=st.sampled_from(["document", "seq", "ndjson"]),
    keep=st.floats(0, 0.999),
)
def test_any_cut_of_a_gzip_qlog_is_refused(tmp_path_factory, events, layout, keep):
    packed = gzip.compress(_serialize(events, layout))
    path = tmp_path_factory.mktemp("cut") / "cut.qlog.gz"
    path.write_bytes(packed[: max(2, int(len(packed) * keep))])
    for fmt in ("auto", "qlog"):
        with pytest.raises(InputError) as err:
            statemine.read(path, fmt)
        assert err.value.file == str(path)


@FUZZ
@given(
    events=qlog_connection(),
    layout=st.sampled_from(["document", "seq", "ndjson"]),
    flips=st.lists(st.tuples(st.floats(0, 0.999), st.integers(0, 255)), min_size=1, max_size=4),
    packed=st.booleans(),
)
def test_damaged_qlog_bytes_give_a_trace_set_or_an_input_error(
    tmp_path_factory, events, layout, flips, packed
):
    data = bytearray(_serialize(events, layout))
    if packed:
        data = bytearray(gzip.compress(bytes(data)))
    for where, value in flips:
        data[int(where * len(data))] = value
    path = tmp_path_factory.mktemp("dmg") / "damaged.qlog"
    path.write_bytes(bytes(data))
    for fmt in ("auto", "qlog"):
        try:
            ts = statemine.read(path, fmt)
        except InputError as err:
            assert err.file == str(path) and err.reason
            continue
        ts.validate()
