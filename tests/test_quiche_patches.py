"""quiche instrument patches (issue 15 part 1): registry and fetch from crates.io, the
patch engine on them, the clock hook and the statemine lines of a real transfer, and the
cross-check against quiche's own qlog.

The slow tests fetch each patched version through cargo, apply the patch, build the smoke
program (tests/data/quiche-smoke: client and server in one thread, in virtual time through
the patch's clock hook) once per version per session, and run it per controller.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from statemine import patch
from statemine.errors import InputError, StatemineError, UsageError
from statemine.parse import read
from statemine.parse.statenames import CANONICAL, canonical_state
from statemine.patch import cargo, quiche
from statemine.patch.functions import rust_function

VERSIONS = sorted(quiche.CONTROLLERS)
LATEST = "0.30.0"
#: The smoke program (a minimal virtual-time harness: client and server in one thread).
SMOKE_PROGRAM = Path(__file__).parent / "data" / "quiche-smoke"
#: Versions whose qlog has congestion_state_updated (0.22.0 writes only metrics_updated).
QLOG_HAS_STATES = {"0.25.0", "0.30.0"}
#: quiche's qlog congestion states (recovery/congestion/reno.rs state_str, the BBRv2 modes'
#: state_str) in the names the patch logs.
QLOG_NAMES = {
    "slow_start": "SlowStart",
    "conservative_slow_start": "ConservativeSlowStart",
    "congestion_avoidance": "CongestionAvoidance",
    "recovery": "Recovery",
    "bbr_startup": "BBRStartup",
    "bbr_drain": "BBRDrain",
    "bbr_probe_bw_up": "BBRProbeBWUp",
    "bbr_probe_bw_down": "BBRProbeBWDown",
    "bbr_probe_bw_cruise": "BBRProbeBWCruise",
    "bbr_probe_bw_refill": "BBRProbeBWRefill",
    "bbr_probe_rtt": "BBRProbeRTT",
}
#: How far a qlog event time (ms, written a few microseconds off) may be from the same t=.
QLOG_TIME_TOL = 2e-5
#: States the patch logs that quiche's qlog has no name for.
NOT_IN_QLOG = {"Init", "ProbeTimeout", "ApplicationLimited"}
_STATE_LITERAL = re.compile(r'"((?:BBR)?[A-Z][A-Za-z]+)"')


def added_lines(version: str) -> str:
    text = patch.patch_path("quiche", version).read_text()
    return "\n".join(line[1:] for line in text.splitlines() if line.startswith("+"))


#: Files of quiche that are tests only, and the real clock's calls.
_TEST_FILES = re.compile(r"(^|/)(tests|test_utils|test_sender|\w+_tests)\.rs$")
_REAL_CLOCK = re.compile(r"Instant::now\(\)|\.elapsed\(\)|add_event_data_now\(")


def real_clock_calls(root: Path) -> list[str]:
    """``file:line`` of every real-clock read in quiche's non-test code under ``root/src``
    (a file's code from its first ``#[cfg(test)]`` on counts as test code), except the
    clock hook's own ``src/statemine.rs``."""
    found = []
    for p in sorted((root / "src").rglob("*.rs")):
        rel = p.relative_to(root).as_posix()
        if rel == "src/statemine.rs" or _TEST_FILES.search(rel):
            continue
        code = p.read_text(encoding="utf-8").split("#[cfg(test)]", 1)[0]
        for m in _REAL_CLOCK.finditer(code):
            line = code[: m.start()].count("\n") + 1
            if not code.splitlines()[line - 1].lstrip().startswith("//"):
                found.append(f"{rel}:{line}")
    return found


def logged_states(version: str) -> set[str]:
    """The state names a patch can print: the string literals its statemine code returns."""
    names = set(_STATE_LITERAL.findall(added_lines(version)))
    return {n for n in names if n not in {"STATEMINE_LOG", "LossDetected", "SpuriousLoss"}} - {
        "Close"
    }


# -- fast ---------------------------------------------------------------------------------------
def test_registry_knows_quiche_from_crates_io():
    info = patch.load_impl("quiche")
    assert (info.fetch, info.crate) == ("crates-io", "quiche")
    assert set(VERSIONS) <= set(patch.versions("quiche"))
    listed = patch.list_patches()
    assert {"src/statemine.rs", "src/lib.rs"} <= set(listed.loc[listed["impl"] == "quiche", "file"])


def test_impl_toml_checks_the_crate_name(tmp_path):
    d = tmp_path / "x"
    d.mkdir()
    (d / "impl.toml").write_text('name = "x"\nfetch = "crates-io"\ncrate = "../evil"\n')
    with pytest.raises(InputError, match="crate"):
        patch.load_impl("x", tmp_path)
    (d / "impl.toml").write_text('name = "x"\nfetch = "crates-io"\n')
    with pytest.raises(InputError, match="needs a 'crate'"):
        patch.load_impl("x", tmp_path)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_logged_state_maps_to_the_statemine_vocabulary(version):
    states = logged_states(version)
    assert {"SlowStart", "CongestionAvoidance", "Recovery", "ProbeTimeout"} <= states
    assert {"ApplicationLimited", "BBRStartup", "BBRDrain", "BBRProbeRTT"} <= states
    assert {"BBRProbeBWDown", "BBRProbeBWCruise", "BBRProbeBWRefill", "BBRProbeBWUp"} <= states
    for s in states:
        assert canonical_state(s, "quiche") in CANONICAL, s
    assert canonical_state("BBRProbeBWRefill", "quiche") == "BBRProbeBW"


def test_unknown_version_and_controller_are_usage_errors():
    with pytest.raises(
        UsageError, match=r"no patch for quiche 0\.1\.0 \(patched versions: .*0\.30\.0"
    ):
        quiche.controller("0.1.0", "cubic")
    with pytest.raises(UsageError, match=r"no congestion controller 'vegas' \(known: bbr, bbr2"):
        quiche.controller(LATEST, "vegas")
    assert quiche.controller(LATEST, "bbr") == "bbr2-gcongestion"


def test_cli_no_patch_for_version_is_exit_2(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "statemine",
            "patch",
            "check",
            "--impl",
            "quiche",
            "--version",
            "0.1.0",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "no patch for quiche 0.1.0" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("tool", "hint"),
    [("cmake", "apt-get install cmake"), ("cargo", "rustup"), ("libclang", "libclang-dev")],
)
def test_missing_build_tool_is_named_with_its_install(tool, hint, monkeypatch, tmp_path):
    real_which = cargo.shutil.which
    monkeypatch.setattr(cargo.shutil, "which", lambda t: None if t == tool else real_which(t))
    if tool == "libclang":
        monkeypatch.setattr(cargo, "_has_libclang", lambda: False)
    monkeypatch.setenv("STATEMINE_CACHE", str(tmp_path))
    monkeypatch.setattr(cargo, "rustc_version", lambda: "rustc test")
    with pytest.raises(StatemineError) as err:
        cargo.build("quiche", LATEST, tmp_path, SMOKE_PROGRAM, "statemine-quiche-smoke")
    msg = str(err.value)
    assert "\n" not in msg and f"missing {tool}" in msg and hint in msg


def test_build_key_depends_on_patch_program_and_features(tmp_path, monkeypatch):
    monkeypatch.setattr(cargo, "rustc_version", lambda: "rustc 1.0")
    prog = tmp_path / "prog"
    (prog / "src").mkdir(parents=True)
    (prog / "Cargo.toml").write_text('[dependencies]\nquiche = { path = "QUICHE_SRC" }\n')
    (prog / "src" / "main.rs").write_text("fn main() {}\n")
    k1 = cargo.build_key("quiche", LATEST, prog, ())
    assert k1 == cargo.build_key("quiche", LATEST, prog, ())
    assert k1 != cargo.build_key("quiche", LATEST, prog, ("x",))
    (prog / "src" / "main.rs").write_text("fn main() { }\n")
    assert k1 != cargo.build_key("quiche", LATEST, prog, ())
    monkeypatch.setattr(cargo, "rustc_version", lambda: "rustc 2.0")
    assert cargo.build_key("quiche", LATEST, prog, ()) != cargo.build_key(
        "quiche", LATEST, prog, ("x",)
    )


def test_manifest_placeholder_is_required_once(tmp_path):
    prog = tmp_path / "prog"
    prog.mkdir()
    (prog / "Cargo.toml").write_text("[dependencies]\n")
    with pytest.raises(UsageError, match="QUICHE_SRC"):
        cargo._manifest_for(prog, tmp_path)
    (prog / "Cargo.toml").write_text('quiche = { path = "QUICHE_SRC" }\n')
    assert cargo._manifest_for(prog, Path("/a/b")) == 'quiche = { path = "/a/b" }\n'
    with pytest.raises(UsageError, match="quotes"):
        cargo._manifest_for(prog, Path('/a/"b'))


def test_lock_checksum_reads_the_registry_checksum():
    lock = (
        '[[package]]\nname = "quiche"\nversion = "0.30.0"\nsource = "registry+x"\n'
        'checksum = "52b3"\n\n[[package]]\nname = "other"\nversion = "1.0.0"\n'
    )
    assert cargo.lock_checksum(lock, "quiche", "0.30.0") == "52b3"
    with pytest.raises(StatemineError, match="no checksum for other"):
        cargo.lock_checksum(lock, "other", "1.0.0")


def test_rust_function_rule_on_rustfmt_layout():
    src = [
        "impl<F: BufFactory> Connection<F> {\n",
        "    pub fn send(&mut self) -> Result<usize> {\n",
        "        let now = Instant::now();\n",
        "        let f = |x: u8| {\n",
        "        };\n",
        "    }\n",
        "\n",
        "    fn inner() {\n",
        "        fn nested() {\n",
        "        }\n",
        "        x();\n",
        "    }\n",
        "}\n",
        "pub(crate) fn free() {}\n",
    ]
    got = [rust_function(src, i) for i in range(len(src))]
    assert got[2] == got[4] == "Connection.send"
    assert got[6] is None and got[12] is None
    assert got[10] == "Connection.inner"
    assert got[13] == "free"


# -- slow: fetched, patched, built --------------------------------------------------------------
@pytest.fixture(scope="session")
def smoke_binaries() -> dict[str, tuple[Path, float]]:
    """version -> (smoke binary, seconds its build took here; ~0 when cached)."""
    return {}


def smoke(smoke_binaries, version: str) -> Path:
    if version not in smoke_binaries:
        start = time.monotonic()
        smoke_binaries[version] = (
            quiche.build(version, SMOKE_PROGRAM, "statemine-quiche-smoke"),
            time.monotonic() - start,
        )
    return smoke_binaries[version][0]


def run_smoke(
    binary: Path,
    version: str,
    tmp_path: Path,
    cc: str,
    size: int,
    loss: int = 0,
    blackout: str | None = None,
    env: dict | None = None,
    qlog: bool = True,
):
    """Run one transfer; returns (statemine log path, qlog path or None, stdout)."""
    src = quiche.patched_source(version)
    log = tmp_path / f"{cc}.log"
    qpath = tmp_path / f"{cc}.sqlog" if qlog else None
    args = [
        str(binary),
        str(src / "examples" / "cert.crt"),
        str(src / "examples" / "cert.key"),
        cc,
        str(size),
        str(loss),
        "7",
        str(qpath) if qpath else "-",
    ]
    if blackout:
        args.append(blackout)
    proc = subprocess.run(
        args,
        env={**os.environ, **(env or {}), "STATEMINE_LOG": str(log)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return log, qpath, proc.stdout


def states(ev) -> list[str]:
    return ev.loc[ev["kind"] == "state", "state"].tolist()


def collapse(seq: list[str]) -> list[str]:
    return [s for i, s in enumerate(seq) if i == 0 or s != seq[i - 1]]


def qlog_states(path: Path) -> list[tuple[float, str]]:
    """(time in seconds, state) of a quiche qlog's congestion_state_updated events, read
    independently of statemine's qlog parser (JSON-SEQ, times in ms from the reference)."""
    out = []
    for chunk in path.read_bytes().split(b"\x1e"):
        if not chunk.strip():
            continue
        rec = json.loads(chunk)
        if isinstance(rec, dict) and str(rec.get("name", "")).endswith("congestion_state_updated"):
            out.append((rec["time"] / 1000.0, QLOG_NAMES[rec["data"]["new"]]))
    return out


def qlog_cwnds(path: Path) -> list[tuple[float, int]]:
    """(time in seconds, cwnd in bytes) of a quiche qlog's metrics_updated events that
    report the congestion window."""
    out = []
    for chunk in path.read_bytes().split(b"\x1e"):
        if not chunk.strip():
            continue
        rec = json.loads(chunk)
        is_metrics = isinstance(rec, dict) and str(rec.get("name", "")).endswith("metrics_updated")
        if is_metrics and "congestion_window" in rec.get("data", {}):
            out.append((rec["time"] / 1000.0, int(rec["data"]["congestion_window"])))
    return out


def check_cwnd_agrees_with_qlog(server, qpath: Path) -> None:
    """Every state line after Init carries the cwnd quiche's qlog reported last (both are
    taken at the same calls, qlog's first); returns nothing, asserts."""
    q = qlog_cwnds(qpath)
    times = np.array([t for t, _ in q])
    st = server[(server["kind"] == "state") & (server["state"] != "Init")]
    assert len(st) > 0 and len(q) > 0
    for t, cwnd in zip(st["time"], st["cwnd"]):
        i = np.searchsorted(times, t + QLOG_TIME_TOL, side="right") - 1
        assert i >= 0 and q[i][1] == cwnd, (t, cwnd, q[max(i, 0)])


def server_events(log: Path):
    ts = read(log)
    ev = ts.events.merge(ts.traces[["trace", "role"]], on="trace")
    return ev[ev["role"] == "server"], ev


def check_sane(ev) -> None:
    for _, tr in ev.groupby("trace"):
        assert states(tr)[0] == "Init"
        assert np.all(np.diff(tr["time"].to_numpy()) >= 0)
        st = tr[tr["kind"] == "state"]
        assert (st["cwnd"] > 0).all() and (st["inflight"] >= 0).all()
        assert tr["state"].iloc[-1] == "Close"


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_fetch_is_the_registry_crate_and_patch_round_trips(version, tmp_path):
    root = patch.fetch("quiche", version, tmp_path / "src")
    rec = json.loads((root / ".statemine-source.json").read_text())
    archive = patch.cache_dir() / "crates" / "quiche" / version / f"quiche-{version}.crate"
    assert rec["sha256"] == patch.registry.sha256_file(archive)
    # the crate checksum pinned in instrument-patches/quiche/digests.toml
    assert rec["sha256"] == patch.registry.pinned_digest("quiche", version) and rec["pinned"]
    assert (root / "Cargo.toml").is_file() and (root / "src" / "lib.rs").is_file()
    before = {p: p.read_bytes() for p in (root / "src").rglob("*.rs")}
    assert real_clock_calls(root)  # the pristine source reads the real clock
    assert patch.check("quiche", version, root).status == "would apply"
    assert patch.apply("quiche", version, root).status == "applied"
    assert (root / "src" / "statemine.rs").is_file()
    # the clock hook: quiche's non-test code reads no clock but the patch's
    assert real_clock_calls(root) == []
    assert patch.revert("quiche", version, root).status == "reverted"
    assert {p: p.read_bytes() for p in (root / "src").rglob("*.rs")} == before


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("cc", ["reno", "cubic"])
def test_reno_cubic_lines_parse_and_agree_with_qlog(version, cc, smoke_binaries, tmp_path):
    """A 2 MB transfer with 1% loss: sane traces with SlowStart, Recovery and congestion
    avoidance, and the state sequence of quiche's own qlog (with Recovery's times inside
    the patch's Recovery periods)."""
    log, qpath, out = run_smoke(
        smoke(smoke_binaries, version), version, tmp_path, cc, 2_000_000, loss=10
    )
    assert out.startswith("done ") and "bytes=2000000" in out
    server, ev = server_events(log)
    check_sane(ev)
    seq = states(server)
    assert {"SlowStart", "Recovery", "CongestionAvoidance", "ApplicationLimited"} <= set(seq)
    losses = server[server["state"] == "LossDetected"]
    assert len(losses) > 0
    assert set(losses["fields"].str.extract(r"rule=(\w+)")[0]) <= {"packet", "time"}
    check_cwnd_agrees_with_qlog(server, qpath)
    if version not in QLOG_HAS_STATES:
        return
    q = qlog_states(qpath)
    mine = collapse([s for s in seq if s not in NOT_IN_QLOG | {"Recovery"}])
    theirs = collapse([s for _, s in q if s != "Recovery"])
    assert mine == theirs
    # every qlog `recovery` starts one of the patch's Recovery periods or lies inside one
    st = server[server["kind"] == "state"]
    starts = st["time"].to_numpy()
    names = st["state"].to_numpy()
    ends = np.append(starts[1:], np.inf)
    rec = [(a, b) for a, b, n in zip(starts, ends, names) if n == "Recovery"]
    # (qlog writes its times, in ms, a few microseconds off)
    for t, s in q:
        if s == "Recovery":
            assert any(a - QLOG_TIME_TOL <= t <= b + QLOG_TIME_TOL for a, b in rec), t
    assert len(rec) >= 1


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_bbr_modes_in_order_and_agree_with_qlog(version, smoke_binaries, tmp_path):
    """BBR2 on an 8 MB transfer: Startup, then Drain, then ProbeBW phases, with the BBR
    fields; the same sequence as quiche's qlog."""
    log, qpath, _ = run_smoke(smoke(smoke_binaries, version), version, tmp_path, "bbr2", 8_000_000)
    server, ev = server_events(log)
    check_sane(ev)
    seq = collapse([s for s in states(server) if s not in NOT_IN_QLOG])
    assert seq[:3] == ["BBRStartup", "BBRDrain", seq[2]] and seq[2].startswith("BBRProbeBW")
    # 8 MB last more than one ProbeBW cycle: every phase appears
    assert {"BBRProbeBWDown", "BBRProbeBWCruise", "BBRProbeBWRefill", "BBRProbeBWUp"} <= set(seq)
    st = server[server["kind"] == "state"]
    fields = st["fields"].iloc[-1]
    bw = float(re.search(r"bw_bps=(\d+)", fields)[1])
    # the bottleneck is 10 Mbit/s: the estimate is of that order
    assert 2e6 < bw < 2e7, fields
    # no RTT is below the path's 40 ms of propagation delay
    min_rtt = float(re.search(r"min_rtt=([\d.]+)", fields)[1])
    assert 0.040 <= min_rtt < 1.0 and "pacing_gain=" in fields
    check_cwnd_agrees_with_qlog(server, qpath)
    if version in QLOG_HAS_STATES:
        assert seq == collapse([s for _, s in qlog_states(qpath)])


@pytest.mark.slow
@pytest.mark.parametrize("cc", ["cubic", "bbr2"])
def test_blackout_gives_probe_timeout(cc, smoke_binaries, tmp_path):
    log, _, _ = run_smoke(
        smoke(smoke_binaries, LATEST),
        LATEST,
        tmp_path,
        cc,
        1_000_000,
        blackout="300+400",
        qlog=False,
    )
    server, _ = server_events(log)
    seq = states(server)
    assert "ProbeTimeout" in seq
    i = seq.index("ProbeTimeout")
    assert seq[i + 1] != "ProbeTimeout"  # left again once an ACK arrives


@pytest.mark.slow
def test_runs_are_deterministic_in_virtual_time(smoke_binaries, tmp_path):
    """The clock hook: two runs of the same transfer give the same log byte for byte, and
    t= is virtual time (starts at 0, ends at the program's virtual end time)."""
    binary = smoke(smoke_binaries, LATEST)
    logs = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        log, _, out = run_smoke(
            binary, LATEST, tmp_path / name, "cubic", 1_000_000, loss=10, qlog=False
        )
        logs.append(log)
    a, b = logs
    assert a.read_bytes() == b.read_bytes()
    ts = read(a)
    end = float(re.search(r"t=([\d.]+)", out)[1])
    assert ts.events["time"].min() == 0.0
    # a 1 MB transfer at 10 Mbit/s takes at least 0.8 s of virtual time, and a real run of
    # the program far less than that would be wall-clock time
    assert 0.8 < ts.events["time"].max() <= end + 1e-6


@pytest.mark.slow
def test_reordering_threshold_knob(smoke_binaries, tmp_path):
    """With a huge packet threshold, no loss is declared by the packet rule."""
    binary = smoke(smoke_binaries, LATEST)
    rules = {}
    for name, env in (("default", {}), ("huge", {"STATEMINE_REORDERING_THRESHOLD": "10000"})):
        d = tmp_path / name
        d.mkdir()
        log, _, _ = run_smoke(binary, LATEST, d, "cubic", 1_000_000, loss=20, env=env, qlog=False)
        text = log.read_text()
        rules[name] = (text.count("rule=packet"), text.count("rule=time"))
    assert rules["default"][0] > 0
    assert rules["huge"][0] == 0 and rules["huge"][1] > 0


@pytest.mark.slow
def test_unknown_controller_exits_2(smoke_binaries, tmp_path):
    src = quiche.patched_source(LATEST)
    proc = subprocess.run(
        [
            str(smoke(smoke_binaries, LATEST)),
            str(src / "examples/cert.crt"),
            str(src / "examples/cert.key"),
            "vegas",
            "1000",
            "0",
            "1",
            "-",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2 and "vegas" in proc.stderr


@pytest.mark.slow
def test_build_times_are_recorded(smoke_binaries, record_property):
    """Build every version (once per session; cached builds take ~0 s) and record the time."""
    for version in VERSIONS:
        smoke(smoke_binaries, version)
        record_property(f"quiche_{version}_build_s", round(smoke_binaries[version][1], 1))
        assert smoke_binaries[version][0].is_file()


def test_forget_other_tree_only_when_the_tree_changes(tmp_path):
    """quiche's outputs have no hash in their names: a build from another tree must
    drop quiche's fingerprints (so cargo recompiles it), a build from the same tree not."""
    fp = tmp_path / "release" / ".fingerprint"
    for name in ("quiche-1", "quiche-2", "boring-sys-3"):
        (fp / name).mkdir(parents=True)
    cargo.forget_other_tree(tmp_path, "quiche", Path("/a"))
    assert sorted(p.name for p in fp.iterdir()) == ["boring-sys-3"]
    (fp / "quiche-4").mkdir()
    cargo.forget_other_tree(tmp_path, "quiche", Path("/a"))
    assert (fp / "quiche-4").is_dir()
    cargo.forget_other_tree(tmp_path, "quiche", Path("/b"))
    assert sorted(p.name for p in fp.iterdir()) == ["boring-sys-3"]


@pytest.mark.slow
def test_time_threshold_knob(smoke_binaries, tmp_path):
    """The time threshold decides how many losses the time rule declares: none at 32 RTTs,
    more at 1 RTT than at quiche's 9/8; an invalid value is named on stderr and ignored."""
    binary = smoke(smoke_binaries, LATEST)
    counts = {}
    for name, value in (("default", None), ("tight", "1.0"), ("huge", "32")):
        d = tmp_path / name
        d.mkdir()
        env = {"STATEMINE_TIME_THRESHOLD": value} if value else {}
        log, _, _ = run_smoke(binary, LATEST, d, "cubic", 1_000_000, loss=20, env=env, qlog=False)
        counts[name] = log.read_text().count("rule=time")
    assert counts["huge"] == 0 < counts["default"] < counts["tight"]
    src = quiche.patched_source(LATEST)
    proc = subprocess.run(
        [
            str(binary),
            str(src / "examples/cert.crt"),
            str(src / "examples/cert.key"),
            "cubic",
            "10000",
            "0",
            "1",
            "-",
        ],
        env={**os.environ, "STATEMINE_TIME_THRESHOLD": "abc", "STATEMINE_LOG": str(tmp_path / "x")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0
    assert 'ignoring STATEMINE_TIME_THRESHOLD="abc"' in proc.stderr
