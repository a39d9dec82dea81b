"""A catalog of hostile inputs, each run through the real command line in a subprocess
(``python -m statemine ...``) under a memory limit (RLIMIT_AS 500 MB) and a time limit
(RLIMIT_CPU 10 s; a process over it is killed by SIGXCPU and fails the case; 60 s of wall
time catch a process that blocks without using CPU, generous because the 2-core test
machine is shared): every reader (statemine log, qlog,
regex, Parquet, Synoptic model files, state-name files, scenario files) and every command
that reads user files (infer, read, diff, report, check-model, the Synoptic engine, lab).

Each case expects exit 0 (the input is legitimate, however odd: then the whole output set
is written) or exit 2 with one error line ``statemine: error: FILE[:LINE]: ...`` naming
the file (only warnings or notes before it), never a traceback, and no partial output
(the --out target absent, no temporary beside it). Issue 11, "Tests".

RLIMIT_AS counts address space reserved but never used, so the child runs with
``ARROW_DEFAULT_MEMORY_POOL=system`` (Arrow's mimalloc pool, which pandas' string columns
use, reserves 1 GiB up front) and ``MALLOC_ARENA_MAX=1`` (glibc reserves 64 MiB per
thread arena); with them the commands peak at 250-450 MB of address space on small
inputs (``diff`` with scipy.stats loaded: 452 MB, 190 MB resident), so the limit
measures what the input makes statemine use.

Most cases are in the slow tier (about 1.5 s of CPU each); the ones marked ``fast`` run
in the fast tier too.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import resource
import subprocess
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
QLOG_DATA = REPO / "tests" / "data" / "qlog"
MEMORY_BYTES = 500 << 20
TIME_S = 10
WALL_S = 60
GOOD = "".join(
    f"STATEMINE t={t} conn={c} role=server state={s}\n"
    for c in "ab"
    for t, s in [(0.0, "SlowStart"), (0.5, "Recovery"), (1.0, "CongestionAvoidance")]
)
GOOD += "STATEMINE t=2.0 conn=a role=server event=Close\nSTATEMINE t=2.0 conn=b role=server event=Close\n"
HOSTILE_NAMES = [
    "[/bold]",
    "[red]Recovery",
    "Recovery",
    "[link=http://evil.example]x[/link]",
    "\x1b[31mred",
    "a\x00b",
    '=HYPERLINK("http://evil.example")',
    "+1",
    "-2",
    "@SUM(A1)",
    ":smile:",
    "\u202eevil",
    "<script>alert(1)</script>",
    "x" * 200_000,
]


def sm_lines(names, conn="c") -> str:
    body = "".join(
        f"STATEMINE t={i / 10:.1f} conn={conn} role=server state={n}\n" for i, n in enumerate(names)
    )
    return body + f"STATEMINE t={len(names) / 10:.1f} conn={conn} role=server event=Close\n"


def qlog_doc(names) -> dict:
    events = [
        {"time": 10.0 * i, "name": "recovery:congestion_state_updated", "data": {"new": n}}
        for i, n in enumerate(names)
    ]
    return {
        "qlog_version": "0.3",
        "qlog_format": "JSON",
        "traces": [{"vantage_point": {"type": "server"}, "events": events}],
    }


def gz_stream(*pieces: tuple[bytes, int]) -> bytes:
    """One gzip member of ``piece * count`` for each (piece, count), built in pieces."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [
        c.compress(piece * count)
        if len(piece) * count < 1 << 20
        else b"".join(
            c.compress(piece * ((1 << 20) // len(piece))) for _ in range(len(piece) * count >> 20)
        )
        for piece, count in pieces
    ]
    return b"".join(out) + c.flush()


def build_inputs(d: Path) -> None:
    """Write every input file of the catalog into ``d`` (deterministic)."""
    rng = random.Random(11)

    def w(name: str, data: str | bytes) -> None:
        (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())

    w("good.log", GOOD)
    w("empty.log", b"")
    w("blank.log", "\n \n\t\n")
    w("random.bin", bytes(rng.randrange(256) for _ in range(5000)))
    w(
        "nul_in_state.log",
        "STATEMINE t=0 conn=a state=Slow\x00Start\nSTATEMINE t=1 conn=a state=Recovery\n",
    )
    w("time_text.log", "STATEMINE t=abc conn=a state=SlowStart\n")
    w(
        "time_nan.log",
        "STATEMINE t=0 conn=a state=SlowStart\nSTATEMINE t=nan conn=a state=Recovery\n",
    )
    w(
        "time_inf.log",
        "STATEMINE t=0 conn=a state=SlowStart\nSTATEMINE t=inf conn=a state=Recovery\n",
    )
    w(
        "time_back.log",
        "STATEMINE t=5 conn=a state=SlowStart\nSTATEMINE t=1 conn=a state=Recovery\n",
    )
    w(
        "time_huge.log",
        "STATEMINE t=1e308 conn=a state=SlowStart\nSTATEMINE t=1.7e308 conn=a state=Recovery\n",
    )
    w("no_conn.log", "STATEMINE t=0 state=SlowStart\n")
    w("empty_state.log", "STATEMINE t=0 conn=a state=SlowStart\nSTATEMINE t=1 conn=a state=\n")
    w("long_line.log", "STATEMINE t=0 conn=a state=" + "S" * (2 << 20) + "\n")
    w("not_utf8.log", b"STATEMINE t=0 conn=a state=Slow\xff\xfeStart\n")
    w("latin1.log", "STATEMINE t=0 conn=a state=Récupération\n".encode("latin-1"))
    w("crlf.log", GOOD.replace("\n", "\r\n"))
    w("bom.log", "\ufeff" + GOOD)
    w("hostile.log", sm_lines(HOSTILE_NAMES))
    w(
        "many_fields.log",
        "STATEMINE t=0 conn=a state=SlowStart "
        + " ".join(f"k{i}=v" for i in range(50_000))
        + "\nSTATEMINE t=1 conn=a state=Recovery\n",
    )
    w(
        "many_conns.log",
        "".join(f"STATEMINE t={i} conn=c{i} state=SlowStart\n" for i in range(20_000)),
    )
    # an id in the state field: every connection a new state (past diff's and the diagram's limits)
    w(
        "ids.log",
        "".join(
            f"STATEMINE t={i} conn=c{i} state=S{i}\nSTATEMINE t={i + 0.5} conn=c{i} event=Close\n"
            for i in range(5000)
        ),
    )
    packed = gzip.compress(
        "".join(sm_lines(["SlowStart", "Recovery"], conn=f"c{i}") for i in range(2000)).encode()
    )
    w("good.log.gz", packed)
    w("cut_small.log.gz", packed[:40])
    w("cut_large.log.gz", packed[: len(packed) * 4 // 5])
    damaged = bytearray(packed)
    damaged[len(damaged) // 2 : len(damaged) // 2 + 16] = b"\xff" * 16
    w("damaged.log.gz", bytes(damaged))
    # folders
    deep = d / "deep"
    for _ in range(300):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "x.log").write_text(GOOD)
    for name, links in (("loop1", ["self"]), ("loop2", ["self", "again"])):
        top = d / name
        (top / "sub").mkdir(parents=True)
        (top / "sub" / "a.log").write_text(sm_lines(["SlowStart", "Recovery"]))
        for link in links:
            (top / "sub" / link).symlink_to("..")
    (d / "withfifo").mkdir()
    (d / "withfifo" / "a.log").write_text(GOOD)
    os.mkfifo(d / "withfifo" / "pipe.log")
    os.mkfifo(d / "pipe.log")
    (d / "nologs").mkdir()
    (d / "nologs" / "readme.md").write_text("no logs here")
    (d / "foreign").mkdir()
    (d / "foreign" / "notes.md").write_text("mine")
    # qlog
    w("q_good.qlog", (QLOG_DATA / "draft01.qlog").read_bytes())
    w("q_header_only.qlog", '{"qlog_version": "0.3", "qlog_format": "JSON"}')
    w("q_traces_string.qlog", '{"qlog_version": "0.3", "traces": "nope"}')
    w("q_truncated.qlog", (QLOG_DATA / "truncated.qlog").read_bytes())
    w(
        "q_bad_middle.qlog",
        '{"qlog_version": "draft-01",\n "traces": [\n {"events": [[1, "a" "b"]]}]}',
    )
    w("q_deep.qlog", '{"qlog_version": "0.3", "traces": ' + "[" * 100_000)
    w(
        "q_huge_time.qlog",
        json.dumps(qlog_doc(["SlowStart", "Recovery"])).replace('"time": 10.0', '"time": 1e999'),
    )
    w("q_hostile.qlog", json.dumps(qlog_doc(HOSTILE_NAMES)))
    w("q_not_utf8.qlog", b'{"qlog_version": "0.3", "traces": [{"events": [{"name": "\xff\xfe"}]}]}')
    w("q_events_object.qlog", '{"qlog_version": "0.3", "traces": [{"events": {"a": 1}}]}')
    w("q_bom.qlog", b"\xef\xbb\xbf" + (QLOG_DATA / "draft01.qlog").read_bytes())
    w(
        "q_seq_garbage.sqlog",
        b'\x1e{"qlog_version": "0.3", "qlog_format": "JSON-SEQ", "trace": {}}\n'
        + b"".join(
            b"\x1e" + bytes(rng.randrange(256) for _ in range(50)) + b"\n" for _ in range(100)
        ),
    )
    qgood = (QLOG_DATA / "v03.sqlog").read_bytes()
    w("q_cut_small.sqlog.gz", gzip.compress(qgood)[:40])
    w("q_cut_large.sqlog.gz", gzip.compress(qgood)[: len(gzip.compress(qgood)) * 4 // 5])
    # regex
    w("r_types.log", "b\nab\naab\nb\nab\n")
    w("r_times.log", "x A\n")
    # Parquet
    from statemine.parse import read as read_traces
    from statemine.traces import save

    save(read_traces(d / "good.log"), d / "good.parquet")
    whole = (d / "good.parquet").read_bytes()
    w("truncated.parquet", whole[: len(whole) // 2])
    w("magic_only.parquet", b"PAR1" + bytes(rng.randrange(256) for _ in range(300)))
    import pandas as pd

    pd.DataFrame({"x": [1, 2]}).to_parquet(d / "wrong_schema.parquet")
    # Synoptic model files
    w("syn.log", "a\nb\nc\n\na\nc\n")
    from click.testing import CliRunner

    from statemine.cli import main

    res = CliRunner().invoke(
        main, ["infer", "--engine", "synoptic", "-o", str(d / "syn"), str(d / "syn.log")]
    )
    assert res.exit_code == 0, res.output
    # k-tails with a k past every trace: about one node per event (20,000)
    w(
        "many_futures.log",
        "".join(
            f"{rng.choice('abcdefgh')}\n" + ("\n" if i % 200 == 199 else "") for i in range(20_000)
        ),
    )
    w("m_types.json", '{"log": 5, "partitions": []}')
    w("m_garbage.dot", "digraph {\n  this is not synoptic\n}\n")
    w("m_no_initial.dot", "digraph {\n}\n")
    # qlog state-name files
    w("names_bad.txt", "no equals sign here\n")
    # lab scenarios and run configs; a source tree the patch was never applied to
    w("scenario_bad.toml", "[grid\nrate_mbps = ")
    (d / "src").mkdir()
    (d / "src" / "connection.py").write_text("pass\n")
    _ftrace_inputs(w)


def _ft_cong(t: float, state: int, sport: int = 40001, addr: str = "10.0.0.1") -> str:
    return (
        f"  python3-1 [000] ..s2. {t:.6f}: tcp_cong_state_set: family=AF_INET sport={sport} "
        f"dport=5201 saddr={addr} daddr=10.0.0.2 saddrv6=::1 daddrv6=::2 cong_state={state}\n"
    )


def _ft_probe(t: float, cwnd: int | str, sport: int = 40001, addr: str = "10.0.0.1") -> str:
    return (
        f"  python3-1 [000] ..s2. {t:.6f}: tcp_probe: family=AF_INET src={addr}:{sport} "
        f"dest=10.0.0.2:5201 mark=0x0 data_len=0 snd_nxt=0x10 snd_una=0x1 snd_cwnd={cwnd} "
        "ssthresh=2147483647 snd_wnd=1 srtt=50 rcv_wnd=1 sock_cookie=1 skbaddr=0 skaddr=0\n"
    )


def _ftrace_inputs(w) -> None:
    """ftrace text of kernel TCP (statemine/parse/ftrace.py)."""
    good = _ft_probe(0.5, 10) + _ft_cong(1.0, 3) + _ft_cong(1.0, 3) + _ft_cong(2.0, 0)
    w("ft_good.txt", "# tracer: nop\n#\n" + good)
    w("ft_bad_line.txt", good + "this is not ftrace\n" + good)
    w("ft_lost.txt", "CPU:1 [LOST 5 EVENTS]\n##### CPU 0 buffer started ####\n" + good)
    w("ft_counter_clock.txt", good.replace("2.000000:", "2000000:"))
    w("ft_state_99.txt", good + _ft_cong(3.0, 99))
    w("ft_cwnd_huge.txt", good + _ft_probe(3.0, "9" * 40))
    w("ft_long_line.txt", good + _ft_probe(3.0, 1, addr="x" * (2 << 20)))
    w("ft_only_receiver.txt", _ft_cong(1.0, 0))
    w(
        "ft_hostile_addr.txt",
        "".join(_ft_probe(0.1, 10, addr=a) + _ft_cong(0.2, 3, addr=a) for a in _FT_ADDRS),
    )
    w(
        "ft_not_utf8_task.txt",
        good.replace("python3-1", "py\udcff\udcfe-1").encode("utf-8", "surrogateescape"),
    )
    w("ft_bracket_addr.txt", good + _ft_probe(3.0, 1, addr="\x1b[31mred"))
    w("ft_many_sockets.txt", "".join(_ft_cong(1.0, 3, sport=p) for p in range(20000)))


#: Addresses made of text that must be escaped wherever a trace id is printed.
_FT_ADDRS = ["<script>alert(1)</script>", "=HYPERLINK(1)", "\x1bcred", '"quoted"']


_NDJSON_HEAD = b'{"qlog_version": "draft-02", "qlog_format": "NDJSON", "title": "x"}\n'
_DOC_HEAD = b'{"qlog_version": "0.3", "traces": ['
#: Large compressed inputs (decompression bombs), built only when a case uses them.
HEAVY: dict[str, Callable[[], bytes]] = {
    "zeros_bomb.log.gz": lambda: gz_stream((b"\x00", 300 << 20)),
    "newline_bomb.log.gz": lambda: gz_stream(
        (b"STATEMINE t=0 conn=a state=SlowStart\n", 1),
        (b"\n", 200 << 20),
        (b"STATEMINE t=1 conn=a state=Recovery\n", 1),
    ),
    "q_record_bomb.ndjson.gz": lambda: gz_stream((_NDJSON_HEAD, 1), (b"a", 100 << 20)),
    "q_doc_bomb.qlog.gz": lambda: gz_stream((_DOC_HEAD, 1), (b" ", 1100 << 20)),
    "q_doc_bomb_members.qlog.gz": lambda: (
        gz_stream((_DOC_HEAD, 1), (b" ", 1100 << 20)) + gzip.compress(b"]}")
    ),
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("hostile")
    build_inputs(d)
    return d


@dataclass
class Case:
    """One catalog entry: the command line (``{d}``: the inputs folder, ``{out}``: a fresh
    output path) and what it must do. ``names``: what the error line must contain
    (``FILE`` or ``FILE:LINE``, ``{d}`` expanded); ``stdout`` must appear in stdout."""

    id: str
    argv: list[str]
    ok: bool
    names: str | None = None
    stdout: str | None = None
    fast: bool = False
    outputs: tuple[str, ...] = ()
    check: Callable[[Path], None] | None = None
    extra: dict = field(default_factory=dict)


def _csv_guarded(out: Path) -> None:
    import csv

    csv.field_size_limit(1 << 20)
    with open(out / "states.csv", newline="", encoding="utf-8") as fh:
        cells = {row["state"] for row in csv.DictReader(fh)}
    assert cells == {"'" + n if n[0] in "=+-@" else n for n in HOSTILE_NAMES}
    names = {
        n.get("name", n.get("id")) for n in json.loads((out / "model.json").read_text())["nodes"]
    }
    assert set(HOSTILE_NAMES) <= names


def _html_escaped(out: Path) -> None:
    page = out.read_text(encoding="utf-8")
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def _not_drawn(out: Path, n_states: int) -> None:
    page = out.read_text(encoding="utf-8")
    assert f"model.svg not drawn: {n_states} states are more than" in page
    assert page.count("<tr>") > n_states and 'download="model.dot"' in page
    assert 'alt="state machine of' not in page  # the diagram is left out, the tables are whole


INFER_SET = (
    "states.csv",
    "transitions.csv",
    "model.dot",
    "model.json",
    "model.svg",
    "provenance.json",
)
DIFF_SET = (
    "states_diff.csv",
    "transitions_diff.csv",
    "one_sided.csv",
    "notes.txt",
    "diff.dot",
    "diff.svg",
    "provenance.json",
)


def _infer(name: str, *more: str) -> list[str]:
    return ["infer", f"{{d}}/{name}", "--bootstrap", "20", *more]


def _err(name: str, line: int | None = None) -> str:
    return f"{{d}}/{name}" + (f":{line}" if line is not None else ":")


CASES = [
    # -- statemine logs -------------------------------------------------------------------
    Case(
        "sm-good", _infer("good.log", "--out", "{out}"), True, stdout="(2 traces", outputs=INFER_SET
    ),
    Case("sm-empty", _infer("empty.log"), False, _err("empty.log")),
    # -- the trace store (statemine store add) ---------------------------------------------
    Case(
        "store-good",
        ["store", "add", "{d}/good.log", "--store", "{out}", "--label", "impl=x"],
        True,
        stdout="added",
        outputs=("_labels", "_statemine_log", "_statemine_store.json", "impl=x"),
        fast=True,
    ),
    Case(
        "store-bad-log",
        ["store", "add", "{d}/time_text.log", "--store", "{out}", "--label", "impl=x"],
        False,
        _err("time_text.log", 1),
        fast=True,
    ),
    Case(
        "store-label-slash",
        ["store", "add", "{d}/good.log", "--store", "{out}", "--label", "impl=../../x"],
        False,
        "--label impl",
    ),
    Case("sm-blank", _infer("blank.log"), False, _err("blank.log")),
    Case("sm-binary", _infer("random.bin"), False, _err("random.bin")),
    Case(
        "sm-binary-forced", _infer("random.bin", "--format", "statemine"), False, _err("random.bin")
    ),
    Case("sm-nul-in-state", _infer("nul_in_state.log", "--out", "{out}"), True, outputs=INFER_SET),
    Case("sm-time-text", _infer("time_text.log"), False, _err("time_text.log", 1)),
    Case("sm-time-nan", _infer("time_nan.log"), False, _err("time_nan.log", 2)),
    Case("sm-time-inf", _infer("time_inf.log"), False, _err("time_inf.log", 2)),
    Case("sm-time-backwards", _infer("time_back.log"), False, _err("time_back.log", 2)),
    Case("sm-time-huge", _infer("time_huge.log"), False, _err("time_huge.log", 1)),
    Case("sm-no-conn", _infer("no_conn.log"), False, _err("no_conn.log", 1)),
    Case("sm-empty-state", _infer("empty_state.log"), False, _err("empty_state.log", 2)),
    Case("sm-2mib-line", _infer("long_line.log"), False, _err("long_line.log", 1)),
    Case("sm-not-utf8", _infer("not_utf8.log"), False, _err("not_utf8.log", 1)),
    Case("sm-latin1", _infer("latin1.log"), False, _err("latin1.log", 1)),
    Case("sm-crlf", _infer("crlf.log"), True, stdout="(2 traces"),
    Case("sm-bom", _infer("bom.log"), True, stdout="(2 traces"),
    Case(
        "sm-hostile-names",
        _infer("hostile.log", "--out", "{out}"),
        True,
        outputs=INFER_SET,
        check=_csv_guarded,
        fast=True,
    ),
    Case("sm-50k-fields", _infer("many_fields.log"), True, stdout="(1 traces"),
    Case(
        "sm-20k-conns", _infer("many_conns.log", "--bootstrap", "0"), True, stdout="(20000 traces"
    ),
    Case("sm-gzip", _infer("good.log.gz"), True, stdout="(2000 traces"),
    Case("sm-gzip-cut-small", _infer("cut_small.log.gz"), False, _err("cut_small.log.gz")),
    Case(
        "sm-gzip-cut-small-forced",
        _infer("cut_small.log.gz", "--format", "statemine"),
        False,
        _err("cut_small.log.gz"),
    ),
    Case("sm-gzip-cut-large", _infer("cut_large.log.gz"), False, _err("cut_large.log.gz")),
    Case("sm-gzip-damaged", _infer("damaged.log.gz"), False, _err("damaged.log.gz")),
    Case("sm-gzip-zeros-bomb", _infer("zeros_bomb.log.gz"), False, _err("zeros_bomb.log.gz")),
    Case(
        "sm-gzip-zeros-bomb-forced",
        _infer("zeros_bomb.log.gz", "--format", "statemine"),
        False,
        _err("zeros_bomb.log.gz", 1),
    ),
    Case("sm-gzip-200mib-newlines", _infer("newline_bomb.log.gz"), True, stdout="(1 traces"),
    # -- files and folders ----------------------------------------------------------------
    Case("walk-300-deep", _infer("deep"), True, stdout="(2 traces"),
    Case("walk-link-loop", _infer("loop1"), True, stdout="(1 traces", fast=True),
    Case("walk-two-link-loops", _infer("loop2"), True, stdout="(1 traces"),
    Case("walk-fifo-in-folder", _infer("withfifo"), True, stdout="(2 traces"),
    Case("fifo", _infer("pipe.log"), False, _err("pipe.log")),
    Case("dev-zero", ["infer", "/dev/zero"], False, "/dev/zero:"),
    Case("unreadable", ["infer", "/proc/self/mem"], False, "/proc/self/mem:"),
    Case(
        "unreadable-forced",
        ["infer", "/proc/self/mem", "--format", "qlog"],
        False,
        "/proc/self/mem:",
    ),
    Case("missing", _infer("no-such.log"), False, _err("no-such.log")),
    Case("folder-without-logs", _infer("nologs"), False, _err("nologs")),
    Case("out-is-a-file", _infer("good.log", "--out", "{d}/good.log"), False, _err("good.log")),
    Case(
        "out-below-a-file",
        _infer("good.log", "--out", "{d}/good.log/out"),
        False,
        _err("good.log/out"),
    ),
    Case("out-foreign-files", _infer("good.log", "--out", "{d}/foreign"), False, _err("foreign")),
    Case(
        "out-in-proc",
        _infer("good.log", "--out", "/proc/statemine-out"),
        False,
        "/proc/statemine-out:",
    ),
    # -- ftrace text (kernel TCP) -----------------------------------------------------------
    Case("ft-good", _infer("ft_good.txt", "--out", "{out}"), True, outputs=INFER_SET, fast=True),
    Case("ft-bad-line", _infer("ft_bad_line.txt"), False, _err("ft_bad_line.txt", 5), fast=True),
    Case("ft-bad-line-lenient", _infer("ft_bad_line.txt", "-i"), True, stdout="(1 traces"),
    Case("ft-lost-events", _infer("ft_lost.txt"), True, stdout="(1 traces"),
    Case(
        "ft-counter-clock", _infer("ft_counter_clock.txt"), False, _err("ft_counter_clock.txt", 4)
    ),
    Case("ft-state-99", _infer("ft_state_99.txt"), False, _err("ft_state_99.txt", 5)),
    Case("ft-cwnd-huge", _infer("ft_cwnd_huge.txt"), False, _err("ft_cwnd_huge.txt", 5)),
    Case("ft-2mib-address", _infer("ft_long_line.txt"), False, _err("ft_long_line.txt", 5)),
    Case("ft-only-receivers", _infer("ft_only_receiver.txt"), False, _err("ft_only_receiver.txt")),
    Case(
        "ft-hostile-addresses",
        _infer("ft_hostile_addr.txt", "--out", "{out}"),
        True,
        outputs=INFER_SET,
        stdout="(4 traces",
    ),
    Case(
        "ft-bracket-address", _infer("ft_bracket_addr.txt"), False, _err("ft_bracket_addr.txt", 5)
    ),
    Case("ft-not-utf8-task", _infer("ft_not_utf8_task.txt"), True, stdout="(1 traces"),
    Case(
        "ft-20k-sockets",
        _infer("ft_many_sockets.txt", "--bootstrap", "0"),
        True,
        stdout="(20000 traces",
    ),
    # -- qlog -------------------------------------------------------------------------------
    Case("q-good", _infer("q_good.qlog", "--out", "{out}"), True, outputs=INFER_SET),
    Case("q-header-only", _infer("q_header_only.qlog"), False, _err("q_header_only.qlog")),
    Case("q-traces-string", _infer("q_traces_string.qlog"), False, _err("q_traces_string.qlog")),
    Case("q-truncated-document", _infer("q_truncated.qlog"), True),
    Case("q-bad-json", _infer("q_bad_middle.qlog"), False, _err("q_bad_middle.qlog", 3)),
    Case("q-100k-nesting", _infer("q_deep.qlog"), False, _err("q_deep.qlog")),
    Case("q-time-1e999", _infer("q_huge_time.qlog"), False, _err("q_huge_time.qlog")),
    Case("q-hostile-names", _infer("q_hostile.qlog", "--out", "{out}"), True, outputs=INFER_SET),
    Case(
        "q-not-utf8", _infer("q_not_utf8.qlog", "--format", "qlog"), False, _err("q_not_utf8.qlog")
    ),
    Case("q-events-object", _infer("q_events_object.qlog"), False, _err("q_events_object.qlog")),
    Case("q-bom", _infer("q_bom.qlog"), True),
    Case(
        "q-seq-garbage-records", _infer("q_seq_garbage.sqlog"), False, _err("q_seq_garbage.sqlog")
    ),
    Case(
        "q-gzip-cut-small-auto", _infer("q_cut_small.sqlog.gz"), False, _err("q_cut_small.sqlog.gz")
    ),
    Case(
        "q-gzip-cut-small-qlog",
        _infer("q_cut_small.sqlog.gz", "--format", "qlog"),
        False,
        _err("q_cut_small.sqlog.gz"),
        fast=True,
    ),
    Case(
        "q-gzip-cut-large-qlog",
        _infer("q_cut_large.sqlog.gz", "--format", "qlog"),
        False,
        _err("q_cut_large.sqlog.gz"),
    ),
    Case(
        "q-gzip-100mib-record",
        _infer("q_record_bomb.ndjson.gz", "--format", "qlog"),
        False,
        _err("q_record_bomb.ndjson.gz", 2),
    ),
    Case("q-gzip-document-bomb", _infer("q_doc_bomb.qlog.gz"), False, _err("q_doc_bomb.qlog.gz")),
    Case(
        "q-gzip-document-bomb-members",
        _infer("q_doc_bomb_members.qlog.gz", "--format", "qlog"),
        False,
        _err("q_doc_bomb_members.qlog.gz"),
    ),
    Case(
        "q-names-binary",
        _infer("q_good.qlog", "--names", "{d}/random.bin"),
        False,
        _err("random.bin"),
    ),
    Case(
        "q-names-malformed",
        _infer("q_good.qlog", "--names", "{d}/names_bad.txt"),
        False,
        _err("names_bad.txt", 1),
    ),
    # -- regex (Synoptic options) -----------------------------------------------------------
    Case(
        "r-empty-type-renders",
        _infer("r_types.log", "-r", "^(?<TYPE>a*)b$", "--out", "{out}"),
        True,
        outputs=INFER_SET,
    ),
    Case("r-binary", _infer("random.bin", "-r", "(?<TYPE>.*)"), False, _err("random.bin")),
    Case("r-no-match", _infer("good.log", "-r", "^(?<TYPE>zzz)$"), False, _err("good.log")),
    Case(
        "r-time-not-number",
        _infer("r_times.log", "-r", r"(?<TIME>\S+) (?<TYPE>\S+)"),
        False,
        _err("r_times.log", 1),
    ),
    # -- Synoptic engine and check-model ----------------------------------------------------
    Case("syn-good", ["infer", "--engine", "synoptic", "-o", "{out}/m", "{d}/syn.log"], True),
    Case(
        "syn-binary",
        ["infer", "--engine", "synoptic", "-o", "{out}/m", "{d}/random.bin"],
        False,
        _err("random.bin"),
    ),
    # Synoptic logs and arguments files (-c) that would block, never end or crash (issue 13)
    Case(
        "syn-log-fifo",
        ["infer", "--engine", "synoptic", "-o", "{out}/m", "{d}/pipe.log"],
        False,
        _err("pipe.log"),
        fast=True,
    ),
    Case(
        "syn-log-dev-zero",
        ["infer", "--engine", "synoptic", "-o", "{out}/m", "/dev/zero"],
        False,
        "/dev/zero:",
    ),
    Case(
        "syn-args-fifo",
        ["infer", "--engine", "synoptic", "-o", "{out}/m", "-c", "{d}/pipe.log", "{d}/syn.log"],
        False,
        "-c {d}/pipe.log:",
        fast=True,
    ),
    Case(
        "syn-args-dev-zero",
        ["infer", "--engine", "synoptic", "-o", "{out}/m", "-c", "/dev/zero", "{d}/syn.log"],
        False,
        "-c /dev/zero:",
        fast=True,
    ),
    Case(
        "syn-args-binary",
        ["infer", "--engine", "ktails", "-o", "{out}/m", "-c", "{d}/random.bin", "{d}/syn.log"],
        False,
        "-c {d}/random.bin:",
        fast=True,
    ),
    Case(  # the largest -k: memory bounded by the traces, not by k (was events x k int64)
        "syn-ktails-huge-k",
        ["infer", "--engine", "ktails", "-k", "2147483647", "-o", "{out}/m", "{d}/syn.log"],
        True,
        outputs=("m.dot",),
        fast=True,
    ),
    Case(  # about 20,000 nodes: the edges are counted sparsely (a dense n x n was 3.2 GB)
        "syn-ktails-20k-nodes",
        [
            "infer",
            "--engine",
            "ktails",
            "-k",
            "2147483647",
            "-o",
            "{out}/m",
            "{d}/many_futures.log",
        ],
        True,
        outputs=("m.dot",),
    ),
    Case(
        "syn-args-folder",
        ["infer", "--engine", "perfume", "-o", "{out}/m", "-c", "{d}/nologs", "{d}/syn.log"],
        False,
        "-c {d}/nologs:",
    ),
    Case("check-model-good", ["check-model", "{d}/syn.dot", "{d}/syn.log"], True),
    Case(
        "check-model-binary-model",
        ["check-model", "{d}/random.bin", "{d}/syn.log"],
        False,
        _err("random.bin"),
        fast=True,
    ),
    Case(
        "check-model-json-types",
        ["check-model", "{d}/m_types.json", "{d}/syn.log"],
        False,
        _err("m_types.json"),
    ),
    Case(
        "check-model-dot-garbage",
        ["check-model", "{d}/m_garbage.dot", "{d}/syn.log"],
        False,
        _err("m_garbage.dot"),
    ),
    Case(
        "check-model-no-initial",
        ["check-model", "{d}/m_no_initial.dot", "{d}/syn.log"],
        False,
        _err("m_no_initial.dot"),
    ),
    Case(
        "check-model-binary-invariants",
        ["check-model", "{d}/syn.dot", "{d}/syn.log", "--invariants", "{d}/random.bin"],
        False,
        _err("random.bin"),
    ),
    Case(
        "check-model-binary-log",
        ["check-model", "{d}/syn.dot", "{d}/random.bin"],
        False,
        _err("random.bin"),
    ),
    # -- Parquet and read -----------------------------------------------------------------
    Case("pq-good", _infer("good.parquet"), True, stdout="(2 traces"),
    Case("pq-truncated", _infer("truncated.parquet"), False, _err("truncated.parquet")),
    Case("pq-magic-garbage", _infer("magic_only.parquet"), False, _err("magic_only.parquet")),
    Case("pq-wrong-schema", _infer("wrong_schema.parquet"), False, _err("wrong_schema.parquet")),
    Case("read-good", ["read", "{d}/hostile.log", "--out", "{out}"], True),
    Case(
        "read-to-a-folder", ["read", "{d}/good.log", "--out", "{d}/nologs"], False, _err("nologs")
    ),
    Case(
        "read-to-proc",
        ["read", "{d}/good.log", "--out", "/proc/statemine.parquet"],
        False,
        "/proc/statemine.parquet:",
    ),
    Case(
        "read-select-no-match",
        ["read", "{d}/good.log", "--out", "{out}", "--select", "role=client"],
        False,
        _err("good.log"),
    ),
    # -- diff and report --------------------------------------------------------------------
    Case(
        "diff-hostile-names",
        [
            "diff",
            "{d}/hostile.log",
            "{d}/good.log",
            "--out",
            "{out}",
            "--permutations",
            "50",
            "--bootstrap",
            "20",
        ],
        True,
        outputs=DIFF_SET,
    ),
    Case(
        "diff-binary-side",
        ["diff", "{d}/good.log", "{d}/random.bin", "--out", "{out}"],
        False,
        _err("random.bin"),
    ),
    Case(
        "diff-out-foreign",
        ["diff", "{d}/good.log", "{d}/good.log", "--out", "{d}/foreign"],
        False,
        _err("foreign"),
    ),
    Case(
        "report-hostile-names",
        ["report", "{d}/hostile.log", "--out", "{out}", "--bootstrap", "20"],
        True,
        check=_html_escaped,
    ),
    Case(
        "diff-ids-as-states",
        ["diff", "{d}/ids.log", "{d}/good.log", "--out", "{out}"],
        False,
        _err("ids.log"),
    ),
    Case(
        "report-ids-as-states",
        ["report", "{d}/ids.log", "--out", "{out}", "--bootstrap", "20"],
        True,
        check=lambda out: _not_drawn(out, 5000),
    ),
    Case(
        "report-out-is-a-folder",
        ["report", "{d}/good.log", "--out", "{d}/nologs"],
        False,
        _err("nologs"),
    ),
    Case(
        "report-gzip-cut",
        ["report", "{d}/cut_small.log.gz", "--out", "{out}"],
        False,
        _err("cut_small.log.gz"),
    ),
    # -- lab --------------------------------------------------------------------------------
    Case(
        "lab-scenario-binary",
        ["lab", "run", "{d}/random.bin", "--out", "{out}"],
        False,
        _err("random.bin"),
    ),
    Case(
        "lab-scenario-bad-toml",
        ["lab", "run", "{d}/scenario_bad.toml", "--out", "{out}"],
        False,
        _err("scenario_bad.toml"),
    ),
    Case(
        "lab-rerun-binary-config",
        ["lab", "rerun", "{d}/random.bin", "--out", "{out}"],
        False,
        _err("random.bin"),
    ),
    Case(
        "lab-scenarios-bad-toml-in-folder",
        ["lab", "scenarios", "--dir", "{d}"],
        False,
        _err("scenario_bad.toml"),
    ),
    # -- patch ----------------------------------------------------------------------------------
    Case(
        "patch-apply-missing-dir",
        ["patch", "apply", "--impl", "aioquic", "--version", "1.7.2", "{d}/no-src"],
        False,
        _err("no-src"),
    ),
    Case(
        "patch-revert-not-applied",
        ["patch", "revert", "--impl", "aioquic", "--version", "1.7.2", "{d}/src"],
        False,
        "aioquic/1.7.2/statemine.patch:",
    ),
]


def _limits() -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (TIME_S, TIME_S))


def run_limited(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``python -m statemine argv`` under the catalog's memory and time limits."""
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        COLUMNS="120",
        ARROW_DEFAULT_MEMORY_POOL="system",
        MALLOC_ARENA_MAX="1",
    )
    return subprocess.run(
        [sys.executable, "-m", "statemine", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        preexec_fn=_limits,
        timeout=WALL_S,
        stdin=subprocess.DEVNULL,
    )


def test_the_catalog_is_large_enough():
    assert len(CASES) >= 60 and len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.id, marks=() if c.fast else pytest.mark.slow) for c in CASES]
)
def test_hostile_input(case: Case, inputs: Path, tmp_path: Path):
    out = tmp_path / "out"
    for name, build in HEAVY.items():
        if f"{{d}}/{name}" in case.argv and not (inputs / name).exists():
            (inputs / name).write_bytes(build())
    argv = [a.replace("{d}", str(inputs)).replace("{out}", str(out)) for a in case.argv]
    before = sorted(os.listdir(inputs))
    try:
        done = run_limited(argv, tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case.id}: blocked for more than {WALL_S} s")
    stdout = done.stdout.decode("utf-8", "replace")
    stderr = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stdout + stderr, stderr[-3000:]
    assert "\x1b" not in stdout + stderr  # no raw escape sequence reaches the terminal
    lines = [line for line in stderr.splitlines() if line.strip()]
    if case.ok:
        assert done.returncode == 0, stderr[-2000:]
        assert not [line for line in lines if line.startswith("statemine: error")]
        if case.stdout:
            assert case.stdout in stdout, stdout[-2000:]
        if case.outputs:
            assert sorted(os.listdir(out)) == sorted(case.outputs)
        if case.check:
            case.check(out)
    else:
        assert done.returncode == 2, (done.returncode, stderr[-2000:])
        assert lines, "no message"
        *before_error, error = lines
        assert error.startswith("statemine: error: "), stderr[-2000:]
        assert all(
            line.startswith(("statemine: warning:", "statemine: note:")) for line in before_error
        ), stderr
        assert case.names is not None and case.names.replace("{d}", str(inputs)) in error, error
        assert not out.exists()  # nothing partial
    assert (
        sorted(os.listdir(inputs)) == before
    )  # no temporaries beside the inputs (or --out targets there)
    assert [p for p in os.listdir(tmp_path) if p != "out"] == []
