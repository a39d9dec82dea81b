"""Rust crates: fetch a crate's source from crates.io through cargo, and build a small
cargo program against a patched crate, cached (the quiche patches and lab runner).

Fetch (``fetch = "crates-io"`` in impl.toml): cargo itself downloads the ``.crate``
archive, for a throw-away package that depends on exactly ``<crate> = "=<version>"``
(``cargo fetch``, which also downloads every dependency so later builds work offline).
cargo checks the archive against the registry index's checksum; statemine checks it again
against the checksum cargo wrote into that package's ``Cargo.lock`` and against the sha256
``instrument-patches/<impl>/digests.toml`` pins for that version, and keeps a copy under
``$STATEMINE_CACHE/crates/<crate>/<version>/`` (checked against the pin on every use), so
a second fetch needs no network. A version with no pinned digest is fetched through cargo
every time and never cached.

Build (:func:`build`): a cargo program whose ``Cargo.toml`` names the patched crate as
``path = "QUICHE_SRC"`` (the placeholder is replaced by the patched tree's path) is
built in release mode into ``$STATEMINE_CACHE/cargo/<impl>-<version>/<key>/<binary>``,
where ``key`` hashes the patch, the program's files, the features and ``rustc -V``. One
cargo target directory (``$STATEMINE_CACHE/cargo/target``) is shared by every build, so a
dependency built once (BoringSSL through ``boring-sys``: most of a cold build) is reused by
every quiche version that resolves to the same ``boring-sys``.

What a quiche build needs and the one-line message when it is missing
(:func:`missing_build_tools`): cargo, cmake (BoringSSL) and libclang (``bindgen`` in
``boring-sys``).
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import StatemineError, UsageError
from .registry import Impl, cache_dir, check_digest, patch_path, sha256_file

#: The placeholder of the patched crate's path in a program's Cargo.toml.
SRC_PLACEHOLDER = "QUICHE_SRC"
#: How to install each tool a build needs (Debian / Ubuntu).
_INSTALL = {
    "cargo": "install Rust with rustup (https://rustup.rs) or `apt-get install cargo`",
    "cmake": "`apt-get install cmake` (BoringSSL is built with it)",
    "libclang": "`apt-get install libclang-dev` (bindgen in boring-sys needs it)",
}


def _cargo_home() -> Path:
    return Path(os.environ.get("CARGO_HOME") or Path.home() / ".cargo")


def _has_libclang() -> bool:
    """Whether bindgen can find libclang: ``$LIBCLANG_PATH`` or the usual library dirs."""
    env = os.environ.get("LIBCLANG_PATH")
    if env and glob.glob(os.path.join(env, "libclang*.so*")):
        return True
    # the development package's unversioned library (Debian's libclang-dev; the runtime
    # package alone lacks the headers bindgen needs)
    patterns = ("/usr/lib/llvm-*/lib/libclang.so", "/usr/lib/*/libclang.so", "/usr/lib/libclang.so")
    return any(glob.glob(p) for p in patterns)


def missing_build_tools() -> list[str]:
    """The tools a quiche build needs that are not installed, each as one
    "X: how to install it" phrase (empty when all are there)."""
    missing = [t for t in ("cargo", "cmake") if shutil.which(t) is None]
    if not _has_libclang():
        missing.append("libclang")
    return [f"{t} ({_INSTALL[t]})" for t in missing]


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, what: str = "") -> str:
    """Run ``cmd``; its stdout, or a :class:`StatemineError` quoting the end of its output."""
    try:
        proc = subprocess.run(
            cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=3600, check=False
        )
    except FileNotFoundError:
        raise StatemineError(f"`{cmd[0]}` not found: {_INSTALL.get(cmd[0], '')}") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-12:])
        raise StatemineError(f"{what or ' '.join(cmd)} failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout


def _fetcher_manifest(crate: str, version: str) -> str:
    """A package that depends on exactly ``crate`` ``version`` (no default features, so
    no optional dependency is needed to resolve it)."""
    return (
        "[package]\n"
        'name = "statemine-fetch"\n'
        'version = "0.0.0"\n'
        'edition = "2021"\n'
        "publish = false\n\n"
        "[dependencies]\n"
        f'{crate} = {{ version = "={version}", default-features = false }}\n\n'
        "[workspace]\n"
    )


def lock_checksum(lock_text: str, crate: str, version: str) -> str:
    """The registry checksum of ``crate`` ``version`` in a ``Cargo.lock``'s text.

    >>> lock_checksum('[[package]]\\nname = "a"\\nversion = "1.0.0"\\nchecksum = "ab"\\n', "a", "1.0.0")
    'ab'
    """
    for pkg in tomllib.loads(lock_text).get("package", []):
        if pkg.get("name") == crate and pkg.get("version") == version and pkg.get("checksum"):
            return str(pkg["checksum"])
    raise StatemineError(f"Cargo.lock names no checksum for {crate} {version}")


def _cargo_fetch(crate: str, version: str, tmp: Path) -> Path:
    """``cargo fetch`` of ``crate`` ``version`` for a throw-away package in ``tmp``; a copy
    of the ``.crate`` whose sha256 is the one cargo wrote into its ``Cargo.lock``."""
    (tmp / "src").mkdir()
    (tmp / "src" / "lib.rs").write_text("")
    (tmp / "Cargo.toml").write_text(_fetcher_manifest(crate, version))
    _run(
        ["cargo", "fetch", "--quiet"], tmp, what=f"cargo fetch of {crate} {version} from crates.io"
    )
    want = lock_checksum((tmp / "Cargo.lock").read_text(), crate, version)
    found = sorted(_cargo_home().glob(f"registry/cache/*/{crate}-{version}.crate"))
    good = [p for p in found if sha256_file(p) == want]
    if not good:
        raise StatemineError(
            f"{crate}-{version}.crate: no archive in {_cargo_home()}/registry/cache "
            f"has the registry's sha256 {want}"
        )
    copy = tmp / f"{crate}-{version}.crate"
    shutil.copyfile(good[0], copy)
    return copy


def _record(impl: Impl, version: str, archive: Path, digest: str, pinned: bool) -> dict:
    """What ``.statemine-source.json`` records of a fetched crate."""
    source = f"crates.io:{impl.crate}=={version} {archive.name}"
    return {"source": source, "sha256": digest, "pinned": pinned}


@contextmanager
def crate_archive(
    impl: Impl, version: str, pinned: str | None, pins: Path
) -> Iterator[tuple[Path, dict]]:
    """The ``.crate`` archive of ``impl.crate`` ``version`` and its source record.

    With a ``pinned`` sha256 (the one ``pins`` holds) the archive comes from the cache
    (``$STATEMINE_CACHE/crates/<crate>/<version>/``) or, the first time, through ``cargo
    fetch``, and is checked against it every time (a mismatch: one line naming the
    file). Without one, cargo fetches it on every call (checked against the registry
    index's checksum) into a temp dir, and it is never cached.
    """
    crate = impl.crate
    d = cache_dir() / "crates" / crate / version
    archive = d / f"{crate}-{version}.crate"
    if pinned is None or not archive.is_file():
        d.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=d, prefix=".tmp-"))
        try:
            fetched = _cargo_fetch(crate, version, tmp)
            if pinned is None:
                yield fetched, _record(impl, version, fetched, sha256_file(fetched), False)
                return
            check_digest(fetched, pinned, pins, f"{archive.name} as fetched by cargo")
            os.replace(fetched, archive)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    digest = check_digest(archive, pinned, pins)
    yield archive, _record(impl, version, archive, digest, True)


_KEY_PART = re.compile(r"^[A-Za-z0-9._+-]+$")


def program_files(program: Path) -> list[Path]:
    """The files of a cargo program that its build depends on (``Cargo.toml``,
    ``src/**``, ``Cargo.lock`` when present), sorted."""
    files = [program / "Cargo.toml", *sorted((program / "src").rglob("*.rs"))]
    if (program / "Cargo.lock").is_file():
        files.append(program / "Cargo.lock")
    return files


def rustc_version() -> str:
    """``rustc -V`` (part of every build key)."""
    return _run(["rustc", "-V"], Path.cwd()).strip()


def build_key(impl: str, version: str, program: Path, features: tuple[str, ...]) -> str:
    """A hash of everything a program's binary depends on: the patch of ``impl``
    ``version``, the program's files, the features and the compiler."""
    h = hashlib.sha256()
    h.update(f"{impl}\0{version}\0{','.join(features)}\0{rustc_version()}\0".encode())
    h.update(patch_path(impl, version).read_bytes())
    for f in program_files(program):
        h.update(str(f.relative_to(program)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def _manifest_for(program: Path, src: Path) -> str:
    """The program's Cargo.toml with the placeholder replaced by ``src``."""
    text = (program / "Cargo.toml").read_text(encoding="utf-8")
    if text.count(f'"{SRC_PLACEHOLDER}"') != 1:
        raise UsageError(f'{program / "Cargo.toml"}: needs path = "{SRC_PLACEHOLDER}" once')
    if any(c in str(src) for c in '"\\\n'):
        raise UsageError(f"{src}: a path with quotes or backslashes cannot go into Cargo.toml")
    return text.replace(f'"{SRC_PLACEHOLDER}"', f'"{src}"')


def forget_other_tree(target: Path, crate: str, src: Path) -> None:
    """Make cargo compile ``crate`` again when the last build in ``target`` compiled it
    from another tree than ``src`` (call under the build lock).

    quiche's crate types include ``staticlib`` and ``cdylib``, so cargo names its outputs
    without a hash (``release/deps/libquiche.rlib``): every patched tree of every version
    writes the same file while each tree's fingerprint stays "fresh", and a program built
    against a tree compiled before, but not last, would link another tree's code. Deleting
    the crate's fingerprints makes cargo rebuild it (about a minute; its dependencies,
    BoringSSL among them, are kept). ``target/.statemine-last-<crate>`` names the tree
    compiled last.
    """
    marker = target / f".statemine-last-{crate}"
    last = marker.read_text(encoding="utf-8") if marker.is_file() else ""
    if last != str(src):
        for fp in (target / "release" / ".fingerprint").glob(f"{crate}-*"):
            shutil.rmtree(fp, ignore_errors=True)
        marker.write_text(str(src), encoding="utf-8")


def build(
    impl: str,
    version: str,
    src: Path,
    program: Path,
    binary: str,
    features: tuple[str, ...] = (),
) -> Path:
    """The release binary ``binary`` of the cargo ``program`` built against the patched
    tree ``src`` of ``impl`` ``version``; built once per build key and cached.

    Raises :class:`StatemineError` naming what is missing (cargo, cmake, libclang) and how
    to install it, or quoting cargo's error.
    """
    for part in (impl, version, binary):
        if not _KEY_PART.match(part):
            raise UsageError(f"invalid name {part!r}")
    key = build_key(impl, version, program, features)
    out = cache_dir() / "cargo" / f"{impl}-{version}" / key / binary
    if out.is_file():
        return out
    missing = missing_build_tools()
    if missing:
        raise StatemineError(f"cannot build {impl} {version}: missing " + "; ".join(missing))
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=out.parent))
    try:
        shutil.copytree(program / "src", work / "src")
        (work / "Cargo.toml").write_text(_manifest_for(program, src.resolve()), encoding="utf-8")
        if (program / "Cargo.lock").is_file():
            shutil.copyfile(program / "Cargo.lock", work / "Cargo.lock")
        cmd = ["cargo", "build", "--release", "--quiet", "--bin", binary]
        if features:
            cmd += ["--features", ",".join(features)]
        target = cache_dir() / "cargo" / "target"
        target.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "CARGO_TARGET_DIR": str(target)}
        # one build at a time in the shared target dir: another build of the same
        # program must not replace target/release/<binary> before it is copied out
        with open(target.parent / "build.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            forget_other_tree(target, impl, src.resolve())
            _run(cmd, work, env=env, what=f"cargo build of {binary} against {impl} {version}")
            shutil.copy2(target / "release" / binary, work / binary)
        os.replace(work / binary, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out
