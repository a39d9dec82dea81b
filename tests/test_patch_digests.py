"""Every fetched archive is checked against the digest pinned for its version, cached or
not (issue 27 item 6), on a small made-up package: a tampered cached sdist, wheel or
.crate, or a Go module's tampered files, are refused in one line naming the file (exit 2),
with nothing written to DEST; a version with no pin never uses the cache."""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib
import io
import json
import shutil
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from statemine.cli import main
from statemine.errors import InputError, StatemineError
from statemine.patch import fetch, load_impl, pristine
from statemine.patch.registry import pinned_digest

fetch_mod = importlib.import_module("statemine.patch.fetch")
cargo_mod = importlib.import_module("statemine.patch.cargo")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sdist_bytes(body: bytes = b"VALUE = 1\n", top: str = "demo-1.0") -> bytes:
    """A small sdist, the same bytes on every call (gzip's time stamp fixed)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in ((f"{top}/setup.py", b""), (f"{top}/src/pkg/__init__.py", body)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return gzip.compress(buf.getvalue(), mtime=0)


def wheel_bytes(so: bytes = b"\x7fELF good") -> bytes:
    """A small wheel, the same bytes on every call (fixed time stamps)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in (("pkg/_ext.so", so), ("pkg/__init__.py", b"VALUE = 1\n")):
            zf.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data)
    return buf.getvalue()


@pytest.fixture
def demo(tmp_path, monkeypatch):
    """A patches folder pinning demo 1.0's sdist, and a cache holding that sdist and a
    wheel built from it (with its record); no registry may be asked."""
    patches = tmp_path / "p"
    (patches / "demo").mkdir(parents=True)
    (patches / "demo" / "impl.toml").write_text(
        'fetch = "pypi-sdist"\npackage = "demo"\npython_path = "src"\n'
    )
    sdist = sdist_bytes()
    (patches / "demo" / "digests.toml").write_text(f'[sha256]\n"1.0" = "{sha256(sdist)}"\n')
    cache = tmp_path / "cache"
    monkeypatch.setenv("STATEMINE_CACHE", str(cache))
    d = cache / "pypi" / "demo" / "1.0"
    d.mkdir(parents=True)
    (d / "demo-1.0.tar.gz").write_bytes(sdist)
    tag = f"{sys.implementation.cache_tag}-{sysconfig.get_platform()}"
    wd = d / "wheel" / f"{tag}-{sha256(sdist)[:16]}"
    wd.mkdir(parents=True)
    wheel = wheel_bytes()
    (wd / "demo-1.0-py3-none-any.whl").write_bytes(wheel)
    record = {
        "sdist_sha256": sha256(sdist),
        "wheel": "demo-1.0-py3-none-any.whl",
        "sha256": sha256(wheel),
    }
    (wd / "record.json").write_text(json.dumps(record))

    def no_registry(cmd, *a, **k):
        raise AssertionError(f"no registry may be asked: {cmd}")

    monkeypatch.setattr(fetch_mod, "_run", no_registry)
    return {"patches": patches, "sdist": d / "demo-1.0.tar.gz", "wheel_dir": wd}


def test_pinned_and_untouched_cache_is_used(demo, tmp_path):
    root = fetch("demo", "1.0", tmp_path / "dest", demo["patches"])
    rec = json.loads((root / ".statemine-source.json").read_text())
    assert rec["sha256"] == sha256(sdist_bytes()) and rec["pinned"] is True
    assert rec["wheel_sha256"] == sha256(wheel_bytes())
    assert (root / "src/pkg/_ext.so").read_bytes() == b"\x7fELF good"
    assert (root / "src/pkg/__init__.py").read_bytes() == b"VALUE = 1\n"


def _cli_fetch(patches: Path, dest: Path, version: str = "1.0"):
    args = ["patch", "fetch", "--patches", str(patches), "--impl", "demo"]
    return CliRunner().invoke(main, [*args, "--version", version, str(dest)])


def test_a_tampered_cached_sdist_is_refused(demo, tmp_path):
    demo["sdist"].write_bytes(sdist_bytes(b"import os; os.system('evil')\n"))
    with pytest.raises(StatemineError, match=r"is not the [0-9a-f]{64} pinned in .*digests.toml"):
        fetch("demo", "1.0", tmp_path / "dest", demo["patches"])
    assert not (tmp_path / "dest").exists()
    (tmp_path / "empty").mkdir()
    res = _cli_fetch(demo["patches"], tmp_path / "empty")
    assert res.exit_code == 2 and res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and str(demo["sdist"]) in lines[0] and "Traceback" not in res.stderr
    assert list((tmp_path / "empty").iterdir()) == []


def test_a_tampered_cached_wheel_is_refused(demo, tmp_path):
    wheel = demo["wheel_dir"] / "demo-1.0-py3-none-any.whl"
    wheel.write_bytes(wheel_bytes(b"\x7fELF foreign"))
    res = _cli_fetch(demo["patches"], tmp_path / "dest")
    assert res.exit_code == 2 and "Traceback" not in res.stderr
    line = res.stderr.strip()
    assert "\n" not in line and line.startswith(f"statemine: error: {wheel}: sha256 "), line
    assert "recorded when it was built" in line
    assert not (tmp_path / "dest").exists()


@pytest.mark.parametrize(
    "record,reason",
    [
        ("not json", "unreadable wheel record"),
        ('{"wheel": 1}', "needs the strings"),
        ('{"sdist_sha256": "x", "wheel": "../../x.whl", "sha256": "y"}', "not a wheel's name"),
        ('{"sdist_sha256": "00", "wheel": "demo-1.0-py3-none-any.whl", "sha256": "y"}', "another"),
    ],
)
def test_a_damaged_wheel_record_is_refused(demo, tmp_path, record, reason):
    (demo["wheel_dir"] / "record.json").write_text(record)
    with pytest.raises(InputError, match=reason) as err:
        fetch("demo", "1.0", tmp_path / "dest", demo["patches"])
    assert err.value.file == str(demo["wheel_dir"] / "record.json")
    assert not (tmp_path / "dest").exists()


def test_a_foreign_file_beside_the_cached_wheel_is_refused(demo, tmp_path):
    (demo["wheel_dir"] / "other-1.0-py3-none-any.whl").write_bytes(wheel_bytes())
    with pytest.raises(StatemineError, match=r"files the record does not name"):
        fetch("demo", "1.0", tmp_path / "dest", demo["patches"])


def test_a_fresh_download_must_match_the_pin_and_is_cached_only_then(demo, tmp_path, monkeypatch):
    demo["sdist"].unlink()

    def download(impl, version, into):
        (into / "demo-1.0.tar.gz").write_bytes(sdist_bytes(b"VALUE = 2\n"))  # not the pinned
        return into / "demo-1.0.tar.gz"

    monkeypatch.setattr(fetch_mod, "_download_sdist", download)
    with pytest.raises(StatemineError, match=r"demo-1.0.tar.gz as downloaded from PyPI: sha256"):
        fetch("demo", "1.0", tmp_path / "dest", demo["patches"])
    assert not demo["sdist"].exists() and not (tmp_path / "dest").exists()
    assert [p.name for p in demo["sdist"].parent.iterdir()] == ["wheel"]  # no temp dir left
    monkeypatch.setattr(
        fetch_mod,
        "_download_sdist",
        lambda impl, version, into: (
            (into / "demo-1.0.tar.gz").write_bytes(sdist_bytes()) and into / "demo-1.0.tar.gz"
        ),
    )
    fetch("demo", "1.0", tmp_path / "dest", demo["patches"])
    assert demo["sdist"].read_bytes() == sdist_bytes()


def test_an_unpinned_version_ignores_the_cache_and_is_never_cached(demo, tmp_path, monkeypatch):
    d = demo["sdist"].parent.parent / "2.0"
    d.mkdir()
    (d / "demo-2.0.tar.gz").write_bytes(b"tampered, never read")
    downloads = []

    def download(impl, version, into):
        downloads.append(version)
        (into / "demo-2.0.tar.gz").write_bytes(sdist_bytes(b"VALUE = 2\n", top="demo-2.0"))
        return into / "demo-2.0.tar.gz"

    wheel = tmp_path / "demo-2.0-py3-none-any.whl"
    wheel.write_bytes(wheel_bytes(b"\x7fELF two"))
    monkeypatch.setattr(fetch_mod, "_download_sdist", download)
    monkeypatch.setattr(fetch_mod, "_built_wheel", lambda *a: wheel)
    assert pinned_digest("demo", "2.0", demo["patches"]) is None
    res = _cli_fetch(demo["patches"], tmp_path / "dest", "2.0")
    assert res.exit_code == 0, res.output
    assert "note: no digest is pinned for demo 2.0" in res.stdout
    root = tmp_path / "dest"
    assert (root / "src/pkg/__init__.py").read_bytes() == b"VALUE = 2\n"
    assert (root / "src/pkg/_ext.so").read_bytes() == b"\x7fELF two"
    rec = json.loads((root / ".statemine-source.json").read_text())
    assert rec["pinned"] is False
    assert rec["sha256"] == sha256(sdist_bytes(b"VALUE = 2\n", top="demo-2.0"))
    fetch("demo", "2.0", tmp_path / "dest2", demo["patches"])
    assert downloads == ["2.0", "2.0"]  # downloaded afresh each time
    assert sorted(p.name for p in d.iterdir()) == ["demo-2.0.tar.gz"]
    assert (d / "demo-2.0.tar.gz").read_bytes() == b"tampered, never read"


def test_pristine_checks_the_archive_on_every_call(demo):
    tree = pristine("demo", "1.0", demo["patches"])
    assert (tree / "src/pkg/__init__.py").read_bytes() == b"VALUE = 1\n"
    assert tree.name == f"1.0-{sha256(sdist_bytes())[:16]}"
    demo["sdist"].write_bytes(sdist_bytes(b"VALUE = 666\n"))
    with pytest.raises(StatemineError, match=r"demo-1.0.tar.gz: sha256 .* pinned in"):
        pristine("demo", "1.0", demo["patches"])


@pytest.mark.parametrize(
    "text,reason",
    [
        ('[sha256]\n"1.0" = "abc"\n', r"sha256.1.0: 'abc' is not a sha256 digest"),
        ('[md5]\n"1.0" = "abc"\n', r"needs exactly one table"),
        ('[sha256]\n"../x" = "' + "0" * 64 + '"\n', r"invalid version"),
        ("[sha256\n", r"bad digests.toml"),
    ],
)
def test_digests_file_is_checked(demo, text, reason):
    path = demo["patches"] / "demo" / "digests.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=reason) as err:
        pinned_digest("demo", "1.0", demo["patches"])
    assert err.value.file == str(path)


def test_shipped_pins_cover_every_patched_version():
    """Every version with a patch has its archive pinned, in the form its fetch checks."""
    from statemine.patch import implementations, versions

    for impl in implementations():
        kind = load_impl(impl).fetch
        for version in versions(impl):
            pin = pinned_digest(impl, version)
            assert pin is not None, (impl, version)
            assert pin.startswith("h1:") == (kind == "go-module"), (impl, version)


# -- crates -----------------------------------------------------------------------------


def _crate_setup(tmp_path, monkeypatch, crate: bytes):
    patches = tmp_path / "p"
    (patches / "demo").mkdir(parents=True)
    (patches / "demo" / "impl.toml").write_text('fetch = "crates-io"\ncrate = "demo"\n')
    (patches / "demo" / "digests.toml").write_text(f'[sha256]\n"1.0" = "{sha256(crate)}"\n')
    monkeypatch.setenv("STATEMINE_CACHE", str(tmp_path / "cache"))
    return patches


def test_a_tampered_cached_crate_is_refused(tmp_path, monkeypatch):
    crate = sdist_bytes()
    patches = _crate_setup(tmp_path, monkeypatch, crate)
    fetched = []

    def cargo_fetch(name, version, tmp):
        fetched.append(version)
        (tmp / "demo-1.0.crate").write_bytes(crate)
        return tmp / "demo-1.0.crate"

    monkeypatch.setattr(cargo_mod, "_cargo_fetch", cargo_fetch)
    root = fetch("demo", "1.0", tmp_path / "dest", patches)
    assert (root / "src/pkg/__init__.py").is_file() and fetched == ["1.0"]
    cached = tmp_path / "cache/crates/demo/1.0/demo-1.0.crate"
    assert cached.read_bytes() == crate
    fetch("demo", "1.0", tmp_path / "dest2", patches)
    assert fetched == ["1.0"]  # the second fetch used the (checked) cache
    cached.write_bytes(sdist_bytes(b"evil\n"))
    with pytest.raises(StatemineError, match=rf"^{cached}: sha256 [0-9a-f]{{64}} is not the"):
        fetch("demo", "1.0", tmp_path / "dest3", patches)
    assert not (tmp_path / "dest3").exists()


def test_cargo_fetching_another_crate_than_pinned_is_refused(tmp_path, monkeypatch):
    patches = _crate_setup(tmp_path, monkeypatch, sdist_bytes())

    def cargo_fetch(name, version, tmp):
        (tmp / "demo-1.0.crate").write_bytes(sdist_bytes(b"other\n"))
        return tmp / "demo-1.0.crate"

    monkeypatch.setattr(cargo_mod, "_cargo_fetch", cargo_fetch)
    with pytest.raises(StatemineError, match=r"demo-1.0.crate as fetched by cargo: sha256"):
        fetch("demo", "1.0", tmp_path / "dest", patches)
    assert not (tmp_path / "cache/crates/demo/1.0/demo-1.0.crate").exists()
    assert not (tmp_path / "dest").exists()


# -- Go modules -------------------------------------------------------------------------


def h1_by_hand(files: dict[str, bytes], prefix: str) -> str:
    """go.sum's h1: from its definition, for a handful of files."""
    lines = "".join(f"{sha256(files[n])}  {prefix}/{n}\n" for n in sorted(files))
    return "h1:" + base64.b64encode(hashlib.sha256(lines.encode()).digest()).decode()


def test_go_module_files_are_checked_against_the_pinned_h1(tmp_path, monkeypatch):
    files = {"go.mod": b"module example.com/m\n", "a/b.go": b"package a\n", "z.go": b"package m\n"}
    moddir = tmp_path / "modcache" / "example.com" / "m@v1.0.0"
    for name, data in files.items():
        (moddir / name).parent.mkdir(parents=True, exist_ok=True)
        (moddir / name).write_bytes(data)
    zip_path = tmp_path / "m.zip"
    zip_path.write_bytes(b"zip")
    patches = tmp_path / "p"
    (patches / "demo").mkdir(parents=True)
    (patches / "demo" / "impl.toml").write_text('fetch = "go-module"\nmodule = "example.com/m"\n')
    h1 = h1_by_hand(files, "example.com/m@v1.0.0")
    (patches / "demo" / "digests.toml").write_text(f'[go_sum]\n"v1.0.0" = "{h1}"\n')
    info = {"Dir": str(moddir), "Zip": str(zip_path), "Version": "v1.0.0", "Sum": h1}
    monkeypatch.setattr(fetch_mod, "_go_download", lambda impl, version: info)
    root = fetch("demo", "v1.0.0", tmp_path / "dest", patches)
    rec = json.loads((root / ".statemine-source.json").read_text())
    assert rec["go_sum"] == h1 and rec["pinned"] is True
    (moddir / "a/b.go").write_bytes(b"package a // tampered\n")
    with pytest.raises(StatemineError, match=rf"^{moddir}: the module's files hash to h1:"):
        fetch("demo", "v1.0.0", tmp_path / "dest2", patches)
    assert not (tmp_path / "dest2").exists()


def test_go_env_always_consults_the_checksum_database(monkeypatch, tmp_path):
    for var, value in (("GONOSUMDB", "*"), ("GOPRIVATE", "*"), ("GOINSECURE", "*")):
        monkeypatch.setenv(var, value)
    monkeypatch.setenv("GOSUMDB", "off")
    env = fetch_mod._go_env(tmp_path)
    assert not {"GONOSUMDB", "GOPRIVATE", "GOINSECURE", "GOSUMDB"} & set(env)
    assert env["GOENV"] == "off" and env["GOFLAGS"] == "-modcacherw"


def test_the_wheel_is_built_by_pep_517_on_every_pip(demo, tmp_path, monkeypatch):
    """Debian 12's venv pip (23.0.1) would run aioquic 0.9.x's legacy ``setup.py
    bdist_wheel`` (no pyproject.toml), which fails without the ``wheel`` package: the
    build asks for PEP 517 through the variable every pip up to 25 reads."""
    shutil.rmtree(demo["wheel_dir"])
    calls = []

    def pip_wheel(cmd, cwd, env=None):
        calls.append((cmd, env))
        (cwd / "demo-1.0-py3-none-any.whl").write_bytes(wheel_bytes())
        return ""

    monkeypatch.setattr(fetch_mod, "_run", pip_wheel)
    root = fetch("demo", "1.0", tmp_path / "dest", demo["patches"])
    ((cmd, env),) = calls
    assert cmd[1:4] == ["-m", "pip", "wheel"] and env is not None
    assert env["PIP_USE_PEP517"] == "1"
    rec = json.loads((demo["wheel_dir"] / "record.json").read_text())
    assert rec == {
        "sdist_sha256": sha256(sdist_bytes()),
        "wheel": "demo-1.0-py3-none-any.whl",
        "sha256": sha256(wheel_bytes()),
    }
    assert (
        json.loads((root / ".statemine-source.json").read_text())["wheel_sha256"] == rec["sha256"]
    )
    fetch("demo", "1.0", tmp_path / "dest2", demo["patches"])
    assert len(calls) == 1  # the recorded wheel is reused
