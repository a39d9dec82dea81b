"""File names that are not UTF-8 (a POSIX name is any bytes but ``/`` and NUL).

Python keeps such bytes as lone surrogates (``os.fsdecode``), which Arrow, Parquet and
JSON refuse: a trace id or ``source`` built from the name must be text. Every reader
writes those bytes ``\\xNN`` (:func:`statemine.escape.name_text`) and reads the file.
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import statemine
from statemine.escape import name_text
from statemine.store import read_store

DATA = Path(__file__).parent / "data"
LOG = (
    b"STATEMINE t=0.000 conn=c1 role=client state=SlowStart\n"
    b"STATEMINE t=0.250 conn=c1 role=client state=Recovery\n"
    b"STATEMINE t=0.500 conn=c1 role=client state=CongestionAvoidance\n"
    b"STATEMINE t=1.000 conn=c1 role=client event=ConnectionClosed\n"
)
BAD = b"run-\xff\xfe"  # not UTF-8


def _folder(tmp: Path, suffix: bytes, data: bytes) -> tuple[Path, str]:
    """A folder with the same file under a plain name and under a name that is not
    UTF-8; the second's name as the readers write it."""
    folder = tmp / "in"
    folder.mkdir()
    (folder / ("plain" + suffix.decode())).write_bytes(data)
    with open(os.path.join(os.fsencode(folder), BAD + suffix), "wb") as fh:
        fh.write(data)
    return folder, "run-\\xff\\xfe" + suffix.decode()


CASES = {
    "statemine": (b".log", LOG),
    "qlog": (b".sqlog", (DATA / "qlog" / "v03.sqlog").read_bytes()),
    "kernel": (b".txt", gzip.decompress((DATA / "tcp" / "record-reno-30kb.txt.gz").read_bytes())),
}


def test_name_text_keeps_utf8_and_escapes_the_rest() -> None:
    assert name_text("état-1.log") == "état-1.log"
    assert name_text(os.fsdecode(BAD + b".log")) == "run-\\xff\\xfe.log"
    # two names that differ in their bytes stay different
    assert name_text(os.fsdecode(b"a\xff")) != name_text(os.fsdecode(b"a\xfe"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_read_names_the_file_in_text(tmp_path: Path, case: str) -> None:
    suffix, data = CASES[case]
    folder, shown = _folder(tmp_path, suffix, data)
    ts = statemine.read(folder)
    sources = sorted(set(ts.traces["source"]))
    assert sources == sorted([str(folder / ("plain" + suffix.decode())), f"{folder}/{shown}"])
    ids = ts.traces["trace"].astype(str)
    assert ids.str.startswith(shown + "#").any()
    assert ids.str.startswith("plain" + suffix.decode() + "#").any()
    # the same traces under either name
    plain = ts.events[ts.events["trace"].astype(str).str.startswith("plain")]
    other = ts.events[ts.events["trace"].astype(str).str.startswith(shown)]
    assert plain["state"].astype(str).tolist() == other["state"].astype(str).tolist()


def test_one_file_read_alone(tmp_path: Path) -> None:
    folder, shown = _folder(tmp_path, b".log", LOG)
    ts = statemine.read(os.path.join(folder, os.fsdecode(BAD + b".log")))
    assert ts.traces["trace"].astype(str).tolist() == [f"{shown}#c1/client"]


def test_cli_infer_and_store_add(tmp_path: Path) -> None:
    folder, shown = _folder(tmp_path, b".log", LOG)
    env = dict(os.environ, COLUMNS="120")
    out = tmp_path / "out"
    for args in (
        ["infer", str(folder), "--out", str(out), "--no-svg"],
        ["store", "add", str(folder), "--store", str(tmp_path / "store")],
        ["read", str(folder), "--out", str(tmp_path / "set.parquet")],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "statemine", *args], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0, (args, done.stderr)
        assert "Traceback" not in done.stderr
    stored = read_store(tmp_path / "store")
    assert f"{folder}/{shown}" in set(stored.traces["source"])
    saved = statemine.read(tmp_path / "set.parquet")
    assert any(t.startswith(shown) for t in saved.traces["trace"].astype(str))
    shutil.rmtree(out)


def test_folder_digest_is_sha256sum_of_the_raw_names(tmp_path: Path) -> None:
    import hashlib

    from statemine.output.provenance import input_digest

    folder, _ = _folder(tmp_path, b".log", LOG)
    names = sorted(os.listdir(os.fsencode(folder)))  # the readers' order: by name
    listing = subprocess.run(["sha256sum", "--", *names], cwd=folder, capture_output=True)
    assert listing.returncode == 0 and BAD in listing.stdout  # the name's own bytes
    assert input_digest(folder)["sha256"] == hashlib.sha256(listing.stdout).hexdigest()
