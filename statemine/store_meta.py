"""Whether a folder is a trace store: the name of a store's metadata file and the test,
without loading :mod:`statemine.store` (pyarrow's dataset code and 60 KB of source), so
``infer`` and the provenance tell a store from a folder of logs at no cost."""

from __future__ import annotations

import os
from pathlib import Path

#: The store's own metadata file (a leading ``_``: readers of the dataset skip it).
META_NAME = "_statemine_store.json"


def is_store(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder holding a store's metadata file."""
    return (Path(path) / META_NAME).is_file()
