"""Port a version's patch to another version: all hunks placed (with offset and context
fuzz, each inside the function its context names) or nothing changed.

A hunk may move (the nearest place where its lines match, at most ``max_offset`` lines
from where the hunks before it put it) and ignore up to ``fuzz`` context lines at each
end, but it must land in the same function as in the version the patch was made for
(Python ``def``, Go ``func``, Rust ``fn``; :mod:`statemine.patch.functions`): the function enclosing
its context in that version's pristine source (``old_root``), else the one its own
lines or its ``@@`` section text name. When every hunk fits, the files are written
atomically and recorded in ``.statemine-patch.json`` (``statemine patch revert
--version <to>`` undoes them byte for byte). When any hunk fails, nothing is written and
:class:`PortFailed` lists the rejects (its report has the unified diff of the failed
hunks, with their line numbers in the old version, for a human to place).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import StatemineError, UsageError
from .apply import (
    RECORD,
    SOURCE_RECORD,
    Accept,
    commit,
    hunk_report,
    make_record,
    plan,
    read_json,
    read_record,
    safe_target,
    source_root,
    split_lines,
)
from .functions import enclosing_function, language, section_function
from .registry import patch_path, sha256_file
from .unified_diff import FilePatch, Hunk, read_patch

#: How far (lines) a hunk may move from where the hunks before it put it.
MAX_OFFSET = 500


@dataclass(frozen=True)
class PortReport:
    """What :func:`port` did or would do. ``hunks``: one row per hunk (``path``, ``hunk``,
    ``patch_line``, ``status`` in exact/offset/fuzz/failed, ``offset`` lines, ``fuzz``,
    ``reason`` a failure's); ``rejects``: a unified diff of the failed hunks ("" when
    none); ``written``: the tree was changed."""

    impl: str
    from_version: str
    to_version: str
    hunks: pd.DataFrame
    rejects: str
    written: bool

    @property
    def needs_human(self) -> pd.DataFrame:
        """The hunks that did not apply."""
        return self.hunks[self.hunks["status"] == "failed"]

    def __str__(self) -> str:
        counts = self.hunks["status"].value_counts()
        parts = ", ".join(f"{counts.get(s, 0)} {s}" for s in ("exact", "offset", "fuzz", "failed"))
        return f"{self.impl} {self.from_version} -> {self.to_version}: {len(self.hunks)} hunks: {parts}"


class PortFailed(StatemineError):
    """Some hunks of a port did not fit: nothing was changed; ``report`` says which and why."""

    def __init__(self, report: PortReport) -> None:
        self.report = report
        rows = report.needs_human
        listed = "; ".join(
            f"{r.path} hunk {r.hunk} (patch line {r.patch_line}): {r.reason}"
            for r in rows.itertuples(index=False)
        )
        super().__init__(
            f"port {report.impl} {report.from_version} -> {report.to_version}: "
            f"{len(rows)} of {len(report.hunks)} hunks failed, nothing was "
            f"changed: {listed}"
        )


def _hunk_text(h: Hunk) -> list[str]:
    """A hunk's ``@@`` header and lines in unified diff form."""
    old = h.old_start + 1 if h.old else h.old_start  # "-N,0": insert after line N
    new = h.new_start + 1 if h.new else h.new_start
    out = [f"@@ -{old},{len(h.old)} +{new},{len(h.new)} @@{' ' + h.section if h.section else ''}\n"]
    for kind, line in h.body:
        out.append(kind + line)
        if not line.endswith("\n"):
            out[-1] += "\n"
            out.append("\\ No newline at end of file\n")
    return out


def rejects_text(fps: tuple[FilePatch, ...], failed: set[tuple[str, int]]) -> str:
    """A unified diff of the hunks ``failed`` (``(path, 1-based hunk)`` pairs), with the
    line numbers of the version the patch was made for."""
    out: list[str] = []
    for fp in fps:
        hunks = [h for i, h in enumerate(fp.hunks, 1) if (fp.path, i) in failed]
        if hunks:
            out += [f"--- {'/dev/null' if fp.created else 'a/' + fp.path}\n", f"+++ b/{fp.path}\n"]
            for h in hunks:
                out += _hunk_text(h)
    return "".join(out)


def _old_function(fp: FilePatch, h: Hunk, old_lines: list[str] | None) -> str | None:
    """The function a hunk's change sits in, in the version the patch was made for: from
    the pristine old file when given, else from the hunk's own context (a ``def``/``func``
    line above the change), else from its ``@@`` section text; None when unknown."""
    anchor = max(h.lead - 1, 0)
    if old_lines is not None:
        return enclosing_function(fp.path, old_lines, h.old_start + anchor)
    return enclosing_function(fp.path, h.old[: anchor + 1], anchor) or section_function(
        fp.path, h.section
    )


def _same_function(old_root: Path | None) -> Callable[[FilePatch], Accept | None]:
    """``accept`` for :func:`plan`: a hunk may only start where its change is inside the
    function it was in (files of other languages, or hunks of unknown function: anywhere)."""

    def for_file(fp: FilePatch) -> Accept | None:
        if language(fp.path) is None or fp.created:
            return None
        old_lines = None
        if old_root is not None:
            path = safe_target(old_root, fp.path)
            if path.is_file():
                old_lines = split_lines(path.read_bytes().decode("utf-8", "surrogateescape"))
        wanted = {id(h): _old_function(fp, h, old_lines) for h in fp.hunks}

        def accept(h: Hunk, start: int, lines: list[str]) -> str | None:
            name = wanted[id(h)]
            if name is None and old_lines is None:
                return None
            found = enclosing_function(fp.path, lines, start + max(h.lead - 1, 0))
            if found == name:
                return None
            return f"its lines match only in {_fn(found)}, not in {_fn(name)} where its context is"

        return accept

    return for_file


def _fn(name: str | None) -> str:
    return f"function {name}" if name else "no function"


def port(
    impl: str,
    from_version: str,
    to_version: str,
    dest: str | Path,
    fuzz: int = 2,
    dry_run: bool = False,
    patches: str | Path | None = None,
    old_root: str | Path | None = None,
    max_offset: int = MAX_OFFSET,
) -> PortReport:
    """Try the ``from_version`` patch on the ``to_version`` tree ``dest``, all or nothing.

    Every hunk is placed at its line, else the nearest offset within ``max_offset`` lines,
    else with up to ``fuzz`` context lines ignored at each end, and only inside the
    function its change was in (``old_root``: the pristine ``from_version`` tree, which
    names it best; see the module docstring). Unless ``dry_run``, a port where every hunk
    fits is written atomically and recorded for ``revert --version to_version``. Raises
    :class:`PortFailed` (nothing written) when a hunk does not fit.
    """
    if fuzz < 0 or max_offset < 0:
        raise UsageError("fuzz and max_offset must be >= 0")
    root = source_root(dest)
    old = source_root(old_root) if old_root is not None else None
    src = read_json(root, SOURCE_RECORD)
    if src is not None and (src.get("impl"), src.get("version")) != (impl, to_version):
        raise UsageError(
            f"{root} holds {src.get('impl')} {src.get('version')} (see {SOURCE_RECORD}), "
            f"not {impl} {to_version}"
        )
    if read_record(root) is not None:
        raise UsageError(f"{root} already carries a patch (see {RECORD}): revert it first")
    ppath = patch_path(impl, from_version, patches)
    fps = read_patch(ppath)
    changes = plan(
        root, fps, fuzz=fuzz, shift=True, max_offset=max_offset, accept=_same_function(old)
    )
    failed = {(r.path, r.hunk) for c in changes for r in c.results if r.status == "failed"}
    report = PortReport(
        impl, from_version, to_version, hunk_report(changes), rejects_text(fps, failed), False
    )
    if failed:
        raise PortFailed(report)
    if not dry_run:
        writes = {
            c.path: (c.before, c.after)
            for c in changes
            if c.after is not None and c.before != c.after
        }
        writes[RECORD] = (
            None,
            make_record(
                impl,
                to_version,
                sha256_file(ppath),
                [c for c in changes if c.path in writes],
                ported_from=from_version,
            ),
        )
        commit(root, writes)
    return PortReport(impl, from_version, to_version, report.hunks, "", not dry_run)
