"""Apply, check and revert an instrument patch on a source tree, atomically.

The engine is pure Python (no GNU ``patch``): every path is validated first (see
:mod:`statemine.patch.unified_diff`; symlinks anywhere below DIR are refused), all hunks are
applied in memory, and only when every hunk of every file applies are the files written
(each to a temp file next to it, then ``os.replace``; a failure part way restores the
files already replaced). ``apply``/``check``/``revert`` place every hunk exactly at its
line number, since a patch belongs to one version; ``port`` (``shift=True``) also takes the
nearest offset where the lines match (like ``git apply``) and lets up to ``fuzz`` context
lines at each end of a hunk mismatch (like GNU ``patch --fuzz``).

``DIR/.statemine-patch.json`` records what ``apply`` changed: the sha256 of each file
before and after, and the original bytes (zlib + base64), so ``revert`` restores
byte-identical files.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import stat
import tempfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..errors import InputError, UsageError
from .registry import patch_path, sha256_file
from .unified_diff import FilePatch, Hunk, check_relpath, read_patch

RECORD = ".statemine-patch.json"
SOURCE_RECORD = ".statemine-source.json"

#: The columns of a hunk report (:func:`hunk_report`).
HUNK_COLUMNS = ["path", "hunk", "patch_line", "status", "offset", "fuzz", "reason"]


@dataclass(frozen=True)
class HunkResult:
    """Where one hunk went: ``status`` is ``exact``, ``offset``, ``fuzz`` or ``failed``;
    ``offset`` in lines from the hunk's line number, ``fuzz`` context lines ignored."""

    path: str
    hunk: int
    patch_line: int
    status: str
    offset: int = 0
    fuzz: int = 0
    #: Why a hunk failed ("" otherwise).
    reason: str = ""


@dataclass(frozen=True)
class FileChange:
    """One file's planned change; ``before``/``after`` are ``None`` when absent."""

    path: str
    before: bytes | None
    after: bytes | None
    results: tuple[HunkResult, ...]

    @property
    def ok(self) -> bool:
        return all(r.status != "failed" for r in self.results)


@dataclass(frozen=True)
class Outcome:
    """What an operation did: ``status`` is one of ``applied``, ``already applied``,
    ``would apply``, ``reverted``, ``would revert``, ``not applied``, ``ported``;
    ``files`` the files it touched (or would); ``hunks`` a hunk report frame."""

    action: str
    impl: str
    version: str
    status: str
    files: tuple[str, ...] = ()
    hunks: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=HUNK_COLUMNS))

    def __str__(self) -> str:
        files = f" ({len(self.files)} files: {', '.join(self.files)})" if self.files else ""
        return f"{self.impl} {self.version}: {self.status}{files}"


# ---------------------------------------------------------------- pure helpers


def split_lines(text: str) -> list[str]:
    """Split on ``"\\n"`` only, keeping it (``str.splitlines`` also splits on ``\\f`` ...).

    >>> split_lines("a\\nb\\r\\n\\x0cc")
    ['a\\n', 'b\\r\\n', '\\x0cc']
    """
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _matches(
    lines: list[str], needle: tuple[str, ...], expected: int, lo: int, radius_max: int | None = None
) -> Iterator[int]:
    """The positions >= ``lo`` where ``needle`` matches, nearest ``expected`` first (the
    lower on a tie), at most ``radius_max`` away (None: anywhere).

    Windows of growing radius around ``expected`` are scanned for the needle's first line
    with ``list.index`` (C speed); a match within radius r is nearer than any outside it.
    """
    n, last = len(needle), len(lines) - len(needle)
    if last < lo:
        return
    expected = min(max(expected, lo), last)
    first = needle[0]
    radius = 64
    seen: set[int] = set()
    while True:
        if radius_max is not None:
            radius = min(radius, radius_max)
        start, stop = max(lo, expected - radius), min(last, expected + radius)
        candidates = []
        pos = start - 1
        while pos < stop:
            try:
                pos = lines.index(first, pos + 1, stop + 1)
            except ValueError:
                break
            if pos not in seen:
                candidates.append(pos)
        candidates.sort(key=lambda p: (abs(p - expected), p))
        for pos in candidates:
            seen.add(pos)
            if tuple(lines[pos : pos + n]) == needle:
                yield pos
        if (start == lo and stop == last) or radius == radius_max:
            return
        radius *= 16


def _find(lines: list[str], needle: tuple[str, ...], expected: int, lo: int) -> int | None:
    """The position >= ``lo`` nearest ``expected`` (the lower on a tie) where ``needle``
    matches, else None."""
    return next(_matches(lines, needle, expected, lo), None)


#: ``accept(hunk, start, lines)``: None when the hunk may start at ``lines[start]``, else
#: the reason it may not (see :func:`patch_lines`).
Accept = Callable[[Hunk, int, list[str]], "str | None"]


def patch_lines(
    lines: list[str],
    hunks: tuple[Hunk, ...],
    path: str,
    fuzz: int = 0,
    shift: bool = False,
    max_offset: int | None = None,
    accept: Accept | None = None,
) -> tuple[list[str], tuple[HunkResult, ...]]:
    """Apply ``hunks`` in order to ``lines``; failed hunks are skipped and reported.

    Each hunk must match at its line number (shifted by what earlier hunks added), or with
    ``shift`` at the nearest offset, at most ``max_offset`` lines from where the previous
    hunks put it (None: anywhere), where ``accept`` (if given) allows it; ``fuzz``
    context lines at each end may mismatch.

    >>> h = Hunk(("a\\n", "b\\n"), ("a\\n", "c\\n"), 1, 1, 1, 0, 3, 1, 1)  # "b" -> "c" at index 2
    >>> patch_lines(["x\\n", "a\\n", "b\\n"], (h,), "f")[0]
    ['x\\n', 'a\\n', 'c\\n']
    """
    out = list(lines)
    results = []
    growth = drift = lo = 0
    for i, h in enumerate(hunks, 1):
        expected = h.old_start + growth + drift
        placed = None
        refused = ""
        for f in range(0, fuzz + 1):
            top, bottom = min(f, h.lead), min(f, h.trail)
            if f and top == 0 and bottom == 0:
                break  # no context left to ignore
            needle = h.old[top : len(h.old) - bottom]
            if not needle:
                if h.old or f:
                    continue
                candidates: Iterator[int] = iter([min(max(expected, lo), len(out))])  # insertion
            elif shift:
                candidates = _matches(out, needle, expected + top, lo, max_offset)
            else:
                at = expected + top
                candidates = iter(
                    [at] if at >= lo and tuple(out[at : at + len(needle)]) == needle else []
                )
            for pos in candidates:
                why = accept(h, pos - top, out) if accept is not None else None
                if why is None:
                    placed = (pos, top, bottom, f)
                    break
                refused = refused or f"{why}, {abs(pos - top - expected)} lines away"
            if placed is not None:
                break
        if placed is None:
            reason = refused or (
                _beyond(out, h, expected, lo, fuzz, max_offset, accept)
                if shift
                else "its lines are not at its line number"
            )
            results.append(HunkResult(path, i, h.patch_line, "failed", reason=reason))
            continue
        pos, top, bottom, f = placed
        replacement = list(h.new[top : len(h.new) - bottom])
        width = len(h.old) - top - bottom
        out[pos : pos + width] = replacement
        offset = pos - top - (h.old_start + growth)
        drift = offset
        growth += len(replacement) - width
        lo = pos + len(replacement)
        status = "fuzz" if f else ("offset" if offset else "exact")
        results.append(HunkResult(path, i, h.patch_line, status, offset, f))
    return out, tuple(results)


def _beyond(
    lines: list[str],
    h: Hunk,
    expected: int,
    lo: int,
    fuzz: int,
    max_offset: int | None,
    accept: Accept | None,
) -> str:
    """Why a shifted hunk found no place: not found at all, or only farther than
    ``max_offset`` (how far, and in which function when ``accept`` objects there)."""
    if max_offset is None:
        return "its lines are not found"
    for f in range(fuzz + 1):
        top, bottom = min(f, h.lead), min(f, h.trail)
        needle = h.old[top : len(h.old) - bottom]
        pos = _find(lines, needle, expected + top, lo) if needle else None
        if pos is not None:
            why = accept(h, pos - top, lines) if accept is not None else None
            return (
                f"its lines are not found within {max_offset} lines (the nearest match is "
                f"{abs(pos - top - expected)} lines away{'; ' + why if why else ''})"
            )
    return "its lines are not found"


def hunk_report(changes: list[FileChange]) -> pd.DataFrame:
    """One row per hunk of ``changes`` (columns :data:`HUNK_COLUMNS`)."""
    rows = [r.__dict__ for c in changes for r in c.results]
    return pd.DataFrame(rows, columns=HUNK_COLUMNS).astype(
        {"hunk": "int64", "patch_line": "int64", "offset": "int64", "fuzz": "int64"}
    )


# ---------------------------------------------------------------- file system edge


def source_root(dest: str | Path) -> Path:
    """``dest`` resolved; it must be an existing directory."""
    root = Path(dest)
    if not root.is_dir():
        raise UsageError(f"{dest}: not a directory (fetch the source first: statemine patch fetch)")
    return root.resolve()


def safe_target(root: Path, rel: str) -> Path:
    """``root/rel`` after checking that no component below ``root`` is a symlink and the
    file, when it exists, is a regular file; raises :class:`InputError` otherwise."""
    cur = root
    parts = rel.split("/")
    for i, part in enumerate(parts):
        cur = cur / part
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            return root.joinpath(*parts)
        if stat.S_ISLNK(st.st_mode):
            raise InputError(root / rel, None, f"refusing to patch through the symlink {cur}")
        if i < len(parts) - 1 and not stat.S_ISDIR(st.st_mode):
            raise InputError(root / rel, None, f"{cur} is not a directory")
        if i == len(parts) - 1 and not stat.S_ISREG(st.st_mode):
            raise InputError(root / rel, None, "not a regular file")
    return cur


def _read(root: Path, rel: str) -> bytes | None:
    path = safe_target(root, rel)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def plan(
    root: Path,
    fps: tuple[FilePatch, ...],
    fuzz: int = 0,
    shift: bool = False,
    max_offset: int | None = None,
    accept: Callable[[FilePatch], Accept | None] | None = None,
) -> list[FileChange]:
    """Apply every file patch in memory (reads files, writes nothing); ``fuzz``, ``shift``
    and ``max_offset`` as for :func:`patch_lines`, ``accept(file_patch)`` gives its
    ``accept``."""
    changes = []
    for fp in fps:
        before = _read(root, fp.path)
        if fp.created:
            ok = before is None
            after = _encode("".join(fp.hunks[0].new)) if ok else None
            created = HunkResult(fp.path, 1, fp.hunks[0].patch_line, "exact" if ok else "failed")
            changes.append(FileChange(fp.path, before, after, (created,)))
            continue
        if before is None:
            res = tuple(
                HunkResult(fp.path, i, h.patch_line, "failed") for i, h in enumerate(fp.hunks, 1)
            )
            changes.append(FileChange(fp.path, None, None, res))
            continue
        lines, res = patch_lines(
            split_lines(_decode(before)),
            fp.hunks,
            fp.path,
            fuzz,
            shift,
            max_offset,
            accept(fp) if accept is not None else None,
        )
        after = _encode("".join(lines))
        if fp.deleted:  # reverse of a created file: it must now be empty
            ok = not lines and all(r.status != "failed" for r in res)
            res = tuple(
                r if ok else HunkResult(r.path, r.hunk, r.patch_line, "failed") for r in res
            )
            after = None
        changes.append(FileChange(fp.path, before, after, res))
    return changes


def _sha(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


def _write_temp(path: Path, data: bytes, mode: int) -> Path:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".statemine-tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
    except BaseException:
        os.unlink(tmp)
        raise
    return Path(tmp)


def commit(root: Path, writes: Mapping[str, tuple[bytes | None, bytes | None]]) -> None:
    """Write ``{rel: (before, after)}`` all or nothing: ``after`` None deletes the file.

    Temp files are written first; then each is renamed over its target. If anything
    fails, targets already replaced get their ``before`` bytes back, created directories
    are removed, and the error propagates.
    """
    made_dirs: list[Path] = []
    temps: list[tuple[Path, Path]] = []
    done: list[tuple[Path, bytes | None, int]] = []
    try:
        for rel, (before, after) in writes.items():
            target = safe_target(root, rel)
            mode = stat.S_IMODE(os.stat(target).st_mode) if before is not None else 0o644
            if after is None:
                continue
            missing = [p for p in [target.parent, *target.parent.parents] if not p.exists()]
            for d in reversed(missing):
                d.mkdir()
                made_dirs.append(d)
            safe_target(root, rel)  # re-check: the directories are ours now
            temps.append((_write_temp(target, after, mode), target))
        for rel, (before, after) in writes.items():
            target = root.joinpath(*rel.split("/"))
            mode = stat.S_IMODE(os.stat(target).st_mode) if before is not None else 0o644
            if after is None:
                if before is not None:
                    os.unlink(target)
                    done.append((target, before, mode))
                continue
            tmp = next(t for t, tgt in temps if tgt == target)
            os.replace(tmp, target)
            done.append((target, before, mode))
    except BaseException:
        for tmp, _target in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        for target, before, mode in reversed(done):
            if before is None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(target)
            else:
                os.replace(_write_temp(target, before, mode), target)
        for d in reversed(made_dirs):
            with contextlib.suppress(OSError):
                d.rmdir()
        raise


def _prune_dirs(root: Path, rel: str) -> None:
    """Remove the now-empty directories that held ``rel`` (never ``root`` itself)."""
    parent = root.joinpath(*rel.split("/")).parent
    while parent != root and root in parent.parents:
        try:
            parent.rmdir()
        except OSError:
            return
        parent = parent.parent


# ---------------------------------------------------------------- records


def read_json(root: Path, name: str) -> dict | None:
    """``root/name`` parsed as a JSON object, None when absent; InputError when bad."""
    path = root / name
    if not path.exists():
        return None
    safe_target(root, name)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(path, None, f"not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(path, None, "not a JSON object")
    return data


_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class RecordFile:
    """One file of ``.statemine-patch.json``: its ``path`` (relative), the sha256 of its
    bytes before and after the patch (None: absent), the original bytes (zlib + base64
    text, None when the file was added)."""

    path: str
    before_sha256: str | None
    after_sha256: str | None
    before_zlib_b64: str | None


def read_record(root: Path) -> dict | None:
    """``root/.statemine-patch.json`` checked field by field (None when absent): ``impl``,
    ``version``, ``patch_sha256`` strings, ``files`` a list of :class:`RecordFile`.
    :class:`InputError` naming the file and the field for anything else (the record sits
    in a tree a user may have edited)."""
    rec = read_json(root, RECORD)
    if rec is None:
        return None
    path = root / RECORD

    def bad(what: str) -> InputError:
        return InputError(
            path, None, f"malformed record: {what}; revert by hand or re-fetch the source"
        )

    for key in ("impl", "version", "patch_sha256"):
        if not isinstance(rec.get(key), str):
            raise bad(f"{key} must be a string, not {rec.get(key)!r:.60}")
    if "ported_from" in rec and not isinstance(rec["ported_from"], str):
        raise bad("ported_from must be a string")
    if not isinstance(rec.get("files"), list):
        raise bad("files must be a list")
    files = []
    for k, f in enumerate(rec["files"]):
        if not isinstance(f, dict):
            raise bad(f"files[{k}] must be an object")
        rel = f.get("path")
        if not isinstance(rel, str):
            raise bad(f"files[{k}].path must be a string")
        try:
            check_relpath(rel, path, None)
        except InputError as exc:
            raise bad(f"files[{k}].path: {exc.reason}") from None
        for key in ("before_sha256", "after_sha256"):
            v = f.get(key)
            if v is not None and not (isinstance(v, str) and _SHA256.fullmatch(v)):
                raise bad(f"files[{k}].{key} must be a sha256 (64 hex digits) or null")
        blob = f.get("before_zlib_b64")
        if blob is not None and not isinstance(blob, str):
            raise bad(f"files[{k}].before_zlib_b64 must be a string or null")
        if (blob is None) != (f.get("before_sha256") is None):
            raise bad(f"files[{k}]: before_sha256 and before_zlib_b64 must both be set or null")
        files.append(RecordFile(rel, f.get("before_sha256"), f.get("after_sha256"), blob))
    if len({f.path for f in files}) != len(files):
        raise bad("a file is listed twice")
    return {**rec, "files": files}


def make_record(
    impl: str, version: str, patch_sha: str, changes: list[FileChange], **extra: str
) -> bytes:
    """The bytes of ``.statemine-patch.json`` for ``changes`` just applied."""
    files = [
        {
            "path": c.path,
            "before_sha256": _sha(c.before),
            "after_sha256": _sha(c.after),
            "before_zlib_b64": (
                base64.b64encode(zlib.compress(c.before)).decode("ascii")
                if c.before is not None
                else None
            ),
        }
        for c in changes
        if c.before != c.after
    ]
    rec = {"impl": impl, "version": version, "patch_sha256": patch_sha, **extra, "files": files}
    return (json.dumps(rec, indent=1) + "\n").encode("utf-8")


def _check_source(root: Path, impl: str, version: str) -> None:
    """Refuse a tree whose ``.statemine-source.json`` names another implementation/version."""
    src = read_json(root, SOURCE_RECORD)
    if src is None:
        return
    if src.get("impl") != impl or src.get("version") != version:
        raise UsageError(
            f"{root} holds {src.get('impl')} {src.get('version')} (see {SOURCE_RECORD}), "
            f"not {impl} {version}: fetch {impl} {version} into a new directory, or try "
            f"`statemine patch port --impl {impl} --from {version} --to {src.get('version')} {root}`"
        )


#: The most bytes a saved original may inflate to (bounded memory on a hostile record).
MAX_ORIGINAL_BYTES = 256 << 20


def _inflate(data: bytes) -> bytes:
    """zlib-decompress at most :data:`MAX_ORIGINAL_BYTES` (``ValueError`` past that)."""
    d = zlib.decompressobj()
    out = d.decompress(data, MAX_ORIGINAL_BYTES)
    if d.unconsumed_tail or not d.eof:
        raise ValueError("truncated, or larger than 256 MiB inflated")
    return out


def _first_failure(changes: list[FileChange]) -> HunkResult:
    return next(r for c in changes for r in c.results if r.status == "failed")


# ---------------------------------------------------------------- operations


def _apply(
    impl: str, version: str, dest: str | Path, dry_run: bool, patches: str | Path | None
) -> Outcome:
    root = source_root(dest)
    ppath = patch_path(impl, version, patches)
    fps = read_patch(ppath)
    psha = sha256_file(ppath)
    action = "check" if dry_run else "apply"
    _check_source(root, impl, version)
    rec = read_record(root)
    if rec is not None and (rec.get("impl"), rec.get("version"), rec.get("patch_sha256")) != (
        impl,
        version,
        psha,
    ):
        raise UsageError(
            f"{root} carries another patch ({rec.get('impl')} {rec.get('version')}, "
            f"see {RECORD}): revert it first"
        )
    fwd = plan(root, fps)
    if all(c.ok for c in fwd):
        files = tuple(c.path for c in fwd)
        if dry_run:
            return Outcome(action, impl, version, "would apply", files, hunk_report(fwd))
        writes = {c.path: (c.before, c.after) for c in fwd}
        writes[RECORD] = (None, make_record(impl, version, psha, fwd))
        commit(root, writes)
        return Outcome(action, impl, version, "applied", files, hunk_report(fwd))
    back = plan(root, tuple(fp.reversed() for fp in fps))
    if all(c.ok for c in back):
        return Outcome(action, impl, version, "already applied", (), hunk_report(back))
    bad = _first_failure(fwd)
    shifted = plan(root, fps, shift=True)
    where = "it applies only at an offset: " if all(c.ok for c in shifted) else ""
    raise InputError(
        ppath,
        bad.patch_line,
        f"hunk {bad.hunk} for {bad.path} does not apply to {root}: {where}another version "
        f"of {impl}, or a modified or partly patched tree (nothing was changed); "
        f"try `statemine patch port --impl {impl} --from {version} --to <its version> {root}`",
    )


def apply(impl: str, version: str, dest: str | Path, patches: str | Path | None = None) -> Outcome:
    """Apply the ``impl`` ``version`` patch to the source tree ``dest``, all or nothing.

    Returns an :class:`Outcome` with status ``applied`` or ``already applied`` (the
    reverse patch applies: nothing is written). Raises :class:`InputError` (naming the
    patch line of the first hunk that fails) when the tree is another version, and
    :class:`UsageError` when ``dest/.statemine-source.json`` names another version.
    """
    return _apply(impl, version, dest, False, patches)


def check(impl: str, version: str, dest: str | Path, patches: str | Path | None = None) -> Outcome:
    """Dry run of :func:`apply`: status ``would apply`` or ``already applied``; writes nothing."""
    return _apply(impl, version, dest, True, patches)


def revert(
    impl: str,
    version: str,
    dest: str | Path,
    patches: str | Path | None = None,
    dry_run: bool = False,
) -> Outcome:
    """Undo :func:`apply` (or :func:`statemine.patch.port`) on ``dest``, byte for byte.

    With a ``.statemine-patch.json`` record, every file must still have the bytes apply
    wrote (else nothing is changed and :class:`InputError` names the file); the original
    bytes are restored and added files removed. Without a record, the reverse patch is
    applied (exactly, no fuzz). Status ``reverted`` (``would revert`` with ``dry_run``)
    or ``not applied`` when the tree is pristine.
    """
    root = source_root(dest)
    action = "revert"
    rec = read_record(root)
    if rec is None:
        _check_source(root, impl, version)
        ppath = patch_path(impl, version, patches)
        fps = read_patch(ppath)
        back = plan(root, tuple(fp.reversed() for fp in fps))
        if not all(c.ok for c in back):
            if all(c.ok for c in plan(root, fps)):
                return Outcome(action, impl, version, "not applied")
            bad = _first_failure(back)
            raise InputError(
                ppath,
                bad.patch_line,
                f"hunk {bad.hunk} for {bad.path} cannot be reverted in {root}: "
                f"the patch is not applied to this tree or the file was modified",
            )
        files = tuple(c.path for c in back)
        if not dry_run:
            commit(root, {c.path: (c.before, c.after) for c in back})
            for c in back:
                if c.after is None:
                    _prune_dirs(root, c.path)
        return Outcome(
            action,
            impl,
            version,
            "would revert" if dry_run else "reverted",
            files,
            hunk_report(back),
        )
    if (rec.get("impl"), rec.get("version")) != (impl, version):
        raise UsageError(
            f"{root} carries the {rec.get('impl')} {rec.get('version')} patch "
            f"(see {RECORD}), not {impl} {version}"
        )
    writes: dict[str, tuple[bytes | None, bytes | None]] = {}
    for rel, before_sha, after_sha, blob in (
        (f.path, f.before_sha256, f.after_sha256, f.before_zlib_b64) for f in rec["files"]
    ):
        if rel == RECORD:
            raise InputError(root / RECORD, None, "malformed record: it lists itself")
        current = _read(root, rel)
        if _sha(current) != after_sha:
            raise InputError(
                root / rel,
                None,
                "changed since the patch was applied; "
                "refusing to revert (re-fetch the source, or revert by hand)",
            )
        try:
            before = _inflate(base64.b64decode(blob, validate=True)) if blob is not None else None
        except (ValueError, TypeError, zlib.error) as exc:
            raise InputError(
                root / RECORD, None, f"the saved original of {rel} is corrupt: {exc}"
            ) from None
        if _sha(before) != before_sha:
            raise InputError(
                root / RECORD, None, f"the saved original of {rel} does not match its sha256"
            )
        writes[rel] = (current, before)
    files = tuple(writes)
    if not dry_run:
        writes[RECORD] = (_read(root, RECORD), None)
        commit(root, writes)
        for rel, (_, before) in writes.items():
            if before is None and rel != RECORD:
                _prune_dirs(root, rel)
    return Outcome(action, impl, version, "would revert" if dry_run else "reverted", files)
