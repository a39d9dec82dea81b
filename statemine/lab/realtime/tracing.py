"""A tracing instance of its own for one real-time run: ``tcp:tcp_cong_state_set`` and
``tcp:tcp_probe`` filtered to one port, ``trace_clock`` ``mono``, read as text at the end.

The instance is ``statemine-<pid>`` under ``<tracefs>/instances/``; the global tracing
instance is never touched. tracefs is used where it is mounted (``/sys/kernel/tracing``
or any other mount point in /proc/mounts); otherwise it is mounted on a temporary
directory ``statemine-tracefs-*`` and unmounted at the end. ``with`` removes the instance
(and the mount) also on an exception.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Self

from .netns import SetupError

EVENTS = ("tcp/tcp_cong_state_set", "tcp/tcp_probe")
#: Ring buffer per CPU, KiB: a 10 MB transfer makes about 15,000 tcp_probe events of
#: ~300 bytes of text (~100 bytes binary) each, well inside it.
BUFFER_KB = 16384


def tracefs_mounts() -> list[Path]:
    """Mount points of tracefs, from /proc/mounts."""
    out = []
    with open("/proc/mounts", encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 2 and parts[2] == "tracefs":
                out.append(Path(parts[1]))
    return out


class Instance:
    """``with Instance(port) as inst: ...; text = inst.read()``: records the two TCP events
    of connections on ``port`` (source or destination) from ``__enter__`` on."""

    def __init__(self, port: int, name: str | None = None) -> None:
        self.port = int(port)
        self.name = name or f"statemine-{os.getpid()}"
        self.root: Path | None = None
        self._mounted: Path | None = None
        self.dir: Path | None = None

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
        mounts = [m for m in tracefs_mounts() if (m / "instances").is_dir()]
        if mounts:
            self.root = mounts[0]
        else:
            tmp = Path(tempfile.mkdtemp(prefix="statemine-tracefs-"))
            proc = subprocess.run(
                ["mount", "-t", "tracefs", "nodev", str(tmp)],
                check=False,
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                tmp.rmdir()
                raise SetupError(f"cannot mount tracefs: {proc.stderr.strip()}")
            self._mounted = self.root = tmp
        for ev in EVENTS:
            if not (self.root / "events" / ev).is_dir():
                raise SetupError(f"this kernel has no tracepoint {ev.replace('/', ':')}")
        d = self.root / "instances" / self.name
        d.mkdir()
        self.dir = d
        (d / "buffer_size_kb").write_text(str(BUFFER_KB))
        (d / "trace_clock").write_text("mono")
        filt = f"sport == {self.port} || dport == {self.port}"
        for ev in EVENTS:
            (d / "events" / ev / "filter").write_text(filt)
            (d / "events" / ev / "enable").write_text("1")
        (d / "tracing_on").write_text("1")

    def read(self) -> str:
        """Stop recording and return the instance's ``trace`` file (ftrace text)."""
        assert self.dir is not None
        (self.dir / "tracing_on").write_text("0")
        return (self.dir / "trace").read_text(encoding="utf-8", errors="replace")

    def close(self) -> None:
        """Remove the instance (and unmount tracefs if it was mounted here)."""
        if self.dir is not None:
            with contextlib.suppress(OSError):
                (self.dir / "tracing_on").write_text("0")
            for ev in EVENTS:
                with contextlib.suppress(OSError):
                    (self.dir / "events" / ev / "enable").write_text("0")
            with contextlib.suppress(OSError):
                self.dir.rmdir()
            self.dir = None
        if self._mounted is not None:
            subprocess.run(["umount", str(self._mounted)], check=False, capture_output=True)
            with contextlib.suppress(OSError):
                self._mounted.rmdir()
            self._mounted = None


def cleanup_leftovers(all_: bool = False) -> list[str]:
    """Remove the ``statemine-<pid>`` tracing instances whose process is gone (every one
    with ``all_``), on every tracefs mount; returns the instances removed."""
    from .netns import _alive

    removed = []
    for root in tracefs_mounts():
        inst = root / "instances"
        if not inst.is_dir():
            continue
        for d in sorted(inst.iterdir()):
            m = re.fullmatch(r"statemine-(\d+)", d.name)
            if m and (all_ or not _alive(int(m.group(1)))):
                with contextlib.suppress(OSError):
                    (d / "tracing_on").write_text("0")
                    d.rmdir()
                    removed.append(str(d))
    return removed
