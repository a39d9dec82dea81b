"""The example notebooks run from top to bottom and draw their figures inline: a cell
whose output is a figure shown only as text (``<Figure size 900x320 with 1 Axes>``), or a
cell that plots and shows no image, fails. (This replaces nbmake, which checked errors
only.)"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "examples").glob("*.ipynb"))
#: The text form of a matplotlib figure that was not drawn.
FIGURE_TEXT = re.compile(r"<(matplotlib\.figure\.)?Figure( size \d+x\d+)?[ >]")
#: Calls that make a figure (statemine.output.timeline, statemine.outcomes, matplotlib).
PLOTTING = re.compile(r"\b(plot_cwnd|plot_throughput|heatmap|plt\.subplots|plt\.figure)\(")


def figure_problems(nb: dict) -> list[str]:
    """Why the executed notebook ``nb`` does not draw its figures inline (empty: it does)."""
    problems = []
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    for k, cell in enumerate(code, 1):
        outputs = cell.get("outputs", [])
        data = [o.get("data", {}) for o in outputs]
        texts = [str(d.get("text/plain", "")) for d in data if "image/png" not in d]
        texts += ["".join(o.get("text", "")) for o in outputs if o.get("output_type") == "stream"]
        if any(FIGURE_TEXT.search(t) for t in texts):
            problems.append(f"code cell {k}: a figure shown as text only")
        source = "".join(cell["source"])
        if PLOTTING.search(source) and not any("image/png" in d for d in data):
            problems.append(f"code cell {k}: plots but shows no image")
    return problems


def _cell(source: str, outputs: list) -> dict:
    return {"cell_type": "code", "source": source, "outputs": outputs}


def test_the_check_tells_drawn_from_undrawn_figures():
    png = {"output_type": "display_data", "data": {"image/png": "iVBOR", "text/plain": "<Figure>"}}
    text = {
        "output_type": "execute_result",
        "data": {"text/plain": "<Figure size 900x320 with 1 Axes>"},
    }
    printed = {"output_type": "stream", "text": ["<Figure size 640x480 with 0 Axes>\n"]}
    table = {"output_type": "execute_result", "data": {"text/plain": "   a\n0  1"}}
    assert figure_problems({"cells": [_cell("plot_cwnd(ts)", [png])]}) == []
    assert figure_problems({"cells": [_cell("x", [table])]}) == []
    assert figure_problems({"cells": [_cell("plot_cwnd(ts)", [text])]}) == [
        "code cell 1: a figure shown as text only",
        "code cell 1: plots but shows no image",
    ]
    assert figure_problems({"cells": [_cell("print(fig)", [printed])]}) == [
        "code cell 1: a figure shown as text only"
    ]
    assert figure_problems({"cells": [_cell("display(heatmap(t))", [])]}) == [
        "code cell 1: plots but shows no image"
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_and_draws_its_figures_inline(path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    # the kernel imports this checkout's statemine, whatever else is installed
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute(env=env)  # a cell that raises fails the test (CellExecutionError)
    assert figure_problems(nb) == []
