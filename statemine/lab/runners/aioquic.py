"""The aioquic runner: a client and a server of (instrumented) aioquic, driven sans-IO in
virtual time over the emulated path of :mod:`statemine.lab.path`.

It speaks docs/lab-protocol.md: ``python -m statemine.lab.runners.aioquic CONFIG.json``
writes the statemine log (the instrument patch's lines, logged through
``logging.getLogger("quic")`` with ``t=`` the sans-IO ``now``) to ``log_path`` and the run
result to ``result_path``. :func:`run` starts that subprocess with the patched aioquic on
``PYTHONPATH`` (see :func:`build`), a fixed ``PYTHONHASHSEED`` and the loss-detection knobs.
With ``qlog_dir`` (environment ``QLOGDIR`` of the subprocess) aioquic's own qlog of each
end is written there too (:class:`VirtualQlog`: aioquic's ``QuicLogger`` with event times
from the virtual clock, ``server.qlog`` and ``client.qlog``).

The simulation (:func:`simulate`) is a discrete-event loop over a heap of
``(time, seq, action)``; ``seq`` breaks ties in insertion order so runs are deterministic.
Everything random inside aioquic that reaches the wire or the log (connection ids, TLS
randoms, reset tokens) comes from ``os.urandom``, which the run subprocess replaces with a
generator seeded from the run's seed; the TLS identity is a fixed RSA certificate
(statemine/lab/data/), so handshake sizes never vary.

The application protocol is minimal: the client opens one bidirectional stream per
object and sends ``GET <size>\\n``; the server answers with ``size`` bytes and FIN.

Client profiles (seconds, bits per second, bytes):

* ``desktop``: every datagram is processed the moment it arrives; the application takes
  stream data as fast as it comes.
* ``mobile``: a phone. Its **network thread** takes arriving datagrams from a socket
  receive buffer of ``socket_buffer_bytes`` (default 212992, Linux's ``rmem_default``;
  overflow is dropped) and spends a CPU time on each (lognormal, mean ``per_packet_cpu_s``,
  coefficient of variation ``per_packet_cpu_cv``) before the
  transport processes it (and may send ACK / MAX_DATA); timers wait for the thread. The
  **application** consumes the delivered stream bytes at ``read_rate_bps`` (times a
  lognormal factor of mean 1 and CV ``read_rate_cv`` redrawn every
  ``read_rate_interval_s``, :class:`statemine.lab.variability.ReadRate`); the page is
  loaded (PLT) when it has consumed the last byte (the client closes the connection as
  soon as its transport has every byte). Flow-control credit returns however
  the implementation returns it: aioquic grants it when data reaches the transport, not
  when the application reads (it has no read API), so the read rate cannot hold an
  aioquic sender back. Optional ``max_data_bytes`` / ``max_stream_data_bytes`` set
  aioquic's initial flow-control windows.
"""

from __future__ import annotations

import heapq
import json
import logging
import os
import random
import shutil
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...fileio import write_json
from ..path import PathModel
from ..variability import CpuTime, ReadRate

if TYPE_CHECKING:
    from aioquic.quic.configuration import QuicConfiguration

#: How often the mobile application's read rate is redrawn unless the config says, s.
DEFAULT_READ_INTERVAL_S = 0.1
#: Linux's default UDP receive buffer (net.core.rmem_default), bytes.
DEFAULT_SOCKET_BUFFER_BYTES = 212_992
#: Virtual seconds the loop keeps running after the transfer to let both ends close.
CLOSE_GRACE_S = 5.0
#: A timer that asks again for the instant it just fired at runs this much later, s.
TIMER_RESOLUTION_S = 1e-6
#: Wall-clock limit of one run subprocess unless the config gives ``wall_limit_s``, s.
DEFAULT_WALL_LIMIT_S = 1800.0
#: Hash seed of every run subprocess (dict/set order never depends on the run).
PYTHONHASHSEED = "0"
ALPN = "statemine-lab"
DATA_DIR = Path(__file__).resolve().parent.parent / "data"
CLIENT_ADDR = ("10.0.0.1", 4433)
SERVER_ADDR = ("10.0.0.2", 4433)


_NO_ARG = object()  # EventLoop.at without an argument


class VirtualTimeLimit(Exception):
    """The run did not finish within ``time_limit_s`` virtual seconds."""


# -- the event loop -----------------------------------------------------------------------
@dataclass
class EventLoop:
    """A heap of ``(time, seq, action, arg)``; ``run`` pops in time order, ties in push
    order, and calls ``action()`` or ``action(arg)``."""

    now: float = 0.0
    _heap: list = field(default_factory=list)
    _seq: int = 0

    def at(self, t: float, action: Callable[..., None], arg: Any = _NO_ARG) -> None:
        """Schedule ``action`` (called with ``arg`` when given) at virtual time ``t``
        (seconds; a time in the past means now)."""
        self._seq += 1
        heapq.heappush(self._heap, (t if t > self.now else self.now, self._seq, action, arg))

    def run(self, until: Callable[[], bool], limit_s: float, strict: bool = True) -> None:
        """Run actions until ``until()`` or the heap empties. An action due after
        ``limit_s`` raises :class:`VirtualTimeLimit` (``strict``) or stops the run."""
        heap = self._heap
        while heap and not until():
            if heap[0][0] > limit_s:
                if strict:
                    self.now = limit_s
                    raise VirtualTimeLimit(f"virtual time limit reached ({limit_s} s)")
                self.now = limit_s
                return
            t, _, action, arg = heapq.heappop(heap)
            self.now = t
            if arg is _NO_ARG:
                action()
            else:
                action(arg)


# -- endpoints -----------------------------------------------------------------------------
@dataclass
class Endpoint:
    """One QUIC connection, its outgoing link and its (single) timer."""

    loop: EventLoop
    link: Any  # statemine.lab.path.Link towards the peer
    deliver: Callable[[bytes], None]  # the peer's receive entry point
    conn: Any = None
    timer_at: float | None = None
    _timer_gen: int = 0
    _fired_at: float = -1.0

    def flush(self) -> None:
        """Hand every datagram the connection wants to send to the link; re-arm the timer."""
        now = self.loop.now
        send, at, deliver = self.link.send, self.loop.at, self.deliver
        for data, _addr in self.conn.datagrams_to_send(now=now):
            arrival = send(now, len(data))
            if arrival is not None:
                at(arrival, deliver, data)
        self.arm_timer()

    def arm_timer(self) -> None:
        """Schedule the connection's timer (stale ones are ignored by generation)."""
        t = self.conn.get_timer()
        if t is not None and t <= self._fired_at:
            # The timer fired at _fired_at and still asks for that instant: aioquic's
            # loss time (sent_time + delay) minus the delay can round below sent_time,
            # so nothing is declared lost and the same deadline comes back. A real clock
            # has moved on by then; move virtual time on by the timer resolution.
            t = self._fired_at + TIMER_RESOLUTION_S
        if t == self.timer_at:
            return
        self.timer_at = t
        self._timer_gen += 1
        if t is not None:
            gen = self._timer_gen
            self.loop.at(t, self._fire, gen)

    def _fire(self, gen: int) -> None:
        if gen != self._timer_gen:
            return
        self.timer_at = None
        self._fired_at = self.loop.now
        self.on_timer()

    def on_timer(self) -> None:
        """Run the connection's timer now and send what it produced."""
        self.conn.handle_timer(now=self.loop.now)
        self.flush()


@dataclass
class NetworkThread:
    """The mobile client's network thread: socket buffer -> per-packet CPU -> transport.

    Datagrams wait in a socket receive buffer of ``socket_buffer_bytes`` (overflow is
    dropped and counted); taking one costs ``cpu_s`` of CPU during which the thread does
    nothing else, not even timers (they run when it is free).
    """

    ep: Endpoint
    cpu: Callable[[], float]  # the CPU time of the next packet, seconds
    socket_buffer_bytes: int
    on_packet: Callable[[bytes], None]  # the transport processes a datagram now
    socket: deque = field(default_factory=deque)
    socket_bytes: int = 0
    busy: bool = False
    timer_due: bool = False
    dropped: int = 0

    def arrive(self, data: bytes) -> None:
        if self.socket_bytes + len(data) > self.socket_buffer_bytes:
            self.dropped += 1
            return
        self.socket.append(data)
        self.socket_bytes += len(data)
        if not self.busy:
            self._next()

    def _next(self) -> None:
        if self.timer_due:  # a timer that came due while the CPU was busy runs now
            self.timer_due = False
            Endpoint.on_timer(self.ep)
        if not self.socket:
            self.busy = False
            return
        self.busy = True
        data = self.socket.popleft()
        self.socket_bytes -= len(data)
        self.ep.loop.at(self.ep.loop.now + self.cpu(), self._process, data)

    def _process(self, data: bytes) -> None:
        self.on_packet(data)
        self._next()

    def on_timer(self) -> None:
        if self.busy:
            self.timer_due = True
        else:
            Endpoint.on_timer(self.ep)


@dataclass
class AppReader:
    """The client application: consumes delivered stream bytes at ``rate.at(t)`` bits/s
    (None: at once), in arrival order, each chunk at the rate in force when its reading
    starts. ``free_at`` is when it will have consumed all so far."""

    rate: ReadRate | None = None
    free_at: float = 0.0

    def deliver(self, now: float, nbytes: int) -> float:
        """Queue ``nbytes`` delivered at ``now``; returns when they will be consumed."""
        start = now if now > self.free_at else self.free_at
        self.free_at = start + (8.0 * nbytes / self.rate.at(start) if self.rate and nbytes else 0.0)
        return self.free_at


# -- the transfer ------------------------------------------------------------------------------
@dataclass
class _Received:
    """The client's progress: ``bytes`` delivered by its transport, responses ``done``,
    ``last``: when the transport had every byte (seconds, None before), ``plt``: when the
    application had consumed them (seconds)."""

    bytes: int = 0
    done: int = 0
    last: float | None = None
    plt: float = 0.0


def _virtual_qlog(clock: Callable[[], float]) -> Any:
    """An aioquic ``QuicLogger`` whose traces stamp events with ``clock()`` (virtual
    seconds) instead of ``time.time()``: aioquic's ``QuicLoggerTrace.log_event`` reads the
    wall clock, which means nothing in virtual time."""
    from aioquic.quic.logger import QuicLogger, QuicLoggerTrace

    class Trace(QuicLoggerTrace):
        def log_event(self, *, category: str, event: str, data: dict) -> None:
            self._events.append(
                {"data": data, "name": f"{category}:{event}", "time": clock() * 1000.0}
            )

    class Logger(QuicLogger):
        def start_trace(self, is_client: bool, odcid: bytes) -> QuicLoggerTrace:
            trace = Trace(is_client=is_client, odcid=odcid)
            self._traces.append(trace)
            return trace

    return Logger()


def write_qlogs(logger: Any, qlog_dir: str | os.PathLike) -> None:
    """One contained qlog document per trace of ``logger`` (an aioquic ``QuicLogger``),
    ``<vantage point>.qlog`` (``server.qlog``, ``client.qlog``) in ``qlog_dir``."""
    doc = logger.to_dict()
    for trace in doc["traces"]:
        name = str(trace.get("vantage_point", {}).get("type", "trace"))
        write_json(Path(qlog_dir) / f"{name}.qlog", {**doc, "traces": [trace]})


def _configurations(config: dict) -> tuple[QuicConfiguration, QuicConfiguration]:
    from aioquic.quic.configuration import QuicConfiguration

    client = QuicConfiguration(is_client=True, alpn_protocols=[ALPN])
    client.server_name = "statemine.lab"
    client.verify_mode = 0  # ssl.CERT_NONE: the lab identity is self-signed
    prof = config["client"]
    if prof.get("max_data_bytes"):
        client.max_data = int(prof["max_data_bytes"])
    if prof.get("max_stream_data_bytes"):
        client.max_stream_data = int(prof["max_stream_data_bytes"])
    server = QuicConfiguration(is_client=False, alpn_protocols=[ALPN])
    server.load_cert_chain(DATA_DIR / "cert.pem", DATA_DIR / "key.pem")
    return client, server


def _request(size: int) -> bytes:
    return b"GET %d\n" % size


def _parse_request(data: bytes) -> int:
    if not (data.startswith(b"GET ") and data.endswith(b"\n")):
        raise ValueError(f"bad request {data[:40]!r}")
    return int(data[4:-1])


def read_rate(prof: dict, seed: int) -> ReadRate:
    """The mobile application's read rate from the client profile (docs/lab-protocol.md)."""
    return ReadRate(
        float(prof["read_rate_bps"]),
        float(prof.get("read_rate_cv") or 0.0),
        float(prof.get("read_rate_interval_s") or DEFAULT_READ_INTERVAL_S),
        seed,
    )


def _count_losses(conn: Any, counter: list[int]) -> None:
    """Count packets the connection's loss detector declares lost (wraps the recovery's
    ``_on_packets_lost``, present in every supported aioquic; a no-op if absent)."""
    rec = getattr(conn, "_loss", None)
    orig = getattr(rec, "_on_packets_lost", None)
    if rec is None or orig is None:
        return

    def counting(*args, **kwargs):
        packets = kwargs.get("packets", args[0] if args else ())
        counter[0] += len(packets)
        return orig(*args, **kwargs)

    rec._on_packets_lost = counting


def simulate(config: dict, qlog: Any = None) -> dict:
    """Run one transfer in virtual time; returns the run result dict (without wall time).

    When ``time_limit_s`` passes first the result is ``ok: false`` with the error
    ``virtual time limit reached`` and the counters (bytes received, packets) so far.
    ``qlog``: a function of the virtual clock returning an aioquic ``QuicLogger`` both
    ends log to (:func:`_virtual_qlog`), or None.
    """
    from aioquic.buffer import Buffer
    from aioquic.quic import events
    from aioquic.quic.connection import QuicConnection
    from aioquic.quic.packet import pull_quic_header

    client_cfg, server_cfg = _configurations(config)
    loop = EventLoop()
    if qlog is not None:
        client_cfg.quic_logger = server_cfg.quic_logger = qlog(lambda: loop.now)
    path = PathModel.from_config(config["path"], int(config["seed"]))
    count = int(config["objects"]["count"])
    size = int(config["objects"]["size_bytes"])
    total = count * size
    received = _Received()
    server_losses = [0]
    requests: dict[int, bytearray] = {}

    server = Endpoint(loop, path.down, deliver=lambda d: client_in(d))
    client = Endpoint(loop, path.up, deliver=lambda d: server_in(d))
    client.conn = QuicConnection(configuration=client_cfg)

    def server_in(data: bytes) -> None:
        if server.conn is None:
            header = pull_quic_header(
                Buffer(data=data), host_cid_length=server_cfg.connection_id_length
            )
            server.conn = QuicConnection(
                configuration=server_cfg,
                original_destination_connection_id=header.destination_cid,
            )
            _count_losses(server.conn, server_losses)
        server.conn.receive_datagram(data, CLIENT_ADDR, now=loop.now)
        while (ev := server.conn.next_event()) is not None:
            if isinstance(ev, events.StreamDataReceived):
                buf = requests.setdefault(ev.stream_id, bytearray())
                buf += ev.data
                if ev.end_stream:
                    n = _parse_request(bytes(buf))
                    server.conn.send_stream_data(ev.stream_id, bytes(n), end_stream=True)
        server.flush()

    prof = config["client"]
    mobile = prof.get("profile", "desktop") == "mobile"
    app = AppReader(
        read_rate(prof, int(config["seed"])) if mobile and prof.get("read_rate_bps") else None
    )

    def client_packet(data: bytes) -> None:
        """The client's transport processes one datagram now and hands what it delivered
        to the application. Once the transport has every byte the client closes the
        connection (the transfer is over for the server); the page is loaded when the
        application has also consumed them all (``plt``)."""
        client.conn.receive_datagram(data, SERVER_ADDR, now=loop.now)
        delivered = 0
        while (ev := client.conn.next_event()) is not None:
            if isinstance(ev, events.StreamDataReceived):
                delivered += len(ev.data)
                if ev.end_stream:
                    received.done += 1
            elif isinstance(ev, events.ConnectionTerminated) and received.done < count:
                raise RuntimeError(f"connection closed early: {ev.reason_phrase or ev.error_code}")
        received.bytes += delivered
        received.plt = app.deliver(loop.now, delivered)
        if received.done == count and received.last is None:
            received.last = loop.now
            client.conn.close(error_code=0, reason_phrase="done")
        client.flush()

    thread: NetworkThread | None = None
    if mobile:
        cpu = CpuTime(
            float(prof.get("per_packet_cpu_s") or 0.0),
            float(prof.get("per_packet_cpu_cv") or 0.0),
            int(config["seed"]),
        )
        thread = NetworkThread(
            client,
            cpu=cpu.draw,
            socket_buffer_bytes=int(prof.get("socket_buffer_bytes") or DEFAULT_SOCKET_BUFFER_BYTES),
            on_packet=client_packet,
        )
        client_in = thread.arrive
        client.on_timer = thread.on_timer  # type: ignore[method-assign]
    else:
        client_in = client_packet

    client.conn.connect(SERVER_ADDR, now=0.0)
    for _ in range(count):
        sid = client.conn.get_next_available_stream_id()
        client.conn.send_stream_data(sid, _request(size), end_stream=True)
    client.flush()

    def counters() -> dict:
        return {
            "retransmissions": server_losses[0],
            "packets_sent": path.sent,
            "packets_dropped": path.dropped + (thread.dropped if thread else 0),
            "virtual_time_s": loop.now,
        }

    limit = float(config["time_limit_s"])
    try:
        loop.run(until=lambda: received.last is not None, limit_s=limit)
    except VirtualTimeLimit as exc:  # a failed run, with what it had done by then
        return {"ok": False, "error": str(exc), "bytes": received.bytes, **counters()}
    if received.last is None:
        raise RuntimeError("the transfer stalled: no event left before the last byte arrived")
    # let both ends exchange CONNECTION_CLOSE and drain (so the patch can log Close)
    grace_end = min(limit, received.last + CLOSE_GRACE_S)
    loop.run(until=lambda: False, limit_s=grace_end, strict=False)

    plt = max(received.last, received.plt)
    if received.bytes != total:
        raise RuntimeError(f"received {received.bytes} bytes, expected {total}")
    return {
        "ok": True,
        "error": None,
        "plt_s": plt,
        "bytes": total,
        "throughput_bps": 8.0 * total / plt if plt > 0 else None,
        **counters(),
    }


# -- the subprocess ----------------------------------------------------------------------------
def _seed_urandom(seed: int) -> None:
    """Make ``os.urandom`` (aioquic's source of CIDs, TLS randoms, tokens) deterministic."""
    rng = random.Random(f"aioquic-urandom/{seed}")
    os.urandom = lambda n: rng.randbytes(n)


def _log_handler(path: str) -> logging.Handler:
    handler = logging.FileHandler(path, mode="w", encoding="utf-8", delay=False)
    handler.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
    handler.addFilter(lambda record: "STATEMINE" in record.getMessage())
    return handler


def main(argv: list[str] | None = None) -> int:
    """Run the config file named by ``argv[0]`` (the runner protocol); exit status 0 if a
    result was written (``ok`` true or false), 1 if even that failed."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m statemine.lab.runners.aioquic CONFIG.json", file=sys.stderr)
        return 1
    with open(argv[0], encoding="utf-8") as f:
        config = json.load(f)
    _seed_urandom(int(config["seed"]))
    quic_logger = logging.getLogger("quic")
    quic_logger.setLevel(logging.INFO)
    quic_logger.propagate = False
    quic_logger.addHandler(_log_handler(config["log_path"]))
    import aioquic
    import aioquic.quic.connection

    started, cpu_started = time.perf_counter(), time.process_time()
    base = {"implementation": "aioquic", "version": getattr(aioquic, "__version__", "?")}
    qlog_dir = os.environ.get("QLOGDIR")
    loggers: list[Any] = []

    def qlog(clock: Callable[[], float]) -> Any:
        loggers.append(_virtual_qlog(clock))
        return loggers[-1]

    try:
        result = simulate(config, qlog if qlog_dir else None)
    except Exception as exc:  # a crash of the stack under test is a failed run, recorded
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    result.update(
        base,
        wall_time_s=time.perf_counter() - started,
        cpu_time_s=time.process_time() - cpu_started,
    )
    logging.shutdown()
    for logger in loggers:
        write_qlogs(logger, str(qlog_dir))
    write_json(config["result_path"], result)
    return 0


# -- the parent side -----------------------------------------------------------------------------
def build(version: str, cache: str | os.PathLike | None = None) -> Path | None:
    """Fetch and patch aioquic ``version`` once (cached under
    ``cache``/aioquic/VERSION/patch-<sha256 of the patch>, so a patch from another
    ``$STATEMINE_PATCHES`` folder gets its own tree); returns the directory to put on
    ``PYTHONPATH``. ``version == "installed"`` returns None: the aioquic already
    importable, unpatched (to develop without the patch)."""
    if version == "installed":
        return None
    from ..extras import require_lab_extra

    require_lab_extra("aioquic")  # the fetched source's own dependencies
    import hashlib

    from ... import patch as sm_patch  # statemine.patch: fetch/apply instrument patches

    psha = hashlib.sha256(sm_patch.patch_path("aioquic", version).read_bytes()).hexdigest()[:16]
    dest = Path(cache or sm_patch.cache_dir()) / "aioquic" / version / f"patch-{psha}"
    if not (dest / ".statemine-patch.json").is_file():
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".tmp-{psha}-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            sm_patch.fetch("aioquic", version, tmp)
            sm_patch.apply("aioquic", version, tmp)
            shutil.rmtree(dest, ignore_errors=True)
            os.replace(tmp, dest)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    record = json.loads((dest / ".statemine-source.json").read_text(encoding="utf-8"))
    return dest / record.get("python_path", "")


def subprocess_env(tree: Path | None, config: dict) -> dict[str, str]:
    """The environment of a run subprocess: patched tree first on PYTHONPATH, fixed hash
    seed, and the instrument patch's loss-detection knobs."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[3])  # the directory holding statemine/
    parts = (
        ([str(tree)] if tree else [])
        + [root]
        + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env["PYTHONHASHSEED"] = PYTHONHASHSEED
    for key, var in (
        ("reordering_threshold", "STATEMINE_REORDERING_THRESHOLD"),
        ("time_threshold", "STATEMINE_TIME_THRESHOLD"),
    ):
        env.pop(var, None)
        if config.get(key) is not None:
            env[var] = str(config[key])
    return env


def run(
    config: dict,
    cache: str | os.PathLike | None = None,
    qlog_dir: str | os.PathLike | None = None,
) -> dict:
    """Run one config in a subprocess (the runner protocol); always returns a result dict.

    The config JSON is written beside ``result_path`` (``<stem>.config.json``). A crash
    or the wall-clock limit (config ``wall_limit_s``, default :data:`DEFAULT_WALL_LIMIT_S`)
    gives ``{"ok": False, "error": ...}``. With ``qlog_dir`` aioquic's qlog of each end is
    written there too (``server.qlog``, ``client.qlog``; times on the virtual clock).
    """
    tree = build(config["version"], cache)
    wall_limit_s = float(config.get("wall_limit_s") or DEFAULT_WALL_LIMIT_S)
    result_path = Path(config["result_path"])
    config_path = result_path.with_name(f"{result_path.stem}.config.json")
    write_json(str(config_path), config)
    result_path.unlink(missing_ok=True)
    env = subprocess_env(tree, config)
    env.pop("QLOGDIR", None)
    if qlog_dir is not None:
        env["QLOGDIR"] = str(qlog_dir)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "statemine.lab.runners.aioquic", str(config_path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=wall_limit_s,
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"wall-clock limit reached ({wall_limit_s} s)"}
    if proc.returncode != 0 or not result_path.exists():
        from ..extras import explain_missing_module

        tail = (proc.stderr or "").strip().splitlines()[-3:]
        return {
            "ok": False,
            "error": explain_missing_module(
                f"runner exited with status {proc.returncode}: {' | '.join(tail)}"
            ),
        }
    with open(result_path, encoding="utf-8") as f:
        return json.load(f)


if __name__ == "__main__":
    sys.exit(main())
