"""The files the commands write to ``--out DIR``, as name -> content (nothing is written
here: :func:`statemine.fileio.write_set` writes a whole set atomically).

* :func:`infer_files` -- ``statemine infer --out``: states.csv, transitions.csv (the tables
  in SI units, full precision), model.dot, model.json, model.svg
* :func:`diff_files` -- ``statemine diff --out``: states_diff.csv, transitions_diff.csv,
  one_sided.csv, notes.txt, diff.dot, diff.svg
* :func:`explain_files` -- ``statemine explain --out``: explain.csv, triggers.csv, explain.md

Each set also holds ``provenance.json`` (:data:`~.provenance.PROVENANCE_FILE`), which the
command adds (:func:`statemine.output.provenance.provenance`: it needs the inputs and the
command line, which these tables do not carry).

Heavy libraries (networkx, pandas, Graphviz) are imported when a function runs, so the
names of the files are known without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .provenance import PROVENANCE_FILE

if TYPE_CHECKING:
    import numpy as np

    from ..compare import DiffResult
    from ..explain import ExplainResult
    from ..infer.observed import Table

#: The files ``infer --out DIR`` writes (the folder is replaced as a whole set).
INFER_OUTPUTS = (
    "states.csv",
    "transitions.csv",
    "model.dot",
    "model.json",
    "model.svg",
    PROVENANCE_FILE,
)
#: The files ``diff --out DIR`` writes (the folder is replaced as a whole set).
DIFF_OUTPUTS = (
    "states_diff.csv",
    "transitions_diff.csv",
    "one_sided.csv",
    "notes.txt",
    "diff.dot",
    "diff.svg",
    PROVENANCE_FILE,
)


def infer_files(
    states: Table, transitions: Table, *, svg: bool, title: str | None
) -> tuple[dict[str, bytes | str], str | None]:
    """The files of ``infer --out`` from the tables of :func:`statemine.summarize` (as
    DataFrames or as columns, name -> array; times in seconds, fractions in [0, 1]), and a
    note when model.svg is left out (too many states to draw, or no Graphviz); ``svg``
    False leaves it out without a note. The one path from tables to the model's DOT, JSON
    and SVG: ``statemine infer --out`` and the HTML report both draw through it."""
    from ..escape import columns_csv
    from ..infer.observed import model_graph, model_to_json
    from .diagram import DRAWN_STATES, dot_to, graphviz_available, to_dot

    states, transitions = as_columns(states), as_columns(transitions)
    G = model_graph(states, transitions)
    dot = to_dot(G, title=title)
    outputs: dict[str, bytes | str] = {
        "states.csv": columns_csv(with_derived_column(states, "state")),
        "transitions.csv": columns_csv(with_derived_column(transitions, "src", "dst")),
        "model.dot": dot,
        "model.json": model_to_json(G),
    }
    why = None
    if svg and len(states["state"]) > DRAWN_STATES:
        why = (
            f"{len(states['state'])} states are more than Graphviz lays out in reasonable time "
            f"({DRAWN_STATES})"
        )
    elif svg and graphviz_available():
        outputs["model.svg"] = dot_to(dot, "svg")
    elif svg:
        why = "Graphviz's dot is not installed (apt-get install graphviz)"
    return outputs, why and f"model.svg not drawn: {why}; model.dot has the model"


def as_columns(table: Table) -> dict[str, np.ndarray]:
    """A table (DataFrame, or columns: name -> array) as columns, name -> array."""
    import numpy as np

    named: Any = table  # a DataFrame iterates over its column names, as a mapping does
    return {str(name): np.asarray(named[name]) for name in named}


def with_derived_column(columns: dict[str, np.ndarray], *names: str) -> dict[str, np.ndarray]:
    """``columns`` (a table, name -> array) with a boolean ``derived`` column -- True where
    a state in any of the ``names`` columns was derived from qlog metrics -- when any row
    has one; unchanged otherwise (inputs with logged states only keep their columns)."""
    import numpy as np

    from ..parse.statenames import is_derived

    marks = np.array(
        [any(is_derived(row) for row in cells) for cells in zip(*(columns[n] for n in names))],
        dtype=bool,
    )
    return {**columns, "derived": marks} if marks.any() else columns


#: The files ``explain --out DIR`` writes (the folder is replaced as a whole set).
EXPLAIN_OUTPUTS = ("explain.csv", "triggers.csv", "explain.md", PROVENANCE_FILE)


def diff_files(result: DiffResult, *, svg: bool, title: str | None) -> dict[str, bytes | str]:
    """The files of ``diff --out`` for ``result``; diff.svg (``svg``) is drawn here, before
    anything is written, so a Graphviz failure leaves no partial set."""
    from ..escape import frame_csv
    from .diagram import dot_to
    from .diff_diagram import diff_to_dot

    dot = diff_to_dot(result, title=title)
    files: dict[str, str | bytes] = {
        "states_diff.csv": frame_csv(result.states),
        "transitions_diff.csv": frame_csv(result.transitions),
        "one_sided.csv": frame_csv(result.one_sided()),
        "notes.txt": "".join(f"{note}\n" for note in result.notes),
        "diff.dot": dot,
    }
    if svg:
        files["diff.svg"] = dot_to(dot, "svg")
    return files


def explain_files(result: ExplainResult) -> dict[str, bytes | str]:
    """The files of ``explain --out`` for ``result``: the states and triggers tables (SI
    units, full precision) and explain.md (the summary and the tables, for people)."""
    from ..escape import frame_csv
    from .explain_md import explain_markdown

    return {
        "explain.csv": frame_csv(result.states),
        "triggers.csv": frame_csv(result.triggers),
        "explain.md": explain_markdown(result),
    }
