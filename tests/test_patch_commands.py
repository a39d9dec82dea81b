"""The ``statemine patch`` commands as library calls (statemine/patch/commands.py and the
calls the package exports): each does what its command does, on the synthetic trees of
test_patch_engine (no registry: the fetcher is replaced by one that writes the tree)."""

from __future__ import annotations

import importlib

import pytest
from click.testing import CliRunner
from test_patch_engine import EDITED, ORIG, full_patch, hashes, make_patches, make_tree, udiff

import statemine.patch
from statemine.cli import main
from statemine.patch.apply import RECORD


def invoke(*args):
    return CliRunner().invoke(main, ["patch", *map(str, args)])


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """Patches of "demo" 1.0 (a Python stack importable from ``pkg``'s parent) and a fake
    registry that unpacks ORIG."""
    fetch = importlib.import_module("statemine.patch.fetch")  # the package's name is a function

    patches = make_patches(tmp_path / "p", {"1.0": full_patch()})
    (patches / "demo" / "impl.toml").write_text(
        'name = "demo"\nfetch = "pypi-sdist"\npackage = "demo"\npython_path = "pkg"\n'
    )

    def unpack(info, version, work, patches):
        make_tree(work, ORIG)
        return {"sdist": f"demo-{version}.tar.gz", "pinned": True}

    monkeypatch.setattr(fetch, "_fetch_pypi", unpack)
    return patches


def test_fetch_source_is_the_fetch_command(tmp_path, registry):
    got = statemine.patch.fetch_source("demo", "1.0", tmp_path / "lib", registry)
    res = invoke(
        "fetch", "--impl", "demo", "--version", "1.0", "--patches", registry, tmp_path / "cli"
    )
    assert res.exit_code == 0, res.output
    assert got.root == tmp_path / "lib" and got.import_path == tmp_path / "lib" / "pkg"
    assert res.stdout.splitlines() == [
        f"fetched demo 1.0 into {tmp_path / 'cli'}",
        f"import it with PYTHONPATH={tmp_path / 'cli' / 'pkg'}",
    ]
    assert hashes(tmp_path / "lib") == hashes(tmp_path / "cli")
    assert (tmp_path / "lib" / "pkg/b.py").read_text() == ORIG["pkg/b.py"]
    with pytest.raises(statemine.UsageError, match="not an empty directory"):
        statemine.patch.fetch_source("demo", "1.0", tmp_path / "lib", registry)


def test_apply_check_revert_are_the_commands(tmp_path, registry):
    lib, cli = (make_tree(tmp_path / side, ORIG) for side in ("lib", "cli"))
    opts = ("--impl", "demo", "--version", "1.0", "--patches", registry)
    for action in ("check", "apply", "revert"):
        outcome = getattr(statemine.patch, action)("demo", "1.0", lib, registry)
        res = invoke(action, *opts, cli)
        assert res.exit_code == 0, res.output
        assert res.stdout.replace(str(cli), str(lib)).strip() == str(outcome)
        assert hashes(lib) == hashes(cli)
        if action == "apply":  # the patched files, against the edit the patch was made from
            assert (lib / "pkg/a.py").read_text() == EDITED["pkg/a.py"] and (lib / RECORD).is_file()
    assert hashes(lib) == hashes(make_tree(tmp_path / "orig", ORIG))


def test_port_tree_is_the_port_command(tmp_path, registry):
    orig = ORIG["pkg/a.py"]
    patches = make_patches(tmp_path / "q", {"1.0": udiff("pkg/a.py", orig, EDITED["pkg/a.py"])})
    v2 = "".join(f"new {i}\n" for i in range(7)) + orig  # version 2: 7 lines inserted on top
    lib, cli = (make_tree(tmp_path / side, {"pkg/a.py": v2}) for side in ("lib", "cli"))
    old = make_tree(tmp_path / "old", {"pkg/a.py": orig})
    report = statemine.patch.port_tree("demo", "1.0", "2.0", lib, from_source=old, patches=patches)
    res = invoke(
        "port", "--impl", "demo", "--from", "1.0", "--to", "2.0", "--from-source", old,
        "--patches", patches, cli,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[0] == str(report)
    assert list(report.hunks["offset"]) == [7, 7] and report.written
    assert hashes(lib) == hashes(cli)
    assert (lib / "pkg/a.py").read_text() == "".join(f"new {i}\n" for i in range(7)) + EDITED[
        "pkg/a.py"
    ]


def test_port_tree_failure_writes_the_rejects_the_command_writes(tmp_path, registry):
    lib, cli = (make_tree(tmp_path / s, {**ORIG, "pkg/b.py": "changed\n"}) for s in ("l", "c"))
    old = make_tree(tmp_path / "old", ORIG)
    before = hashes(lib)
    with pytest.raises(statemine.patch.PortFailed) as err:
        statemine.patch.port_tree(
            "demo", "1.0", "2.0", lib, from_source=old, rejects=tmp_path / "lib.rej",
            patches=registry,
        )  # fmt: skip
    res = invoke(
        "port", "--impl", "demo", "--from", "1.0", "--to", "2.0", "--from-source", old,
        "--patches", registry, "--rejects", tmp_path / "cli.rej", cli,
    )  # fmt: skip
    assert res.exit_code == 2
    assert (tmp_path / "lib.rej").read_bytes() == (tmp_path / "cli.rej").read_bytes()
    assert "+GAMMA" in (tmp_path / "lib.rej").read_text()
    assert err.value.report.rejects == (tmp_path / "lib.rej").read_text()
    assert hashes(lib) == before
