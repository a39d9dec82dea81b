"""The ftrace reader (statemine/parse/ftrace.py): the three text layouts, the socket and
state rules, metrics, lost events, bad lines; checked against an independent reading
(tests/tcp_reference.py) on recordings made here (tests/data/tcp) and synthetic traces."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest
from tcp_reference import read_reference, shares

import statemine
from statemine.errors import InputError
from statemine.parse import detect_format, read
from statemine.parse.ftrace import STATES, read_ftrace

DATA = Path(__file__).resolve().parent / "data" / "tcp"
RECORDED = sorted(DATA.glob("*.txt.gz"))

SND = ("10.0.0.1", 40001, "10.0.0.2", 5201)
RCV = ("10.0.0.2", 5201, "10.0.0.1", 40001)


def cong(t, state, s=SND, layout="tracefs", v6=False):
    sa, sp, da, dp = s
    fam = "AF_INET6" if v6 else "AF_INET"
    v4s, v4d = ("0.0.0.0", "0.0.0.0") if v6 else (sa, da)
    s6, d6 = (sa, da) if v6 else (f"::ffff:{sa}", f"::ffff:{da}")
    body = (
        f"family={fam} sport={sp} dport={dp} saddr={v4s} daddr={v4d} saddrv6={s6} "
        f"daddrv6={d6} cong_state={state}"
    )
    return _line(t, "tcp_cong_state_set", body, layout)


def probe(
    t, cwnd, una, nxt, s=SND, layout="tracefs", ssthresh=2147483647, srtt=1000, v6=False, cookie="4"
):
    sa, sp, da, dp = s
    src, dst = (f"[{sa}]:{sp}", f"[{da}]:{dp}") if v6 else (f"{sa}:{sp}", f"{da}:{dp}")
    body = (
        f"family={'AF_INET6' if v6 else 'AF_INET'} src={src} dest={dst} mark=0x0 data_len=0 "
        f"snd_nxt={nxt:#x} snd_una={una:#x} snd_cwnd={cwnd} ssthresh={ssthresh} "
        f"snd_wnd=65160 srtt={srtt} rcv_wnd=65536"
        + (f" sock_cookie={cookie}" if cookie else "")
        + " skbaddr=00000000a "
        "skaddr=00000000b"
    )
    return _line(t, "tcp_probe", body, layout)


def handshake(t, newstate, s=SND, layout="tracefs", oldstate="TCP_CLOSE", protocol="IPPROTO_TCP"):
    """An ``inet_sock_set_state`` line (the kernel's print format)."""
    sa, sp, da, dp = s
    body = (
        f"family=AF_INET protocol={protocol} sport={sp} dport={dp} saddr={sa} daddr={da} "
        f"saddrv6=::ffff:{sa} daddrv6=::ffff:{da} oldstate={oldstate} newstate={newstate}"
    )
    return _line(t, "inet_sock_set_state", body, layout)


def _line(t, event, body, layout):
    if layout == "tracefs":
        return f"          python3-5194    [001] ..s2.  {t:.6f}: {event}: {body}\n"
    if layout == "trace-cmd":
        return f"sm-1:  my task-5194  [001]  {t:.6f}: {event}:{' ' * 4}{body}\n"
    if layout == "perf":
        space = "sock" if event == "inet_sock_set_state" else "tcp"
        return f"         python3  5194 [001]  {t:.6f}:  {space}:{event}: {body}\n"
    raise AssertionError(layout)


HEADER = "# tracer: nop\n#\n# entries-in-buffer/entries-written: 9/9   #P:2\n#\n"


def sample(layout="tracefs"):
    """A sender going Open -> CWR -> Recovery (logged twice) -> Open -> Loss, and its
    receiver's one Open."""
    kw = {"layout": layout}
    return "".join(
        [
            cong(1.0, 0, RCV, **kw),
            probe(1.0, 10, 100, 100, RCV, **kw),
            probe(1.5, 10, 1000, 5000, **kw),
            cong(2.0, 2, **kw),
            probe(2.2, 8, 2000, 6000, ssthresh=7, srtt=25000, **kw),
            cong(3.0, 3, **kw),
            cong(3.0, 3, **kw),
            cong(3.5, 3, **kw),
            cong(4.0, 0, **kw),
            cong(5.0, 4, **kw),
            probe(6.0, 1, 9000, 9000, **kw),
        ]
    )


def write(tmp_path, text, name="trace.txt"):
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


@pytest.mark.parametrize("layout", ["tracefs", "trace-cmd", "perf"])
def test_layouts_sockets_and_states(tmp_path, layout):
    p = write(tmp_path, (HEADER if layout == "tracefs" else "") + sample(layout))
    assert detect_format(p) == "ftrace"
    ts = read(p)
    assert ts.n_traces == 1
    tr = ts.traces.iloc[0]
    assert tr["conn"] == "10.0.0.1:40001-10.0.0.2:5201" and tr["role"] == "sender"
    assert (tr["saddr"], tr["sport"], tr["daddr"], tr["dport"]) == (
        "10.0.0.1",
        40001,
        "10.0.0.2",
        5201,
    )
    assert tr["end"] == 6.0 and tr["bytes_acked"] == 8000
    ev = ts.events
    assert ev["state"].tolist() == ["Open", "CWR", "Recovery", "Open", "Loss"]
    assert ev["time"].tolist() == [1.5, 2.0, 3.0, 4.0, 5.0]
    h = 4 if layout == "tracefs" else 0
    assert ev["line"].tolist() == [3 + h, 4 + h, 6 + h, 9 + h, 10 + h]
    m = ts.metrics
    assert m["cwnd_segments"].tolist() == [10, 8, 1]
    assert m["ssthresh_segments"].tolist() == [math.inf, 7, math.inf]
    assert m["srtt"].tolist() == pytest.approx([0.001, 0.025, 0.001])
    assert m["inflight"].tolist() == [4000, 4000, 0]
    assert "cwnd" not in m.columns  # bytes only with a known MSS
    assert json.loads(ts.meta["warnings"]) == []
    assert ts.meta["receivers_left_out"] == "1"


def test_options_repeats_receivers_mss(tmp_path):
    p = write(tmp_path, sample())
    ts = read_ftrace(p, keep_repeats=True, keep_receivers=True, mss=1448)
    roles = dict(zip(ts.traces["conn"], ts.traces["role"]))
    assert roles == {
        "10.0.0.2:5201-10.0.0.1:40001": "receiver",
        "10.0.0.1:40001-10.0.0.2:5201": "sender",
    }
    snd = ts.events[ts.events["trace"] == "trace.txt#10.0.0.1:40001-10.0.0.2:5201"]
    assert snd["state"].tolist() == [
        "Open",
        "CWR",
        "Recovery",
        "Recovery",
        "Recovery",
        "Open",
        "Loss",
    ]
    rcv = ts.events[ts.events["trace"] == "trace.txt#10.0.0.2:5201-10.0.0.1:40001"]
    assert rcv["state"].tolist() == ["Open"] and rcv["time"].tolist() == [1.0]
    m = ts.metrics[ts.metrics["trace"] == "trace.txt#10.0.0.1:40001-10.0.0.2:5201"]
    assert m["cwnd"].tolist() == [14480, 11584, 1448]
    with pytest.raises(InputError, match="mss"):
        read_ftrace(p, mss=0)


def test_save_and_load_keep_traces_and_metrics(tmp_path):
    ts = read_ftrace(write(tmp_path, sample()), mss=1000)
    back = statemine.load(statemine.save(ts, tmp_path / "t.parquet"))
    assert (
        back.events[["time", "state", "line"]]
        .astype(str)
        .equals(ts.events[["time", "state", "line"]].astype(str))
    )
    assert back.metrics["cwnd"].tolist() == [10000, 8000, 1000]
    assert back.traces["conn"].tolist() == ts.traces["conn"].tolist()


def test_tcp_read_command_applies_the_options(tmp_path):
    from click.testing import CliRunner

    from statemine.cli import main

    a = write(tmp_path, sample(), "a.txt")
    (tmp_path / "sub").mkdir()
    b = write(tmp_path / "sub", sample("perf"), "a.txt")
    out = tmp_path / "t.parquet"
    args = ["tcp", "read", str(a), str(b), "--out", str(out), "--keep-receivers", "--mss", "100"]
    result = CliRunner().invoke(main, [*args, "--keep-repeats"])
    assert result.exit_code == 0, result.output
    ts = statemine.load(out)
    assert ts.n_traces == 4 and set(ts.traces["role"]) == {"sender", "receiver"}
    assert sorted(set(ts.traces["source"])) == [str(a), str(b)]  # same name: paths in ids
    assert (ts.events["state"] == "Recovery").sum() == 2 * 3  # repeats kept
    assert ts.metrics["cwnd"].max() == 1000
    assert f"wrote 4 traces ({len(ts.events)} state rows) to {out}" in result.output


def test_tcp_read_to_file_is_the_command_in_one_call(tmp_path):
    """statemine.tcp.read_to_file: bad lines refused before anything is written, or skipped
    (-i) with the reader's warning; what it says it wrote is what the file reads back as,
    and it is what `read` gives (sender: Open CWR Recovery Open Loss, receiver: Open)."""
    from statemine.tcp import read_to_file

    p = write(tmp_path, sample() + "garbage here\n")
    out = tmp_path / "t.parquet"
    with pytest.raises(InputError, match="garbage here"):
        read_to_file(p, out)
    assert sorted(tmp_path.iterdir()) == [p]  # no file, no temporary left
    got = read_to_file(p, out, keep_receivers=True, ignore_nonmatching=True)
    back = statemine.load(out)
    assert got.path == out and (got.n_traces, got.n_events) == (2, 6)
    assert (back.n_traces, len(back.events)) == (got.n_traces, got.n_events)
    (warning,) = got.warnings
    assert "1 lines" in warning and warning == json.loads(back.meta["warnings"])[0]
    want = read_ftrace(p, keep_receivers=True, ignore_nonmatching=True)
    assert back.events["state"].astype(str).tolist() == want.events["state"].astype(str).tolist()


def test_repeats_continue_the_visit_in_statistics(tmp_path):
    """Time shares with repeats dropped equal those with repeats kept (the analysis folds
    them), and the transition table only has real changes by default."""
    p = write(tmp_path, sample())
    states, transitions = statemine.summarize(read_ftrace(p))
    frac = dict(zip(states["state"], states["time_s"]))
    assert frac == pytest.approx({"Open": 0.5 + 1.0, "CWR": 1.0, "Recovery": 1.0, "Loss": 1.0})
    pairs = set(zip(transitions["from"], transitions["to"])) if "from" in transitions else set()
    assert ("Recovery", "Recovery") not in pairs


def test_first_event_a_state_and_ipv6(tmp_path):
    s6 = ("fd00::1", 40001, "fd00::2", 443)
    text = (
        cong(1.0, 1, s6, v6=True) + probe(2.0, 10, 5, 900, s6, v6=True) + cong(3.0, 0, s6, v6=True)
    )
    ts = read(write(tmp_path, text))
    assert ts.traces["conn"].tolist() == ["[fd00::1]:40001-[fd00::2]:443"]
    assert ts.traces["saddr"].tolist() == ["fd00::1"] and ts.traces["dport"].tolist() == [443]
    assert ts.events["state"].tolist() == ["Disorder", "Open"]  # no Open before a first state
    assert len(ts.metrics) == 1  # probe and state lines joined into one socket


def test_probe_only_sender_is_open(tmp_path):
    text = probe(1.0, 10, 0, 1000) + probe(2.0, 12, 1000, 2000)
    ts = read(write(tmp_path, text))
    assert ts.events["state"].tolist() == ["Open"] and ts.traces["end"].tolist() == [2.0]


def test_only_receivers_is_an_error(tmp_path):
    p = write(tmp_path, cong(1.0, 0, RCV) + probe(1.0, 10, 100, 100, RCV))
    with pytest.raises(InputError, match="only receiving sockets"):
        read(p)
    assert read_ftrace(p, keep_receivers=True).traces["role"].tolist() == ["receiver"]


@pytest.mark.parametrize(
    "lines, overwritten, lost, cpus",
    [
        ("# entries-in-buffer/entries-written: 5/12   #P:2\n", 7, 0, []),
        ("##### CPU 1 buffer started ####\n", 0, 0, [1]),
        ("CPU:0 [LOST 33 EVENTS]\n", 0, 33, []),
        ("CPU:1 [41 EVENTS DROPPED]\n", 0, 41, []),
        ("CPU:1 [EVENTS DROPPED]\n", 0, 0, []),
        ("            :0     0 [000]     0.000000: PERF_RECORD_LOST lost 12\n", 0, 12, []),
    ],
)
def test_lost_events_are_reported(tmp_path, lines, overwritten, lost, cpus):
    p = write(tmp_path, "# tracer: nop\n" + lines + sample())
    ts = read(p)
    warnings = json.loads(ts.meta["warnings"])
    assert warnings and "events were lost or overwritten" in warnings[0]
    assert any(f"{p}:2:" in w for w in warnings)
    summary = json.loads(ts.meta["lost_events"])
    assert (summary["overwritten"], summary["lost"], summary["wrapped_cpus"]) == (
        overwritten,
        lost,
        cpus,
    )


def test_lost_events_reach_the_terminal(tmp_path):
    from click.testing import CliRunner

    from statemine.cli import main

    p = write(tmp_path, "CPU:0 [LOST 33 EVENTS]\n" + sample())
    result = CliRunner().invoke(main, ["infer", str(p), "--bootstrap", "0"])
    assert result.exit_code == 0, result.output
    assert "warning" in result.output and "33 lost" in result.output


def test_bad_lines(tmp_path):
    p = write(tmp_path, sample() + "garbage here\n" + sample() + "more garbage\n")
    with pytest.raises(InputError) as e:
        read(p)
    assert (e.value.line, "garbage here" in e.value.reason) == (12, True)
    ts = read(p, ignore_nonmatching=True)
    (w,) = json.loads(ts.meta["warnings"])
    assert "2 lines" in w and "12, 24" in w
    # the events of both halves are read (time goes back: sorted per socket, stable)
    assert ts.events["state"].tolist()[:2] == ["Open", "CWR"]


@pytest.mark.parametrize(
    "text, line, reason",
    [
        (cong(1.0, 7), 1, "not a TCP congestion state .*: .7."),
        ("  python3-1 [000] ..s2. 123456: tcp_probe: src=1\n", 1, "not in seconds"),
        (
            sample() + "  python3-1 [000] ..s2. 1.5: tcp_probe: family=AF_INET src=x\n",
            12,
            "tcp_probe line",
        ),
        (
            cong(1.0, 0) + "  p-1 [000] ..s2. 1.5: tcp_cong_state_set: family=AF_INET sport=x\n",
            2,
            "tcp_cong_state_set",
        ),
    ],
)
def test_bad_event_lines(tmp_path, text, line, reason):
    with pytest.raises(InputError, match=reason) as e:
        read_ftrace(write(tmp_path, text))
    assert e.value.line == line


def test_other_events_are_counted(tmp_path):
    other = "  kworker/0:1-12 [000] ..... 1.2: sched_switch: prev_comm=a prev_pid=1\n"
    ts = read(write(tmp_path, other + sample()))
    assert "1 lines of other events ignored" in json.loads(ts.meta["warnings"])[0]


def test_no_events_is_an_error(tmp_path):
    with pytest.raises(InputError, match="no tcp_cong_state_set"):
        read_ftrace(write(tmp_path, HEADER))


def test_small_blocks_give_the_same_result(tmp_path):
    p = write(tmp_path, HEADER + sample() * 3)
    a = read_ftrace(p, ignore_nonmatching=True)
    b = read_ftrace(p, chunk_bytes=64, ignore_nonmatching=True)
    assert a.events.astype(str).equals(b.events.astype(str))
    assert a.metrics.astype(str).equals(b.metrics.astype(str))


def test_gzip_and_crlf(tmp_path):
    p = write(tmp_path, gzip.compress(sample().replace("\n", "\r\n").encode()), "t.txt.gz")
    assert read(p).events["state"].tolist() == ["Open", "CWR", "Recovery", "Open", "Loss"]


@pytest.mark.parametrize("path", RECORDED, ids=[p.name for p in RECORDED])
def test_recorded_files_against_an_independent_reading(path):
    ref = read_reference(path)
    ts = read(path)
    senders = {k for k, v in ref.items() if v["sender"]}
    assert {t.split("#", 1)[1] for t in ts.traces["trace"]} == senders  # ~N: a reused tuple
    assert int(ts.meta["receivers_left_out"]) == len(ref) - len(senders)
    for key in senders:
        tid = f"{path.name}#{key}"
        ev = ts.events[ts.events["trace"] == tid]
        assert list(zip(ev["time"], ev["state"])) == ref[key]["changes"]
        m = ts.metrics[ts.metrics["trace"] == tid]
        assert m["cwnd_segments"].tolist() == ref[key]["cwnd"]
    states = statemine.summarize(ts)[0]
    got = dict(zip(states["state"], states["time_fraction"]))
    want = shares(ref)
    assert got == pytest.approx(want, abs=1e-9)
    assert set(got) <= set(STATES)
    assert json.loads(ts.meta["lost_events"])["lost"] == 0


def test_recorded_files_show_the_congestion_states():
    """The recordings went through small buffers: every one has Recovery; the one with a
    3000-byte buffer also an RTO (Loss)."""
    assert len(RECORDED) >= 6
    for path in RECORDED:
        ev = read(path).events
        assert {"Open", "Recovery"} <= set(ev["state"]), path.name
        assert ("Loss" in set(ev["state"])) == ("loss" in path.name), path.name
        assert np.all(np.diff(ev["time"].to_numpy()) >= 0)


def reused(cookies=("1a", "ffffffff0000002b"), layout="tracefs"):
    """Two sockets on one 4-tuple, one after the other: the first goes Open -> Recovery ->
    Open and logs Recovery, Open, Open after its last probe (a socket closed by FIN acks
    its last segments past tcp_probe); the second logs no state at set-up, then CWR. The
    state events between the last probe of one and the first of the other are 2.9
    Recovery, 3.0 Open and 3.5 Open, all the old socket's."""
    a, b = cookies
    kw = {"layout": layout}
    return "".join(
        [
            cong(1.0, 0, **kw),
            probe(1.1, 10, 100, 5000, cookie=a, **kw),
            cong(2.0, 3, **kw),
            probe(2.5, 5, 2000, 6000, cookie=a, **kw),
            cong(2.9, 3, **kw),
            cong(3.0, 0, **kw),
            cong(3.5, 0, **kw),
            probe(4.0, 10, 7000, 9000, cookie=b, **kw),
            cong(5.0, 2, **kw),
            probe(6.0, 8, 9000, 9500, cookie=b, **kw),
        ]
    )


@pytest.mark.parametrize("layout", ["tracefs", "trace-cmd", "perf"])
def test_a_reused_four_tuple_is_split_by_sock_cookie(tmp_path, layout):
    p = write(tmp_path, reused(layout=layout))
    ts = read_ftrace(p)
    key = "10.0.0.1:40001-10.0.0.2:5201"
    tr = ts.traces.set_index("trace")
    first, second = f"trace.txt#{key}", f"trace.txt#{key}~2"
    assert list(tr.index) == [first, second]
    assert tr.loc[first, "cookie"] == "1a" and tr.loc[second, "cookie"] == "ffffffff0000002b"
    assert tr["incarnation"].tolist() == [1, 2] and (tr["conn"] == key).all()
    assert tr.loc[first, "end"] == 3.5 and tr.loc[second, "end"] == 6.0
    ev = ts.events
    got = {t: list(zip(g["time"], g["state"])) for t, g in ev.groupby("trace", observed=True)}
    assert got == {
        first: [(1.0, "Open"), (2.0, "Recovery"), (3.0, "Open")],
        second: [(4.0, "Open"), (5.0, "CWR")],
    }
    assert ts.metrics.groupby("trace", observed=True).size().to_dict() == {first: 2, second: 2}
    # the independent reading cuts the same way
    ref = read_reference(p)
    assert {k: v["changes"] for k, v in ref.items()} == {
        key: got[first],
        key + "~2": got[second],
    }
    states = statemine.summarize(ts)[0]
    assert dict(zip(states["state"], states["time_fraction"])) == pytest.approx(shares(ref))


FIN_CLOSED = [
    # the first socket: connected, a loss, closed by FIN; its last ACKs (past tcp_probe)
    # take it Recovery -> Open after its last probe, then it enters TCP_CLOSE
    ("hs", 0.9, "TCP_ESTABLISHED"),
    ("probe", 1.0, 10, 100, 5000, "a1"),
    ("cong", 1.5, 3),
    ("probe", 2.0, 5, 3000, 6000, "a1"),
    ("hs", 2.1, "TCP_FIN_WAIT1"),
    ("cong", 2.2, 0),
    ("hs", 2.3, "TCP_CLOSE"),
    # the second socket on the same 4-tuple: no state event at set-up; its handshake at
    # 3.0, first probe at 3.2, a Recovery at 3.5 before its first probe's successor
    ("hs", 3.0, "TCP_SYN_SENT"),
    ("hs", 3.1, "TCP_ESTABLISHED"),
    ("cong", 3.15, 3),
    ("probe", 3.2, 10, 7000, 9000, "b2"),
    ("cong", 3.5, 0),
    ("probe", 4.0, 8, 9000, 9500, "b2"),
]


def _fin_closed(layout: str = "tracefs", with_handshakes: bool = True) -> str:
    out = []
    for kind, t, *rest in FIN_CLOSED:
        if kind == "hs":
            if with_handshakes:
                out.append(handshake(t, rest[0], layout=layout))
        elif kind == "cong":
            out.append(cong(t, rest[0], layout=layout))
        else:
            cwnd, una, nxt, cookie = rest
            out.append(probe(t, cwnd, una, nxt, cookie=cookie, layout=layout))
    return "".join(out)


@pytest.mark.parametrize("layout", ["tracefs", "trace-cmd", "perf"])
def test_a_tuple_reused_after_fin_is_split_at_the_handshake(tmp_path, layout):
    """Issue 26: the old socket's Recovery -> Open after its last probe stays its own (it
    ends Open), and the new socket's state events before its first probe (a Recovery at
    3.15, after its handshake) are the new socket's. The old rule (the last Open between
    the probes begins the new socket) gave the old one's 2.2 Open to the new socket."""
    p = write(tmp_path, _fin_closed(layout))
    ts = read_ftrace(p)
    key = "10.0.0.1:40001-10.0.0.2:5201"
    first, second = f"trace.txt#{key}", f"trace.txt#{key}~2"
    got = {
        t: list(zip(g["time"], g["state"])) for t, g in ts.events.groupby("trace", observed=True)
    }
    assert got == {
        first: [(1.0, "Open"), (1.5, "Recovery"), (2.2, "Open")],
        second: [(3.15, "Recovery"), (3.5, "Open")],
    }
    tr = ts.traces.set_index("trace")
    assert tr.loc[first, "end"] == 2.2 and tr.loc[second, "end"] == 4.0
    assert tr["cookie"].tolist() == ["a1", "b2"] and tr["incarnation"].tolist() == [1, 2]
    assert "other events" not in " ".join(json.loads(ts.meta["warnings"]))
    ref = read_reference(p)
    assert {k: v["changes"] for k, v in ref.items()} == {key: got[first], key + "~2": got[second]}
    states = statemine.summarize(ts)[0]
    assert dict(zip(states["state"], states["time_fraction"])) == pytest.approx(shares(ref))
    # the last row of every connection is Open, as each connection ended
    ends = statemine.summarize(ts)[1]
    terminal = ends[ends["dst"] == "TERMINAL"]
    assert set(terminal["src"]) == {"Open"}


def test_without_handshakes_a_cookie_change_leaves_the_state_events_to_the_old_socket(
    tmp_path,
):
    """The same recording without inet_sock_set_state lines: the cookie splits, and the
    state events between the two probes (2.2 Open, 3.15 Recovery) are the old socket's."""
    p = write(tmp_path, _fin_closed(with_handshakes=False))
    ts = read_ftrace(p)
    got = [list(zip(g["time"], g["state"])) for _, g in ts.events.groupby("trace", observed=True)]
    assert got == [
        [(1.0, "Open"), (1.5, "Recovery"), (2.2, "Open"), (3.15, "Recovery")],
        [(3.2, "Open")],
    ]
    ref = read_reference(p)
    assert [v["changes"] for v in ref.values()] == got


def test_a_tuple_reused_many_times_and_closed_by_rst(tmp_path):
    """Twelve sockets in turn on one 4-tuple, every other one closed by RST (its last Open
    logged with dport 0: another tuple, a receiver left out), each with its handshake: twelve
    traces, each with its own Recovery, matching the independent reading."""
    lines = []
    zero = (SND[0], SND[1], SND[2], 0)
    for k in range(12):
        t = 10.0 * k
        lines += [
            handshake(t, "TCP_SYN_SENT"),
            handshake(t + 0.1, "TCP_ESTABLISHED", oldstate="TCP_SYN_SENT"),
            probe(t + 0.2, 10, 100, 5000, cookie=f"{k + 1:x}"),
            cong(t + 1.0 + k / 100, 3),
            probe(t + 2.0, 10, 3000, 6000, cookie=f"{k + 1:x}"),
        ]
        if k % 2:
            lines += [cong(t + 2.5, 0, zero), handshake(t + 2.5, "TCP_CLOSE", zero)]
        else:
            lines += [cong(t + 2.5, 0), handshake(t + 2.6, "TCP_CLOSE", oldstate="TCP_LAST_ACK")]
    p = write(tmp_path, "".join(lines))
    ts = read_ftrace(p)
    key = "10.0.0.1:40001-10.0.0.2:5201"
    assert ts.traces["incarnation"].tolist() == list(range(1, 13))
    assert (ts.traces["conn"] == key).all()
    ref = read_reference(p)
    for row in ts.traces.itertuples():
        ev = ts.events[ts.events["trace"] == row.trace]
        ref_key = key + (f"~{row.incarnation}" if row.incarnation > 1 else "")
        assert list(zip(ev["time"], ev["state"])) == ref[ref_key]["changes"]
        assert "Recovery" in set(ev["state"])
        assert ev["time"].min() >= 10.0 * (row.incarnation - 1)


def test_without_cookies_a_reused_tuple_stays_one_trace(tmp_path):
    """Older kernels' tcp_probe has no sock_cookie: nothing to split by."""
    p = write(tmp_path, reused(cookies=("", "")))
    ts = read_ftrace(p)
    assert len(ts.traces) == 1 and ts.traces["cookie"].tolist() == [""]
    assert ts.traces["incarnation"].tolist() == [1] and ts.traces["end"].tolist() == [6.0]


def test_the_same_cookie_is_one_socket_and_a_bad_cookie_an_error(tmp_path):
    same = read_ftrace(write(tmp_path, reused(cookies=("7", "7"))))
    assert len(same.traces) == 1 and same.traces["cookie"].tolist() == ["7"]
    bad = write(tmp_path, reused(cookies=("7", "xyz")), "bad.txt")
    with pytest.raises(
        InputError, match=r"bad.txt:8: tcp_probe line with a malformed sock_cookie="
    ):
        read_ftrace(bad)


def test_a_recording_reused_after_fin_splits_at_each_handshake():
    """Issue 26 on a real recording (tests/data/tcp/README.md): four reno connections in
    turn on one 4-tuple, each closed by FIN with data in flight, so each logs Recovery ->
    Open in FIN_WAIT, after its last probe. Every connection ends Open and begins after
    the one before it ended (the old rule gave each old socket's last Open to the next)."""
    ts = read_ftrace(DATA / "record-reno-reused-fin-4x.txt.gz")
    tr = ts.traces.sort_values("incarnation")
    assert tr["incarnation"].tolist() == [1, 2, 3, 4] and tr["conn"].nunique() == 1
    end_before = -math.inf
    for row in tr.itertuples():
        ev = ts.events[ts.events["trace"] == row.trace]
        assert ev["state"].iloc[-1] == "Open" and "Recovery" in set(ev["state"])
        assert ev["time"].min() > end_before
        end_before = row.end
    ends = statemine.summarize(ts)[1]
    assert set(ends.loc[ends["dst"] == "TERMINAL", "src"]) == {"Open"}
