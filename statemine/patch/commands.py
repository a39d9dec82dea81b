"""The ``statemine patch`` commands that take more than one step, as one library call each
(``list``, ``apply``, ``check`` and ``revert`` are :func:`~statemine.patch.list_patches`,
:func:`~statemine.patch.apply`, :func:`~statemine.patch.check`, :func:`~statemine.patch.revert`):

* :func:`fetch_source` -- ``statemine patch fetch --impl I --version V DIR``
* :func:`port_tree` -- ``statemine patch port --impl I --from A --to B DIR``

Nothing is printed here; every file the command writes is written here.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from .apply import SOURCE_RECORD
from .fetch import fetch, pristine
from .port import MAX_OFFSET, PortFailed, PortReport, port
from .registry import load_impl


@dataclass(frozen=True)
class Fetched:
    """Where :func:`fetch_source` put the source: ``root``, ``import_path`` (the
    folder to put on PYTHONPATH to import it; None for a stack that is not Python) and
    ``pinned`` (the archive was checked against a digest pinned in ``digests.toml``;
    False: the version has none, only the registry's own checks applied)."""

    root: Path
    import_path: Path | None
    pinned: bool


def fetch_source(
    impl: str, version: str, directory: str | os.PathLike, patches: str | os.PathLike | None = None
) -> Fetched:
    """``statemine patch fetch``: the pristine source of ``impl`` ``version`` from its
    package registry into ``directory`` (:func:`statemine.patch.fetch`)."""
    root = fetch(impl, version, Path(directory), None if patches is None else Path(patches))
    python_path = load_impl(impl, None if patches is None else Path(patches)).python_path
    pinned = json.loads((root / SOURCE_RECORD).read_text(encoding="utf-8"))["pinned"]
    return Fetched(
        root=root, import_path=root / python_path if python_path else None, pinned=pinned
    )


def port_tree(
    impl: str,
    from_version: str,
    to_version: str,
    directory: str | os.PathLike,
    *,
    fuzz: int = 2,
    max_offset: int = MAX_OFFSET,
    from_source: str | os.PathLike | None = None,
    rejects: str | os.PathLike | None = None,
    dry_run: bool = False,
    patches: str | os.PathLike | None = None,
) -> PortReport:
    """``statemine patch port``: :func:`statemine.patch.port` of the ``from_version`` patch
    onto the ``to_version`` tree ``directory``, reading which function each hunk is in from
    ``from_source`` (default: the pristine ``from_version`` source, fetched into the cache).
    When a hunk does not fit, nothing is changed, the hunks that need a human are written to
    ``rejects`` (a unified diff; atomically) when given, and :class:`PortFailed` is raised."""
    pat = None if patches is None else Path(patches)
    old = Path(from_source) if from_source is not None else pristine(impl, from_version, pat)
    try:
        return port(
            impl,
            from_version,
            to_version,
            Path(directory),
            fuzz=fuzz,
            dry_run=dry_run,
            patches=pat,
            old_root=old,
            max_offset=max_offset,
        )
    except PortFailed as exc:
        if rejects is not None:
            from ..fileio import write_atomic

            write_atomic(rejects, exc.report.rejects.encode("utf-8"))
        raise
