"""``statemine lab``: run instrumented QUIC implementations in virtual time over an
emulated path (a thin layer over :mod:`statemine.lab`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..errors import UsageError
from . import main

if TYPE_CHECKING:
    from rich.table import Table


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
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Output folder (runs/, results.csv/.parquet, manifest.json); reused to resume.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Parallel runs (default: all cores).",
)
@click.option(
    "--only",
    multiple=True,
    metavar="KEY=VAL",
    help="Run only the cells whose grid KEY equals VAL (repeatable), e.g. --only profile=mobile.",
)
@click.option("--retry-failed", is_flag=True, help="Run again the runs that failed before.")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def run_cmd(
    scenario: Path,
    out: Path,
    jobs: int | None,
    only: tuple[str, ...],
    retry_failed: bool,
    no_progress: bool,
) -> None:
    """Run every unfinished run of SCENARIO (a TOML grid) into --out."""
    from ..lab import grid
    from ..lab import scenario as sc

    spec = sc.load(scenario)
    table = grid.run_grid(
        spec,
        out,
        jobs=jobs,
        only=_only(only),
        retry_failed=retry_failed,
        command=["statemine", *sys.argv[1:]],
        progress=not no_progress,
    )
    ok = int(table["ok"].fillna(False).astype(bool).sum())
    failed = len(table) - ok
    click.echo(f"{len(table)} runs in {out}: {ok} ok, {failed} failed (results.csv, manifest.json)")
    if failed:
        from ..escape import one_line

        for row in table[~table["ok"].fillna(False).astype(bool)].head(10).itertuples():
            click.echo(f"  failed {row.run_id}: {one_line(row.error)}", err=True)


_WIDE_OPTION = click.option(
    "--wide",
    is_flag=True,
    help="Print tables at full width (the default when output is not a terminal).",
)


@lab.command("scenarios")
@click.argument(
    "directory",
    metavar="[DIR]",
    required=False,
    type=click.Path(file_okay=False, path_type=Path),
)
@click.option(
    "--dir",
    "dir_option",
    type=click.Path(file_okay=False, path_type=Path),
    hidden=True,
    help="Deprecated: give the folder as the argument DIR.",
)
@_WIDE_OPTION
def scenarios_cmd(directory: Path | None, dir_option: Path | None, wide: bool) -> None:
    """List the scenario files of folder DIR (default: the shipped examples/scenarios):
    name, runs, and the grid's axes."""
    from rich.markup import escape
    from rich.table import Table

    from .console import make_console

    if dir_option is not None:
        if directory is not None:
            raise UsageError("give the folder once: as DIR (--dir is the deprecated form)")
        click.echo("statemine: note: --dir is deprecated; give the folder as DIR", err=True)
        directory = dir_option
    if directory is None:
        from ..resources import data_dir

        directory = data_dir("examples/scenarios")

    from ..lab import scenario as sc

    table = Table(title=escape(str(directory)))
    for col in ("file", "name", "cells", "runs", "axes"):
        table.add_column(col)
    for path in sorted(directory.glob("*.toml")):
        spec = sc.load(path)
        axes = escape(
            ", ".join(f"{k}={'|'.join(map(str, v))}" for k, v in spec.axes.items() if len(v) > 1)
        )
        table.add_row(
            escape(path.name),
            escape(spec.name),
            str(len(spec.cells)),
            str(len(spec.cells) * spec.runs),
            axes,
        )
    make_console(wide=wide).print(table)


@lab.command("keys")
def keys_cmd() -> None:
    """List the grid keys a scenario may set, with units and defaults."""
    from rich.markup import escape
    from rich.table import Table

    from ..lab.scenario import GRID_KEYS
    from .console import make_console

    table = Table()
    for col in ("key", "default", "meaning"):
        table.add_column(col)
    for key, spec in GRID_KEYS.items():
        table.add_row(
            key, "-" if spec.default is None else escape(str(spec.default)), escape(spec.doc)
        )
    make_console().print(table)


@lab.command("findings")
@click.argument("root", type=click.Path(file_okay=False, path_type=Path), default=Path("traces"))
@click.option(
    "--finding",
    "names",
    multiple=True,
    type=click.Choice(
        [
            "mobile-vs-desktop",
            "jitter-recovery",
            "quic-go-adaptive-reordering",
            "cellular-mobile-vs-desktop",
            "quic-vs-tcp-jitter",
            "quic-go-real-vs-virtual",
            "quic-rt-vs-tcp-jitter",
            "quic-rt-real-vs-virtual",
            "tcp-mobile-vs-desktop",
            "quiche-cubic-recovery-under-loss",
            "quiche-bbr-startup-vs-size",
            "quiche-bbr-probebw-vs-size",
            "quiche-jitter-recovery",
        ]
    ),
    help="Only this finding (repeatable; default: all).",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.01,
    show_default=True,
    help="A finding is reproduced when its Holm-adjusted p-value is below this (the paper's 0.01).",
)
@click.option(
    "--permutations",
    "n_perm",
    type=click.IntRange(1),
    default=9999,
    show_default=True,
    help="Random relabellings of the permutation test.",
)
@click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(1),
    default=2000,
    show_default=True,
    help="Bootstrap resamples for the interval of each difference.",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of permutations and bootstrap."
)
@click.option(
    "--csv",
    "csv_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the comparisons table (one row per finding, stack and comparison) as CSV.",
)
@click.option(
    "--markdown", is_flag=True, help="Print the tables as Markdown (as in docs/findings.md)."
)
@_WIDE_OPTION
def findings_cmd(
    root: Path,
    names: tuple[str, ...],
    alpha: float,
    n_perm: int,
    n_boot: int,
    seed: int,
    csv_path: Path | None,
    markdown: bool,
    wide: bool,
) -> None:
    """Test the paper's findings on lab traces under ROOT (default traces/) with statemine's
    own diff: per stack, the server's share of time in the finding's state under both
    conditions, the difference with its bootstrap interval, the permutation p-value (Holm)
    and whether it is reproduced (p < alpha in the paper's direction, no evidence flag);
    then each condition's shares, page-load times and losses."""
    from ..escape import frame_csv, one_line, visible
    from ..fileio import write_atomic
    from ..lab import findings
    from .console import make_console

    chosen = tuple(f for f in findings.FINDINGS if not names or f.name in names)
    verdicts, conditions = findings.measure(
        root, chosen, alpha=alpha, n_perm=n_perm, n_boot=n_boot, seed=seed
    )
    if verdicts.empty:
        raise UsageError(
            f"{root}: no scenario folder of a finding ({', '.join(f.scenario for f in findings.FINDINGS)})"
        )
    if csv_path is not None:
        write_atomic(csv_path, frame_csv(verdicts))
    console = make_console(wide=wide)
    say = lambda text, **kw: console.print(one_line(text), markup=False, highlight=False, **kw)  # noqa: E731
    say(
        f"statemine lab findings {root}: the server's share of time in a state, compared between conditions with "
        f"statemine.diff (permutation p-value, Holm over the states; {n_boot} bootstrap resamples for the 95% "
        f"interval of B - A in percentage points); reproduced when p < {alpha:g} in the paper's direction with no "
        "evidence flag"
    )
    for f in chosen:
        rows = verdicts[verdicts["finding"] == f.name]
        if rows.empty:
            continue
        say("")
        say(f"{f.name}: {f.claim} ({f.state})", style="bold")
        if markdown:  # unwrapped, to paste into docs/findings.md
            click.echo(
                "\n"
                + "\n".join(
                    visible(line, backslash=False)
                    for line in findings.markdown(verdicts, conditions, f.name).split("\n")
                )
            )
            continue
        console.print(
            _table(findings.VERDICT_HEADERS, findings.verdict_cells(rows), left=(0, 1, 7, 8))
        )
        console.print(
            _table(
                findings.CONDITION_HEADERS,
                findings.condition_cells(conditions[conditions["finding"] == f.name]),
                left=(0, 1),
            )
        )
        for note in findings.known_notes(rows):
            say(note)
    claims = verdicts[verdicts["direction"] != "either"]
    say("")  # one_line() shows a newline inside a text as \x0a
    say(
        f"{int(claims['reproduced'].sum())} of {len(claims)} comparisons reproduced at p < {alpha:g} in the "
        f"paper's direction; {int((~claims['reproduced'] & (claims['known'] != '')).sum())} not reproduced "
        "for a documented cause"
    )
    for r in verdicts[verdicts["direction"] == "either"].itertuples(index=False):
        say(f"{r.finding} / {r.stack}: {r.verdict}")


def _table(
    headers: tuple[str, ...], cells: list[tuple[str, ...]], *, left: tuple[int, ...]
) -> Table:
    """A rich table of text cells (shown literally, controls made visible); columns ``left``
    left-aligned, the rest right."""
    from rich.table import Table

    from ..escape import rich_cell

    table = Table()
    for i, col in enumerate(headers):
        table.add_column(col, justify="left" if i in left else "right", overflow="fold")
    for row in cells:
        table.add_row(*(rich_cell(c, None) for c in row))
    return table


@lab.command("rerun")
@click.argument("config", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for run.log and result.json.",
)
def rerun_cmd(config: Path, out: Path) -> None:
    """Run one run config again (e.g. traces/jitter/runs/<run_id>/config.json): the same
    stack version gives the same log, byte for byte."""
    import json

    from ..errors import InputError
    from ..lab.grid import resolve_link_traces
    from ..lab.runners import runner_for

    try:
        cfg = json.loads(config.read_text(encoding="utf-8"))
        impl = cfg["implementation"]
        runner = runner_for(impl)
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(config, None, f"not a run config: {exc}") from None
    if not isinstance(cfg.get("path"), dict):
        raise InputError(config, None, "not a run config: no path table")
    cfg = resolve_link_traces(cfg, config.resolve().parent, config)
    out.mkdir(parents=True, exist_ok=True)
    cfg = dict(
        cfg, log_path=str(out.resolve() / "run.log"), result_path=str(out.resolve() / "result.json")
    )
    result = runner.run(cfg)
    click.echo(
        json.dumps(
            {
                k: result.get(k)
                for k in (
                    "ok",
                    "error",
                    "plt_s",
                    "retransmissions",
                    "packets_sent",
                    "packets_dropped",
                )
            }
        )
    )
    if not result.get("ok"):
        sys.exit(1)
