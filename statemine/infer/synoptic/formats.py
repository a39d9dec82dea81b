"""Synoptic's output formats: ``model.dot``, ``model.invariants.txt``, ``model.json``.

Writers reproduce Synoptic's text byte for byte where its order is defined (see
``../shared/synoptic-oracle/README.md``): dot node ids sort real nodes by label (Java
string order) then TERMINAL then INITIAL; edges grouped by source id and sorted by target
label; ``P`` has two decimals rounded half up; invariants sorted in Java string order with
a tab and ``support count N``.  ``model.json`` is compact JSON with the parsed ``log``,
one ``partitions`` entry per real node (in dot order; Synoptic's own order is a hash
order) and the ``invariants`` (sorted).  Readers parse the same files back (for models
written by a real ``synoptic.jar``).  :func:`write_outputs` writes all three atomically.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...errors import InputError
from ...fileio import cleanup_on_signals, new_temp_file
from ...parse.lines import ordered_map
from ...parse.regex import WORKERS
from .invariants import KINDS, Invariants, invariant_lines, sort_invariants
from .log import INITIAL, TERMINAL, EventLog
from .model import INIT_NODE, TERM_NODE, PartitionModel

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd
    import pyarrow as pa


def dot_escape(label: str) -> str:
    r"""Escape a label for a double-quoted DOT string as Synoptic does.

    >>> dot_escape('a"b\\c')
    'a\\"b\\\\c'
    """
    return label.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def edge_label(p_text: str, count: int, prob: bool = True, cnt: bool = True) -> str:
    """Synoptic's edge label text: ``P: 0.43, Cnt: 12``, or only the part asked for
    (``--outputProbLabels`` / ``--outputCountLabels``), or empty."""
    return ", ".join(([f"P: {p_text}"] if prob else []) + ([f"Cnt: {count}"] if cnt else []))


def _shown_nodes(model: PartitionModel, show_initial: bool, show_terminal: bool) -> list[int]:
    """Nodes in dot order, without INITIAL/TERMINAL when they are hidden."""
    hidden = ({INIT_NODE} if not show_initial else set()) | (
        {TERM_NODE} if not show_terminal else set()
    )
    return [int(n) for n in model.dot_order() if int(n) not in hidden]


def to_dot(
    model: PartitionModel,
    prob: bool = True,
    count: bool = True,
    show_initial: bool = True,
    show_terminal: bool = True,
) -> str:
    """The model in Synoptic's ``model.dot`` format: edge labels ``P: 0.43, Cnt: 12``,
    ``P: 0.43`` or ``Cnt: 12`` (``prob``/``count``), none at all an empty attribute list
    ``u->v [];`` (Synoptic's ``DotExportFormatter``: ``edgeToStringWithProbCnt``,
    ``...WithProb``, ``...WithCnt``, ``...WithNoProb``); INITIAL/TERMINAL and their edges
    can be hidden: Synoptic's ``GraphExporter`` drops the node before numbering, so the
    other nodes keep consecutive ids in dot order, and skips edges to or from it."""
    labels = model.labels()
    shown = _shown_nodes(model, show_initial, show_terminal)
    ident = {n: k for k, n in enumerate(shown)}
    out = ["digraph G {"]
    for k, n in enumerate(shown):
        lab = dot_escape(labels[n])
        if n == TERM_NODE:
            out.append(f'  {k} [label="{lab}",shape=diamond];')
        elif n == INIT_NODE:
            out.append(f'  {k} [label="{lab}",shape=box];')
        else:
            out.append(f'  {k} [label="{lab}"];')
    e = model.edge_table()
    for u, v, c, p_text in zip(
        e.node_src.tolist(), e.node_dst.tolist(), e.count.tolist(), e.p_text
    ):
        if u in ident and v in ident:
            text = edge_label(p_text, c, prob, count)
            attributes = f'label="{text}"' if text else ""
            out.append(f"{ident[u]}->{ident[v]} [{attributes}];")
    out.append("}")
    return "\n".join(out) + "\n"


def _gml_string(text: str) -> str:
    r"""A label inside a GML string: ``\`` doubled as Synoptic's ``quote()`` writes it;
    ``"``, ``&`` and control characters as HTML entities (GML's escape: Synoptic's
    ``\"`` would end the string early, so a label could write GML of its own).

    >>> _gml_string('a"b\\c&d')
    'a&#34;b\\\\c&#38;d'
    """
    return "".join(
        "\\\\" if c == "\\" else f"&#{ord(c)};" if c in '"&' or ord(c) < 32 or ord(c) == 127 else c
        for c in text
    )


def to_gml(
    model: PartitionModel,
    prob: bool = True,
    count: bool = True,
    show_initial: bool = True,
    show_terminal: bool = True,
) -> str:
    """The model as GML (``--exportAsGML``) in the layout of Synoptic's
    ``GmlExportFormatter`` (ModelInference/synoptic, read for the format): the nodes and
    edges of :func:`to_dot` (same ids, order, labels and edge label text), each node a
    block ``node`` / ``[`` / ``  id K`` / ``  label "X"`` / ``graphics [`` /
    ``  type "oval"`` (INITIAL ``rectangle``, TERMINAL ``rhombus``) / ``]`` / ``]``, each
    edge ``edge`` / ``[`` / ``  source K`` / ``  target L`` / ``  label "P: 0.43, Cnt:
    12"`` / ``,]`` -- the comma before the closing bracket is Synoptic's (it follows the
    label; an edge without a label has neither).  Labels: :func:`_gml_string`."""
    labels = model.labels()
    shown = _shown_nodes(model, show_initial, show_terminal)
    ident = {n: k for k, n in enumerate(shown)}
    out = ["graph ["]
    for k, n in enumerate(shown):
        shape = "rectangle" if n == INIT_NODE else "rhombus" if n == TERM_NODE else "oval"
        out += ["node", "[", f"  id {k}", f'  label "{_gml_string(labels[n])}"']
        out += ["graphics [", f'  type "{shape}"', "]", "]"]
    e = model.edge_table()
    for u, v, c, p_text in zip(
        e.node_src.tolist(), e.node_dst.tolist(), e.count.tolist(), e.p_text
    ):
        if u in ident and v in ident:
            out += ["edge", "[", f"  source {ident[u]}", f"  target {ident[v]}"]
            text = edge_label(p_text, c, prob, count)
            out += [f'  label "{_gml_string(text)}"', ",]"] if text else ["]"]
    out.append("]")
    return "\n".join(out) + "\n"


def to_lts(model: PartitionModel) -> str:
    """The model as an FSP labelled transition system (``--outputLTS``), the layout of
    Synoptic's LTS export: state ``S0`` is INITIAL, every other non-TERMINAL node is a
    state ``S<i>`` (numbered 1, 2, ... in the order of the node's first event in the
    log), blocks in breadth-first order from S0; a block lists its transitions
    ``<label of target> -> S<j>`` in the order the targets are first met going through
    the node's events, or is ``STOP`` when the node only ends traces.  Edges into
    TERMINAL are not written."""
    log = model.log
    labels = model.labels()
    first = np.full(model.n_nodes, np.iinfo(np.int64).max)
    np.minimum.at(first, model.part, np.arange(len(model.part)))
    real = sorted(
        (
            n
            for n in range(model.n_nodes)
            if n not in (INIT_NODE, TERM_NODE) and first[n] < len(model.part)
        ),
        key=lambda n: first[n],
    )
    state = {INIT_NODE: 0, **{n: k + 1 for k, n in enumerate(real)}}
    succ = model.successor_nodes()
    targets: dict[int, list[int]] = {n: [] for n in state}
    seen: dict[int, set] = {n: set() for n in state}
    starts = model.part[log.starts[:-1]]
    for src, dst in [(INIT_NODE, int(d)) for d in starts] + list(
        zip(model.part.tolist(), succ.tolist())
    ):
        if dst != TERM_NODE and dst not in seen[src]:
            seen[src].add(dst)
            targets[src].append(dst)
    order, queue, queued = [], [INIT_NODE], {INIT_NODE}
    while queue:
        n = queue.pop(0)
        order.append(n)
        for d in targets[n]:
            if d not in queued:
                queued.add(d)
                queue.append(d)
    blocks = []
    for n in order:
        alts = [f"{labels[d]} -> S{state[d]}" for d in targets[n]]
        body = "(" + "\n\t\t| ".join(alts) + ")" if alts else "STOP"
        blocks.append(f"S{state[n]} = {body}")
    return "Synoptic = S0,\n\n" + ",\n\n".join(blocks) + ".\n\n||MTS_Synoptic = (Synoptic).\n"


def to_invariants_txt(invariants: Invariants | pd.DataFrame, support: bool = True) -> str:
    """Synoptic's ``model.invariants.txt``: sorted lines ``text<TAB>support count N``
    (``support=False``: the text alone, ``--outputSupportCount=false``)."""
    inv = sort_invariants(invariants)
    lines = invariant_lines(inv)
    if support:
        lines = [f"{line}\tsupport count {int(n)}" for line, n in zip(lines, inv["support"])]
    return "".join(line + "\n" for line in lines)


_JSON_NUMBER = r"^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$"
#: Events per block of ``model.json`` text built at once (bounded memory per block).
JSON_BLOCK = 1 << 16
#: Logs of at most this many events get ``model.json`` from Python strings (no pyarrow).
PLAIN_JSON_EVENTS = 1 << 16


def to_json(model: PartitionModel, invariants: Invariants | pd.DataFrame) -> str:
    """Synoptic's ``model.json`` (compact): ``log``, ``partitions``, ``invariants``."""
    return b"".join(bytes(p) for p in json_pieces(model, invariants)).decode("utf-8")


def json_pieces(
    model: PartitionModel,
    invariants: Invariants | pd.DataFrame,
    invariants_text: str | None = None,
) -> Iterator[bytes]:
    """``model.json`` as UTF-8 byte pieces (bytes or Arrow buffers), made a block of
    ``JSON_BLOCK`` events at a time with Arrow string kernels: each event's text is put
    together from a few small lookup tables (per type, per trace, per index in the
    trace) and its line and time texts, so memory stays bounded by the block.  Logs of
    at most ``PLAIN_JSON_EVENTS`` events are written with Python strings instead (the
    same bytes, without importing pyarrow).  ``invariants_text``: the body of the
    ``invariants`` list as given (Perfume's constrained entries) instead of entries made
    from ``invariants``."""
    log = model.log
    trace_of = log.trace_of
    index = np.arange(log.n_events) - log.starts[trace_of]
    small = log.n_events <= PLAIN_JSON_EVENTS
    yield b'{"log":['
    yield from _log_json_plain(log, index) if small else _log_json(log, trace_of, index)
    yield b'],"partitions":['
    if small:
        yield from _partitions_json_plain(model, trace_of, index)
    else:
        yield from _partitions_json(model, trace_of, index)
    if invariants_text is None:
        inv = sort_invariants(invariants)
        invariants_text = ",".join(
            f'{{"invariantType":{json.dumps(k)},"predicates":[{json.dumps(a)},{json.dumps(b)}]}}'
            for k, a, b in zip(inv["kind"], inv["first"], inv["second"])
        )
    yield f'],"invariants":[{invariants_text}]}}'.encode()


def _joined_bytes(*columns: pa.Array | str) -> pa.Buffer:
    """The row-wise concatenation of string columns (pyarrow arrays or str), as one Arrow
    buffer: the concatenated rows are the data buffer of the joined array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    args = [
        pa.scalar(c, pa.large_string()) if isinstance(c, str) else c.cast(pa.large_string())
        for c in columns
    ]
    joined = pc.binary_join_element_wise(*args, pa.scalar("", pa.large_string()))
    offsets = np.frombuffer(joined.buffers()[1], dtype=np.int64)
    start = offsets[joined.offset]
    return joined.buffers()[2][start : offsets[joined.offset + len(joined)]]


def _texts(prefix: str, numbers: np.ndarray, suffix: str) -> pa.LargeStringArray:
    """``prefix + str(k) + suffix`` for each k of ``numbers`` (a pyarrow string array)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.binary_join_element_wise(
        pa.scalar(prefix, pa.large_string()),
        pc.cast(pa.array(numbers, pa.int64()), pa.large_string()),
        pa.scalar(suffix, pa.large_string()),
        pa.scalar("", pa.large_string()),
    )


def _json_numbers(texts: pa.LargeStringArray) -> np.ndarray:
    """Which texts (pyarrow strings) are JSON numbers (plain digits checked first, then
    the full grammar)."""
    import pyarrow.compute as pc

    ok = pc.ascii_is_decimal(texts).to_numpy(zero_copy_only=False)
    if ok.all():
        ok &= (pc.binary_length(texts).to_numpy(zero_copy_only=False) == 1) | ~pc.starts_with(
            texts, "0"
        ).to_numpy(zero_copy_only=False)
    if not ok.all():
        ok = pc.match_substring_regex(texts, _JSON_NUMBER).to_numpy(zero_copy_only=False)
    return ok


_JSON_NUMBER_TEXT = re.compile(_JSON_NUMBER.removeprefix("^").removesuffix("$"), re.ASCII)


def _stamp_json(text: str) -> str:
    """A time text as a JSON number: as written when it is one, else the double's
    ``json.dumps`` (as :func:`_log_json` does).

    >>> [_stamp_json(t) for t in ("12", "0", "007", "1.50", "1e3")]
    ['12', '0', '7.0', '1.50', '1e3']
    """
    if text.isdigit() and text.isascii() and (text[0] != "0" or len(text) == 1):
        return text  # the common case: a JSON number as it is
    return text if _JSON_NUMBER_TEXT.fullmatch(text) else json.dumps(float(text))


def _stamps_json(texts: list[str]) -> list[str]:
    """:func:`_stamp_json` of each time text; the common case (every text plain ASCII
    digits without a leading zero, a JSON number as it is) is recognised in bulk.

    >>> _stamps_json(["12", "3"]), _stamps_json(["12", "0", "007"])
    (['12', '3'], ['12', '0', '7.0'])
    """
    digits = "".join(texts)
    # every text non-empty and their concatenation digits: each text is digits; a text
    # beginning with 0 puts "\n0" in the lines (the check may only err towards the loop)
    if (
        all(texts)
        and digits.isdigit()
        and digits.isascii()
        and "\n0" not in "\n" + "\n".join(texts)
    ):
        return texts
    return [_stamp_json(t) for t in texts]


def _log_json_plain(log: EventLog, index: np.ndarray) -> Iterator[bytes]:
    """:func:`_log_json` with Python strings (small logs; ``index``: each event's index
    in its trace)."""
    types = [json.dumps(t) for t in log.types]
    events = [
        f'{{"eventIndex":{i},"eventType":{types[c]},"logLine":{line},"timestamp":{stamp}}}'
        for i, c, line, stamp in zip(
            index.tolist(),
            log.codes.tolist(),
            log.lines.tolist(),
            _stamps_json(log.time_texts()),
        )
    ]
    starts = log.starts.tolist()
    yield ",".join(
        f'{{"traceID":{k},"events":[{",".join(events[starts[k] : starts[k + 1]])}]}}'
        for k in range(log.n_traces)
    ).encode()


def _partitions_json_plain(
    model: PartitionModel, trace_of: np.ndarray, index: np.ndarray
) -> Iterator[bytes]:
    """:func:`_partitions_json` with Python strings (small logs): each node's events in
    log order (a stable sort by node)."""
    labels = model.labels()
    order = np.argsort(model.part, kind="stable")
    members = [
        f'{{"traceID":{k},"eventIndex":{i}}}'
        for k, i in zip(trace_of[order].tolist(), index[order].tolist())
    ]
    ends = np.cumsum(np.bincount(model.part, minlength=model.n_nodes)).tolist()
    begins = [0, *ends[:-1]]
    yield ",".join(
        f'{{"eventType":{json.dumps(labels[n])},"events":[{",".join(members[begins[n] : ends[n]])}]}}'
        for n in model.dot_order().tolist()
        if ends[n] > begins[n]
    ).encode()


def _log_json(log: EventLog, trace_of: np.ndarray, index: np.ndarray) -> Iterator[bytes]:
    """The ``log`` list of ``model.json``: per trace ``{"traceID":k,"events":[...]}``,
    per event ``{"eventIndex":i,"eventType":"t","logLine":l,"timestamp":time}``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = log.n_events
    longest = int(np.diff(log.starts).max())
    # opening of event i of trace k, closing the event before (one column fewer to join):
    # '},{"eventIndex":i' (i > 0), or the trace's head first; the log's first event has none
    opening = pa.concat_arrays(
        [
            _texts('},{"eventIndex":', np.arange(1, longest), ""),
            _texts('}]},{"traceID":', np.arange(log.n_traces), ',"events":[{"eventIndex":0'),
        ]
    )
    row_kind = np.where(index > 0, index - 1, longest - 1 + trace_of)
    row_kind[0] = len(opening)
    opening = pa.concat_arrays(
        [opening, pa.array(['{"traceID":0,"events":[{"eventIndex":0'], pa.large_string())]
    )
    type_part = pa.array(
        [f',"eventType":{json.dumps(t)},"logLine":' for t in log.types], pa.large_string()
    )
    stamps = log.time_text
    if isinstance(stamps, np.ndarray):
        stamps = pa.array(stamps, pa.large_string())

    def block(a: int) -> pa.Buffer:
        """The text of events a .. a + JSON_BLOCK - 1."""
        b = min(a + JSON_BLOCK, n)
        stamp = stamps[a:b]
        valid = _json_numbers(stamp)
        if not valid.all():
            fixed = stamp.to_pylist()
            for i in np.nonzero(~valid)[0]:
                fixed[i] = json.dumps(float(fixed[i]))
            stamp = pa.array(fixed, pa.large_string())
        return _joined_bytes(
            opening.take(row_kind[a:b]),
            type_part.take(log.codes[a:b]),
            pc.cast(pa.array(log.lines[a:b]), pa.large_string()),
            ',"timestamp":',
            stamp,
        )

    yield from ordered_map(block, range(0, n, JSON_BLOCK), WORKERS)
    yield b"}]}"  # the last event's closing brace, then the last trace's


def _partitions_json(
    model: PartitionModel, trace_of: np.ndarray, index: np.ndarray
) -> Iterator[bytes]:
    """The ``partitions`` list of ``model.json``: per real node in dot order
    ``{"eventType":"t","events":[{"traceID":k,"eventIndex":i},...]}`` (events in log
    order)."""
    import pyarrow as pa

    log = model.log
    n = log.n_events
    labels = model.labels()
    dot_rank = np.empty(model.n_nodes, dtype=np.int64)
    dot_rank[model.dot_order()] = np.arange(model.n_nodes)
    rank = dot_rank[model.part]
    small = np.int16 if model.n_nodes < (1 << 15) else np.int64  # int16: a radix sort
    order = np.argsort(rank.astype(small), kind="stable")
    rank = rank[order]
    first = np.r_[True, rank[1:] != rank[:-1]]
    heads = [
        ("]}," if k else "") + f'{{"eventType":{json.dumps(labels[p])},"events":['
        for k, p in enumerate(model.dot_order()[rank[first]])
    ]
    opening = pa.array([',{"traceID":'] + [h + '{"traceID":' for h in heads], pa.large_string())
    kind = np.cumsum(first) * first
    trace_part = _texts("", np.arange(log.n_traces), ',"eventIndex":')
    index_part = _texts("", np.arange(int(index.max()) + 1), "}")

    def block(a: int) -> pa.Buffer:
        """The text of the members a .. a + JSON_BLOCK - 1 (in partition order)."""
        b = min(a + JSON_BLOCK, n)
        sel = order[a:b]
        return _joined_bytes(
            opening.take(kind[a:b]), trace_part.take(trace_of[sel]), index_part.take(index[sel])
        )

    yield from ordered_map(block, range(0, n, JSON_BLOCK), WORKERS)
    yield b"]}"


def write_outputs(
    model: PartitionModel, invariants: Invariants | pd.DataFrame, prefix: str | os.PathLike
) -> list[Path]:
    """Write ``PREFIX.dot``, ``PREFIX.invariants.txt`` and ``PREFIX.json`` atomically."""
    return write_texts(
        prefix,
        {
            ".dot": to_dot(model),
            ".invariants.txt": to_invariants_txt(invariants),
            ".json": json_pieces(model, invariants),
        },
    )


def write_texts(
    prefix: str | os.PathLike, texts: Mapping[str, str | Iterable[bytes]]
) -> list[Path]:
    """Write ``PREFIX + suffix`` for each (suffix, text: a str, or an iterable of UTF-8
    byte pieces, e.g. :func:`json_pieces`); every file goes to a temporary name in the target directory first and is
    renamed only when all are written, so a failure (or a signal) leaves no half-written file."""
    prefix = Path(prefix)
    target_dir = prefix.parent
    target_dir.mkdir(parents=True, exist_ok=True)
    done: list[tuple[Path, Path]] = []
    with cleanup_on_signals():  # SIGTERM/SIGHUP also remove the temporaries
        try:
            for suffix, text in texts.items():
                path = prefix.with_name(prefix.name + suffix)
                fd, tmp = new_temp_file(path, 0o600)  # mode 0600, as mkstemp made the files
                done.append((tmp, path))
                with os.fdopen(fd, "wb") as fh:
                    pieces = [text.encode("utf-8")] if isinstance(text, str) else text
                    for piece in pieces:
                        fh.write(memoryview(piece))
            for tmp, path in done:
                os.replace(tmp, path)
        except BaseException:
            for tmp, _ in done:
                tmp.unlink(missing_ok=True)
            raise
    return [path for _, path in done]


# -- readers ------------------------------------------------------------------------------
_DOT_NODE = re.compile(r'^\s*(\d+) \[label="((?:[^"\\]|\\.)*)"(?:,shape=(\w+))?\];\s*$')
_DOT_EDGE = re.compile(
    r'^\s*(\d+)->(\d+) \[(?:label="(?:P: ([0-9.]+))?(?:, )?(?:Cnt: (\d+))?")?\];\s*$'
)
_INV_LINE = re.compile(r"^(.*) (" + "|".join(KINDS) + r")\(t\) (.*?)(?:\tsupport count (\d+))?$")


def _dot_unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), text)


def _read_text(path: Path) -> str:
    """The UTF-8 text of a model file; :class:`InputError` naming the file (and the line
    of a byte that is not UTF-8) when it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as bad:
        line = data.count(b"\n", 0, bad.start) + 1
        raise InputError(
            path, line, f"not UTF-8 text (byte {bad.start}): not a Synoptic model file"
        ) from None


#: parses a dot line that is neither a node nor a Synoptic edge (path, line number) into
#: an edge ``(source, target, attributes)``, or raises :class:`InputError`
OtherEdge = Callable[[str, Path, int], tuple[int, int, dict]]


def read_dot(path: str | os.PathLike, other_edge: OtherEdge | None = None) -> nx.DiGraph:
    """A Synoptic ``model.dot`` as a DiGraph: node attrs ``label``, ``state`` (None for
    INITIAL/TERMINAL), ``shape``; edge attrs ``count`` and ``probability`` (NaN/-1 when
    the file has no such label).  ``other_edge`` reads the lines no Synoptic pattern
    matches (Perfume's edges, :func:`~.model_files.read_any_dot`). :class:`InputError` on a
    line it does not understand."""
    path = Path(path)
    import networkx as nx  # lazily: the command line's path never needs it

    g: nx.DiGraph = nx.DiGraph(engine="synoptic")
    lines = _read_text(path).splitlines()
    if not lines or not lines[0].startswith("digraph"):
        raise InputError(path, 1, "not a Synoptic dot file (no 'digraph' header)")
    for no, line in enumerate(lines[1:], start=2):
        if not line.strip() or line.strip() == "}":
            continue
        m = _DOT_NODE.match(line)
        if m:
            label, shape = _dot_unescape(m.group(2)), m.group(3)
            state = None if synthetic_node(label, shape) else label
            g.add_node(int(m.group(1)), label=label, shape=shape, state=state)
            continue
        m = _DOT_EDGE.match(line)
        if m:
            g.add_edge(
                int(m.group(1)),
                int(m.group(2)),
                probability=float(m.group(3)) if m.group(3) else float("nan"),
                count=int(m.group(4)) if m.group(4) else -1,
            )
            continue
        if other_edge is None:
            raise InputError(path, no, f"not a Synoptic dot node or edge line: {line[:80]!r}")
        source, target, attrs = other_edge(line, path, no)
        g.add_edge(source, target, **attrs)
    missing = [n for n in g.nodes if "label" not in g.nodes[n]]
    if missing:
        raise InputError(path, None, f"edges name undeclared nodes {missing[:5]}")
    return g


def synthetic_node(label: str, shape: str | None) -> bool:
    """Whether a node is INITIAL or TERMINAL by its label and shape (dot: box / diamond,
    GML: rectangle / rhombus)."""
    return (label == INITIAL and shape in ("box", "rectangle")) or (
        label == TERMINAL and shape in ("diamond", "rhombus")
    )


def read_invariants_txt(path: str | os.PathLike) -> pd.DataFrame:
    """A ``model.invariants.txt`` as a frame ``kind, first, second, support`` (support
    -1 when the file has none)."""
    path = Path(path)
    rows = []
    for no, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        m = _INV_LINE.match(line)
        if not m:
            raise InputError(path, no, f"not a Synoptic invariant: {line[:80]!r}")
        rows.append((m.group(2), m.group(1), m.group(3), int(m.group(4) or -1)))
    columns = [list(col) for col in zip(*rows)] if rows else [[], [], [], []]
    return Invariants.from_rows(*columns).to_frame()


def model_from_json(path: str | os.PathLike, log: EventLog | None = None) -> PartitionModel:
    """Rebuild a :class:`PartitionModel` from a Synoptic ``model.json`` (its ``log`` and
    ``partitions``); with ``log`` given, the json's traces must be that log's."""
    path = Path(path)
    try:
        data = json.loads(_read_text(path))
        traces = data["log"]
        partitions = data["partitions"]
        sequences = [[e["eventType"] for e in t["events"]] for t in traces]
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise InputError(
            path, None, f"not a Synoptic model.json: {type(exc).__name__} {exc}"
        ) from None
    if log is None:
        log = EventLog.from_sequences(sequences)
    if sequences != [log.trace(k) for k in range(log.n_traces)]:
        raise InputError(path, None, "its traces differ from the parsed log")
    type_code = {t: i for i, t in enumerate(log.types)}
    part = np.full(log.n_events, -1, dtype=np.int64)
    node_type = [-1, -1]
    try:
        for n, p in enumerate(partitions, start=2):
            idx = np.array(
                [log.starts[e["traceID"]] + e["eventIndex"] for e in p["events"]], dtype=np.int64
            )
            part[idx] = n
            node_type.append(type_code[p["eventType"]])
    except (ValueError, KeyError, TypeError, IndexError, OverflowError) as exc:
        raise InputError(
            path, None, f"not a Synoptic model.json: bad partition: {type(exc).__name__} {exc}"
        ) from None
    if (part < 0).any():
        raise InputError(path, None, "some events belong to no partition")
    return PartitionModel(log, part, np.array(node_type, dtype=np.int64))
