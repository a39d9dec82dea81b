"""Plain qlog metrics records read in C (``_runscan.metrics_record``) against the Python
path (orjson, ``vocabulary._decode``, ``_metrics``), the reference: on hostile records the
C reader either returns exactly what the Python path reads or declines (None)."""

from __future__ import annotations

import json
import math
import random
import struct
from pathlib import Path

import orjson
import pandas as pd
import pytest

from statemine.errors import InputError
from statemine.parse.inputs import reader_warnings
from statemine.parse.qlog import read_qlog, reading
from statemine.parse.qlog._runscan import metrics_record, scan_run
from statemine.parse.qlog.common import _num, _Report
from statemine.parse.qlog.vocabulary import (
    _METRIC_KEY_WORDS,
    _METRIC_KEYS,
    _METRIC_TYPE_WORDS,
    _METRICS,
    _decode,
    _metrics,
    _scaled,
    _TraceContext,
)

_KEYS = [k for keys in _METRIC_KEYS for k in keys] + ["pto_count", "min_rtt", "latest_rtt", "x"]
#: JSON value spellings, hostile ones among them.
_VALUES = [
    "0", "-0", "1", "-1", "13200", "20.5", "-0.0", "0.0", "9007199254740993", "9007199254740992",
    "123456789012345", "1234567890123456", "18446744073709551616", "1e3", "1E+3", "1.5e-7",
    "2.5e-320", "1e400", "-1e400", "1e-400", "4611686018427387904", "4.611686018427388e18",
    "0.15000000000000002", "01", "1.", ".5", "-", "1e", '"3"', '"NaN"', '"nan"', '"1e3"', "null",
    "true", "false", "[]", "{}", '{"a": 1}', "[1, 2]", '"\\u0031"', '"é"', "NaN", "Infinity",
]  # fmt: skip
_NAMES = [
    "recovery:metrics_updated", "metrics_updated", "quic:recovery_metrics_updated",
    "recovery:METRICS_UPDATED", "Metrics_Updated", "metric_update", "transport:metrics_updated",
    "a:b:metrics_updated", "recovery:congestion_state_updated", "recovery:metrics_updated ",
    "recovery:metrics_\\u0075pdated",
]  # fmt: skip


def _record(rng: random.Random) -> bytes:
    """A random record, mostly of the plain shape, often spoiled."""

    def blank() -> str:
        return (
            rng.choice(["\t", "\n", "\r", "\f"]) if rng.random() < 0.01 else rng.choice(["", " "])
        )

    def value() -> str:
        return rng.choice(_VALUES[:24] if rng.random() < 0.8 else _VALUES)

    keys = rng.sample(_KEYS, rng.randrange(0, 6))
    if keys and rng.random() < 0.1:
        keys.append(rng.choice(keys))  # a key given twice
    if keys and rng.random() < 0.05:
        keys[0] = "\\u0063wnd"  # "cwnd", escaped
    data = ", ".join(f'"{k}"{blank()}:{blank()}{value()}' for k in keys)
    time = rng.choice(["0.25", "3", "-0", "1e3", "12345.678", "0.1", "01", '"5"', "null", "1e400"])
    if rng.random() < 0.6:
        time = repr(rng.uniform(-1e6, 1e6)) if rng.random() < 0.5 else str(rng.randrange(10**6))
    name = rng.choice(_NAMES[:3] if rng.random() < 0.8 else _NAMES)
    parts = [f'"time"{blank()}:{blank()}{time}', f'"name": "{name}"', f'"data": {{{data}}}']
    if rng.random() < 0.05:
        parts.insert(rng.randrange(4), '"group_id": "7"')
    if rng.random() < 0.05:
        rng.shuffle(parts)
    text = "{" + blank() + ("," + blank()).join(parts) + blank() + "}" + blank()
    if rng.random() < 0.03:
        text = text[: rng.randrange(len(text))]  # cut off
    return text.encode()


def _same(a: float, b: float) -> bool:
    """Equal to the bit (NaN equal to NaN)."""
    return (a != a and b != b) or struct.pack("<d", a) == struct.pack("<d", b)


def _reference(record: bytes, ctx: _TraceContext) -> tuple[float, ...] | None:
    """What the Python path reads from ``record`` where it is a metrics event that goes to
    the trace's own connection without warnings: (time, the six columns scaled, pto)."""
    try:
        event = orjson.loads(record)
    except ValueError:
        return None
    decoded = _decode(event, ctx)
    if decoded is None or decoded[2] != _METRICS:
        return None
    time, delta, _, data, group, path = decoded
    report = _Report(Path("x"))
    values = _metrics(data, ctx.per_second, 1, "trace 0", report)
    if report.messages or group is not None or path is not None or delta:
        return None
    pto = data.get("pto_count")
    return (time, *values, math.nan if pto is None else _num(pto))


def test_metrics_record_agrees_with_python_on_hostile_records() -> None:
    ctx = _TraceContext.of({"common_fields": {"time_format": "relative"}})
    rng = random.Random(29)
    taken = declined = 0
    for _ in range(20_000):
        record = _record(rng)
        fast = metrics_record(record, _METRIC_TYPE_WORDS, _METRIC_KEY_WORDS)
        if fast is None:
            declined += 1
            continue
        taken += 1
        expected = _reference(record, ctx)
        assert expected is not None, record
        got = (fast[0], *_scaled(fast[1:7], ctx.per_second), fast[7])
        assert all(map(_same, got, expected)), (record, got, expected)
    assert taken > 2_000 and declined > 2_000  # both ways exercised


@pytest.mark.parametrize(
    "record",
    [
        b'{"time": 1, "name": "metrics_updated", "data": {"cwnd": 3, "cwnd": 4}}',
        b'{"time": 1, "name": "metrics_updated", "data": {"\\u0063wnd": 3}}',
        b'{"time": 1, "name": "metrics_updated", "data": {"cwnd": "3"}}',
        b'{"time": 1, "name": "metrics_updated", "data": {"cwnd": "NaN"}}',
        b'{"time": 1, "name": "metrics_updated", "data": {"cwnd": null}}',
        b'{"time": 1, "name": "metrics_updated", "data": {"cwnd": 9007199254740993}}',
        b'{"time": 1, "name": "metrics_updated", "data": {"cwnd": 1e400}}',
        b'{"time": 01, "name": "metrics_updated", "data": {}}',
        b'{"time": "1", "name": "metrics_updated", "data": {}}',
        b'{"time": 1, "name": "metrics_updated", "data": {"x": {"cwnd": 1}}}',
        b'{"time": 1, "name": "metrics_updated", "data": {}, "group_id": "2"}',
        b'{"time": 1, "name": "METRICS_UPDATED", "data": {}}',
        b'{"time": 1, "name": "metrics_updated", "data": {}',
    ],
)
def test_metrics_record_declines(record: bytes) -> None:
    """Duplicate or escaped keys, a chosen value not a number, integers past 15 digits, no
    finite double, bad JSON, other keys or spellings: left to the Python path."""
    assert metrics_record(record, _METRIC_TYPE_WORDS, _METRIC_KEY_WORDS) is None


def test_metrics_record_values() -> None:
    """Values checked by hand: -0 is the integer 0 (+0.0), -0.0 stays negative, the first
    present key of a column counts, pto_count last."""
    record = (
        b'{"time": -0, "name": "recovery:metrics_updated", "data": {"cwnd": -0.0, '
        b'"current_cwnd": 5, "ssthresh": 4611686018427387904e0, "smoothed_rtt": 20.5, '
        b'"delivery_rate": 1.5e3, "bw": 7, "pto_count": 2, "min_rtt": "x", "ok": true}}'
    )
    fast = metrics_record(record, _METRIC_TYPE_WORDS, _METRIC_KEY_WORDS)
    assert fast is not None
    assert math.copysign(1, fast[0]) == 1 and math.copysign(1, fast[1]) == -1
    assert fast[3] == 2.0**62 and fast[4] == 20.5 and fast[6] == 1500.0 and fast[7] == 2.0
    assert fast[2] != fast[2] and fast[5] != fast[5]


def _hostile_file(path: Path, seed: int, first: int = 0, n: int = 3_000) -> Path:
    """A JSON-SEQ file of hostile metrics records (:func:`_record`) among state events
    (every 50th from ``first``) and packets."""
    rng = random.Random(seed)
    lines = [json.dumps({"qlog_format": "JSON-SEQ", "trace": {"common_fields": {}}})]
    states = ["slow_start", "congestion_avoidance", "recovery"]
    for i in range(first, first + n):
        if i % 50 == 0:
            data = {"new": rng.choice(states)}
            lines.append(json.dumps({"time": i, "name": "congestion_state_updated", "data": data}))
        elif i % 3 == 0:
            lines.append(json.dumps({"time": i, "name": "transport:packet_sent", "data": {}}))
        else:
            lines.append(_record(rng).decode().replace("\n", " "))
    path.write_text("".join("\x1e" + line + "\n" for line in lines))
    return path


@pytest.mark.parametrize("derive", [False, True])
@pytest.mark.parametrize("slice_rows", [None, 20])
@pytest.mark.parametrize("first", [0, 1])
def test_files_read_the_same_with_and_without_the_c_reader(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    derive: bool,
    slice_rows: int | None,
    first: int,
) -> None:
    """A JSON-SEQ file of hostile metrics records among state events and packets reads the
    same (events, traces, metrics, warnings) as with every record left to Python; also
    with the held events spilled every 20 and with metrics records before any other."""
    if slice_rows is not None:
        monkeypatch.setattr("statemine.parse.qlog._SLICE_ROWS", slice_rows)
    path = _hostile_file(tmp_path / "hostile.sqlog", 7 + first, first)
    calls = []

    def counted(*args: object) -> tuple[float, ...] | None:
        found = metrics_record(*args)  # type: ignore[arg-type]  # the module's own arguments
        calls.append(found is not None)
        return found

    monkeypatch.setattr(reading, "metrics_record", counted)
    fast = read_qlog(path, derive_states=derive)
    assert sum(calls) > 300 and not all(calls)  # both ways taken
    monkeypatch.setattr(reading, "metrics_record", lambda *args: None)
    slow = read_qlog(path, derive_states=derive)
    assert fast.metrics is not None and slow.metrics is not None
    pd.testing.assert_frame_equal(fast.events, slow.events)
    pd.testing.assert_frame_equal(fast.traces, slow.traces)
    pd.testing.assert_frame_equal(fast.metrics, slow.metrics)
    assert fast.meta == slow.meta
    assert reader_warnings(fast) == reader_warnings(slow)


def test_a_time_out_of_range_is_the_same_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A metrics record read in C whose time is past any clock's, amid a run of them:
    the error the Python path raises."""
    records = [
        {"time": t, "name": "metrics_updated", "data": {"cwnd": 10 * k}}
        for k, t in enumerate([1, 2, 3, 1e300, 5, 6])
    ]
    records.insert(0, {"time": 0, "name": "congestion_state_updated", "data": {"new": "x"}})
    path = tmp_path / "far.sqlog"
    path.write_text("".join(f"\x1e{json.dumps(r)}\n" for r in [{"trace": {}}, *records]))
    with pytest.raises(InputError) as fast:
        read_qlog(path)
    monkeypatch.setattr(reading, "metrics_record", lambda *args: None)
    with pytest.raises(InputError) as slow:
        read_qlog(path)
    assert str(fast.value) == str(slow.value) and "event 4" in str(fast.value)


@pytest.mark.parametrize("seed", range(3))
def test_own_words_found_anywhere_in_a_run(seed: int) -> None:
    """scan_run's search for the words that keep a record from being only counted
    (``"group_id"``, ``"path``, ``"time_format"``; 16 bytes at a time) finds one, or a
    cut-off near miss, at any offset of a run, also in its last bytes, as the Python rule
    (``_sorted_records``) does."""
    rng = random.Random(seed)
    words = [*reading._OWN_WORDS, b'"pat', b'"group_i', b'"time_forma', b'"g', b'"']
    for _ in range(400):
        n = rng.randrange(1, 12)
        recs = [
            b'{"time": %d, "name": "transport:packet_sent", "data": {"x": "%s"}}'
            % (k, b"p" * rng.randrange(40))
            for k in range(n)
        ]
        k = rng.randrange(n)
        at = rng.randrange(len(recs[k]) + 1)
        recs[k] = recs[k][:at] + rng.choice(words) + recs[k][at:]
        run = b"".join(r + b"\n\x1e" for r in recs)[:-1]
        count, lo, hi, parse = reading._sorted_records(recs, run, n)
        got = scan_run(run, reading._CODE_WORDS, reading._OWN_WORDS)
        assert got[1] == [k for k, p in enumerate(parse) if p], (run, got)
        assert got[3] == count
        if count:
            assert (got[4], got[5]) == (lo, hi)
