"""Names a package exports but imports only when first used (PEP 562), so that importing
the package (the command line does, at start) does not load numpy, pandas and friends."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(
    package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package`` (its ``__name__``),
    for ``names``: public name -> the submodule (relative to ``package``) defining it. A
    name is imported on first use and then kept in the package's namespace.

    >>> getattr_, dir_ = lazy_exports("statemine", {"load": "traces"})
    >>> getattr_("load").__module__, "load" in dir_()
    ('statemine.traces', True)
    """

    def __getattr__(name: str) -> Any:
        if name in names:
            value = getattr(import_module(f".{names[name]}", package), name)
            setattr(sys.modules[package], name, value)
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__
