"""quic-go: the instrument patches (one per version) and the lab harness.

The slow tests fetch each patched version from the Go module proxy, apply its patch,
build the harness (cached under $STATEMINE_CACHE) and run real transfers: in virtual
time over the emulated path, and in real time over UDP loopback.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from statemine.errors import StatemineError
from statemine.lab.runners import quicgo
from statemine.lab.scenario import link_config
from statemine.parse import read

VERSIONS = ["v0.37.5", "v0.48.2", "v0.63.0", "v0.65.0"]
LATEST = VERSIONS[-1]
#: Every state and event name the patches print (docs/log-format.md vocabulary).
STATES = {
    "Init",
    "SlowStart",
    "CongestionAvoidance",
    "CongestionAvoidanceMaxed",
    "ApplicationLimited",
    "Recovery",
    "ProbeTimeout",
}
EVENTS = {"LossDetected", "SpuriousLoss", "HyStartExit", "Close"}
#: qlog congestion states -> statemine names.
QLOG_STATES = {
    "slow_start": "SlowStart",
    "congestion_avoidance": "CongestionAvoidance",
    "recovery": "Recovery",
    "application_limited": "ApplicationLimited",
}


def link(**kw) -> dict:
    """A 20 Mbit/s link, 15 ms one way, 60 kB buffer, with ``kw`` changed (link_config's keys)."""
    return link_config(**{"rate_bps": 20e6, "buffer_bytes": 60000, "delay_s": 0.015, **kw})


def make_config(
    tmp: Path,
    version: str = LATEST,
    name: str = "run",
    seed: int = 1,
    count: int = 2,
    size: int = 300_000,
    down: dict | None = None,
    **kw,
) -> dict:
    """A small run config writing its files under ``tmp``."""
    cfg = {
        "seed": seed,
        "implementation": "quic-go",
        "version": version,
        "objects": {"count": count, "size_bytes": size},
        "client": {"profile": "desktop", "read_rate_bps": None, "per_packet_cpu_s": 0.0},
        "path": {"down": down or link(), "up": link()},
        "reordering_threshold": None,
        "time_threshold": None,
        "time_limit_s": 60.0,
        "log_path": str(tmp / f"{name}.log"),
        "result_path": str(tmp / f"{name}.result.json"),
    }
    cfg.update(kw)
    return cfg


LOSSY = dict(loss=0.01, jitter_s=0.002)


# -- fast: no Go needed --------------------------------------------------------------------------
def test_parse_version_and_qlog_tag():
    assert quicgo.parse_version("v0.48.2") == (0, 48, 2)
    with pytest.raises(StatemineError):
        quicgo.parse_version("0.48.2")
    assert quicgo.qlog_tag("v0.37.5") == "quicgo_legacy_qlog"
    assert quicgo.qlog_tag("v0.47.9") == "quicgo_legacy_qlog"
    assert quicgo.qlog_tag("v0.48.0") == quicgo.qlog_tag("v0.54.9") == "quicgo_logging_qlog"
    assert quicgo.qlog_tag("v0.55.0") is None and quicgo.qlog_tag(LATEST) is None


def test_config_path_beside_result(tmp_path):
    assert quicgo.config_path_for(tmp_path / "a.result.json") == tmp_path / "a.config.json"


def test_run_builds_in_the_given_cache(tmp_path, monkeypatch):
    """The grid passes its cache_dir to run(); the harness is looked up there."""
    seen = []

    def fake_build(version, cache=None):
        seen.append((version, cache))
        raise StatemineError("stop here")

    monkeypatch.setattr(quicgo, "build", fake_build)
    with pytest.raises(StatemineError, match="stop here"):
        quicgo.run(make_config(tmp_path), tmp_path / "cache")
    assert seen == [(LATEST, tmp_path / "cache")]


def test_every_version_has_a_patch():
    from statemine import patch

    assert set(VERSIONS) <= set(patch.versions("quic-go"))


# -- slow: built harnesses ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def binaries() -> dict[str, Path]:
    return {}


def harness(binaries: dict[str, Path], version: str) -> Path:
    if version not in binaries:
        binaries[version] = quicgo.build(version)
    return binaries[version]


def states_of(events) -> list[str]:
    return events.loc[events["kind"] == "state", "state"].tolist()


def collapse(seq: list[str]) -> list[str]:
    return [s for i, s in enumerate(seq) if i == 0 or s != seq[i - 1]]


def qlog_states(path: Path) -> list[str]:
    """The congestion states of a qlog file (JSON-SEQ or NDJSON), read independently of
    statemine's qlog parser."""
    out = []
    for chunk in path.read_bytes().replace(b"\x1e", b"\n").split(b"\n"):
        if not chunk.strip():
            continue
        rec = json.loads(chunk)
        if isinstance(rec, dict) and str(rec.get("name", "")).endswith("congestion_state_updated"):
            out.append(QLOG_STATES[rec["data"]["new"]])
    return out


def check_sane(ts, roles=("client", "server")) -> None:
    """Each connection's trace starts Init, SlowStart; times never decrease; names are
    the vocabulary; cwnd is positive; the trace ends with Close."""
    assert sorted(ts.traces["role"]) == sorted(roles)
    for _, ev in ts.events.groupby("trace"):
        assert states_of(ev)[:2] == ["Init", "SlowStart"]
        assert np.all(np.diff(ev["time"].to_numpy()) >= 0)
        st = ev[ev["kind"] == "state"]
        assert set(st["state"]) <= STATES
        assert set(ev.loc[ev["kind"] == "event", "state"]) <= EVENTS
        assert (st["cwnd"] > 0).all() and (st["inflight"] >= 0).all()
        assert ev["state"].iloc[-1] == "Close"


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_patch_transfer_log_and_qlog_agree(version, binaries, tmp_path):
    """Fetch, patch, build; a lossy transfer in virtual time gives sane traces whose
    state sequence is the one quic-go's own qlog reports."""
    harness(binaries, version)
    qdir = tmp_path / "qlog"
    qdir.mkdir()
    cfg = make_config(tmp_path, version, down=link(**LOSSY))
    res = quicgo.run(cfg, qlog_dir=qdir)
    assert res["ok"], res["error"]
    assert res["bytes"] == 600_000 and res["version"] == version
    assert res["throughput_bps"] == pytest.approx(8 * res["bytes"] / res["plt_s"])
    ts = read(cfg["log_path"])
    check_sane(ts)
    ev = ts.events.merge(ts.traces[["trace", "role"]], on="trace")
    server = ev[ev["role"] == "server"]
    losses = server[server["state"] == "LossDetected"]
    # the result's retransmissions are the server's LossDetected lines, counted by Go
    assert len(losses) == res["retransmissions"] > 0
    assert set(losses["fields"].str.extract(r"rule=(\w+)")[0]) <= {"packet", "time"}
    assert "Recovery" in states_of(server)
    for role in ("client", "server"):
        (qlog,) = qdir.glob(f"*_{role}.*qlog")
        mine = [
            s
            for s in states_of(ev[ev["role"] == role])
            if s not in ("Init", "ProbeTimeout", "CongestionAvoidanceMaxed")
        ]
        assert collapse(mine) == collapse(qlog_states(qlog)), role


@pytest.mark.slow
@pytest.mark.parametrize("version", [VERSIONS[0], LATEST])
def test_patch_real_udp_loopback(version, binaries, tmp_path):
    """The patched quic-go in real time over UDP on 127.0.0.1 (outside the emulation)."""
    log = tmp_path / "loopback.log"
    env = {
        **os.environ,
        "STATEMINE_LOG": str(log),
        "STATEMINE_LOOPBACK": "1",
        "QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING": "true",
    }
    proc = subprocess.run(
        [str(harness(binaries, version)), "-test.run=^TestLoopback$", "-test.v"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "--- PASS: TestLoopback" in proc.stdout
    check_sane(read(log))


@pytest.mark.slow
@pytest.mark.parametrize("version", [VERSIONS[1], LATEST])
def test_reordering_threshold_knob(version, binaries, tmp_path):
    """With a huge packet-reordering threshold no loss is declared by the packet rule."""
    harness(binaries, version)
    rules = {}
    for name, threshold in (("default", None), ("huge", 10_000)):
        cfg = make_config(
            tmp_path, version, name=name, down=link(loss=0.02), reordering_threshold=threshold
        )
        res = quicgo.run(cfg)
        assert res["ok"], res["error"]
        text = Path(cfg["log_path"]).read_text()
        rules[name] = (text.count("rule=packet"), text.count("rule=time"))
    assert rules["default"][0] > 0
    assert rules["huge"][0] == 0 and rules["huge"][1] > 0


@pytest.mark.slow
def test_threshold_knobs_reach_quic_go(binaries, tmp_path):
    """v0.65.0 reports its loss-detection parameters in qlog: the knobs set them."""
    harness(binaries, LATEST)
    qdir = tmp_path / "qlog"
    qdir.mkdir()
    cfg = make_config(tmp_path, count=1, size=20_000, reordering_threshold=7, time_threshold=1.5)
    assert quicgo.run(cfg, qlog_dir=qdir)["ok"]
    (qlog,) = qdir.glob("*_server.sqlog")
    params = [
        json.loads(c)
        for c in qlog.read_bytes().split(b"\x1e")
        if b"parameters_set" in c and b"reordering_threshold" in c
    ]
    assert params, "no recovery parameters in the qlog"
    data = params[0]["data"]
    assert data["reordering_threshold"] == 7 and data["time_threshold"] == 1.5


# -- the lab harness -------------------------------------------------------------------------------
@pytest.mark.slow
def test_go_path_model_unit_tests(binaries, tmp_path):
    """`go test` of the Go path model, in-memory path and mobile client (path_test.go, arrivals_test.go)."""
    harness(binaries, LATEST)
    cache = quicgo.cache_dir()
    env = quicgo.go_env(cache)
    src = quicgo.patched_source(LATEST, cache)
    mod = tmp_path / "mod"
    mod.mkdir()
    tags = quicgo.prepare_module(LATEST, src, mod, env)
    proc = subprocess.run(
        [
            "go",
            "test",
            *tags,
            "-count=1",
            "-run",
            "TestLink|TestPath|TestEndpoint|TestAddRange|TestArrivals|TestAppReader|TestVectors",
            "-v",
            ".",
        ],
        cwd=mod,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("--- PASS") >= 19 and "--- FAIL" not in proc.stdout
    assert "TestVectorsStatistical" in proc.stdout and "TestVectorsDeterministic" in proc.stdout


def _without_wall(res: dict) -> dict:
    return {k: v for k, v in res.items() if k != "wall_time_s"}


@pytest.mark.slow
def test_runs_are_deterministic(binaries, tmp_path):
    """Same config -> byte-identical log and identical result; another seed differs."""
    harness(binaries, LATEST)
    down = link(loss=0.01, jitter_s=0.003, gilbert=None)
    a = make_config(tmp_path, name="a", seed=5, count=4, down=down)
    b = make_config(tmp_path, name="b", seed=5, count=4, down=down)
    c = make_config(tmp_path, name="c", seed=6, count=4, down=down)
    ra, rb, rc = (quicgo.run(x) for x in (a, b, c))
    assert ra["ok"] and rb["ok"] and rc["ok"]
    assert Path(a["log_path"]).read_bytes() == Path(b["log_path"]).read_bytes()
    assert _without_wall(ra) == _without_wall(rb)
    assert Path(a["log_path"]).read_bytes() != Path(c["log_path"]).read_bytes()


@pytest.mark.slow
def test_mobile_runs_are_deterministic(binaries, tmp_path):
    """The two-thread mobile client (two goroutines, a tracer) repeats byte for byte too."""
    harness(binaries, LATEST)
    mobile = {"profile": "mobile", "read_rate_bps": 8e6, "per_packet_cpu_s": 0.0003}
    runs = [
        make_config(tmp_path, name=f"m{i}", seed=3, count=4, down=link(loss=0.01), client=mobile)
        for i in range(3)
    ]
    results = [quicgo.run(x) for x in runs]
    assert all(r["ok"] for r in results), [r["error"] for r in results]
    logs = {Path(x["log_path"]).read_bytes() for x in runs}
    assert (
        len(logs) == 1 and len({json.dumps(_without_wall(r), sort_keys=True) for r in results}) == 1
    )


@pytest.mark.slow
def test_plt_respects_the_path(binaries, tmp_path):
    """A clean path: nothing dropped, PLT at least the serialisation time of all bytes
    plus the handshake and request round trips, and not far above it."""
    harness(binaries, LATEST)
    rate, delay = 10e6, 0.02
    clean = link(rate_bps=rate, delay_s=delay, buffer_bytes=10_000_000)
    cfg = make_config(tmp_path, count=1, size=2_000_000, down=clean)
    cfg["path"]["up"] = clean
    res = quicgo.run(cfg)
    assert res["ok"], res["error"]
    assert res["packets_dropped"] == 0 and res["retransmissions"] == 0
    floor = 8 * 2_000_000 / rate + 2 * (2 * delay)
    assert floor <= res["plt_s"] <= 3 * floor
    assert res["virtual_time_s"] >= res["plt_s"]
    assert res["packets_sent"] > 2_000_000 / 1500


@pytest.mark.slow
def test_lossy_path_drops_and_gilbert(binaries, tmp_path):
    harness(binaries, LATEST)
    ge = {"p_gb": 0.02, "p_bg": 0.3, "loss_good": 0.0, "loss_bad": 0.8}
    cfg = make_config(tmp_path, down=link(gilbert=ge))
    res = quicgo.run(cfg)
    assert res["ok"], res["error"]
    assert res["packets_dropped"] > 0 and res["retransmissions"] > 0


@pytest.mark.slow
def test_mobile_profile_is_read_rate_bound(binaries, tmp_path):
    harness(binaries, LATEST)
    size, read_bps = 400_000, 2e6
    desktop = quicgo.run(make_config(tmp_path, name="desktop", count=1, size=size))
    mobile = quicgo.run(
        make_config(
            tmp_path,
            name="mobile",
            count=1,
            size=size,
            client={"profile": "mobile", "read_rate_bps": read_bps, "per_packet_cpu_s": 0.0002},
        )
    )
    assert desktop["ok"] and mobile["ok"], (desktop["error"], mobile["error"])
    assert mobile["plt_s"] >= 8 * size / read_bps > desktop["plt_s"]


@pytest.mark.slow
def test_virtual_time_limit(binaries, tmp_path):
    harness(binaries, LATEST)
    cfg = make_config(tmp_path, count=1, size=5_000_000, time_limit_s=0.5)
    res = quicgo.run(cfg)
    assert res == json.loads(Path(cfg["result_path"]).read_text())
    assert not res["ok"] and res["error"] == "virtual time limit reached"
    assert 0 < res["bytes"] < 5_000_000
    assert res["virtual_time_s"] == pytest.approx(0.5, abs=0.05)


@pytest.mark.slow
def test_bad_config_is_a_failed_run(binaries, tmp_path):
    harness(binaries, LATEST)
    cfg = make_config(tmp_path, down=link(loss=1.5))
    res = quicgo.run(cfg)
    assert not res["ok"] and "path.down.loss" in res["error"]
    assert json.loads(Path(cfg["result_path"]).read_text()) == res


def recovery_share(events, state: str = "Recovery") -> float:
    """The share of a trace's time (first state line to its last line) spent in ``state``."""
    st = events[events["kind"] == "state"]
    ends = np.append(st["time"].to_numpy()[1:], events["time"].iloc[-1])
    dwell = ends - st["time"].to_numpy()
    return float(dwell[(st["state"] == state).to_numpy()].sum() / dwell.sum())


@pytest.mark.slow
def test_adaptive_reordering_spends_less_time_in_recovery(binaries, tmp_path):
    """The lab finding: under jitter (reordering, no loss) v0.65.0's adaptive reordering
    keeps the server out of Recovery far more than v0.63.0 does."""
    share, spurious = {}, {}
    for version in ("v0.63.0", "v0.65.0"):
        harness(binaries, version)
        cfg = make_config(
            tmp_path,
            version,
            name=version,
            count=1,
            size=1_000_000,
            down=link(jitter_s=0.004, buffer_bytes=10_000_000),
        )
        res = quicgo.run(cfg)
        assert res["ok"], res["error"]
        ts = read(cfg["log_path"])
        ev = ts.events.merge(ts.traces[["trace", "role"]], on="trace")
        server = ev[ev["role"] == "server"]
        share[version] = recovery_share(server)
        spurious[version] = int((server["state"] == "SpuriousLoss").sum())
    assert spurious["v0.63.0"] > 0 and spurious["v0.65.0"] > 0
    assert share["v0.65.0"] < share["v0.63.0"] / 2, share


@pytest.mark.slow
def test_mobile_socket_buffer_and_windows(binaries, tmp_path):
    """The mobile client's socket buffer overflows when small (drops on a lossless path);
    the client's flow-control window keys are accepted, and checked."""
    harness(binaries, LATEST)
    # 2 ms per packet: the network thread takes ~7 Mbit/s of the 20 Mbit/s path
    mobile = {"profile": "mobile", "read_rate_bps": 50e6, "per_packet_cpu_s": 0.002}
    deep = link(buffer_bytes=10_000_000)  # no tail drop at the bottleneck
    small = quicgo.run(
        make_config(
            tmp_path,
            name="small",
            count=1,
            size=500_000,
            down=deep,
            client={**mobile, "socket_buffer_bytes": 4000},
        )
    )
    large = quicgo.run(
        make_config(
            tmp_path,
            name="large",
            count=1,
            size=500_000,
            down=deep,
            client={
                **mobile,
                "socket_buffer_bytes": 10_000_000,
                "max_data_bytes": 2_000_000,
                "max_stream_data_bytes": 1_000_000,
            },
        )
    )
    assert small["ok"] and large["ok"], (small["error"], large["error"])
    assert small["packets_dropped"] > 0 and large["packets_dropped"] == 0
    bad = quicgo.run(make_config(tmp_path, name="bad", client={**mobile, "max_data_bytes": 0}))
    assert not bad["ok"] and "client.max_data_bytes" in bad["error"]


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_mobile_reader_holds_the_sender_back_through_flow_control(version, binaries, tmp_path):
    """The two-thread mobile client: the application reads 4 Mbit/s of a 20 Mbit/s path,
    quic-go returns credit as it reads, so the server is mostly ApplicationLimited (a
    desktop client: far less); the client closes when its transport has every byte,
    while its application still reads the last window (PLT counts that)."""
    harness(binaries, version)
    size, read_bps = 2_000_000, 4e6
    out = {}
    for prof in ("desktop", "mobile"):
        cfg = make_config(
            tmp_path,
            version,
            name=prof,
            count=1,
            size=size,
            client={"profile": prof, "read_rate_bps": read_bps, "per_packet_cpu_s": 0.0001},
        )
        res = quicgo.run(cfg)
        assert res["ok"], res["error"]
        ts = read(cfg["log_path"])
        ev = ts.events.merge(ts.traces[["trace", "role"]], on="trace")
        out[prof] = res, recovery_share(ev[ev["role"] == "server"], "ApplicationLimited")
    (desk, desk_al), (mob, mob_al) = out["desktop"], out["mobile"]
    assert mob_al > 0.6 and mob_al > 3 * desk_al, (mob_al, desk_al)
    assert mob["plt_s"] >= 8 * size / read_bps > 2 * desk["plt_s"]
    # the transport had every byte (and the connection closed) well before the
    # application had read the last one: at least 100 kB were still unread
    assert mob["virtual_time_s"] < mob["plt_s"] - 8 * 100_000 / read_bps


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_patched_quic_go_passes_its_own_tests(version):
    """The patch keeps quic-go's own congestion and loss-detection tests building and
    passing (with the lines switched on, so the logging paths run too)."""
    cache = quicgo.cache_dir()
    src = quicgo.patched_source(version, cache)
    env = {**quicgo.go_env(cache), "STATEMINE_LOG": os.devnull}
    proc = subprocess.run(
        ["go", "test", "-count=1", "./internal/ackhandler/", "./internal/congestion/"],
        cwd=src,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
