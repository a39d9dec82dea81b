"""Which instrument patches exist: ``instrument-patches/<impl>/<version>/statemine.patch``.

The patches directory is ``$STATEMINE_PATCHES`` when set, else ``instrument-patches/``
at the root of the statemine checkout (see ``instrument-patches/README.md``).
"""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import InputError, StatemineError, UsageError
from .unified_diff import check_relpath, read_patch

PATCH_FILE = "statemine.patch"
#: Beside impl.toml: the digest pinned for each supported version's archive.
DIGESTS_FILE = "digests.toml"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_GO_H1 = re.compile(r"^h1:[A-Za-z0-9+/]{43}=$")
_FETCH_KINDS = {"pypi-sdist": "package", "go-module": "module", "crates-io": "crate"}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
#: A PyPI project name (PEP 508) and a Go module path: what impl.toml may name.
_PACKAGE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")
_MODULE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._~-]*(/[A-Za-z0-9._~-]+)*$")
#: A crates.io crate name (ASCII letters, digits, ``-`` and ``_``, at most 64).
_CRATE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
#: The keys an impl.toml may have.
_KEYS = ("name", "fetch", "package", "module", "crate", "python_path")


@dataclass(frozen=True)
class Impl:
    """An implementation's ``impl.toml``: how to fetch it.

    ``fetch`` is ``"pypi-sdist"`` (``package`` is the PyPI project), ``"go-module"``
    (``module`` is the Go module path) or ``"crates-io"`` (``crate`` is the crate's name);
    ``python_path`` is the directory under the source root to put on ``PYTHONPATH``
    (``""`` when not a Python package).
    """

    name: str
    fetch: str
    package: str = ""
    module: str = ""
    crate: str = ""
    python_path: str = ""


def cache_dir() -> Path:
    """``$STATEMINE_CACHE`` or ``~/.cache/statemine`` (created on use)."""
    return Path(os.environ.get("STATEMINE_CACHE") or Path.home() / ".cache" / "statemine")


def patches_root(root: str | Path | None = None) -> Path:
    """The patches directory: ``root``, else ``$STATEMINE_PATCHES``, else the shipped one
    (:func:`statemine.resources.data_dir`)."""
    if root is not None:
        return Path(root)
    env = os.environ.get("STATEMINE_PATCHES")
    if env:
        return Path(env)
    from ..resources import data_dir

    return data_dir("instrument-patches")


def checked_name(kind: str, value: str) -> str:
    """``value`` when it is a safe implementation or version name (one path component,
    no leading dot or dash), else :class:`UsageError`."""
    if not _NAME.match(value):
        raise UsageError(f"invalid {kind} {value!r}")
    return value


def inside(base: Path, path: Path) -> Path:
    """``path`` when it resolves inside ``base`` (symlinks followed), else
    :class:`InputError` naming it: a user's patches folder must not lead elsewhere."""
    real = path.resolve()
    if not real.is_relative_to(base.resolve()):
        raise InputError(
            path,
            None,
            f"leads outside the patches folder {base} (a symlink to {real}); refusing to read it",
        )
    return path


def _checked_key(path: Path, key: str, value: object, pattern: re.Pattern | None) -> str:
    """impl.toml's ``key``: a string matching ``pattern`` (a safe relative path when
    ``pattern`` is None); :class:`InputError` naming the file and key otherwise."""
    if not isinstance(value, str):
        raise InputError(path, None, f"{key} must be a string, not {value!r}")
    if pattern is None:
        if value:
            try:
                check_relpath(value, path, None)
            except InputError as exc:
                raise InputError(path, None, f"{key}: {exc.reason}") from None
    elif not pattern.match(value):
        raise InputError(path, None, f"{key} {value!r} is not a valid name")
    return value


def implementations(root: str | Path | None = None) -> list[str]:
    """Names of the implementations that have an ``impl.toml``, sorted."""
    base = patches_root(root)
    return sorted(p.parent.name for p in base.glob("*/impl.toml"))


def load_impl(name: str, root: str | Path | None = None) -> Impl:
    """Read and check ``<root>/<name>/impl.toml``."""
    checked_name("implementation", name)
    base = patches_root(root)
    path = base / name / "impl.toml"
    if not path.is_file():
        known = ", ".join(implementations(root)) or "none"
        raise UsageError(f"unknown implementation {name!r} (known: {known})")
    inside(base, path)
    try:
        if path.stat().st_size > 1 << 16:
            raise InputError(path, None, "larger than 64 KiB: not an impl.toml")
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(path, None, f"bad impl.toml: {exc}") from None
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        raise InputError(path, None, f"unknown keys {unknown} (known: {list(_KEYS)})")
    fetch = data.get("fetch")
    if fetch not in _FETCH_KINDS:
        raise InputError(path, None, f"fetch must be one of {sorted(_FETCH_KINDS)}, not {fetch!r}")
    key = _FETCH_KINDS[fetch]
    if not isinstance(data.get(key), str) or not data[key]:
        raise InputError(path, None, f"fetch = {fetch!r} needs a {key!r} string")
    fields = {
        k: _checked_key(path, k, data.get(k, ""), pattern)
        for k, pattern in (
            ("package", _PACKAGE),
            ("module", _MODULE),
            ("crate", _CRATE),
            ("python_path", None),
        )
        if k in data or k == "python_path"
    }
    if "name" in data and data["name"] != name:
        raise InputError(path, None, f"name {data['name']!r} is not the folder's name {name!r}")
    return Impl(name=name, fetch=fetch, **fields)


def versions(impl: str, root: str | Path | None = None) -> list[str]:
    """The versions of ``impl`` that have a patch, in directory-name order."""
    load_impl(impl, root)
    base = patches_root(root) / impl
    return sorted(p.parent.name for p in base.glob(f"*/{PATCH_FILE}"))


def patch_path(impl: str, version: str, root: str | Path | None = None) -> Path:
    """The patch file of ``impl`` ``version``; :class:`UsageError` when there is none."""
    checked_name("version", version)
    path = patches_root(root) / impl / version / PATCH_FILE
    if not path.is_file():
        have = ", ".join(versions(impl, root)) or "none"
        raise UsageError(f"no patch for {impl} {version} (patched versions: {have})")
    return inside(patches_root(root), path)


def digests_path(impl: str, root: str | Path | None = None) -> Path:
    """``<patches>/<impl>/digests.toml`` (it may be absent)."""
    return patches_root(root) / checked_name("implementation", impl) / DIGESTS_FILE


def pinned_digest(impl: str, version: str, root: str | Path | None = None) -> str | None:
    """The digest ``digests.toml`` pins for ``impl`` ``version``'s archive (a hex sha256 of
    the sdist or ``.crate``; ``h1:...`` for a Go module), or None when it pins none.

    The file is checked when read (a ``--patches`` folder is untrusted): one
    ``[sha256]`` table (or ``[go_sum]`` for a Go module) mapping version names to digests;
    :class:`InputError` naming the file otherwise.
    """
    checked_name("version", version)
    path = digests_path(impl, root)
    if not path.is_file():
        return None
    inside(patches_root(root), path)
    try:
        if path.stat().st_size > 1 << 16:
            raise InputError(path, None, "larger than 64 KiB: not a digests.toml")
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(path, None, f"bad digests.toml: {exc}") from None
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    tables = {"sha256": _HEX64, "go_sum": _GO_H1}
    unknown = sorted(set(data) - set(tables))
    if unknown or len(data) != 1 or not isinstance(next(iter(data.values())), dict):
        raise InputError(path, None, f"needs exactly one table of {sorted(tables)}, not {unknown}")
    ((kind, table),) = data.items()
    for key, value in table.items():
        if not _NAME.match(key):
            raise InputError(path, None, f"{kind}: invalid version {key!r}")
        if not isinstance(value, str) or not tables[kind].match(value):
            raise InputError(path, None, f"{kind}.{key}: {value!r} is not a {kind} digest")
    found = table.get(version)
    return None if found is None else str(found)


def check_digest(path: Path, want: str, pins: Path, what: str = "") -> str:
    """``path``'s sha256 when it is ``want`` (the digest ``pins`` holds), else a one-line
    :class:`StatemineError` naming the file."""
    got = sha256_file(path)
    if got != want:
        raise StatemineError(
            f"{what or path}: sha256 {got} is not the {want} pinned in {pins}; "
            "refusing to use it (remove it to download it again)"
        )
    return got


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def list_patches(root: str | Path | None = None) -> pd.DataFrame:
    """One row per file each patch touches, sorted by implementation and version.

    Columns: ``impl``, ``version``, ``file`` (path under the source root), ``new``
    (the patch adds the file), ``lines_added``, ``lines_removed``, ``patch`` (its path).
    """
    rows = []
    for impl in implementations(root):
        for version in versions(impl, root):
            path = patch_path(impl, version, root)
            for fp in read_patch(path):
                rows.append(
                    {
                        "impl": impl,
                        "version": version,
                        "file": fp.path,
                        "new": fp.created,
                        "lines_added": sum(h.added for h in fp.hunks),
                        "lines_removed": sum(h.removed for h in fp.hunks),
                        "patch": str(path),
                    }
                )
    cols = ["impl", "version", "file", "new", "lines_added", "lines_removed", "patch"]
    return pd.DataFrame(rows, columns=cols).astype(
        {"new": "bool", "lines_added": "int64", "lines_removed": "int64"}
    )
