"""Leftover network namespaces and links of statemine runs.

Every namespace and network device statemine (``statemine lab`` in real time, the tests of
``statemine tcp record``) creates is named ``sm-<pid>-<role>``, ``<pid>`` being the
process that owns it (the convention of statemine/lab/realtime). A process killed outright
cannot remove them; :func:`remove_leftovers` does (``statemine tcp cleanup``): the
processes still in a namespace (the dead run's programs) are killed, since a namespace
lives on while a process is in it; then the namespace goes with every device in it; a
device still in the initial namespace is deleted there.
Names of running processes are left alone unless ``all_``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess

from ..fileio import alive

#: Prefix of statemine's namespaces and devices.
PREFIX = "sm-"
_NAME = re.compile(re.escape(PREFIX) + r"(?P<pid>\d+)-[A-Za-z0-9_.-]+\Z")


def _run(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=30)


def _stale(name: str, all_: bool) -> bool:
    m = _NAME.match(name)
    if m is None:
        return False
    pid = int(m["pid"])
    return pid != os.getpid() and (all_ or not alive(pid))


def namespaces() -> list[str]:
    """Names of the network namespaces (``ip netns list``)."""
    done = _run("ip", "netns", "list")
    return [line.split()[0] for line in done.stdout.splitlines() if line.strip()]


def links() -> list[str]:
    """Names of the network devices of this namespace."""
    done = _run("ip", "-o", "link", "show")
    names = []
    for line in done.stdout.splitlines():
        parts = line.split(":", 2)
        if len(parts) > 2:
            names.append(parts[1].strip().split("@")[0])
    return names


def leftovers(all_: bool = False) -> dict[str, list[str]]:
    """``namespaces`` and ``links`` named ``sm-<pid>-...`` whose process is gone."""
    return {
        "namespaces": [n for n in namespaces() if _stale(n, all_)],
        "links": [n for n in links() if _stale(n, all_)],
    }


def remove_leftovers(all_: bool = False) -> tuple[list[str], list[str]]:
    """Delete :func:`leftovers`; returns ``(removed, failed)`` descriptions."""
    removed: list[str] = []
    failed: list[str] = []
    found = leftovers(all_)
    for ns in found["namespaces"]:
        for pid in _run("ip", "netns", "pids", ns).stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
                removed.append(f"process {pid} in network namespace {ns}")
            except ProcessLookupError:  # ended meanwhile
                pass
            except OSError as exc:
                failed.append(f"process {pid} in network namespace {ns}: {exc.strerror}")
        ok = _run("ip", "netns", "del", ns).returncode == 0
        (removed if ok else failed).append(f"network namespace {ns}")
    for link in found["links"]:
        if link not in links():  # gone with its peer
            removed.append(f"network device {link}")
            continue
        ok = _run("ip", "link", "del", link).returncode == 0
        (removed if ok else failed).append(f"network device {link}")
    return removed, failed
