"""The aioquic runner: its event loop (fast), and real short runs of the patched aioquic
(slow: fetches aioquic from PyPI once into $STATEMINE_CACHE and builds it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from statemine.lab.runners import aioquic as runner
from statemine.lab.runners.aioquic import EventLoop, VirtualTimeLimit
from statemine.lab.scenario import link_config

VERSION = "1.7.2"


def test_event_loop_orders_by_time_then_push_order():
    loop, seen = EventLoop(), []
    for t, name in [(0.3, "c"), (0.1, "a"), (0.3, "d"), (0.2, "b")]:
        loop.at(t, lambda n=name: seen.append((loop.now, n)))
    loop.run(until=lambda: False, limit_s=1.0)
    assert seen == [(0.1, "a"), (0.2, "b"), (0.3, "c"), (0.3, "d")]


def test_event_loop_never_goes_back_in_time_and_enforces_the_limit():
    loop, seen = EventLoop(), []
    loop.at(0.5, lambda: loop.at(0.1, lambda: seen.append(loop.now)))  # past -> now
    loop.run(until=lambda: False, limit_s=1.0)
    assert seen == [0.5]
    loop.at(2.0, lambda: None)
    with pytest.raises(VirtualTimeLimit):
        loop.run(until=lambda: False, limit_s=1.0)
    loop2 = EventLoop()
    loop2.at(2.0, lambda: seen.append("late"))
    loop2.run(until=lambda: False, limit_s=1.0, strict=False)
    assert "late" not in seen and loop2.now == 1.0


def base_config(tmp: Path, **over) -> dict:
    link = link_config(10e6, 10**7, 0.018)
    cfg = {
        "seed": 1,
        "implementation": "aioquic",
        "version": VERSION,
        "objects": {"count": 2, "size_bytes": 100_000},
        "client": {"profile": "desktop", "read_rate_bps": None, "per_packet_cpu_s": 0.0},
        "path": {"down": dict(link), "up": dict(link)},
        "reordering_threshold": None,
        "time_threshold": None,
        "time_limit_s": 30.0,
        "log_path": str(tmp / "run.log"),
        "result_path": str(tmp / "run.result.json"),
    }
    for key, value in over.items():
        cfg[key] = value
    return cfg


def server_losses(log: Path) -> int:
    return sum(
        1
        for line in log.read_text().splitlines()
        if "role=server" in line and "event=LossDetected" in line
    )


@pytest.mark.slow
def test_clean_path_transfer_is_timed_right(tmp_path):
    cfg = base_config(tmp_path)
    res = runner.run(cfg)
    assert res["ok"], res
    size = 2 * 100_000
    assert res["bytes"] == size
    # lower bound: one RTT for the handshake plus the bytes at the bottleneck rate
    assert res["plt_s"] > 0.036 + 8 * size / 10e6
    assert res["throughput_bps"] == pytest.approx(8 * size / res["plt_s"])
    assert res["retransmissions"] == 0 and res["packets_dropped"] == 0
    assert res["packets_sent"] > size / 1500
    log = Path(cfg["log_path"]).read_text()
    assert re.search(r"STATEMINE t=\S+ conn=\S+ role=server state=SlowStart", log)
    assert "role=client" in log


@pytest.mark.slow
def test_runs_are_deterministic_and_losses_match_the_log(tmp_path):
    down = link_config(10e6, 30_000, 0.056, jitter_s=0.01, loss=0.01)
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    results = []
    for d in (a, b):
        cfg = base_config(d)
        cfg["path"]["down"] = dict(down)
        results.append(runner.run(cfg))
    ra, rb = results
    assert ra["ok"] and rb["ok"]
    for key in ("plt_s", "retransmissions", "packets_sent", "packets_dropped", "virtual_time_s"):
        assert ra[key] == rb[key], key
    assert (a / "run.log").read_bytes() == (b / "run.log").read_bytes()
    # the recovery hook and the patch's LossDetected lines count the same losses
    assert ra["retransmissions"] == server_losses(a / "run.log") > 0
    # another seed, another run
    c = tmp_path / "c"
    c.mkdir()
    cfg = base_config(c, seed=2)
    cfg["path"]["down"] = dict(down)
    assert runner.run(cfg)["plt_s"] != ra["plt_s"]


@pytest.mark.slow
def test_qlog_of_both_ends_on_the_virtual_clock(tmp_path):
    """With qlog_dir, aioquic's own qlog of each end: event times on the virtual clock
    (within the run's virtual time, the server's first packet_lost at the patch's first
    LossDetected line), one packet_lost per LossDetected line, and the derivation reads it."""
    import json

    from statemine.parse.qlog import read_qlog

    cfg = base_config(tmp_path)
    cfg["path"]["down"]["loss"] = 0.02
    qdir = tmp_path / "qlog"
    qdir.mkdir()
    res = runner.run(cfg, qlog_dir=qdir)
    assert res["ok"], res
    assert sorted(p.name for p in qdir.iterdir()) == ["client.qlog", "server.qlog"]
    (trace,) = json.loads((qdir / "server.qlog").read_text())["traces"]
    times = [e["time"] / 1000 for e in trace["events"]]
    assert min(times) > 0 and max(times) <= res["virtual_time_s"]
    lost = [e for e in trace["events"] if e["name"] == "recovery:packet_lost"]
    lines = [
        line
        for line in Path(cfg["log_path"]).read_text().splitlines()
        if "role=server" in line and "event=LossDetected" in line
    ]
    assert len(lost) == len(lines) == res["retransmissions"] > 0
    first = float(re.search(r"STATEMINE t=(\S+)", lines[0]).group(1))
    assert lost[0]["time"] / 1000 == pytest.approx(first, abs=1e-6)  # the line: 6 decimals
    ts = read_qlog(qdir / "server.qlog", derive_states=True)
    assert ts.traces["derived"].all() and (ts.events["state"] == "Recovery (derived)").any()


@pytest.mark.slow
def test_virtual_time_limit_fails_the_run(tmp_path):
    res = runner.run(base_config(tmp_path, time_limit_s=0.05))
    assert not res["ok"] and res["error"].startswith("virtual time limit reached")
    assert res["virtual_time_s"] == 0.05 and res["packets_sent"] > 0 and res["bytes"] < 200_000
    assert json.loads(Path(tmp_path / "run.result.json").read_text())["ok"] is False


@pytest.mark.slow
def test_mobile_client_is_limited_by_its_read_rate(tmp_path):
    read = 2e6
    cfg = base_config(
        tmp_path, client={"profile": "mobile", "read_rate_bps": read, "per_packet_cpu_s": 0.0002}
    )
    res = runner.run(cfg)
    assert res["ok"], res
    # the application cannot have consumed 200 KB faster than 2 Mbit/s allows
    assert res["plt_s"] >= 8 * 200_000 / read
    (tmp_path / "desk").mkdir()
    desk = runner.run(base_config(tmp_path / "desk"))
    assert res["plt_s"] > 2 * desk["plt_s"]


@pytest.mark.slow
def test_loss_thresholds_reach_the_patched_stack(tmp_path):
    jittery = link_config(10e6, 10**7, 0.056, jitter_s=0.01)
    runs = {}
    for name, rt, tt in (("default", None, None), ("loose", 1000, 10.0)):
        d = tmp_path / name
        d.mkdir()
        cfg = base_config(d, reordering_threshold=rt, time_threshold=tt)
        cfg["path"]["down"] = dict(jittery)
        runs[name] = runner.run(cfg)
    # no packet is ever dropped; every declared loss is spurious reordering
    assert runs["default"]["packets_dropped"] == runs["loose"]["packets_dropped"] == 0
    assert runs["default"]["retransmissions"] > 0
    assert runs["loose"]["retransmissions"] == 0


def test_app_reader_consumes_in_order_at_its_rate():
    from statemine.lab.runners.aioquic import AppReader
    from statemine.lab.variability import ReadRate

    app = AppReader(ReadRate(8e6, 0.0, 0.1, 1))  # 1 byte per microsecond
    assert app.deliver(0.0, 1000) == pytest.approx(0.001)
    assert app.deliver(0.0005, 1000) == pytest.approx(0.002)  # queued behind the first
    assert app.deliver(1.0, 500) == pytest.approx(1.0005)  # idle reader starts at once
    assert AppReader().deliver(3.0, 10**9) == 3.0  # desktop: no reading time


def test_app_reader_uses_the_rate_in_force_when_a_chunk_starts():
    from statemine.lab.runners.aioquic import AppReader
    from statemine.lab.variability import ReadRate

    rate = ReadRate(8e6, 0.5, 0.1, 7)
    app = AppReader(rate)
    r0, r1 = rate.at(0.0), rate.at(0.1)
    assert r0 != r1 and rate.at(0.0999) == r0
    assert app.deliver(0.0, 1000) == pytest.approx(8000 / r0)
    assert app.deliver(0.1, 1000) == pytest.approx(0.1 + 8000 / r1)


class _FakeEndpoint:
    """Stands for an Endpoint: its loop, and the times its timer ran (recorded by the
    monkeypatched Endpoint.on_timer)."""

    def __init__(self, loop):
        self.loop, self.timers = loop, []


def test_network_thread_serialises_cpu_drops_overflow_and_defers_timers(monkeypatch):
    from statemine.lab.runners import aioquic as mod

    monkeypatch.setattr(mod.Endpoint, "on_timer", lambda ep: ep.timers.append(ep.loop.now))
    loop = EventLoop()
    ep = _FakeEndpoint(loop)
    processed = []
    thread = mod.NetworkThread(
        ep,
        cpu=lambda: 0.001,
        socket_buffer_bytes=2500,
        on_packet=lambda d: processed.append((loop.now, d)),
    )
    loop.at(
        0.0,
        lambda: [
            thread.arrive(b"a" * 1000),
            thread.arrive(b"b" * 1000),
            thread.arrive(b"c" * 1000),
            thread.arrive(b"d" * 500),
        ],
    )
    loop.at(0.0005, thread.on_timer)  # falls due while the CPU is busy
    loop.run(until=lambda: False, limit_s=1.0)
    # "a" was taken at once, so b + c (2000 bytes) + d (500) fit a 2500-byte buffer
    assert [d[:1] for _, d in processed] == [b"a", b"b", b"c", b"d"]
    assert [t for t, _ in processed] == pytest.approx([0.001, 0.002, 0.003, 0.004])
    assert thread.dropped == 0
    assert ep.timers == pytest.approx([0.001])  # run once the first packet is done
    loop.at(
        1.0,
        lambda: [thread.arrive(b"x" * 2000), thread.arrive(b"y" * 2000), thread.arrive(b"z" * 600)],
    )
    loop.run(until=lambda: False, limit_s=2.0)
    assert thread.dropped == 1  # y fits (x is on the CPU), z does not


@pytest.mark.slow
def test_cli_grid_end_to_end_with_real_aioquic(tmp_path):
    from click.testing import CliRunner

    from statemine import load
    from statemine.cli import main

    scen = tmp_path / "tiny.toml"
    scen.write_text(
        '[scenario]\nname = "tiny"\ntime_limit_s = 30\n[grid]\nstack = "aioquic@1.7.2"\n'
        "rate_mbps = 10\nrtt_ms = 36\njitter_ms = [0, 5]\nobject_size_bytes = 100000\n"
    )
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["lab", "run", str(scen), "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "2 runs" in res.output and "2 ok" in res.output
    table = json.loads((out / "manifest.json").read_text())
    assert table["stacks"]["aioquic@1.7.2"]["patch_sha256"]
    for run_dir in (out / "runs").iterdir():
        ts = load(run_dir / "traces.parquet")
        assert set(ts.traces["role"]) == {"client", "server"}
        assert (ts.traces["jitter_ms"].isin(["0", "5"])).all()
        assert "SlowStart" in set(ts.events["state"])
    again = CliRunner().invoke(main, ["lab", "run", str(scen), "--out", str(out), "--no-progress"])
    assert again.exit_code == 0 and "2 runs" in again.output


@pytest.mark.slow
def test_rerun_reproduces_a_shipped_log_byte_for_byte(tmp_path):
    import gzip

    from click.testing import CliRunner

    from statemine.cli import main

    runs = Path(__file__).resolve().parents[1] / "traces" / "jitter" / "runs"
    run_dir = next(d for d in sorted(runs.iterdir()) if d.name.startswith("aioquic-1.7.2"))
    res = CliRunner().invoke(
        main, ["lab", "rerun", str(run_dir / "config.json"), "--out", str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    assert (tmp_path / "run.log").read_bytes() == gzip.decompress(
        (run_dir / "run.log.gz").read_bytes()
    )


def test_rerun_rejects_a_file_that_is_not_a_config(tmp_path):
    from click.testing import CliRunner

    from statemine.cli import main

    bad = tmp_path / "x.json"
    bad.write_text("[1, 2]")
    res = CliRunner().invoke(main, ["lab", "rerun", str(bad), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "not a run config" in res.output
