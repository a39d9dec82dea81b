"""``statemine lab``: run instrumented QUIC implementations in virtual time over an
emulated path (a thin layer over :mod:`statemine.lab`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

import click

from ..errors import UsageError
from . import main
from .options import (
    WIDE_OPTION,
    alpha_option,
    bootstrap_option,
    key_values,
    permutations_option,
    seed_option,
    with_options,
)

#: ``--finding`` choices: the names of :data:`statemine.lab.findings.FINDINGS` (a test
#: checks they match; listed here so that --help does not import the statistics).
FINDING_NAMES = (
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
)


@main.group()
def lab() -> None:
    """Run real, instrumented QUIC implementations in virtual time over an emulated
    path (rate, tail-drop buffer, delay, loss, jitter, variable bandwidth) and collect
    their statemine traces (see docs/lab.md)."""


@lab.command("run")
@click.argument("scenario", type=click.Path(path_type=Path))
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
    """Run every unfinished run of SCENARIO (a TOML grid, or the name of a shipped one:
    statemine lab scenarios) into --out. Exit status 1 when a run failed."""
    from ..escape import one_line
    from ..lab.commands import run_scenario

    run = run_scenario(
        scenario,
        out,
        jobs=jobs,
        only=key_values(only, "--only", strip=True),
        retry_failed=retry_failed,
        command=["statemine", *sys.argv[1:]],
        progress=not no_progress,
    )
    failed = len(run.failures)
    others = len(run.table) - len(run.planned)
    also = f"; the folder holds {others} more from earlier calls" if others > 0 else ""
    click.echo(
        f"{len(run.planned)} runs in {out}: {run.ok} ok, {failed} failed{also} "
        "(results.csv, manifest.json)"
    )
    for run_id, error in run.failures[:10]:
        click.echo(f"  failed {run_id}: {one_line(error)}", err=True)
    if run.failures:
        run_id, error = run.failures[0]
        click.echo(
            f"statemine: error: {failed} of {len(run.planned)} runs failed; the first, "
            f"{run_id}: {one_line(error)} (--retry-failed runs them again)",
            err=True,
        )
        sys.exit(1)


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
@WIDE_OPTION
def scenarios_cmd(directory: Path | None, dir_option: Path | None, wide: bool) -> None:
    """List the scenario files of folder DIR (default: the shipped examples/scenarios):
    name, runs, and the grid's axes."""
    from ..lab.commands import list_scenarios
    from .console import print_frame

    if dir_option is not None:
        if directory is not None:
            raise UsageError("give the folder once: as DIR (--dir is the deprecated form)")
        click.echo("statemine: note: --dir is deprecated; give the folder as DIR", err=True)
        directory = dir_option
    frame = list_scenarios(directory)
    print_frame(frame, title=frame.attrs["directory"], right=(2, 3), wide=wide)


@lab.command("keys")
@WIDE_OPTION
def keys_cmd(wide: bool) -> None:
    """List the grid keys a scenario may set, with units and defaults."""
    from ..lab.commands import list_keys
    from .console import print_frame

    print_frame(list_keys(), wide=wide)


@lab.command("findings")
@click.argument("root", type=click.Path(file_okay=False, path_type=Path), required=False)
@click.option(
    "--finding",
    "names",
    multiple=True,
    type=click.Choice(FINDING_NAMES),
    help="Only this finding (repeatable; default: all).",
)
@with_options(
    [
        alpha_option(
            default=0.01,
            help="A finding is reproduced when its Holm-adjusted p-value is below this "
            "(the paper's 0.01).",
        ),
        permutations_option(),
        bootstrap_option(
            default=2000,
            minimum=1,
            help="Bootstrap resamples for the interval of each difference.",
        ),
        seed_option(),
    ]
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
@click.option(
    "--why",
    is_flag=True,
    help="Also say why (statemine explain per comparison): rate or dwell and the leading "
    "trigger of the finding's state, in a last column of the tables and the CSV.",
)
@click.option(
    "--interval",
    type=click.Choice(["studentized", "percentile"]),
    default="studentized",
    show_default=True,
    help="The bootstrap interval of each difference: studentized (bootstrap-t, it holds "
    "across fresh batches of seeds: docs/findings.md) or percentile (statemine diff's).",
)
@WIDE_OPTION
def findings_cmd(
    root: Path | None,
    names: tuple[str, ...],
    alpha: float,
    n_perm: int,
    n_boot: int,
    seed: int,
    csv_path: Path | None,
    markdown: bool,
    why: bool,
    interval: Literal["studentized", "percentile"],
    wide: bool,
) -> None:
    """Test the paper's findings on lab traces under ROOT (default traces/) with statemine's
    own diff: per stack, the server's share of time in the finding's state under both
    conditions, the difference with its bootstrap interval, the permutation p-value (Holm)
    and whether it is reproduced (p < alpha in the paper's direction, no evidence flag);
    then each condition's shares, page-load times and losses."""
    from ..escape import one_line, visible
    from ..lab import findings
    from ..lab.commands import DEFAULT_TRACES, measure_findings
    from .console import make_console, print_table

    found = measure_findings(
        root,
        names,
        alpha=alpha,
        n_perm=n_perm,
        n_boot=n_boot,
        seed=seed,
        csv=csv_path,
        why=why,
        interval=interval,
    )
    verdicts, conditions = found.verdicts, found.conditions
    root = DEFAULT_TRACES if root is None else root
    console = make_console(wide=wide)
    say = lambda text, **kw: console.print(one_line(text), markup=False, highlight=False, **kw)  # noqa: E731
    say(
        f"statemine lab findings {root}: the server's share of time in a state, compared between conditions with "
        f"statemine.diff (permutation p-value, Holm over the states; {n_boot} bootstrap resamples for the 95% "
        f"{interval} interval of B - A in percentage points); reproduced when p < {alpha:g} in the paper's direction with no "
        "evidence flag"
    )
    for f in found.findings:
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
        print_table(
            console,
            findings.verdict_headers(rows),
            findings.verdict_cells(rows),
            right=(2, 3, 4, 5, 6),
        )
        print_table(
            console,
            findings.CONDITION_HEADERS,
            findings.condition_cells(conditions[conditions["finding"] == f.name]),
            right=range(2, len(findings.CONDITION_HEADERS)),
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


@lab.command("cache")
@click.argument("folder", type=click.Path(file_okay=False, exists=True, path_type=Path))
def cache_cmd(folder: Path) -> None:
    """Rebuild FOLDER's traces-index.json and traces-cache.parquet (statemine lab run
    writes both when it ends): reading the folder then loads the cache while every run's
    files keep the stat it recorded (docs/lab.md). Exit status 1 when no cache is written."""
    from ..escape import one_line
    from ..lab.commands import cache_folder

    why = cache_folder(folder)
    if why is not None:
        click.echo(
            f"statemine: no cache written in {one_line(str(folder))}: {one_line(why)}", err=True
        )
        sys.exit(1)
    click.echo(f"{one_line(str(folder))}: traces-index.json, traces-cache.parquet written")


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

    from ..lab.commands import RERUN_FIELDS, rerun

    result = rerun(config, out)
    click.echo(json.dumps({k: result.get(k) for k in RERUN_FIELDS}))
    if not result.get("ok"):
        sys.exit(1)


@lab.command("replicate")
@click.argument("root", type=click.Path(file_okay=False, path_type=Path), required=False)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the fresh runs (one lab output folder per scenario); reused to resume.",
)
@click.option(
    "--finding",
    "names",
    multiple=True,
    type=click.Choice(FINDING_NAMES),
    help="Only this finding (repeatable; default: every finding in virtual time).",
)
@click.option(
    "--runs",
    type=click.IntRange(min=2, max=10_000),
    default=20,
    show_default=True,
    help="Fresh runs per cell.",
)
@click.option(
    "--first-seed",
    type=click.IntRange(min=0, max=2**40),
    default=None,
    help="First fresh seed (default: past every shipped seed, at the next thousand plus one); "
    "refused when a shipped run used one of the fresh seeds.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Parallel runs (default: all cores).",
)
@with_options(
    [
        alpha_option(default=0.01, help="The findings' threshold on the Holm-adjusted p-value."),
        permutations_option(),
        bootstrap_option(
            default=2000, minimum=1, help="Bootstrap resamples for the interval of each difference."
        ),
        seed_option(),
    ]
)
@click.option(
    "--csv",
    "csv_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the comparisons table as CSV.",
)
@click.option("--markdown", is_flag=True, help="Print the tables as Markdown (docs/findings.md).")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@WIDE_OPTION
def replicate_cmd(
    root: Path | None,
    out: Path,
    names: tuple[str, ...],
    runs: int,
    first_seed: int | None,
    jobs: int | None,
    alpha: float,
    n_perm: int,
    n_boot: int,
    seed: int,
    csv_path: Path | None,
    markdown: bool,
    no_progress: bool,
    wide: bool,
) -> None:
    """Run the findings' cells again on fresh seeds into --out and compare them with the
    shipped runs under ROOT: each comparison's difference with its interval (the shipped
    percentile one, and studentized ones for both batches), p (Holm), whether the fresh
    difference falls inside the shipped interval, and the runs a side needs for a ±2
    point interval; then whether each condition's per-run shares are clustered."""
    from ..escape import one_line, visible
    from ..lab import replicate
    from ..lab.commands import replicate_findings
    from .console import make_console, print_table

    rep = replicate_findings(
        root,
        out,
        names,
        runs=runs,
        first_seed=first_seed,
        jobs=jobs,
        alpha=alpha,
        n_perm=n_perm,
        n_boot=n_boot,
        seed=seed,
        csv=csv_path,
        progress=not no_progress,
    )
    console = make_console(wide=wide)
    say = lambda text, **kw: console.print(one_line(text), markup=False, highlight=False, **kw)  # noqa: E731
    say(
        f"statemine lab replicate {rep.root}: seeds {rep.seeds[0]}-{rep.seeds[1]} (fresh, {runs} runs a cell, "
        f"in {out}) against the shipped runs; differences in percentage points, to the decimals that replicate"
    )
    for name, why in rep.skipped:
        say(f"{name}: not replicated: {why}")
    if rep.failures:
        run_id, error = rep.failures[0]
        say(f"{len(rep.failures)} fresh runs failed (left out), first {run_id}: {error}")
    if markdown:
        click.echo(
            "\n"
            + "\n".join(
                visible(line, backslash=False)
                for line in replicate.markdown(rep.comparisons, rep.conditions).split("\n")
            )
        )
    else:
        for f in rep.findings:
            rows = rep.comparisons[rep.comparisons["finding"] == f.name]
            if rows.empty:
                continue
            say("")
            say(f"{f.name} ({f.state})", style="bold")
            print_table(
                console,
                replicate.REPLICATION_HEADERS,
                replicate.replication_cells(rows),
                right=(2, 3, 4, 5, 7, 8),
            )
            conds = rep.conditions[rep.conditions["finding"] == f.name]
            print_table(console, replicate.MODE_HEADERS, replicate.mode_cells(conds), right=(2, 3))
    c = rep.comparisons
    say("")
    say(
        f"{int(c['inside'].sum())} of {len(c)} fresh differences inside the shipped 95% percentile "
        f"interval (studentized, as lab findings reports: {int(c['inside_t'].sum())}); {int(c['same_verdict'].sum())} of {len(c)} "
        f"same verdict; {int(rep.conditions['clustered'].sum())} conditions with clustered runs"
    )
