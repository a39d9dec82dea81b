"""Golden outputs: what the commands print and write, recorded once and compared byte for byte.

Every case is one ``statemine`` command line run in-process (click's runner) from the
repository root with ``COLUMNS=100``, on the shipped lab traces (``traces/``) and on a few
inputs of ``tests/data`` (statemine logs, qlog, a regex log). Its golden folder
``tests/data/golden/<case>/`` holds ``stdout.txt``, ``stderr.txt``, ``exit.txt`` and every
file the command wrote. These guard refactors (issue #12): a change of output bytes must be
deliberate, re-recorded in the same commit and said so in its message.

Normalized before comparing (both sides), because they depend on tools, not on statemine:

* a Graphviz SVG becomes the list of its ``<title>`` texts (nodes and edges, in order);
  the DOT it was drawn from is recorded whole (``model.dot``, ``diff.dot``);
* an SVG image inside the HTML report becomes ``normalized:<kind>:<sha256>``: Graphviz
  ones hash their title list, matplotlib ones their text without the ``dc:date`` stamp
  and with its random clip-path and marker ids renumbered (a matplotlib upgrade means re-recording);
* the temporary output path is written ``<OUT>`` (in the report's command line too);
* the provenance's date and statemine version (``created_utc`` and ``statemine_version`` of
  provenance.json, the report's ``prov-date`` and ``prov-version``) are written
  ``<DATE>`` and ``<VERSION>`` (:func:`normalize_provenance`): they change with every
  run and release, not with statemine's output. The command line and the inputs' digests
  are compared as written.

Files over ``MAX_STORED`` bytes are stored as ``<name>.sha256`` (their normalized hash).

Compared (:func:`mismatch`): byte for byte where no third-party numeric library lies on the
path (``exit.txt``, the Graphviz title lists ``*.svg``, hashes ``*.sha256``: names and
structure only); every other file (CSV, JSON, DOT, text, stdout/stderr, HTML) token by
token: the text between numbers exactly, integers exactly, and numbers written with a
fraction or exponent within ``REL_TOL`` (or ``ABS_TOL`` near zero), because their last
digits come from numpy, scipy and pandas (summation order, bootstrap quantiles) and move
with their releases (numpy 2.4 / pandas 3.1 / scipy 1.17 moved the 16th digit of
bootstrap bounds). CONTRIBUTING.md says the same.

Re-record (deliberately): ``python3 tests/golden.py --record [CASE...]``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import math
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "data" / "golden"
MAX_STORED = 200_000  # bytes; larger outputs are stored as their sha256

_LOG_A = "traces/quic-go-versions/runs/quic-go-v0.65.0-s12-3c2638cc86bc/run.log.gz"
_LOG_B = "traces/mobile/runs/aioquic-1.7.2-s1-9275116b094e/run.log.gz"
_QLOG = [
    f"tests/data/qlog/{name}"
    for name in (
        "draft00.qlog",
        "draft00_mvfst.qlog",
        "draft01.qlog",
        "draft01_picoquic.qlog",
        "draft02.qlog",
        "draft02.ndjson",
        "file_schema.qlog",
        "file_schema.sqlog",
        "v04.qlog",
    )
]
_SERVER = ["--select", "role=server"]
_PROFILES = ["--select-a", "profile=desktop", "--select-b", "profile=mobile"]
_PROFILE_LABELS = ["--label-a", "desktop", "--label-b", "mobile"]

#: case name -> argv; ``{out}`` is replaced by a fresh output path (a folder, or report.html).
CASES: dict[str, list[str]] = {
    **{
        f"infer-{name}": ["infer", f"traces/{name}", "--out", "{out}"]
        for name in ("mobile", "jitter", "quic-go-versions", "aioquic-versions", "cellular")
    },
    "infer-readme": [
        "infer",
        "traces/quic-go-versions",
        *_SERVER,
        "--select",
        "version=v0.63.0",
        "--select",
        "jitter_ms=10",
        "--out",
        "{out}",
    ],
    "infer-options": [
        "infer",
        "traces/mobile",
        *_SERVER,
        "--collapse-repeats",
        "--end",
        "last-state",
        "--bootstrap",
        "300",
        "--seed",
        "7",
        "--confidence",
        "0.9",
        "--title",
        'mobile <servers> & "options"',
        "--out",
        "{out}",
    ],
    "infer-log": ["infer", _LOG_A, _LOG_B, "--out", "{out}"],
    "infer-log-options": [
        "infer",
        _LOG_A,
        _LOG_B,
        "--collapse-repeats",
        "--end",
        "last-state",
        "--bootstrap",
        "0",
        "--out",
        "{out}",
    ],
    "infer-log-print": ["infer", _LOG_A],
    "infer-qlog": ["infer", *_QLOG, "--out", "{out}"],
    "infer-regex": [
        "infer",
        "tests/data/golden/inputs/custom.log",
        "--format",
        "regex",
        "-r",
        r"(?<DTIME>\S+) quic conn=(?<conn>\S+) cc_state (?<TYPE>\S+).*",
        "-i",
        "-m",
        r"\k<conn>",
        "--out",
        "{out}",
    ],
    "diff-mobile": [
        "diff",
        "traces/mobile",
        "traces/mobile",
        *_SERVER,
        *_PROFILES,
        *_PROFILE_LABELS,
        "--strata",
        "implementation",
        "--out",
        "{out}",
    ],
    "diff-cellular": [
        "diff",
        "traces/cellular",
        "traces/cellular",
        *_SERVER,
        *_PROFILES,
        "--permutations",
        "999",
        "--bootstrap",
        "500",
        "--out",
        "{out}",
    ],
    "diff-jitter": [
        "diff",
        "traces/jitter",
        "traces/jitter",
        *_SERVER,
        "--select-a",
        "jitter_ms=0",
        "--select-b",
        "jitter_ms=10",
        "--strata",
        "implementation",
        "--permutations",
        "999",
        "--bootstrap",
        "300",
        "--out",
        "{out}",
    ],
    "diff-quic-go-versions": [
        "diff",
        "traces/quic-go-versions",
        "traces/quic-go-versions",
        *_SERVER,
        "--select-a",
        "version=v0.63.0",
        "--select-b",
        "version=v0.65.0",
        "--out",
        "{out}",
    ],
    "diff-aioquic-versions": [
        "diff",
        "traces/aioquic-versions",
        "traces/aioquic-versions",
        *_SERVER,
        "--select-a",
        "version=0.9.20",
        "--select-b",
        "version=1.7.2",
        "--test",
        "g",
        "--collapse-repeats",
        "--end",
        "last-state",
        "--seed",
        "3",
        "--permutations",
        "1999",
        "--bootstrap",
        "400",
        "--out",
        "{out}",
    ],
    "diff-parquet": [
        "diff",
        "tests/data/diff/quic-go-mobile-servers.parquet",
        "tests/data/diff/quic-go-mobile-servers.parquet",
        *_PROFILES,
        "--out",
        "{out}",
    ],
    "diff-logs": ["diff", _LOG_A, _LOG_B, "--no-svg", "--out", "{out}"],
    "report-mobile": [
        "report",
        "traces/mobile",
        "traces/mobile",
        *_SERVER,
        *_PROFILES,
        *_PROFILE_LABELS,
        "--results",
        "traces/mobile/results.csv",
        "--by",
        "profile",
        "--values",
        "desktop,mobile",
        "--permutations",
        "999",
        "--bootstrap",
        "500",
        "--out",
        "{out}/report.html",
    ],
    "report-single": [
        "report",
        "traces/quic-go-versions",
        *_SERVER,
        "--select",
        "version=v0.65.0",
        "--title",
        "quic-go <v0.65.0>",
        "--out",
        "{out}/report.html",
    ],
    "report-qlog": ["report", _QLOG[2], _QLOG[-1], "--out", "{out}/report.html"],
}

#: Relative tolerance of a number with a fraction or exponent (float64 carries ~16 digits;
#: a library's reordered sum moves the last one or two, a real change moves far more).
REL_TOL = 1e-9
#: Absolute tolerance beside it, for values that are zero up to rounding (0 vs 1e-17).
ABS_TOL = 1e-12
#: Files compared byte for byte (names ending so): no numeric library computes them.
EXACT_SUFFIXES = ("exit.txt", ".svg", ".sha256")
#: A number token: optional sign, digits with an optional fraction, optional exponent.
_NUMBER = re.compile(r"([-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)")

_TITLE = re.compile(r"<title>(.*?)</title>", re.DOTALL)
_DATA_SVG = re.compile(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)")
_SVG_ID = re.compile(r"\b[mp][0-9a-f]{10}\b")
_DATE = re.compile(r"<dc:date>[^<]*</dc:date>")
_PROV_JSON = re.compile(r'("(created_utc|statemine_version)": )"[^"]*"')
_PROV_HTML = re.compile(r'(<dd id="prov-(date|version)">)[^<]*')
_PROV_SHOWN = {"created_utc": "<DATE>", "statemine_version": "<VERSION>"}
_PROV_SHOWN |= {"date": "<DATE>", "version": "<VERSION>"}


def normalize_provenance(text: str) -> str:
    """``text`` (provenance.json or a report page) with the provenance's date and
    statemine version written ``<DATE>`` and ``<VERSION>``."""
    text = _PROV_JSON.sub(lambda m: f'{m.group(1)}"{_PROV_SHOWN[m.group(2)]}"', text)
    return _PROV_HTML.sub(lambda m: m.group(1) + _PROV_SHOWN[m.group(2)], text)


def _graphviz_summary(svg: str) -> str:
    """A Graphviz SVG as its title texts, one a line (stable across Graphviz versions)."""
    return "graphviz svg, titles:\n" + "\n".join(_TITLE.findall(svg)) + "\n"


def _matplotlib_normal(svg: str) -> str:
    """A matplotlib SVG without its date stamp, random ids numbered in order of appearance."""
    ids: dict[str, str] = {}
    svg = _DATE.sub("<dc:date/>", svg)
    return _SVG_ID.sub(lambda m: ids.setdefault(m.group(0), f"id{len(ids)}"), svg)


def _embedded(match: re.Match[str]) -> str:
    svg = base64.b64decode(match.group(1)).decode("utf-8")
    if "Generated by graphviz" in svg:
        kind, text = "graphviz", _graphviz_summary(svg)
    else:
        kind, text = "image", _matplotlib_normal(svg)
    return f"normalized:{kind}:{hashlib.sha256(text.encode()).hexdigest()}"


def normalize(name: str, data: bytes, out: str) -> bytes:
    """The comparable form of output file ``name`` (see the module text)."""
    if name.endswith(".svg"):
        return _graphviz_summary(data.decode("utf-8")).encode()
    if name.endswith(".html"):
        page = _DATA_SVG.sub(_embedded, data.decode("utf-8")).replace(out, "<OUT>")
        return normalize_provenance(page).encode()
    if name.endswith("provenance.json"):
        return normalize_provenance(data.decode("utf-8").replace(out, "<OUT>")).encode()
    return data.replace(out.encode(), b"<OUT>")


def _close(a: str, b: str) -> bool:
    """Whether number tokens ``a`` and ``b`` agree: integers exactly, others within
    ``REL_TOL`` / ``ABS_TOL``."""
    if a == b:
        return True
    if not any(c in a + b for c in ".eE"):
        return False
    return math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=ABS_TOL)


def same_within_tolerance(expected: str, got: str) -> bool:
    """Whether two texts agree: the text between numbers exactly, numbers by
    :func:`_close`.

    >>> same_within_tolerance("lo,0.5584533071690939\\n", "lo,0.5584533071690942\\n")
    True
    >>> same_within_tolerance("lo,0.5584533071690939", "lo,0.5584533")
    False
    >>> same_within_tolerance("n,12", "n,13"), same_within_tolerance("a,1.0", "b,1.0")
    (False, False)
    """
    a, b = _NUMBER.split(expected), _NUMBER.split(got)
    if len(a) != len(b):
        return False
    # split with one group: text at even positions, numbers at odd ones
    return all(
        (x == y) if i % 2 == 0 else _close(x, y) for i, (x, y) in enumerate(zip(a, b, strict=True))
    )


def mismatch(name: str, expected: bytes, got: bytes) -> bool:
    """Whether output file ``name`` differs from its recording (see the module text)."""
    if expected == got:
        return False
    if name.endswith(EXACT_SUFFIXES):
        return True
    try:
        return not same_within_tolerance(expected.decode("utf-8"), got.decode("utf-8"))
    except UnicodeDecodeError:
        return True


def differing(expected: dict[str, bytes], got: dict[str, bytes]) -> list[str]:
    """The names of the files that differ (:func:`mismatch`), or are only on one side."""
    names = sorted(set(expected) | set(got))
    return [
        n for n in names if n not in expected or n not in got or mismatch(n, expected[n], got[n])
    ]


def run_case(argv: list[str]) -> dict[str, bytes]:
    """Run one case; return {file name: normalized bytes} (stdout, stderr, exit, outputs)."""
    from click.testing import CliRunner

    from statemine.cli import main

    with tempfile.TemporaryDirectory(prefix="statemine-golden-") as tmp:
        out = str(Path(tmp) / "out")
        Path(out).mkdir()
        args = [a.replace("{out}", out) for a in argv]
        if "{out}" in argv:
            shutil.rmtree(out)  # infer/diff --out replace the folder; let them create it
        with contextlib.chdir(ROOT):
            res = CliRunner().invoke(main, args, env={"COLUMNS": "100"}, catch_exceptions=False)
        files = {
            "stdout.txt": res.stdout.replace(out, "<OUT>").encode(),
            "stderr.txt": res.stderr.replace(out, "<OUT>").encode(),
            "exit.txt": f"{res.exit_code}\n".encode(),
        }
        for path in sorted(Path(out).rglob("*")) if Path(out).exists() else []:
            if path.is_file():
                rel = path.relative_to(out).as_posix()
                files[rel] = normalize(rel, path.read_bytes(), out)
    return files


def stored(files: dict[str, bytes]) -> dict[str, bytes]:
    """What the golden folder holds for ``files``: large ones as ``NAME.sha256``."""
    result = {}
    for name, data in files.items():
        if len(data) > MAX_STORED:
            result[name + ".sha256"] = (hashlib.sha256(data).hexdigest() + "\n").encode()
        else:
            result[name] = data
    return result


def read_golden(case: str) -> dict[str, bytes]:
    """The recorded files of ``case``."""
    folder = GOLDEN / case
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def record(cases: list[str]) -> None:
    """Run ``cases`` and replace their golden folders."""
    for case in cases:
        files = stored(run_case(CASES[case]))
        folder = GOLDEN / case
        shutil.rmtree(folder, ignore_errors=True)
        for name, data in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        print(f"recorded {case}: {', '.join(sorted(files))}")


if __name__ == "__main__":
    if sys.argv[1:2] != ["--record"]:
        sys.exit("usage: python3 tests/golden.py --record [CASE...]")
    sys.path.insert(0, str(ROOT))
    record(sys.argv[2:] or list(CASES))
