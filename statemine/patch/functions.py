"""Which function a line of source is in: Python ``def`` (by indentation), Go ``func``
(gofmt layout: ``func`` and its closing ``}`` at column 0) and Rust ``fn`` (rustfmt
layout: the closing ``}`` at the ``fn`` line's indentation).  ``patch port`` uses it so a
hunk lands in the function its context names (issue 11: a hook placed 704 lines away, in
another function, where its variables were undefined)."""

from __future__ import annotations

import re

_PY_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]+([A-Za-z_]\w*)")
_GO_FUNC = re.compile(
    r"^func[ \t]*(?:\([^)]*?\*?[ \t]*([A-Za-z_]\w*)(?:\[[^\]]*\])?\)[ \t]*)?"
    r"([A-Za-z_]\w*)"
)
_RS_FN = re.compile(
    r"^([ \t]*)(?:pub(?:\([^)]*\))?[ \t]+)?(?:(?:const|async|unsafe|extern[ \t]+\"[^\"]*\")[ \t]+)*"
    r"fn[ \t]+([A-Za-z_]\w*)"
)
_RS_IMPL = re.compile(
    r"^([ \t]*)impl\b(?:<[^{]*?>)?[ \t]+(?:[\w:<>, ]+?[ \t]+for[ \t]+)?([A-Za-z_]\w*)"
)


def language(path: str) -> str | None:
    """``"python"``, ``"go"``, ``"rust"`` or None (no function rule) from a file name."""
    if path.endswith((".py", ".pyi")):
        return "python"
    if path.endswith(".go"):
        return "go"
    if path.endswith(".rs"):
        return "rust"
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


def _rust_closed(lines: list[str] | tuple[str, ...], start: int, end: int, indent: str) -> bool:
    """Whether a line ``indent + "}"`` (an item's closing brace) lies in ``lines[start:end]``."""
    close = indent + "}"
    return any(lines[k].rstrip() == close for k in range(start, end))


def rust_function(lines: list[str] | tuple[str, ...], index: int) -> str | None:
    """The outermost ``fn`` enclosing ``lines[index]`` that is still open there
    (``Type.method`` inside an ``impl``), None between functions.

    >>> src = ["impl Foo {\\n", "    pub(crate) fn on(&self) {\\n", "        x();\\n", "    }\\n",
    ...        "\\n", "    fn g() {}\\n", "}\\n"]
    >>> rust_function(src, 2), rust_function(src, 4), rust_function(src, 5)
    ('Foo.on', None, 'Foo.g')
    """
    index = min(index, len(lines) - 1)
    found = None
    limit = None  # a fn found must be indented less than this
    for k in range(index, -1, -1):
        m = _RS_FN.match(lines[k])
        if m and (limit is None or len(m.group(1)) < limit):
            one_line = lines[k].rstrip().endswith("}")
            closed = (one_line and k < index) or _rust_closed(lines, k + 1, index, m.group(1))
            if not closed:
                found, fn_indent, fn_line = m.group(2), m.group(1), k
            limit = len(m.group(1))
            if not m.group(1):
                break
    if found is None:
        return None
    for k in range(fn_line - 1, -1, -1):
        m = _RS_IMPL.match(lines[k])
        if m and len(m.group(1)) < len(fn_indent):
            if _rust_closed(lines, k + 1, fn_line, m.group(1)):
                break
            return f"{m.group(2)}.{found}"
    return found


def enclosing_function(path: str, lines: list[str] | tuple[str, ...], index: int) -> str | None:
    """The function enclosing ``lines[index]`` of the file ``path`` (None: none, or a
    language without the rule)."""
    kind = language(path)
    if kind == "python":
        return python_function(lines, index)
    if kind == "go":
        return go_function(lines, index)
    if kind == "rust":
        return rust_function(lines, index)
    return None


def section_function(path: str, section: str) -> str | None:
    """The function a hunk header's section text names (``def f(...)``, ``func (r *T) M(``),
    or None when it names none (``class A:``, empty).

    >>> section_function("a.py", "def on_ack(self, now):"), section_function("a.py", "class A:")
    ('on_ack', None)
    """
    return enclosing_function(path, [section.strip() + "\n"], 0) if section else None
