"""A qlog trace's spilled connections share one spill store (issue 26/29): one file per
kind of event for the whole trace, each connection's flushes segments of it, so spilling
costs microseconds a connection, not files of its own. Reading them back must give what
is read without spilling."""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path

import pytest
from test_load_many import assert_same

import statemine
from statemine.errors import InputError
from statemine.parse.qlog import read_qlog_parts
from statemine.parse.qlog.connections import _ARRAYS, PACKET_COLUMNS, _Connection

HEADER = {
    "qlog_format": "JSON-SEQ",
    "qlog_version": "0.3",
    "title": "quic-go qlog",
    "trace": {"vantage_point": {"type": "server"}, "common_fields": {"ODCID": "ab"}},
}
#: The spill store's kinds of file: items, PTO ends, each flat array, each packet column.
KINDS = 2 + len(_ARRAYS) + len(PACKET_COLUMNS)


def _events(i: int, r: int, states: bool) -> list[dict]:
    """Round ``r`` of connection ``i``: a state change (``states``), a metrics update with
    a PTO count, a packet sent and one received with an ACK of the packet before."""
    t = r * 10.0 + i / 1000
    group = f"{i:016x}"
    out: list[dict] = []
    if states and r % 3 == 0:
        new = ("slow_start", "congestion_avoidance", "recovery")[(r // 3) % 3]
        out.append({"name": "recovery:congestion_state_updated", "data": {"new": new}})
    cwnd = 12000 + 1200 * r + i
    out.append(
        {
            "name": "recovery:metrics_updated",
            "data": {"congestion_window": cwnd, "bytes_in_flight": 100 * r, "pto_count": r % 2},
        }
    )
    out.append(
        {
            "name": "transport:packet_sent",
            "data": {
                "header": {"packet_type": "1RTT", "packet_number": r},
                "raw": {"length": 1200},
            },
        }
    )
    if r:
        ack = [{"frame_type": "ack", "acked_ranges": [[0, r - 1]]}]
        out.append(
            {
                "name": "transport:packet_received",
                "data": {"header": {"packet_type": "1RTT"}, "frames": ack},
            }
        )
    return [{"time": t + k * 0.001, **e, "group_id": group} for k, e in enumerate(out)]


def _server(path: Path, n: int, rounds: int, states: bool = True, bad_at: int = -1) -> Path:
    """A server's JSON-SEQ trace of ``n`` connections whose events interleave round by
    round (so each is flushed many times); ``bad_at``: an infinite time after that many
    rounds (an error part way)."""
    lines = [json.dumps(HEADER)]
    for r in range(rounds):
        if r == bad_at:
            lines.append('{"time": 1e300, "name": "recovery:metrics_updated", "data": {}}')
        for i in range(n):
            lines += [json.dumps(e) for e in _events(i, r, states)]
    path.write_text("".join("\x1e" + line + "\n" for line in lines))
    return path


@pytest.mark.parametrize("states", [True, False])
def test_spilled_connections_share_a_few_files(tmp_path: Path, states: bool, monkeypatch) -> None:
    """1,000 connections all spilled by ``read`` (every 20 events, each flushed a few
    times; 200 where states are derived, the per-connection path) make at most one file
    per kind in the spill folder, not files per connection, and read what a read without
    spilling gives."""
    n = 1000 if states else 200
    path = _server(tmp_path / "server.sqlog", n, 3, states)
    want = statemine.read(path, derive_states=not states)  # under 16,384 events: none spilled
    seen: list[int] = []
    flushes: list[int] = []
    discard, flush = _Connection.discard, _Connection.flush

    def counted_discard(conn: _Connection) -> None:
        if conn.spill is not None:
            seen.append(len(os.listdir(conn.spill.folder)))
        discard(conn)

    def counted_flush(conn: _Connection, store) -> None:
        flushes.append(1)
        flush(conn, store)

    monkeypatch.setattr(_Connection, "discard", counted_discard)
    monkeypatch.setattr(_Connection, "flush", counted_flush)
    monkeypatch.setattr("statemine.parse.qlog._SLICE_ROWS", 20)
    got = statemine.read(path, derive_states=not states)
    assert len(flushes) > 2 * n  # each connection flushed in a few segments
    assert len(seen) == n and 0 < max(seen) <= KINDS
    assert want.n_traces == n
    assert_same(got, want)


def test_small_spilled_connections_are_one_part_each(tmp_path: Path) -> None:
    """A spilled connection of at most ``slice_rows`` events is read back and built
    whole: one part each, not one for its events and more for its metrics updates; the
    parts join to the read without spilling and the spill folder is empty afterwards."""
    path = _server(tmp_path / "server.sqlog", 100, 3)
    folder = tmp_path / "spill"
    folder.mkdir()
    parts = list(read_qlog_parts(path, folder, slice_rows=20))
    assert os.listdir(folder) == []
    want = statemine.read(path)
    assert len(parts) == 100 == want.n_traces == sum(p.first for p in parts)
    import pandas as pd

    events = pd.concat([p.events for p in parts if p.events is not None], ignore_index=True)
    text = {"trace": str, "kind": str, "state": str}
    order = ["trace", "seq"]
    got = events.sort_values(order, kind="stable").reset_index(drop=True)
    expected = want.events.sort_values(order, kind="stable").reset_index(drop=True)
    columns = list(expected.columns)
    pd.testing.assert_frame_equal(
        got[columns].astype(text), expected.astype(text), check_dtype=False
    )


@pytest.mark.parametrize("derive", [False, True])
def test_one_file_of_many_connections_reads_the_same_spilled(
    tmp_path: Path, derive: bool, monkeypatch
) -> None:
    """``read`` of one file of 300 (100) interleaved connections: spilling forced (every 20
    events, through the shared store) gives the trace set of the read without spilling."""
    n = 100 if derive else 300  # derived states: the per-connection path (milliseconds)
    path = _server(tmp_path / "server.sqlog", n, 9, states=not derive)
    want = statemine.read(path, derive_states=derive)
    flushes: list[int] = []
    flush = _Connection.flush

    def counted(conn: _Connection, store) -> None:
        flushes.append(1)
        flush(conn, store)

    monkeypatch.setattr(_Connection, "flush", counted)
    assert not flushes
    monkeypatch.setattr("statemine.parse.qlog._SLICE_ROWS", 20)
    got = statemine.read(path, derive_states=derive)
    assert len(flushes) > n
    assert want.n_traces == n
    assert_same(got, want)


def test_an_error_part_way_leaves_no_spill_files(tmp_path: Path) -> None:
    """A trace that fails after its connections were spilled leaves nothing in the folder
    once the error is handled."""
    path = _server(tmp_path / "bad.sqlog", 200, 6, bad_at=4)
    folder = tmp_path / "spill"
    folder.mkdir()
    with pytest.raises(InputError, match="time"):
        list(read_qlog_parts(path, folder, slice_rows=20))
    gc.collect()
    assert os.listdir(folder) == []
