"""What an output was made from: the ``provenance.json`` of every ``--out`` set (infer,
diff, explain) and the provenance block of the HTML report, built by one function,
:func:`provenance`.

Fields (docs/provenance.md):

* ``statemine_version``; ``created_utc``: when, ISO 8601 in UTC to the second;
* ``command``: the command (``infer``, ``diff``, ``explain``, ``report``);
  ``command_line``: the command line as typed (shell-quoted, ``statemine`` first), or
  None when the library was called from Python;
* ``inputs``: per input path, its ``role`` (``A``/``B`` for a side, ``input`` for
  infer's logs, ``results`` for a report's ``--results`` table), the ``selections``
  (``LABEL=VALUE``) applied to it, and its ``kind``, ``files``, ``bytes`` and ``sha256``
  (:func:`input_digest`);
* ``options``: the reading and statistics options, field by field (``read``, ``stats``).

A digest is what ``sha256sum`` gives: of a file, the sha256 of its bytes; of a folder,
the sha256 of the ``sha256sum`` listing of the files read under it (one line per file,
``<sha256>  <path relative to the folder>``, in reading order), so
``cd traces/mobile && sha256sum runs/*/traces.parquet results.parquet | sha256sum``
reproduces the digest of a lab output folder. A trace store can hold terabytes, and its
data files are written once under unique names (docs/store.md), so its digest is of its
manifest instead: the sha256 of the listing ``<size in bytes>  <relative path>`` of its
files, sorted by path (``kind`` "store").
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shlex
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..escape import name_text

#: The file name of the provenance in every ``--out`` set.
PROVENANCE_FILE = "provenance.json"

#: What a folder's digest covers, said in the JSON beside the digests.
DIGEST_METHOD = (
    "sha256 of a file's bytes; of a folder, sha256 of the sha256sum listing "
    "('<sha256>  <relative path>' a line, in reading order) of the files read: a folder "
    "of logs its log files, a statemine lab output folder its runs' traces.parquet and "
    "its results table; of a trace store, sha256 of its manifest ('<size>  <relative "
    "path>' a line for every file, sorted by path)"
)


#: Option fields left out of the record: they change how a run looks, not what it computes.
UNRECORDED = frozenset({"progress"})


@dataclasses.dataclass(frozen=True)
class Input:
    """One input path of a command, its role (``A``, ``B``, ``input``, ``results``) and
    the ``LABEL=VALUE`` selections applied to it."""

    path: str | os.PathLike
    role: str = "input"
    selections: Sequence[str] = ()


def provenance(
    command: str,
    inputs: Sequence[Input],
    *,
    command_line: Sequence[str] | None = None,
    options: Mapping[str, object] | None = None,
    now: datetime | None = None,
    digests: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The provenance of one run of ``command`` on ``inputs`` (see the module text).

    ``command_line``: the arguments after ``statemine`` (None from Python); ``options``:
    name -> a dataclass instance (``{"read": ReadOptions(...), "stats": CompareOptions(...)}``)
    whose fields are recorded; ``now``: the time to record (default: the clock, in UTC);
    ``digests``: ``str(path)`` -> its :func:`input_digest`, for inputs whose digest was
    computed already (e.g. beside the reading, :func:`input_digests`)."""
    from .. import __version__

    when = (now or datetime.now(UTC)).astimezone(UTC)
    return {
        "statemine_version": __version__,
        "created_utc": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": command,
        "command_line": None
        if command_line is None
        else name_text(shlex.join(["statemine", *map(str, command_line)])),
        "inputs": [
            {
                "role": item.role,
                "path": name_text(str(item.path)),
                "selections": list(item.selections),
                **(
                    digests[str(item.path)]
                    if digests is not None and str(item.path) in digests
                    else input_digest(item.path)
                ),
            }
            for item in inputs
        ],
        "digest_method": DIGEST_METHOD,
        "options": {name: _fields(opts) for name, opts in (options or {}).items()},
    }


def provenance_json(record: Mapping[str, Any]) -> str:
    """``record`` as the text of provenance.json (indented, keys in their order)."""
    import json

    return json.dumps(record, indent=2, ensure_ascii=False) + "\n"


#: Per file, its sha256 (hex) and size in bytes taken while it was read, by
#: ``os.path.abspath(path)`` (:meth:`statemine.parse.lines.ReadDigests.records`).
Known = Mapping[str, tuple[str, int]]


def input_digests(
    paths: Sequence[str | os.PathLike], known: Known | None = None
) -> dict[str, dict[str, Any]]:
    """``str(path)`` -> :func:`input_digest` of each path (for :func:`provenance`'s
    ``digests``, e.g. computed on another thread while the inputs are read); ``known``:
    files hashed already as they were read, not read again."""
    return {str(path): input_digest(path, known) for path in paths}


def input_digest(path: str | os.PathLike, known: Known | None = None) -> dict[str, Any]:
    """``kind`` (file, folder or store), ``files``, ``bytes`` and ``sha256`` of one input
    path (the module text says what a folder's and a store's digest cover); ``known``: the
    files' digests taken as they were read (:data:`Known`), used instead of reading them.
    Raises the reader's :class:`~statemine.errors.InputError` for a path it cannot read."""
    from ..store_meta import is_store

    top = Path(path)
    if not top.is_dir():
        digest, size = _file_sha256(top, known)
        return {"kind": "file", "files": 1, "bytes": size, "sha256": digest}
    store = is_store(top)
    listing, total, files = [], 0, folder_files(top)
    for file, (name, key) in zip(files, relative_names(files, top), strict=True):
        if store:  # its manifest: sizes and names, not contents
            size = file.stat().st_size
            listing.append(f"{size}  {name}\n")
        else:
            digest, size = _file_sha256(file, known, key)
            listing.append(f"{digest}  {name}\n")
        total += size
    # a name's bytes as they are, as sha256sum lists them (not UTF-8 where the name is not)
    sha = hashlib.sha256("".join(listing).encode("utf-8", "surrogateescape")).hexdigest()
    kind = "store" if store else "folder"
    return {"kind": kind, "files": len(files), "bytes": total, "sha256": sha}


def folder_files(top: Path) -> list[Path]:
    """The files of folder ``top`` a digest covers, in reading order: a trace store's
    every file (sorted by relative path, hidden ones left out), else the files the
    readers read (:func:`statemine.parse.expand_paths`) and, in a ``statemine lab``
    output folder, the results table (results.parquet, else results.csv)."""
    from ..parse import expand_paths, is_lab_output
    from ..store_meta import is_store

    if is_store(top):
        return sorted(
            (
                Path(root) / name
                for root, dirs, names in os.walk(top)
                for name in names
                if not name.startswith(".") and Path(root, name).is_file()
            ),
            key=lambda p: p.relative_to(top).as_posix(),
        )
    files = expand_paths(top)
    if is_lab_output(top):
        tables = [top / n for n in ("results.parquet", "results.csv") if (top / n).is_file()]
        files += tables[:1]
    return files


def relative_names(files: Sequence[str | os.PathLike[str]], top: Path) -> list[tuple[str, str]]:
    """Each of ``files`` (in folder ``top``) as ``(name, absolute)``: its path relative to
    ``top`` with ``/`` separators and ``os.path.abspath`` of it, equal to what
    ``os.path.relpath(file, top)`` and ``os.path.abspath(file)`` give, found by cutting
    ``top``'s text off where it is a plain prefix (each call of those costs microseconds;
    a folder may hold 1e5 files). Other paths are asked of ``os.path``."""
    base = str(top)
    head = "" if base == "." else base if base.endswith(os.sep) else base + os.sep
    absolute_top = os.path.abspath(top)
    out = []
    for file in files:
        text = os.fspath(file)
        rest = text[len(head) :]
        if text.startswith(head) and _plain(rest):
            name, absolute = rest, os.path.join(absolute_top, rest)
        else:
            name, absolute = os.path.relpath(file, top), os.path.abspath(file)
        out.append((name.replace(os.sep, "/"), absolute))
    return out


def _plain(rest: str) -> bool:
    """Whether a relative path's text needs no normalizing: not empty, no empty component
    and none beginning with a dot (so no ``.`` or ``..``; hidden names are asked of
    ``os.path`` too)."""
    sep = os.sep
    return (
        bool(rest)
        and not rest.startswith(sep)
        and not rest.endswith(sep)
        and sep + sep not in rest
        and not rest.startswith(".")
        and sep + "." not in rest
        and (os.altsep is None or os.altsep not in rest)
    )


def _file_sha256(path: Path, known: Known | None = None, key: str | None = None) -> tuple[str, int]:
    """The sha256 (hex) and size in bytes of one file (from ``known`` when it is there,
    by ``key``: ``os.path.abspath(path)`` when None); an unreadable file is an InputError."""
    from ..errors import InputError

    if known:
        taken = known.get(os.path.abspath(path) if key is None else key)
        if taken is not None:
            return taken
    try:
        with open(path, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
            return digest, os.fstat(f.fileno()).st_size
    except OSError as exc:
        raise InputError(path, None, f"cannot read it: {exc.strerror or exc}") from None


def _fields(options: object) -> dict[str, Any]:
    """A dataclass's fields as JSON values (tuples as lists, paths and others as text)."""
    out: dict[str, Any] = {}
    for field in dataclasses.fields(options):  # type: ignore[arg-type]  # a dataclass instance
        if field.name in UNRECORDED:
            continue
        value = getattr(options, field.name)
        if isinstance(value, tuple):
            value = [v if isinstance(v, (str, int, float, bool)) else str(v) for v in value]
        elif value is not None and not isinstance(value, (str, int, float, bool)):
            value = str(value)
        out[field.name] = value
    return out


__all__ = [
    "DIGEST_METHOD",
    "PROVENANCE_FILE",
    "Input",
    "folder_files",
    "input_digest",
    "provenance",
    "provenance_json",
]
