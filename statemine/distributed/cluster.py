"""Where the work runs: a Dask client for ``--dask local:N`` or ``--dask tcp://HOST:PORT``.

``local:N`` starts N worker processes (one thread each, at most :data:`WORKER_MEMORY` bytes
each) with their scheduler on the loopback address, and stops them when the ``with`` block
ends; ``tcp://HOST:PORT`` connects to a running scheduler (whose workers must be able to
import statemine) and leaves it running.
"""

from __future__ import annotations

import logging
import re
import socket
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import StatemineError, UsageError

if TYPE_CHECKING:
    from dask.distributed import Client

#: Memory limit of each local worker, bytes (Dask spills, then pauses, then restarts a
#: worker that passes it).
WORKER_MEMORY = 2 * 1024**3
#: Most local workers ``local:N`` starts.
MAX_LOCAL_WORKERS = 256
#: Largest first message (bytes) taken from a peer before it is known to be a Dask scheduler:
#: a scheduler's handshake is a few hundred bytes, while the 8 bytes b"HTTP/1.1" that an HTTP
#: server sends first read as a length of 3.5e18 (Dask would try to allocate it).
MAX_HANDSHAKE_BYTES = 1 << 20
_LOCAL = re.compile(r"local:([0-9]{1,4})\Z")
_TCP = re.compile(r"tcp://[^\s/]+:([0-9]{1,5})\Z")


@dataclass(frozen=True)
class DaskSpec:
    """A parsed ``--dask`` value: ``workers`` local workers, or a scheduler ``address``."""

    workers: int = 0
    address: str | None = None


def parse_dask_spec(spec: str) -> DaskSpec:
    """``local:N`` (1 <= N <= :data:`MAX_LOCAL_WORKERS`) or ``tcp://HOST:PORT`` (1 <= PORT
    <= 65535).

    >>> parse_dask_spec("local:2")
    DaskSpec(workers=2, address=None)
    >>> parse_dask_spec("tcp://127.0.0.1:8786").address
    'tcp://127.0.0.1:8786'
    """
    local = _LOCAL.match(spec)
    if local and 1 <= int(local.group(1)) <= MAX_LOCAL_WORKERS:
        return DaskSpec(workers=int(local.group(1)))
    tcp = _TCP.match(spec)
    if tcp and 1 <= int(tcp.group(1)) <= 65535:
        return DaskSpec(address=spec)
    raise UsageError(
        f"--dask {spec!r}: give local:N (N workers on this machine, 1 to {MAX_LOCAL_WORKERS}) "
        "or tcp://HOST:PORT (a running Dask scheduler; PORT 1 to 65535)"
    )


@contextmanager
def dask_client(spec: str | DaskSpec, *, timeout: float = 10.0) -> Iterator[Client]:
    """A :class:`dask.distributed.Client` for ``spec`` (see :func:`parse_dask_spec`),
    closed (and a local cluster stopped) on exit. A scheduler not reached within
    ``timeout`` seconds raises :class:`StatemineError` (one line, no traceback)."""
    parsed = parse_dask_spec(spec) if isinstance(spec, str) else spec
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise UsageError("--dask needs dask.distributed: pip install 'statemine[dask]'") from None
    if parsed.address is None:
        try:
            cluster = LocalCluster(
                n_workers=parsed.workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address="127.0.0.1:0",
                memory_limit=WORKER_MEMORY,
                silence_logs=logging.CRITICAL,  # a task's error reaches the user once, here
            )
        except (OSError, RuntimeError, TimeoutError) as exc:
            raise StatemineError(
                f"--dask local:{parsed.workers}: the local Dask cluster did not start ({exc})"
            ) from None
        try:
            with Client(cluster) as client:
                yield client
        finally:
            cluster.close()
        return
    probe_scheduler(parsed.address, timeout)
    try:
        client = Client(parsed.address, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise StatemineError(
            f"--dask {parsed.address}: cannot reach the Dask scheduler within {timeout:g} s "
            f"({type(exc).__name__})"
        ) from None
    except Exception as exc:  # an untrusted peer: whatever it sent, one line, no traceback
        raise StatemineError(
            f"--dask {parsed.address}: not a Dask scheduler ({type(exc).__name__} during the "
            "handshake)"
        ) from None
    with client:
        yield client


def probe_scheduler(address: str, timeout: float) -> None:
    """Check, before Dask connects, that ``address`` (``tcp://HOST:PORT``) speaks first as a
    Dask scheduler does: within ``timeout`` seconds (connection refusals retried until then)
    it sends a handshake, an 8-byte length of at most :data:`MAX_HANDSHAKE_BYTES` followed
    by that many bytes of frames. Dask's own client writes first and then waits without a
    deadline, so a silent peer would hang it and an HTTP server's reply would be read as an
    exabyte-long message. Raises :class:`StatemineError` (one line) otherwise."""
    host, _, port = address[len("tcp://") :].rpartition(":")
    deadline = time.monotonic() + timeout
    sock = _connect(address, host.strip("[]"), int(port), deadline, timeout)
    with sock:
        head = _recv_exactly(sock, 8, deadline)
        if head is None or len(head) < 8:
            raise StatemineError(
                f"--dask {address}: not a Dask scheduler: "
                + (
                    f"it accepted the connection but sent nothing within {timeout:g} s"
                    if not head
                    else f"it sent only {head!r} within {timeout:g} s"
                )
            )
        (size,) = struct.unpack("<Q", head)  # Dask's framing: a little-endian uint64 length
        if not 16 <= size <= MAX_HANDSHAKE_BYTES:
            raise StatemineError(
                f"--dask {address}: not a Dask scheduler (its first bytes, {head!r}, are not "
                "a Dask message's length; is it an HTTP server or a dashboard port?)"
            )
        body = _recv_exactly(sock, size, deadline)
        (frames,) = struct.unpack_from("<Q", body or b"\0" * 8)
        if body is None or len(body) < size or 8 * (1 + frames) > size:
            raise StatemineError(
                f"--dask {address}: not a Dask scheduler (its first message is not Dask "
                f"frames, or did not arrive within {timeout:g} s)"
            )


def _connect(address: str, host: str, port: int, deadline: float, timeout: float) -> socket.socket:
    """A TCP connection to ``host:port``, connection refusals retried until ``deadline``."""
    while True:
        left = deadline - time.monotonic()
        try:
            return socket.create_connection((host, port), timeout=max(left, 0.01))
        except OSError as exc:
            if deadline - time.monotonic() <= 0.1:
                raise StatemineError(
                    f"--dask {address}: cannot reach the Dask scheduler within {timeout:g} s "
                    f"({type(exc).__name__})"
                ) from None
            time.sleep(0.1)


def _recv_exactly(sock: socket.socket, n: int, deadline: float) -> bytes | None:
    """Up to ``n`` bytes from ``sock``: fewer when the peer closes or ``deadline`` passes
    (None when nothing came)."""
    data = bytearray()
    while len(data) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        sock.settimeout(left)
        try:
            chunk = sock.recv(min(n - len(data), 1 << 16))
        except (TimeoutError, OSError):
            break
        if not chunk:
            break
        data += chunk
    return bytes(data) or None


def dashboard_link(client: Client) -> str | None:
    """The address of the client's dashboard (None when the scheduler serves none)."""
    try:
        return str(client.dashboard_link)
    except (KeyError, AttributeError):
        return None
