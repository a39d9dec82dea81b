"""statemine.resources.data_dir: the packaged copy of a shipped folder first, else the
checkout's folder, else a one-line error."""

import sys

import pytest

from statemine.errors import StatemineError
from statemine.resources import PACKAGED, data_dir


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    """A package ``smfake`` in ``tmp_path/checkout`` (no data folders yet)."""
    root = tmp_path / "checkout"
    (root / "smfake").mkdir(parents=True)
    (root / "smfake" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(root))
    yield root
    sys.modules.pop("smfake", None)


def test_a_checkout_uses_its_own_folder(fake_package):
    (fake_package / "examples" / "scenarios").mkdir(parents=True)
    assert data_dir("examples/scenarios", "smfake") == fake_package / "examples" / "scenarios"


def test_the_packaged_copy_comes_first(fake_package):
    (fake_package / "instrument-patches").mkdir()
    packaged = fake_package / "smfake" / PACKAGED / "instrument-patches"
    packaged.mkdir(parents=True)
    assert data_dir("instrument-patches", "smfake") == packaged


def test_a_missing_folder_is_one_line(fake_package):
    with pytest.raises(StatemineError, match=r"^smfake's nothing/ folder is missing: ") as e:
        data_dir("nothing", "smfake")
    assert "\n" not in str(e.value)


def test_this_checkout_finds_the_patches_and_scenarios():
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    assert data_dir("instrument-patches") in (
        repo / "instrument-patches",
        repo / "statemine" / PACKAGED / "instrument-patches",
    )
    assert (data_dir("examples/scenarios") / "mobile.toml").is_file()
