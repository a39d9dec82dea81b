"""Where the tests find third-party data: ``../shared/`` beside the repository, read in place.

Files there come from other projects (real qlog, cellular link traces, Synoptic's logs); they
are never copied into this repository. CI has the folder; elsewhere the tests that need it
skip and say why.
"""

from __future__ import annotations

from pathlib import Path

import pytest

#: ``<repository>/../shared`` (the repository is this file's grandparent).
SHARED = Path(__file__).resolve().parent.parent.parent / "shared"


def shared(*parts: str) -> Path:
    """The path of ``../shared/<parts>``, or skip the calling test with the reason.

    Call it inside a test (or a fixture), not at import time, so that a missing folder
    skips only the tests that need it.
    """
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(
            f"third-party data {path} is absent (it lives in ../shared beside the "
            "repository and is never copied into it)"
        )
    return path
