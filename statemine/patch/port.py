"""Port a version's patch to another version: apply what fits (with offset and context
fuzz), report what needs a human.

The hunks that apply are written atomically and recorded in ``.statemine-patch.json``
(as for ``apply``: ``statemine patch revert --version <to>`` undoes them byte for byte).
The hunks that do not apply are written to ``DIR/.statemine-port.rej`` (a unified diff
of the failed hunks, with their line numbers in the old version) for a human to place.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import UsageError
from .apply import RECORD, SOURCE_RECORD, commit, hunk_report, make_record, plan, read_json, source_root
from .diff import FilePatch, Hunk, read_patch
from .registry import patch_path, sha256_file

REJECTS = ".statemine-port.rej"


@dataclass(frozen=True)
class PortReport:
    """What :func:`port` did. ``hunks``: one row per hunk (``path``, ``hunk``,
    ``patch_line``, ``status`` in exact/offset/fuzz/failed, ``offset`` lines, ``fuzz``);
    ``rejects``: the path of the rejected hunks file, or None when all applied."""

    impl: str
    from_version: str
    to_version: str
    hunks: pd.DataFrame
    rejects: Path | None
    written: bool

    @property
    def needs_human(self) -> pd.DataFrame:
        """The hunks that did not apply."""
        return self.hunks[self.hunks["status"] == "failed"]

    def __str__(self) -> str:
        counts = self.hunks["status"].value_counts()
        parts = ", ".join(f"{counts.get(s, 0)} {s}" for s in ("exact", "offset", "fuzz", "failed"))
        return f"{self.impl} {self.from_version} -> {self.to_version}: {len(self.hunks)} hunks: {parts}"


def _hunk_text(h: Hunk) -> list[str]:
    """A hunk's ``@@`` header and lines in unified diff form."""
    old = h.old_start + 1 if h.old else h.old_start  # "-N,0": insert after line N
    new = h.new_start + 1 if h.new else h.new_start
    out = [f"@@ -{old},{len(h.old)} +{new},{len(h.new)} @@\n"]
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


def port(impl: str, from_version: str, to_version: str, dest: str | Path, fuzz: int = 2,
         dry_run: bool = False, patches: str | Path | None = None) -> PortReport:
    """Try the ``from_version`` patch on the ``to_version`` tree ``dest``.

    Every hunk is placed at its line, else the nearest offset, else with up to ``fuzz``
    context lines ignored at each end. Unless ``dry_run``, the hunks that fit are written
    (atomically, recorded for ``revert --version to_version``) and the rest saved in
    ``dest/.statemine-port.rej``.
    """
    if fuzz < 0:
        raise UsageError("fuzz must be >= 0")
    root = source_root(dest)
    src = read_json(root, SOURCE_RECORD)
    if src is not None and (src.get("impl"), src.get("version")) != (impl, to_version):
        raise UsageError(f"{root} holds {src.get('impl')} {src.get('version')} (see {SOURCE_RECORD}), "
                         f"not {impl} {to_version}")
    if read_json(root, RECORD) is not None:
        raise UsageError(f"{root} already carries a patch (see {RECORD}): revert it first")
    ppath = patch_path(impl, from_version, patches)
    fps = read_patch(ppath)
    changes = plan(root, fps, fuzz=fuzz, shift=True)
    report = hunk_report(changes)
    failed = {(r.path, r.hunk) for c in changes for r in c.results if r.status == "failed"}
    rej = root / REJECTS if failed else None
    if not dry_run:
        writes = {c.path: (c.before, c.after) for c in changes if c.after is not None and c.before != c.after}
        writes[RECORD] = (None, make_record(impl, to_version, sha256_file(ppath),
                                           [c for c in changes if c.path in writes],
                                           ported_from=from_version))
        old_rej = _existing_bytes(root, REJECTS)
        if rej is not None:
            writes[REJECTS] = (old_rej, rejects_text(fps, failed).encode("utf-8"))
        elif old_rej is not None:
            writes[REJECTS] = (old_rej, None)
        commit(root, writes)
    return PortReport(impl, from_version, to_version, report, rej, not dry_run)


def _existing_bytes(root: Path, name: str) -> bytes | None:
    """The bytes of the regular file ``root/name``, or None."""
    path = root / name
    return path.read_bytes() if path.is_file() and not path.is_symlink() else None
