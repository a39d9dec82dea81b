"""Small statemine logs added to a store in one pass, into one data file (issue 29: one
data file per small file cost about 16 ms of CPU each): the store reads back exactly as
when each file is its own data file."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
from test_many_files import assert_same_set, write_logs

import statemine
from statemine import store as st
from statemine.parse import statemine_log as sl
from statemine.parse.inputs import ReadOptions


def _same_store_set(got: statemine.TraceSet, want: statemine.TraceSet) -> None:
    """Equal sets, but for the order of the metric columns (a store's reader orders them as
    its data files first have them, and one data file of many logs has all of them at once)
    and the labels' dtypes."""
    assert set(got.events.columns) == set(want.events.columns)
    ordered = dataclasses.replace(
        want, events=want.events[list(got.events.columns)], traces=got.traces
    )
    assert_same_set(got, ordered)
    # the labels' values equal; their dtypes follow the data files (a label one file lacks
    # is object there and in the join, text where one file holds every trace)
    pd.testing.assert_frame_equal(got.traces, want.traces, check_dtype=False, check_exact=True)


def _store(tmp_path, name, inputs, monkeypatch, gather: bool):
    with monkeypatch.context() as mp:
        if not gather:  # each file its own data file, as before
            mp.setattr(st, "GATHER_FILE_BYTES", -1)
        out = st.store_add(inputs, tmp_path / name, {"env": "lab"})
    return out, st.read_store(tmp_path / name)


def test_small_logs_go_into_one_data_file_and_read_back_the_same(tmp_path, monkeypatch):
    logs = tmp_path / "logs"
    logs.mkdir()
    files = write_logs(logs, np.random.default_rng(5), 30)
    one, gathered = _store(tmp_path, "gathered", [logs], monkeypatch, gather=True)
    each, alone = _store(tmp_path, "alone", [logs], monkeypatch, gather=False)
    assert len(one.files) == 1 and len(each.files) == len(files)
    assert (one.traces, one.events) == (each.traces, each.events)
    _same_store_set(gathered, alone)
    info = st.store_info(tmp_path / "gathered")
    assert (info.traces, info.events) == (each.traces, each.events)


def test_a_name_twice_a_big_log_and_other_formats_break_the_groups(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    first = write_logs(a, np.random.default_rng(6), 4)
    second = write_logs(b, np.random.default_rng(7), 3)  # run000.log .. run002.log again
    saved = tmp_path / "saved.parquet"
    statemine.save(sl.read_statemine_log(first[0], source="other"), saved)
    big = first[2]
    with big.open("a") as out:  # a connection of its own makes it the one big file
        out.writelines(f"STATEMINE t={t} conn=big state=Recovery\n" for t in range(200))
    others = [f for f in [*first, *second] if f != big]
    monkeypatch.setattr(st, "GATHER_FILE_BYTES", max(f.stat().st_size for f in others))
    inputs = [*first[:2], big, first[3], saved, *second]
    groups = st._add_groups(inputs, ReadOptions())
    assert [[p.name for p in g] for g in groups] == [
        ["run000.log", "run001.log"],
        ["run002.log"],  # over GATHER_FILE_BYTES
        ["run003.log"],
        ["saved.parquet"],  # not a statemine log
        ["run000.log", "run001.log", "run002.log"],
    ]
    one, gathered = _store(tmp_path, "gathered", inputs, monkeypatch, gather=True)
    each, alone = _store(tmp_path, "alone", inputs, monkeypatch, gather=False)
    assert len(one.files) == 5 and len(each.files) == len(inputs)
    _same_store_set(gathered, alone)
    pd.testing.assert_frame_equal(gathered.traces, alone.traces)
