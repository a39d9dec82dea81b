"""Replicate the findings on a fresh batch of seeds (``statemine lab replicate``).

Each finding (:data:`statemine.lab.findings.FINDINGS`) is measured on the shipped runs of
its scenario folders under ``root`` (seeds 1-20 in ``traces/``). :func:`plan` makes, per
folder, the scenario of its shipped file (``examples/scenarios/<folder>.toml``) narrowed
to the cells the finding's comparisons use, with seeds that no shipped run of that
folder used (checked against the ``seed`` column of its results.csv); running it
(:func:`statemine.lab.grid.run_grid`) puts the fresh runs in ``out/<folder>``.
:func:`compare` then sets the two batches side by side, comparison by comparison, with
statemine's diff (the shipped batch's percentile interval, ``diff``'s default, and for
both batches the studentized interval, the one ``lab findings`` reports of :func:`statemine.stats.resampling.bootstrap_delta`),
says whether the fresh difference falls inside the shipped interval, how far apart the
two batches are in standard errors, how many runs a side needs for a +/-2 point interval
(:func:`statemine.stats.resampling.runs_for_halfwidth`, from both batches' per-run
variance) and, per condition, whether the per-run shares are clustered (Silverman's test,
:func:`statemine.stats.modes.modes`).

Real-time stacks (``*-rt``, kernel ``tcp``) are not replicated: they need network
namespaces and real time, and their runs are not deterministic per seed.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import traces, units
from ..errors import UsageError
from ..stats.modes import Modes, modes
from ..stats.resampling import _ratio_moments, delta_se2, runs_for_halfwidth
from ..stats.summary import trace_state_times
from .findings import Finding, _stacks, assess, load_scenarios, records, select
from .scenario import REALTIME_SUFFIX, Scenario

#: The half-width (a fraction: 2 percentage points) :func:`compare` sizes the runs for.
HALF_WIDTH = 0.02
#: Fresh seeds start past the shipped ones at the next multiple of this, plus one (1001).
SEED_BLOCK = 1000


@dataclasses.dataclass(frozen=True)
class Batch:
    """The fresh runs of one scenario folder: ``scenario`` (narrowed to the finding's
    cells, its ``seed`` the first fresh seed) and the shipped seeds it must avoid."""

    folder: str
    scenario: Scenario
    shipped_seeds: tuple[int, ...]

    @property
    def seeds(self) -> tuple[int, int]:
        """The first and last fresh seed."""
        return self.scenario.seed, self.scenario.seed + self.scenario.runs - 1


def realtime(stack: str) -> bool:
    """Whether a grid ``stack`` (``impl@version``) runs in real time."""
    impl = stack.split("@", 1)[0]
    return impl == "tcp" or impl.endswith(REALTIME_SUFFIX)


def cell_matches(cell: dict, where: dict[str, str]) -> bool:
    """Whether a scenario cell holds the runs a condition's ``where`` selects (the trace
    labels the grid writes: ``implementation``, ``version`` and each key as text)."""
    from .grid import _text

    impl, version = str(cell["stack"]).split("@", 1)
    for key, value in where.items():
        if key == "implementation":
            got = impl
        elif key == "version":
            got = version
        elif key in cell:
            got = _text(cell[key])
        else:
            return False
        if got != value:
            return False
    return True


def compared_conditions(f: Finding) -> list[dict[str, str]]:
    """The ``where`` of each condition a comparison of ``f`` uses, in the finding's order."""
    used = {c for comp in f.comparisons for c in (comp.a, comp.b)}
    return [c.where for c in f.conditions if c.label in used]


def replicable(f: Finding) -> bool:
    """Whether every scenario folder of ``f`` runs in virtual time (from its shipped file)."""
    try:
        return not any(
            realtime(c["stack"]) for name in f.scenario.split("+") for c in _spec(name).cells
        )
    except UsageError:
        return False


def _spec(folder: str) -> Scenario:
    """The shipped scenario file of a scenario folder (examples/scenarios/<folder>.toml)."""
    from ..resources import data_dir
    from .scenario import load

    path = Path(data_dir("examples/scenarios")) / f"{folder}.toml"
    if not path.is_file():
        raise UsageError(f"{folder}: no shipped scenario file {path}")
    return load(path)


def shipped_seeds(folder: Path) -> set[int]:
    """The seeds of the runs in a lab output folder: its results.csv ``seed`` column and
    each run's config.json (so runs left out of the table are counted too)."""
    seeds: set[int] = set()
    table = folder / "results.csv"
    if table.is_file():
        col = pd.read_csv(table, usecols=lambda c: c == "seed")
        if "seed" in col:
            seeds.update(int(s) for s in col["seed"].dropna())
    for config in (folder / "runs").glob("*/config.json"):
        try:
            seeds.add(int(json.loads(config.read_text(encoding="utf-8"))["seed"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return seeds


def plan(
    root: str | Path, findings: Iterable[Finding], *, runs: int = 20, seed: int | None = None
) -> list[Batch]:
    """One :class:`Batch` per scenario folder the replicable ``findings`` use (folders
    shared by several findings once, with the union of their cells): ``runs`` runs per
    cell from seed ``seed`` (default: past every shipped seed of ``root``'s folders, at the
    next multiple of :data:`SEED_BLOCK`, plus one). Raises :class:`UsageError` when a folder
    is missing under ``root`` or a fresh seed was used by a shipped run of its folder."""
    root = Path(root)
    cells: dict[str, list[dict]] = {}
    specs: dict[str, Scenario] = {}
    for f in findings:
        if not replicable(f):
            continue
        for name in f.scenario.split("+"):
            if not (root / name / "runs").is_dir():
                raise UsageError(f"{root / name}: no shipped runs of finding {f.name!r}")
            specs.setdefault(name, _spec(name))
            kept = cells.setdefault(name, [])
            for cell in specs[name].cells:
                if cell not in kept and any(cell_matches(cell, w) for w in compared_conditions(f)):
                    kept.append(cell)
    seeds = {name: shipped_seeds(root / name) for name in cells}
    if seed is None:
        top = max((max(s) for s in seeds.values() if s), default=0)
        seed = (top // SEED_BLOCK + 1) * SEED_BLOCK + 1
    fresh = set(range(seed, seed + runs))
    batches = []
    for name, kept in cells.items():
        used = sorted(fresh & seeds[name])
        if used:
            raise UsageError(
                f"{root / name}: seed {used[0]} of the fresh batch {seed}-{seed + runs - 1} was "
                f"used by a shipped run; choose --seed past {max(seeds[name])}"
            )
        order = [c for c in specs[name].cells if c in kept]  # the grid's order
        spec = dataclasses.replace(specs[name], cells=order, seed=seed, runs=runs)
        batches.append(Batch(name, spec, tuple(sorted(seeds[name]))))
    return batches


def fresh_only(
    loaded: dict[str, tuple[traces.TraceSet, pd.DataFrame]], seeds: tuple[int, int]
) -> dict[str, tuple[traces.TraceSet, pd.DataFrame]]:
    """``loaded`` (:func:`load_scenarios`) keeping the runs whose seed is in ``seeds``
    (first, last): a folder reused for other batches gives only this batch's runs."""
    out = {}
    for key, (ts, results) in loaded.items():
        seed = pd.to_numeric(ts.traces["seed"].astype(str), errors="coerce").to_numpy()
        mask = (seed >= seeds[0]) & (seed <= seeds[1])
        out[key] = (ts if mask.all() else ts.subset(mask), results)
    return out


# -- the two batches side by side --------------------------------------------------------
REPLICATION_COLUMNS = [
    "finding",
    "stack",
    "a",
    "b",
    "direction",
    "runs_shipped",
    "runs_fresh",
    "delta_shipped",
    "lo_shipped",
    "hi_shipped",
    "lo_shipped_t",
    "hi_shipped_t",
    "p_shipped",
    "verdict_shipped",
    "delta_fresh",
    "lo_fresh_t",
    "hi_fresh_t",
    "p_fresh",
    "verdict_fresh",
    "inside",
    "inside_t",
    "same_verdict",
    "z_between",
    "runs_for_2pp",
]
CONDITION_COLUMNS = [
    "finding",
    "stack",
    "condition",
    "runs_shipped",
    "runs_fresh",
    "share_shipped",
    "share_fresh",
    "modes_shipped",
    "modes_fresh",
    "clustered",
]


def per_run(ts: traces.TraceSet, state: str) -> np.ndarray:
    """Runs x 2: the seconds the server traces of each run spent in ``state`` and in the
    other states (runs in ``run_id`` order; runs without time left out)."""
    if ts.n_traces == 0:
        return np.zeros((0, 2))
    times = trace_state_times(ts)
    runs = times.groupby(ts.traces.set_index("trace")["run_id"].reindex(times.index).to_numpy())
    per = runs.sum()
    inside = per[state].to_numpy(float) if state in per.columns else np.zeros(len(per))
    out = np.c_[inside, per.sum(axis=1).to_numpy(float) - inside]
    return out[out.sum(axis=1) > 0]


def _se(x: np.ndarray) -> float:
    """The delta-method standard error of a side's pooled share (runs x 2 of :func:`per_run`)."""
    if len(x) < 2:
        return float("nan")
    t = x.sum(axis=1)
    return float(np.sqrt(delta_se2(_ratio_moments(x[:, :1], t), np.ones(len(t)))[0]))


def compare(
    root: str | Path,
    out: str | Path,
    findings: Iterable[Finding],
    seeds: tuple[int, int],
    *,
    alpha: float = 0.01,
    n_perm: int = 9999,
    n_boot: int = 2000,
    seed: int = 0,
    mode_alpha: float = 0.05,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(comparisons, conditions)`` of the replicable ``findings``: the shipped runs under
    ``root`` against the fresh runs (seeds ``seeds``, first and last) under ``out``.

    ``comparisons`` (:data:`REPLICATION_COLUMNS`): per (finding, stack, comparison) of both
    batches, ``delta`` = B - A (fractions), the shipped percentile interval
    (``lo_shipped``/``hi_shipped``, ``diff``'s default) and the studentized intervals
    (``*_t``, as ``lab findings`` gives them), Holm p-values and verdicts (:func:`statemine.lab.findings.assess`);
    ``inside``/``inside_t``: the fresh difference lies in the shipped percentile/studentized
    interval; ``z_between``: (fresh - shipped) over the delta-method standard error of that
    difference of two independent batches; ``runs_for_2pp``: runs per side for a 95%
    interval of +/-2 points, from the two batches' runs pooled.
    ``conditions`` (:data:`CONDITION_COLUMNS`): per condition, the pooled shares of each
    batch and the modes of each batch's per-run shares (:class:`statemine.stats.modes.Modes`,
    Silverman's test at ``mode_alpha``); ``clustered``: either batch is.
    """
    chosen = tuple(f for f in findings if replicable(f))
    opts: dict[str, Any] = dict(alpha=alpha, n_perm=n_perm, n_boot=n_boot, seed=seed)
    shipped_loaded = load_scenarios(root, chosen)
    fresh_loaded = fresh_only(load_scenarios(out, chosen), seeds)
    ship_p = assess(root, chosen, loaded=shipped_loaded, interval="percentile", **opts)
    ship_t = assess(root, chosen, loaded=shipped_loaded, interval="studentized", **opts)
    fresh_t = assess(out, chosen, loaded=fresh_loaded, interval="studentized", **opts)
    key = ["finding", "stack", "a", "b"]
    rows, cond_rows = [], []
    for f in chosen:
        if f.scenario not in shipped_loaded or f.scenario not in fresh_loaded:
            continue
        conditions = {c.label: c for c in f.conditions}
        bases = {
            "shipped": dict(_stacks(shipped_loaded[f.scenario][0], f.per_stack)),
            "fresh": dict(_stacks(fresh_loaded[f.scenario][0], f.per_stack)),
        }
        runs: dict[tuple[str, str, str], np.ndarray] = {}
        for stack in bases["shipped"]:
            for batch in ("shipped", "fresh"):
                for label in {c for comp in f.comparisons for c in (comp.a, comp.b)}:
                    base = bases[batch].get(stack)
                    sub = select(base, conditions[label].where) if base is not None else None
                    runs[batch, stack, label] = (
                        per_run(sub, f.state) if sub is not None else np.zeros((0, 2))
                    )
        for stack in bases["shipped"]:
            for label in [c.label for c in f.conditions]:
                if ("shipped", stack, label) not in runs:
                    continue
                xs, xf = runs["shipped", stack, label], runs["fresh", stack, label]
                ms, mf = (
                    modes(x[:, 0] / x.sum(axis=1), alpha=mode_alpha, seed=seed) for x in (xs, xf)
                )
                cond_rows.append(
                    {
                        "finding": f.name,
                        "stack": stack,
                        "condition": label,
                        "runs_shipped": len(xs),
                        "runs_fresh": len(xf),
                        "share_shipped": _share(xs),
                        "share_fresh": _share(xf),
                        "modes_shipped": ms,
                        "modes_fresh": mf,
                        "clustered": ms.clustered or mf.clustered,
                    }
                )
        for comp in f.comparisons:
            for stack in bases["shipped"]:
                pick = {"finding": f.name, "stack": stack, "a": comp.a, "b": comp.b}
                s_p, s_t, f_t = (_row(frame, pick, key) for frame in (ship_p, ship_t, fresh_t))
                if s_p is None or s_t is None or f_t is None:
                    continue
                xa_s, xb_s = runs["shipped", stack, comp.a], runs["shipped", stack, comp.b]
                xa_f, xb_f = runs["fresh", stack, comp.a], runs["fresh", stack, comp.b]
                se = math.sqrt(sum(_se(x) ** 2 for x in (xa_s, xb_s, xa_f, xb_f)))
                d_s, d_f = float(s_p["delta"]), float(f_t["delta"])
                rows.append(
                    {
                        **pick,
                        "direction": comp.direction,
                        "runs_shipped": f"{s_p['runs_a']} / {s_p['runs_b']}",
                        "runs_fresh": f"{f_t['runs_a']} / {f_t['runs_b']}",
                        "delta_shipped": d_s,
                        "lo_shipped": s_p["delta_lo"],
                        "hi_shipped": s_p["delta_hi"],
                        "lo_shipped_t": s_t["delta_lo"],
                        "hi_shipped_t": s_t["delta_hi"],
                        "p_shipped": s_p["p_holm"],
                        "verdict_shipped": s_p["verdict"],
                        "delta_fresh": d_f,
                        "lo_fresh_t": f_t["delta_lo"],
                        "hi_fresh_t": f_t["delta_hi"],
                        "p_fresh": f_t["p_holm"],
                        "verdict_fresh": f_t["verdict"],
                        "inside": bool(s_p["delta_lo"] <= d_f <= s_p["delta_hi"]),
                        "inside_t": bool(s_t["delta_lo"] <= d_f <= s_t["delta_hi"]),
                        "same_verdict": s_p["verdict"] == f_t["verdict"],
                        "z_between": (d_f - d_s) / se if se > 0 else float("nan"),
                        "runs_for_2pp": runs_for_halfwidth(
                            np.r_[xa_s, xa_f], np.r_[xb_s, xb_f], HALF_WIDTH
                        )
                        if min(len(xa_s) + len(xa_f), len(xb_s) + len(xb_f)) >= 2
                        else -1,
                    }
                )
    return (
        pd.DataFrame(rows, columns=REPLICATION_COLUMNS),
        pd.DataFrame(cond_rows, columns=CONDITION_COLUMNS),
    )


def _share(x: np.ndarray) -> float:
    total = x.sum()
    return float(x[:, 0].sum() / total) if total > 0 else float("nan")


def _row(frame: pd.DataFrame, pick: dict[str, str], key: list[str]) -> dict | None:
    """The row of ``frame`` whose ``key`` columns equal ``pick`` (None when absent)."""
    hit = frame
    for k in key:
        hit = hit[hit[k] == pick[k]]
    return None if hit.empty else hit.iloc[0].to_dict()


# -- as text (terminal and docs/findings.md share these cells) ----------------------------
REPLICATION_HEADERS = (
    "stack",
    "A -> B",
    "shipped B - A [percentile CI]",
    "studentized CI",
    "fresh B - A [studentized CI]",
    "p (Holm) shipped / fresh",
    "fresh in shipped CI",
    "z",
    "runs for ±2 pp",
    "verdict shipped / fresh",
)
MODE_HEADERS = (
    "stack",
    "condition",
    "share shipped / fresh",
    "runs",
    "per-run modes, shipped",
    "per-run modes, fresh",
)


def decimals(r: Any) -> int:
    """Decimals of a comparison's figures: as many as replicate (:func:`statemine.units.
    decimals_for` of the larger of the gap between the batches and the shipped studentized
    interval's half-width)."""
    spread = max(abs(r.delta_fresh - r.delta_shipped), (r.hi_shipped_t - r.lo_shipped_t) / 2)
    return units.decimals_for(spread)


def replication_cells(rows: pd.DataFrame) -> list[tuple[str, ...]]:
    """One text row per :func:`compare` comparison (:data:`REPLICATION_HEADERS`), the
    differences in percentage points to :func:`decimals`."""
    out: list[tuple[str, ...]] = []
    for r in records(rows):
        n = decimals(r)
        inside = ("yes" if r.inside else "no") + " / " + ("yes" if r.inside_t else "no")
        out.append(
            (
                r.stack,
                f"{r.a} -> {r.b} ({r.direction})",
                units.share_delta_at(r.delta_shipped, r.lo_shipped, r.hi_shipped, decimals=n),
                units.share_delta_at(r.delta_shipped, r.lo_shipped_t, r.hi_shipped_t, decimals=n)
                .split(" ", 1)[1]
                .removesuffix(" pp"),
                units.share_delta_at(r.delta_fresh, r.lo_fresh_t, r.hi_fresh_t, decimals=n),
                f"{units.p_value(r.p_shipped)} / {units.p_value(r.p_fresh)}",
                inside + " (pct / t)",
                units.NA if not np.isfinite(r.z_between) else f"{r.z_between:+.1f}",
                str(r.runs_for_2pp) if r.runs_for_2pp > 0 else units.NA,
                r.verdict_shipped if r.same_verdict else f"{r.verdict_shipped} / {r.verdict_fresh}",
            )
        )
    return out


def modes_text(m: Modes) -> str:
    """``"1"`` or ``"clustered: 2 modes, 1% (9 runs), 28% (11 runs); p 0.001"``: the modes
    Silverman's test supports, where they lie (whole percent), the runs in each one's
    basin, and the p-value that rejected one mode fewer; "2 modes" without "clustered"
    when all but one mode hold a single run (an outlier).

    >>> modes_text(Modes(2, (0.012, 0.281), (9, 11), (0.1, 0.05), (0.001, 0.4)))
    'clustered: 2 modes, 1% (9 runs), 28% (11 runs); p 0.001'
    >>> modes_text(Modes(2, (0.193, 0.211), (1, 19), (0.1, 0.05), (0.02, 0.7)))
    '2 modes, 19% (1 run), 21% (19 runs); p 0.02'
    >>> modes_text(Modes(1, (0.2,), (20,), (0.1,), (0.3,)))
    '1'
    """
    locations, sizes, p_values = m.locations, m.sizes, m.p_values
    k = len(locations)
    if k <= 1:
        return "1"
    near = ", ".join(
        f"{100 * v:.0f}% ({n} run{'s' if n != 1 else ''})" for v, n in zip(locations, sizes)
    )
    tested = f"; p {units.p_value(p_values[k - 2])}" if len(p_values) >= k - 1 else ""
    clustered = "clustered: " if sum(n >= 2 for n in sizes) >= 2 else ""
    return f"{clustered}{k} modes, {near}{tested}"


def mode_cells(rows: pd.DataFrame) -> list[tuple[str, ...]]:
    """One text row per :func:`compare` condition (:data:`MODE_HEADERS`)."""
    return [
        (
            r.stack,
            r.condition,
            f"{units.share(r.share_shipped)} / {units.share(r.share_fresh)}",
            f"{r.runs_shipped} + {r.runs_fresh}",
            modes_text(r.modes_shipped),
            modes_text(r.modes_fresh),
        )
        for r in records(rows)
    ]


def markdown(comparisons: pd.DataFrame, conditions: pd.DataFrame) -> str:
    """The two tables of :func:`compare` as Markdown (``|`` escaped)."""

    def table(headers: tuple[str, ...], lines: list[str]) -> str:
        head = ["| finding | " + " | ".join(headers) + " |", "|" + "---|" * (len(headers) + 1)]
        return "\n".join(head + lines)

    def rows(frame: pd.DataFrame, cells: list[tuple[str, ...]]) -> list[str]:
        esc = lambda text: str(text).replace("|", "\\|")  # noqa: E731
        return [
            "| " + " | ".join(esc(c) for c in (name, *row)) + " |"
            for name, row in zip(frame["finding"], cells)
        ]

    return (
        table(REPLICATION_HEADERS, rows(comparisons, replication_cells(comparisons)))
        + "\n\n"
        + table(MODE_HEADERS, rows(conditions, mode_cells(conditions)))
        + "\n"
    )
