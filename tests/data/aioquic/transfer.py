"""A sans-IO aioquic transfer in virtual time, for tests/test_aioquic_patches.py.

Run with the (patched) aioquic first on PYTHONPATH:

    python transfer.py LOG SIZE_BYTES SEED [ALGORITHM]

The client opens one stream and asks for SIZE_BYTES; the server sends them and FIN; the
client closes the connection. Both ends log to LOG through logging.getLogger("quic") at
INFO with time = the virtual `now`. The path (each direction): 20 Mbit/s bottleneck with a
30 kB tail-drop buffer, 20 ms one-way delay, 0.5 % random loss, and a 600 ms blackout
starting at 1.0 s (every packet dropped) so a PTO fires. Prints one JSON line: bytes
received, the virtual end time and datagrams dropped.
"""

import datetime
import heapq
import json
import logging
import os
import random
import sys
import tempfile

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from aioquic.quic import events
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection

RATE_BPS = 20e6
BUFFER_BYTES = 30000
DELAY_S = 0.020
LOSS = 0.005
BLACKOUT = (1.0, 1.6)
TIME_LIMIT_S = 60.0


def write_certificate(directory):
    """A throw-away self-signed EC certificate; returns (cert path, key path)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime(2024, 1, 1)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(1)
        .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=36500))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path = os.path.join(directory, "cert.pem")
    key_path = os.path.join(directory, "key.pem")
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return cert_path, key_path


class Link:
    """One direction: loss, tail-drop bottleneck queue, fixed delay (seconds, bytes)."""

    def __init__(self, rng):
        self.rng = rng
        self.free_at = 0.0
        self.queue = []  # departure times and sizes of queued datagrams
        self.dropped = 0

    def send(self, now, size):
        """The delivery time of a datagram sent at `now`, or None when dropped."""
        self.queue = [(t, n) for t, n in self.queue if t > now]
        lost = self.rng.random() < LOSS or BLACKOUT[0] <= now < BLACKOUT[1]
        if lost or sum(n for _, n in self.queue) + size > BUFFER_BYTES:
            self.dropped += 1
            return None
        depart = max(now, self.free_at) + 8 * size / RATE_BPS
        self.free_at = depart
        self.queue.append((depart, size))
        return depart + DELAY_S


def main():
    log_path, size, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    algorithm = sys.argv[4] if len(sys.argv) > 4 else None
    clock = {"now": 0.0}

    class VirtualTime(logging.Formatter):
        def format(self, record):
            return "%.6f %s:%s %s" % (clock["now"], record.levelname, record.name, record.getMessage())

    handler = logging.FileHandler(log_path, mode="w")
    handler.setFormatter(VirtualTime())
    logging.getLogger("quic").addHandler(handler)
    logging.getLogger("quic").setLevel(logging.INFO)

    tmp = tempfile.mkdtemp()
    cert, key = write_certificate(tmp)
    extra = {"congestion_control_algorithm": algorithm} if algorithm else {}
    client_cfg = QuicConfiguration(is_client=True, alpn_protocols=["statemine"], **extra)
    client_cfg.verify_mode = 0  # ssl.CERT_NONE
    server_cfg = QuicConfiguration(is_client=False, alpn_protocols=["statemine"], **extra)
    server_cfg.load_cert_chain(cert, key)

    rng = random.Random(seed)
    links = {"client": Link(rng), "server": Link(rng)}  # keyed by sender
    addr = {"client": ("10.0.0.1", 4433), "server": ("10.0.0.2", 4433)}
    client = QuicConnection(configuration=client_cfg)
    odcid = getattr(client, "original_destination_connection_id", None) or client._original_destination_connection_id
    server = QuicConnection(configuration=server_cfg, original_destination_connection_id=odcid)
    conns = {"client": client, "server": server}
    peer = {"client": "server", "server": "client"}
    heap, seq = [], [0]
    timer_gen = {"client": 0, "server": 0}
    fired_at = {"client": -1.0, "server": -1.0}
    received = [0]
    done = [False]

    def push(t, *item):
        seq[0] += 1
        heapq.heappush(heap, (t, seq[0]) + item)

    def after_input(name, now):
        conn = conns[name]
        ev = conn.next_event()
        while ev is not None:
            if isinstance(ev, events.StreamDataReceived):
                if name == "server" and ev.end_stream:
                    conn.send_stream_data(ev.stream_id, b"\x00" * size, end_stream=True)
                elif name == "client":
                    received[0] += len(ev.data)
                    if ev.end_stream and not done[0]:
                        done[0] = True
                        conn.close()
            ev = conn.next_event()
        for data, _ in conn.datagrams_to_send(now=now):
            at = links[name].send(now, len(data))
            if at is not None:
                push(at, "deliver", peer[name], data)
        timer = conn.get_timer()
        timer_gen[name] += 1
        if timer is not None:
            if timer <= fired_at[name]:
                # aioquic's loss time (sent_time + delay) minus the delay can round below
                # sent_time, so the same deadline comes back: a real clock has moved on
                timer = fired_at[name] + 1e-6
            push(max(timer, now), "timer", name, timer_gen[name])

    client.connect(addr["server"], now=0.0)
    client.send_stream_data(0, b"GET\n", end_stream=True)
    after_input("client", 0.0)
    while heap:
        now, _, kind, name, payload = heapq.heappop(heap)
        if now > TIME_LIMIT_S:
            break
        clock["now"] = now
        if kind == "deliver":
            conns[name].receive_datagram(payload, addr[peer[name]], now=now)
        elif payload != timer_gen[name]:
            continue  # superseded timer
        else:
            fired_at[name] = now
            conns[name].handle_timer(now=now)
        after_input(name, now)
        if done[0] and all(c._state.name == "TERMINATED" for c in conns.values()):
            break
    handler.close()
    print(json.dumps({"received": received[0], "end": clock["now"],
                      "dropped": links["server"].dropped + links["client"].dropped}))


if __name__ == "__main__":
    main()
