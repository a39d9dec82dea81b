"""Data folders statemine ships: the instrument patches, the example scenarios.

In the repository they are top-level folders (``instrument-patches/``,
``examples/scenarios/``), where the layout puts them. The build copies each into the
package as ``statemine/_data/<folder>`` (``setup.py``, :data:`DATA_DIRS` there: adding a
folder is one line), so a wheel carries them; :func:`data_dir` finds them with
:mod:`importlib.resources`. Running from a checkout (an editable install or ``python3 -m
statemine`` in place) there is no copy and the checkout's own folder is used, so an edit
there takes effect at once.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from .errors import StatemineError

#: The folder inside the package that holds the shipped data folders.
PACKAGED = "_data"


def data_dir(name: str, package: str = "statemine") -> Path:
    """The shipped folder ``name`` (its path in the repository, e.g. ``"instrument-patches"``
    or ``"examples/scenarios"``) of ``package``: the packaged copy in an installed wheel,
    else the checkout's folder. :class:`StatemineError` when neither exists (a broken install).

    >>> data_dir("examples/scenarios").joinpath("mobile.toml").is_file()
    True
    """
    # statemine is a regular package on disk (it has a C extension, so it is never
    # imported from a zip): its resources are real paths
    root = Path(str(files(package)))
    for candidate in (root / PACKAGED / name, root.parent / name):
        if candidate.is_dir():
            return candidate
    raise StatemineError(
        f"{package}'s {name}/ folder is missing: neither in the installed package "
        f"({root / PACKAGED}) nor beside it in a checkout; reinstall {package}"
    )
