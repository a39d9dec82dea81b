"""aioquic in real time: the patched aioquic (the virtual-time runner's tree,
:func:`statemine.lab.runners.aioquic.build`) driven on the real clock over two real UDP
sockets, one in each namespace, joined by the real-time path (docs/realtime.md).

aioquic is sans-IO; a child process (:func:`transfer_main`, which inherits the two
sockets) runs both endpoints in one thread as the virtual-time runner does
(the same configurations, application protocol and loss counter,
:mod:`statemine.lab.runners.aioquic`), but ``now`` is ``time.monotonic()`` and the
datagrams go through the kernel's sockets and the emulator instead of a heap. The loop
waits in ``select`` on both sockets until the earlier of the two connections' timers
(aioquic's timer includes its pacer), receives every queued datagram, runs due timers and
sends what each connection has. The statemine log (the patch's lines with ``t=`` the
monotonic time) is ``log_path``. The mobile profile's network-thread stage is the
emulator's (:class:`statemine.lab.realtime.emulator.CpuStage`); its application reads at
the profile's rate (:class:`statemine.lab.runners.aioquic.AppReader`).
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ...fileio import write_json
from . import netns
from .emulator import Emulator
from .run import over_sockets, run_and_write

#: Seconds the loop keeps running after the transfer so both ends exchange CONNECTION_CLOSE.
CLOSE_GRACE_S = 2.0
#: Longest single wait in ``select``, s (the loop rechecks its deadline at least this often).
MAX_WAIT_S = 0.05


class _Side:
    """One endpoint: its socket, its connection (None until the server's first datagram)
    and the datagrams it could not send."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.conn: Any = None
        self.send_errors = 0

    def flush(self, now: float) -> None:
        """Send every datagram the connection has now (a full socket buffer drops it,
        counted, as a kernel queue would)."""
        for data, addr in self.conn.datagrams_to_send(now=now):
            try:
                self.sock.sendto(data, addr)
            except (BlockingIOError, OSError):
                self.send_errors += 1

    def timer(self) -> float | None:
        return None if self.conn is None else self.conn.get_timer()


def transfer(config: dict, server_sock: socket.socket, client_sock: socket.socket) -> dict:
    """One transfer of ``config``'s objects over the two sockets on the real clock; the
    result dict (seconds, bytes: ``plt_s`` from ``connect`` to the last byte consumed)."""
    from aioquic.buffer import Buffer
    from aioquic.quic import events
    from aioquic.quic.connection import QuicConnection
    from aioquic.quic.packet import pull_quic_header

    from ..runners import aioquic as rq

    client_cfg, server_cfg = rq._configurations(config)
    count = int(config["objects"]["count"])
    size = int(config["objects"]["size_bytes"])
    prof = config.get("client") or {}
    mobile = prof.get("profile", "desktop") == "mobile" and prof.get("read_rate_bps")
    app = rq.AppReader(rq.read_rate(prof, int(config["seed"])) if mobile else None)
    server_addr = server_sock.getsockname()
    server, client = _Side(server_sock), _Side(client_sock)
    received = rq._Received()
    losses = [0]
    requests: dict[int, bytearray] = {}
    t0 = time.monotonic()

    def server_in(data: bytes, addr: tuple[str, int], now: float) -> None:
        if server.conn is None:
            header = pull_quic_header(
                Buffer(data=data), host_cid_length=server_cfg.connection_id_length
            )
            server.conn = QuicConnection(
                configuration=server_cfg, original_destination_connection_id=header.destination_cid
            )
            rq._count_losses(server.conn, losses)
        server.conn.receive_datagram(data, addr, now=now)
        while (ev := server.conn.next_event()) is not None:
            if isinstance(ev, events.StreamDataReceived):
                buf = requests.setdefault(ev.stream_id, bytearray())
                buf += ev.data
                if ev.end_stream:
                    n = rq._parse_request(bytes(buf))
                    server.conn.send_stream_data(ev.stream_id, bytes(n), end_stream=True)

    def client_in(data: bytes, addr: tuple[str, int], now: float) -> None:
        client.conn.receive_datagram(data, addr, now=now)
        delivered = 0
        while (ev := client.conn.next_event()) is not None:
            if isinstance(ev, events.StreamDataReceived):
                delivered += len(ev.data)
                received.done += bool(ev.end_stream)
            elif isinstance(ev, events.ConnectionTerminated) and received.done < count:
                raise RuntimeError(f"connection closed early: {ev.reason_phrase or ev.error_code}")
        received.bytes += delivered
        received.plt = app.deliver(now - t0, delivered)
        if received.done == count and received.last is None:
            received.last = now - t0
            client.conn.close(error_code=0, reason_phrase="done")

    client.conn = QuicConnection(configuration=client_cfg)
    client.conn.connect(server_addr, now=t0)
    for _ in range(count):
        sid = client.conn.get_next_available_stream_id()
        client.conn.send_stream_data(sid, rq._request(size), end_stream=True)
    client.flush(t0)

    sel = selectors.DefaultSelector()
    for side, handle in ((server, server_in), (client, client_in)):
        side.sock.setblocking(False)
        sel.register(side.sock, selectors.EVENT_READ, (side, handle))
    limit = float(config.get("time_limit_s") or 120.0)

    def step(deadline: float) -> None:
        """Wait for a datagram or the next timer (at most until ``deadline``), then
        receive, run due timers and send."""
        timers = [t for t in (server.timer(), client.timer()) if t is not None]
        now = time.monotonic()
        wait = min([deadline, now + MAX_WAIT_S, *timers]) - now
        for key, _ in sel.select(max(wait, 0.0)):
            side, handle = key.data
            while True:
                try:
                    data, addr = side.sock.recvfrom(65536)
                except BlockingIOError:
                    break
                handle(data, addr, time.monotonic())
        now = time.monotonic()
        for side in (server, client):
            t = side.timer()
            if t is not None and t <= now:
                side.conn.handle_timer(now=now)
            if side.conn is not None:
                side.flush(now)

    try:
        while received.last is None:
            if time.monotonic() - t0 > limit:
                return {
                    "ok": False,
                    "error": f"wall-clock limit reached ({limit:g} s)",
                    "bytes": received.bytes,
                    "retransmissions": losses[0],
                }
            step(t0 + limit)
        grace_end = time.monotonic() + CLOSE_GRACE_S
        while time.monotonic() < grace_end and (server.timer() or client.timer()):
            step(grace_end)
    finally:
        sel.close()
    if received.bytes != count * size:
        raise RuntimeError(f"received {received.bytes} bytes, expected {count * size}")
    plt = max(received.last, received.plt)
    return {
        "ok": True,
        "error": None,
        "plt_s": plt,
        "bytes": received.bytes,
        "throughput_bps": 8.0 * received.bytes / plt if plt > 0 else None,
        "retransmissions": losses[0],
        # the server's RTT estimates at the end (aioquic's private recovery fields)
        "srtt_s": getattr(server.conn._loss, "_rtt_smoothed", None),
        "min_rtt_s": getattr(server.conn._loss, "_rtt_min", None),
        "send_errors": server.send_errors + client.send_errors,
        "virtual_time_s": time.monotonic() - t0,
    }


def _use_tree(config: dict, cache_dir: Any) -> None:
    """Put the patched aioquic of ``config["version"]`` first on ``sys.path`` (before any
    import of aioquic) and set the patch's loss-detection knobs and log."""
    from ..runners import aioquic as rq

    if "aioquic" in sys.modules:
        raise RuntimeError("aioquic was imported before the patched tree was put on sys.path")
    tree = rq.build(config["version"], cache_dir or config.get("cache_dir"))
    if tree is not None:
        sys.path.insert(0, str(tree))
    for key, var in (
        ("reordering_threshold", "STATEMINE_REORDERING_THRESHOLD"),
        ("time_threshold", "STATEMINE_TIME_THRESHOLD"),
    ):
        os.environ.pop(var, None)
        if config.get(key) is not None:
            os.environ[var] = str(config[key])
    quic_logger = logging.getLogger("quic")
    quic_logger.setLevel(logging.INFO)
    quic_logger.propagate = False
    quic_logger.addHandler(rq._log_handler(config["log_path"]))


def _transfer_env() -> dict[str, str]:
    """The child's environment: this checkout first on ``PYTHONPATH``; the patch's log and
    knobs are set by the child from the config (``$STATEMINE_CACHE`` and
    ``$STATEMINE_PATCHES`` stay, so it finds the same patched tree)."""
    knobs = ("STATEMINE_LOG", "STATEMINE_REORDERING_THRESHOLD", "STATEMINE_TIME_THRESHOLD")
    env = {k: v for k, v in os.environ.items() if k not in knobs}
    root = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def simulate(config: dict, cache_dir: Any = None) -> tuple[dict, Emulator]:
    """Run ``config`` (``implementation = "aioquic-rt"``) in real time; writes the
    statemine log to ``log_path``; the transfer's result plus the path's counters, and
    the emulator. The transfer runs in a child process (``--transfer``) that inherits the
    two sockets (:func:`statemine.lab.realtime.run.over_sockets`): in this process it
    would hold the GIL the emulator's thread needs (one run in-process had packets
    written up to 42 ms late, 5 ms in a child)."""
    from ..runners import aioquic as rq

    config = dict(config, cache_dir=str(cache_dir or config.get("cache_dir") or "") or None)
    rq.build(config["version"], config["cache_dir"])  # fetch and patch once, here

    def argv(path: str) -> list[str]:
        return [sys.executable, "-m", "statemine.lab.realtime.aioquic", "--transfer", path]

    return over_sockets(config, argv, _transfer_env(), "aioquic-rt")


def transfer_main(config_path: str) -> int:
    """The transfer child: the patched aioquic over the inherited sockets
    ``$STATEMINE_REALNET_FDS`` (``SERVER,CLIENT``); writes the result to ``result_path``."""
    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    _use_tree(config, config.get("cache_dir"))
    import aioquic

    srv_fd, cli_fd = (int(x) for x in os.environ["STATEMINE_REALNET_FDS"].split(","))
    with socket.socket(fileno=srv_fd) as srv, socket.socket(fileno=cli_fd) as cli:
        try:
            result = transfer(config, srv, cli)
        except RuntimeError as exc:
            result = {"ok": False, "error": str(exc)}
    logging.shutdown()
    result["version"] = getattr(aioquic, "__version__", config["version"])
    write_json(config["result_path"], result)
    return 0


def run_config_file(path: str) -> int:
    """``python -m statemine.lab.realtime.aioquic CONFIG.json``: one run, result written."""
    return run_and_write(
        path, simulate, (netns.SetupError, OSError, RuntimeError, subprocess.SubprocessError)
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--transfer"]:
        sys.exit(transfer_main(sys.argv[2]))
    sys.exit(run_config_file(sys.argv[1]))
