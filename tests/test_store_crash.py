"""Crashes and readers during ``statemine store add`` (issue 27 items 1, 2).

An add killed at each of its write steps (``STATEMINE_STORE_CRASH_AT=N``: the N-th step
ends the process as SIGKILL would) and at random moments (SIGKILL), and readers polling
while adds run: after each, the store holds exactly the old content or the new one, its
readers never fail, the next add works, and ``store vacuum`` removes every file the killed
add left. Each add is a forked process (SIGKILL and the crash points end it, not the test). Slow
tier: about a minute on an idle 2-core machine."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_store import _log, _qlog_connections

import statemine
from statemine.errors import InputError
from statemine.store import META_NAME, read_store
from statemine.store_log import CRASH_ENV, LOG_DIR, version_numbers

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent


def _add(store: Path, inputs: list[Path], partition: str, crash_at: int = 0) -> tuple[int, str]:
    """``statemine.store_add(inputs, store, {"impl": partition})`` in a forked process
    (this one's imports are done: a process per add costs milliseconds, not seconds),
    ending at write step ``crash_at`` (0: none) as a kill would; returns its pid and the
    file its stderr goes to."""
    err = store.parent / f".{store.name}-{crash_at}-{time.monotonic_ns()}.err"
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            fd = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, 2)
            if crash_at:
                os.environ[CRASH_ENV] = str(crash_at)
            statemine.store_add(inputs, store, {"impl": partition})
            code = 0
        except BaseException as exc:
            os.write(2, f"{type(exc).__name__}: {exc}\n".encode())
        finally:
            os._exit(code)
    return pid, str(err)


def _wait(pid: int) -> int:
    """The exit status of the forked add ``pid`` (-9 when killed by SIGKILL)."""
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _content(store: Path) -> tuple | None:
    """What a reader sees: per partition (labels, files, traces, events, metrics rows,
    trace labels) and every event row; None for no store or a store without files."""
    try:
        info = statemine.store_info(store)
    except InputError as exc:
        if "not a statemine store" in str(exc):
            return None
        raise
    if not info.partitions:
        return None
    ts = read_store(store)
    events = ts.events.astype({"trace": str, "kind": str, "state": str})
    rows = tuple(map(tuple, events[["trace", "seq", "time", "kind", "state"]].to_numpy()))
    return tuple(
        (tuple(p.labels.items()), p.files, p.traces, p.events, p.metrics, p.trace_labels)
        for p in info.partitions
    ), rows


def _only_published(store: Path) -> None:
    """After a vacuum: the store holds its metadata, its latest version file and the files
    that version lists, and no other file or empty folder."""
    if not store.exists():
        return
    numbers = version_numbers(store)
    want = {store / META_NAME}
    if numbers:
        want.add(store / LOG_DIR / f"{numbers[-1]:020d}.json")
        doc = json.loads((store / LOG_DIR / f"{numbers[-1]:020d}.json").read_text())
        for f in doc["files"]:
            ident, parts = f["id"], f["partition"]
            want.add(store.joinpath(*parts, f"part-{ident}.parquet"))
            want.add(store.joinpath("_labels", *parts, f"labels-{ident}.parquet"))
            if f["metrics"]:
                want.add(store.joinpath("_metrics", *parts, f"metrics-{ident}.parquet"))
    found = {p for p in store.rglob("*") if not p.is_dir()}
    assert found <= want | {store / META_NAME}, sorted(map(str, found - want))
    assert found >= want - {store / META_NAME}
    empty = [p for p in store.rglob("*") if p.is_dir() and not any(p.iterdir())]
    assert empty in ([], [store / LOG_DIR]), empty


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    tmp = tmp_path_factory.mktemp("inputs")
    return {
        "statemine": [_log(tmp / "a.log", conns=40, lines=30)],
        "qlog": [_qlog_connections(tmp / "q.sqlog", conns=3, events=200)],
        "two": [_log(tmp / "b.log", conns=5), _log(tmp / "c.log", conns=6)],
    }


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, inputs) -> Path:
    """A store with one add in partition impl=x."""
    store = tmp_path_factory.mktemp("base") / "s"
    statemine.store_add(inputs["two"][:1], store, {"impl": "x"})
    return store


@pytest.mark.parametrize(
    "kind, partition, existing",
    [
        ("statemine", "x", True),
        ("statemine", "y", True),
        ("qlog", "y", True),
        ("two", "x", True),
        ("statemine", "x", False),
    ],
)
def test_a_kill_at_every_write_step_leaves_the_old_or_the_new_store(
    tmp_path, inputs, base, kind, partition, existing
):
    """Every write step of an add, one kill each (to an existing or a new partition, into
    an existing or a new store): the old content before the add is published, the new
    one after; a vacuum then leaves only the published files; the next add works."""

    def fresh(name: str) -> Path:
        store = tmp_path / name
        if existing:
            shutil.copytree(base, store)
        return store

    old = _content(fresh("old"))
    done = statemine.store_add(inputs[kind], fresh("new"), {"impl": partition})
    new = _content(tmp_path / "new")
    assert new != old and done.version == (2 if existing else 1)
    steps = []
    for n in range(1, 100):
        store = fresh(f"s{n}")
        pid, err = _add(store, inputs[kind], partition, crash_at=n)
        status, said = _wait(pid), Path(err).read_text()
        if status == 0:
            assert _content(store) == new
            break
        assert status == 137, said
        steps.append(said.strip().rsplit(": ", 1)[-1])
        got = _content(store)
        assert got in (old, new), (n, steps[-1])
        if got == new:  # published: only the very last step comes after it
            assert steps[-1] == "published"
        statemine.store_vacuum(store, grace=0)
        _only_published(store)
        assert _content(store) == got
        statemine.store_add(inputs["two"][1:], store, {"impl": "z"})  # the next add works
        shutil.rmtree(store)
    assert "published" in steps and "version written" in steps and len(steps) >= 6, steps


def test_kills_at_random_moments_leave_the_old_or_the_new_store(tmp_path, inputs, base):
    """SIGKILL at random moments of adds (a statemine log spilled and gathered, a qlog in
    parts): the old or the new content each time; a vacuum leaves only published files
    (a killed add used to leave an empty partition folder, a labels file without its data
    file, or a .spill-* folder)."""
    rng = random.Random(27)
    olds, news = {}, {}
    for kind in ("statemine", "qlog"):
        olds[kind] = _content(base)
        shutil.copytree(base, tmp_path / f"new-{kind}")
        statemine.store_add(inputs[kind], tmp_path / f"new-{kind}", {"impl": "y"})
        news[kind] = _content(tmp_path / f"new-{kind}")
    spans = {}  # how long each add takes here: the kills land anywhere in it
    for kind in ("statemine", "qlog"):
        shutil.copytree(base, tmp_path / f"t-{kind}")
        start = time.monotonic()
        assert _wait(_add(tmp_path / f"t-{kind}", inputs[kind], "y")[0]) == 0
        spans[kind] = (time.monotonic() - start) * 1.2
    outcomes = []
    for trial in range(24):
        kind = ("statemine", "qlog")[trial % 2]
        store = tmp_path / f"k{trial}"
        shutil.copytree(base, store)
        pid, _ = _add(store, inputs[kind], "y")
        time.sleep(rng.uniform(0.0, spans[kind]))
        os.kill(pid, signal.SIGKILL)
        _wait(pid)
        got = _content(store)
        assert got in (olds[kind], news[kind]), trial
        outcomes.append(got == news[kind])
        statemine.store_vacuum(store, grace=0)
        _only_published(store)
        assert _content(store) == got
        shutil.rmtree(store)
    assert outcomes.count(False) >= 6, outcomes  # most kills land before the publication


POLLER = r"""
import json, sys, time
import statemine
from statemine.store import read_store
store, polls, unit, per, progress = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
failures, sizes = [], set()
for i in range(polls):
    with open(progress, "w") as out:
        out.write(str(i))
    try:
        if i % 2:
            info = statemine.store_info(store)  # traces: distinct ids per partition
            n = info.events
            traces = n // unit * per
        else:
            ts = read_store(store)
            n, traces = len(ts.events), ts.n_traces
        if n % unit or traces != n // unit * per:
            failures.append(f"poll {i}: {n} events of {traces} traces, not whole adds")
        sizes.add(n)
    except Exception as exc:
        failures.append(f"poll {i}: {type(exc).__name__}: {exc}")
print(json.dumps({"failures": failures, "sizes": sorted(sizes)}))
"""


def test_readers_polling_during_adds_never_fail(tmp_path, inputs):
    """1,000 reads (store info and read_store alternating) in a process of their own while
    adds run one after another (one every 40 reads), one in four killed: every read
    succeeds and sees whole adds only (23 of 351 info polls and 37 of 289 reads failed
    during ordinary adds before)."""
    log = inputs["two"][0]
    whole = statemine.read(log)
    unit, per = len(whole.events), whole.n_traces
    store, progress = tmp_path / "s", tmp_path / "progress"
    statemine.store_add([log], store, {"impl": "x"})
    progress.write_text("0")
    argv = [str(store), "1000", str(unit), str(per), str(progress)]
    poller = subprocess.Popen(
        [sys.executable, "-c", POLLER, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    adds = kills = 0
    rng = random.Random(5)
    while poller.poll() is None:
        seen = int(progress.read_text() or 0)
        pid, _ = _add(store, [log], rng.choice("xy"))
        if adds % 4 == 3:
            time.sleep(rng.uniform(0.0, 0.1))
            os.kill(pid, signal.SIGKILL)
            kills += 1
        _wait(pid)
        adds += 1
        while poller.poll() is None and int(progress.read_text() or 0) < seen + 40:
            time.sleep(0.01)
    out, err = poller.communicate()
    assert poller.returncode == 0, err
    result = json.loads(out)
    assert result["failures"] == [], result["failures"][:5]
    assert len(result["sizes"]) >= 10, result  # the polls saw many versions
    final = statemine.store_info(store).events
    assert final % unit == 0 and max(result["sizes"]) <= final
    statemine.store_vacuum(store, grace=0)
    _only_published(store)
    assert statemine.store_info(store).events == final and adds > kills > 0
