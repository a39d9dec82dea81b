"""CONTRIBUTING.md and docs/architecture.md describe the layout that exists: every module
and package under statemine/ is listed in the architecture's layout, and every Python
file either page names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "statemine"
PAGES = (ROOT / "CONTRIBUTING.md", ROOT / "docs" / "architecture.md")


def layout_block() -> str:
    """The code block of docs/architecture.md that starts with ``statemine/``."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    match = re.search(r"```\nstatemine/\n(.*?)```", text, re.DOTALL)
    assert match, "docs/architecture.md has no layout block starting with statemine/"
    return match.group(1)


def modules() -> list[Path]:
    """The Python modules of the package (``__init__.py`` stands for its package)."""
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_module_and_package_is_in_the_layout():
    block = layout_block()
    missing = []
    for path in modules():
        rel = path.relative_to(PACKAGE)
        if rel.name == "__init__.py":
            if len(rel.parts) == 1:
                continue  # the package itself
            name = rel.parent.name + "/"
            found = re.search(rf"(?<![\w/]){re.escape(name)}", block)
        else:
            found = re.search(rf"\b{re.escape(path.stem)}\b", block)
        if not found:
            missing.append(rel.as_posix())
    assert missing == [], (
        f"not described in docs/architecture.md's layout (add a line there): {missing}"
    )


def test_every_named_python_file_and_doc_exists():
    files = {p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py") if ".git" not in p.parts}
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for name in sorted(set(re.findall(r"(?<![\w./<>-])((?:[\w-]+/)*\w+\.py)\b", text))):
            assert any(f == name or f.endswith("/" + name) for f in files), (
                f"{page.relative_to(ROOT)} names {name}, which does not exist"
            )
        for doc in sorted(set(re.findall(r"\bdocs/[\w-]+\.md\b", text))):
            assert (ROOT / doc).is_file(), (
                f"{page.relative_to(ROOT)} links {doc}, which does not exist"
            )


def test_the_pages_name_the_packages():
    """The data-flow diagram (CONTRIBUTING.md) shows every subpackage of statemine/."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    flow = re.search(r"## Data flow\n\n```\n(.*?)```", text, re.DOTALL)
    assert flow
    packages = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))
    assert packages  # cli, distributed, infer, lab, output, parse, patch, stats, tcp
    missing = [p for p in packages if not re.search(rf"(?<![\w/]){p}/", flow.group(1))]
    assert missing == [], f"CONTRIBUTING.md's data flow does not show {missing}"
