"""The report as a browser shows it: headless Chromium lays out the shipped-trace reports
(the golden cases' command lines: two sides with outcomes, one side, qlog) at 1,400 and
800 px and finds no element past the window's edge outside a scroll box, no number cell
wrapped, every image loaded and nothing logged as an error (tests/browser.py)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from browser import WIDTHS, check_page, chromium
from click.testing import CliRunner
from golden import CASES, ROOT

from statemine.cli import main

pytestmark = [
    pytest.mark.slow,  # about a minute: three reports, eight Chromium runs
    pytest.mark.skipif(
        chromium() is None, reason="chromium is not installed (.ci/run installs it)"
    ),
]

REPORTS = ("report-mobile", "report-single", "report-qlog")


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("reports")
    made = {}
    for case in REPORTS:
        folder = out / case
        folder.mkdir()
        with contextlib.chdir(ROOT):
            args = [a.replace("{out}", str(folder)) for a in CASES[case]]
            res = CliRunner().invoke(main, args)
        assert res.exit_code == 0, res.output
        made[case] = folder / "report.html"
    return made


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", REPORTS)
def test_the_report_fits_the_window(pages, case, width):
    found = check_page(pages[case], width)
    assert found["inner_width"] == width
    assert found["scroll_width"] <= width, found["overflowing"][:5]
    assert found["overflowing"] == []
    assert found["wrapped_numbers"] == []
    assert found["images"] >= 2 and found["broken_images"] == []
    assert found["errors"] == []


def test_the_check_finds_what_a_reader_would_hit(tmp_path):
    """The same check on a page with each fault: a wide table outside a scroll box, a
    number cell squeezed onto two lines, an image that does not load, a console error."""
    cells = "".join(f"<td>{'x' * 40}</td>" for _ in range(40))
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
        f"<table><tr>{cells}</tr></table>"
        '<table style="width:3em"><tr><td class="n">+46.8 [+33.8, +58.0] pp</td></tr></table>'
        '<img alt="broken" src="data:image/png;base64,AAAA">'
        "<script>console.error('boom')</script></body></html>"
    )
    found = check_page(page, 800)
    assert found["scroll_width"] > 800 and any(o.startswith("table") for o in found["overflowing"])
    assert found["wrapped_numbers"] == ["+46.8 [+33.8, +58.0] pp"]
    assert found["broken_images"] == ["broken"]
    assert "boom" in found["errors"]
