"""The patch engine (statemine.patch) on tiny synthetic trees: parsing, path safety,
atomicity, idempotence, byte-identical revert, version mismatch, port with fuzz."""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statemine.errors import InputError, UsageError
from statemine.patch import apply, check, list_patches, port, revert
from statemine.patch.apply import RECORD, patch_lines, split_lines
from statemine.patch.port import PortFailed, rejects_text
from statemine.patch.unified_diff import parse_patch_text

ORIG = {
    "pkg/a.py": "".join(f"line {i}\n" for i in range(1, 41)),
    "pkg/b.py": "alpha\nbeta\ngamma\ndelta\n",
}
EDITED = {
    "pkg/a.py": ORIG["pkg/a.py"]
    .replace("line 5\n", "line 5\nLOG five\n")
    .replace("line 30\n", "LINE THIRTY\n"),
    "pkg/b.py": "alpha\nbeta\nGAMMA\ndelta",  # no newline at end of file
    "pkg/sub/helper.py": "def log():\n    pass\n",
}


def udiff(path: str, old: str | None, new: str) -> str:
    """A git-style diff of one file made with difflib (another way than our engine)."""
    a = [] if old is None else split_lines(old)
    b = split_lines(new)
    out = []
    for line in difflib.unified_diff(
        a, b, "/dev/null" if old is None else f"a/{path}", f"b/{path}"
    ):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def full_patch() -> str:
    return "".join(udiff(p, ORIG.get(p), EDITED[p]) for p in EDITED)


def make_patches(root: Path, versions: dict[str, str], impl: str = "demo") -> Path:
    (root / impl).mkdir(parents=True)
    (root / impl / "impl.toml").write_text(
        f'name = "{impl}"\nfetch = "pypi-sdist"\npackage = "demo"\n'
    )
    for version, text in versions.items():
        (root / impl / version).mkdir()
        (root / impl / version / "statemine.patch").write_bytes(
            text.encode("utf-8", "surrogateescape")
        )
    return root


def make_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.fixture
def env(tmp_path):
    patches = make_patches(tmp_path / "patches", {"1.0": full_patch()})
    tree = make_tree(tmp_path / "tree", ORIG)
    return patches, tree


def test_list_patches(env):
    patches, _ = env
    frame = list_patches(patches)
    assert list(frame["impl"]) == ["demo"] * 3 and list(frame["version"]) == ["1.0"] * 3
    assert list(frame["file"]) == ["pkg/a.py", "pkg/b.py", "pkg/sub/helper.py"]
    assert list(frame["new"]) == [False, False, True]
    # a: +LOG five +LINE THIRTY -line 30; b: +GAMMA +delta(no newline) -gamma -delta; helper: +2
    assert list(frame["lines_added"]) == [2, 2, 2] and list(frame["lines_removed"]) == [1, 2, 0]


def test_apply_matches_gnu_patch_and_reverts_byte_identical(env, tmp_path):
    patches, tree = env
    os.chmod(tree / "pkg/a.py", 0o755)
    before = hashes(tree)
    out = apply("demo", "1.0", tree, patches)
    assert out.status == "applied" and set(out.files) == set(EDITED)
    for rel, text in EDITED.items():
        assert (tree / rel).read_text() == text
    assert os.stat(tree / "pkg/a.py").st_mode & 0o777 == 0o755
    # the same result by GNU patch, another engine
    gnu = make_tree(tmp_path / "gnu", ORIG)
    subprocess.run(
        ["patch", "-p1", "-s", "-i", str(patches / "demo/1.0/statemine.patch")], cwd=gnu, check=True
    )
    assert {k: v for k, v in hashes(tree).items() if k != RECORD} == hashes(gnu)
    out = revert("demo", "1.0", tree, patches)
    assert out.status == "reverted"
    assert hashes(tree) == before
    assert not (tree / "pkg/sub").exists()  # the directory apply created is gone


def test_idempotent_apply_and_check(env):
    patches, tree = env
    assert check("demo", "1.0", tree, patches).status == "would apply"
    assert hashes(tree) == hashes(tree) and not (tree / RECORD).exists()
    apply("demo", "1.0", tree, patches)
    after = hashes(tree)
    assert apply("demo", "1.0", tree, patches).status == "already applied"
    assert check("demo", "1.0", tree, patches).status == "already applied"
    assert hashes(tree) == after


def test_already_applied_without_record_and_revert_without_record(env):
    patches, tree = env
    before = hashes(tree)
    apply("demo", "1.0", tree, patches)
    (tree / RECORD).unlink()  # e.g. applied by another tool
    assert apply("demo", "1.0", tree, patches).status == "already applied"
    assert revert("demo", "1.0", tree, patches).status == "reverted"
    assert hashes(tree) == before
    assert revert("demo", "1.0", tree, patches).status == "not applied"


def test_atomic_when_a_later_file_fails(env):
    patches, tree = env
    (tree / "pkg/b.py").write_text("alpha\nbeta\nsomething else\ndelta\n")
    before = hashes(tree)
    with pytest.raises(InputError) as err:
        apply("demo", "1.0", tree, patches)
    assert "pkg/b.py" in str(err.value) and "port" in str(err.value)
    assert err.value.line is not None and err.value.file.endswith("statemine.patch")
    assert hashes(tree) == before
    assert not list(tree.rglob("*.statemine-tmp"))


def test_atomic_when_a_middle_hunk_fails(tmp_path):
    orig = "".join(f"{i}\n" for i in range(100))
    new = orig.replace("10\n", "ten\n").replace("50\n", "fifty\n").replace("90\n", "ninety\n")
    patches = make_patches(tmp_path / "p", {"1": udiff("f.txt", orig, new)})
    tree = make_tree(tmp_path / "t", {"f.txt": orig.replace("49\n50\n51\n", "49\nX\n51\n")})
    before = hashes(tree)
    with pytest.raises(InputError, match=r"hunk 2 for f.txt"):
        apply("demo", "1", tree, patches)
    assert hashes(tree) == before


def test_atomic_when_a_rename_fails_midway(env, monkeypatch):
    patches, tree = env
    before = hashes(tree)
    real = os.replace
    calls = {"n": 0}

    def flaky(src, dst):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(OSError):
        apply("demo", "1.0", tree, patches)
    monkeypatch.setattr(os, "replace", real)
    assert hashes(tree) == before
    assert not (tree / "pkg/sub").exists() and not list(tree.rglob("*.statemine-tmp"))


@pytest.mark.parametrize(
    "header, reason",
    [
        ("--- a/../x\n+++ b/../x\n", "'..' is not allowed"),
        ("--- a/ok/../../x\n+++ b/ok/../../x\n", "'..' is not allowed"),
        ("--- /etc/passwd\n+++ /etc/passwd\n", "lacks the git-style"),
        ("--- a//etc/passwd\n+++ b//etc/passwd\n", "absolute paths"),
        ("--- a/x\\y\n+++ b/x\\y\n", "backslash"),
        ("--- a/x\n+++ b/y\n", "renaming"),
        ("--- a/x\n+++ /dev/null\n", "deleting"),
    ],
)
def test_unsafe_or_unsupported_paths_rejected(tmp_path, header, reason):
    body = "@@ -1 +1 @@\n-a\n+b\n" if "/dev/null" not in header else "@@ -1 +0,0 @@\n-a\n"
    patches = make_patches(tmp_path / "p", {"1": header + body})
    tree = make_tree(tmp_path / "t", {"x": "a\n"})
    with pytest.raises(InputError, match=reason):
        apply("demo", "1", tree, patches)
    assert (tree / "x").read_text() == "a\n"


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"\x7fELF\x02\x01\x01\x00\x00garbage", "NUL byte"),
        (b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-\xff\xfe\n+b\n", "not UTF-8"),
        (b"just some text\nno diff here\n", "no file changes"),
        (b"--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n", "not a valid unified diff"),
        (
            b"diff --git a/x b/x\nindex 1..2\nBinary files a/x and b/x differ\n",
            "no file changes|binary",
        ),
    ],
)
def test_garbage_patch_rejected(tmp_path, data, reason):
    root = make_patches(tmp_path / "p", {})
    (root / "demo/1").mkdir()
    (root / "demo/1/statemine.patch").write_bytes(data)
    tree = make_tree(tmp_path / "t", {"x": "a\n"})
    with pytest.raises(InputError, match=reason):
        apply("demo", "1", tree, root)
    assert sorted(p.name for p in tree.iterdir()) == ["x"]


def test_symlinks_refused(tmp_path):
    outside = make_tree(
        tmp_path / "outside", {"pkg/a.py": ORIG["pkg/a.py"], "b.py": ORIG["pkg/b.py"]}
    )
    patches = make_patches(tmp_path / "p", {"1.0": full_patch()})
    # a directory symlink escaping the tree
    tree = tmp_path / "t1"
    tree.mkdir()
    (tree / "pkg").symlink_to(outside / "pkg")
    before = hashes(outside)
    with pytest.raises(InputError, match=r"symlink"):
        apply("demo", "1.0", tree, patches)
    # a file symlink
    tree2 = make_tree(tmp_path / "t2", {"pkg/a.py": ORIG["pkg/a.py"]})
    (tree2 / "pkg/b.py").symlink_to(outside / "b.py")
    with pytest.raises(InputError, match=r"symlink"):
        apply("demo", "1.0", tree2, patches)
    assert hashes(outside) == before
    assert (tree2 / "pkg/a.py").read_text() == ORIG["pkg/a.py"]


def test_other_version_refused_with_port_hint(env):
    patches, tree = env
    (tree / "pkg/a.py").write_text(ORIG["pkg/a.py"].replace("line 4\n", "line four\n"))
    with pytest.raises(
        InputError, match=r"hunk 1 for pkg/a.py .*another version.*statemine patch port"
    ):
        check("demo", "1.0", tree, patches)


def test_source_record_of_other_version_refused(env):
    patches, tree = env
    (tree / ".statemine-source.json").write_text(json.dumps({"impl": "demo", "version": "2.0"}))
    before = hashes(tree)
    with pytest.raises(UsageError, match=r"holds demo 2.0"):
        apply("demo", "1.0", tree, patches)
    assert hashes(tree) == before


def test_revert_refuses_modified_file(env):
    patches, tree = env
    apply("demo", "1.0", tree, patches)
    (tree / "pkg/b.py").write_text("edited by hand\n")
    snapshot = hashes(tree)
    with pytest.raises(InputError, match=r"changed since the patch was applied"):
        revert("demo", "1.0", tree, patches)
    assert hashes(tree) == snapshot


def test_offset_then_port_with_fuzz(tmp_path):
    orig = ORIG["pkg/a.py"]
    patches = make_patches(tmp_path / "p", {"1.0": udiff("pkg/a.py", orig, EDITED["pkg/a.py"])})
    # version 2: 7 lines inserted at the top (offset), a context line near hunk 2 changed (fuzz)
    v2 = "".join(f"new {i}\n" for i in range(7)) + orig.replace("line 27\n", "line 27 changed\n")
    tree = make_tree(tmp_path / "t", {"pkg/a.py": v2})
    with pytest.raises(InputError, match=r"another version"):
        apply("demo", "1.0", tree, patches)
    before = hashes(tree)
    for dry_run in (True, False):
        with pytest.raises(
            PortFailed,
            match=r"1 of 2 hunks failed, nothing was changed: "
            r"pkg/a.py hunk 2 \(patch line \d+\): its lines",
        ) as err:
            port("demo", "1.0", "2.0", tree, fuzz=0, dry_run=dry_run, patches=patches)
        assert list(err.value.report.hunks["status"]) == ["offset", "failed"]
        assert hashes(tree) == before
    report = port("demo", "1.0", "2.0", tree, fuzz=3, patches=patches)
    assert list(report.hunks["status"]) == ["offset", "fuzz"]
    assert list(report.hunks["offset"]) == [7, 7] and report.rejects == "" and report.written
    assert (tree / "pkg/a.py").read_text() == v2.replace("line 5\n", "line 5\nLOG five\n").replace(
        "line 30\n", "LINE THIRTY\n"
    )
    assert revert("demo", "2.0", tree, patches).status == "reverted"
    assert hashes(tree) == before


def test_port_is_all_or_nothing_and_its_rejects_parse(env):
    patches, tree = env
    (tree / "pkg/b.py").write_text("totally\ndifferent\n")
    before = hashes(tree)
    with pytest.raises(PortFailed) as err:
        port("demo", "1.0", "2.0", tree, patches=patches)
    report = err.value.report
    assert hashes(tree) == before and not report.written  # the other hunks fit: not written
    assert set(report.needs_human["path"]) == {"pkg/b.py"}
    rej = parse_patch_text(report.rejects)
    assert [fp.path for fp in rej] == ["pkg/b.py"]
    original = parse_patch_text(full_patch())[1]
    strip = lambda hunks: [dataclasses.replace(h, patch_line=0) for h in hunks]  # noqa: E731
    assert strip(rej[0].hunks) == strip(original.hunks)  # line numbers, lines, no-newline marker


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(["x\n", "y\n", "z\n", "\n", "w\r\n", "q\x0c\n"]), min_size=0, max_size=40
    ),
    st.lists(
        st.tuples(
            st.integers(0, 45),
            st.integers(0, 3),
            st.lists(st.sampled_from(["N\n", "M\n", "x\n"]), max_size=3),
        ),
        max_size=4,
    ),
)
def test_patch_lines_reproduces_difflib_edits(lines, edits):
    """Any edit script: difflib's diff applied by patch_lines gives the edited file back,
    and the reversed diff gives the original."""
    new = list(lines)
    for pos, drop, insert in edits:
        pos = min(pos, len(new))
        new[pos : pos + drop] = insert
    if new == lines:
        return
    fps = parse_patch_text(udiff("f", "".join(lines), "".join(new))) if lines else None
    if fps is None:
        return
    for shift in (False, True):
        got, res = patch_lines(lines, fps[0].hunks, "f", shift=shift)
        assert got == new and all(r.status == "exact" for r in res)
        back, res = patch_lines(got, fps[0].reversed().hunks, "f", shift=shift)
        assert back == lines and all(r.status == "exact" for r in res)


def test_emptying_a_file_is_not_deleting_it():
    """A hunk that removes every line of b/f (difflib writes '@@ -1 +0,0 @@') empties the
    file; only a /dev/null target deletes (found by the property test above)."""
    fps = parse_patch_text(udiff("f", "x\n", ""))
    got, res = patch_lines(["x\n"], fps[0].hunks, "f", shift=False)
    assert got == [] and [r.status for r in res] == ["exact"]
    with pytest.raises(InputError, match="deleting"):
        parse_patch_text("--- a/f\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n")


def test_rejects_text_round_trips_every_hunk(tmp_path):
    orig = "".join(f"{i}\n" for i in range(30))
    new = "head\n" + orig.replace("7\n", "seven\n").replace("20\n21\n", "") + "tail"
    fps = parse_patch_text(udiff("f.txt", orig, new) + udiff("g.txt", None, "x\ny\n"))
    failed = {(fp.path, i) for fp in fps for i in range(1, len(fp.hunks) + 1)}
    assert parse_patch_text(rejects_text(fps, failed)) == fps
    zero_context = parse_patch_text("--- a/f\n+++ b/f\n@@ -3,0 +4,2 @@\n+a\n+b\n")
    assert parse_patch_text(rejects_text(zero_context, {("f", 1)})) == zero_context


def test_find_prefers_the_nearest_then_the_lower_position():
    from statemine.patch.apply import _find

    lines = [f"{i}\n" for i in range(20000)]
    for at in (100, 106, 9000):
        lines[at : at + 2] = ["A\n", "B\n"]
    assert _find(lines, ("A\n", "B\n"), 103, 0) == 100  # tie at distance 3: the lower
    assert _find(lines, ("A\n", "B\n"), 104, 0) == 106
    assert _find(lines, ("A\n", "B\n"), 104, 101) == 106  # not before lo
    assert _find(lines, ("A\n", "B\n"), 19990, 200) == 9000  # far away: the window grows
    assert _find(lines, ("A\n", "C\n"), 100, 0) is None


def test_revert_refuses_a_corrupt_record(env):
    patches, tree = env
    apply("demo", "1.0", tree, patches)
    rec = json.loads((tree / RECORD).read_text())
    rec["files"][0]["before_zlib_b64"] = "not base64!"
    (tree / RECORD).write_text(json.dumps(rec))
    snapshot = hashes(tree)
    with pytest.raises(InputError, match=r"corrupt"):
        revert("demo", "1.0", tree, patches)
    rec["files"][0]["path"] = "../outside"
    (tree / RECORD).write_text(json.dumps(rec))
    with pytest.raises(InputError, match=r"'..' is not allowed"):
        revert("demo", "1.0", tree, patches)
    (tree / RECORD).write_text("[1, 2")
    with pytest.raises(InputError, match=r"not valid JSON"):
        revert("demo", "1.0", tree, patches)
    assert {k: v for k, v in hashes(tree).items() if k != RECORD} == {
        k: v for k, v in snapshot.items() if k != RECORD
    }


def test_apply_refuses_a_shifted_tree_that_port_accepts(env):
    """A patch belongs to one version: apply wants every hunk at its line."""
    patches, tree = env
    (tree / "pkg/a.py").write_text("# one more line\n" + ORIG["pkg/a.py"])
    before = hashes(tree)
    with pytest.raises(InputError, match=r"hunk 1 for pkg/a.py .*applies only at an offset"):
        check("demo", "1.0", tree, patches)
    assert hashes(tree) == before
    report = port("demo", "1.0", "1.0-shifted", tree, patches=patches)
    assert list(report.hunks["status"]) == ["offset", "offset", "exact", "exact"]
    assert list(report.hunks["offset"]) == [1, 1, 0, 0]


def test_list_patches_agrees_with_git_numstat():
    """Every shipped patch parses, and its per-file counts match `git apply --numstat`."""
    frame = list_patches()
    assert {"aioquic"} <= set(frame["impl"])
    for path, rows in frame.groupby("patch"):
        out = subprocess.run(
            ["git", "apply", "--numstat", path], capture_output=True, text=True, check=True
        )
        numstat = sorted(tuple(line.split("\t")) for line in out.stdout.splitlines())
        ours = sorted(
            (str(a), str(r), f)
            for a, r, f in zip(rows["lines_added"], rows["lines_removed"], rows["file"])
        )
        assert ours == numstat, path
