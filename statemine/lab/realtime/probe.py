"""Fidelity probe: a paced UDP flow through the real-time path, compared packet by packet
with the virtual-time model fed the same send times (docs/realtime.md, "Fidelity").

The sender (client namespace) sends ``count`` datagrams of ``size`` bytes (IP packets of
``size + 28``) at ``pps`` packets per second, each carrying its sequence number and its
send time (``time.monotonic()``); the receiver (server namespace) notes each arrival's time.
:func:`compare` replays the send times through a fresh :class:`statemine.lab.path.Link`
of the same config and seed: the model's arrival time of every packet, which the real
arrival should match up to the emulator's error (reading late, writing late, the kernel's
delivery). Both programs use the monotonic clock, shared by all namespaces.
:func:`measure` also has the model replayed at the emulator's own read times (its
record): the path without the sender's delay between timestamping a packet and the
packet reaching the path, which the machine's load can stretch to milliseconds.

``python -m statemine.lab.realtime.probe send|recv JSON`` are the two programs.
"""

from __future__ import annotations

import json
import math
import socket
import struct
import sys
import time
from typing import Any

import numpy as np
import pandas as pd

from ..path import Link, LinkConfig, direction_seed

_HEAD = struct.Struct("!Qd")
#: SO_TIMESTAMPNS (asm-generic/socket.h; Python 3.11's socket module lacks the name).
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
#: IPv4 + UDP headers, bytes: a datagram of n bytes is an IP packet of n + 28.
UDP_IP_OVERHEAD = 28


def send(opt: dict[str, Any]) -> dict:
    """Send the paced flow; returns the send times (monotonic seconds) in order.

    With ``hold = [k, s]`` the sender sleeps ``s`` seconds after sending packet ``k``, then
    catches up: every packet due meanwhile goes at once, a burst such as a sender
    preempted for that long makes (docs/realtime.md, "Fidelity")."""
    count, size, pps = int(opt["count"]), int(opt["size"]), float(opt["pps"])
    hold_after, hold_s = opt.get("hold") or (-1, 0.0)
    pad = b"\x00" * max(0, size - _HEAD.size)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    sock.connect((opt["addr"], int(opt["port"])))
    times = []
    start = time.monotonic() + 0.05
    for i in range(count):
        due = start + i / pps
        while (now := time.monotonic()) < due:
            if due - now > 0.0005:
                time.sleep(due - now - 0.0003)
        t = time.monotonic()
        try:
            sock.send(_HEAD.pack(i, t) + pad)
        except OSError:  # the host's own queue is full: the packet never reached the path
            t = math.nan
        times.append(t)
        if i == hold_after:
            time.sleep(float(hold_s))
    sock.close()
    return {"sent": times}


def recv(opt: dict[str, Any]) -> dict:
    """Receive until ``idle_s`` passes without a packet; returns (seq, arrival) pairs.

    Arrival is the kernel's receive timestamp (``SO_TIMESTAMPNS``, wall clock) moved to
    the monotonic clock, so the receiver's own scheduling delay does not count."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    offset = time.time() - time.monotonic()
    sock.bind((opt["addr"], int(opt["port"])))
    print(json.dumps({"listening": True}), flush=True)
    sock.settimeout(float(opt.get("first_timeout_s", 10)))
    seqs, arrivals = [], []
    try:
        while True:
            data, anc, _, _ = sock.recvmsg(65536, 64)
            stamp = next((d for lvl, typ, d in anc if typ == SO_TIMESTAMPNS), None)
            if stamp is None:
                arrivals.append(time.monotonic())
            else:
                sec, nsec = struct.unpack("qq", stamp[:16])
                arrivals.append(sec + nsec * 1e-9 - offset)
            seqs.append(_HEAD.unpack_from(data)[0])
            sock.settimeout(float(opt.get("idle_s", 1.0)))
    except TimeoutError:
        pass
    return {"seq": seqs, "arrival": arrivals}


def compare(
    sent: list[float],
    seq: list[int],
    arrival: list[float],
    link: dict,
    seed: int,
    size: int,
    t0: float,
    record: tuple[np.ndarray, np.ndarray] | None = None,
) -> pd.DataFrame:
    """One row per sent packet: its send time ``t`` (seconds since ``t0``, the emulator's
    origin), the model's arrival ``model`` (NaN: the model drops it) and the real
    ``real`` (NaN: not received); ``error = real - model`` (seconds).

    With ``record``, the emulator's (read time, scheduled write time) of each packet that
    left the sender (seconds since ``t0``, in send order; NaN: dropped), also ``read``,
    ``due`` and ``model_read``: the model's arrival of each packet offered when the
    emulator read it (NaN columns when the emulator read another number of packets than
    were sent)."""
    t = np.asarray(sent, dtype=float) - t0
    real = np.full(len(t), np.nan)
    real[np.asarray(seq, dtype=int)] = np.asarray(arrival, dtype=float) - t0
    pred = _replay(t, link, seed, size)
    table = pd.DataFrame({"t": t, "model": pred, "real": real, "error": real - pred})
    if record is not None:
        left = np.isfinite(t)
        read, due = np.full(len(t), np.nan), np.full(len(t), np.nan)
        if len(record[0]) == left.sum():
            read[left], due[left] = record
        table["read"], table["due"] = read, due
        table["model_read"] = _replay(read, link, seed, size)
    return table


def _replay(t: np.ndarray, link: dict, seed: int, size: int) -> np.ndarray:
    """The arrival times of a fresh up-direction :class:`Link` of ``link`` and ``seed``
    offered a packet of ``size`` bytes (plus headers) at each finite time of ``t`` (seconds
    since the emulator's origin, in order); NaN where dropped or not offered."""
    model = Link(LinkConfig.from_dict(link), direction_seed(seed, "up"))
    pred = np.full(len(t), np.nan)
    for i, ti in enumerate(t):
        if math.isfinite(ti):
            got = model.send(max(ti, 0.0), size + UDP_IP_OVERHEAD)
            pred[i] = np.nan if got is None else got
    return pred


def measure(
    link: dict,
    seed: int,
    pps: float,
    count: int,
    size: int = 1200,
    port: int = 19999,
    hold: tuple[int, float] | None = None,
) -> tuple[pd.DataFrame, dict]:
    """Run the probe through a real-time path whose up direction (client -> server) is
    ``link`` (a :class:`statemine.lab.path.LinkConfig` dict); the :func:`compare` table
    (with the emulator's record of the packets) and the emulator's counters (plus
    ``wall_s``). ``hold``: the sender pauses (packet index, seconds), see :func:`send`."""
    import subprocess

    from ..scenario import link_config
    from . import netns
    from .emulator import Emulator
    from .run import _env, _last_json

    quiet = link_config(1e9, 1 << 20, 0.0)  # the down direction: no effect on the probe
    t_start = time.monotonic()
    with netns.signals_raise(), netns.Topology() as topo:
        path = {"up": link, "down": quiet}
        emu = Emulator(topo.client_fd, topo.server_fd, path, seed, record=True).start()
        procs = []
        try:
            argv = [sys.executable, "-m", "statemine.lab.realtime.probe"]
            opt = {"addr": netns.SERVER_ADDR, "port": port}
            rx = subprocess.Popen(
                [*topo.exec_argv("server"), *argv, "recv", json.dumps(opt)],
                stdout=subprocess.PIPE,
                text=True,
                env=_env(),
            )
            procs.append(rx)
            assert rx.stdout is not None
            rx.stdout.readline()
            tx = subprocess.Popen(
                [
                    *topo.exec_argv("client"),
                    *argv,
                    "send",
                    json.dumps(dict(opt, count=count, size=size, pps=pps, hold=hold)),
                ],
                stdout=subprocess.PIPE,
                text=True,
                env=_env(),
            )
            procs.append(tx)
            sent = _last_json(tx.communicate()[0])["sent"]
            got = _last_json(rx.communicate()[0])
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            emu.stop()
    if emu.error is not None:
        raise RuntimeError(f"emulator failed: {emu.error!r}")
    rec = emu.record
    assert rec is not None
    up = np.frombuffer(rec.direction, np.int8) == 0
    record = np.frombuffer(rec.t_read)[up], np.frombuffer(rec.due)[up]
    table = compare(sent, got["seq"], got["arrival"], link, seed, size, emu.t0, record)
    stats = dict(emu.stats(), wall_s=time.monotonic() - t_start)
    return table, stats


def summary(table: pd.DataFrame, size: int) -> dict:
    """Agreement of the real path with the model (seconds, bits/s): delivered in both,
    only in one, the error's median / p99 / max, and both throughputs and mean delays.
    With the emulator's record (``model_read``), also ``read_model_only`` and
    ``read_real_only``: delivered only by the model fed the read times / only by the path
    (the drops without the sender's scheduling in them)."""
    both = table.dropna(subset=["model", "real"])
    model_ok, real_ok = table["model"].notna(), table["real"].notna()
    span = table["t"].max() - table["t"].min()
    err = both["error"].to_numpy()
    bits = 8.0 * (size + UDP_IP_OVERHEAD)
    read: dict[str, int] = {}
    if "model_read" in table:
        read_ok = table["model_read"].notna()
        read = {
            "read_model_only": int((read_ok & ~real_ok).sum()),
            "read_real_only": int((real_ok & ~read_ok).sum()),
        }
    return {
        "sent": len(table),
        "both": len(both),
        "model_only": int((model_ok & ~real_ok).sum()),
        "real_only": int((real_ok & ~model_ok).sum()),
        "error_p50_s": float(np.median(err)) if len(err) else math.nan,
        "error_p99_s": float(np.quantile(err, 0.99)) if len(err) else math.nan,
        "error_max_s": float(err.max()) if len(err) else math.nan,
        "offered_bps": len(table) * bits / span if span > 0 else math.nan,
        "model_bps": model_ok.sum() * bits / span if span > 0 else math.nan,
        "real_bps": real_ok.sum() * bits / span if span > 0 else math.nan,
        "model_delay_s": float((table["model"] - table["t"]).mean()),
        "real_delay_s": float((table["real"] - table["t"]).mean()),
        **read,
    }


def main(argv: list[str]) -> int:
    role, opt = argv[0], json.loads(argv[1])
    print(json.dumps(send(opt) if role == "send" else recv(opt)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
