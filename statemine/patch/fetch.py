"""Fetch an implementation version's pristine source from its package registry.

* ``go-module``: ``go mod download -json <module>@<version>`` (module cache under the
  statemine cache, ``GOFLAGS=-modcacherw``), then the module root is copied into DIR.
* ``crates-io``: the ``.crate`` archive that ``cargo fetch`` downloads and checks
  (:mod:`statemine.patch.cargo`); its top directory becomes DIR.
* ``pypi-sdist``: ``pip download --no-deps --no-binary :all: <package>==<version>``; the
  sdist's top directory becomes DIR. Its C extensions are built from that sdist with
  ``pip wheel --no-deps`` (pip's isolated build: needs a C compiler, and OpenSSL headers
  for aioquic < 1.0) and the compiled ``*.so`` files copied next to the sources, so
  ``PYTHONPATH=DIR/<python_path>`` imports the package. Patches touch only ``.py`` files.

Downloads and builds are cached under ``$STATEMINE_CACHE`` (default
``~/.cache/statemine``). DIR must be absent or empty; on failure it is left as it was.
``DIR/.statemine-source.json`` records ``impl``, ``version``, ``source``, ``sha256``
(of the downloaded archive) and, for Python, ``python_path`` and the built extensions.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from ..errors import StatemineError, UsageError
from .apply import SOURCE_RECORD, safe_target
from .cargo import crate_archive, crate_record
from .registry import Impl, cache_dir, checked_name, load_impl, sha256_file
from .unified_diff import check_relpath


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run ``cmd``; its stdout, or a :class:`StatemineError` quoting the end of stderr."""
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    except FileNotFoundError:
        raise StatemineError(
            f"`{cmd[0]}` not found: it is needed to fetch this implementation"
        ) from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-8:])
        raise StatemineError(f"`{' '.join(cmd)}` failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout


def _make_writable(root: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | stat.S_IWUSR)
    root.chmod(root.stat().st_mode | stat.S_IWUSR)


def _go_download(impl: Impl, version: str) -> dict:
    """``go mod download -json`` of ``impl.module@version`` into the cache: its JSON."""
    cache = cache_dir() / "gomod"
    cache.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GOMODCACHE": str(cache), "GOFLAGS": "-modcacherw", "GO111MODULE": "on"}
    out = _run(["go", "mod", "download", "-json", f"{impl.module}@{version}"], cwd=cache, env=env)
    info = json.loads(out)
    if info.get("Error"):
        raise StatemineError(f"go mod download {impl.module}@{version}: {info['Error']}")
    return info


def _fetch_go(impl: Impl, version: str, work: Path) -> dict:
    """Copy the module root of ``impl.module@version`` into ``work``."""
    info = _go_download(impl, version)
    shutil.copytree(info["Dir"], work, dirs_exist_ok=True, symlinks=True)
    _make_writable(work)
    return {
        "source": f"go:{impl.module}@{info['Version']}",
        "sha256": sha256_file(info["Zip"]),
        "go_sum": info.get("Sum", ""),
    }


def _pip_cache(impl: Impl, version: str) -> Path:
    d = cache_dir() / "pypi" / impl.package / version
    d.mkdir(parents=True, exist_ok=True)
    return d


def _one(paths: list[Path], what: str) -> Path:
    if len(paths) != 1:
        raise StatemineError(f"expected one {what}, found {[p.name for p in paths]}")
    return paths[0]


def _cached(d: Path, pattern: str, what: str, produce: Callable[[Path], object]) -> Path:
    """The one file matching ``pattern`` in the cache directory ``d``; when there is none,
    ``produce(tmp)`` writes it into a private temp dir first and it is moved in, so that
    concurrent fetches never see a partial file."""
    found = sorted(d.glob(pattern))
    if not found:
        tmp = Path(tempfile.mkdtemp(dir=d, prefix=".tmp-"))
        try:
            produce(tmp)
            made = _one(sorted(tmp.glob(pattern)), what)
            os.replace(made, d / made.name)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        found = sorted(d.glob(pattern))
    return _one(found, f"{what} in {d}")


def _sdist(impl: Impl, version: str) -> Path:
    """The sdist of ``impl.package`` ``version`` (cached)."""
    return _cached(
        _pip_cache(impl, version),
        "*.tar.gz",
        f"sdist of {impl.package} {version}",
        lambda tmp: _run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--disable-pip-version-check",
                f"{impl.package}=={version}",
                "-d",
                str(tmp),
            ],
            cwd=tmp,
        ),
    )


def _built_wheel(impl: Impl, version: str, sdist: Path) -> Path:
    """A wheel built from ``sdist`` for this interpreter (cached per platform tag)."""
    tag = f"{sys.implementation.cache_tag}-{sysconfig.get_platform()}"
    d = _pip_cache(impl, version) / "wheel" / tag
    d.mkdir(parents=True, exist_ok=True)
    return _cached(
        d,
        "*.whl",
        f"wheel built from {sdist.name}",
        lambda tmp: _run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--disable-pip-version-check",
                "-w",
                str(tmp),
                str(sdist),
            ],
            cwd=tmp,
        ),
    )


def _unpack_sdist(sdist: Path, work: Path) -> None:
    """The sdist's top directory's entries, moved into ``work``."""
    unpack = work / ".statemine-unpack"
    with tarfile.open(sdist) as tf:
        tf.extractall(unpack, filter="data")
    top = _one([p for p in unpack.iterdir() if p.is_dir()], f"top directory in {sdist.name}")
    for entry in top.iterdir():
        os.replace(entry, work / entry.name)
    shutil.rmtree(unpack)


def _fetch_crate(impl: Impl, version: str, work: Path) -> dict:
    """Unpack the crate archive's top directory into ``work``."""
    archive = crate_archive(impl, version)
    record = crate_record(impl, version, archive)
    _unpack_sdist(archive, work)
    return record


def _fetch_pypi(impl: Impl, version: str, work: Path) -> dict:
    """Unpack the sdist's top directory into ``work`` and add the compiled extensions."""
    sdist = _sdist(impl, version)
    _unpack_sdist(sdist, work)
    wheel = _built_wheel(impl, version, sdist)
    built = []
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if name.endswith((".so", ".pyd")) and "/" in name:
                rel = check_relpath(name, wheel, None)
                # no symlink below DEST (the sdist's own ones included) is followed
                target = safe_target(work, f"{impl.python_path}/{rel}" if impl.python_path else rel)
                if not target.parent.is_dir():
                    raise StatemineError(
                        f"{wheel.name}: {name} has no source directory in the sdist"
                    )
                target.write_bytes(zf.read(name))
                built.append(str(target.relative_to(work)))
    return {
        "source": f"pypi:{impl.package}=={version} {sdist.name}",
        "sha256": sha256_file(sdist),
        "python_path": impl.python_path,
        "built": sorted(built),
        "wheel": wheel.name,
    }


def fetch(impl: str, version: str, dest: str | Path, patches: str | Path | None = None) -> Path:
    """Fetch the pristine source of ``impl`` ``version`` into ``dest``; returns ``dest``.

    ``dest`` must not exist or be an empty directory. Raises :class:`UsageError` for an
    unknown implementation or a non-empty ``dest`` and :class:`StatemineError` when the
    registry tool fails (its message is quoted).
    """
    info = load_impl(impl, patches)
    checked_name("version", version)
    root = Path(dest)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise UsageError(f"{dest}: exists and is not an empty directory")
    created = not root.exists()
    root.mkdir(parents=True, exist_ok=True)
    try:
        fetcher = {"go-module": _fetch_go, "crates-io": _fetch_crate}.get(info.fetch, _fetch_pypi)
        meta = fetcher(info, version, root)
        record = {"impl": impl, "version": version, **meta}
        (root / SOURCE_RECORD).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    except BaseException:
        if created:
            shutil.rmtree(root, ignore_errors=True)
        else:
            for entry in root.iterdir():
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink()
        raise
    return root


def pristine(impl: str, version: str, patches: str | Path | None = None) -> Path:
    """A read-only view of the pristine source of ``impl`` ``version`` (what ``port``
    reads to know which function each hunk was in): the Go module cache's copy, or the
    sdist or crate unpacked once under the cache (no extension built)."""
    info = load_impl(impl, patches)
    checked_name("version", version)
    if info.fetch == "go-module":
        return Path(_go_download(info, version)["Dir"])
    d = cache_dir() / "pristine" / impl / version
    if not d.is_dir():
        sdist = crate_archive(info, version) if info.fetch == "crates-io" else _sdist(info, version)
        d.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=d.parent, prefix=".tmp-"))
        try:
            _unpack_sdist(sdist, tmp)
            try:
                os.rename(tmp, d)
            except OSError:  # another process unpacked it first
                if not d.is_dir():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return d
