"""The compiled scanner of statemine lines against a plain-Python reading of
docs/log-format.md, on generated lines (hypothesis)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statemine.errors import InputError
from statemine.parse.statemine_log import KINDS, LogScan
from statemine.parse.timerange import MAX_TIME_S

NUMERIC = ("cwnd", "inflight", "ssthresh", "srtt")
token = st.text("abcXYZ019_-.:", min_size=1, max_size=6)
number = st.one_of(
    st.integers(0, 10**18).map(str),
    st.floats(0, 1e9, allow_nan=False).map(repr),
    st.decimals(0, 10**6, places=9, allow_nan=False, allow_infinity=False).map(str),
    st.sampled_from(
        ["0.1", "1e-3", "2.5E+4", "inf", "+7", "-0.0", "123456789012345678901234.5", ".5", "5."]
    ),
)


@st.composite
def statemine_line(draw) -> str:
    prefix = draw(
        st.sampled_from(
            ["", "I1120 10:10:10.001 x.go:1] ", "INFO:quic: ", "[1120/1:INFO:a.cc(3)] "]
        )
    )
    head = f"STATEMINE t={draw(st.floats(0, 100, allow_nan=False))!r} conn={draw(token)}"
    if draw(st.booleans()):
        head += f" role={draw(st.sampled_from(['server', 'client']))}"
    head += f" {draw(st.sampled_from(KINDS))}={draw(token)}"
    fields = [f"{k}={draw(number)}" for k in draw(st.lists(st.sampled_from(NUMERIC), unique=True))]
    fields += [f"x{i}={draw(token)}" for i in range(draw(st.integers(0, 2)))]
    return prefix + " ".join([head, *draw(st.permutations(fields))])


def reference(lines: list[str]) -> list[dict]:
    """Each statemine line as a dict, read with str.split and float()."""
    out = []
    for no, line in enumerate(lines, 1):
        at = line.find("STATEMINE t=")
        if at < 0:
            continue
        tokens = line[at + len("STATEMINE ") :].split()
        pairs = [t.partition("=") for t in tokens]
        row = {"line": no, "time": float(pairs[0][2]), "conn": pairs[1][2], "role": None}
        rest = pairs[2:]
        if rest[0][0] == "role":
            row["role"] = rest.pop(0)[2]
        row["kind"], _, row["name"] = rest.pop(0)
        row.update({k: math.nan for k in NUMERIC})
        extra = []
        for key, _, value in rest:
            if key in NUMERIC:
                row[key] = float(value)
            else:
                extra.append(f"{key}={value}")
        row["fields"] = " ".join(extra) or None
        out.append(row)
    return out


def scanned(path, chunk_bytes: int) -> list[dict]:
    scan = LogScan(path, chunk_bytes=chunk_bytes)
    blocks = list(scan)
    names, table = scan.names(), scan.traces()
    rows = []
    for b in blocks:
        extra = dict(zip(b.extra_rows.tolist(), b.extra_text))
        for i in range(len(b.time)):
            code = int(b.trace[i])
            row = {
                "line": int(b.line[i]),
                "time": float(b.time[i]),
                "conn": table.conn[code],
                "role": table.role[code],
                "kind": KINDS[b.kind[i]],
                "name": names[b.name[i]],
                "fields": extra.get(i),
            }
            row.update({k: float(b.numeric[k][i]) for k in NUMERIC})
            rows.append(row)
    return rows


def same(a: list[dict], b: list[dict]) -> bool:
    def norm(row):
        return {k: ("nan" if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}

    return [norm(r) for r in a] == [norm(r) for r in b]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(statemine_line(), st.just("other text"), st.just("")), min_size=1, max_size=40
    ),
    st.integers(8, 400),
)
def test_scanner_equals_plain_python_reading(tmp_path_factory, lines, chunk_bytes):
    # one connection per line keeps time order trivially valid
    lines = [ln.replace("conn=", f"conn=c{i}_", 1) for i, ln in enumerate(lines)]
    path = tmp_path_factory.mktemp("scan") / "run.log"
    path.write_text("\n".join(lines) + "\n")
    assert same(scanned(path, chunk_bytes), reference(lines))


@settings(max_examples=200, deadline=None)
@given(number)
def test_numbers_equal_python_float(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("num") / "n.log"
    time = text if abs(float(text)) <= MAX_TIME_S else "0"  # inf, nan, past 2**32 s: refused
    path.write_text(f"STATEMINE t={time} conn=a state=S cwnd={text}\n")
    [row] = scanned(path, 1 << 16)
    assert row["time"] == float(time) and row["cwnd"] == float(text)


def test_infinite_time_is_refused(tmp_path):
    p = tmp_path / "t.log"
    p.write_text("STATEMINE t=inf conn=a state=S\n")
    with pytest.raises(InputError, match=r"not a finite number"):
        list(LogScan(p))


@pytest.mark.parametrize("bad", ["0x10", "1_000", " 1", "1e", "--1", ""])
def test_numbers_python_would_not_take_either(tmp_path, bad):
    p = tmp_path / "b.log"
    p.write_text(f"STATEMINE t=1 conn=a state=S cwnd={bad}\n")
    with pytest.raises(InputError, match=r"cwnd= is not a number|expected key=value"):
        list(LogScan(p))


def test_trace_table_tracks_last_time_and_close(tmp_path):
    p = tmp_path / "c.log"
    p.write_text(
        "STATEMINE t=1 conn=a state=S\nSTATEMINE t=2 conn=b role=client state=S\n"
        "STATEMINE t=3 conn=a event=Close\nSTATEMINE t=4 conn=a event=Late\n"
    )
    scan = LogScan(p)
    n = sum(len(b.time) for b in scan)
    table = scan.traces()
    assert n == 4 and table.conn == ["a", "b"] and table.role == [None, "client"]
    assert table.last_time.tolist() == [4.0, 2.0] and table.n_events.tolist() == [3, 1]
    assert table.close_time[0] == 3.0 and np.isnan(table.close_time[1])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                b"STATEMINE t=",
                b"1.5",
                b" conn=",
                b"a",
                b" role=",
                b"server",
                b" state=",
                b" event=",
                b"X",
                b" cwnd=",
                b"inf",
                b"\n",
                b"\r\n",
                b" ",
                b"\t",
                b"=",
                b"\xff",
                b"\xe2\x82\xac",
                b"\xf0\x9f",
                b"1e309",
                b"-",
                b"0x1",
                b"Close",
                b"x=y",
                b"\x00",
            ]
        ),
        max_size=80,
    ),
    st.binary(max_size=40),
    st.integers(4, 64),
)
def test_garbage_parses_or_is_refused_with_a_line(tmp_path_factory, pieces, noise, chunk_bytes):
    """Untrusted bytes: rows, or an InputError naming a line; never a crash. (The scanner
    was also run under AddressSanitizer on 35,000 such blocks: no finding.)"""
    path = tmp_path_factory.mktemp("fuzz") / "f.log"
    path.write_bytes(noise + b"".join(pieces))
    try:
        for block in LogScan(path, chunk_bytes=chunk_bytes, max_line_bytes=64):
            assert len(block.time) == len(block.trace) == len(block.line)
    except InputError as err:
        assert err.line is not None and err.line >= 1


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.one_of(statemine_line(), st.just("other text"), st.just("")), min_size=1, max_size=40
    ),
    st.integers(8, 400),
    st.booleans(),
)
def test_scan_files_equals_logscan_and_hashes_what_it_reads(
    tmp_path_factory, lines, chunk_bytes, crlf
):
    """scan_files (many files' scanner, the sha256 taken from its reads) gives LogScan's
    rows, for blocks cutting lines anywhere, CRLF or not, no last newline. A first line
    of 70 kB makes the file one that is streamed, not read whole in C."""
    import hashlib

    from statemine.parse.lines import ReadDigests
    from statemine.parse.statemine_log import ScannedBlock, scan_files

    lines = [*lines, "STATEMINE t=0 conn=last state=S"]  # a log has a statemine line
    lines = [ln.replace("conn=", f"conn=c{i}_", 1) for i, ln in enumerate(lines)]
    path = tmp_path_factory.mktemp("scanfiles") / "run.log"
    path.write_bytes(("\r\n" if crlf else "\n").join(["x" * 70_000, *lines]).encode())
    digests = ReadDigests()
    blocks = [
        b
        for b in scan_files([path], chunk_bytes=chunk_bytes, digests=digests)
        if isinstance(b, ScannedBlock)
    ]
    want = scanned(path, chunk_bytes)
    got = [
        (int(b.line[i]), float(b.time[i]), b.names[b.name[i]], int(b.kind[i]))
        for b in blocks
        for i in range(len(b.time))
    ]
    assert got == [(r["line"], r["time"], r["name"], KINDS.index(r["kind"])) for r in want]
    data = path.read_bytes()
    assert digests.records() == {str(path.resolve()): (hashlib.sha256(data).hexdigest(), len(data))}


@pytest.mark.parametrize(
    "text",
    [
        "0000000000000000000000000001.5",
        "1234567890123456789",
        "12345678901234567890",
        "9007199254740993",
        "0.1234567890123456789012",
        "-0",
        "5.",
        ".5",
        "+7",
    ],
)
def test_long_and_odd_decimals_equal_python_float(tmp_path, text):
    """Past 19 digits (or 2**53) the fast path hands over to strtod: the same value."""
    p = tmp_path / "n.log"
    p.write_text(f"STATEMINE t=1 conn=a state=S cwnd={text}\n")
    [row] = scanned(p, 1 << 16)
    assert row["cwnd"] == float(text) and math.copysign(1, row["cwnd"]) == math.copysign(
        1, float(text)
    )


def test_names_sharing_a_cache_slot_keep_their_codes(tmp_path):
    """Names of one length, first and last byte share a slot of the scanner's name cache
    (checked against the interned bytes): each keeps its own code, in first-seen order."""
    names = ["SaX", "SbX", "SaX", "ScX", "SbX", "Close", "SaX"]
    p = tmp_path / "n.log"
    p.write_text("".join(f"STATEMINE t={i} conn=a state={n}\n" for i, n in enumerate(names)))
    scan = LogScan(p)
    [block] = list(scan)
    assert [scan.names()[c] for c in block.name] == names
    assert scan.names() == ["SaX", "SbX", "ScX", "Close"]
