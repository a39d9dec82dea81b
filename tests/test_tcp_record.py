"""``statemine tcp record`` and ``statemine tcp cleanup`` on real recordings made here.

Each recording: namespaces ``sm-<pid>-t<n>a`` (sender), ``...r`` (router), ``...b``
(receiver) joined by two veth pairs (10.203.<n>.0/30 and .4/30; no route to anything else,
so traffic stays between them), a tbf qdisc with a small buffer on the router towards the
receiver (real losses, so Recovery appears), a bulk transfer with Python sockets under
reno, cubic or bbr. The parsed traces are checked
against an independent reading of the raw trace (tests/tcp_reference.py) and against the
transfer itself; real time is not deterministic, so the checks are ranges and invariants.
Then: signals (SIGTERM, SIGINT) leave nothing configured and write nothing; after SIGKILL
``statemine tcp cleanup`` removes the leftovers. Skipped with the reason where the machine
lacks root, ``ip``/``tc``, tracefs or the tracepoints.
"""

from __future__ import annotations

import contextlib
import csv
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from tcp_reference import read_reference, shares

REPO = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=str(REPO))
_NET = itertools.count(1)

SERVER = r"""
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
print("ready", flush=True)
c, _ = s.accept()
n = 0
while True:
    b = c.recv(1 << 16)
    if not b:
        break
    n += len(b)
print(n, flush=True)
"""
# Sends N bytes under congestion control CC, then waits until all are acknowledged
# (SIOCOUTQ == 0) before closing: tcp_probe stops once a socket leaves ESTABLISHED.
CLIENT = r"""
import fcntl, socket, struct, sys, time
s = socket.socket()
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, sys.argv[3].encode())
s.connect((sys.argv[1], int(sys.argv[2])))
s.sendall(b"x" * int(sys.argv[4]))
while struct.unpack("i", fcntl.ioctl(s.fileno(), 0x5411, b"\0" * 4))[0]:
    time.sleep(0.005)
s.close()
"""

# Two connections in turn from one local port (the same 4-tuple): each sends N bytes,
# waits until they are acknowledged, and closes with an RST (SO_LINGER 0: no TIME_WAIT,
# so the port can be bound again at once).
CLIENT_TWICE = r"""
import fcntl, socket, struct, sys, time
for _ in range(2):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("", int(sys.argv[5])))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, sys.argv[3].encode())
    s.connect((sys.argv[1], int(sys.argv[2])))
    s.sendall(b"x" * int(sys.argv[4]))
    while struct.unpack("i", fcntl.ioctl(s.fileno(), 0x5411, b"\0" * 4))[0]:
        time.sleep(0.005)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    time.sleep(0.2)
"""
SERVER_TWICE = r"""
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
print("ready", flush=True)
for _ in range(2):
    c, _ = s.accept()
    try:
        while c.recv(1 << 16):
            pass
    except ConnectionResetError:
        pass
    c.close()
print("done", flush=True)
"""

# N connections in turn from one local port, each closed by FIN right after its last
# bytes are handed to the kernel: the last ACKs arrive in FIN_WAIT, past tcp_probe (the
# client's namespace sets tcp_tw_reuse, so the port's TIME_WAIT does not block the next
# connection, a second later for the timestamps).
CLIENT_FIN = r"""
import socket, sys, time
for _ in range(int(sys.argv[6])):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("", int(sys.argv[5])))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, sys.argv[3].encode())
    s.connect((sys.argv[1], int(sys.argv[2])))
    s.sendall(b"x" * int(sys.argv[4]))
    s.close()
    time.sleep(1.2)
"""
SERVER_FIN = r"""
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
print("ready", flush=True)
for _ in range(int(sys.argv[4])):
    c, _ = s.accept()
    while c.recv(1 << 16):
        pass
    c.close()
print("done", flush=True)
"""

STATEMINE = [sys.executable, "-m", "statemine"]


def statemine(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``python -m statemine ARGS`` from this checkout, output captured as text."""
    return subprocess.run(
        [*STATEMINE, *args], env=ENV, capture_output=True, text=True, timeout=timeout
    )


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, tracefs)"
    for tool in ("ip", "tc", "mount"):
        if shutil.which(tool) is None:
            return f"no {tool} command"
    try:
        from statemine.tcp.tracing import Instance, TracingError

        with Instance(ports=[1]):
            pass
    except TracingError as exc:
        return f"no kernel tracing here: {exc}"
    probe = subprocess.run(["ip", "netns", "add", f"sm-{os.getpid()}-probe"], capture_output=True)
    if probe.returncode != 0:
        return f"cannot create network namespaces: {probe.stderr.decode().strip()}"
    subprocess.run(["ip", "netns", "del", f"sm-{os.getpid()}-probe"], capture_output=True)
    return None


@pytest.fixture(scope="module", autouse=True)
def _kernel_support() -> None:
    """Skip with the reason where the machine cannot record (checked when a test of this
    module runs, not when it is collected: the check makes a tracing instance)."""
    reason = _skip_reason()
    if reason is not None:
        pytest.skip(reason)


def _available_ccs() -> set[str]:
    try:
        return set(Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split())
    except OSError:
        return set()


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@contextlib.contextmanager
def veth_path(limit: str = "30kb"):
    """Sender and receiver namespaces joined through a router namespace by two veth pairs;
    on the router's side towards the receiver a tbf of 20 Mbit/s with a ``limit`` buffer,
    so drops happen away from the sender (real losses, not local congestion). Yields
    (sender ns, receiver ns, receiver addr); all removed on exit. One path at a time on
    the host (a lock file): the tracepoints a recording reads are host-wide, and pytest
    workers number their paths alike, so two workers' transfers had the same 4-tuple and
    each recording read the other's (848 traces instead of 1)."""
    import fcntl

    with open(Path(tempfile.gettempdir()) / "statemine-test-veth-path.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with _veth_path(limit) as made:
            yield made


@contextlib.contextmanager
def _veth_path(limit: str):
    n = next(_NET)
    a, r, b = (f"sm-{os.getpid()}-t{n}{x}" for x in "arb")
    net = f"10.203.{n}"
    try:
        for ns in (a, r, b):
            ip("netns", "add", ns)
            ip("-n", ns, "link", "set", "lo", "up")
        ip("link", "add", f"{a}v", "netns", a, "type", "veth", "peer", "name", f"{r}a", "netns", r)
        ip("link", "add", f"{r}b", "netns", r, "type", "veth", "peer", "name", f"{b}v", "netns", b)
        for ns, dev, addr in (
            (a, f"{a}v", f"{net}.1/30"),
            (r, f"{r}a", f"{net}.2/30"),
            (r, f"{r}b", f"{net}.5/30"),
            (b, f"{b}v", f"{net}.6/30"),
        ):
            ip("-n", ns, "addr", "add", addr, "dev", dev)
            ip("-n", ns, "link", "set", dev, "up")
        ip("-n", a, "route", "add", f"{net}.4/30", "via", f"{net}.2")
        ip("-n", b, "route", "add", f"{net}.0/30", "via", f"{net}.5")
        for cmd in (
            ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"],
            ["tc", "qdisc", "add", "dev", f"{r}b", "root", "tbf", "rate", "20mbit",
             "burst", "16kb", "limit", limit],
        ):  # fmt: skip
            subprocess.run(["ip", "netns", "exec", r, *cmd], check=True, capture_output=True)
        yield a, b, f"{net}.6"
    finally:
        for ns in (a, r, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def record_transfer(
    out: Path, cc: str, nbytes: int, port: int = 5301, limit: str = "30kb"
) -> tuple[int, dict]:
    """Record one bulk transfer with ``statemine tcp record`` through a tbf buffer of
    ``limit``; (bytes received, record.json)."""
    with veth_path(limit) as (a, b, addr_b):
        server = subprocess.Popen(
            ["ip", "netns", "exec", b, sys.executable, "-c", SERVER, addr_b, str(port)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None and server.stdout.readline().strip() == "ready"
            client = ["ip", "netns", "exec", a, sys.executable, "-c", CLIENT, addr_b, str(port)]
            done = statemine(
                "tcp", "record", "--out", str(out), "--port", str(port), "--", *client, cc,
                str(nbytes), timeout=120,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            received = int(server.stdout.readline())
        finally:
            server.kill()
            server.wait()
    return received, json.loads((out / "record.json").read_text())


def _instances_of(pid: int) -> list[Path]:
    from statemine.tcp.tracing import tracefs_mounts

    return [
        m / "instances" / f"statemine-{pid}"
        for m in tracefs_mounts()
        if (m / "instances" / f"statemine-{pid}").exists()
    ]


def _mounts_of(pid: int) -> list[Path]:
    from statemine.tcp.tracing import tracefs_mounts

    return [m for m in tracefs_mounts() if m.name.startswith(f"statemine-tracefs-{pid}-")]


@pytest.mark.slow
@pytest.mark.parametrize("cc", ["reno", "cubic", "bbr"])
def test_record_a_bulk_transfer(tmp_path, cc):
    if cc not in _available_ccs():
        pytest.skip(f"congestion control {cc} not available in this kernel")
    from statemine.parse.ftrace import STATES
    from statemine.traces import load

    nbytes = 4 << 20
    out = tmp_path / "rec"
    received, info = record_transfer(out, cc, nbytes)
    assert received == nbytes
    assert sorted(os.listdir(out)) == ["model", "record.json", "trace.txt", "traces.parquet"]
    assert info["exit_status"] == 0 and info["traces"] == 1 and info["warnings"] == []
    # issue 26: the socket's own controller, not the host's default
    assert info["congestion_controls"] == [cc]
    assert [v["congestion_control"] for v in info["sockets"].values()] == [cc]
    assert info["lost_events"] == {
        "overwritten": 0, "lost": 0, "drop_reports_without_count": 0, "wrapped_cpus": []
    }  # fmt: skip
    assert all(c["overrun"] == 0 and c["dropped events"] == 0 for c in info["ring_buffer"].values())
    ts = load(out / "traces.parquet")
    (tr,) = ts.traces.to_dict("records")
    assert tr["saddr"].startswith("10.203.") and tr["dport"] == 5301 and tr["role"] == "sender"
    # acknowledged bytes: all but what the first probed ACK already covered
    assert 0.95 * nbytes <= tr["bytes_acked"] <= nbytes + 1
    states = set(ts.events["state"])
    assert states <= set(STATES) and "Recovery" in states, states
    # the trace lies within the recording, which the transfer at <= 20 Mbit/s fills
    span = tr["end"] - ts.events["time"].min()
    assert nbytes * 8 / 20e6 * 0.9 <= span <= info["duration_s"]
    # the states table written by the infer writer against an independent reading
    ref = read_reference(out / "trace.txt")
    with open(out / "model" / "states.csv", newline="") as fh:
        got = {row["state"]: float(row["time_fraction"]) for row in csv.DictReader(fh)}
    assert got == pytest.approx(shares(ref), abs=1e-9)
    assert 0 < got["Recovery"] < 1
    m = ts.metrics
    key = tr["conn"]
    assert m["cwnd_segments"].tolist() == ref[key]["cwnd"]
    assert (m["srtt"] > 0).all() and (m["srtt"] < 1.0).all()  # seconds
    assert (m["inflight"] >= 0).all() and m["inflight"].max() < 4 << 20


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_leaves_nothing_behind(tmp_path, sig):
    pidfile = tmp_path / "child.pid"
    out = tmp_path / "rec"
    proc = subprocess.Popen(
        [*STATEMINE, "tcp", "record", "--out", str(out), "--",
         "sh", "-c", f"echo $$ > {pidfile}; exec sleep 60"],
        env=ENV,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _instances_of(proc.pid), "no tracing instance while recording"
    child = int(pidfile.read_text())
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, stderr
    assert "Traceback" not in stderr
    assert not _instances_of(proc.pid) and not _mounts_of(proc.pid)
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["child.pid"]


@contextlib.contextmanager
def a_tracefs_mount(tmp_path: Path):
    """A tracefs mount statemine did not make: an existing one, or one mounted here."""
    from statemine.tcp.tracing import tracefs_mounts

    found = [m for m in tracefs_mounts() if not m.name.startswith("statemine-")]
    if found:
        yield found[0]
        return
    mnt = tmp_path / "tracefs"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tracefs", "nodev", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
        mnt.rmdir()


GLOBAL_FILES = (
    "tracing_on",
    "trace_clock",
    "buffer_size_kb",
    "events/tcp/tcp_probe/enable",
    "events/tcp/tcp_probe/filter",
    "events/tcp/tcp_cong_state_set/enable",
    "events/tcp/tcp_cong_state_set/filter",
)


@pytest.mark.slow
def test_duration_ends_the_command_and_the_global_instance_is_untouched(tmp_path):
    out = tmp_path / "rec"
    with a_tracefs_mount(tmp_path) as mnt:
        before = {f: (mnt / f).read_text() for f in GLOBAL_FILES}
        t0 = time.monotonic()
        done = statemine(
            "tcp", "record", "--out", str(out), "--duration", "1", "--port", "5399", "--",
            "sleep", "30",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert time.monotonic() - t0 < 20
        assert {f: (mnt / f).read_text() for f in GLOBAL_FILES} == before
    info = json.loads((out / "record.json").read_text())
    assert info["ended_by_duration"] is True and info["traces"] == 0
    assert 1.0 <= info["duration_s"] < 15 and info["trace_clock"] == "mono"
    assert sorted(os.listdir(out)) == ["record.json", "trace.txt"]


@pytest.mark.slow
def test_cleanup_after_sigkill(tmp_path):
    out = tmp_path / "rec"
    proc = subprocess.Popen(
        [*STATEMINE, "tcp", "record", "--out", str(out), "--duration", "60"],
        env=ENV,
    )
    deadline = time.monotonic() + 60
    while not _instances_of(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _instances_of(proc.pid)
    proc.kill()
    proc.wait()
    assert _instances_of(proc.pid)  # what SIGKILL leaves
    # a namespace and a device of a process that is gone, as a crashed lab run leaves them
    dead = proc.pid
    ip("netns", "add", f"sm-{dead}-x")
    ip("link", "add", f"sm-{dead}-v0", "type", "veth", "peer", "name", f"sm-{dead}-v1")
    live = f"sm-{os.getpid()}-keep"
    ip("netns", "add", live)
    try:
        done = statemine("tcp", "cleanup")
        assert done.returncode == 0, done.stderr
        assert f"tracing instance statemine-{dead}" in done.stdout
        assert f"network namespace sm-{dead}-x" in done.stdout
        assert f"network device sm-{dead}-v0" in done.stdout
        assert not _instances_of(dead) and not _mounts_of(dead)
        from statemine.tcp.netns import links, namespaces

        assert f"sm-{dead}-x" not in namespaces() and f"sm-{dead}-v0" not in links()
        assert live in namespaces()  # a running process's namespace is left alone
    finally:
        subprocess.run(["ip", "netns", "del", live], capture_output=True)
        subprocess.run(["ip", "netns", "del", f"sm-{dead}-x"], capture_output=True)
        subprocess.run(["ip", "link", "del", f"sm-{dead}-v0"], capture_output=True)


def test_record_refuses_bad_options(tmp_path):
    def run(*args: str) -> subprocess.CompletedProcess:
        return statemine("tcp", "record", "--out", str(tmp_path / "o"), *args)

    for args, message in (
        ((), "give a command"),
        (("--duration", "-1"), "--duration must be"),
        (("--port", "70000", "--duration", "1"), "port 70000"),
        (("--", "/no/such/program"), "cannot run"),
    ):
        done = run(*args)
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
        assert not (tmp_path / "o").exists()
    foreign = tmp_path / "o" / "mine.txt"
    foreign.parent.mkdir()
    foreign.write_text("keep")
    done = run("--duration", "1")
    assert done.returncode == 2 and "mine.txt" in done.stderr, done.stderr
    assert foreign.read_text() == "keep" and os.listdir(foreign.parent) == ["mine.txt"]


@pytest.mark.slow
def test_a_reused_four_tuple_recorded_here_is_two_traces(tmp_path):
    """Two connections in turn from one client port to one server port: the recording has
    one 4-tuple for two sockets, which the reader splits by sock_cookie; both traces match
    the independent reading (which cuts its own way) and each acknowledged its bytes."""
    if "cubic" not in _available_ccs():
        pytest.skip("congestion control cubic not available in this kernel")
    from statemine.traces import load

    nbytes, port, cport = 1 << 20, 5302, 41002
    out = tmp_path / "rec"
    with veth_path() as (a, b, addr_b):
        server = subprocess.Popen(
            ["ip", "netns", "exec", b, sys.executable, "-c", SERVER_TWICE, addr_b, str(port)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None and server.stdout.readline().strip() == "ready"
            client = ["ip", "netns", "exec", a, sys.executable, "-c", CLIENT_TWICE, addr_b]
            done = statemine(
                "tcp", "record", "--out", str(out), "--port", str(port), "--", *client,
                str(port), "cubic", str(nbytes), str(cport), timeout=120,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert server.stdout.readline().strip() == "done"
        finally:
            server.kill()
            server.wait()
    ts = load(out / "traces.parquet")
    tr = ts.traces.sort_values("incarnation")
    assert tr["incarnation"].tolist() == [1, 2]
    assert tr["conn"].nunique() == 1 and tr["sport"].tolist() == [cport, cport]
    assert tr["cookie"].nunique() == 2 and (tr["cookie"] != "").all()
    for row in tr.itertuples():
        assert 0.95 * nbytes <= row.bytes_acked <= nbytes + 1, row
    first_end = tr["end"].iloc[0]
    second = ts.events[ts.events["trace"] == tr["trace"].iloc[1]]
    assert second["time"].min() > first_end  # the second socket begins after the first ends
    ref = read_reference(out / "trace.txt")
    key = tr["conn"].iloc[0]
    for row in tr.itertuples():
        ref_key = key + ("~2" if row.incarnation == 2 else "")
        ev = ts.events[ts.events["trace"] == row.trace]
        assert list(zip(ev["time"], ev["state"])) == ref[ref_key]["changes"]
        m = ts.metrics[ts.metrics["trace"] == row.trace]
        assert m["cwnd_segments"].tolist() == ref[ref_key]["cwnd"]


def test_record_warnings_name_the_written_trace_file(tmp_path):
    """The reader's warnings name the file it read, which record stages under a temporary
    name and then writes as trace.txt: record.json's warnings name trace.txt (issue 26:
    they named the staged file, gone by then)."""
    from statemine.tcp.record import _write

    staged = tmp_path / "staged-xyz.txt"
    staged.write_text(
        "CPU:1 [LOST 7 EVENTS]\n"
        "          python3-5194    [001] ..s2.  1.000000: tcp_probe: family=AF_INET "
        "src=10.0.0.1:40001 dest=10.0.0.2:5201 mark=0x0 data_len=0 snd_nxt=0x2000 "
        "snd_una=0x1000 snd_cwnd=10 ssthresh=20 snd_wnd=65160 srtt=1000 rcv_wnd=65536 "
        "sock_cookie=1a\n"
    )
    out = tmp_path / "rec"
    info = {"ring_buffer": {}, "exit_status": 0, "ended_by_duration": False,
            "socket_controllers": {"1a": {"congestion_control": "reno", "netns": "x"}}}  # fmt: skip
    result = _write(out, staged, info, False, False, None)
    written = json.loads((out / "record.json").read_text())
    assert written["warnings"] == list(result.warnings)
    lost = [w for w in written["warnings"] if "lost" in w]
    assert len(lost) == 2 and all(w.startswith(f"{out / 'trace.txt'}:") for w in lost), lost
    assert "staged-xyz" not in json.dumps(written)
    assert written["sockets"] == {
        "trace.txt#10.0.0.1:40001-10.0.0.2:5201": {
            "cookie": "1a",
            "congestion_control": "reno",
            "netns": "x",
        }
    }
    assert written["congestion_controls"] == ["reno"]


@pytest.mark.slow
def test_a_four_tuple_reused_after_fin_recorded_here(tmp_path):
    """Issue 26: four connections in turn on one 4-tuple, each closed by FIN. The old
    socket logs Recovery -> Open after its last probe and a connecting socket logs no Open
    at set-up; split at each handshake (inet_sock_set_state), every connection ends Open,
    each begins after the one before ended, and each matches the independent reading."""
    if "reno" not in _available_ccs():
        pytest.skip("congestion control reno not available in this kernel")
    from statemine.traces import load

    nbytes, port, cport, n = 256 << 10, 5303, 41003, 4
    out = tmp_path / "rec"
    with veth_path() as (a, b, addr_b):
        subprocess.run(["ip", "netns", "exec", a, "sysctl", "-q", "-w", "net.ipv4.tcp_tw_reuse=1"],
                       check=True)  # fmt: skip
        server = subprocess.Popen(
            ["ip", "netns", "exec", b, sys.executable, "-c", SERVER_FIN, addr_b, str(port),
             str(nbytes), str(n)],
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            assert server.stdout is not None and server.stdout.readline().strip() == "ready"
            client = ["ip", "netns", "exec", a, sys.executable, "-c", CLIENT_FIN, addr_b]
            done = statemine(
                "tcp", "record", "--out", str(out), "--port", str(port), "--", *client,
                str(port), "reno", str(nbytes), str(cport), str(n), timeout=120,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert server.stdout.readline().strip() == "done"
        finally:
            server.kill()
            server.wait()
    if os.environ.get("STATEMINE_KEEP_RECORDING"):  # how tests/data/tcp's copy was made
        shutil.copy(out / "trace.txt", os.environ["STATEMINE_KEEP_RECORDING"])
    ts = load(out / "traces.parquet")
    tr = ts.traces.sort_values("incarnation")
    assert tr["incarnation"].tolist() == list(range(1, n + 1))
    assert tr["conn"].nunique() == 1 and (tr["cookie"] != "").all()
    ref = read_reference(out / "trace.txt")
    key = tr["conn"].iloc[0]
    end_before = -1.0
    for row in tr.itertuples():
        ev = ts.events[ts.events["trace"] == row.trace]
        ref_key = key + (f"~{row.incarnation}" if row.incarnation > 1 else "")
        assert list(zip(ev["time"], ev["state"])) == ref[ref_key]["changes"]
        assert ev["state"].iloc[-1] == "Open", row
        assert ev["time"].min() > end_before
        end_before = row.end
        assert 0 < row.bytes_acked <= nbytes + 1, row  # no probes once in FIN_WAIT
    info = json.loads((out / "record.json").read_text())
    assert info["congestion_controls"] == ["reno"]


def test_a_signal_another_thread_takes_still_ends_the_command_at_once():
    """The kernel may hand a process's SIGTERM to any of its threads (the recording has a
    drain thread and a socket watch): the command's wait must still run the handler at
    once, not when the command ends (a SIGTERM once waited out a 60 s command)."""
    import threading

    from statemine.fileio import Terminated, cleanup_on_signals
    from statemine.tcp.record import _run

    assert threading.current_thread() is threading.main_thread()  # where handlers are set
    ready, stop = threading.Event(), threading.Event()
    other = threading.Thread(target=lambda: (ready.set(), stop.wait()), daemon=True)
    other.start()
    ready.wait()
    assert other.ident is not None
    kill = threading.Timer(0.5, signal.pthread_kill, (other.ident, signal.SIGTERM))
    started = time.monotonic()
    kill.start()
    try:
        with pytest.raises(Terminated), cleanup_on_signals():
            _run(["sleep", "20"], None)
    finally:
        stop.set()
    assert time.monotonic() - started < 5
