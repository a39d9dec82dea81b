"""A page as a browser lays it out: headless Chromium (Debian's ``chromium``) loads a copy
of an HTML file with a small script added, and reports what a reader would hit.

:func:`check_page` returns, for one window width (CSS pixels):

* ``inner_width``, ``scroll_width`` -- the window's and the document's width: a document
  wider than the window scrolls sideways as a whole (the page overflows);
* ``overflowing`` -- elements whose right edge is past the window and that are not inside
  a box that scrolls sideways (``overflow-x: auto|scroll``), as ``tag.class: text``;
* ``wrapped_numbers`` -- number cells (``td.n``: a number and its unit) laid out on
  more than one line;
* ``broken_images`` -- images not loaded (``naturalWidth`` 0), by their alt text;
* ``errors`` -- what the page logged through ``console.error`` or raised, and the console
  messages of level ERROR or WARNING Chromium itself printed (``--enable-logging``).

Chromium is driven through its command line only (``--headless --dump-dom``): the script
writes its findings as JSON into a ``<pre>`` the dumped DOM carries. No browser is
downloaded; nothing leaves the machine (the page is a local file without external
references, and the check fails if it had any). :func:`screenshot` saves a PNG of the
whole page for a person to look at:
``python3 tests/browser.py PAGE.html OUT_DIR`` writes ``OUT_DIR/<page>-<width>.png`` at
1,400 and 800 px.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: The window widths the report is checked at (CSS pixels): a desktop and a narrow window.
WIDTHS = (1400, 800)

_CHECK = r"""
<script>
(() => {
  const errors = [];
  const original = console.error.bind(console);
  console.error = (...args) => { errors.push(args.map(String).join(" ")); original(...args); };
  window.addEventListener("error", (e) => {
    const t = e.target;
    errors.push(t && t !== window ? "failed to load " + (t.src || t.href || t.tagName) : String(e.message));
  }, true);
  const scrolls = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const x = getComputedStyle(p).overflowX;
      if (x === "auto" || x === "scroll") return true;
    }
    return false;
  };
  const name = (el) => {
    const cls = typeof el.className === "string" && el.className ? "." + el.className : "";
    return el.tagName.toLowerCase() + cls + ": " + (el.textContent || el.alt || "").trim().slice(0, 60);
  };
  window.addEventListener("load", () => {
    const width = window.innerWidth;
    const overflowing = [];
    for (const el of document.body.querySelectorAll("*")) {
      const r = el.getBoundingClientRect();
      if (r.width > 0 && r.right > width + 0.5 && !scrolls(el)) overflowing.push(name(el) + " (right " + Math.round(r.right) + ")");
    }
    const wrapped = [];
    for (const td of document.querySelectorAll("td.n")) {
      const range = document.createRange();
      range.selectNodeContents(td);
      const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
      if (lines.size > 1) wrapped.push(td.textContent);
    }
    const broken = [...document.images].filter((i) => !i.complete || i.naturalWidth === 0).map((i) => i.alt || i.src.slice(0, 40));
    const out = {
      inner_width: width,
      scroll_width: document.documentElement.scrollWidth,
      scroll_height: document.documentElement.scrollHeight,
      images: document.images.length,
      overflowing: overflowing,
      wrapped_numbers: wrapped,
      broken_images: broken,
      errors: errors,
    };
    const pre = document.createElement("pre");
    pre.id = "statemine-browser-check";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  });
})();
</script>
"""
_RESULT = re.compile(r'<pre id="statemine-browser-check">(.*?)</pre>', re.DOTALL)
#: Chromium's console lines on stderr with --enable-logging: ``...:INFO:CONSOLE(3)] "text"``;
#: its own level is in the message source, so page messages are told by their level word.
_CONSOLE = re.compile(r':(?:INFO|WARNING|ERROR):CONSOLE\(\d+\)\] "(.*)", source:')


def chromium() -> str | None:
    """The Chromium executable (``chromium``, ``chromium-browser``), None when absent."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _run(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    exe = chromium()
    if exe is None:
        raise RuntimeError("chromium is not installed (apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="statemine-chromium-") as profile:
        return subprocess.run(
            [
                exe,
                "--headless",
                "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-sync",
                "--disable-component-update",
                "--disable-default-apps",
                f"--user-data-dir={profile}",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "TZ": "UTC"},
        )


def check_page(page: Path, width: int, height: int = 900) -> dict:
    """Load ``page`` in a ``width`` x ``height`` window and return the findings (module
    text); raises RuntimeError when Chromium fails or the script did not report."""
    html = page.read_text(encoding="utf-8")
    where = html.find("<head>")
    checked = html[: where + 6] + _CHECK + html[where + 6 :] if where >= 0 else _CHECK + html
    with tempfile.TemporaryDirectory(prefix="statemine-page-") as tmp:
        copy = Path(tmp) / page.name
        copy.write_text(checked, encoding="utf-8")
        res = _run(
            [
                "--enable-logging=stderr",
                "--v=0",
                f"--window-size={width},{height}",
                "--virtual-time-budget=10000",
                "--dump-dom",
                copy.as_uri(),
            ]
        )
    found = _RESULT.search(res.stdout)
    if found is None:
        raise RuntimeError(f"chromium gave no result (exit {res.returncode}): {res.stderr[-2000:]}")
    import html as html_module

    result = json.loads(html_module.unescape(found.group(1)))
    result["errors"] += [m for m in _CONSOLE.findall(res.stderr) if m not in result["errors"]]
    return result


def screenshot(page: Path, width: int, png: Path) -> Path:
    """A PNG of the whole of ``page`` at window width ``width`` (its height measured first)."""
    height = check_page(page, width)["scroll_height"]
    res = _run(
        [
            f"--window-size={width},{max(height, 600)}",
            f"--screenshot={png}",
            page.resolve().as_uri(),
        ]
    )
    if not png.is_file():
        raise RuntimeError(f"chromium wrote no screenshot (exit {res.returncode}): {res.stderr}")
    return png


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python3 tests/browser.py PAGE.html OUT_DIR")
    page, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    for w in WIDTHS:
        print(json.dumps(check_page(page, w)))
        print(screenshot(page, w, out / f"{page.stem}-{w}.png"))
