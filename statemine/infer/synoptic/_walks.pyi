"""Types of the C rounds of Perfume's walk totals (``_walks.c``), for mypy."""

import numpy as np

def relax_rounds(
    src: np.ndarray,
    dst: np.ndarray,
    w: np.ndarray,
    x: np.ndarray,
    start: np.ndarray,
    mask: np.ndarray | None,
    cap: np.ndarray | None,
    stop: np.ndarray | None,
    cyclic: np.ndarray | None,
    n_edges: int,
    n_rows: int,
    n: int,
    upper: bool,
    rounds: int,
    /,
) -> int:
    """Up to ``rounds`` whole rounds of :func:`~.timecheck.walk_extremes` on the totals
    ``x`` (float64, rows x ``n``, C order; updated in place) over the edges ``src[e] ->
    dst[e]`` (int64) weighted ``w`` (float64), ``start`` the walks' start totals, ``mask``
    (bool) the source nodes that end a first-``a`` walk, ``cap`` (float64 per row) the cap
    on upper totals, ``stop`` the totals that end the rounds once passed, ``cyclic`` (bool)
    the nodes whose totals go to +inf once a walk reaches them: 0 when a round
    changed nothing (``x`` is the answer), 1 when a total passed ``stop``, 2 when still
    growing."""

def merged_rounds(
    src: np.ndarray,
    dst: np.ndarray,
    w: np.ndarray,
    before: np.ndarray,
    keep: int,
    gone: int,
    node_type: np.ndarray,
    sources: np.ndarray,
    first: np.ndarray | None,
    extra: np.ndarray | None,
    cap: np.ndarray | None,
    stop: np.ndarray,
    x: np.ndarray,
    n_edges: int,
    n_rows: int,
    n: int,
    upper: bool,
    rounds: int,
    /,
) -> int:
    """:func:`relax_rounds`'s rounds for one bound group after merging node ``gone`` into
    ``keep`` (one type), from ``before`` (float64, rows x ``n``: the totals before the
    merge, a fix-point of the rounds but at ``keep`` and the nodes of ``extra``): ``x``
    (written) starts as ``before`` with ``gone``'s column merged into ``keep``'s, walks
    start at the nodes of type ``sources[r]`` (``first``: at those nodes, AlwaysPrecedes'
    first-``a`` walks); the answer as :func:`relax_rounds`'s, and 1 also when a total
    passes ``stop`` once they have settled (:meth:`~.timecheck.BoundCheck._merged_walks`)."""

def closure(
    src: np.ndarray,
    dst: np.ndarray,
    x: np.ndarray,
    through: np.ndarray,
    n_edges: int,
    n_rows: int,
    n: int,
    /,
) -> None:
    """``x`` (bool, rows x ``n``, C order) grown in place: per row ``r``, every node an
    edge ``src[e] -> dst[e]`` (int64) leads to from a node of ``x[r]`` that is a
    ``through[r]`` node, until nothing more is added (:func:`~.timecheck.closure`)."""

def onward(
    src: np.ndarray,
    dst: np.ndarray,
    w: np.ndarray,
    stop: np.ndarray,
    through: np.ndarray | None,
    out: np.ndarray,
    n_edges: int,
    n_rows: int,
    n: int,
    upper: bool,
    /,
) -> None:
    """``out`` (float64, rows x ``n``, C order, -inf (``upper``) or +inf everywhere on
    entry) set to :func:`~.perfume_infer.onward_totals`'s answer for the edges ``src[e]
    -> dst[e]`` weighted ``w`` and the bounds ``stop`` (float64, rows x ``n``)."""

def doomed(
    totals: np.ndarray,
    onward: np.ndarray,
    reach: np.ndarray | None,
    sources: np.ndarray,
    node_type: np.ndarray,
    keeps: np.ndarray,
    gone: int,
    upper: bool,
    first: bool,
    out: np.ndarray,
    n_rows: int,
    n: int,
    n_keeps: int,
    /,
) -> None:
    """``out[j]`` (bool per keep, in place) set where merging node ``keeps[j]`` (int64) and
    node ``gone`` must break a bound of one bound group: ``totals``, ``onward`` (float64,
    rows x ``n``, C order) its walk totals and walks out of each node, ``reach`` (bool,
    rows x ``n``) the first-``a`` reach (``first``: AlwaysPrecedes' rule), ``sources``
    (int64 per row) the bounds' source types, ``node_type`` (int64 per node)
    (:meth:`~.perfume_infer._TimedMerges._doomed_group`)."""

def merge_edges(
    src: np.ndarray,
    dst: np.ndarray,
    wmin: np.ndarray,
    wmax: np.ndarray,
    n_edges: int,
    n: int,
    keep: int,
    gone: int,
    out_src: np.ndarray,
    out_dst: np.ndarray,
    out_wmin: np.ndarray,
    out_wmax: np.ndarray,
    /,
) -> int:
    """The edges ``src[e] -> dst[e]`` (int64; sorted by ``src * n + dst``, each pair once)
    weighted ``wmin``/``wmax`` (float64) with node ``gone`` renamed ``keep`` and parallel
    edges made one (min, max), in the first ``m`` entries of the ``out_*`` arrays
    (``n_edges`` long), sorted the same way; returns ``m``
    (:func:`~.timecheck.merge_nodes`)."""

def bits_gather(
    frm: np.ndarray,
    to: np.ndarray,
    x: np.ndarray,
    out: np.ndarray,
    n_edges: int,
    rows: int,
    words: int,
    /,
) -> None:
    """``out[v] |= x[u]`` over the edges ``frm[e] -> to[e]`` (int64) of bitset rows
    (uint64, ``rows`` x ``words``, C order)."""

def bits_grow(
    frm: np.ndarray,
    to: np.ndarray,
    start: np.ndarray,
    x: np.ndarray,
    allowed: np.ndarray,
    forbidden: np.ndarray | None,
    n_edges: int,
    rows: int,
    words: int,
    /,
) -> bool:
    """``x`` (uint64 bitset rows, in place; ``start <= x <=`` the answer on entry) grown to
    the least ``X >= start`` with ``X = start | (gather(X) & allowed)``
    (:func:`~.check._grow`); False as soon as it meets ``forbidden``."""
