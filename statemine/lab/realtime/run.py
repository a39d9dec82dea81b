"""One real-time run of kernel TCP (docs/realtime.md): namespaces, the emulated path, a
tracing instance, the server and client programs; the ftrace text as the run's log.

The kernel's events are recorded with ``statemine tcp record``'s tracing instance
(:class:`statemine.tcp.tracing.Instance`: ``statemine-<pid>``, mono clock, the run's port,
drained from ``trace_pipe`` into the log). ``python -m statemine.lab.realtime.run
CONFIG.json`` reads a run config of
docs/lab-protocol.md (``implementation = "tcp"``, ``version`` the congestion control:
reno, cubic or bbr) and writes the kernel's trace to ``log_path`` and the run result to
``result_path``. Everything it sets up is undone on exit, on an exception and on
SIGINT/SIGTERM/SIGHUP (:mod:`statemine.lab.realtime.netns`); after a SIGKILL,
:func:`statemine.tcp.cleanup` (``statemine tcp cleanup``) removes what is left.

Result keys (seconds, bytes, bits/s): ``ok``, ``error``, ``plt_s`` (client: request sent
... last byte consumed, connection set-up included), ``bytes``, ``throughput_bps``
(``bytes * 8 / plt_s``), ``retransmissions`` (the server socket's ``tcpi_total_retrans``),
``packets_sent`` / ``packets_dropped`` (the path's), ``srtt_s`` (the server's smoothed RTT
at the end), ``virtual_time_s`` (the run's wall time: time is real here), ``wall_time_s``,
``start_mono`` (the client's start on the monotonic clock the trace uses),
``trace_events_lost`` (the ring buffer's overrun and dropped counters: 0 when the trace is
whole) and the emulator's counters (``max_late_s``: the latest a packet was written after its due time).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...fileio import write_json
from ...tcp.tracing import Instance, TracingError
from . import netns
from .emulator import Emulator

#: The first port of the server; a run uses BASE_PORT + pid % PORT_SPAN (distinct ports let
#: runs share the machine without seeing each other's events).
BASE_PORT = 20000
PORT_SPAN = 20000
CONGESTION_CONTROLS = ("reno", "cubic", "bbr")
#: Real-time runs of one process run one at a time (they would compete for the cores).
ONE_AT_A_TIME = threading.Lock()


def _env() -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[3])
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_subprocess(config: dict, module: str, name: str, grace_s: float) -> dict:
    """Run one config with ``python -m module CONFIG`` (one real-time run at a time in this
    process); its result dict. A subprocess that overruns ``time_limit_s`` (default 120 s)
    + ``grace_s`` gets SIGTERM (it then removes its namespaces), SIGKILL 10 s later, and
    its leftovers are removed; one that writes no result gives ``ok: False`` with the last
    lines of its stderr. ``name`` labels the config file and the error."""
    import signal

    from ...tcp import cleanup

    result_path = Path(config["result_path"])
    config_path = result_path.with_name(f"{name}.config.json")
    write_json(config_path, config)
    result_path.unlink(missing_ok=True)
    limit = float(config.get("time_limit_s") or 120.0) + grace_s
    with ONE_AT_A_TIME:
        proc = subprocess.Popen(
            [sys.executable, "-m", module, str(config_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        try:
            _, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            try:
                _, err = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
                cleanup()
    config_path.unlink(missing_ok=True)
    if not result_path.exists():
        tail = " | ".join((err or "").strip().splitlines()[-3:])
        result = {"ok": False, "error": f"{name} run exited with status {proc.returncode}: {tail}"}
        write_json(result_path, result)
        return result
    with open(result_path, encoding="utf-8") as f:
        return dict(json.load(f))


def _app(topo: netns.Topology, side: str, opt: dict) -> subprocess.Popen:
    argv = [*topo.exec_argv(side), sys.executable, "-m", "statemine.lab.realtime.tcpapp"]
    return subprocess.Popen(
        [*argv, side, json.dumps(opt)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )


def _last_json(text: str) -> dict:
    lines = [ln for ln in text.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


def _stop(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()


def simulate(config: dict, record: bool = False) -> tuple[dict, Emulator]:
    """Run ``config`` in real time, the kernel's trace written to ``config["log_path"]``;
    the result and the emulator (its per-packet record when ``record``)."""
    cc = config["version"]
    if cc not in CONGESTION_CONTROLS:
        raise ValueError(f"unknown congestion control {cc!r} (known: reno, cubic, bbr)")
    seed = int(config["seed"])
    port = BASE_PORT + os.getpid() % PORT_SPAN
    client = config.get("client") or {}
    objects = config["objects"]
    limit = float(config.get("time_limit_s") or 120.0)
    server = cli = None
    t_begin = time.monotonic()
    with (
        netns.signals_raise(),
        netns.Topology() as topo,
        open(config["log_path"], "wb") as log,
    ):
        emu = Emulator(
            topo.client_fd, topo.server_fd, config["path"], seed, client, record=record
        ).start()
        try:
            with Instance(ports=[port]) as inst:
                inst.start()
                inst.drain_to(log)
                try:
                    server = _app(
                        topo, "server", {"addr": netns.SERVER_ADDR, "port": port, "cc": cc}
                    )
                    assert server.stdout is not None and server.stderr is not None
                    first = server.stdout.readline()
                    if '"listening"' not in first:
                        err = server.stderr.read() if server.poll() is not None else ""
                        raise RuntimeError(f"server did not start: {first.strip()} {err.strip()}")
                    cli = _app(
                        topo,
                        "client",
                        {
                            "addr": netns.SERVER_ADDR,
                            "port": port,
                            "cc": cc,
                            "count": objects["count"],
                            "size": objects["size_bytes"],
                            "read_rate_bps": client.get("read_rate_bps")
                            if client.get("profile") == "mobile"
                            else None,
                            "read_rate_cv": client.get("read_rate_cv") or 0.0,
                            "read_rate_interval_s": client.get("read_rate_interval_s") or 0.1,
                            "seed": seed,
                        },
                    )
                    try:
                        c_out, c_err = cli.communicate(timeout=limit)
                    except subprocess.TimeoutExpired:
                        return (
                            {"ok": False, "error": f"wall-clock limit reached ({limit:g} s)"},
                            emu,
                        )
                    s_out, s_err = server.communicate(timeout=10)
                    time.sleep(0.05)  # the last ACKs and FINs reach the trace
                finally:
                    _stop(cli)
                    _stop(server)
                    inst.stop()
                lost = sum(
                    c.get("overrun", 0) + c.get("dropped events", 0)
                    for c in inst.overruns().values()
                )
        finally:
            emu.stop()
    if emu.error is not None:
        raise RuntimeError(f"emulator failed: {emu.error!r}")
    if cli.returncode != 0:
        return ({"ok": False, "error": f"client failed: {c_err.strip()[-500:]}"}, emu)
    if server.returncode != 0:
        return ({"ok": False, "error": f"server failed: {s_err.strip()[-500:]}"}, emu)
    c, s = _last_json(c_out), _last_json(s_out)
    plt = c["done"] - c["start"]
    result: dict[str, Any] = {
        "ok": True,
        "plt_s": plt,
        "bytes": c["bytes"],
        "throughput_bps": c["bytes"] * 8.0 / plt if plt > 0 else None,
        "retransmissions": s["total_retrans"],
        "srtt_s": s["rtt_s"],
        "cc": s["cc"],
        "server_port": port,
        "client_port": c["sport"],
        "start_mono": c["start"],
        "virtual_time_s": time.monotonic() - t_begin,
        "trace_events_lost": lost,
    }
    result.update(emu.stats())
    return result, emu


#: The server's UDP port inside its namespace (QUIC runs: one socket per namespace).
SERVER_PORT = 4433


def over_sockets(
    config: dict, argv: Callable[[str], list[str]], env: dict[str, str], name: str
) -> tuple[dict, Emulator]:
    """Run a QUIC program over two UDP sockets joined by the real-time path: namespaces,
    the emulator, a socket bound in each namespace (server on :data:`SERVER_PORT`), then
    the program ``argv(config_path)`` with the sockets inherited and named by
    ``$STATEMINE_REALNET_FDS = "SERVER,CLIENT"`` (config also in
    ``$STATEMINE_RUN_CONFIG``). The program writes the statemine log to ``log_path`` and
    its result to ``result_path``; returns that result plus the path's counters, and the
    emulator. ``name`` labels the config file and the error of a program that wrote no
    result."""
    config_path = Path(config["result_path"]).with_name(f"{name}.realnet.json")
    write_json(config_path, config)
    Path(config["log_path"]).write_bytes(b"")
    Path(config["result_path"]).unlink(missing_ok=True)
    limit = float(config.get("time_limit_s") or 120.0) + 30.0
    with netns.signals_raise(), netns.Topology() as topo:
        emu = Emulator(
            topo.client_fd,
            topo.server_fd,
            config["path"],
            int(config["seed"]),
            config.get("client"),
        ).start()
        try:
            srv = netns.udp_socket(topo.server_ns, netns.SERVER_ADDR, SERVER_PORT)
            cli = netns.udp_socket(topo.client_ns, netns.CLIENT_ADDR, 0)
            with srv, cli:
                fds = f"{srv.fileno()},{cli.fileno()}"
                proc = subprocess.run(
                    argv(str(config_path)),
                    env={
                        **env,
                        "STATEMINE_REALNET_FDS": fds,
                        "STATEMINE_RUN_CONFIG": str(config_path),
                    },
                    pass_fds=(srv.fileno(), cli.fileno()),
                    capture_output=True,
                    text=True,
                    timeout=limit,
                )
        finally:
            emu.stop()
    config_path.unlink(missing_ok=True)
    if emu.error is not None:
        raise RuntimeError(f"emulator failed: {emu.error!r}")
    try:
        result = json.loads(Path(config["result_path"]).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        result = {"ok": False, "error": f"{name} exited with {proc.returncode}: {tail}"}
    result.update(emu.stats())
    return result, emu


def run_and_write(
    path: str,
    simulate: Callable[[dict], tuple[dict, Any]],
    errors: tuple[type[BaseException], ...],
) -> int:
    """A run subprocess's body: ``simulate`` the config at ``path`` and write its result
    (``ok: False`` with the message for ``errors``, or on SIGINT/SIGTERM) with the wall
    time, s, to the config's ``result_path``; the exit status (0 when ok)."""
    config = json.loads(Path(path).read_text(encoding="utf-8"))
    t0 = time.monotonic()
    try:
        result, _ = simulate(config)
    except errors as exc:
        result = {"ok": False, "error": str(exc)}
    except (KeyboardInterrupt, netns.Terminated) as exc:
        result = {"ok": False, "error": f"interrupted ({exc or 'SIGINT'})"}
    result["wall_time_s"] = time.monotonic() - t0
    write_json(config["result_path"], result)
    return 0 if result.get("ok") else 1


def run_config_file(path: str) -> int:
    """The subprocess entry: run the config at ``path``, write its log and result."""
    return run_and_write(
        path, simulate, (netns.SetupError, TracingError, OSError, RuntimeError, ValueError)
    )


if __name__ == "__main__":
    sys.exit(run_config_file(sys.argv[1]))
