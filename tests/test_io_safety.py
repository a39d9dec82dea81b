"""Untrusted names shown safely, output sets committed whole, folders walked once, gzip
bounded (issue 11 items 2-6, 11); the subprocess catalog is tests/test_hostile.py, the
fault injection tests/test_faults.py."""

from __future__ import annotations

import errno
import gzip
import json
import os
import tracemalloc
import zlib
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from statemine import fileio
from statemine.cli import main
from statemine.errors import InputError, StatemineError
from statemine.escape import csv_cell, display_name, html_text, visible
from statemine.output.diagram import dot_to, graphviz_available, to_dot
from statemine.parse import expand_paths, read
from statemine.parse.qlog import read_qlog

HOSTILE = [
    "[/bold]",
    "[red]Recovery",
    "Recovery",
    "[link=http://evil.example]x[/link]",
    "\x1b[31mred",
    "a\x00b",
    '=HYPERLINK("http://evil.example","x")',
    "+1",
    "-2",
    "@SUM(A1)",
    "\tTab",
    ":smile:",
    "\u202eevil",
    "x" * 200_000,
    "back\\slash",
    "<script>alert(1)</script>",
]


def hostile_log(tmp_path: Path, names=HOSTILE) -> Path:
    lines = [f"STATEMINE t={i / 10:.1f} conn=c role=server state={n}" for i, n in enumerate(names)]
    lines.append(f"STATEMINE t={len(names) / 10:.1f} conn=c role=server event=Close")
    path = tmp_path / "hostile.log"
    path.write_bytes(("\n".join(lines) + "\n").encode())
    return path


# -- display forms ----------------------------------------------------------------------------
def test_display_form_makes_every_name_distinct_visible_and_short():
    shown = [display_name(n) for n in [*HOSTILE, "", "\\x1b[31mred"]]
    assert len(set(shown)) == len(shown)  # ESC and the four characters "\x1b" differ
    for text in shown:
        assert text.isprintable() and len(text) < 120
    assert (
        display_name("\x1b[31mred") == "\\x1b[31mred"
        and display_name("\\x1b[31mred") == "\\\\x1b[31mred"
    )
    assert display_name("x" * 200_000).endswith("(200000 chars)")


def test_visible_escapes_only_unprintable_characters():
    for c in map(chr, range(0x2400)):
        out = visible(c, backslash=False)
        assert out == c if c.isprintable() else (out.startswith("\\") and out.isprintable())


def test_html_text_escapes_markup_and_controls():
    assert html_text("<b>&\"'\x07") == "&lt;b&gt;&amp;&quot;&#x27;\\x07"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("=1+2", "'=1+2"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@A", "'@A"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("a=1", "a=1"),
        ("", ""),
    ],
)
def test_csv_cell_neutralises_formula_starts(text, expected):
    assert csv_cell(text) == expected


# -- infer/diff with hostile names --------------------------------------------------------
def test_infer_shows_hostile_names_escaped_and_keeps_them_whole_in_json(tmp_path):
    out = tmp_path / "out"
    res = CliRunner().invoke(
        main,
        ["infer", str(hostile_log(tmp_path)), "--out", str(out), "--bootstrap", "0", "--no-svg"],
    )
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.output and "\x00" not in res.output and "\u202e" not in res.output
    for shown in (
        "[/bold]",
        "[red]Recovery",
        "[link=http://evil.example]x[/link]",
        "\\x1b[31mred",
        "a\\x00b",
        ":smile:",
        "\\u202eevil",
        "back\\\\slash",
        "(200000 chars)",
    ):
        assert shown in res.output, shown
    nodes = {
        n["name"] if "name" in n else n.get("id")
        for n in json.loads((out / "model.json").read_text())["nodes"]
    }
    assert set(HOSTILE) <= nodes  # every name whole, byte for byte
    states = pd.read_csv(out / "states.csv", keep_default_na=False)["state"].tolist()
    expected = [("'" + n if n[0] in "=+-@\t" else n) for n in HOSTILE]
    assert sorted(states) == sorted(expected)


@pytest.mark.skipif(not graphviz_available(), reason="Graphviz's dot is not installed")
def test_any_name_renders_as_svg():
    import networkx as nx

    G = nx.DiGraph()
    for i, name in enumerate([*HOSTILE, "", "\x00", "\x7f\x80\x9f", "\ud7ff\ufffe\U0010ffff"]):
        G.add_node(name, time_fraction=0.01 * i)
        G.add_edge("INITIAL", name, probability=0.5)
    svg = dot_to(to_dot(G, title="\x1b[2J" + "t" * 10_000), "svg")
    assert svg.startswith(b"<?xml") or b"<svg" in svg[:500]
    assert b"\x1b" not in svg and b"<script>" not in svg and b"(empty)" in svg


@pytest.mark.skipif(not graphviz_available(), reason="Graphviz's dot is not installed")
def test_graphviz_failure_is_one_line():
    with pytest.raises(StatemineError) as err:
        dot_to("digraph { a -> }", "svg")
    assert "Graphviz failed" in str(err.value) and "\n" not in str(err.value)


def test_diff_csv_cells_are_neutralised(tmp_path):
    a = hostile_log(tmp_path, ["=cmd|'/C.calc'!A0", "SlowStart"])
    out = tmp_path / "d"
    res = CliRunner().invoke(
        main,
        [
            "diff",
            str(a),
            str(a),
            "--out",
            str(out),
            "--no-svg",
            "--permutations",
            "10",
            "--bootstrap",
            "0",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "'=cmd|'/C.calc'!A0" in pd.read_csv(out / "states_diff.csv")["state"].tolist()
    # numbers stay numbers: a negative delta gets no quote
    assert pd.api.types.is_float_dtype(pd.read_csv(out / "states_diff.csv")["delta"])


# -- the output set ----------------------------------------------------------------------
def test_write_set_creates_replaces_and_leaves_no_temporaries(tmp_path):
    out = tmp_path / "out"
    fileio.write_set(out, {"a.csv": "1", "b.csv": b"2"}, owned=("a.csv", "b.csv", "c.svg"))
    assert sorted(os.listdir(out)) == ["a.csv", "b.csv"]
    fileio.write_set(out, {"a.csv": "3", "c.svg": "4"}, owned=("a.csv", "b.csv", "c.svg"))
    assert sorted(os.listdir(out)) == ["a.csv", "c.svg"] and (out / "a.csv").read_text() == "3"
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_write_set_without_exchange_uses_two_renames(tmp_path, monkeypatch):
    monkeypatch.setattr(fileio, "_exchange", lambda a, b: False)
    out = tmp_path / "out"
    for n in range(3):
        fileio.write_set(out, {"a": str(n)})
    assert (out / "a").read_text() == "2" and sorted(os.listdir(tmp_path)) == ["out"]


def test_write_set_refuses_a_folder_with_other_files(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.md").write_text("mine")
    with pytest.raises(StatemineError, match=r"did not write .'notes.md'"):
        fileio.write_set(out, {"a": "1"})
    assert os.listdir(out) == ["notes.md"] and sorted(os.listdir(tmp_path)) == ["out"]


def test_write_set_follows_a_symlinked_folder(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    fileio.write_set(tmp_path / "link", {"a": "1"})
    assert (tmp_path / "link").is_symlink() and (real / "a").read_text() == "1"


def test_write_set_failure_keeps_the_old_set(tmp_path, monkeypatch):
    out = tmp_path / "out"
    fileio.write_set(out, {"a": "old", "b": "old"})
    calls = []

    def full_disk(path, data):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        Path(path).write_bytes(data)

    monkeypatch.setattr(fileio, "_write_new", full_disk)
    with pytest.raises(StatemineError, match=r"out: cannot write: No space left on device$"):
        fileio.write_set(out, {"a": "new", "b": "new"})
    assert {p.name: p.read_text() for p in out.iterdir()} == {"a": "old", "b": "old"}
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_stale_temporaries_of_dead_processes_are_swept(tmp_path):
    import subprocess
    import sys

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    pid = int(dead.stdout)
    stale = tmp_path / f".out.tmp-{pid}-0123abcd"
    stale.mkdir()
    (stale / "states.csv").write_text("half")
    live = tmp_path / f".out.tmp-{os.getppid()}-0123abcd"  # a running process's: kept
    live.mkdir()
    fileio.write_set(tmp_path / "out", {"a": "1"})
    assert not stale.exists() and live.exists()


def test_write_atomic_error_is_one_line(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(StatemineError, match=r"cannot write"):
        fileio.write_atomic(tmp_path / "file" / "below", "y")


def test_out_that_is_a_file_is_refused_before_any_work(tmp_path):
    log = hostile_log(tmp_path, ["SlowStart"])
    res = CliRunner().invoke(main, ["infer", str(log), "--out", str(log)])
    assert res.exit_code == 2 and f"{log}: exists and is not a folder" in res.output


# -- folder walk ------------------------------------------------------------------------------
def test_folder_walk_reads_each_file_once_through_link_loops(tmp_path):
    top = tmp_path / "logs"
    (top / "sub" / "deeper").mkdir(parents=True)
    for rel in ("a.log", "sub/b.log", "sub/deeper/c.log", "z.log"):
        (top / rel).write_text(f"STATEMINE t=0 conn={rel} state=SlowStart\n")
    (top / "sub" / "up").symlink_to("..")
    (top / "self").symlink_to(".")
    (top / "sub" / "again").symlink_to(top / "sub")
    os.link(top / "a.log", top / "sub" / "hard.log")
    (top / "sub" / "alias.log").symlink_to(top / "z.log")
    (top / "dangling.log").symlink_to(top / "nowhere.log")
    os.mkfifo(top / "pipe.log")  # never opened: a pipe would block
    files = expand_paths([top, top / "a.log"])
    # depth first in name order; a file reached twice is listed where it is met first
    assert [f.relative_to(top).as_posix() for f in files] == [
        "a.log",
        "sub/alias.log",
        "sub/b.log",
        "sub/deeper/c.log",
    ]
    assert read(top).n_traces == 4


def test_a_pipe_or_device_named_directly_is_refused(tmp_path):
    os.mkfifo(tmp_path / "p.log")
    for path in (tmp_path / "p.log", Path("/dev/zero")):
        with pytest.raises(InputError, match=r"not a regular file"):
            expand_paths(path)


def test_the_regex_reader_refuses_inputs_as_expand_paths_does(tmp_path):
    """The Synoptic-style reader (which takes files, not folders) and expand_paths (every
    other reader) refuse a pipe, a device, a missing file and a name with a NUL byte in
    the same words (they had two copies of the check, worded apart)."""
    from statemine.parse.regex import read_regex

    os.mkfifo(tmp_path / "p.log")
    bad = {
        tmp_path / "p.log": "not a regular file or folder (a pipe or device cannot be",
        Path("/dev/zero"): "not a regular file or folder (a pipe or device cannot be",
        tmp_path / "missing.log": "no such file or folder",
        f"{tmp_path}/a\0b.log": "a file name with a NUL byte",
    }
    for path, reason in bad.items():
        messages = []
        for reader in (expand_paths, read_regex):
            with pytest.raises(InputError) as caught:
                reader([path])
            messages.append(str(caught.value))
        assert messages[0] == messages[1] and reason in messages[0], messages
        assert "\0" not in messages[0]  # the NUL shown escaped


# -- gzip -------------------------------------------------------------------------------------
def _bomb(path: Path, size: int, *, members: bool) -> Path:
    """A qlog document header followed by ``size`` spaces, gzip-compressed; with
    ``members`` a tiny second member makes the trailer's stated size small."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [c.compress(b'{"qlog_version": "0.3", "traces": [')]
    block = b" " * (1 << 20)
    for _ in range(size >> 20):
        parts.append(c.compress(block))
    parts.append(c.flush())
    if members:
        parts.append(gzip.compress(b"]}"))
    path.write_bytes(b"".join(parts))
    return path


@pytest.mark.parametrize("members", [False, True])
def test_gzip_bomb_is_refused_before_it_is_held(tmp_path, members):
    bomb = _bomb(tmp_path / "bomb.qlog.gz", 64 << 20, members=members)
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match=r"decompresses to more than") as err:
            read_qlog(bomb, max_document_bytes=32 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert err.value.file == str(bomb)
    assert peak < 8 << 20  # about two 1 MiB chunks, not the 32 MiB limit


def test_gzip_document_under_the_limit_reads_as_the_plain_one(tmp_path):
    data = Path(__file__).parent / "data" / "qlog" / "draft01.qlog"
    packed = tmp_path / "d.qlog.gz"
    packed.write_bytes(
        gzip.compress(data.read_bytes()[:40]) + gzip.compress(data.read_bytes()[40:])
    )
    a, b = read_qlog(packed, source="x"), read_qlog(data, source="x")
    pd.testing.assert_frame_equal(a.events, b.events)


def test_damaged_gzip_is_one_error_under_every_format(tmp_path):
    packed = bytearray(gzip.compress(b"STATEMINE t=0 conn=a state=SlowStart\n" * 2000))
    packed[len(packed) // 2 : len(packed) // 2 + 8] = b"\xff" * 8
    bad = tmp_path / "bad.log.gz"
    bad.write_bytes(bytes(packed))
    for fmt in ("auto", "statemine", "qlog"):
        with pytest.raises(InputError) as err:
            read(bad, fmt)
        assert err.value.file == str(bad), fmt
