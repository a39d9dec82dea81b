"""The kernel-TCP programs of a real-time run: a server that sends objects and a client
that asks for them (one connection; ``GET <size>\\n`` per object, sent at once, answered in
order like HTTP/1.1 pipelining), each setting ``TCP_CONGESTION`` on its own socket.

``python -m statemine.lab.realtime.tcpapp server|client JSON`` (JSON: the options below)
prints one JSON line with its measurements. Times are ``time.monotonic()`` seconds (the
clock ftrace's ``mono`` trace clock reads, so they line up with the kernel's trace).

* server: ``{"addr", "port", "cc"}``; serves one connection, then prints ``tcp_info``
  figures of its socket (retransmitted segments, smoothed and minimum RTT, cwnd).
* client: ``{"addr", "port", "cc", "count", "size", "read_rate_bps", "read_rate_cv",
  "read_rate_interval_s", "seed", "connect_timeout_s"}``; prints ``start`` (before
  connect), ``connected``, ``done`` (the last byte consumed: the page-load time is
  ``done - start``) and ``bytes``. With ``read_rate_bps`` the application consumes data at
  that rate (:class:`statemine.lab.variability.ReadRate`), so a full receive buffer holds
  the sender back through TCP's receive window, like a slow phone.
"""

from __future__ import annotations

import json
import socket
import struct
import sys
import time
from typing import Any

from ..variability import ReadRate

#: struct tcp_info (linux/tcp.h) up to tcpi_total_retrans: the fields read here.
_TCP_INFO = struct.Struct("7B x 24I")
_CHUNK = 65536


def tcp_info(sock: socket.socket) -> dict:
    """Figures of ``sock``'s ``TCP_INFO`` (RTTs in seconds, cwnd in segments)."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    f = _TCP_INFO.unpack_from(raw)
    # 8 bytes (tcpi_state .. the bit fields), then u32s from tcpi_rto (index 0) on
    u = f[7:]
    return {
        "rtt_s": u[15] / 1e6,
        "rttvar_s": u[16] / 1e6,
        "snd_cwnd": u[18],
        "total_retrans": u[23],
        "snd_mss": u[2],
    }


def _set_cc(sock: socket.socket, cc: str) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())


def serve(opt: dict[str, Any]) -> dict:
    """Accept one connection, answer its requests, return the server socket's figures."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as lsock:
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        _set_cc(lsock, opt["cc"])
        lsock.bind((opt["addr"], int(opt["port"])))
        lsock.listen(1)
        print(json.dumps({"listening": True}), flush=True)
        lsock.settimeout(float(opt.get("accept_timeout_s", 30)))
        conn, _ = lsock.accept()
    with conn:
        conn.settimeout(None)
        buf = b""
        sent = 0
        payload = b"\x00" * _CHUNK
        while True:
            data = conn.recv(4096)
            if not data:
                break
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                size = int(line.split()[1])
                left = size
                while left > 0:
                    n = conn.send(payload[: min(left, _CHUNK)])
                    left -= n
                    sent += n
        info = tcp_info(conn)
        info.update(sent=sent, cc=conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16))
        info["cc"] = info["cc"].rstrip(b"\x00").decode()
        info["sport"] = conn.getsockname()[1]
        return info


def fetch(opt: dict[str, Any]) -> dict:
    """Connect, request ``count`` objects of ``size`` bytes, read them all (at the read
    rate when given); the times of the connection."""
    count, size = int(opt["count"]), int(opt["size"])
    total = count * size
    rate = None
    if opt.get("read_rate_bps"):
        rate = ReadRate(
            float(opt["read_rate_bps"]),
            float(opt.get("read_rate_cv") or 0.0),
            float(opt.get("read_rate_interval_s") or 0.1),
            int(opt.get("seed") or 0),
        )
    start = time.monotonic()
    deadline = start + float(opt.get("connect_timeout_s", 10))
    while True:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        _set_cc(sock, opt["cc"])
        try:
            sock.connect((opt["addr"], int(opt["port"])))
            break
        except (ConnectionRefusedError, TimeoutError):
            sock.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    with sock:
        connected = time.monotonic()
        sock.sendall(b"".join(b"GET %d\n" % size for _ in range(count)))
        got = 0
        busy_until = connected  # the application consumes data until then
        while got < total:
            data = sock.recv(min(_CHUNK, total - got))
            if not data:
                raise ConnectionError(f"connection closed after {got} of {total} bytes")
            got += len(data)
            if rate is not None:
                now = time.monotonic()
                begin = max(now, busy_until)
                busy_until = begin + 8.0 * len(data) / rate.at(begin - start)
                pause = busy_until - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
        done = max(time.monotonic(), busy_until)
        sock.shutdown(socket.SHUT_WR)
        return {
            "start": start,
            "connected": connected,
            "done": done,
            "bytes": got,
            "sport": sock.getsockname()[1],
        }


def main(argv: list[str]) -> int:
    role, opt = argv[0], json.loads(argv[1])
    result = serve(opt) if role == "server" else fetch(opt)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
