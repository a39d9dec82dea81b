"""The path model (statemine/lab/path.py): every property of docs/lab-protocol.md, checked
against values computed by hand or by closed-form statistics."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

from statemine.lab.path import (
    Gilbert,
    Link,
    LinkConfig,
    PathModel,
    PathValueError,
    RateSchedule,
    direction_seed,
)
from statemine.lab.scenario import link_config


def link(**kw: Any) -> Link:
    cfg: dict[str, Any] = {"rate_bps": 8e6, "buffer_bytes": 10_000, "delay_s": 0.010}
    cfg.update(kw)
    seed = cfg.pop("seed", 1)
    return Link(LinkConfig(**cfg), seed)


def test_serialisation_time_is_8n_over_rate():
    lk = link(rate_bps=1e6, delay_s=0.0)
    # 1250 bytes at 1 Mbit/s = 10 ms; back-to-back packets queue behind each other
    assert lk.send(0.0, 1250) == pytest.approx(0.010)
    assert lk.send(0.0, 1250) == pytest.approx(0.020)
    # an idle link starts serialising at the send time
    assert lk.send(1.0, 500) == pytest.approx(1.0 + 8 * 500 / 1e6)


def test_propagation_delay_is_added_after_departure():
    lk = link(rate_bps=8e6, delay_s=0.05)
    assert lk.send(0.0, 1000) == pytest.approx(0.001 + 0.05)


def test_tail_drop_at_exactly_the_buffer_size():
    # 10 packets of 1000 bytes fill a 10000-byte buffer exactly; the 11th is dropped
    lk = link(buffer_bytes=10_000)
    arrivals = [lk.send(0.0, 1000) for _ in range(11)]
    assert all(a is not None for a in arrivals[:10])
    assert arrivals[10] is None
    assert lk.stats.tail_dropped == 1 and lk.stats.lost == 0
    # a packet that fits exactly in what is left is accepted: 9000 queued + 1000 = 10000
    lk2 = link(buffer_bytes=10_000)
    for _ in range(9):
        lk2.send(0.0, 1000)
    assert lk2.send(0.0, 1000) is not None
    assert lk2.send(0.0, 1) is None


def test_queue_drains_at_the_link_rate():
    lk = link(rate_bps=8e6, buffer_bytes=3000)  # 1000 bytes = 1 ms
    for _ in range(3):
        assert lk.send(0.0, 1000) is not None
    assert lk.send(0.0, 1000) is None  # full
    assert lk.queued_bytes(0.0015) == 2000  # the first left at 1 ms
    assert lk.send(0.0015, 1000) is not None  # room again
    assert lk.queued_bytes(0.004) == 0


def test_send_times_must_not_decrease():
    lk = link()
    lk.send(1.0, 100)
    with pytest.raises(ValueError):
        lk.send(0.5, 100)


def test_iid_loss_rate_matches_probability():
    n, p = 20_000, 0.1
    lk = link(loss=p, buffer_bytes=10**9, rate_bps=1e12)
    for i in range(n):
        lk.send(i * 1e-3, 100)
    # two-sided binomial test: the observed count is consistent with p
    assert stats.binomtest(lk.stats.lost, n, p).pvalue > 1e-4


def _burst_lengths(drops: list[bool]) -> list[int]:
    lengths, run = [], 0
    for d in drops:
        if d:
            run += 1
        elif run:
            lengths.append(run)
            run = 0
    return lengths + ([run] if run else [])


def test_gilbert_elliott_is_bursty_with_the_stationary_loss_rate():
    ge = Gilbert(p_gb=0.01, p_bg=0.25, loss_good=0.0, loss_bad=1.0)
    n = 60_000
    lk = link(gilbert=ge, buffer_bytes=10**9, rate_bps=1e12)
    drops = [lk.send(i * 1e-4, 100) is None for i in range(n)]
    rate = sum(drops) / n
    assert rate == pytest.approx(ge.mean_loss(), rel=0.15)  # 0.01/0.26 = 3.8 %
    bursts = _burst_lengths(drops)
    # bad-state sojourns are geometric with mean 1/p_bg = 4 packets
    assert np.mean(bursts) == pytest.approx(1 / ge.p_bg, rel=0.15)
    # i.i.d. loss at the same rate has mean bursts of 1/(1-p) ~ 1.04 packets
    iid = link(loss=rate, buffer_bytes=10**9, rate_bps=1e12, seed=2)
    iid_bursts = _burst_lengths([iid.send(i * 1e-4, 100) is None for i in range(n)])
    assert np.mean(bursts) > 3 * np.mean(iid_bursts)


def test_gilbert_replaces_iid_loss():
    lk = link(
        loss=1.0,
        gilbert=Gilbert(p_gb=0.0, p_bg=1.0, loss_good=0.0, loss_bad=1.0),
        buffer_bytes=10**9,
    )
    assert all(lk.send(i * 0.01, 100) is not None for i in range(100))


def test_jitter_is_uniform_and_reorders_like_netem():
    j, delay = 0.010, 0.050
    lk = link(rate_bps=1e12, delay_s=delay, jitter_s=j, buffer_bytes=10**9)
    gap = 0.001  # packets 1 ms apart; jitter spans 20 ms, so many overtake each other
    sends = np.arange(5000) * gap
    arrivals = np.array([lk.send(t, 100) for t in sends])
    extra = arrivals - sends - delay
    assert extra.min() >= -j - 1e-9 and extra.max() <= j + 1e-9
    # uniform on [-j, j]: Kolmogorov-Smirnov against the closed form
    assert stats.kstest(extra, stats.uniform(loc=-j, scale=2 * j).cdf).pvalue > 1e-4
    # reordering happens exactly when a later packet's jitter is smaller by more than the gap
    order = np.argsort(arrivals, kind="stable")
    assert (np.diff(order) < 0).any()
    expected_swaps = int(((extra[:-1] - extra[1:]) > gap).sum())
    observed_swaps = int((arrivals[1:] < arrivals[:-1]).sum())
    assert observed_swaps == expected_swaps > 0


def test_no_jitter_never_reorders():
    lk = link(rate_bps=1e7, delay_s=0.02, buffer_bytes=10**9)
    arrivals = [lk.send(i * 1e-4, 1200) for i in range(2000)]
    assert arrivals == sorted(arrivals)


def test_jitter_is_clamped_so_delay_never_goes_negative():
    lk = link(rate_bps=1e12, delay_s=0.001, jitter_s=0.010, buffer_bytes=10**9)
    for i in range(1000):
        t = i * 0.01
        assert lk.send(t, 100) >= t


def test_rate_schedule_redraws_every_interval_within_bounds():
    sched = RateSchedule(lo_bps=1e6, hi_bps=5e6, interval_s=1.0)
    lk = link(rate_schedule=sched)
    phi = lk.phase_s
    assert 0 <= phi < 1.0
    # interval k covers [k - phi, k + 1 - phi)
    rates = [lk.rate_at(k + 0.5 - phi) for k in range(1, 201)]
    assert all(1e6 <= r <= 5e6 for r in rates)
    assert len(set(rates)) == 200  # a fresh draw each second
    assert lk.rate_at(3.0 - phi) == lk.rate_at(3.999 - phi) == rates[2]  # constant within a second
    assert lk.rate_at(4.0 - phi) != rates[2]
    assert stats.kstest(rates, stats.uniform(loc=1e6, scale=4e6).cdf).pvalue > 1e-4


def test_rate_schedule_sets_serialisation_time_and_is_traffic_independent():
    sched = RateSchedule(lo_bps=1e6, hi_bps=5e6)
    a = link(rate_schedule=sched, delay_s=0.0, seed=9)
    b = link(rate_schedule=sched, delay_s=0.0, seed=9, loss=0.5)  # other draws in between
    for k in range(5):
        b.send(k + 0.1, 100)
    assert [a.rate_at(k + 0.2) for k in range(5)] == [b.rate_at(k + 0.2) for k in range(5)]
    t = 2.25
    assert a.send(t, 1000) == pytest.approx(t + 8000 / a.rate_at(t))


def test_packet_keeps_the_rate_it_started_with_across_a_change():
    sched = RateSchedule(lo_bps=1e3, hi_bps=2e3)  # slow: 1000 bytes take 4-8 s
    lk = link(rate_schedule=sched, delay_s=0.0, buffer_bytes=10**9)
    r0 = lk.rate_at(0.5)
    assert lk.send(0.5, 1000) == pytest.approx(0.5 + 8000 / r0)


def test_same_seed_same_deliveries_other_seed_differs():
    def trace(seed):
        lk = link(loss=0.05, jitter_s=0.005, seed=seed, buffer_bytes=5000)
        return [lk.send(i * 2e-4, 1200) for i in range(3000)]

    assert trace(4) == trace(4)
    assert trace(4) != trace(5)


def test_direction_seeds_follow_the_protocol():
    assert direction_seed(3, "down") == 7 and direction_seed(3, "up") == 8
    p = PathModel.from_config(
        {
            "down": link_config(1e6, 1, 0.0),
            "up": link_config(1e6, 1, 0.0),
        },
        seed=3,
    )
    assert (p.down.seed, p.up.seed) == (7, 8)


@pytest.mark.parametrize(
    "bad, key",
    [
        ({"rate_bps": -1.0}, "rate_bps"),
        ({"rate_bps": 0}, "rate_bps"),
        ({"buffer_bytes": -5}, "buffer_bytes"),
        ({"buffer_bytes": 1.5}, "buffer_bytes"),
        ({"delay_s": -0.1}, "delay_s"),
        ({"jitter_s": -0.1}, "jitter_s"),
        ({"loss": 1.5}, "loss"),
        ({"loss": "x"}, "loss"),
        ({"gilbert": {"p_gb": 2, "p_bg": 0.1}}, "gilbert.p_gb"),
        ({"gilbert": {"p_gb": 0.1}}, "gilbert.p_bg"),
        ({"rate_schedule": {"lo_bps": 5, "hi_bps": 1}}, "rate_schedule.hi_bps"),
        ({"nonsense": 1}, "nonsense"),
    ],
)
def test_impossible_values_name_their_key(bad, key):
    cfg = {**link_config(1e6, 1000, 0.01), **bad}
    with pytest.raises(PathValueError) as info:
        LinkConfig.from_dict(cfg)
    assert info.value.key == key


def test_config_round_trips_through_dict():
    cfg = LinkConfig(
        rate_bps=5e6,
        buffer_bytes=30_000,
        delay_s=0.018,
        jitter_s=0.01,
        gilbert=Gilbert(0.01, 0.3),
        rate_schedule=RateSchedule(1e6, 2e6),
    )
    assert LinkConfig.from_dict(cfg.to_dict()) == cfg
    assert math.isclose(cfg.to_dict()["rate_bps"], 5e6)
