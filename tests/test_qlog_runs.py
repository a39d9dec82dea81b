"""JSON-SEQ records read in runs (issue 29): a block of one-line records is split once and
its records only counted are found without a step per record; the trace set must equal
the record-by-record reading of the same events (a blank after each separator breaks
every run), warnings, lines and errors included. A connection's few metrics updates are
walked by a plain-Python cursor that must equal the numpy one, and a server's small
connections are not spilled to files one by one."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from test_load_many import assert_same

from statemine.errors import InputError
from statemine.parse.qlog import _runscan, read_qlog
from statemine.parse.qlog.common import _Report
from statemine.parse.qlog.connections import _Connection, _SpillStore
from statemine.parse.qlog.metrics import _MetricsCursor, _SmallCursor
from statemine.parse.qlog.reading import (
    _OWN_WORDS,
    _TIMED_NAME,
    _TIMED_SHAPES,
    _iter_records,
    _Reader,
    _run_count,
    _sorted_records,
)
from statemine.parse.qlog.vocabulary import (
    _CODE_WORDS,
    _MAX_PLANS,
    _METRIC_STRIDE,
    _PLANS,
    _metrics,
)

HEADER = {
    "qlog_format": "JSON-SEQ",
    "qlog_version": "0.3",
    "title": "quic-go qlog",
    "trace": {"vantage_point": {"type": "server"}, "common_fields": {"ODCID": "ab"}},
}


def _packet(t: float, n: int) -> str:
    return json.dumps({"time": t, "name": "transport:packet_sent", "data": {"n": n}})


def _records(*, bad: bool = False, extra: tuple[str, ...] = ()) -> list[str]:
    """A quic-go-like connection: states, metrics, packets (key order time, name), and
    with ``bad`` an invalid record between packets and one cut off at the end."""
    out = [json.dumps(HEADER)]
    for i in range(60):
        t = i * 0.5
        if i % 20 == 0:
            state = ("slow_start", "recovery", "congestion_avoidance")[i // 20]
            out.append(
                json.dumps(
                    {"time": t, "name": "recovery:congestion_state_updated", "data": {"new": state}}
                )
            )
        elif i % 4 == 0:
            out.append(
                json.dumps(
                    {
                        "time": t,
                        "name": "recovery:metrics_updated",
                        "data": {"congestion_window": 12000 + i, "bytes_in_flight": i},
                    }
                )
            )
        elif i == 13 and bad:  # parsed (its type is read), not valid JSON, still a run
            out.append('{"time": 6.5, "name": "recovery:metrics_updated", "data": {"cwnd": 1}')
        else:
            out.append(_packet(t, i))
    out.extend(extra)
    if bad:
        out.append('{"time": 99, "name": "transport:pac')
    return out


def _write(folder: Path, records: list[str], runs: bool) -> Path:
    """The records as the JSON-SEQ file ``folder/conn.sqlog``; without ``runs`` a blank follows each separator,
    so no block is a run and every record is read on its own."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "conn.sqlog"
    lead = "\x1e" if runs else "\x1e "
    path.write_text("".join(lead + r + "\n" for r in records))
    return path


def test_run_count_accepts_only_one_record_a_line() -> None:
    assert _run_count(b'{"a": 1}\n\x1e{"b": 2}\n\x1e{"c": 3}\n') == 3
    assert _run_count(b'{"a": 1}\n') == 1
    assert _run_count(b'{"a": 1}\n\x1e {"b": 2}\n') == 0  # a blank before a record
    assert _run_count(b'{"a":\n 1}\n\x1e{"b": 2}\n') == 0  # a record over two lines
    assert _run_count(b'{"a": 1}\x1e{"b": 2}\n') == 0  # no newline after a record
    assert _run_count(b'{"a": 1}\n\n\x1e{"b": 2}\n') == 0  # a blank line
    assert _run_count(b'{"a": "\x1e"}\n') == 0  # a separator inside a record
    assert _run_count(b'{"a": 1} \n') == 0


def test_records_come_in_runs_after_the_first() -> None:
    text = "".join("\x1e" + r + "\n" for r in _records()).encode()
    path = Path("x.sqlog")

    def records(runs: bool, block: int) -> list[tuple[int, bytes, int]]:
        reader = _Reader(io.BufferedReader(io.BytesIO(text[block:])), path)
        return list(_iter_records(path, reader, text[:block], b"\x1e", 1 << 20, runs=runs))

    single = records(False, 4096)
    assert all(n == 0 for _, _, n in single)
    for block in (37, 4096, len(text)):  # the head cut inside a record, or the whole file
        got = records(True, block)
        assert got[0] == single[0]  # the header on its own
        assert any(n > 1 for _, _, n in got)
        flat = [
            (line + k, body, 0)
            for line, run, n in got
            for k, body in enumerate(run[:-1].split(b"\n\x1e") if n else [run])
        ]
        assert flat == single


@pytest.mark.parametrize("derive", [False, True])
@pytest.mark.parametrize(
    "extra",
    [
        (),
        # parsed, not only counted: another connection, a path, its own clock, key order
        (json.dumps({"time": 40, "name": "transport:packet_sent", "group_id": "g2"}),),
        (json.dumps({"time": 41, "name": "transport:packet_sent", "path_id": 1}),),
        (json.dumps({"time": 42, "name": "transport:packet_sent", "time_format": "delta"}),),
        (json.dumps({"name": "transport:packet_sent", "time": 43}),),
        # other spellings among json.dumps' ones: compact, blanks elsewhere
        ('{"time":43.5,"name":"transport:packet_sent"}', '{"time" :44,"name":"x:y"}'),
        ('{"time": 1e400, "name": "transport:packet_sent"}',),  # a huge number
        ('{"time": NaN, "name": "transport:packet_sent"}',),
        ('{"time": Infinity, "name": "recovery:metrics_updated"}',),
        ('{"time": 12, "name": "recovery:metrics_updated", "data": {"cwnd": 1e999}}',),
        ("5", "[1, 2]", '"text"', "{}"),  # events of a bad type
        ('{"time": 44, "name": "transport:packet_sent", "time": 45}',),  # a duplicate key
        ('{"time": "45", "name": "recovery:metrics_updated", "data": {"cwnd": 1}}',),
        ("[" * 2000 + "]" * 2000,),  # deep nesting: not valid for orjson
    ],
)
def test_runs_equal_records_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, derive: bool, extra: tuple
) -> None:
    runs: list[int] = []

    def counted(region: bytes) -> int:
        runs.append(_run_count(region))
        return runs[-1]

    monkeypatch.setattr("statemine.parse.qlog.reading._run_count", counted)
    for bad in (False, True):
        records = _records(bad=bad, extra=extra)
        runs.clear()
        path = tmp_path / "conn.sqlog"  # the same path: the file's name is in the results
        try:
            one = read_qlog(_write(tmp_path, records, False), derive_states=derive)
        except InputError as exc:
            with pytest.raises(InputError) as raised:
                read_qlog(_write(tmp_path, records, True), derive_states=derive)
            assert str(raised.value) == str(exc)
            continue
        assert not any(runs)
        assert _write(tmp_path, records, True) == path
        assert_same(read_qlog(path, derive_states=derive), one)
        assert max(runs) > 50 or not all(r.startswith("{") for r in extra)
        if bad:
            warnings = json.loads(one.meta["warnings"])
            assert any(":15: record is not valid JSON" in w for w in warnings)
            assert any("the last record is cut off" in w for w in warnings)


def test_a_long_record_in_a_run_names_its_line(tmp_path: Path) -> None:
    records = _records()
    records[7] = json.dumps({"time": 3.0, "name": "transport:packet_sent", "pad": "x" * 400})
    path = _write(tmp_path, records, True)
    with pytest.raises(InputError, match=r"conn\.sqlog:8: a record is longer than 300 bytes"):
        read_qlog(path, max_record_bytes=300)
    records[7] = _packet(3.0, 7)  # every record short, the run longer than the limit
    ts = read_qlog(_write(tmp_path, records, True), max_record_bytes=300)
    assert len(ts.events) == 3


@pytest.mark.parametrize("seed", range(30))
def test_small_cursor_walks_as_the_metrics_cursor(seed: int) -> None:
    """The plain-Python cursor of a connection's few metrics updates gives the numpy
    cursor's rows and carried values at every step (equal times, NaN columns, PTO ends)."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(0, 40))
    times = np.sort(rng.integers(0, 8, m).astype(float))
    rows = np.empty((m, _METRIC_STRIDE))
    rows[:, 0], rows[:, 1], rows[:, 2] = times, np.arange(m) * 2.0, np.arange(m) + 5.0
    values = rng.normal(size=(m, _METRIC_STRIDE - 3))
    values[rng.random(values.shape) < 0.4] = np.nan
    values[:, -1] = np.nan  # a column never logged
    rows[:, 3:] = values
    ends = rng.random(m) < 0.3
    small, full = _SmallCursor(rows, ends), _MetricsCursor(iter([(rows, ends)]))
    np.testing.assert_array_equal(np.asarray(small.values()), full.values())
    for _ in range(25):
        time, seq = float(rng.integers(-1, 10)), float(rng.integers(-1, 2 * m + 2))
        if rng.random() < 0.1:
            time, seq = math.inf, math.inf
        until_end = bool(rng.random() < 0.5)
        got, want = small.advance(time, seq, until_end), full.advance(time, seq, until_end)
        assert (got is None) == (want is None)
        if got is not None and want is not None:
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.asarray(small.values()), full.values())


def test_metric_keys_worked_out_once_per_shape() -> None:
    """Each metrics event's columns come from the first of their keys it logs, whatever
    its key order, and however many shapes a file shows (the shapes kept are bounded)."""
    report = _Report(Path("x.sqlog"))

    def cwnd(data: dict) -> float:
        return _metrics(data, 1e3, 1, "trace 0", report)[0]

    assert cwnd({"cwnd": 1, "congestion_window": 2}) == 2.0
    assert cwnd({"congestion_window": 2, "cwnd": 1}) == 2.0
    assert cwnd({"cwnd": 1}) == 1.0
    assert math.isnan(cwnd({"bytes_in_flight": 3}))
    for k in range(_MAX_PLANS + 50):  # a hostile file: a new shape every event
        assert cwnd({f"x{k}": 0, "current_cwnd": k}) == float(k)
    assert len(_PLANS) <= _MAX_PLANS
    assert cwnd({"cwnd": "lots"}) != cwnd({"cwnd": "lots"})  # NaN, with a warning
    assert any("metric cwnd = 'lots' is not a number" in w for w in report.finish())


@pytest.mark.parametrize(
    "record",
    [
        b'{"time":0.05,"name":"transport:packet_sent","data":{}}',
        b'{"time": 0.05, "name": "transport:packet_sent", "data": {}}',
        b'{"time": -1.5e+3, "name": "a:b:c"}',
        b'{"time":12E-2,"name":""}',
        b'{"time":7,"name":"recovery:metrics_updated"}',
        b'{"time": 7 , "name": "x"}',  # blanks elsewhere: only the general pattern
        b'{"time":\t7,"name":"x"}',
        b'{"time": 1.}',
        b'{"time": "7", "name": "x"}',
        b'{"name": "x", "time": 7}',
    ],
)
def test_timed_shapes_read_as_the_general_pattern(record: bytes) -> None:
    general = _TIMED_NAME.match(record)
    for shape in _TIMED_SHAPES.values():
        found = shape.match(record)
        if found is not None:
            assert general is not None and found.groups() == general.groups()


def _run_count_numpy(region: bytes) -> int:
    """The run count as numpy counted it before _runscan (the reference)."""
    if region[:1] != b"{" or region[-2:] != b"}\n":
        return 0
    n = region.count(b"}\n\x1e{") + 1
    codes = np.frombuffer(region, np.uint8)
    if np.count_nonzero(codes == 10) != n or np.count_nonzero(codes == 30) != n - 1:
        return 0
    return n


#: Pieces of hostile records: other spellings, numbers JSON or not, names with and
#: without a category, the words that keep a record from being only counted.
_HEADS = [b'{"time":', b'{"time": ', b'{ "time" :\t', b'{"time" ', b'{"name":', b'{"time":"', b"{"]
_NUMBERS = [
    b"0.05",
    b"-0.0",
    b"0",
    b"1e999",
    b"-1E+3",
    b"12.5e-2",
    b"1.",
    b".5",
    b"-",
    b"1e",
    b"7 ",
    b"9007199254740993",  # 2^53 + 1: beyond the fast path's exact mantissas
    b"0.1234567890123456789",
    b"1e-23",
    b"-12345678901234567890e-5",
    b"5e-324",
]
_NAMES = [
    b', "name": "transport:packet_sent"',
    b',"name":"transport:packet_sent"',
    b' ,\t"name" : "recovery:metrics_updated"',
    b',"name":"METRICS_UPDATED"',
    b',"name":"a:b:c"',
    b',"name":"nocolon"',
    b',"name":":"',
    b',"name":"transport:packet_sent',
    b',"name":"x\\"y"',
    b', "nam": "x"',
    b"",
]
_TAILS = [
    b"}",
    b', "data": {}}',
    b', "group_id": 3}',
    b', "path_id": 1}',
    b', "time_format": "x"}',
    b"]",
]


@pytest.mark.parametrize("seed", range(6))
def test_runscan_sorts_a_run_as_the_python_rule(seed: int) -> None:
    """_runscan.scan_run on hostile runs equals the regex rule record by record (which
    are parsed, the count and time range of the others), and run_count equals numpy's."""
    rng = np.random.default_rng(seed)

    def pick(options: list[bytes]) -> bytes:
        return options[int(rng.integers(len(options)))]

    for _ in range(200):
        n = int(rng.integers(1, 30))
        recs = [pick(_HEADS) + pick(_NUMBERS) + pick(_NAMES) + pick(_TAILS) for _ in range(n)]
        run = b"".join(r + b"\n\x1e" for r in recs)[:-1]
        assert _runscan.run_count(run) == _run_count_numpy(run)
        count, lo, hi, parse = _sorted_records(recs, run, n)
        got = _runscan.scan_run(run, _CODE_WORDS, _OWN_WORDS)
        want_k = [k for k, p in enumerate(parse) if p]
        assert got[:3] == (n, want_k, [recs[k] for k in want_k])
        assert got[3] == count
        if count:
            assert (got[4], got[5]) == (lo, hi)
            assert math.copysign(1, got[4]) == math.copysign(1, lo)
        # a blank or a separator inside breaks a run, as numpy counted
        for broken in (run.replace(b"\n\x1e", b"\n\x1e ", 1), run + b"\x1e{}\n", run[:-1]):
            assert _runscan.run_count(broken) == _run_count_numpy(broken)


def _server_file(path: Path, n: int) -> Path:
    """A server's JSON-SEQ file of ``n`` connections, two state events each (bench_qlog)."""
    lines = [json.dumps(HEADER)]
    for i in range(n):
        for k, state in enumerate(("slow_start", "congestion_avoidance")):
            event = {
                "time": i + k / 2,
                "name": "recovery:congestion_state_updated",
                "data": {"new": state},
                "group_id": f"{i:016x}",
            }
            lines.append(json.dumps(event))
    path.write_text("".join("\x1e" + r + "\n" for r in lines))
    return path


def test_small_connections_stay_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spilling a trace's events (every 16,384 held; here 1,024) leaves connections of a
    few events in memory (their files cost milliseconds each); once the small ones hold more than
    _SMALL_HELD events in all they are spilled too. The trace set is the same."""
    monkeypatch.setattr("statemine.parse.qlog._SLICE_ROWS", 1024)  # small ones: below 4
    path = _server_file(tmp_path / "server.sqlog", 600)  # 1,200 events: one spill
    flushed: list[int] = []
    flush = _Connection.flush

    def counted(conn: _Connection, store: _SpillStore) -> None:
        flushed.append(1)
        flush(conn, store)

    monkeypatch.setattr(_Connection, "flush", counted)
    held = read_qlog(path)
    assert not flushed
    monkeypatch.setattr("statemine.parse.qlog.connections._SMALL_HELD", 100)
    spilled = read_qlog(path)
    assert len(flushed) >= 600
    assert_same(held, spilled)
    assert len(held.traces) == 600
