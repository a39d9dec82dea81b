"""The path model on a real clock: reads IP packets from the client's and the server's TUN
fds and writes each to the other side at the time :class:`statemine.lab.path.Link` says.

The model is the virtual-time lab's own code (:class:`statemine.lab.path.PathModel`, seeded the
same way): a packet read at real time ``t`` (seconds since the emulator started, monotonic
clock) is offered to the link of its direction with ``Link.send(t, len)``; the returned
arrival time is when it is written to the other TUN fd (``None``: dropped). Loss, tail
drop, rate, link traces, jitter (and the reordering it causes) and cross traffic are thus
exactly the model's; what real time adds is *lateness*: a packet is read some time after
the program sent it and written some time after it was due (the loop's wake-up error and
its work). :class:`Emulator` measures both per packet when ``record`` is on (docs/realtime.md).

The mobile client (``client.per_packet_cpu_s`` > 0) adds the virtual lab's network thread
on the down direction: packets wait in a socket buffer of ``socket_buffer_bytes``
(overflow dropped) and take a lognormal CPU time each (:class:`statemine.lab.variability.CpuTime`)
before the client's kernel receives them.

Units: seconds, bytes.
"""

from __future__ import annotations

import errno
import heapq
import os
import select
import threading
import time
from array import array
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..path import PathModel
from ..variability import CpuTime

#: Default socket receive buffer of the mobile client's network thread, bytes (rmem_default).
DEFAULT_SOCKET_BUFFER_BYTES = 212_992
#: Longest the loop sleeps without looking at its stop flag, s.
POLL_S = 0.05
#: SCHED_FIFO priority of the emulator's thread (1..99; low: above every ordinary thread).
FIFO_PRIORITY = 10
_WRITE, _ARRIVE = 0, 1
UP, DOWN = 0, 1


@dataclass
class Record:
    """Per-packet record (``record=True``): direction (0 up, 1 down), read time, size,
    the model's arrival time (NaN: dropped) and the time it was written (NaN: dropped)."""

    direction: array = field(default_factory=lambda: array("b"))
    t_read: array = field(default_factory=lambda: array("d"))
    nbytes: array = field(default_factory=lambda: array("l"))
    due: array = field(default_factory=lambda: array("d"))
    written: array = field(default_factory=lambda: array("d"))


@dataclass
class CpuStage:
    """The mobile client's network thread: FIFO, one CPU time per packet, a byte-bounded
    socket buffer in front of it (seconds, bytes)."""

    cpu: CpuTime
    buffer_bytes: int
    free_at: float = 0.0
    dropped: int = 0
    _waiting: deque = field(default_factory=deque)  # (start time, bytes) of queued packets
    _queued: int = 0

    def arrive(self, t: float, nbytes: int) -> float | None:
        """A packet reaches the socket at ``t``: when the thread has processed it, or None."""
        q = self._waiting
        while q and q[0][0] <= t:
            self._queued -= q.popleft()[1]
        if self._queued + nbytes > self.buffer_bytes:
            self.dropped += 1
            return None
        start = max(t, self.free_at)
        self.free_at = start + self.cpu.draw()
        q.append((start, nbytes))
        self._queued += nbytes
        return self.free_at


class Emulator:
    """Joins two TUN fds through a :class:`statemine.lab.path.Path` on a real clock.

    ``run()`` loops until :meth:`stop`; use :meth:`start` to run it in a thread. Counters:
    ``packets_in`` per direction, ``max_late_s`` (the latest a packet was written after
    its due time), ``cpu_s`` (the loop thread's CPU time, once stopped), and the path's own
    :class:`statemine.lab.path.LinkStats`.
    """

    def __init__(
        self,
        client_fd: int,
        server_fd: int,
        path: Mapping[str, Any],
        seed: int,
        client: Mapping[str, Any] | None = None,
        record: bool = False,
    ) -> None:
        self.fds = (client_fd, server_fd)
        self.path = PathModel.from_config(path, seed)
        client = client or {}
        cpu_s = float(client.get("per_packet_cpu_s") or 0.0)
        self.cpu = (
            CpuStage(
                CpuTime(cpu_s, float(client.get("per_packet_cpu_cv") or 0.0), seed),
                int(client.get("socket_buffer_bytes") or DEFAULT_SOCKET_BUFFER_BYTES),
            )
            if client.get("profile") == "mobile" and cpu_s > 0
            else None
        )
        self.record = Record() if record else None
        self.packets_in = [0, 0]
        self.write_errors = 0
        self.max_late_s = 0.0
        self._heap: list[tuple[float, int, int, int, bytes, int]] = []
        self._seq = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.t0 = time.monotonic()
        self.error: BaseException | None = None
        self.fifo = False
        self.cpu_s = 0.0

    def now(self) -> float:
        """Seconds since the emulator was made (the model's clock)."""
        return time.monotonic() - self.t0

    # -- one packet -------------------------------------------------------------------
    def _push(self, t: float, kind: int, fd: int, data: bytes, idx: int) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, kind, fd, data, idx))

    def _offer(self, direction: int, data: bytes, t: float) -> None:
        link = self.path.down if direction == DOWN else self.path.up
        self.packets_in[direction] += 1
        due = link.send(t, len(data))
        idx = -1
        rec = self.record
        if rec is not None:
            idx = len(rec.t_read)
            rec.direction.append(direction)
            rec.t_read.append(t)
            rec.nbytes.append(len(data))
            rec.due.append(float("nan") if due is None else due)
            rec.written.append(float("nan"))
        if due is None:
            return
        out = self.fds[0] if direction == DOWN else self.fds[1]
        kind = _ARRIVE if (direction == DOWN and self.cpu is not None) else _WRITE
        self._push(due, kind, out, data, idx)

    def _fire(self, now: float) -> None:
        heap, rec = self._heap, self.record
        while heap and heap[0][0] <= now:
            due, _, kind, fd, data, idx = heapq.heappop(heap)
            if kind == _ARRIVE:
                assert self.cpu is not None  # _ARRIVE events exist only with a CPU stage
                done = self.cpu.arrive(due, len(data))
                if done is not None:
                    self._push(done, _WRITE, fd, data, idx)
                elif rec is not None and idx >= 0:
                    rec.due[idx] = float("nan")
                continue
            try:
                os.write(fd, data)
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.ENOBUFS, errno.EIO, errno.EINVAL):
                    raise
                self.write_errors += 1
                continue
            t = self.now()
            late = t - due
            self.max_late_s = max(self.max_late_s, late)
            if rec is not None and idx >= 0:
                rec.written[idx] = t
                rec.due[idx] = due

    # -- the loop ---------------------------------------------------------------------
    def run(self) -> None:
        """Forward packets until :meth:`stop` (or an error, kept in ``error``).

        The calling thread asks for the real-time scheduling class (``SCHED_FIFO``,
        priority :data:`FIFO_PRIORITY`): on a loaded machine an ordinary thread is woken
        up to milliseconds late. ``fifo`` says whether it got it (root only). The loop
        sleeps in ``select`` whenever nothing is due, so it cannot starve the machine.
        """
        cfd = self.fds[0]
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(FIFO_PRIORITY))
            self.fifo = True
        except (OSError, AttributeError):
            self.fifo = False
        try:
            while not self._stop.is_set():
                now = self.now()
                self._fire(now)
                timeout = POLL_S
                if self._heap:
                    timeout = min(timeout, max(0.0, self._heap[0][0] - self.now()))
                ready, _, _ = select.select(self.fds, (), (), timeout)
                for fd in ready:
                    direction = UP if fd == cfd else DOWN
                    while True:
                        try:
                            data = os.read(fd, 65536)
                        except BlockingIOError:
                            break
                        self._offer(direction, data, self.now())
        except BaseException as exc:  # kept for the caller (stop() and the run check it)
            self.error = exc
        finally:
            self.cpu_s = time.thread_time()

    def start(self) -> Emulator:
        """Run the loop in a daemon thread."""
        self._thread = threading.Thread(target=self.run, name="statemine-emulator", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the loop (and wait for its thread)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def stats(self) -> dict:
        """Counters: packets in per direction, the path's drops, write errors, max lateness."""
        d, u = self.path.down.stats, self.path.up.stats
        return {
            "packets_up": self.packets_in[UP],
            "packets_down": self.packets_in[DOWN],
            "packets_sent": self.path.sent,
            "packets_dropped": self.path.dropped + (self.cpu.dropped if self.cpu else 0),
            "down_lost": d.lost,
            "down_tail_dropped": d.tail_dropped,
            "up_dropped": u.dropped,
            "cross_sent": d.cross_sent,
            "cpu_dropped": self.cpu.dropped if self.cpu else 0,
            "write_errors": self.write_errors,
            "max_late_s": self.max_late_s,
            "sched_fifo": self.fifo,
            "cpu_s": self.cpu_s,
        }
