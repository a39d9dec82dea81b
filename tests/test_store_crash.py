"""Crashes and readers during ``statemine store add`` (issue 27 items 1, 2).

An add killed at each of its write steps (``STATEMINE_STORE_CRASH_AT=N``: the N-th step
ends the process as SIGKILL would) and at random moments (SIGKILL), and readers polling
while adds run: after each, the store holds exactly the old content or the new one, its
readers never fail, the next add works, and ``store vacuum`` removes every file the killed
add left. Slow: each add is a process of its own (the imports take most of its time)."""

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


def _add(store: Path, inputs: list[Path], partition: str, **env: str) -> subprocess.Popen:
    """``statemine store add INPUTS --store STORE --label impl=PARTITION`` as a process."""
    argv = [sys.executable, "-m", "statemine", "store", "add", *map(str, inputs)]
    return subprocess.Popen(
        [*argv, "--store", str(store), "--label", f"impl={partition}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO), **env),
    )


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
        proc = _add(store, inputs[kind], partition, **{CRASH_ENV: str(n)})
        _, err = proc.communicate(timeout=300)
        if proc.returncode == 0:
            assert _content(store) == new
            break
        assert proc.returncode == 137, err
        steps.append(err.strip().rsplit(": ", 1)[-1])
        got = _content(store)
        assert got in (old, new), (n, steps[-1])
        if got == new:  # published: only the very last step comes after it
            assert steps[-1] == "published"
        statemine.store_vacuum(store, grace=0)
        _only_published(store)
        assert _content(store) == got
        again = _add(store, inputs["two"][1:], "z")
        assert again.wait(timeout=300) == 0, again.communicate()[1]
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
    outcomes = []
    for trial in range(12):
        kind = ("statemine", "qlog")[trial % 2]
        store = tmp_path / f"k{trial}"
        shutil.copytree(base, store)
        proc = _add(store, inputs[kind], "y")
        time.sleep(rng.uniform(0.3, 3.0))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=300)
        got = _content(store)
        assert got in (olds[kind], news[kind]), trial
        outcomes.append(got == news[kind])
        statemine.store_vacuum(store, grace=0)
        _only_published(store)
        assert _content(store) == got
        shutil.rmtree(store)
    assert outcomes.count(False) >= 3, outcomes  # most kills land before the publication


POLLER = r"""
import json, sys, time
import statemine
from statemine.store import read_store
store, polls, unit, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
failures, sizes = [], set()
for i in range(polls):
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
    """1,000 reads (store info and read_store alternating) while adds run one after
    another, some killed: every read succeeds and sees whole adds only (23 of 351 info
    polls and 37 of 289 reads failed before)."""
    log = inputs["statemine"][0]
    whole = statemine.read(log)
    unit, per = len(whole.events), whole.n_traces
    store = tmp_path / "s"
    statemine.store_add([log], store, {"impl": "x"})
    poller = subprocess.Popen(
        [sys.executable, "-c", POLLER, str(store), "1000", str(unit), str(per)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    adds = kills = 0
    rng = random.Random(5)
    while poller.poll() is None:
        proc = _add(store, [log], rng.choice("xy"))
        if adds % 4 == 3:
            time.sleep(rng.uniform(0.5, 2.0))
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.communicate(timeout=300)
        adds += 1
    out, err = poller.communicate()
    assert poller.returncode == 0, err
    result = json.loads(out)
    assert result["failures"] == [], result["failures"][:5]
    assert len(result["sizes"]) >= 3, result  # the polls saw several versions
    final = statemine.store_info(store).events
    assert final % unit == 0 and max(result["sizes"]) <= final
    statemine.store_vacuum(store, grace=0)
    _only_published(store)
    assert statemine.store_info(store).events == final and adds > kills > 0
