"""``statemine tcp record``: record kernel TCP's congestion states while a command runs (or
for a while) and write the raw trace and the parsed traces.

The recording runs in a tracing instance of its own (:class:`statemine.tcp.tracing.Instance`):
``trace_clock mono``, a ring buffer of ``buffer_kb`` KiB per CPU drained continuously
from ``trace_pipe`` into a file staged beside the output folder, and a filter on the
given ports. The instance (and a tracefs mount made for it) is removed when the recording
ends, also on an exception and on SIGINT/SIGTERM/SIGHUP (turned into exceptions); the
command, started in a session of its own, is ended with its whole process group. After a
signal nothing is written (exit 128 + signal); after SIGKILL ``statemine tcp cleanup``
removes what is left.

The output folder (written as one set, :func:`statemine.fileio.write_set`):

* ``trace.txt`` -- the raw ftrace text of ``tcp:tcp_cong_state_set``, ``tcp:tcp_probe``
  and (where the kernel has it) ``sock:inet_sock_set_state``;
* ``record.json`` -- what was recorded and how: command, exit status, duration (s), ports,
  buffer, kernel, the host's default and available congestion controls, each recorded
  socket's controller (``sockets``: trace id -> cookie, controller, network namespace, from
  :class:`statemine.tcp.sockets.SocketWatch`; ``congestion_controls``: the distinct ones),
  the ring buffer's lost-event counters, warnings (naming ``trace.txt``);
* ``traces.parquet`` -- the parsed traces with their metrics (cwnd, ssthresh, srtt per
  probe) (:func:`statemine.parse.ftrace.read_ftrace`, :func:`statemine.save`), when any
  sending socket was recorded;
* ``model/`` -- then also what ``statemine infer traces.parquet --out model`` writes
  (:func:`statemine.commands.infer_to_dir`: states.csv, transitions.csv, model.*).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from .sockets import SocketWatch
from .tracing import DEFAULT_BUFFER_KB, Instance

if TYPE_CHECKING:
    from ..commands import InferOutput

#: The files ``statemine tcp record --out DIR`` writes.
RECORD_OUTPUTS = ("trace.txt", "record.json", "traces.parquet", "model")
#: Seconds a command gets to end after SIGTERM before SIGKILL.
GRACE_S = 5.0


@dataclass(frozen=True)
class RecordResult:
    """What :func:`record` wrote: ``out`` (the folder), ``n_traces`` (sending sockets),
    ``exit_status`` (the command's; None without one or when ``duration`` ended it), ``lost`` (events lost or overwritten
    by the ring buffer, per its counters and the trace's reports), ``warnings``, ``model``
    (what :func:`~statemine.commands.infer_to_dir` computed and wrote to ``out/model``;
    None without traces)."""

    out: Path
    n_traces: int
    exit_status: int | None
    lost: int
    warnings: tuple[str, ...] = field(default=())
    model: InferOutput | None = None


def record(
    out_dir: str | os.PathLike,
    command: Sequence[str] = (),
    *,
    duration: float | None = None,
    ports: Sequence[int] = (),
    buffer_kb: int = DEFAULT_BUFFER_KB,
    keep_receivers: bool = False,
    keep_repeats: bool = False,
    mss: int | None = None,
) -> RecordResult:
    """Record while ``command`` runs (ended after ``duration`` seconds if given), or for
    ``duration`` seconds; write the folder described in the module docstring. Needs root.
    The reader options (``keep_receivers``, ``keep_repeats``, ``mss``) are those of
    :func:`statemine.parse.ftrace.read_ftrace`."""
    from ..fileio import check_out_dir, cleanup_on_signals, staging_file

    if not command and duration is None:
        raise UsageError("give a command to run (after --) or --duration SECONDS")
    if duration is not None and not duration > 0:
        raise UsageError(f"--duration must be a positive number of seconds, not {duration}")
    out = check_out_dir(out_dir, RECORD_OUTPUTS)
    staged = staging_file(out)
    with cleanup_on_signals(), _SigintRaises():
        try:
            with open(staged, "xb") as raw, Instance(ports, buffer_kb) as inst:
                inst.drain_to(raw)
                started = time.clock_gettime(time.CLOCK_MONOTONIC)
                inst.start()
                with SocketWatch(ports) as watch:
                    status, timed_out = _run(command, duration)
                ended = time.clock_gettime(time.CLOCK_MONOTONIC)
                inst.stop()
                counters = inst.overruns()
            info = {
                "command": list(command),
                "exit_status": status,
                "ended_by_duration": timed_out,
                "duration_s": ended - started,
                "started_mono_s": started,
                "ports": list(ports),
                "buffer_kb_per_cpu": buffer_kb,
                "trace_clock": "mono",
                "kernel": platform.release(),
                **_congestion_controls(),
                "ring_buffer": {str(cpu): c for cpu, c in counters.items()},
                "socket_controllers": watch.seen,
            }
            result = _write(out, staged, info, keep_receivers, keep_repeats, mss)
        finally:
            staged.unlink(missing_ok=True)
    if not result.n_traces:
        return result
    from ..commands import ReadOptions, infer_to_dir

    model = infer_to_dir(out / "traces.parquet", out / "model", read=ReadOptions(fmt="parquet"))
    return replace(result, model=model)


def _run(command: Sequence[str], duration: float | None) -> tuple[int | None, bool]:
    """Run ``command`` (in a session of its own) to its end or for ``duration`` seconds:
    its exit status, and whether ``duration`` ended it. Without a command, wait
    ``duration`` seconds. An exception (a signal) ends the command's process group first."""
    if not command:
        assert duration is not None
        time.sleep(duration)
        return None, False
    try:
        proc = subprocess.Popen(list(command), start_new_session=True)
    except OSError as exc:
        raise UsageError(f"cannot run {command[0]!r}: {exc.strerror or exc}") from None
    try:
        # Always with a timeout: Popen.wait then polls (sleeps of at most 50 ms), so a
        # SIGTERM the kernel hands to one of the recording's other threads still runs its
        # handler here at once; a plain waitpid would block until the command ended
        # (seen: a 60 s command outlived the signal by 60 s)
        return proc.wait(timeout=math.inf if duration is None else duration), False
    except subprocess.TimeoutExpired:
        _end(proc)
        return proc.returncode, True
    except BaseException:
        _end(proc)
        raise


def _end(proc: subprocess.Popen) -> None:
    """SIGTERM to the command's process group, SIGKILL after :data:`GRACE_S`."""
    for sig, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


class _SigintRaises:
    """SIGINT raises KeyboardInterrupt here too (a caller may have set it to be ignored)."""

    def __enter__(self) -> None:
        self._previous = signal.signal(signal.SIGINT, signal.default_int_handler)

    def __exit__(self, *exc: object) -> None:
        signal.signal(signal.SIGINT, self._previous)


def _congestion_controls() -> dict[str, Any]:
    """The host's default congestion control (what a socket of the host's network namespace
    uses unless it sets TCP_CONGESTION: not necessarily the recorded sockets'; they are in
    ``sockets``) and the available ones."""
    base = Path("/proc/sys/net/ipv4")
    out: dict[str, Any] = {}
    for key, name in (
        ("host_default_congestion_control", "tcp_congestion_control"),
        ("available_congestion_controls", "tcp_available_congestion_control"),
    ):
        try:
            text = (base / name).read_text().split()
        except OSError:
            continue
        out[key] = text[0] if key == "host_default_congestion_control" and text else text
    return out


def _sockets(traces: Any, seen: dict[str, dict[str, str]]) -> dict[str, dict]:
    """Per trace id: its socket's cookie and congestion controller (None where the socket
    watch did not see it: a socket shorter than its interval, or no cookie logged)."""
    out = {}
    for trace, cookie in zip(traces["trace"], traces["cookie"], strict=True):
        found = seen.get(str(cookie), {}) if cookie else {}
        out[str(trace)] = {
            "cookie": str(cookie),
            "congestion_control": found.get("congestion_control"),
            "netns": found.get("netns"),
        }
    return out


def _write(
    out: Path,
    staged: Path,
    info: dict,
    keep_receivers: bool,
    keep_repeats: bool,
    mss: int | None,
) -> RecordResult:
    """Parse the staged raw trace and write the output set."""
    from ..errors import InputError
    from ..fileio import staging_file, write_set
    from ..parse.ftrace import read_ftrace

    warnings: list[str] = []
    seen = info.pop("socket_controllers", {})
    lost = sum(
        c.get("overrun", 0) + c.get("dropped events", 0) for c in info["ring_buffer"].values()
    )
    if lost:
        warnings.append(
            f"the ring buffer lost {lost} events (per CPU: "
            + ", ".join(
                f"cpu{cpu}: {c.get('overrun', 0)} overwritten, {c.get('dropped events', 0)} dropped"
                for cpu, c in info["ring_buffer"].items()
            )
            + "); record with a larger --buffer-kb"
        )
    if info["exit_status"] and not info["ended_by_duration"]:
        warnings.append(f"the command exited with status {info['exit_status']}")
    files: dict[str, bytes | str | Path] = {"trace.txt": staged}
    parquet = []
    n_traces = 0
    try:
        try:
            ts = read_ftrace(
                staged,
                source="trace.txt",
                keep_receivers=keep_receivers,
                keep_repeats=keep_repeats,
                mss=mss,
            )
        except InputError as exc:
            warnings.append(f"no traces: {exc.reason}")
            info["lost_events"] = None
        else:
            n_traces = ts.n_traces
            # the reader named the staged file, which is renamed to trace.txt
            warnings += [
                w.replace(str(staged), str(out / "trace.txt"))
                for w in json.loads(ts.meta.get("warnings", "[]"))
            ]
            info["sockets"] = _sockets(ts.traces, seen)
            info["congestion_controls"] = sorted(
                {s["congestion_control"] for s in info["sockets"].values()} - {None}
            )
            info["lost_events"] = json.loads(ts.meta["lost_events"])
            info["receivers_left_out"] = int(ts.meta["receivers_left_out"])
            lost = max(lost, sum(v for k, v in info["lost_events"].items() if k != "wrapped_cpus"))
            from ..traces import save

            path = staging_file(out)
            parquet.append(path)
            save(ts, path)
            files["traces.parquet"] = path
        info["traces"] = n_traces
        info["warnings"] = warnings
        files["record.json"] = json.dumps(info, indent=1, default=str) + "\n"
        write_set(out, files, owned=RECORD_OUTPUTS)
    finally:
        for path in parquet:
            path.unlink(missing_ok=True)
    status = None if info["ended_by_duration"] else info["exit_status"]
    return RecordResult(out, n_traces, status, lost, tuple(warnings))
