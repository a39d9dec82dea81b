"""Import layers without circles (issue 28): no import cycle among statemine's modules, and
no import from a lower layer up to a higher one. The layers are read from the table in
docs/architecture.md ("Import layers"), so the page draws them as they are.

Every import counts, at module level or inside a function, typing-only ones too: a lazy
import is still a dependency of the code that makes it. ``from pkg import name`` depends on
the module ``pkg.name`` when that is a module, else on ``pkg`` itself.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> its file (``.py``, or the ``.pyi`` of a compiled module) in
    the ``statemine`` package under ``root``."""
    found: dict[str, Path] = {}
    for path in sorted((root / "statemine").rglob("*.py*")):
        if path.suffix not in (".py", ".pyi") or "_data" in path.parts:
            continue
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found.setdefault(".".join(parts), path)
    return found


def import_graph(root: Path = ROOT) -> nx.DiGraph:
    """Module -> the statemine modules it imports (the package under ``root``)."""
    modules = _modules(root)

    def owner(name: str) -> str:
        while name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph: nx.DiGraph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        base = name if path.stem == "__init__" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                if node.level:
                    up = base.rsplit(".", node.level - 1)[0] if node.level > 1 else base
                    mod = f"{up}.{mod}" if mod else up
                targets = [
                    f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod for a in node.names
                ]
            for target in targets:
                if target.split(".")[0] == "statemine" and owner(target) != name:
                    graph.add_edge(name, owner(target))
    return graph


def layers() -> list[list[str]]:
    """The module prefixes of each layer, lowest first, from docs/architecture.md."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Import layers", 1)[1]
    block = re.search(r"```\n(.*?)```", section, re.S)
    assert block, "docs/architecture.md: the Import layers section has no table"
    rows = [line.split(":", 1)[1].split() for line in block.group(1).splitlines() if ":" in line]
    return list(reversed(rows))  # the page lists the top layer first


def layer_of(module: str, table: list[list[str]]) -> int:
    """The index of the layer whose longest matching prefix names ``module``."""
    best = (-1, -1)
    for i, prefixes in enumerate(table):
        for prefix in prefixes:
            if prefix == "statemine":  # the package itself (__init__.py), not all below it
                if module == "statemine":
                    best = (i, len(prefix))
                continue
            full = f"statemine.{prefix}"
            if (module == full or module.startswith(full + ".")) and len(full) > best[1]:
                best = (i, len(full))
    return best[0]


def test_no_import_cycles() -> None:
    cycles = sorted(nx.simple_cycles(import_graph()), key=len)
    assert not cycles, f"{len(cycles)} import cycle(s), the shortest: {' -> '.join(cycles[0])}"


def test_every_module_has_a_layer() -> None:
    table = layers()
    assert [m for m in import_graph() if layer_of(m, table) < 0] == []


def test_imports_go_down_the_layers() -> None:
    table = layers()
    up = [f"{a} -> {b}" for a, b in import_graph().edges if layer_of(b, table) > layer_of(a, table)]
    assert not up, "imports from a lower layer up to a higher one:\n" + "\n".join(sorted(up))


@pytest.mark.parametrize(
    ("source", "edge"),
    [
        ("from .commands import infer_to_dir\n", ("statemine.traces", "statemine.commands")),
        ("from .cli import main\n", ("statemine.runtime", "statemine.cli")),
    ],
)
def test_the_checks_see_an_upward_import(
    tmp_path: Path, source: str, edge: tuple[str, str]
) -> None:
    """The graph is built from the source as it is: one import added to a copy of the
    package shows as its edge, an upward one (so neither test above passes by reading
    nothing)."""
    import shutil

    shutil.copytree(
        ROOT / "statemine", tmp_path / "statemine", ignore=shutil.ignore_patterns("*.so", "_data")
    )
    assert edge not in import_graph(tmp_path).edges
    module = _modules(tmp_path)[edge[0]]
    module.write_text(
        module.read_text(encoding="utf-8") + "\n\ndef _probe() -> None:\n    " + source,
        encoding="utf-8",
    )
    assert edge in import_graph(tmp_path).edges
    table = layers()
    assert layer_of(edge[1], table) > layer_of(edge[0], table)
