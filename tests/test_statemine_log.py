"""The statemine log-line parser and format detection, including bad input."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from statemine.errors import InputError
from statemine.parse import detect_format, read
from statemine.parse.statemine_log import read_statemine_log

LOG = """\
[1120/101010.123456:INFO:cubic_sender.cc(123)] STATEMINE t=0.000 conn=a role=server state=Init cwnd=13500 inflight=0 ssthresh=inf
2024/01/02 15:04:05 STATEMINE t=0.001 conn=b role=client state=SlowStart
unrelated noise line
INFO:quic:[1a2b] STATEMINE t=0.002 conn=a role=server state=SlowStart inflight=1350 cwnd=14000
STATEMINE t=0.010 conn=a role=server event=LossDetected rule=packet pn=12
STATEMINE t=0.010 conn=a role=server state=Recovery cwnd=7000 srtt=0.036 extra=1
STATEMINE t=0.020 conn=b role=client state=CongestionAvoidance
STATEMINE t=0.050 conn=a role=server event=Close
"""


def write(tmp_path, text, name="run.log", mode="w"):
    p = tmp_path / name
    if mode == "w":
        p.write_text(text)
    else:
        p.write_bytes(text)
    return p


def test_prefixes_interleaving_fields(tmp_path):
    ts = read_statemine_log(write(tmp_path, LOG))
    ev = ts.events
    assert ts.n_traces == 2
    a = ev[ev.trace == "run.log#a/server"]
    assert a["state"].tolist() == ["Init", "SlowStart", "LossDetected", "Recovery", "Close"]
    assert a["kind"].tolist() == ["state", "state", "event", "state", "event"]
    assert a["line"].tolist() == [1, 4, 5, 6, 8]
    assert a["seq"].tolist() == [0, 1, 2, 3, 4]
    assert a["cwnd"].tolist()[:2] == [13500.0, 14000.0]  # second line: fields out of order
    assert np.isinf(a["ssthresh"].iloc[0])
    assert a["inflight"].iloc[1] == 1350.0
    assert a["srtt"].iloc[3] == 0.036
    assert a["fields"].iloc[2] == "rule=packet pn=12"
    assert a["fields"].iloc[3] == "extra=1"
    tr = ts.traces.set_index("trace")
    assert tr.loc["run.log#a/server", "end"] == 0.05
    assert np.isnan(tr.loc["run.log#b/client", "end"])
    assert tr.loc["run.log#b/client", "role"] == "client"


def test_small_chunks_give_the_same_result(tmp_path):
    p = write(tmp_path, LOG * 1)
    whole = read_statemine_log(p).events
    chunked = read_statemine_log(p, chunk_bytes=7).events
    assert whole.astype(str).equals(chunked.astype(str))


def test_gzip_and_auto_detection(tmp_path):
    p = tmp_path / "run.log.gz"
    p.write_bytes(gzip.compress(LOG.encode()))
    assert detect_format(p) == "statemine"
    assert read(p).n_traces == 2


@pytest.mark.parametrize(
    "text, line, words",
    [
        ("STATEMINE t=abc conn=a state=SlowStart\n", 1, "not a number"),
        ("x\nSTATEMINE t=1 conn=a state=SlowStart cwnd=lots\n", 2, "cwnd= is not a number"),
        (
            "STATEMINE t=2 conn=a state=SlowStart\nSTATEMINE t=1 conn=a state=Recovery\n",
            2,
            "backwards",
        ),
        ("STATEMINE t=2 conn=a\n", 1, "malformed"),
        ("STATEMINE t=2 conn=a state=X cwnd=1 cwnd=2\n", 1, "twice"),
        ("STATEMINE t=2 conn=a state=X junk\n", 1, "key=value"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path, text, line, words):
    p = write(tmp_path, text)
    with pytest.raises(InputError) as err:
        read_statemine_log(p)
    assert err.value.line == line and err.value.file == str(p) and words in str(err.value)


def test_time_backwards_in_other_connection_is_fine(tmp_path):
    p = write(tmp_path, "STATEMINE t=2 conn=a state=A\nSTATEMINE t=1 conn=b state=B\n")
    assert read_statemine_log(p).n_traces == 2


def test_empty_binary_and_unknown(tmp_path):
    with pytest.raises(InputError, match="empty"):
        detect_format(write(tmp_path, ""))
    with pytest.raises(InputError, match="binary"):
        detect_format(write(tmp_path, bytes(range(256)) * 10, "g.bin", "b"))
    with pytest.raises(InputError, match="cannot tell the format"):
        detect_format(write(tmp_path, "hello world\n", "h.txt"))
    with pytest.raises(InputError, match="no statemine lines"):
        read_statemine_log(write(tmp_path, "hello\n", "h2.txt"))


def test_huge_single_line_is_refused_in_bounded_memory(tmp_path):
    p = tmp_path / "huge.log"
    with open(p, "wb") as fh:
        fh.write(b"STATEMINE t=0 conn=a state=A\n")
        block = b"x" * (1 << 20)
        for _ in range(100):  # a 100 MB line with no newline
            fh.write(block)
    with pytest.raises(InputError) as err:
        read_statemine_log(p, max_line_bytes=1 << 20)
    assert err.value.line == 2 and "longer than" in str(err.value)


def test_not_utf8(tmp_path):
    p = write(tmp_path, b"STATEMINE t=0 conn=a state=\xff\xfe\n", "bad.log", "b")
    with pytest.raises(InputError, match="UTF-8") as err:
        read_statemine_log(p)
    assert err.value.line == 1


def test_same_file_names_in_two_folders_get_distinct_trace_ids(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    write(tmp_path / "x", LOG)
    write(tmp_path / "y", LOG)
    ts = read([tmp_path / "x" / "run.log", tmp_path / "y" / "run.log"])
    assert ts.n_traces == 4


def test_folder_input_and_labels(tmp_path):
    write(tmp_path, LOG, "one.log")
    write(tmp_path, LOG, "two.log")
    ts = read(tmp_path, labels={"environment": "desktop"})
    assert ts.n_traces == 4 and set(ts.traces["environment"]) == {"desktop"}


def test_small_blocks_equal_one_block_and_report_the_first_error(tmp_path):
    lines = [
        f"STATEMINE t={i * 0.1:.1f} conn={i % 7} state={('A', 'B', 'C')[i % 3]} x{i}=1\n"
        for i in range(3000)
    ]
    p = write(tmp_path, "".join(lines))
    whole = read_statemine_log(p).events
    small = read_statemine_log(p, chunk_bytes=4096).events
    assert whole.astype(str).equals(small.astype(str))
    assert whole["fields"].iloc[1] == "x7=1"  # trace of conn 0: lines 1, 8, 15, ...
    lines[500] = "STATEMINE t=x conn=1 state=A\n"
    lines[2500] = "STATEMINE t=y conn=1 state=A\n"
    p = write(tmp_path, "".join(lines), "bad.log")
    with pytest.raises(InputError) as err:
        read_statemine_log(p, chunk_bytes=4096)
    assert err.value.line == 501
