"""Saved trace sets read as one Arrow table (statemine.traces.load_many, issue 29): a lab
folder's per-run ``traces.parquet`` caches join into exactly the TraceSet that loading
each file and concatenating gives (frames, dtypes, categories, column order, meta), with
one pandas conversion and one validation; any shape it does not reproduce exactly falls
back to file-by-file reading, which names the offending file."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import statemine
from statemine.errors import InputError
from statemine.parse import read
from statemine.traces import TraceSet, concat, load, load_many, merge_meta, save

TRACES = Path(__file__).resolve().parents[1] / "traces"


def _old_read(files: list[Path]) -> TraceSet:
    """What ``read`` made of saved sets before load_many: each loaded, then joined."""
    sets = [load(f) for f in files]
    return concat(sets, merge_meta([*(s.meta for s in sets), {"warnings": "[]"}]))


def assert_same(a: TraceSet, b: TraceSet) -> None:
    """Equal frames, dtypes, column order, categories (in order) and meta."""
    pd.testing.assert_frame_equal(a.events, b.events)
    pd.testing.assert_frame_equal(a.traces, b.traces)
    assert list(a.events.columns) == list(b.events.columns)
    for col in ("trace", "state", "kind"):
        assert list(a.events[col].cat.categories) == list(b.events[col].cat.categories)
        assert a.events[col].dtype == b.events[col].dtype
    assert a.meta == b.meta and list(a.meta) == list(b.meta)
    assert (a.metrics is None) == (b.metrics is None)
    if a.metrics is not None and b.metrics is not None:
        pd.testing.assert_frame_equal(a.metrics, b.metrics)


def _runs(folder: str) -> list[Path]:
    return sorted((TRACES / folder / "runs").glob("*/traces.parquet"))


def test_shipped_jitter_folder_reads_as_before_with_one_validation(monkeypatch):
    files = _runs("jitter")
    if not files:
        pytest.skip("traces/jitter is not shipped in this checkout")
    before = _old_read(files)
    calls = []
    real = TraceSet.from_events.__func__

    def counting(cls, *args, **kwargs):
        calls.append(1)
        return real(cls, *args, **kwargs)

    monkeypatch.setattr(TraceSet, "from_events", classmethod(counting))
    ts = statemine.read(TRACES / "jitter")
    assert len(calls) == 1  # was one per run plus one for the join (321)
    assert_same(ts, before)
    assert len(ts.events) == sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def _events(trace: str, states: list[str], **extra: list) -> pd.DataFrame:
    n = len(states)
    return pd.DataFrame(
        {"trace": [trace] * n, "time": [float(i) for i in range(n)], "state": states, **extra}
    )


def _mixed(tmp_path: Path) -> list[Path]:
    """Saved sets differing in categories (order and set), optional columns (a metric,
    ``fields``), label kinds, end times, warnings and meta."""
    a = TraceSet.from_events(
        pd.concat([_events("a1", ["S", "R", "S"]), _events("a2", ["R"])], ignore_index=True),
        pd.DataFrame({"trace": ["a1", "a2"], "role": ["client", "server"], "seed": [1, 2]}),
        {"run_id": "a", "warnings": json.dumps(["w1"])},
    )
    # the same state names in another category order, a metric column a lacks
    ev = _events("b1", ["R", "S"], cwnd=[10.0, 20.0], fields=["x=1", "y=2"])
    ev["state"] = pd.Categorical(ev["state"], categories=["S", "R"])
    b = TraceSet.from_events(
        ev,
        pd.DataFrame({"trace": ["b1"], "role": ["client"], "seed": [3]}),
        {"run_id": "b", "warnings": json.dumps(["w2"])},
    )
    # a state the others lack, a label of another kind (text seed), an end time
    c = TraceSet.from_events(
        _events("c1", ["S", "Q"]),
        pd.DataFrame({"trace": ["c1"], "role": ["server"], "seed": ["x"], "end": [5]}),
        {"run_id": "c"},
    )
    # labels of the same kinds as a's but an end time (a's are None), no fields column
    d = TraceSet.from_events(
        _events("d1", ["R", "R2"], srtt=[0.1, 0.2]),
        pd.DataFrame({"trace": ["d1"], "role": ["client"], "seed": [4], "end": [2.5]}),
        {"run_id": "d"},
    )
    paths = []
    for name, ts in (("a", a), ("b", b), ("c", c), ("d", d)):
        paths.append(save(ts, tmp_path / f"{name}.parquet"))
    return paths


@pytest.mark.parametrize(
    "pick", [[0, 1], [1, 0], [0, 2], [0, 1, 2], [2, 1, 0], [0, 3], [3, 1, 0], [0, 1, 2, 3]]
)
def test_mixed_files_join_as_file_by_file(tmp_path, pick):
    files = [_mixed(tmp_path)[i] for i in pick]
    joined = load_many(files)
    assert joined is not None
    sets = [load(f) for f in files]
    assert_same(joined, concat(sets, merge_meta(s.meta for s in sets)))
    assert_same(read(files), _old_read(files))


def test_file_out_of_trace_order_falls_back(tmp_path):
    files = _mixed(tmp_path)[:2]
    table_ts = load(files[0])
    shuffled = TraceSet(
        table_ts.events.iloc[::-1].reset_index(drop=True), table_ts.traces, table_ts.meta
    )
    save(shuffled, files[0])  # save does not validate: a file as another tool may write it
    assert load_many(files) is None
    assert_same(read(files), _old_read(files))


def test_metrics_rows_fall_back(tmp_path):
    files = _mixed(tmp_path)[:2]
    ts = load(files[1])
    metrics = pd.DataFrame({"trace": pd.Categorical(["b1"]), "time": [0.5], "cwnd": [7.0]})
    save(TraceSet(ts.events, ts.traces, ts.meta, metrics), files[1])
    assert load_many(files) is None
    assert_same(read(files), _old_read(files))


def test_trace_in_two_files_is_refused_naming_both(tmp_path):
    first = _mixed(tmp_path)[0]
    copy = tmp_path / "copy" / "a.parquet"
    copy.parent.mkdir()
    copy.write_bytes(first.read_bytes())
    assert load_many([first, copy]) is None
    with pytest.raises(InputError, match="also in") as info:
        read([first, copy])
    assert str(copy) in str(info.value) or str(first) in str(info.value)


def test_not_a_trace_set_among_them_is_named(tmp_path):
    files = _mixed(tmp_path)
    pd.DataFrame({"x": [1]}).to_parquet(files[1])
    with pytest.raises(InputError, match="not a statemine trace set") as info:
        load_many(files)
    assert info.value.file == str(files[1])


@pytest.mark.slow
@pytest.mark.parametrize(
    "folder", sorted(p.name for p in TRACES.iterdir() if (p / "runs").is_dir()) or ["none"]
)
def test_every_shipped_lab_folder_joins_in_one_table_as_file_by_file(folder):
    files = _runs(folder)
    if not files:
        pytest.skip(f"traces/{folder} is not shipped in this checkout")
    joined = load_many(files)
    assert joined is not None  # all shipped folders take the one-table path
    assert_same(joined, _old_read(files))


def _value_kinds_row_by_row(rows: list, width: int, end: int | None = None) -> list[frozenset]:
    """traces._value_kinds as it was first written (value by value), the reference."""
    kinds: list[set] = [set() for _ in range(width)]
    for row in rows:
        if len(row) != width:
            return []
        for kind, value in zip(kinds, row, strict=True):
            big = type(value) is int and not -(2**63) <= value < 2**63
            kind.add("bigint" if big else type(value))
    if end is not None and kinds[end] <= {int, float, type(None)}:
        kinds[end] = {"number"}
    return [frozenset(k) for k in kinds]


def test_value_kinds_column_by_column_as_value_by_value():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from statemine.traces import _value_kinds

    value = st.one_of(
        st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=2)
    )

    @settings(max_examples=300, deadline=None)
    @given(
        st.integers(1, 4).flatmap(
            lambda w: st.tuples(
                st.just(w),
                st.lists(
                    st.lists(value, min_size=w, max_size=w + (1 if w == 3 else 0)), max_size=6
                ),
                st.one_of(st.none(), st.integers(0, w - 1)),
            )
        )
    )
    def check(case):
        width, rows, end = case
        assert _value_kinds(rows, width, end) == _value_kinds_row_by_row(rows, width, end)

    check()
