"""Parse and validate git-style unified diffs (the instrument patches).

A patch is parsed with ``unidiff`` into plain, immutable :class:`FilePatch` /
:class:`Hunk` values; every path is checked before anything reads or writes a file:
relative, ``a/``/``b/`` prefixed, no ``..``/``.``/empty components, no backslash or
control characters. Patches may modify and add text files; deletions, renames and
binary changes are rejected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import unidiff
from unidiff.constants import LINE_TYPE_NO_NEWLINE

from ..errors import InputError

#: Patches larger than this are refused (bounded memory on garbage input), bytes.
MAX_PATCH_BYTES = 16 * 1024 * 1024

_DEV_NULL = "/dev/null"
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f\\]")


@dataclass(frozen=True)
class Hunk:
    """One hunk: ``old`` lines (context + removed) become ``new`` lines (context + added).

    Lines keep their ``"\\n"`` (absent only on a last line marked "No newline at end of
    file"). ``old_start`` is the 0-based index of ``old[0]`` in the original file (for an
    empty ``old``: the index before which ``new`` is inserted). ``lead``/``trail`` count
    the context lines at the top and bottom, which fuzz may ignore. ``patch_line`` is the
    1-based line of the ``@@`` header in the patch file; ``added``/``removed`` count the
    ``+``/``-`` lines; ``body`` is the hunk as ``(" "|"+"|"-", line)`` pairs, in order;
    ``section`` the text after the ``@@ ... @@`` header (git's enclosing-function hint).
    """

    old: tuple[str, ...]
    new: tuple[str, ...]
    old_start: int
    new_start: int
    lead: int
    trail: int
    patch_line: int
    added: int = 0
    removed: int = 0
    body: tuple[tuple[str, str], ...] = ()
    section: str = ""

    def reversed(self) -> Hunk:
        """The hunk that undoes this one."""
        swap = {"+": "-", "-": "+", " ": " "}
        return Hunk(
            self.new,
            self.old,
            self.new_start,
            self.old_start,
            self.lead,
            self.trail,
            self.patch_line,
            self.removed,
            self.added,
            tuple((swap[k], v) for k, v in self.body),
            self.section,
        )


@dataclass(frozen=True)
class FilePatch:
    """The hunks for one file; ``path`` is relative to the source root (POSIX separators).

    ``created``: the patch adds the file (its old side is ``/dev/null``); ``deleted``: the
    reversed patch of an added file, which removes it.
    """

    path: str
    hunks: tuple[Hunk, ...]
    created: bool = False
    deleted: bool = False

    def reversed(self) -> FilePatch:
        """The file patch that undoes this one."""
        return FilePatch(
            self.path, tuple(h.reversed() for h in self.hunks), self.deleted, self.created
        )


def check_relpath(path: str, patch: str | Path, line: int | None) -> str:
    """Return ``path`` if it is a safe relative POSIX path, else raise :class:`InputError`.

    >>> check_relpath("src/aioquic/quic/recovery.py", "p", 1)
    'src/aioquic/quic/recovery.py'
    >>> check_relpath("../etc/passwd", "p", 3)
    Traceback (most recent call last):
    ...
    statemine.errors.InputError: p:3: unsafe path '../etc/passwd': '..' is not allowed
    """
    if not path:
        raise InputError(patch, line, "empty path")
    if path.startswith("/"):
        raise InputError(patch, line, f"unsafe path {path!r}: absolute paths are not allowed")
    if _BAD_CHARS.search(path):
        raise InputError(patch, line, f"unsafe path {path!r}: backslash or control character")
    for part in path.split("/"):
        if part == "..":
            raise InputError(patch, line, f"unsafe path {path!r}: '..' is not allowed")
        if part in ("", "."):
            raise InputError(patch, line, f"unsafe path {path!r}: empty or '.' component")
    return path


def _strip_prefix(name: str, prefix: str, patch: str | Path, line: int | None) -> str:
    name = name.split("\t", 1)[0]  # "--- a/x\t2024-01-01 ..." timestamps
    if not name.startswith(prefix):
        raise InputError(patch, line, f"path {name!r} lacks the git-style {prefix!r} prefix")
    return check_relpath(name[len(prefix) :], patch, line)


def _hunk(h: unidiff.Hunk, patch: str | Path) -> Hunk:
    """Convert a unidiff hunk, applying "\\ No newline at end of file" markers."""
    lines = list(h)
    old: list[str] = []
    new: list[str] = []
    kinds: list[str] = []
    body: list[tuple[str, str]] = []
    for i, ln in enumerate(lines):
        if ln.line_type == LINE_TYPE_NO_NEWLINE:
            continue
        value = ln.value
        nxt = lines[i + 1] if i + 1 < len(lines) else None
        if nxt is not None and nxt.line_type == LINE_TYPE_NO_NEWLINE and value.endswith("\n"):
            value = value[:-1]
        if ln.line_type in (unidiff.LINE_TYPE_CONTEXT, unidiff.LINE_TYPE_REMOVED):
            old.append(value)
        if ln.line_type in (unidiff.LINE_TYPE_CONTEXT, unidiff.LINE_TYPE_ADDED):
            new.append(value)
        kinds.append(ln.line_type)
        body.append((ln.line_type, value))
    lead = next((i for i, k in enumerate(kinds) if k != unidiff.LINE_TYPE_CONTEXT), len(kinds))
    trail = next(
        (i for i, k in enumerate(reversed(kinds)) if k != unidiff.LINE_TYPE_CONTEXT), len(kinds)
    )
    first = next((ln.diff_line_no for ln in lines if ln.diff_line_no), None)
    header = first - 1 if first else None
    if lead == len(kinds):
        raise InputError(patch, header, "hunk changes nothing (only context lines)")
    # unified diff: "-0,0" means "insert after line 0"; "-l,s" with s>0 starts at line l
    old_start = h.source_start - 1 if h.source_length else h.source_start
    new_start = h.target_start - 1 if h.target_length else h.target_start
    return Hunk(
        tuple(old),
        tuple(new),
        old_start,
        new_start,
        lead,
        trail,
        header or 0,
        kinds.count(unidiff.LINE_TYPE_ADDED),
        kinds.count(unidiff.LINE_TYPE_REMOVED),
        tuple(body),
        (h.section_header or "").strip(),
    )


def parse_patch_text(text: str, patch: str | Path = "<patch>") -> tuple[FilePatch, ...]:
    """Parse and validate a git-style unified diff; ``patch`` names it in errors.

    >>> fps = parse_patch_text("--- a/x.txt\\n+++ b/x.txt\\n@@ -1 +1 @@\\n-a\\n+b\\n")
    >>> fps[0].path, fps[0].hunks[0].old, fps[0].hunks[0].new
    ('x.txt', ('a\\n',), ('b\\n',))
    """
    try:
        ps = unidiff.PatchSet(text)
    except unidiff.UnidiffParseError as exc:
        raise InputError(patch, None, f"not a valid unified diff: {exc}") from None
    if len(ps) == 0:
        raise InputError(patch, None, "no file changes found (not a unified diff?)")
    out: list[FilePatch] = []
    seen: set[str] = set()
    for pf in ps:
        line = _file_line(pf)
        if pf.is_binary_file:
            raise InputError(patch, line, f"binary change to {pf.path!r} is not supported")
        # Only a /dev/null target deletes; unidiff's is_removed_file also says so of a hunk
        # that empties the file ("@@ -1 +0,0 @@" into b/...), which keeps the file, empty.
        if pf.target_file == _DEV_NULL:
            raise InputError(patch, line, f"deleting {pf.source_file!r} is not supported")
        created = pf.source_file == _DEV_NULL
        target = _strip_prefix(pf.target_file, "b/", patch, line)
        if not created and _strip_prefix(pf.source_file, "a/", patch, line) != target:
            raise InputError(
                patch, line, f"renaming {pf.source_file!r} to {pf.target_file!r} is not supported"
            )
        if target in seen:
            raise InputError(patch, line, f"{target!r} appears twice in the patch")
        seen.add(target)
        if len(pf) == 0:
            raise InputError(
                patch, line, f"no hunks for {target!r} (mode-only changes are not supported)"
            )
        hunks = tuple(_hunk(h, patch) for h in pf)
        if created and (len(hunks) != 1 or hunks[0].old):
            raise InputError(patch, line, f"new file {target!r} must be one hunk of added lines")
        out.append(FilePatch(target, hunks, created=created))
    return tuple(out)


def _file_line(pf: unidiff.PatchedFile) -> int | None:
    """Best guess of the patch line of a file's ``---`` header (first hunk's line - 3)."""
    for h in pf:
        for ln in h:
            if ln.diff_line_no:
                return max(1, ln.diff_line_no - 3)
    return None


def read_patch(path: str | Path) -> tuple[FilePatch, ...]:
    """Read, decode (UTF-8, strict) and parse the patch file at ``path``."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_PATCH_BYTES:
            raise InputError(
                p, None, f"patch is {size} bytes, more than the {MAX_PATCH_BYTES} allowed"
            )
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(p, None, f"cannot read patch: {exc.strerror}") from None
    if b"\x00" in data:
        line = data.count(b"\n", 0, data.index(b"\x00")) + 1
        raise InputError(p, line, "binary data (NUL byte) in patch")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(p, line, "patch is not UTF-8 text") from None
    return parse_patch_text(text, p)
