"""Each recorded socket's congestion controller, sampled while ``tcp record`` runs.

The tracepoints name no controller, and the host's default
(``net.ipv4.tcp_congestion_control``) is not what a socket uses when it set
``TCP_CONGESTION`` or lives in a network namespace with another default. So while the
recording runs, :class:`SocketWatch` asks ``ss -tinHOe`` in the host's network namespace
and in every named one (``/run/netns``, iproute2's ``ss -N``) every ``interval`` seconds for
the TCP sockets on the recorded ports: ``sk:`` is the socket's cookie (the ``sock_cookie``
``tcp_probe`` logs) and the controller is the word of the kernel's controller list in the
socket's ``-i`` details. A socket that lives shorter than one interval can be missed
(it then has no entry).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

NETNS_DIR = Path("/run/netns")


def parse_ss(text: str, controllers: set[str]) -> dict[str, str]:
    """``{cookie (hex): controller}`` of the sockets in ``ss -tinHOe`` output (one socket
    per line); a line without a cookie or a known controller gives nothing.

    >>> parse_ss("ESTAB 0 0 10.0.0.1:4 10.0.0.2:5 ino:9 sk:1a <-> ts sack cubic wscale:7,7",
    ...          {"cubic", "reno"})
    {'1a': 'cubic'}
    """
    out = {}
    for line in text.splitlines():
        tokens = line.split()
        cookie = next((t[3:] for t in tokens if t.startswith("sk:")), None)
        name = next((t for t in tokens if t in controllers), None)
        if cookie and name:
            out[cookie.lower().lstrip("0") or "0"] = name
    return out


def _controllers() -> set[str]:
    """The kernel's congestion controllers (available and allowed), ``reno`` always."""
    names = {"reno"}
    for f in ("tcp_available_congestion_control", "tcp_allowed_congestion_control"):
        with contextlib.suppress(OSError):
            names |= set((Path("/proc/sys/net/ipv4") / f).read_text().split())
    return names


def _port_filter(ports: Sequence[int]) -> list[str]:
    """ss's filter for sockets with one of ``ports`` at either end (none: all)."""
    terms: list[str] = []
    for p in ports:
        terms += [*(["or"] if terms else []), "sport", "=", f":{p}", "or", "dport", "=", f":{p}"]
    return terms


@dataclass
class SocketWatch:
    """``with SocketWatch(ports) as watch:`` samples the sockets until the block ends;
    ``watch.seen``: cookie (hex) -> ``{"congestion_control": name, "netns": name}``."""

    ports: Sequence[int] = ()
    interval: float = 0.05
    seen: dict[str, dict[str, str]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> SocketWatch:
        self._thread = threading.Thread(target=self._run, name="statemine-ss", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.sample()  # the last look

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        """One look at every network namespace."""
        controllers = _controllers()
        spaces = [""]
        with contextlib.suppress(OSError):
            spaces += sorted(os.listdir(NETNS_DIR))
        for ns in spaces:
            command = ["ss", *(["-N", ns] if ns else []), "-tinHOe", *_port_filter(self.ports)]
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                continue
            for cookie, name in parse_ss(done.stdout, controllers).items():
                self.seen.setdefault(cookie, {"congestion_control": name, "netns": ns})
