"""``statemine tcp``: record kernel TCP's congestion state machine (``record``) and remove
what a killed recording or lab run left behind (``cleanup``); a thin layer over
:mod:`statemine.tcp`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import main
from .options import out_option


@main.group()
def tcp() -> None:
    """Kernel TCP: record its congestion states with ftrace (root), clean up."""


@tcp.command()
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="Folder to write trace.txt, record.json, traces.parquet and model/ to.",
)
@click.option("--duration", type=float, help="Seconds to record (or to let the command run).")
@click.option("--port", "ports", type=int, multiple=True, help="Only sockets with this port.")
@click.option(
    "--buffer-kb", type=int, default=None, help="Ring buffer per CPU, KiB (default 16384)."
)
@click.option("--keep-receivers", is_flag=True, help="Also traces of receiving sockets.")
@click.option("--keep-repeats", is_flag=True, help="A state set again is a self-transition.")
@click.option("--mss", type=int, help="Bytes per segment: cwnd/ssthresh also in bytes.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def record(out_dir, duration, ports, buffer_kb, keep_receivers, keep_repeats, mss, command):
    """Record tcp:tcp_cong_state_set and tcp:tcp_probe while COMMAND runs (after --: its
    options are its own), or for --duration seconds (a COMMAND still running then is ended), in a tracing instance of statemine's own; write the raw trace
    and the parsed traces to --out, then infer the model into --out/model. Needs root.
    Ctrl-C or SIGTERM ends the command, removes the tracing instance and writes nothing."""
    from ..tcp.record import record as record_lib
    from ..tcp.tracing import DEFAULT_BUFFER_KB

    try:
        result = record_lib(
            out_dir,
            command,
            duration=duration,
            ports=ports,
            buffer_kb=buffer_kb or DEFAULT_BUFFER_KB,
            keep_receivers=keep_receivers,
            keep_repeats=keep_repeats,
            mss=mss,
        )
    except KeyboardInterrupt:
        click.echo("statemine: interrupted: tracing removed, nothing written", err=True)
        sys.exit(130)
    from .infer import print_model, print_warnings

    print_warnings(result.warnings)
    click.echo(f"wrote trace.txt, record.json and {result.n_traces} traces to {out_dir}", err=True)
    if result.model is not None:
        print_model(result.model, result.out / "model")
    if result.exit_status:
        sys.exit(1)


@tcp.command("read")
@click.argument("traces", nargs=-1, required=True, type=click.Path(path_type=Path))
@out_option(
    "-o", "--output", type=click.Path(path_type=Path), required=True, help="Parquet file to write."
)
@click.option("--keep-receivers", is_flag=True, help="Also traces of receiving sockets.")
@click.option("--keep-repeats", is_flag=True, help="A state set again is a self-transition.")
@click.option("--mss", type=int, help="Bytes per segment: cwnd/ssthresh also in bytes.")
@click.option("-i", "--ignore-nonmatching", is_flag=True, help="Skip (and count) bad lines.")
def read_command(traces, out, keep_receivers, keep_repeats, mss, ignore_nonmatching):
    """Read ftrace text of kernel TCP (tracefs trace/trace_pipe, trace-cmd report, perf
    script) with the reader's options and save the traces (with their metrics) as one
    Parquet file for infer, diff and report."""
    from ..tcp import read_to_file
    from .infer import print_warnings

    written = read_to_file(
        traces,
        out,
        keep_receivers=keep_receivers,
        keep_repeats=keep_repeats,
        mss=mss,
        ignore_nonmatching=ignore_nonmatching,
    )
    print_warnings(written.warnings)
    click.echo(
        f"wrote {written.n_traces} traces ({written.n_events} state rows) to {written.path}",
        err=True,
    )


@tcp.command()
@click.option(
    "--all",
    "all_",
    is_flag=True,
    help="Also what running statemine processes use (stops their recordings).",
)
def cleanup(all_):
    """Remove what statemine processes that no longer run left: tracing instances
    statemine-<pid>, tracefs mounts statemine-tracefs-<pid>-*, network namespaces and
    devices sm-<pid>-*. Needs root."""
    from ..tcp import cleanup as cleanup_lib

    removed, failed = cleanup_lib(all_)
    for item in removed:
        click.echo(f"removed {item}")
    for item in failed:
        click.echo(f"statemine: warning: could not remove {item}", err=True)
    if not removed and not failed:
        click.echo("nothing to clean up")
    if failed:
        sys.exit(1)
