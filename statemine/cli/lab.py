"""``statemine lab``: run instrumented QUIC implementations in virtual time over an
emulated path (a thin layer over :mod:`statemine.lab`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import UsageError
from . import main

SCENARIOS_DIR = Path(__file__).resolve().parents[2] / "examples" / "scenarios"


def _only(values: tuple[str, ...]) -> dict[str, str]:
    only = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--only {item!r}: expected KEY=VALUE")
        only[key.strip()] = value.strip()
    return only


@main.group()
def lab() -> None:
    """Run real, instrumented QUIC implementations in virtual time over an emulated
    path (rate, tail-drop buffer, delay, loss, jitter, variable bandwidth) and collect
    their statemine traces (see docs/lab.md)."""


@lab.command("run")
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Output folder (runs/, results.csv/.parquet, manifest.json); reused to resume.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Parallel runs (default: all cores).")
@click.option("--only", multiple=True, metavar="KEY=VAL",
              help="Run only the cells whose grid KEY equals VAL (repeatable), e.g. --only profile=mobile.")
@click.option("--retry-failed", is_flag=True, help="Run again the runs that failed before.")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def run_cmd(scenario: Path, out: Path, jobs: int | None, only: tuple[str, ...], retry_failed: bool,
            no_progress: bool) -> None:
    """Run every unfinished run of SCENARIO (a TOML grid) into --out."""
    from ..lab import grid, scenario as sc

    spec = sc.load(scenario)
    table = grid.run_grid(spec, out, jobs=jobs, only=_only(only), retry_failed=retry_failed,
                          command=["statemine", *sys.argv[1:]], progress=not no_progress)
    ok = int(table["ok"].fillna(False).astype(bool).sum())
    failed = len(table) - ok
    click.echo(f"{len(table)} runs in {out}: {ok} ok, {failed} failed (results.csv, manifest.json)")
    if failed:
        for row in table[~table["ok"].fillna(False).astype(bool)].head(10).itertuples():
            click.echo(f"  failed {row.run_id}: {row.error}", err=True)


@lab.command("scenarios")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=SCENARIOS_DIR,
              show_default=True, help="Folder of scenario files.")
def scenarios_cmd(directory: Path) -> None:
    """List the scenario files of a folder: name, runs, and the grid's axes."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from ..lab import scenario as sc

    table = Table(title=escape(str(directory)))
    for col in ("file", "name", "cells", "runs", "axes"):
        table.add_column(col)
    for path in sorted(directory.glob("*.toml")):
        spec = sc.load(path)
        axes = escape(", ".join(f"{k}={'|'.join(map(str, v))}" for k, v in spec.axes.items() if len(v) > 1))
        table.add_row(escape(path.name), escape(spec.name), str(len(spec.cells)), str(len(spec.cells) * spec.runs), axes)
    Console(width=200).print(table)


@lab.command("keys")
def keys_cmd() -> None:
    """List the grid keys a scenario may set, with units and defaults."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from ..lab.scenario import GRID_KEYS

    table = Table()
    for col in ("key", "default", "meaning"):
        table.add_column(col)
    for key, spec in GRID_KEYS.items():
        table.add_row(key, "-" if spec.default is None else escape(str(spec.default)), escape(spec.doc))
    Console().print(table)


@lab.command("findings")
@click.argument("root", type=click.Path(file_okay=False, path_type=Path), default=Path("traces"))
@click.option("--finding", "names", multiple=True,
              type=click.Choice(["mobile-vs-desktop", "jitter-recovery", "quic-go-adaptive-reordering"]),
              help="Only this finding (repeatable; default: all).")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the table as CSV.")
def findings_cmd(root: Path, names: tuple[str, ...], csv_path: Path | None) -> None:
    """Measure the paper's findings on lab traces under ROOT (default traces/): the
    server's share of time in the finding's state per condition, next to the paper's."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from ..lab import findings

    chosen = tuple(f for f in findings.FINDINGS if not names or f.name in names)
    table = findings.evaluate(root, chosen)
    if table.empty:
        raise UsageError(f"{root}: no scenario folder of a finding ({', '.join(f.scenario for f in findings.FINDINGS)})")
    out = Table(title=f"findings on {root}")
    headers = ("finding", "stack", "condition", "state", "share", "paper", "s/run", "runs", "PLT s",
               "declared lost", "path dropped", "by packet rule", "by time rule")
    for col in headers:
        out.add_column(col, justify="right" if col not in headers[:4] else "left")
    for row in table.itertuples(index=False):
        out.add_row(row.finding, escape(row.stack), escape(row.condition), row.state, f"{row.share:.1%}", row.paper or "-",
                    f"{row.seconds_per_run:.2f}", str(row.runs), f"{row.plt_s:.2f}", str(row.declared_lost), str(row.path_dropped),
                    str(row.lost_by_packet_rule), str(row.lost_by_time_rule))
    Console(width=240).print(out)
    if csv_path is not None:
        tmp = csv_path.with_name(f".{csv_path.name}.tmp")
        table.to_csv(tmp, index=False)
        tmp.replace(csv_path)


@lab.command("rerun")
@click.argument("config", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for run.log and result.json.")
def rerun_cmd(config: Path, out: Path) -> None:
    """Run one run config again (e.g. traces/jitter/runs/<run_id>/config.json): the same
    stack version gives the same log, byte for byte."""
    import json

    from ..errors import InputError
    from ..lab.runners import runner_for

    try:
        cfg = json.loads(config.read_text(encoding="utf-8"))
        impl = cfg["implementation"]
        runner = runner_for(impl)
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(config, None, f"not a run config: {exc}") from None
    out.mkdir(parents=True, exist_ok=True)
    cfg = dict(cfg, log_path=str(out.resolve() / "run.log"), result_path=str(out.resolve() / "result.json"))
    result = runner.run(cfg)
    click.echo(json.dumps({k: result.get(k) for k in ("ok", "error", "plt_s", "retransmissions",
                                                      "packets_sent", "packets_dropped")}))
    if not result.get("ok"):
        sys.exit(1)
