"""The optional dependencies the lab's stacks need, named with their install command.

aioquic is fetched as source (statemine/patch) and put on ``PYTHONPATH``, so its own
dependencies come from statemine's ``lab`` extra (setup.cfg). Without the extra every
aioquic run would fail with a bare ``No module named 'certifi'``; these functions name
the extra instead, before the runs (:func:`require_lab_extra`) and in a run's error
(:func:`explain_missing_module`).
"""

from __future__ import annotations

import importlib.util
import re

from ..errors import StatemineError

#: Import names of the ``lab`` extra's packages (setup.cfg: cryptography, pyOpenSSL,
#: certifi, service-identity).
LAB_MODULES = ("cryptography", "OpenSSL", "certifi", "service_identity")
#: The command that installs the extra.
LAB_INSTALL = "pip install 'statemine[lab]'"

_MISSING = re.compile(r"No module named '([A-Za-z0-9_]+)")


def missing_lab_modules() -> list[str]:
    """The modules of :data:`LAB_MODULES` this interpreter cannot import."""
    return [m for m in LAB_MODULES if importlib.util.find_spec(m) is None]


def require_lab_extra(stack: str) -> None:
    """Raise :class:`StatemineError` naming the extra and its install command when a
    module of the ``lab`` extra is missing (``stack``: who needs it, e.g. ``aioquic``)."""
    missing = missing_lab_modules()
    if missing:
        raise StatemineError(
            f"{stack} needs statemine's lab extra, which is not installed "
            f"(No module named {missing[0]!r}): {LAB_INSTALL}"
        )


def explain_missing_module(error: str) -> str:
    """``error`` with the install command added when it says a module of the ``lab``
    extra is missing (e.g. a run subprocess's ``No module named 'certifi'``)."""
    found = _MISSING.search(error)
    if found and found.group(1) in LAB_MODULES and LAB_INSTALL not in error:
        return f"{error} (statemine's lab extra is not installed: {LAB_INSTALL})"
    return error
