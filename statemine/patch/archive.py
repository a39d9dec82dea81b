"""Unpack a registry's tar archive (an sdist ``.tar.gz``, a ``.crate``) without trusting it.

The same rules on every Python statemine supports: tarfile's own ``filter="data"``
(PEP 706) exists only from 3.11.4 and 3.12, and Debian 12's Python is 3.11.2, so the
rules are written here (after PEP 706's ``data`` filter, not copied from it):

* member names are relative: no absolute path, no ``..`` component (``.`` and empty
  components are dropped);
* regular files and directories only, plus symbolic links whose target stays inside the
  tree and hard links to a regular file unpacked before them (written as a copy);
  devices, FIFOs and any other kind are refused;
* no member lies below a symbolic link or a file of the archive;
* file modes keep the owner's and others' read and execute bits, never setuid, setgid,
  sticky or group/other write; owner and group ids are not restored;
* at most :data:`MAX_MEMBERS` members and :data:`MAX_BYTES` bytes of file content.

Symbolic links are made last, when every file is written (so nothing is written through
one), and each is then resolved on disk: a chain of links leaving the tree is refused too.
A refusal is one :class:`~statemine.errors.StatemineError` line naming the archive and the
member, and removes everything unpacked.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tarfile
import zlib
from pathlib import Path
from typing import IO

from ..errors import StatemineError

#: The most members an archive may hold (aioquic's sdists hold ~150, quiche's crates ~300).
MAX_MEMBERS = 100_000
#: The most bytes of file content an archive may unpack to (2 GiB).
MAX_BYTES = 2 << 30
#: The mode bits a file keeps: read/write/execute of the owner, read/execute of others.
_FILE_MODE_BITS = 0o755


def member_path(name: str) -> str:
    """The relative POSIX path a member ``name`` stands for (``""`` for the top itself);
    ValueError with the reason when it is absolute or climbs with ``..``.

    >>> member_path("./pkg-1.0//src/a.py")
    'pkg-1.0/src/a.py'
    >>> member_path("pkg/../../etc/passwd")
    Traceback (most recent call last):
    ...
    ValueError: '..' is not allowed
    """
    if name.startswith("/"):
        raise ValueError("absolute paths are not allowed")
    if "\0" in name:
        raise ValueError("NUL in the name")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValueError("'..' is not allowed")
    return "/".join(parts)


def link_target(path: str, linkname: str) -> str:
    """Where a symbolic link at ``path`` pointing to ``linkname`` lands, relative to the
    tree's top (by its text alone); ValueError when absolute or above the top.

    >>> link_target("pkg/src/a", "../b")
    'pkg/b'
    >>> link_target("pkg/a", "../../x")
    Traceback (most recent call last):
    ...
    ValueError: symbolic link to '../../x' leaves the tree
    """
    if not linkname or linkname.startswith("/") or "\0" in linkname:
        raise ValueError(f"symbolic link to {linkname!r}: only relative targets are allowed")
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), linkname))
    if joined == ".." or joined.startswith("../"):
        raise ValueError(f"symbolic link to {linkname!r} leaves the tree")
    return "" if joined == "." else joined


def _kind_name(member: tarfile.TarInfo) -> str:
    """A member type's name for a refusal message."""
    names = {
        tarfile.CHRTYPE: "character device",
        tarfile.BLKTYPE: "block device",
        tarfile.FIFOTYPE: "FIFO",
    }
    return names.get(member.type, f"member of type {member.type!r}")


class _Unpacker:
    """One extraction: what is on disk so far, by relative path ("dir", "file", "link")."""

    def __init__(self, archive: Path, dest: Path) -> None:
        self.archive = archive
        self.dest = dest
        self.kinds: dict[str, str] = {"": "dir"}
        self.links: dict[str, str] = {}  # made last: path -> its target's text
        self.total = 0

    def refuse(self, name: str, reason: str) -> StatemineError:
        return StatemineError(f"{self.archive}: member {name!r}: {reason}")

    def parents(self, name: str, rel: str) -> None:
        """Check that no parent of ``rel`` is a file or link; record them as folders."""
        parts = rel.split("/")
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            kind = self.kinds.setdefault(parent, "dir")
            if kind != "dir":
                raise self.refuse(name, f"lies below the {kind} {parent!r} of the archive")
        (self.dest / rel).parent.mkdir(parents=True, exist_ok=True)

    def claim(self, name: str, rel: str, kind: str) -> None:
        """Record ``rel`` as ``kind``; a file or link may replace a file or link (tar's
        last member wins), nothing may replace a folder or turn into one."""
        before = self.kinds.get(rel)
        if before is not None and (before == "dir") != (kind == "dir"):
            raise self.refuse(name, f"a {kind} where the archive has a {before} already")
        if before == "file" and kind != "dir":
            (self.dest / rel).unlink()
        self.links.pop(rel, None)
        self.kinds[rel] = kind

    def write(self, rel: str, data: IO[bytes] | None, mode: int) -> None:
        """Write a regular file (never through a link: none exists yet, O_NOFOLLOW)."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        fd = os.open(self.dest / rel, flags, 0o600)
        with os.fdopen(fd, "wb") as out:
            if data is not None:
                shutil.copyfileobj(data, out, 1 << 20)
            os.fchmod(out.fileno(), (mode & _FILE_MODE_BITS) | 0o600)

    def add_bytes(self, name: str, size: int) -> None:
        self.total += size
        if self.total > MAX_BYTES:
            raise self.refuse(name, f"the archive unpacks to more than {MAX_BYTES} bytes")

    def member(self, tf: tarfile.TarFile, m: tarfile.TarInfo) -> None:
        """Unpack one member (links only recorded)."""
        try:
            rel = member_path(m.name)
        except ValueError as exc:
            raise self.refuse(m.name, f"unsafe path: {exc}") from None
        if not rel:
            if m.isdir():
                return
            raise self.refuse(m.name, "names the top of the tree itself")
        if m.isdir():
            self.parents(m.name, rel)
            self.claim(m.name, rel, "dir")
            (self.dest / rel).mkdir(exist_ok=True)
        elif m.isreg():
            self.add_bytes(m.name, m.size)
            self.parents(m.name, rel)
            self.claim(m.name, rel, "file")
            self.write(rel, tf.extractfile(m), m.mode)
        elif m.issym():
            try:
                link_target(rel, m.linkname)
            except ValueError as exc:
                raise self.refuse(m.name, str(exc)) from None
            self.parents(m.name, rel)
            self.claim(m.name, rel, "link")
            self.links[rel] = m.linkname
        elif m.islnk():
            try:
                target = member_path(m.linkname)
            except ValueError as exc:
                raise self.refuse(m.name, f"hard link to {m.linkname!r}: {exc}") from None
            if self.kinds.get(target) != "file":
                raise self.refuse(
                    m.name, f"hard link to {m.linkname!r}, not a file unpacked before it"
                )
            source = self.dest / target
            self.add_bytes(m.name, source.stat().st_size)
            self.parents(m.name, rel)
            self.claim(m.name, rel, "file")
            with open(source, "rb") as data:
                self.write(rel, data, source.stat().st_mode)
        else:
            raise self.refuse(m.name, f"a {_kind_name(m)} is not allowed")

    def make_links(self) -> None:
        """Make the symbolic links, then check each resolves inside the tree on disk."""
        for rel, linkname in self.links.items():
            os.symlink(linkname, self.dest / rel)
        top = os.path.realpath(self.dest)
        for rel, linkname in self.links.items():
            real = os.path.realpath(self.dest / rel)
            if real != top and not real.startswith(top + os.sep):
                raise self.refuse(rel, f"symbolic link to {linkname!r} leaves the tree on disk")


def extract_tar(archive: str | os.PathLike, dest: str | os.PathLike) -> None:
    """Unpack the tar archive ``archive`` (any compression tarfile reads) into ``dest``,
    which must not exist, under the rules above; on any refusal or error ``dest`` is
    removed and :class:`StatemineError` names the archive (and the member)."""
    src, root = Path(archive), Path(dest)
    root.mkdir(parents=False, exist_ok=False)
    unpacker = _Unpacker(src, root)
    try:
        with tarfile.open(src) as tf:
            for count, m in enumerate(tf, 1):
                if count > MAX_MEMBERS:
                    raise unpacker.refuse(m.name, f"more than {MAX_MEMBERS} members")
                unpacker.member(tf, m)
        unpacker.make_links()
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise StatemineError(f"{src}: not a readable tar archive: {exc}") from None
    except OSError as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise StatemineError(f"{src}: cannot unpack: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
