"""The path model's and the client's test vectors (statemine/lab/data/path-vectors.json,
docs/lab-protocol.md "Test vectors"): the Python reference must pass every one; the Go
copy runs the same file in vectors_test.go (tests/test_quicgo.py runs it)."""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path

import numpy as np
import pytest

from statemine.lab.cellular import LinkTrace
from statemine.lab.path import Link, LinkConfig
from statemine.lab.scenario import link_config
from statemine.lab.variability import CpuTime, ReadRate

VECTORS = json.loads(
    (
        Path(__file__).resolve().parents[1] / "statemine" / "lab" / "data" / "path-vectors.json"
    ).read_text(encoding="utf-8")
)


def make_link(vec: dict, seed: int) -> Link:
    trace = LinkTrace.from_times(np.array(vec["trace"], dtype=np.int64)) if "trace" in vec else None
    return Link(LinkConfig.from_dict(vec["link"]), seed, trace=trace)


@pytest.mark.parametrize("vec", VECTORS["deterministic"], ids=lambda v: v["name"])
def test_deterministic_vector(vec):
    link = make_link(vec, 1)
    got = [link.send(t, n) for t, n in vec["sends"]]
    for g, want in zip(got, vec["expect"]):
        assert (g is None) == (want is None), (got, vec["expect"])
        if want is not None:
            assert g == pytest.approx(want, abs=1e-9), (got, vec["expect"])


def measure(vec: dict) -> float:
    """The statistic a statistical vector names, measured on the Python model."""
    kind = vec["kind"]
    if kind in ("loss_share", "mean_burst", "mean_delay", "reordered_share"):
        link = make_link(vec, vec["seed"])
        times = [i * vec["spacing_s"] for i in range(vec["packets"])]
        arrivals = [link.send(t, vec["size"]) for t in times]
        if kind == "loss_share":
            return link.stats.lost / link.stats.sent
        if kind == "mean_burst":
            lost = np.array([a is None for a in arrivals])
            starts = lost & ~np.concatenate(([False], lost[:-1]))
            return lost.sum() / starts.sum()
        delays = [a - t for a, t in zip(arrivals, times)]
        if kind == "mean_delay":
            return statistics.fmean(delays)
        return float(np.mean(np.diff(np.array(arrivals)) < 0))
    if kind == "cross_load":
        link = make_link(vec, vec["seed"])
        link.advance(vec["duration_s"])
        return link.stats.cross_bytes * 8 / (link.config.rate_bps * vec["duration_s"])
    if kind == "phase_mean":
        cfg = LinkConfig.from_dict(vec["link"])
        assert cfg.rate_schedule is not None, "a phase vector has a rate schedule"
        return (
            statistics.fmean(Link(cfg, s).phase_s for s in range(1, vec["seeds"] + 1))
            / cfg.rate_schedule.interval_s
        )
    if kind in ("cpu_mean", "cpu_cv"):
        cpu = CpuTime(vec["mean_s"], vec["cv"], vec["seed"])
        draws = np.array([cpu.draw() for _ in range(vec["draws"])])
        return float(draws.mean()) if kind == "cpu_mean" else float(draws.std() / draws.mean())
    if kind == "read_factor_mean":
        rate = ReadRate(1.0, vec["cv"], 1.0, vec["seed"])
        return statistics.fmean(rate.at(k + 0.5) for k in range(vec["intervals"]))
    raise AssertionError(f"unknown kind {kind}")


@pytest.mark.parametrize("vec", VECTORS["statistical"], ids=lambda v: v["name"])
def test_statistical_vector(vec):
    got = measure(vec)
    assert abs(got - vec["expect"]) <= vec["tol"], (
        f"{vec['name']}: {got} vs {vec['expect']} +- {vec['tol']}"
    )


def test_every_kind_is_exercised():
    assert {v["kind"] for v in VECTORS["statistical"]} == {
        "loss_share",
        "mean_burst",
        "mean_delay",
        "reordered_share",
        "cross_load",
        "phase_mean",
        "cpu_mean",
        "cpu_cv",
        "read_factor_mean",
    }


def test_sources_are_off_at_zero_and_seeded():
    """A zero parameter draws nothing; the same seed repeats, another seed differs."""
    assert {CpuTime(1e-4, 0.0, s).draw() for s in range(5)} == {1e-4}
    assert ReadRate(5e6, 0.0, 0.1, 3).at(7.0) == 5e6
    quiet = Link(LinkConfig.from_dict(link_config(1e7, 10**6, 0.0, cross_traffic={"load": 0.0})), 1)
    quiet.advance(100.0)
    assert quiet.stats.cross_sent == 0
    a, b, c = (
        Link(LinkConfig.from_dict(link_config(1e7, 10**6, 0.0, cross_traffic={"load": 0.5})), s)
        for s in (1, 1, 2)
    )
    for lk in (a, b, c):
        lk.advance(10.0)
    assert a.stats == b.stats != c.stats
    assert random.Random(1).random() == random.Random(1).random()
