"""The patch engine's safety rules on small constructed files (issue 11 item 9): impl.toml
and patch-folder paths validated, every record read validated, port all or nothing and
each hunk inside the function its context names, within a bounded offset."""

from __future__ import annotations

import contextlib
import difflib
import importlib
import json
import tarfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_patch_engine import ORIG, full_patch, hashes, make_patches, make_tree

from statemine.errors import InputError, UsageError
from statemine.patch import PortFailed, apply, fetch, load_impl, port, revert
from statemine.patch.apply import RECORD
from statemine.patch.functions import enclosing_function

fetch_mod = importlib.import_module("statemine.patch.fetch")


def write_impl(root: Path, text: str, name: str = "demo") -> Path:
    (root / name).mkdir(parents=True, exist_ok=True)
    (root / name / "impl.toml").write_text(text)
    return root


# -- impl.toml and the patches folder ---------------------------------------------------


@pytest.mark.parametrize(
    "body,reason",
    [
        ('python_path = "../../outside"', r"python_path: unsafe path '../../outside': '..'"),
        ('python_path = "/tmp/x"', r"python_path: unsafe path '/tmp/x': absolute"),
        ('python_path = "src/./x"', r"python_path: unsafe path"),
        ("python_path = 3", r"python_path must be a string"),
        ('python_path = "src"\nextra = 1', r"unknown keys \['extra'\]"),
        ('name = "other"', r"name 'other' is not the folder's name 'demo'"),
    ],
)
def test_impl_toml_is_validated(tmp_path, body, reason):
    root = write_impl(tmp_path, f'fetch = "pypi-sdist"\npackage = "demo"\n{body}\n')
    with pytest.raises(InputError, match=reason) as err:
        load_impl("demo", root)
    assert str(err.value).startswith(str(root / "demo" / "impl.toml") + ": ")


@pytest.mark.parametrize(
    "body,reason",
    [
        ('fetch = "pypi-sdist"\npackage = "-e x"', r"package '-e x' is not a valid name"),
        ('fetch = "pypi-sdist"\npackage = "demo==1; rm"', r"package .* is not a valid name"),
        ('fetch = "go-module"\nmodule = "../x"', r"module '../x' is not a valid name"),
        ('fetch = "go-module"\nmodule = "-x/y"', r"module '-x/y' is not a valid name"),
    ],
)
def test_registry_names_are_validated(tmp_path, body, reason):
    with pytest.raises(InputError, match=reason):
        load_impl("demo", write_impl(tmp_path, body + "\n"))


def test_fetch_refuses_an_escaping_python_path_before_writing(tmp_path, monkeypatch):
    """The issue's case: a user folder's python_path led ``fetch`` to write outside DEST."""
    root = write_impl(
        tmp_path / "p", 'fetch = "pypi-sdist"\npackage = "demo"\npython_path = "../../escape"\n'
    )
    monkeypatch.setattr(fetch_mod, "_sdist", lambda *a: pytest.fail("must not download"))
    with pytest.raises(InputError, match=r"impl.toml: python_path: unsafe path"):
        fetch("demo", "1.0", tmp_path / "dest", root)
    assert not (tmp_path / "dest").exists() and not (tmp_path / "escape").exists()


@pytest.mark.parametrize("version", ["../../x", "-r", ".hidden", "a/b"])
def test_fetch_refuses_unsafe_versions(tmp_path, version):
    root = write_impl(tmp_path / "p", 'fetch = "pypi-sdist"\npackage = "demo"\n')
    with pytest.raises(UsageError, match=r"invalid version"):
        fetch("demo", version, tmp_path / "dest", root)


def test_fetch_does_not_write_through_a_symlink_in_the_sdist(tmp_path, monkeypatch):
    """A built extension is never written through a symlink below DEST (here the sdist's
    own, pointing at another folder of the tree)."""
    root = write_impl(
        tmp_path / "p", 'fetch = "pypi-sdist"\npackage = "demo"\npython_path = "src"\n'
    )
    sdist = tmp_path / "demo-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as tf:
        for name in ("demo-1.0/other/", "demo-1.0/src/"):
            info = tarfile.TarInfo(name.rstrip("/"))
            info.type = tarfile.DIRTYPE
            tf.addfile(info)
        link = tarfile.TarInfo("demo-1.0/src/pkg")
        link.type, link.linkname = tarfile.SYMTYPE, "../other"
        tf.addfile(link)
    wheel = tmp_path / "demo-1.0-cp311-x.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("pkg/_ext.so", b"\x7fELF")
    monkeypatch.setattr(fetch_mod, "_sdist", lambda *a: contextlib.nullcontext(sdist))
    monkeypatch.setattr(fetch_mod, "_built_wheel", lambda *a: wheel)
    with pytest.raises(InputError, match=r"refusing to patch through the symlink"):
        fetch("demo", "1.0", tmp_path / "dest", root)
    assert not (tmp_path / "dest").exists()


def test_symlinks_out_of_the_patches_folder_are_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "impl.toml").write_text('fetch = "pypi-sdist"\npackage = "demo"\n')
    (outside / "statemine.patch").write_text(full_patch())
    root = tmp_path / "p"
    (root / "demo").mkdir(parents=True)
    (root / "demo" / "impl.toml").symlink_to(outside / "impl.toml")
    with pytest.raises(InputError, match=r"leads outside the patches folder"):
        load_impl("demo", root)
    (root / "demo" / "impl.toml").unlink()
    (root / "demo" / "impl.toml").write_text('fetch = "pypi-sdist"\npackage = "demo"\n')
    (root / "demo" / "1.0").symlink_to(outside, target_is_directory=True)
    tree = make_tree(tmp_path / "t", ORIG)
    with pytest.raises(InputError, match=r"leads outside the patches folder"):
        apply("demo", "1.0", tree, root)


# -- records ----------------------------------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
    max_leaves=6,
)


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    where=st.sampled_from(
        [
            "impl",
            "version",
            "patch_sha256",
            "files",
            "files.0",
            "files.0.path",
            "files.0.before_sha256",
            "files.0.after_sha256",
            "files.0.before_zlib_b64",
            "files.1.path",
            "ported_from",
        ]
    ),
    value=_JSON,
)
def test_revert_reads_any_malformed_record_without_crashing(tmp_path_factory, where, value):
    """Any field of the record replaced by any JSON value: revert reverts or refuses in
    one line (InputError/UsageError naming the record), and a refusal changes nothing."""
    base = tmp_path_factory.mktemp("rec")
    patches = make_patches(base / "patches", {"1.0": full_patch()})
    tree = make_tree(base / "tree", ORIG)
    apply("demo", "1.0", tree, patches)
    rec = json.loads((tree / RECORD).read_text())
    keys = where.split(".")
    node = rec
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node[k]
    node[int(keys[-1]) if isinstance(node, list) else keys[-1]] = value
    (tree / RECORD).write_text(json.dumps(rec))
    snapshot = hashes(tree)
    try:
        revert("demo", "1.0", tree, patches)
    except (InputError, UsageError) as exc:
        assert "\n" not in str(exc)
        assert hashes(tree) == snapshot
    else:
        assert not (tree / RECORD).exists()


def test_record_listing_itself_or_a_file_twice_is_refused(tmp_path):
    patches = make_patches(tmp_path / "patches", {"1.0": full_patch()})
    tree = make_tree(tmp_path / "tree", ORIG)
    apply("demo", "1.0", tree, patches)
    rec = json.loads((tree / RECORD).read_text())
    twice = {**rec, "files": rec["files"] + rec["files"][:1]}
    (tree / RECORD).write_text(json.dumps(twice))
    with pytest.raises(InputError, match=r"malformed record: a file is listed twice"):
        revert("demo", "1.0", tree, patches)
    itself = {**rec, "files": [{**rec["files"][0], "path": RECORD}]}
    (tree / RECORD).write_text(json.dumps(itself))
    with pytest.raises(InputError, match=r"it lists itself"):
        revert("demo", "1.0", tree, patches)


# -- port: the function rule and the offset bound ---------------------------------------


def _diff(path: str, old: str, new: str) -> str:
    a, b = old.splitlines(True), new.splitlines(True)
    return "".join(difflib.unified_diff(a, b, f"a/{path}", f"b/{path}"))


def _py(functions: dict[str, list[str]], filler: int = 0) -> str:
    """A Python class whose methods have the given body lines, ``filler`` lines between."""
    out = ["class Conn:\n"]
    for name, body in functions.items():
        out.append(f"    def {name}(self, now):\n")
        out += [f"        {line}\n" for line in body]
        out += [f"        pad_{name}_{i} = {i}\n" for i in range(filler)]
        out.append("\n")
    return "".join(out)


BODY = [f"v{i} = {i}" for i in range(8)]  # the hook goes after v3: context v1..v6
OTHER = ["v0 = 0", "v1 = 1", "v2 = 2", "vv3 = 3", "v4 = 4", "v5 = 5", "v6 = 6", "v7 = 7"]


def _hooked(text: str, name: str = "send") -> str:
    """``text`` with ``hook(now)`` after ``v3 = 3`` of the function ``name``."""
    head, tail = text.split(f"def {name}(", 1)
    indent = "        " if head.endswith("    ") else "    "
    return (
        head
        + f"def {name}("
        + tail.replace(f"{indent}v3 = 3\n", f"{indent}v3 = 3\n{indent}hook(now)\n", 1)
    )


def _port_case(tmp_path, old_text, new_tree_text, patched_old_text, path="pkg/c.py"):
    patches = make_patches(tmp_path / "p", {"1.0": _diff(path, old_text, patched_old_text)})
    old = make_tree(tmp_path / "old", {path: old_text})
    tree = make_tree(tmp_path / "t", {path: new_tree_text})
    return patches, old, tree


def test_hunk_lands_in_its_function_not_the_nearest_match(tmp_path):
    """The context matches in two methods; in the new version the one the hunk belongs
    to is further away than the other: it goes there."""
    old_text = _py({"send": BODY, "consume": BODY})
    new_text = _py({"consume": BODY, "pad": ["z = 0"] * 30, "send": BODY})
    patches, old, tree = _port_case(tmp_path, old_text, new_text, _hooked(old_text))
    report = port("demo", "1.0", "2.0", tree, patches=patches, old_root=old)
    lines = (tree / "pkg/c.py").read_text().splitlines(True)
    hook = lines.index("        hook(now)\n")
    assert enclosing_function("pkg/c.py", lines, hook) == "send"
    assert report.hunks["status"].tolist() == ["offset"] and report.hunks["offset"][0] > 30
    # the old engine's choice (no function rule: the nearest match, in consume)
    patches2, _, tree2 = _port_case(tmp_path / "b", old_text, new_text, _hooked(old_text))
    port("demo", "1.0", "2.0", tree2, patches=patches2)
    lines = (tree2 / "pkg/c.py").read_text().splitlines(True)
    assert enclosing_function("pkg/c.py", lines, lines.index("        hook(now)\n")) == "consume"


def test_hunk_whose_context_matches_only_in_another_function_fails(tmp_path):
    """aioquic's case: the hook's context is gone from its function in the new version
    but matches in another one (where ``now`` may not exist): no placement, nothing written."""
    old_text = _py({"send": BODY, "consume": ["q = 0"]})
    new_text = _py({"send": OTHER, "consume": BODY})
    patches, old, tree = _port_case(tmp_path, old_text, new_text, _hooked(old_text))
    before = hashes(tree)
    with pytest.raises(
        PortFailed,
        match=r"pkg/c.py hunk 1 \(patch line 3\): its lines match "
        r"only in function consume, not in function send "
        r"where its context is, \d+ lines away",
    ):
        port("demo", "1.0", "2.0", tree, patches=patches, old_root=old)
    assert hashes(tree) == before


def test_section_text_names_the_function_without_the_old_source(tmp_path):
    """git's ``@@ ... @@ def send(...)`` header is enough when no old tree is given."""
    top = lambda name, body: f"def {name}(now):\n" + "".join(f"    {b}\n" for b in body)  # noqa: E731
    old_text = top("send", BODY) + "\n" + top("consume", ["q = 0"])
    new_text = top("send", OTHER) + "\n" + top("consume", BODY)
    patch = _diff("pkg/c.py", old_text, _hooked(old_text))
    patches = make_patches(
        tmp_path / "p", {"1.0": patch.replace(" @@\n", " @@ def send(now):\n", 1)}
    )
    tree = make_tree(tmp_path / "t", {"pkg/c.py": new_text})
    with pytest.raises(PortFailed, match=r"only in function consume, not in function send"):
        port("demo", "1.0", "2.0", tree, patches=patches)
    patches = make_patches(tmp_path / "p2", {"1.0": patch})  # no section text: offset rule only
    assert port("demo", "1.0", "2.0", tree, patches=patches, dry_run=True).hunks[
        "status"
    ].tolist() == ["offset"]


def test_offset_is_bounded(tmp_path):
    old_text = _py({"send": BODY})
    new_text = _py({"send": ["e = 0"] * 600 + BODY})
    patches, old, tree = _port_case(tmp_path, old_text, new_text, _hooked(old_text))
    with pytest.raises(PortFailed, match=r"its lines are not found within 500 lines"):
        port("demo", "1.0", "2.0", tree, patches=patches, old_root=old)
    report = port("demo", "1.0", "2.0", tree, patches=patches, old_root=old, max_offset=700)
    assert report.hunks["offset"].tolist() == [600]
    assert "        v3 = 3\n        hook(now)\n" in (tree / "pkg/c.py").read_text()


def test_go_func_rule(tmp_path):
    fn = lambda head, body: head + " {\n" + "".join(f"\t{b}\n" for b in body) + "}\n"  # noqa: E731
    old_text = (
        "package p\n\n" + fn("func (h *H) Send(now int)", BODY) + "\n" + fn("func Other()", ["q"])
    )
    new_text = (
        "package p\n\n" + fn("func (h *H) Send(now int)", OTHER) + "\n" + fn("func Other()", BODY)
    )
    patched = old_text.replace("\tv3 = 3\n", "\tv3 = 3\n\thook(now)\n", 1)
    patches, old, tree = _port_case(tmp_path, old_text, new_text, patched, path="c.go")
    with pytest.raises(PortFailed, match=r"only in function Other, not in function H.Send"):
        port("demo", "1.0", "2.0", tree, patches=patches, old_root=old)


def test_enclosing_function_python_and_go():
    src = [
        "import x\n",
        "class A:\n",
        "    def f(self):\n",
        "        if y:\n",
        "            z = (\n",
        "                1)\n",
        "        return z\n",
        "\n",
        "    def g(self):\n",
        "        pass\n",
        "X = 1\n",
    ]
    assert [enclosing_function("a.py", src, i) for i in range(len(src))] == [
        None,
        None,
        "f",
        "f",
        "f",
        "f",
        "f",
        "f",
        "g",
        "g",
        None,
    ]
    go = [
        "package p\n",
        "func F() {\n",
        "\tx()\n",
        "}\n",
        "\n",
        "func (r *R[T]) M() {\n",
        "\ty()\n",
        "}\n",
    ]
    assert [enclosing_function("a.go", go, i) for i in range(len(go))] == [
        None,
        "F",
        "F",
        "F",
        None,
        "R.M",
        "R.M",
        "R.M",
    ]
    assert enclosing_function("a.c", go, 2) is None
