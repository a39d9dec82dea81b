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

Every archive is checked, downloaded or cached, against the digest
``instrument-patches/<impl>/digests.toml`` pins for the version (:func:`pinned_digest`:
the sdist's or ``.crate``'s sha256, a Go module's go.sum ``h1:`` hash of the files copied
into DIR); a mismatch is a one-line :class:`StatemineError` naming the file. A version with
no pin is downloaded afresh every time and never cached. Archives are unpacked by
:func:`statemine.patch.archive.extract_tar` (the same rules on every Python).

Downloads and builds are cached under ``$STATEMINE_CACHE`` (default
``~/.cache/statemine``); the wheel built from a checked sdist beside a record of its own
sha256 (``pypi/<package>/<version>/wheel/<tag>-<sdist sha256[:16]>/record.json``), checked
on every use. DIR must be absent or empty; on failure it is left as it was.
``DIR/.statemine-source.json`` records ``impl``, ``version``, ``source``, ``sha256`` (of
the archive), ``pinned`` and, for Python, ``python_path``, the built extensions, the
wheel and its ``wheel_sha256``; for Go, ``go_sum``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import InputError, StatemineError, UsageError
from .apply import SOURCE_RECORD, safe_target
from .archive import extract_tar
from .cargo import crate_archive
from .registry import (
    Impl,
    cache_dir,
    check_digest,
    checked_name,
    digests_path,
    load_impl,
    pinned_digest,
    sha256_file,
)
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


#: Variables that would let ``go`` skip the checksum database for some or all modules.
_GO_UNCHECKED = ("GONOSUMDB", "GOPRIVATE", "GOINSECURE")


def _go_env(cache: Path) -> dict[str, str]:
    """The environment of ``go mod download``: statemine's module cache, and the Go
    checksum database always consulted (``GOENV=off``: no ``go env -w`` setting applies;
    no variable exempting a module; ``GOSUMDB=off`` dropped)."""
    env = {k: v for k, v in os.environ.items() if k not in _GO_UNCHECKED}
    if env.get("GOSUMDB", "").strip() in ("", "off"):
        env.pop("GOSUMDB", None)
    return {
        **env,
        "GOMODCACHE": str(cache),
        "GOFLAGS": "-modcacherw",
        "GO111MODULE": "on",
        "GOENV": "off",
    }


def go_dirhash(root: Path, prefix: str) -> str:
    """The ``h1:`` hash go.sum holds for a module whose files are under ``root``, named
    ``prefix/<path>`` (``<module>@<version>``): base64 of the sha256 of the sorted lines
    ``"<hex sha256 of the file>  <name>\n"`` (the algorithm of Go's
    golang.org/x/mod/sumdb/dirhash ``Hash1``, written here from its description). A
    symbolic link is refused (a module zip holds none)."""
    lines = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            if path.is_symlink():
                raise StatemineError(f"{path}: a symbolic link in a Go module's files")
            rel = path.relative_to(root).as_posix()
            lines.append(f"{sha256_file(path)}  {prefix}/{rel}\n")
    digest = hashlib.sha256("".join(sorted(lines, key=lambda ln: ln[66:])).encode()).digest()
    return "h1:" + base64.b64encode(digest).decode("ascii")


def _go_download(impl: Impl, version: str) -> dict:
    """``go mod download -json`` of ``impl.module@version`` into the cache: its JSON."""
    cache = cache_dir() / "gomod"
    cache.mkdir(parents=True, exist_ok=True)
    env = _go_env(cache)
    out = _run(["go", "mod", "download", "-json", f"{impl.module}@{version}"], cwd=cache, env=env)
    info = json.loads(out)
    if info.get("Error"):
        raise StatemineError(f"go mod download {impl.module}@{version}: {info['Error']}")
    return info


def _fetch_go(impl: Impl, version: str, work: Path, patches: Path | None) -> dict:
    """Copy the module root of ``impl.module@version`` into ``work``; its files are checked
    against the go.sum hash ``digests.toml`` pins (a version without one relies on go's own
    check against the Go checksum database, made when the module was downloaded)."""
    info = _go_download(impl, version)
    shutil.copytree(info["Dir"], work, dirs_exist_ok=True, symlinks=True)
    _make_writable(work)
    pinned = pinned_digest(impl.name, version, patches)
    if pinned is not None:
        got = go_dirhash(work, f"{impl.module}@{version}")
        if got != pinned:
            raise StatemineError(
                f"{info['Dir']}: the module's files hash to {got}, not the {pinned} pinned in "
                f"{digests_path(impl.name, patches)}; refusing to use them (remove the "
                "module from the cache to download it again)"
            )
    return {
        "source": f"go:{impl.module}@{info['Version']}",
        "sha256": sha256_file(info["Zip"]),
        "go_sum": pinned or info.get("Sum", ""),
        "pinned": pinned is not None,
    }


def _pip_cache(impl: Impl, version: str) -> Path:
    d = cache_dir() / "pypi" / impl.package / version
    d.mkdir(parents=True, exist_ok=True)
    return d


def _one(paths: list[Path], what: str) -> Path:
    if len(paths) != 1:
        raise StatemineError(f"expected one {what}, found {[p.name for p in paths]}")
    return paths[0]


def _download_sdist(impl: Impl, version: str, into: Path) -> Path:
    """``pip download`` the sdist of ``impl.package`` ``version`` into ``into``."""
    _run(
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
            str(into),
        ],
        cwd=into,
    )
    return _one(sorted(into.glob("*.tar.gz")), f"sdist of {impl.package} {version}")


@contextmanager
def _sdist(impl: Impl, version: str, pinned: str | None, pins: Path) -> Iterator[Path]:
    """The sdist of ``impl.package`` ``version``, checked against ``pinned`` (the sha256
    ``pins`` holds): from the cache when there, else downloaded, checked, then cached
    (a private temp dir first, so concurrent fetches never see a partial file). With no
    pinned digest it is downloaded afresh into a temp dir and never cached."""
    d = _pip_cache(impl, version)
    if pinned is None:
        tmp = Path(tempfile.mkdtemp(dir=d, prefix=".tmp-"))
        try:
            yield _download_sdist(impl, version, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    if not sorted(d.glob("*.tar.gz")):
        tmp = Path(tempfile.mkdtemp(dir=d, prefix=".tmp-"))
        try:
            made = _download_sdist(impl, version, tmp)
            check_digest(made, pinned, pins, f"{made.name} as downloaded from PyPI")
            os.replace(made, d / made.name)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    sdist = _one(sorted(d.glob("*.tar.gz")), f"sdist of {impl.package} {version} in {d}")
    check_digest(sdist, pinned, pins)
    yield sdist


#: Beside a cached wheel: what it was built from and its sha256 (:func:`_recorded_wheel`).
WHEEL_RECORD = "record.json"
_WHEEL_NAME = re.compile(r"^[A-Za-z0-9._+-]+\.whl$")


def _recorded_wheel(d: Path, sdist_sha: str) -> Path:
    """The wheel cached in ``d`` when ``d/record.json`` says it was built from the sdist
    of sha256 ``sdist_sha`` and the wheel's sha256 is the recorded one; else a one-line
    :class:`StatemineError` naming the file."""
    path = d / WHEEL_RECORD
    again = f"remove {d} to build it again"
    try:
        with open(path, "rb") as f:
            rec = json.loads(f.read(1 << 16))
    except (OSError, ValueError) as exc:
        raise InputError(path, None, f"unreadable wheel record ({exc}); {again}") from None
    fields = ("sdist_sha256", "wheel", "sha256")
    if not isinstance(rec, dict) or not all(isinstance(rec.get(k), str) for k in fields):
        raise InputError(path, None, f"a wheel record needs the strings {list(fields)}; {again}")
    if not _WHEEL_NAME.match(rec["wheel"]):
        raise InputError(path, None, f"wheel {rec['wheel']!r} is not a wheel's name; {again}")
    if rec["sdist_sha256"] != sdist_sha:
        raise InputError(path, None, f"records a wheel of another sdist; {again}")
    wheel = d / rec["wheel"]
    extra = sorted(p.name for p in d.iterdir() if p.name not in (WHEEL_RECORD, wheel.name))
    if extra or not wheel.is_file() or wheel.is_symlink():
        what = f"files the record does not name: {extra}" if extra else f"no file {wheel.name}"
        raise StatemineError(f"{d}: holds {what}; {again}")
    got = sha256_file(wheel)
    if got != rec["sha256"]:
        raise StatemineError(
            f"{wheel}: sha256 {got} is not the {rec['sha256']} recorded when it was built; "
            f"refusing to use it ({again})"
        )
    return wheel


def _built_wheel(impl: Impl, version: str, sdist: Path, sdist_sha: str) -> Path:
    """A wheel built from ``sdist`` (sha256 ``sdist_sha``, checked) for this interpreter,
    cached per platform tag and sdist digest with its record (wheel and record appear
    together: a folder renamed into place)."""
    tag = f"{sys.implementation.cache_tag}-{sysconfig.get_platform()}"
    d = _pip_cache(impl, version) / "wheel" / f"{tag}-{sdist_sha[:16]}"
    if not d.is_dir():
        d.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=d.parent, prefix=".tmp-"))
        try:
            _run(
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
                # an isolated PEP 517 build for sdists without pyproject.toml (aioquic
                # 0.9.x) on every pip: Debian 12's venv pip 23.0.1 would run the legacy
                # `setup.py bdist_wheel`, which fails without the `wheel` package; pips
                # that dropped the option (26) ignore the variable
                env={**os.environ, "PIP_USE_PEP517": "1"},
            )
            made = _one(sorted(tmp.glob("*.whl")), f"wheel built from {sdist.name}")
            rec = {"sdist_sha256": sdist_sha, "wheel": made.name, "sha256": sha256_file(made)}
            (tmp / WHEEL_RECORD).write_text(json.dumps(rec, indent=1) + "\n", encoding="utf-8")
            try:
                os.rename(tmp, d)
            except OSError:  # another process built it first
                if not d.is_dir():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return _recorded_wheel(d, sdist_sha)


def _unpack_sdist(sdist: Path, work: Path) -> None:
    """The sdist's top directory's entries, moved into ``work`` (:func:`extract_tar`'s
    rules)."""
    unpack = work / ".statemine-unpack"
    extract_tar(sdist, unpack)
    top = _one(
        [p for p in unpack.iterdir() if p.is_dir() and not p.is_symlink()],
        f"top directory in {sdist.name}",
    )
    for entry in top.iterdir():
        os.replace(entry, work / entry.name)
    shutil.rmtree(unpack)


def _fetch_crate(impl: Impl, version: str, work: Path, patches: Path | None) -> dict:
    """Unpack the crate archive's top directory into ``work``."""
    pins = digests_path(impl.name, patches)
    with crate_archive(impl, version, pinned_digest(impl.name, version, patches), pins) as (
        archive,
        record,
    ):
        _unpack_sdist(archive, work)
    return record


def _fetch_pypi(impl: Impl, version: str, work: Path, patches: Path | None) -> dict:
    """Unpack the sdist's top directory into ``work`` and add the compiled extensions."""
    pinned = pinned_digest(impl.name, version, patches)
    with _sdist(impl, version, pinned, digests_path(impl.name, patches)) as sdist:
        sdist_sha = pinned or sha256_file(sdist)
        _unpack_sdist(sdist, work)
        wheel = _built_wheel(impl, version, sdist, sdist_sha)
        wheel_sha = sha256_file(wheel)
        built = []
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                if name.endswith((".so", ".pyd")) and "/" in name:
                    rel = check_relpath(name, wheel, None)
                    # no symlink below DEST (the sdist's own ones included) is followed
                    target = safe_target(
                        work, f"{impl.python_path}/{rel}" if impl.python_path else rel
                    )
                    if not target.parent.is_dir():
                        raise StatemineError(
                            f"{wheel.name}: {name} has no source directory in the sdist"
                        )
                    target.write_bytes(zf.read(name))
                    built.append(str(target.relative_to(work)))
    return {
        "source": f"pypi:{impl.package}=={version} {sdist.name}",
        "sha256": sdist_sha,
        "pinned": pinned is not None,
        "python_path": impl.python_path,
        "built": sorted(built),
        "wheel": wheel.name,
        "wheel_sha256": wheel_sha,
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
        meta = fetcher(info, version, root, None if patches is None else Path(patches))
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


@contextmanager
def _archive(info: Impl, version: str, patches: Path | None) -> Iterator[tuple[Path, str]]:
    """The checked sdist or ``.crate`` of ``info`` ``version`` and its sha256."""
    pinned = pinned_digest(info.name, version, patches)
    pins = digests_path(info.name, patches)
    if info.fetch == "crates-io":
        with crate_archive(info, version, pinned, pins) as (archive, record):
            yield archive, record["sha256"]
    else:
        with _sdist(info, version, pinned, pins) as sdist:
            yield sdist, pinned or sha256_file(sdist)


def pristine(impl: str, version: str, patches: str | Path | None = None) -> Path:
    """A read-only view of the pristine source of ``impl`` ``version`` (what ``port``
    reads to know which function each hunk was in): the Go module cache's copy, or the
    sdist or crate unpacked once under the cache per archive digest (the archive is
    checked on every call; no extension built)."""
    info = load_impl(impl, patches)
    checked_name("version", version)
    if info.fetch == "go-module":
        return Path(_go_download(info, version)["Dir"])
    root = None if patches is None else Path(patches)
    with _archive(info, version, root) as (archive, sha):
        d = cache_dir() / "pristine" / impl / f"{version}-{sha[:16]}"
        if not d.is_dir():
            d.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=d.parent, prefix=".tmp-"))
            try:
                _unpack_sdist(archive, tmp)
                try:
                    os.rename(tmp, d)
                except OSError:  # another process unpacked it first
                    if not d.is_dir():
                        raise
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    return d
