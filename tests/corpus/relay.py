"""A UDP relay on loopback that shapes one connection's path, for the corpus generators.

``python3 relay.py LISTEN_PORT SERVER_PORT RATE_BPS DELAY_S QUEUE_BYTES LOSS SEED``:
datagrams from a client to ``127.0.0.1:LISTEN_PORT`` go to ``127.0.0.1:SERVER_PORT``
after ``DELAY_S`` seconds; the server's answers go back to the client through a
bottleneck of ``RATE_BPS`` bits per second with a drop-tail queue of ``QUEUE_BYTES`` bytes
and random loss ``LOSS`` (a fraction, seeded), then the same delay. Runs until killed.
Loopback only: it binds 127.0.0.1 and talks to 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import heapq
import random
import select
import socket
import sys
import time


def main(argv: list[str]) -> None:
    listen, server = int(argv[0]), int(argv[1])
    rate, delay, queue_limit = float(argv[2]), float(argv[3]), int(argv[4])
    loss, rng = float(argv[5]), random.Random(int(argv[6]))
    front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    front.bind(("127.0.0.1", listen))
    back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    back.bind(("127.0.0.1", 0))
    back.connect(("127.0.0.1", server))
    print("ready", flush=True)  # run_pair.py starts the stack after this line
    client: tuple[str, int] | None = None
    pending: list[tuple[float, int, bytes, bool]] = []  # (due, seq, data, to_client)
    link_free = 0.0  # when the bottleneck finishes its queued bytes (monotonic seconds)
    seq = 0
    while True:
        wait = max(0.0, pending[0][0] - time.monotonic()) if pending else 1.0
        ready, _, _ = select.select([front, back], [], [], wait)
        now = time.monotonic()
        for sock in ready:
            try:
                data, addr = sock.recvfrom(65536)
            except ConnectionRefusedError:  # the server is not listening (yet)
                continue
            seq += 1
            if sock is front:
                client = addr
                heapq.heappush(pending, (now + delay, seq, data, False))
                continue
            backlog = max(0.0, link_free - now) * rate / 8  # bytes still queued
            if backlog + len(data) > queue_limit or rng.random() < loss:
                continue
            link_free = max(link_free, now) + len(data) * 8 / rate
            heapq.heappush(pending, (link_free + delay, seq, data, True))
        while pending and pending[0][0] <= time.monotonic():
            _, _, data, to_client = heapq.heappop(pending)
            if to_client and client is not None:
                front.sendto(data, client)
            elif not to_client:
                with contextlib.suppress(ConnectionRefusedError):  # not listening (yet)
                    back.send(data)


if __name__ == "__main__":
    main(sys.argv[1:])
