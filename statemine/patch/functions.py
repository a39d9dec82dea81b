"""Which function a line of source is in: Python ``def`` (by indentation) and Go ``func``
(gofmt layout: ``func`` and its closing ``}`` at column 0).  ``patch port`` uses it so a
hunk lands in the function its context names (issue 11: a hook placed 704 lines away, in
another function, where its variables were undefined)."""

from __future__ import annotations

import re

_PY_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]+([A-Za-z_]\w*)")
_GO_FUNC = re.compile(
    r"^func[ \t]*(?:\([^)]*?\*?[ \t]*([A-Za-z_]\w*)(?:\[[^\]]*\])?\)[ \t]*)?"
    r"([A-Za-z_]\w*)"
)


def language(path: str) -> str | None:
    """``"python"``, ``"go"`` or None (no function rule) from a file name."""
    if path.endswith((".py", ".pyi")):
        return "python"
    if path.endswith(".go"):
        return "go"
    return None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def python_function(lines: list[str] | tuple[str, ...], index: int) -> str | None:
    """The innermost ``def`` enclosing ``lines[index]`` (the nearest non-blank line at or
    above it; a ``def`` line itself counts), None at module or class level.

    >>> src = ["class A:\\n", "    def f(self):\\n", "        x = 1\\n", "\\n", "        y = 2\\n",
    ...        "    z = 3\\n"]
    >>> python_function(src, 4), python_function(src, 1), python_function(src, 5)
    ('f', 'f', None)
    """
    j = min(index, len(lines) - 1)
    while j >= 0 and not lines[j].strip():
        j -= 1
    if j < 0:
        return None
    m = _PY_DEF.match(lines[j])
    if m:
        return m.group(2)
    limit = _indent(lines[j])
    for k in range(j - 1, -1, -1):
        text = lines[k]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        depth = _indent(text)
        if depth < limit:
            m = _PY_DEF.match(text)
            if m:
                return m.group(2)
            if depth == 0:
                return None
            limit = depth
    return None


def go_function(lines: list[str] | tuple[str, ...], index: int) -> str | None:
    """The top-level ``func`` enclosing ``lines[index]`` (``Type.Method`` for methods),
    None between functions.

    >>> src = ["func (h *handler) On(x int) {\\n", "\\tx++\\n", "}\\n", "var y = 1\\n"]
    >>> go_function(src, 1), go_function(src, 3)
    ('handler.On', None)
    """
    for k in range(min(index, len(lines) - 1), -1, -1):
        text = lines[k]
        m = _GO_FUNC.match(text)
        if m:
            return f"{m.group(1)}.{m.group(2)}" if m.group(1) else m.group(2)
        if text.startswith("}") and k < index:
            return None
    return None


def enclosing_function(path: str, lines: list[str] | tuple[str, ...], index: int) -> str | None:
    """The function enclosing ``lines[index]`` of the file ``path`` (None: none, or a
    language without the rule)."""
    kind = language(path)
    if kind == "python":
        return python_function(lines, index)
    if kind == "go":
        return go_function(lines, index)
    return None


def section_function(path: str, section: str) -> str | None:
    """The function a hunk header's section text names (``def f(...)``, ``func (r *T) M(``),
    or None when it names none (``class A:``, empty).

    >>> section_function("a.py", "def on_ack(self, now):"), section_function("a.py", "class A:")
    ('on_ack', None)
    """
    return enclosing_function(path, [section.strip() + "\n"], 0) if section else None
