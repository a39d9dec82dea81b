"""The ``statemine lab`` commands as library calls: each command is one of these plus
printing (the CLI in :mod:`statemine.cli.lab` parses arguments, calls, prints).

* :func:`run_scenario` -- ``statemine lab run SCENARIO --out DIR``
* :func:`list_scenarios` -- ``statemine lab scenarios [DIR]``
* :func:`list_keys` -- ``statemine lab keys``
* :func:`measure_findings` -- ``statemine lab findings [ROOT]``
* :func:`rerun` -- ``statemine lab rerun CONFIG --out DIR``
* :func:`replicate_findings` -- ``statemine lab replicate [ROOT] --out DIR``

Nothing is printed here; every file the command writes is written here.
Units: times in seconds, shares as fractions in [0, 1].
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError, UsageError

if TYPE_CHECKING:
    import pandas as pd

    from ..stats.resampling import IntervalMethod
    from .findings import Finding
    from .grid import Runner
    from .scenario import Scenario

#: Columns of :func:`list_scenarios`.
SCENARIO_COLUMNS = ("file", "name", "cells", "runs", "axes")
#: Columns of :func:`list_keys`.
KEY_COLUMNS = ("key", "default", "meaning")
#: What :func:`rerun` returns of a run's result (and ``lab rerun`` prints as JSON).
RERUN_FIELDS = ("ok", "error", "plt_s", "retransmissions", "packets_sent", "packets_dropped")


@dataclass(frozen=True)
class LabRun:
    """What :func:`run_scenario` ran: the folder's results table (every run it holds: this
    scenario's, also those finished before, and any earlier call's), the ids of the runs
    this call planned (``only`` applied), and the (run id, error) of each of those that
    failed."""

    table: pd.DataFrame
    out: Path
    failures: tuple[tuple[str, str], ...]
    planned: tuple[str, ...] = ()

    @property
    def ok(self) -> int:
        """Runs of this call's plan that finished well."""
        return len(self.planned) - len(self.failures)


def scenario_path(scenario: str | os.PathLike) -> Path:
    """The scenario file ``scenario`` names: a path to a TOML file, else the name of a
    shipped scenario (``mobile`` or ``mobile.toml``: examples/scenarios/mobile.toml, as
    ``statemine lab scenarios`` lists them). Raises :class:`InputError` when it is neither."""
    path = Path(scenario)
    if path.is_file():
        return path
    from ..resources import data_dir

    shipped = data_dir("examples/scenarios")
    name = path.name if path.suffix == ".toml" else f"{path.name}.toml"
    if path.name == str(scenario) and (shipped / name).is_file():
        return shipped / name
    names = ", ".join(sorted(p.stem for p in shipped.glob("*.toml")))
    raise InputError(
        path, None, f"no such scenario file, nor a shipped scenario of that name ({names})"
    )


def run_scenario(
    scenario: str | os.PathLike | Scenario,
    out: str | os.PathLike,
    *,
    jobs: int | None = None,
    only: Mapping[str, str] | None = None,
    retry_failed: bool = False,
    progress: bool = False,
    command: list[str] | None = None,
    runners: Mapping[str, Runner] | None = None,
) -> LabRun:
    """``statemine lab run``: every unfinished run of ``scenario`` (a TOML file, the name of
    a shipped scenario: :func:`scenario_path`, or a loaded
    :class:`~statemine.lab.scenario.Scenario`) into ``out`` (:func:`statemine.lab.grid.run_grid`:
    runs/, results.csv/.parquet, manifest.json; resumable; the results are the union of
    every run in ``out``). ``only``: grid key -> value, the cells to run; ``command``: the
    command line the manifest records (default ``sys.argv``); ``runners``: implementation
    -> runner, instead of the shipped ones."""
    from . import grid
    from .scenario import Scenario, load

    spec = scenario if isinstance(scenario, Scenario) else load(scenario_path(scenario))
    table = grid.run_grid(
        spec,
        out,
        jobs=jobs,
        only=only,
        retry_failed=retry_failed,
        runners=runners,
        command=command,
        progress=progress,
    )
    planned = tuple(r.run_id for r in grid.plan(spec, only))
    mine = table[table["run_id"].isin(planned)]
    ok = mine["ok"].astype("boolean").fillna(False).astype(bool)
    failures = tuple(
        (str(r), "" if e is None or e != e else str(e))
        for r, e in zip(mine.loc[~ok, "run_id"], mine.loc[~ok, "error"])
    )
    return LabRun(table=table, out=Path(out), failures=failures, planned=planned)


def list_scenarios(directory: str | os.PathLike | None = None) -> pd.DataFrame:
    """``statemine lab scenarios``: one row per ``*.toml`` scenario of ``directory``
    (default: the shipped examples/scenarios), by file name: :data:`SCENARIO_COLUMNS`
    (cells of the grid, runs = cells x runs per cell, axes: the keys with more than one
    value as ``key=v1|v2``); ``attrs["directory"]``: the folder listed."""
    import pandas as pd

    from .scenario import load

    if directory is None:
        from ..resources import data_dir

        directory = data_dir("examples/scenarios")
    rows = []
    for path in sorted(Path(directory).glob("*.toml")):
        spec = load(path)
        axes = ", ".join(f"{k}={'|'.join(map(str, v))}" for k, v in spec.axes.items() if len(v) > 1)
        rows.append((path.name, spec.name, len(spec.cells), len(spec.cells) * spec.runs, axes))
    frame = pd.DataFrame(rows, columns=list(SCENARIO_COLUMNS))
    frame.attrs["directory"] = str(directory)
    return frame


def list_keys() -> pd.DataFrame:
    """``statemine lab keys``: one row per grid key a scenario may set (:data:`KEY_COLUMNS`;
    the default as text, "-" where there is none; the meaning with its unit)."""
    import pandas as pd

    from .scenario import GRID_KEYS

    rows = [
        (key, "-" if spec.default is None else str(spec.default), spec.doc)
        for key, spec in GRID_KEYS.items()
    ]
    return pd.DataFrame(rows, columns=list(KEY_COLUMNS))


@dataclass(frozen=True)
class FindingsOutput:
    """What :func:`measure_findings` measured: the findings tested (in order), the
    comparisons (:func:`statemine.lab.findings.assess` rows) and each condition's figures
    (:func:`statemine.lab.findings.evaluate` rows)."""

    findings: tuple[Finding, ...]
    verdicts: pd.DataFrame
    conditions: pd.DataFrame


#: Where ``lab findings`` looks without a ROOT (relative to the current folder).
DEFAULT_TRACES = Path("traces")


def measure_findings(
    root: str | os.PathLike | None = None,
    names: Sequence[str] = (),
    *,
    alpha: float = 0.01,
    n_perm: int = 9999,
    n_boot: int = 2000,
    seed: int = 0,
    csv: str | os.PathLike | None = None,
    why: bool = False,
    interval: IntervalMethod | None = None,
) -> FindingsOutput:
    """``statemine lab findings``: test the paper's findings (``names``, default all of
    :data:`statemine.lab.findings.FINDINGS`) on the lab traces under ``root`` with
    statemine's diff (``n_perm`` permutations, ``n_boot`` bootstrap resamples, ``seed``, the
    ``interval`` method, default :data:`statemine.lab.findings.INTERVAL`; reproduced when
    p < ``alpha``), and with ``csv`` write the comparisons there (atomically); ``why``: each
    comparison through :func:`statemine.explain.explain`, its one line on why in a last
    ``why`` column (:func:`statemine.lab.findings.assess`). Raises :class:`UsageError` when
    ``root`` holds no finding's folder or a
    name is unknown; without ``root``, ``traces/`` of the current folder, and when there is
    none a :class:`UsageError` saying where traces are (:func:`default_traces`)."""
    from . import findings

    root = default_traces() if root is None else root

    known = {f.name for f in findings.FINDINGS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"unknown finding {unknown[0]!r} (findings: {', '.join(sorted(known))})")
    chosen = tuple(f for f in findings.FINDINGS if not names or f.name in names)
    verdicts, conditions = findings.measure(
        Path(root),
        chosen,
        alpha=alpha,
        n_perm=n_perm,
        n_boot=n_boot,
        seed=seed,
        why=why,
        interval=findings.INTERVAL if interval is None else interval,
    )
    if verdicts.empty:
        raise UsageError(
            f"{root}: no scenario folder of a finding "
            f"({', '.join(f.scenario for f in findings.FINDINGS)})"
        )
    if csv is not None:
        from ..escape import frame_csv
        from ..fileio import write_atomic

        write_atomic(csv, frame_csv(verdicts))
    return FindingsOutput(findings=chosen, verdicts=verdicts, conditions=conditions)


def default_traces(command: str = "findings") -> Path:
    """``traces/`` of the current folder, when it is one; else a :class:`UsageError` naming
    the shipped traces of the checkout statemine runs from (if any), for ``statemine lab
    COMMAND``, and what ROOT is."""
    if DEFAULT_TRACES.is_dir():
        return DEFAULT_TRACES
    checkout = checkout_traces()
    where = (
        f"the shipped traces are in {checkout} (statemine lab {command} {checkout})"
        if checkout is not None
        else "the shipped traces come with statemine's source repository (its traces/ "
        "folder), not with the installed package"
    )
    raise UsageError(
        f"no traces/ folder here: give ROOT, the folder holding one `statemine lab run` "
        f"output per scenario (e.g. ROOT/mobile from `statemine lab run mobile --out "
        f"ROOT/mobile`); {where}"
    )


def checkout_traces() -> Path | None:
    """The ``traces/`` folder of the source checkout statemine runs from (an editable
    install or ``python -m statemine`` in place), or None (an installed wheel)."""
    from importlib.resources import files

    top = Path(str(files("statemine"))).parent
    folder = top / "traces"
    if (top / "setup.cfg").is_file() and folder.is_dir():
        from ..parse import is_lab_output

        if any(is_lab_output(d) for d in folder.iterdir() if d.is_dir()):
            return folder.resolve()
    return None


def cache_folder(folder: str | os.PathLike) -> str | None:
    """Rebuild the lab ``folder``'s ``traces-index.json`` and ``traces-cache.parquet``
    from its runs (``statemine lab cache``); None when the cache is written, else why not.
    Raises :class:`InputError` when ``folder`` is not a lab output folder."""
    from ..parse import is_lab_output
    from ..parse.labruns import write_cache, write_index

    path = Path(folder)
    if not is_lab_output(path):
        raise InputError(
            path, None, "not a folder written by statemine lab run (manifest.json, runs/)"
        )
    write_index(path)
    return write_cache(path)


def rerun(config: str | os.PathLike, out: str | os.PathLike) -> dict[str, Any]:
    """``statemine lab rerun``: run one run config (a run folder's config.json) again into
    ``out`` (run.log, result.json); the same stack version gives the same log, byte for
    byte. Returns the run's result (:data:`RERUN_FIELDS` and more); a config that is not
    one is an :class:`InputError`."""
    from .grid import resolve_link_traces
    from .runners import runner_for

    config, out = Path(config), Path(out)
    try:
        cfg = json.loads(config.read_text(encoding="utf-8"))
        runner = runner_for(cfg["implementation"])
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(config, None, f"not a run config: {exc}") from None
    except OSError as exc:
        raise InputError(config, None, f"cannot read: {exc.strerror or exc}") from None
    if not isinstance(cfg.get("path"), dict):
        raise InputError(config, None, "not a run config: no path table")
    cfg = resolve_link_traces(cfg, config.resolve().parent, config)
    out.mkdir(parents=True, exist_ok=True)
    cfg = dict(
        cfg, log_path=str(out.resolve() / "run.log"), result_path=str(out.resolve() / "result.json")
    )
    return runner.run(cfg)


@dataclass(frozen=True)
class ReplicationOutput:
    """What :func:`replicate_findings` did: the shipped traces' folder, the findings
    replicated and those skipped (with why), the fresh seeds (first, last), the failed fresh
    runs (run id, error), and the two tables of :func:`statemine.lab.replicate.compare`."""

    root: Path
    findings: tuple[Finding, ...]
    skipped: tuple[tuple[str, str], ...]
    seeds: tuple[int, int]
    failures: tuple[tuple[str, str], ...]
    comparisons: pd.DataFrame
    conditions: pd.DataFrame


def replicate_findings(
    root: str | os.PathLike | None = None,
    out: str | os.PathLike = "replication",
    names: Sequence[str] = (),
    *,
    runs: int = 20,
    first_seed: int | None = None,
    jobs: int | None = None,
    alpha: float = 0.01,
    n_perm: int = 9999,
    n_boot: int = 2000,
    seed: int = 0,
    csv: str | os.PathLike | None = None,
    progress: bool = False,
    runners: Mapping[str, Runner] | None = None,
) -> ReplicationOutput:
    """``statemine lab replicate``: run the cells of the findings ``names`` (default all)
    again on ``runs`` fresh seeds from ``first_seed`` (default past every shipped seed,
    :func:`statemine.lab.replicate.plan`) into ``out/<scenario folder>`` (resumable), and
    compare them with the shipped runs under ``root`` (:func:`statemine.lab.replicate.compare`,
    ``alpha``, ``n_perm``, ``n_boot`` and ``seed`` as in :func:`measure_findings`); with
    ``csv`` write the comparisons there (atomically). Findings with real-time stacks are
    skipped. Without ``root``, ``traces/`` of the current folder (:func:`default_traces`).
    Raises :class:`UsageError` for an unknown name, a missing shipped folder, a fresh seed a
    shipped run used, or nothing to replicate."""
    from . import findings, grid, replicate

    root = default_traces("replicate") if root is None else root

    known = {f.name for f in findings.FINDINGS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"unknown finding {unknown[0]!r} (findings: {', '.join(sorted(known))})")
    if runs < 2:
        raise UsageError(f"--runs must be at least 2, not {runs}")
    chosen = tuple(f for f in findings.FINDINGS if not names or f.name in names)
    skipped = tuple(
        (f.name, "real-time stacks (namespaces, not deterministic per seed)")
        for f in chosen
        if not replicate.replicable(f)
    )
    todo = tuple(f for f in chosen if replicate.replicable(f))
    if not todo:
        raise UsageError("no finding to replicate: every one chosen runs stacks in real time")
    batches = replicate.plan(Path(root), todo, runs=runs, seed=first_seed)
    failures: list[tuple[str, str]] = []
    for batch in batches:
        table = grid.run_grid(
            batch.scenario,
            Path(out) / batch.folder,
            jobs=jobs,
            runners=runners,
            progress=progress,
            command=["statemine", "lab", "replicate", str(root), "--out", str(out)],
        )
        ok = table["ok"].fillna(False).astype(bool)
        failures += [
            (str(r), str(e)) for r, e in zip(table.loc[~ok, "run_id"], table.loc[~ok, "error"])
        ]
    seeds = batches[0].seeds
    comparisons, conditions = replicate.compare(
        Path(root), Path(out), todo, seeds, alpha=alpha, n_perm=n_perm, n_boot=n_boot, seed=seed
    )
    if csv is not None:
        from ..escape import frame_csv
        from ..fileio import write_atomic

        write_atomic(csv, frame_csv(comparisons))
    return ReplicationOutput(
        Path(root), todo, skipped, seeds, tuple(failures), comparisons, conditions
    )
