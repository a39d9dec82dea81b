"""`statemine patch` on a tiny synthetic tree: messages and exit codes."""

from __future__ import annotations

from click.testing import CliRunner
from test_patch_engine import EDITED, ORIG, full_patch, hashes, make_patches, make_tree

from statemine.cli import main


def run(*args):
    return CliRunner().invoke(main, ["patch", *map(str, args)])


def test_cli_list_apply_check_revert(tmp_path):
    patches = make_patches(tmp_path / "p", {"1.0": full_patch()})
    tree = make_tree(tmp_path / "t", ORIG)
    before = hashes(tree)
    res = run("list", "--patches", patches)
    assert res.exit_code == 0
    assert "demo" in res.output and "pkg/sub/helper.py (new)" in res.output and "+2" in res.output
    res = run("check", "--impl", "demo", "--version", "1.0", "--patches", patches, tree)
    assert res.exit_code == 0 and "would apply" in res.output
    res = run("apply", "--impl", "demo", "--version", "1.0", "--patches", patches, "-v", tree)
    assert (
        res.exit_code == 0 and "demo 1.0: applied (3 files" in res.output and "exact" in res.output
    )
    assert (tree / "pkg/b.py").read_text() == EDITED["pkg/b.py"]
    res = run("apply", "--impl", "demo", "--version", "1.0", "--patches", patches, tree)
    assert res.exit_code == 0 and "already applied" in res.output
    res = run("revert", "--impl", "demo", "--version", "1.0", "--patches", patches, tree)
    assert res.exit_code == 0 and "reverted" in res.output
    assert hashes(tree) == before


def test_cli_errors_exit_2_with_one_line(tmp_path):
    patches = make_patches(tmp_path / "p", {"1.0": full_patch()})
    tree = make_tree(tmp_path / "t", {**ORIG, "pkg/b.py": "changed\n"})
    res = run("apply", "--impl", "demo", "--version", "1.0", "--patches", patches, tree)
    assert res.exit_code == 2
    assert res.stderr.startswith("statemine: error: ") and "statemine patch port" in res.stderr
    res = run("apply", "--impl", "nope", "--version", "1.0", "--patches", patches, tree)
    assert res.exit_code == 2 and "unknown implementation 'nope' (known: demo)" in res.stderr
    res = run("apply", "--impl", "demo", "--version", "9.9", "--patches", patches, tree)
    assert res.exit_code == 2 and "no patch for demo 9.9 (patched versions: 1.0)" in res.stderr
    res = run("fetch", "--impl", "demo", "--version", "1.0", "--patches", patches, tree)
    assert res.exit_code == 2 and "not an empty directory" in res.stderr


def test_cli_port_fails_whole_listing_the_rejects(tmp_path):
    patches = make_patches(tmp_path / "p", {"1.0": full_patch()})
    tree = make_tree(tmp_path / "t", {**ORIG, "pkg/b.py": "changed\n"})
    old = make_tree(tmp_path / "old", ORIG)
    before = hashes(tree)
    args = [
        "port",
        "--impl",
        "demo",
        "--from",
        "1.0",
        "--to",
        "2.0",
        "--patches",
        patches,
        "--from-source",
        old,
    ]
    res = run(*args, tree)
    assert res.exit_code == 2, res.output
    assert "4 hunks: 3 exact, 0 offset, 0 fuzz, 1 failed" in res.stdout
    assert "+GAMMA" in res.stdout  # the rejected hunk, as a diff
    assert res.stderr.count("\n") == 1 and res.stderr.startswith(
        "statemine: error: port demo 1.0 -> 2.0: 1 of 4 hunks failed, nothing was changed: "
        "pkg/b.py hunk 1 (patch line "
    )
    assert hashes(tree) == before
    res = run(*args, "--rejects", tmp_path / "out.rej", tree)
    assert res.exit_code == 2 and "+GAMMA" in (tmp_path / "out.rej").read_text()
    assert hashes(tree) == before
    (tree / "pkg/b.py").write_text(ORIG["pkg/b.py"])
    res = run(*args, tree)
    assert res.exit_code == 0 and "4 hunks: 4 exact" in res.stdout
