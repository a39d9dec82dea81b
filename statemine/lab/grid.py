"""Run a scenario's grid: every run once, in parallel, resumable, with a results table and
a manifest.

Layout of ``OUT``::

    OUT/manifest.json                 versions, patch hashes, seeds, the command
    OUT/results.csv, results.parquet  one row per run: scenario values, outcome, PLT, ...
    OUT/traces-index.json             the runs' Parquet footers: size, sha256, where the
                                      statemine metadata lies (parse/labruns.py)
    OUT/traces-cache.parquet          the runs read as one set, with each run file's stat
                                      (used while they match: parse/labruns.py)
    OUT/runs/<run_id>/config.json     the run config (docs/lab-protocol.md)
    OUT/runs/<run_id>/run.log.gz      the raw statemine log (virtual timestamps), gzipped
    OUT/runs/<run_id>/traces.parquet  the log parsed into a TraceSet (statemine.traces.save)
    OUT/runs/<run_id>/result.json     the run result, plus ``run_id`` and the cell's values
OUT/link-traces/<sha>.trace       the link traces the runs use (mahimahi, content-addressed)

A run is prepared in ``OUT/runs/.tmp-<run_id>/`` and renamed to ``OUT/runs/<run_id>/``
when complete (``os.replace`` of the directory), so an interrupted grid leaves no
half-written run; a later call skips every run whose directory exists. Failed runs
(a crash, a virtual-time limit, a build failure) are finished runs too: their
``result.json`` says ``"ok": false`` and why; ``retry_failed=True`` runs them again.

Each run executes in its own subprocess (the runners start one), so the pool is a
thread pool of ``jobs`` workers: the parent only waits.
"""

from __future__ import annotations

import concurrent.futures as cf
import gzip
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from ..columns import RESULT_COLUMNS
from ..errors import InputError, UsageError
from ..fileio import atomic_path, write_atomic, write_json
from ..parse.labruns import write_cache, write_index
from .cellular import read_trace_bytes
from .scenario import GRID_KEYS, LINK_TRACES_DIR, Scenario, run_config, run_id

RUNS_DIR = "runs"
#: The results table is rewritten at most this often while a grid runs (and at its end), s.
RESULTS_EVERY_S = 5.0


class Runner(Protocol):
    """What the grid needs of a runner module (statemine.lab.runners.*)."""

    def build(self, version: str, cache_dir: Any) -> Any: ...
    def run(self, config: dict, cache_dir: Any = None) -> dict: ...


@dataclass(frozen=True)
class PlannedRun:
    """One run of the grid: its id, the cell's values (scenario units) and its config."""

    run_id: str
    cell: dict
    config: dict


def plan(scenario: Scenario, only: Mapping[str, str] | None = None) -> list[PlannedRun]:
    """Every run of the scenario, in grid order; ``only`` keeps cells whose values, as
    text, equal the given ones (``{"profile": "mobile"}``).

    Raises :class:`UsageError` if ``only`` names a key that is not a grid key.
    """
    only = dict(only or {})
    for key in only:
        if key not in GRID_KEYS and key != "seed":
            raise UsageError(
                f"--only {key}=...: not a grid key (known: {', '.join(GRID_KEYS)}, seed)"
            )
    runs = []
    for cell in scenario.cells:
        if any(key != "seed" and _text(cell[key]) != value for key, value in only.items()):
            continue
        for seed in scenario.runs_of(cell):
            if "seed" in only and str(seed) != only["seed"]:
                continue
            config = run_config(cell, seed, scenario.time_limit_s, scenario.link_traces)
            runs.append(PlannedRun(run_id(config), cell, config))
    return runs


def _text(value: Any) -> str:
    """A cell value as ``--only`` compares it: 50.0 -> '50', None -> 'default'."""
    if value is None:
        return "default"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def resolve_link_traces(config: dict, base: Path, source: Path | None = None) -> dict:
    """``config`` with each relative ``link_trace.file`` made absolute against ``base``
    (the run's folder); checks the file exists and has the recorded sha256.

    Raises :class:`InputError` naming ``source`` (the config file) when a trace is
    missing or differs from the one the run was planned with.
    """
    import hashlib

    out = dict(config)
    path = dict(config.get("path") or {})
    for direction in ("down", "up"):
        link = path.get(direction)
        if not isinstance(link, dict) or not link.get("link_trace"):
            continue
        ref = link["link_trace"]
        if not isinstance(ref, dict) or not isinstance(ref.get("file"), str):
            raise InputError(
                source, None, f"path.{direction}.link_trace: must be a table with a file"
            )
        file = Path(ref["file"])
        file = file if file.is_absolute() else (base / file).resolve()
        try:
            data = read_trace_bytes(file)
        except InputError as exc:
            raise InputError(source, None, f"path.{direction}.link_trace: {exc}") from None
        if ref.get("sha256") and hashlib.sha256(data).hexdigest() != ref["sha256"]:
            raise InputError(
                source,
                None,
                f"path.{direction}.link_trace: {file} is not the trace the run used (sha256 differs)",
            )
        path[direction] = dict(link, link_trace=dict(ref, file=str(file)))
    out["path"] = path
    return out


def write_link_traces(scenario: Scenario, out: Path) -> None:
    """Write the scenario's link traces to ``out/link-traces/`` (once, atomically)."""
    if not scenario.link_traces:
        return
    d = out / LINK_TRACES_DIR
    for trace in scenario.link_traces.values():
        dest = d / trace.file_name
        if not dest.is_file():
            write_atomic(dest, trace.text)


def _flat_cell(cell: dict) -> dict:
    """A cell as table columns (lists/tables as JSON text, ``None`` kept)."""
    return {
        k: json.dumps(v, sort_keys=True) if isinstance(v, (dict, list, tuple)) else v
        for k, v in cell.items()
    }


def _write_json(path: Path, obj: Any) -> None:
    write_json(path, obj, sort_keys=True)


def _save_traces(
    log: Path,
    dest: Path,
    run_id_: str,
    labels: dict[str, str],
    format: str = "statemine",
    roles: Callable[[pd.DataFrame], Any] | None = None,
) -> str | None:
    """Parse the run's log (in ``format``: the runner's ``LOG_FORMAT``) into ``dest``
    (Parquet); returns an error text or None. ``roles`` (the runner's ``trace_roles``
    for this run's result) gives each trace's ``role`` where the log cannot tell which
    end is the server (kernel TCP: every socket is a "sender").

    Trace ids become ``<run_id>#<conn>/<role>`` and ``source`` the log's path inside the
    output folder (``runs/<run_id>/run.log.gz``), so the runs of a grid join without
    collisions and name their final files.
    """
    from .. import parse, traces

    try:
        ts = parse.read([log], format=format)
    except Exception as exc:  # a log the parser rejects makes the run fail, recorded
        return f"cannot parse the run's log: {exc}"
    if ts.n_traces == 0:
        return "the run's log has no statemine line (is the implementation patched?)"
    ids = {t: f"{run_id_}#{t.split('#', 1)[-1]}" for t in ts.traces["trace"]}
    events = ts.events.assign(trace=ts.events["trace"].map(ids))
    tr = ts.traces.assign(
        trace=ts.traces["trace"].map(ids), source=f"{RUNS_DIR}/{run_id_}/{log.name}.gz"
    )
    if roles is not None:
        tr = tr.assign(role=roles(tr))
    metrics = None if ts.metrics is None else ts.metrics.assign(trace=ts.metrics["trace"].map(ids))
    out = traces.TraceSet.from_events(events, tr, ts.meta, metrics).with_labels(**labels)
    traces.save(out, dest)
    return None


def _gzip(path: Path) -> Path:
    """Replace ``path`` by ``path.gz`` (byte-reproducible: no name or time in the header)."""
    dest = path.with_name(path.name + ".gz")
    with (
        open(path, "rb") as src,
        open(dest, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
    ):
        shutil.copyfileobj(src, gz, 1 << 20)
    path.unlink()
    return dest


def execute(
    run: PlannedRun,
    out: Path,
    runner: Runner | None,
    build_error: str | None,
    cache_dir: str | os.PathLike | None = None,
) -> dict:
    """Run one planned run into ``out/runs/<run_id>`` atomically; returns its result row.
    ``cache_dir`` is the build cache the runner was built in (None: its default)."""
    final = out / RUNS_DIR / run.run_id
    tmp = out / RUNS_DIR / f".tmp-{run.run_id}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    config = dict(run.config, log_path=str(tmp / "run.log"), result_path=str(tmp / "result.json"))
    _write_json(tmp / "config.json", config)
    try:
        config = resolve_link_traces(config, final)
    except InputError as exc:
        build_error = build_error or str(exc)
    if build_error is not None or runner is None:
        result = {"ok": False, "error": build_error or "no runner was built"}
    else:
        try:
            result = dict(runner.run(config, cache_dir))
        except Exception as exc:  # a runner bug must not stop the grid; it is recorded
            result = {"ok": False, "error": f"runner raised {type(exc).__name__}: {exc}"}
    for copy in tmp.glob("*.config.json"):  # a runner's own copy of config.json
        copy.unlink()
    log = tmp / "run.log"
    if not log.exists():
        log.write_text("", encoding="utf-8")
    if result.get("ok"):
        labels = {
            "run_id": run.run_id,
            "implementation": run.config["implementation"],
            "version": run.config["version"],
            "seed": str(run.config["seed"]),
        }
        labels.update({k: _text(v) for k, v in run.cell.items() if k != "stack"})
        fmt = getattr(runner, "LOG_FORMAT", "statemine")
        trace_roles = getattr(runner, "trace_roles", None)
        roles = None if trace_roles is None else (lambda tr: trace_roles(tr, result))
        error = _save_traces(log, tmp / "traces.parquet", run.run_id, labels, fmt, roles)
        if error:
            result.update(ok=False, error=error)
    _gzip(log)
    if result.get("error"):  # name the run's final folder, not the temporary one
        result["error"] = str(result["error"]).replace(str(tmp), str(final))
    result.update(run_id=run.run_id, seed=run.config["seed"], cell=run.cell)
    _write_json(tmp / "result.json", result)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    return result


def finished(out: Path, run_id_: str) -> dict | None:
    """The stored result of a finished run, or None."""
    path = out / RUNS_DIR / run_id_ / "result.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return None


def results_table(
    out: Path, runs: Sequence[PlannedRun] = (), known: Mapping[str, dict] | None = None
) -> pd.DataFrame:
    """One row per finished run in ``out``: the cell's values then the outcome.

    The table is the union of every run the folder holds, whichever call made it: the
    ``runs`` planned now first (in grid order), then every other finished run in
    ``runs/`` (earlier calls with other ``--only`` cells or another scenario; by run id,
    their cell from their ``result.json``). A run id is one row: a rerun's result replaces
    its older one. ``known`` maps run ids to results already in memory (read from disk
    otherwise).
    """
    rows = []
    for run in runs:
        res = known.get(run.run_id) if known else None
        if res is None:
            res = finished(out, run.run_id)
        if res is not None:
            rows.append(_result_row(run.cell, res))
    for rid in sorted(finished_ids(out) - {r.run_id for r in runs}):
        res = finished(out, rid)
        if res is not None and isinstance(res.get("cell"), dict):
            rows.append(_result_row(res["cell"], res))
    columns = [*GRID_KEYS, *RESULT_COLUMNS]
    return pd.DataFrame(rows, columns=columns)


def folder_results(out: Path) -> pd.DataFrame:
    """The results table of a lab output folder as ``results.csv`` reads, with a row for
    every finished run in ``runs/`` that it lacks (a results.csv an older statemine wrote
    with only its last call's runs): their rows from their ``result.json``. A folder
    without results.csv is its runs' results alone."""
    import io

    path = out / "results.csv"
    table = pd.read_csv(path) if path.is_file() else pd.DataFrame(columns=["run_id"])
    missing = finished_ids(out) - set(table["run_id"].astype(str))
    if not missing:
        return table
    extra = results_table(out)
    extra = extra[extra["run_id"].isin(missing)]
    both = pd.concat([table, extra], ignore_index=True) if len(table) else extra
    return pd.read_csv(io.StringIO(both.to_csv(index=False)))  # typed as results.csv reads


def finished_ids(out: Path) -> set[str]:
    """The ids of the runs finished in ``out`` (a ``runs/<run_id>/result.json``)."""
    try:
        entries = list(os.scandir(out / RUNS_DIR))
    except OSError:
        return set()
    return {
        e.name
        for e in entries
        if not e.name.startswith(".") and os.path.isfile(os.path.join(e.path, "result.json"))
    }


def _result_row(cell: dict, res: dict) -> dict:
    """One row of the results table: the cell's values, then the result's columns."""
    row = _flat_cell(cell)
    row.update({c: res.get(c) for c in RESULT_COLUMNS})
    return row


def write_results(out: Path, table: pd.DataFrame) -> None:
    """Write ``results.csv`` and ``results.parquet`` atomically."""
    for name, writer in (
        ("results.csv", lambda p: table.to_csv(p, index=False)),
        ("results.parquet", lambda p: table.to_parquet(p, index=False)),
    ):
        with atomic_path(out / name) as tmp:
            writer(tmp)


def source_revision() -> str | None:
    """The git commit of the statemine checkout running (``+dirty`` when its tracked files
    differ from it), or None outside a checkout."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():  # an installed package, perhaps inside another repository
        return None
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
        if rev.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "statemine"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def manifest(
    scenario: Scenario,
    runs: list[PlannedRun],
    builds: dict[str, dict],
    command: list[str],
    previous_runs: Mapping[str, dict] | None = None,
) -> dict:
    """What makes every run reproducible: versions, patch hashes, seeds, the command.
    ``runs`` lists the runs planned now after ``previous_runs`` (the folder's manifest
    before: the runs of earlier calls stay listed)."""
    from .. import __version__

    return {
        "statemine_version": __version__,
        "statemine_revision": source_revision(),
        "command": command,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "scenario": {
            "name": scenario.name,
            "file": str(scenario.source),
            "sha256": scenario.sha256,
            "runs": scenario.runs,
            "seed": scenario.seed,
            "time_limit_s": scenario.time_limit_s,
            "axes": scenario.axes,
        },
        "stacks": builds,
        "runs": {
            **(previous_runs or {}),
            **{
                r.run_id: {"seed": r.config["seed"], "stack": r.cell["stack"], "config": r.config}
                for r in runs
            },
        },
    }


def stack_info(impl: str, version: str, built: Any) -> dict:
    """Provenance of a built stack: the patch's sha256 and the fetched source's record."""
    from ..patch import registry

    info: dict[str, Any] = {
        "implementation": impl,
        "version": version,
        "built": str(built) if built else None,
    }
    try:
        info["patch_sha256"] = registry.sha256_file(registry.patch_path(impl, version))
    except Exception:  # "installed" (unpatched) aioquic has no patch
        info["patch_sha256"] = None
    if built:
        # the fetched tree's record: beside the build (aioquic: DIR/src -> DIR) or in the
        # patched tree next to it (quic-go: VERSION/harness-* -> VERSION/src-<patch sha>)
        psha = (info["patch_sha256"] or "")[:16]
        for parent in [Path(built), *Path(built).parents][:3]:
            candidates = [parent / ".statemine-source.json"]
            if psha:
                candidates.append(parent / f"src-{psha}" / ".statemine-source.json")
            found = next((c for c in candidates if c.is_file()), None)
            if found is not None:
                info["source"] = json.loads(found.read_text(encoding="utf-8"))
                break
    return info


def run_grid(
    scenario: Scenario,
    out: str | os.PathLike,
    *,
    jobs: int | None = None,
    only: Mapping[str, str] | None = None,
    retry_failed: bool = False,
    runners: Mapping[str, Runner] | None = None,
    cache_dir: str | os.PathLike | None = None,
    command: list[str] | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Run every unfinished run of ``scenario`` into ``out``; returns the results table.

    Builds each (implementation, version) once first; a failed build fails its runs
    (recorded) and the others go on. Writes ``manifest.json`` first and the results table
    every :data:`RESULTS_EVERY_S` and at the end, also when interrupted (Ctrl-C finishes
    the runs in progress, then stops), so the table matches ``runs/``.
    """
    out = Path(out)
    runs = plan(scenario, only)
    (out / RUNS_DIR).mkdir(parents=True, exist_ok=True)
    write_link_traces(scenario, out)
    runners = dict(runners) if runners is not None else {}
    todo = []
    for r in runs:
        res = finished(out, r.run_id)
        if res is None or (retry_failed and not res.get("ok")):
            todo.append(r)
    stacks = sorted({r.cell["stack"] for r in todo})
    builds: dict[str, dict] = _previous_builds(out)
    build_errors: dict[str, str] = {}
    for stack in stacks:
        impl, version = stack.split("@", 1)
        try:
            if impl not in runners:
                from .runners import runner_for

                runners[impl] = runner_for(impl)
            built = runners[impl].build(version, cache_dir)
            builds[stack] = stack_info(impl, version, built)
        except Exception as exc:  # recorded on each of its runs
            build_errors[stack] = f"build of {stack} failed: {exc}"
            builds[stack] = {
                "implementation": impl,
                "version": version,
                "error": build_errors[stack],
            }
    command = command if command is not None else list(sys.argv)
    _write_json(
        out / "manifest.json", manifest(scenario, runs, builds, command, _previous_runs(out))
    )

    def one(r: PlannedRun) -> dict:
        impl = r.config["implementation"]
        return execute(r, out, runners.get(impl), build_errors.get(r.cell["stack"]), cache_dir)

    jobs = jobs or os.cpu_count() or 1
    known = {r.run_id: res for r in runs if (res := finished(out, r.run_id)) is not None}
    last_write = time.monotonic()
    try:
        with (
            _progress(progress, len(runs), len(runs) - len(todo), scenario.name) as advance,
            cf.ThreadPoolExecutor(max_workers=jobs) as pool,
        ):
            futures = [pool.submit(one, r) for r in todo]
            try:
                for fut in cf.as_completed(futures):
                    res = fut.result()
                    known[res["run_id"]] = res
                    advance(res)
                    if time.monotonic() - last_write > RESULTS_EVERY_S:
                        write_results(out, results_table(out, runs, known))
                        last_write = time.monotonic()
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
    finally:  # also after an interruption: the table matches the finished runs
        table = results_table(out, runs, known)
        write_results(out, table)
        write_index(out)  # the runs' Parquet footers, for reading the folder (issue 29)
        write_cache(out)  # the runs as one set, while their files stay as they are
    return table


def _previous_builds(out: Path) -> dict[str, dict]:
    return _previous(out, "stacks")


def _previous_runs(out: Path) -> dict[str, dict]:
    """The manifest entries of the runs finished in ``out``: as its manifest listed them,
    else (a manifest that an earlier call overwrote) from the run's config.json and
    result.json."""
    listed = _previous(out, "runs")
    runs = {}
    for rid in sorted(finished_ids(out)):
        if rid in listed:
            runs[rid] = listed[rid]
            continue
        folder = out / RUNS_DIR / rid
        try:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            stack = json.loads((folder / "result.json").read_text(encoding="utf-8"))["cell"][
                "stack"
            ]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        config = {k: v for k, v in config.items() if k not in ("log_path", "result_path")}
        runs[rid] = {"seed": config.get("seed"), "stack": stack, "config": config}
    return runs


def _previous(out: Path, key: str) -> dict[str, dict]:
    """The table ``key`` of ``out``'s manifest.json ({} when there is none)."""
    path = out / "manifest.json"
    try:
        table = json.loads(path.read_text(encoding="utf-8")).get(key)
    except (OSError, ValueError, AttributeError):
        return {}
    return dict(table) if isinstance(table, dict) else {}


class _progress:
    """A rich progress bar over runs (or nothing), used as ``with ... as advance``."""

    def __init__(self, enabled: bool, total: int, done: int, name: str) -> None:
        self.enabled, self.total, self.done, self.name = enabled, total, done, name
        self.failed = 0

    def __enter__(self) -> Callable[[dict], None]:
        if not self.enabled:
            return lambda res: None
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[failed]} failed"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            transient=False,
        )
        self._bar.__enter__()
        self._task = self._bar.add_task(self.name, total=self.total, completed=self.done, failed=0)

        def advance(res: dict) -> None:
            self.failed += 0 if res.get("ok") else 1
            self._bar.update(self._task, advance=1, failed=self.failed)

        return advance

    def __exit__(self, *exc: Any) -> None:
        if self.enabled:
            self._bar.__exit__(*exc)
