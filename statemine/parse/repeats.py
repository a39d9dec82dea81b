"""The same trace met twice among a read's inputs (issue 25, item 3).

Lab output folders are content-addressed: a run's id (``runs/<run_id>/``) is a hash of its
config, so two folders may ship the same run (``traces/quic-go-versions`` and
``traces/quiche-jitter`` both hold the quic-go jitter runs). :func:`drop_repeated_runs`
reads such a run once and says where it was found twice; two *different* runs under one
id, and any other trace id given twice (:func:`refuse_shared_ids`), are refused in one
line naming both files, since the statistics count each trace id once.

A run's content is its raw log (``run.log.gz``, decompressed: what the stack wrote); its
``config.json`` (absolute paths), ``result.json`` (wall time) and ``traces.parquet`` (the
labels of the scenario it was run for) legitimately differ between copies. A run folder
without its log is compared by its ``traces.parquet`` bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ..errors import InputError

if TYPE_CHECKING:
    from ..traces import TraceSet

#: The file of a lab run folder that :func:`statemine.parse.expand_paths` lists.
RUN_TRACES = "traces.parquet"
#: The run's raw log, whose content identifies the run.
RUN_LOG = "run.log.gz"
#: A listed file: a path, or its string (:func:`statemine.parse.expand_files`).
P = TypeVar("P", str, Path)


def run_id_of(path: str | Path) -> str | None:
    """The run id of a lab run's ``runs/<run_id>/traces.parquet``, else None."""
    text = os.fspath(path)
    if not text.endswith(RUN_TRACES):  # most files: no Path made
        return None
    if "//" not in text and "/." not in text:  # then split as Path splits it
        parts = text.split("/")[-3:]
        if len(parts) == 3 and parts[2] == RUN_TRACES and parts[0] == "runs" and parts[1]:
            return parts[1]
    path = Path(path)
    if path.name != RUN_TRACES or path.parent.parent.name != "runs":
        return None
    return path.parent.name


def run_digest(run_dir: Path) -> str:
    """sha256 of the run's decompressed log (of ``traces.parquet`` when it has no log).

    Raises :class:`InputError` naming the file when it cannot be read."""
    log = run_dir / RUN_LOG
    digest = hashlib.sha256()
    try:
        if log.is_file():
            with gzip.open(log, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
            return "log:" + digest.hexdigest()
        with open(run_dir / RUN_TRACES, "rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
        return "parquet:" + digest.hexdigest()
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        where = log if log.exists() else run_dir / RUN_TRACES
        raise InputError(where, None, f"cannot read the run to compare it: {exc}") from None


def _may_name_a_run(files: Sequence[str | Path]) -> bool:
    """False when no path of ``files`` ends in :data:`RUN_TRACES` (one search of them
    joined, not one call a path; a newline inside a name may give a needless True)."""
    return (RUN_TRACES + "\n") in ("\n".join(map(str, files)) + "\n")


def drop_repeated_runs(files: Sequence[P]) -> tuple[list[P], list[str]]:
    """``files`` (paths or their strings) without the lab runs already listed (same run id,
    same content), and one note per pair of folders sharing runs, naming both.

    Raises :class:`InputError` naming both files when two runs share an id but differ.
    """
    if not _may_name_a_run(files):  # no lab run among them
        return list(files), []
    first: dict[str, Path] = {}
    digests: dict[Path, str] = {}
    kept: list[P] = []
    repeats: dict[tuple[Path, Path], list[str]] = {}
    for listed in files:
        rid = run_id_of(listed)
        if rid is None or rid not in first:
            if rid is not None:
                first[rid] = Path(listed)
            kept.append(listed)
            continue
        a, f = first[rid], Path(listed)
        for d in (a.parent, f.parent):
            if d not in digests:
                digests[d] = run_digest(d)
        if digests[a.parent] != digests[f.parent]:
            raise InputError(
                f,
                None,
                f"run {rid} is also in {a}, with different content (its log differs): "
                "two different runs under one id; read one of the two folders",
            )
        repeats.setdefault((a.parent.parent.parent, f.parent.parent.parent), []).append(rid)
    notes = [
        f"{len(ids)} run{'s' if len(ids) > 1 else ''} of {again} also in {once} (same run id, "
        f"same log; e.g. {ids[0]}): read once, from {once}"
        for (once, again), ids in repeats.items()
    ]
    return kept, notes


def refuse_shared_ids(sources: Sequence[Path], sets: Sequence[TraceSet]) -> None:
    """Raise :class:`InputError` naming both files when two of ``sets`` (read from
    ``sources``, one each) hold the same trace id."""
    owner: dict[str, Path] = {}
    for path, ts in zip(sources, sets, strict=True):
        for trace in ts.traces["trace"].astype(str):
            other = owner.setdefault(trace, path)
            if other != path:
                raise InputError(
                    path,
                    None,
                    f"trace {trace!r} is also in {other}: a trace id must be unique among "
                    "the inputs (the same file given twice, or two files naming different "
                    "traces alike)",
                )
