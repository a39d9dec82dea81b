"""Perfume's CPU per event and model size on long logs (issue 31, helper "perfumeflat"):
first fit checked stage by stage (statemine/infer/synoptic/perfume_infer.first_fit_model),
the same models as checked on the whole piece."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_synoptic_perfume import traces_strategy, write_log
from test_synoptic_timeconflicts import _codes, _conn_log

from statemine.infer.synoptic.perfume_infer import (
    first_fit_model,
    first_fit_stages,
    select_traces,
)
from statemine.infer.synoptic.timeconflicts import Sides, timed_sides


@settings(max_examples=60, deadline=None)
@given(traces_strategy, st.booleans(), st.integers(1, 6))
def test_staged_first_fit_is_first_fit(tmp_path_factory, traces, by_length, size):
    """On random logs, in either order, stages of 1-6 events: first fit checked stage by
    stage (on a model rebuilt per stage without the traces not yet started) gives the very
    partition of first fit checked on the whole log (node ids included: nodes numbered by
    their first event)."""
    log = write_log(tmp_path_factory.mktemp("s"), traces)
    _, codes, ticks = _codes(log)
    sides = timed_sides(log, codes, ticks)
    staged = first_fit_model(log, codes, ticks, sides, by_length, size)
    whole = first_fit_model(log, codes, ticks, sides, by_length, None)
    assert np.array_equal(staged.part, whole.part)
    assert np.array_equal(staged.node_type, whole.node_type)


def test_first_fit_stages_and_selected_traces(tmp_path):
    """Stages are the order cut every ``size`` events; :func:`select_traces` takes whole
    traces in the order given, with each event's index in the log; on the benchmark's
    601-event connection log, first fit in stages of 100 and 7 events and in one stage give
    the same 134-node model."""
    order = np.array([5, 3, 4, 0, 1, 2, 6])
    assert [s.tolist() for s in first_fit_stages(order, 3)] == [[5, 3, 4], [0, 1, 2], [6]]
    assert first_fit_stages(order[:0], 3)[0].tolist() == []
    log = _conn_log(tmp_path, 600)
    sub, idx = select_traces(log, np.array([2, 0]))
    lengths = np.diff(log.starts)
    assert sub.starts.tolist() == [0, lengths[2], lengths[2] + lengths[0]]
    assert idx.tolist() == [*range(log.starts[2], log.starts[3]), *range(log.starts[1])]
    assert np.array_equal(sub.codes, log.codes[idx])
    _, codes, ticks = _codes(log)
    sides = timed_sides(log, codes, ticks)
    models = [first_fit_model(log, codes, ticks, sides, None, k) for k in (100, 7, None)]
    assert models[0].n_nodes == 134
    for m in models[1:]:
        assert np.array_equal(m.part, models[0].part)


def test_pieces_share_one_work_budget_per_event():
    """:func:`check_units`: a check on a ``CHECK_NODES``-node graph is one unit, cost
    ``CHECK_FIXED + n`` otherwise; :func:`polish_split` with one model: polishing gets
    what is left of ``PIECE_WORK * per_event`` units per event, in checks on its model,
    never below 0."""
    from statemine.infer.synoptic.perfume_infer import (
        CHECK_FIXED,
        CHECK_NODES,
        PIECE_WORK,
        check_units,
        polish_split,
    )

    assert check_units(CHECK_NODES) == 1.0
    assert check_units(2 * CHECK_NODES + CHECK_FIXED) == 2.0
    budget = PIECE_WORK * 10 * 1000  # units for 1,000 events at 10 checks per event
    assert polish_split(budget, [CHECK_NODES]) == [int(budget)]
    assert polish_split(budget / 2, [2 * CHECK_NODES + CHECK_FIXED]) == [int(budget / 4)]
    assert polish_split(budget - 2 * budget, [CHECK_NODES]) == [0]


def test_closed_models_share_what_is_left_by_their_nodes():
    """:func:`polish_split`: the units left are shared between the closed models in
    proportion to their nodes, each share in checks on its own model; nothing left,
    nothing shared."""
    from statemine.infer.synoptic.perfume_infer import CHECK_FIXED, CHECK_NODES, polish_split

    # 600 and 200 nodes: 3/4 and 1/4 of the units, at (CHECK_FIXED + n) / (CHECK_FIXED +
    # CHECK_NODES) units per check
    unit = CHECK_FIXED + CHECK_NODES
    a, b = polish_split(9_000.0, [600, 200])
    assert a == int(9_000.0 * 0.75 * unit / (CHECK_FIXED + 600))
    assert b == int(9_000.0 * 0.25 * unit / (CHECK_FIXED + 200))
    assert polish_split(-1.0, [300, 300]) == [0, 0]
    assert polish_split(100.0, []) == []


def test_doomed_merges_are_not_checked_when_coarsening(tmp_path, monkeypatch):
    """A fold of the 601-event connection log (first fit of its first and second halves
    side by side, the second half's nodes merged into the first's, :func:`coarsen_sided`
    with ``fresh``): skipping the merges that must fail (:meth:`_TimedMerges.doomed`)
    gives the same partition with fewer merge checks (main checked every one of them)
    and less work counted (``DOOMED_UNITS`` of a check's per skipped merge)."""
    from statemine.infer.synoptic.model import PartitionModel
    from statemine.infer.synoptic.perfume_infer import _TimedMerges, coarsen_sided

    log = _conn_log(tmp_path, 600)
    _, codes, ticks = _codes(log)
    sides = timed_sides(log, codes, ticks)
    half = log.n_traces // 2
    parts, types = [], [np.array([-1, -1])]
    for traces in (np.arange(half), np.arange(half, log.n_traces)):
        sub, idx = select_traces(log, traces)
        m = first_fit_model(
            sub, codes, ticks[idx], Sides(sides.p[:, idx], sides.s[:, idx], sides.limit)
        )
        off = sum(len(t) for t in types) - 2
        parts.append(np.where(m.part >= 2, m.part + off, m.part))
        types.append(m.node_type[2:])
    node_type = np.concatenate(types).astype(np.int64)
    union = PartitionModel(log, np.concatenate(parts), node_type)
    fresh = np.zeros(len(node_type), dtype=bool)
    fresh[2 + len(types[1]) :] = True
    merge = _TimedMerges.merge
    calls = [0]

    def counted(self, keep, gone):
        calls[0] += 1
        return merge(self, keep, gone)

    monkeypatch.setattr(_TimedMerges, "merge", counted)

    def fold() -> tuple[PartitionModel, float, int]:
        work, calls[0] = [0.0], 0
        rng = np.random.default_rng(7)
        model = coarsen_sided(union, codes, ticks, rng, sides, 5_000, fresh, work)
        return model, work[0], calls[0]

    skipped, work, fewer = fold()
    monkeypatch.setattr(_TimedMerges, "doomed", lambda self, keep, gone: False)
    checked, work_checked, more = fold()
    assert np.array_equal(skipped.part, checked.part)
    assert skipped.n_nodes < union.n_nodes
    assert fewer < more
    assert work < work_checked
