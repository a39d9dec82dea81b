"""Two network namespaces, each with one TUN device, for a real-time run.

Names (all start with :data:`PREFIX`, and carry the pid of the process that owns them, so
leftovers of a dead process can be found and removed):

* namespaces ``sm-<pid>-c`` (client) and ``sm-<pid>-s`` (server);
* TUN devices ``sm-<pid>-tc`` / ``sm-<pid>-ts``, created in the calling namespace (the fd
  stays with this process), then moved into their namespace;
* addresses :data:`CLIENT_ADDR` / :data:`SERVER_ADDR`, point-to-point on the TUN devices;
  no route exists to anything else, so traffic cannot leave the two namespaces: a packet a
  program sends reaches only the TUN fd this process reads.

:class:`Topology` is a context manager: the namespaces are removed on exit, also on an
exception; :func:`signals_raise` turns SIGTERM/SIGHUP into an exception so ``with`` blocks
unwind; after a SIGKILL :func:`statemine.tcp.cleanup` removes the namespaces of processes
that no longer run (the names are its convention: ``sm-<pid>-...``).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import signal
import socket
import struct
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Self

#: Prefix of every namespace, device and tracing instance statemine creates.
PREFIX = "sm-"
CLIENT_ADDR = "10.201.0.1"
SERVER_ADDR = "10.201.0.2"
#: MTU of the TUN devices, bytes (Ethernet's, so packet sizes match the virtual lab's).
MTU = 1500

_CLONE_NEWNET = 0x40000000
_TUNSETIFF = 0x400454CA
_IFF_TUN = 0x0001
_IFF_NO_PI = 0x1000


class SetupError(RuntimeError):
    """The namespaces or TUN devices could not be made (not root, no /dev/net/tun, ...)."""


def _ip(*args: str, netns: str | None = None) -> None:
    cmd = ["ip", *args] if netns is None else ["ip", "-n", netns, *args]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        raise SetupError(f"{' '.join(cmd)}: {proc.stderr.strip() or proc.returncode}")


def _no_ipv6(ns: str) -> None:
    """Turn IPv6 off in namespace ``ns`` before any device comes up there: otherwise the
    kernel sends router and multicast-listener solicitations through the path, which take
    random draws of the path model meant for the programs' packets."""
    cmd = ["ip", "netns", "exec", ns, "sysctl", "-q", "-w"]
    keys = ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"]
    proc = subprocess.run([*cmd, *keys], check=False, capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        raise SetupError(f"{' '.join(cmd + keys)}: {proc.stderr.strip() or proc.returncode}")


def open_tun(name: str) -> int:
    """A non-blocking fd of a new TUN device ``name`` (raw IP packets, no header)."""
    try:
        fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise SetupError(f"/dev/net/tun: {exc.strerror}") from None
    try:
        fcntl.ioctl(fd, _TUNSETIFF, struct.pack("16sH", name.encode(), _IFF_TUN | _IFF_NO_PI))
    except OSError as exc:
        os.close(fd)
        raise SetupError(f"TUNSETIFF {name}: {exc.strerror}") from None
    return fd


def names(pid: int) -> dict[str, str]:
    """The names a process ``pid`` uses: namespaces and TUN devices of each side."""
    return {
        "client_ns": f"{PREFIX}{pid}-c",
        "server_ns": f"{PREFIX}{pid}-s",
        "client_tun": f"{PREFIX}{pid}-tc",
        "server_tun": f"{PREFIX}{pid}-ts",
    }


@dataclass
class Topology:
    """The client and server namespaces and the TUN fds joining them (``with`` block)."""

    pid: int = field(default_factory=os.getpid)
    client_fd: int = -1
    server_fd: int = -1
    made: list[str] = field(default_factory=list)

    @property
    def client_ns(self) -> str:
        return names(self.pid)["client_ns"]

    @property
    def server_ns(self) -> str:
        return names(self.pid)["server_ns"]

    def __enter__(self) -> Self:
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _setup(self) -> None:
        n = names(self.pid)
        sides = (
            ("client", CLIENT_ADDR, SERVER_ADDR),
            ("server", SERVER_ADDR, CLIENT_ADDR),
        )
        for side, addr, peer in sides:
            ns, tun = n[f"{side}_ns"], n[f"{side}_tun"]
            _ip("netns", "add", ns)
            self.made.append(ns)
            _no_ipv6(ns)
            fd = open_tun(tun)
            setattr(self, f"{side}_fd", fd)
            _ip("link", "set", tun, "netns", ns)
            _ip("link", "set", "lo", "up", netns=ns)
            _ip("link", "set", tun, "mtu", str(MTU), netns=ns)
            _ip("addr", "add", addr, "peer", peer, "dev", tun, netns=ns)
            _ip("link", "set", tun, "up", netns=ns)

    def exec_argv(self, side: str) -> list[str]:
        """The argv prefix that runs a command in ``side``'s namespace."""
        return ["ip", "netns", "exec", self.client_ns if side == "client" else self.server_ns]

    def close(self) -> None:
        """Close the TUN fds (the devices go with them) and delete the namespaces."""
        for attr in ("client_fd", "server_fd"):
            fd = getattr(self, attr)
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, attr, -1)
        while self.made:
            ns = self.made.pop()
            with contextlib.suppress(SetupError, OSError, subprocess.SubprocessError):
                _ip("netns", "del", ns)


class Terminated(BaseException):
    """Raised in the main thread by :func:`signals_raise` on SIGTERM / SIGHUP."""


@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise :class:`Terminated` (SIGINT already
    raises KeyboardInterrupt), so ``with`` blocks clean up; the old handlers come back."""

    def handler(signum: int, frame: object) -> None:
        raise Terminated(f"signal {signum}")

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def inside(ns: str) -> Iterator[None]:
    """Run the block's socket creation in network namespace ``ns`` (this thread only)."""
    libc = ctypes.CDLL(None, use_errno=True)
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    try:
        if libc.setns(target, _CLONE_NEWNET) != 0:
            raise SetupError(f"setns {ns}: {os.strerror(ctypes.get_errno())}")
        try:
            yield
        finally:
            if libc.setns(own, _CLONE_NEWNET) != 0:  # never stay in the run's namespace
                raise SetupError(f"setns back: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(own)
        os.close(target)


def udp_socket(ns: str, addr: str, port: int) -> socket.socket:
    """A UDP socket bound to ``addr:port`` inside namespace ``ns`` (``port`` 0: any),
    inheritable (a harness subprocess gets its fd), used from this namespace."""
    with inside(ns):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((addr, port))
    s.set_inheritable(True)
    return s
