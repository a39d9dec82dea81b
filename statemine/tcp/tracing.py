"""A tracing instance of statemine's own: what ``statemine tcp record`` changes, and undoes.

Everything is made inside a tracefs instance ``statemine-<pid>`` (the global tracing
instance and others' instances are never written): its ring buffer size
(``buffer_size_kb``, per CPU), ``trace_clock`` (``mono``), a filter on the two events
(``sport``/``dport``) and their ``enable``. Removing the instance undoes all of it. tracefs
is used where it is already mounted (not on another statemine run's temporary mount, which
that run unmounts when it ends); otherwise it is mounted on a temporary folder
``/tmp/statemine-tracefs-<pid>-XXXX`` and unmounted, and the folder removed, at the end.
:class:`Instance` does both in ``__exit__``, also when an exception (a signal turned into
one) ends the block. :func:`leftovers` and :func:`remove_leftovers` find and remove what a
killed process left (``statemine tcp cleanup``).
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ..errors import StatemineError
from ..fileio import alive

#: The two events recorded (tracefs paths under ``events/``).
EVENTS = ("tcp/tcp_cong_state_set", "tcp/tcp_probe")
#: Enabled where the kernel has it: each socket's TCP state changes, whose handshake tells
#: sockets that reuse a 4-tuple apart (parse/ftrace.py).
OPTIONAL_EVENTS = ("sock/inet_sock_set_state",)
#: Prefix of statemine's tracing instances (``statemine-<pid>``).
INSTANCE_PREFIX = "statemine-"
#: Prefix of the folders statemine mounts tracefs on (``statemine-tracefs-<pid>-XXXX``).
MOUNT_PREFIX = "statemine-tracefs-"
#: Ring buffer per CPU by default, KiB: ~100 bytes per event in the buffer, so 16 MiB hold
#: 160,000 events per CPU between two reads (the buffer is drained continuously).
DEFAULT_BUFFER_KB = 16384
_INSTANCE = re.compile(re.escape(INSTANCE_PREFIX) + r"(?P<pid>\d+)\Z")
_MOUNT = re.compile(re.escape(MOUNT_PREFIX) + r"(?P<pid>\d+)-[^/]*\Z")


class TracingError(StatemineError):
    """Tracing cannot be set up here (not root, no tracefs, no such tracepoint)."""


def tracefs_mounts() -> list[Path]:
    """Mount points of tracefs, in /proc/mounts order (octal escapes decoded)."""
    out = []
    with open("/proc/mounts", encoding="utf-8") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) > 2 and parts[2] == "tracefs":
                out.append(Path(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), parts[1])))
    return out


def port_filter(ports: Sequence[int]) -> str:
    """The tracepoint filter keeping events of sockets with one of ``ports`` at either end
    ("" for none: every TCP socket).

    >>> port_filter([5201, 80])
    'sport == 5201 || dport == 5201 || sport == 80 || dport == 80'
    """
    for p in ports:
        if not 0 < int(p) < 65536:
            raise TracingError(f"port {p} is not a TCP port (1..65535)")
    return " || ".join(f"sport == {int(p)} || dport == {int(p)}" for p in ports)


@dataclass
class Instance:
    """``with Instance(ports) as inst:`` records the two TCP events into the instance's ring
    buffer; :meth:`drain_to` copies them (``trace_pipe``: consumed as read) to a file on a
    background thread until :meth:`stop`. ``buffer_kb``: ring buffer per CPU (KiB)."""

    ports: Sequence[int] = ()
    buffer_kb: int = DEFAULT_BUFFER_KB
    name: str = field(default_factory=lambda: f"{INSTANCE_PREFIX}{os.getpid()}")
    root: Path | None = None
    dir: Path | None = None
    mounted: Path | None = None
    _reader: threading.Thread | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _error: list[BaseException] = field(default_factory=list)

    def __enter__(self) -> Instance:
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _setup(self) -> None:
        if os.geteuid() != 0:
            raise TracingError("recording kernel tracepoints needs root")
        if self.buffer_kb < 64:
            raise TracingError(f"buffer of {self.buffer_kb} KiB per CPU is too small (>= 64)")
        filt = port_filter(self.ports)
        self.root = self._tracefs()
        for ev in EVENTS:
            if not (self.root / "events" / ev).is_dir():
                raise TracingError(f"this kernel has no tracepoint {ev.replace('/', ':')}")
        d = self.root / "instances" / self.name
        try:
            d.mkdir()
        except OSError as exc:
            raise TracingError(f"cannot create the tracing instance {d}: {exc}") from None
        self.dir = d
        _write(d / "tracing_on", "0")
        _write(d / "buffer_size_kb", str(self.buffer_kb))
        _write(d / "trace_clock", "mono")
        for ev in (*EVENTS, *OPTIONAL_EVENTS):
            if not (self.root / "events" / ev).is_dir():
                continue  # an optional one this kernel lacks
            if filt:
                _write(d / "events" / ev / "filter", filt)
            _write(d / "events" / ev / "enable", "1")

    def _tracefs(self) -> Path:
        """A tracefs mount to use: an existing one not made by another statemine run, or
        one mounted here."""
        for m in tracefs_mounts():
            if not m.name.startswith(MOUNT_PREFIX) and (m / "instances").is_dir():
                return m
        tmp = Path(tempfile.mkdtemp(prefix=f"{MOUNT_PREFIX}{os.getpid()}-"))
        done = subprocess.run(
            ["mount", "-t", "tracefs", "nodev", str(tmp)], capture_output=True, text=True
        )
        if done.returncode != 0:
            tmp.rmdir()
            raise TracingError(f"cannot mount tracefs: {done.stderr.strip() or done.returncode}")
        self.mounted = tmp
        return tmp

    def start(self) -> None:
        """Turn recording on."""
        assert self.dir is not None
        _write(self.dir / "tracing_on", "1")

    def drain_to(self, out: BinaryIO) -> None:
        """Copy ``trace_pipe`` to ``out`` on a thread until :meth:`stop` (then to its end)."""
        assert self.dir is not None
        fd = os.open(self.dir / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)

        def run() -> None:
            try:
                with contextlib.closing(_Fd(fd)):
                    _copy(fd, out, self._stop)
            except BaseException as exc:  # handed to stop()
                self._error.append(exc)

        self._reader = threading.Thread(target=run, name="statemine-trace-pipe", daemon=True)
        self._reader.start()

    def stop(self) -> None:
        """Turn recording off and wait for the reader to empty the buffer."""
        if self.dir is not None:
            with contextlib.suppress(OSError):
                _write(self.dir / "tracing_on", "0")
        self._stop.set()
        if self._reader is not None:
            self._reader.join()
            self._reader = None
        if self._error:
            raise self._error.pop()

    def overruns(self) -> dict[int, dict[str, int]]:
        """Per CPU, the ring buffer's counters of events lost (``overrun``: overwritten,
        ``dropped events``: not recorded) from ``per_cpu/cpuN/stats``."""
        assert self.dir is not None
        out = {}
        for stats in sorted((self.dir / "per_cpu").glob("cpu*/stats")):
            counts = {}
            for line in stats.read_text().splitlines():
                key, _, value = line.partition(":")
                if key.strip() in ("overrun", "dropped events", "entries", "read events"):
                    with contextlib.suppress(ValueError):
                        counts[key.strip()] = int(value.split()[0])
            out[int(stats.parent.name[3:])] = counts
        return out

    def close(self) -> None:
        """Stop, remove the instance (every setting in it goes with it) and unmount what
        was mounted here. Safe to call twice."""
        self._stop.set()
        if self._reader is not None:
            self._reader.join(timeout=5)
            self._reader = None
        if self.dir is not None:
            _remove_instance(self.dir)
            self.dir = None
        if self.mounted is not None:
            _unmount(self.mounted)
            self.mounted = None


class _Fd:
    def __init__(self, fd: int) -> None:
        self.fd = fd

    def close(self) -> None:
        os.close(self.fd)


def _copy(fd: int, out: BinaryIO, stop: threading.Event) -> None:
    """Copy what ``fd`` (non-blocking) yields to ``out`` until ``stop`` is set and nothing
    is left."""
    while True:
        stopping = stop.is_set()
        select.select([fd], [], [], 0.1)
        got = False
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except BlockingIOError:
                break
            if not data:
                break
            out.write(data)
            got = True
        if stopping and not got:  # tracing was off before stop: nothing more will come
            out.flush()
            return


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as exc:
        raise TracingError(f"{path}: cannot write {text!r}: {exc.strerror or exc}") from None


def _remove_instance(d: Path) -> bool:
    """Turn an instance off and remove it; False when it could not be removed."""
    with contextlib.suppress(OSError):
        (d / "tracing_on").write_text("0")
    try:
        d.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _unmount(path: Path) -> bool:
    done = subprocess.run(["umount", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        return False
    with contextlib.suppress(OSError):
        path.rmdir()
    return True


def leftovers(all_: bool = False) -> dict[str, list[Path]]:
    """What dead statemine processes left: ``instances`` (``statemine-<pid>`` on any
    tracefs mount) and ``mounts`` (``statemine-tracefs-<pid>-*``); with ``all_`` also those
    of running processes (but never this one's)."""

    def stale(pid: str) -> bool:
        return int(pid) != os.getpid() and (all_ or not alive(int(pid)))

    mounts = tracefs_mounts()
    instances = [
        d
        for m in mounts
        if (m / "instances").is_dir()
        for d in sorted((m / "instances").iterdir())
        if (match := _INSTANCE.match(d.name)) and stale(match["pid"])
    ]
    ours = [m for m in mounts if (match := _MOUNT.match(m.name)) and stale(match["pid"])]
    return {"instances": instances, "mounts": ours}


def remove_leftovers(all_: bool = False) -> tuple[list[str], list[str]]:
    """Remove :func:`leftovers` (instances first, then mounts); returns ``(removed,
    failed)`` descriptions. When tracefs is not mounted anywhere it is mounted for the
    look and unmounted after."""
    removed: list[str] = []
    failed: list[str] = []
    looked: Path | None = None
    if not tracefs_mounts():
        looked = Path(tempfile.mkdtemp(prefix=f"{MOUNT_PREFIX}{os.getpid()}-"))
        if subprocess.run(["mount", "-t", "tracefs", "nodev", str(looked)]).returncode != 0:
            looked.rmdir()
            return removed, failed
    try:
        found = leftovers(all_)
        seen = set()
        for d in found["instances"]:
            key = d.name  # one instance shows under every mount point
            if key in seen:
                continue
            seen.add(key)
            (removed if _remove_instance(d) else failed).append(f"tracing instance {d.name}")
        for m in found["mounts"]:
            (removed if _unmount(m) else failed).append(f"tracefs mount {m}")
    finally:
        if looked is not None:
            _unmount(looked)
    return removed, failed
