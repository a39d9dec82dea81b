"""statemine.patch.archive on crafted tar archives (issue 25 item 1): the same rules on
every Python (tarfile's ``filter="data"`` does not exist on Debian 12's 3.11.2), each
refusal one line naming the archive and the member, nothing left behind or outside."""

from __future__ import annotations

import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from statemine.errors import StatemineError
from statemine.patch.archive import extract_tar


def _info(name: str, kind: bytes = tarfile.REGTYPE, link: str = "", mode: int = 0o644):
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, mode
    return info


def make_tar(path: Path, members: list, gz: bool = True) -> Path:
    """A tar archive of ``members``: (name, bytes) for a file, (TarInfo,) for the rest."""
    with tarfile.open(path, "w:gz") if gz else tarfile.open(path, "w") as tf:
        for m in members:
            if isinstance(m[0], tarfile.TarInfo):
                tf.addfile(m[0])
            else:
                info = _info(m[0], mode=m[2] if len(m) > 2 else 0o644)
                info.size = len(m[1])
                tf.addfile(info, io.BytesIO(m[1]))
    return path


@pytest.fixture
def no_data_filter(monkeypatch):
    """tarfile as on Python 3.11.2: extractall has no ``filter`` (and is not needed)."""

    def extractall(self, path=".", members=None, *, numeric_owner=False):
        raise AssertionError("extract_tar must not use TarFile.extractall")

    monkeypatch.setattr(tarfile.TarFile, "extractall", extractall)


def tree(root: Path) -> dict[str, object]:
    """Each path under ``root``: a file's bytes, a link's target, or "dir"."""
    out: dict[str, object] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        out[rel] = os.readlink(p) if p.is_symlink() else "dir" if p.is_dir() else p.read_bytes()
    return out


def test_files_dirs_links_and_modes(tmp_path, no_data_filter):
    archive = make_tar(
        tmp_path / "demo-1.0.tar.gz",
        [
            (_info("./demo-1.0/", tarfile.DIRTYPE),),
            ("demo-1.0/setup.py", b"print(1)\n", 0o4777),  # setuid, world-writable
            ("demo-1.0//src/pkg/a.py", b"A\n", 0o600),
            (_info("demo-1.0/src/pkg/b.py", tarfile.SYMTYPE, "a.py"),),
            (_info("demo-1.0/link-dir", tarfile.SYMTYPE, "src/pkg"),),
            (_info("demo-1.0/hard.py", tarfile.LNKTYPE, "demo-1.0/src/pkg/a.py"),),
            ("demo-1.0/setup.py", b"print(2)\n", 0o644),  # a later member replaces it
        ],
    )
    dest = tmp_path / "out"
    extract_tar(archive, dest)
    assert tree(dest) == {
        "demo-1.0": "dir",
        "demo-1.0/hard.py": b"A\n",
        "demo-1.0/link-dir": "src/pkg",
        "demo-1.0/setup.py": b"print(2)\n",
        "demo-1.0/src": "dir",
        "demo-1.0/src/pkg": "dir",
        "demo-1.0/src/pkg/a.py": b"A\n",
        "demo-1.0/src/pkg/b.py": "a.py",
    }
    assert (dest / "demo-1.0/link-dir/b.py").read_bytes() == b"A\n"
    assert not (dest / "demo-1.0/hard.py").samefile(dest / "demo-1.0/src/pkg/a.py")  # a copy
    archive2 = make_tar(
        tmp_path / "m.tar", [("x/run", b"#!", 0o6777), ("x/ro", b"r", 0o400)], False
    )
    extract_tar(archive2, tmp_path / "out2")
    assert stat.S_IMODE((tmp_path / "out2/x/run").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "out2/x/ro").stat().st_mode) == 0o600


_REFUSED = [
    ("absolute", [("/tmp/evil", b"x")], "/tmp/evil", "absolute paths are not allowed"),
    ("dotdot", [("../evil", b"x")], "../evil", "'..' is not allowed"),
    ("dotdot-inside", [("a/b/../../../evil", b"x")], "a/b/../../../evil", "'..'"),
    (
        "symlink-absolute",
        [(_info("a/passwd", tarfile.SYMTYPE, "/etc/passwd"),)],
        "a/passwd",
        "only relative targets",
    ),
    (
        "symlink-up",
        [(_info("a/up", tarfile.SYMTYPE, "../../outside"),)],
        "a/up",
        "leaves the tree",
    ),
    (
        # each link stays inside by its text; followed on disk, the second leaves
        "symlink-chain",
        [
            (_info("a/b/c", tarfile.SYMTYPE, "../.."),),
            (_info("a/l", tarfile.SYMTYPE, "b/c/.."),),
        ],
        "a/l",
        "leaves the tree on disk",
    ),
    (
        "below-symlink",
        [(_info("a/s", tarfile.SYMTYPE, "."),), ("a/s/x", b"x")],
        "a/s/x",
        "lies below the link 'a/s'",
    ),
    ("below-file", [("a/f", b"x"), ("a/f/x", b"x")], "a/f/x", "lies below the file 'a/f'"),
    (
        "hardlink-absolute",
        [(_info("a/h", tarfile.LNKTYPE, "/etc/passwd"),)],
        "a/h",
        "hard link to '/etc/passwd': absolute",
    ),
    (
        "hardlink-up",
        [(_info("a/h", tarfile.LNKTYPE, "../x"),)],
        "a/h",
        "hard link to '../x': '..'",
    ),
    (
        "hardlink-missing",
        [(_info("a/h", tarfile.LNKTYPE, "a/later"),), ("a/later", b"x")],
        "a/h",
        "not a file unpacked before it",
    ),
    (
        "hardlink-to-dir",
        [(_info("a/d", tarfile.DIRTYPE),), (_info("a/h", tarfile.LNKTYPE, "a/d"),)],
        "a/h",
        "not a file unpacked before it",
    ),
    ("chardev", [(_info("a/tty", tarfile.CHRTYPE),)], "a/tty", "character device"),
    ("blockdev", [(_info("a/sda", tarfile.BLKTYPE),)], "a/sda", "block device"),
    ("fifo", [(_info("a/fifo", tarfile.FIFOTYPE),)], "a/fifo", "FIFO is not allowed"),
    ("top-file", [(".", b"x")], ".", "names the top of the tree"),
    (
        "dir-over-file",
        [("a/x", b"x"), (_info("a/x", tarfile.DIRTYPE),)],
        "a/x",
        "a dir where the archive has a file",
    ),
]


@pytest.mark.parametrize(
    "members,name,reason", [c[1:] for c in _REFUSED], ids=[c[0] for c in _REFUSED]
)
def test_refusals_name_archive_and_member_and_leave_nothing(
    tmp_path, no_data_filter, members, name, reason
):
    base = tmp_path / "work"
    base.mkdir()
    archive = make_tar(tmp_path / "evil.tar.gz", [("a/ok", b"fine"), *members])
    dest = base / "out"
    with pytest.raises(StatemineError) as err:
        extract_tar(archive, dest)
    message = str(err.value)
    assert message.startswith(f"{archive}: member {name!r}: "), message
    assert reason in message and "\n" not in message
    assert not dest.exists() and list(base.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.tar.gz", "work"]


def test_not_an_archive_and_a_truncated_one(tmp_path):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not a tar archive at all" * 40)
    with pytest.raises(StatemineError, match=r"junk.tar.gz: not a readable tar archive"):
        extract_tar(junk, tmp_path / "out")
    good = make_tar(tmp_path / "t.tar.gz", [("a/big", os.urandom(300_000))])
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(good.read_bytes()[:150_000])
    with pytest.raises(StatemineError, match=r"cut.tar.gz: not a readable tar archive"):
        extract_tar(cut, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_member_and_size_limits(tmp_path, monkeypatch):
    archive = make_tar(tmp_path / "t.tar", [("a/1", b"12345"), ("a/2", b"67890")], False)
    monkeypatch.setattr("statemine.patch.archive.MAX_BYTES", 9)
    with pytest.raises(StatemineError, match=r"member 'a/2': the archive unpacks to more than 9"):
        extract_tar(archive, tmp_path / "out")
    monkeypatch.setattr("statemine.patch.archive.MAX_BYTES", 10)
    monkeypatch.setattr("statemine.patch.archive.MAX_MEMBERS", 1)
    with pytest.raises(StatemineError, match=r"member 'a/2': more than 1 members"):
        extract_tar(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_dest_must_not_exist(tmp_path):
    archive = make_tar(tmp_path / "t.tar", [("a/1", b"1")], False)
    (tmp_path / "out").mkdir()
    with pytest.raises(FileExistsError):
        extract_tar(archive, tmp_path / "out")
