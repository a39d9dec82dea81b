"""Times outside any plausible range (issue 27 item 7): non-finite, or beyond
statemine.parse.timerange.MAX_TIME_S in magnitude, are refused by every reader in one line
naming the file and line (exit 2); times up to the bound (Unix epoch seconds included)
still read."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from statemine.cli import main
from statemine.errors import InputError
from statemine.parse import read
from statemine.parse.ftrace import read_ftrace
from statemine.parse.qlog import read_qlog
from statemine.parse.regex import read_regex
from statemine.parse.statemine_log import read_statemine_log
from statemine.parse.timerange import MAX_TIME_S, first_implausible, time_problem

#: Just past the bound (seconds) and the issue's -1e300 ms.
BEYOND = ["4294967297", "-4294967297", "1e12", "-1e297", "1e308"]
#: Unix time in 2026 and the bound itself: admitted.
INSIDE = ["1795000000.123456", str(int(MAX_TIME_S))]


def test_the_bound_and_its_checks_agree():
    assert MAX_TIME_S == 2.0**32
    for value in (0.0, -MAX_TIME_S, MAX_TIME_S, 1.8e9):
        assert time_problem(value) is None
    for value in (np.nextafter(MAX_TIME_S, np.inf), -1e300, np.inf, -np.inf, np.nan):
        assert time_problem(value) is not None
    times = np.array([0.0, 1.0, MAX_TIME_S, -MAX_TIME_S * 2, np.nan])
    assert first_implausible(times) == 3
    assert first_implausible(times[:3]) is None
    assert first_implausible(np.array([1.0, np.nan])) == 1


def _statemine(path: Path, t: str) -> Path:
    path.write_text(
        "STATEMINE t=1 conn=a state=SlowStart\n"
        f"STATEMINE t={t} conn=b state=Recovery\n"
        "STATEMINE t=2 conn=a event=Close\n"
    )
    return path


@pytest.mark.parametrize("t", [*BEYOND, "inf", "-inf", "nan", "1e309"])
def test_statemine_lines_refuse_implausible_times(tmp_path, t):
    """The C scanner (both the whole-file read and the streamed fold use it)."""
    f = _statemine(tmp_path / "a.log", t)
    with pytest.raises(InputError) as err:
        read_statemine_log(f)
    assert err.value.file == str(f) and err.value.line == 2
    assert f"t={t!r}" in err.value.reason


@pytest.mark.parametrize("t", INSIDE)
def test_statemine_lines_keep_times_up_to_the_bound(tmp_path, t):
    ts = read_statemine_log(_statemine(tmp_path / "a.log", t))
    assert float(t) in ts.events["time"].tolist()


def test_the_bound_is_exact_in_the_scanner(tmp_path):
    edge = repr(MAX_TIME_S)
    read_statemine_log(_statemine(tmp_path / "a.log", edge))
    past = repr(float(np.nextafter(MAX_TIME_S, np.inf)))
    with pytest.raises(InputError, match="outside"):
        read_statemine_log(_statemine(tmp_path / "b.log", past))


def _qlog(path: Path, time: object) -> Path:
    recs = [
        {"qlog_format": "JSON-SEQ", "qlog_version": "0.3", "trace": {}},
        {"time": 1, "name": "recovery:congestion_state_updated", "data": {"new": "slow_start"}},
        {"time": time, "name": "recovery:congestion_state_updated", "data": {"new": "recovery"}},
    ]
    path.write_text("".join("\x1e" + json.dumps(r) + "\n" for r in recs))
    return path


@pytest.mark.parametrize("time", [-1e300, 4.3e12, "1e400", "-1e400"])
def test_qlog_refuses_implausible_times(tmp_path, time):
    """qlog times are ms: -1e300 ms (the issue's) and 4.3e12 ms (past 2**32 s)."""
    f = _qlog(tmp_path / "a.sqlog", time)
    with pytest.raises(InputError) as err:
        read_qlog(f)
    assert err.value.file == str(f) and err.value.line == 3
    assert "time" in err.value.reason and "\n" not in err.value.reason


def test_qlog_keeps_epoch_milliseconds(tmp_path):
    ts = read_qlog(_qlog(tmp_path / "a.sqlog", 1.795e12))
    assert ts.events["time"].max() == pytest.approx(1.795e9)


def _regex_log(path: Path, t: str) -> Path:
    path.write_text(f"1 SlowStart\n{t} Recovery\n")
    return path


@pytest.mark.parametrize("t", ["-1e300", "4.3e18", "1e308"])
def test_regex_logs_refuse_implausible_times(tmp_path, t):
    """Without time_scale the unit is the log's own (it may be ns): the bound is 2**32 s in
    nanoseconds."""
    f = _regex_log(tmp_path / "a.log", t)
    with pytest.raises(InputError) as err:
        read_regex([f], ["^(?<DTIME>)(?<TYPE>)$"])
    assert err.value.file == str(f) and err.value.line == 2 and "outside" in err.value.reason


def test_regex_logs_in_epoch_microseconds_read_as_before(tmp_path):
    """Synoptic's examples (../shared/synoptic-oracle) log epoch microseconds."""
    f = _regex_log(tmp_path / "a.log", "1700000001007557")
    assert read_regex([f], ["^(?<LTIME>)(?<TYPE>)$"]).events["time"].max() == 1700000001007557


def test_regex_times_in_seconds_are_bounded_by_max_time_s(tmp_path):
    f = _regex_log(tmp_path / "a.log", "1795000000123")  # epoch ms
    with pytest.raises(InputError, match="outside"):
        read_regex([f], ["^(?<DTIME>)(?<TYPE>)$"], time_scale=1.0001)
    ts = read_regex([f], ["^(?<DTIME>)(?<TYPE>)$"], time_scale=1e-3)
    assert ts.events["time"].max() == pytest.approx(1795000000.123)


def _ftrace(path: Path, t: str) -> Path:
    def cong(stamp: str, state: int) -> str:
        return (
            f"  python3-1 [000] ..s2. {stamp}: tcp_cong_state_set: family=AF_INET sport=40001 "
            f"dport=5201 saddr=10.0.0.1 daddr=10.0.0.2 saddrv6=::1 daddrv6=::2 "
            f"cong_state={state}\n"
        )

    path.write_text(cong("1.000000", 0) + cong(t, 3))
    return path


@pytest.mark.parametrize("t", ["4294967297.000000", "999999999999999.000001"])
def test_ftrace_refuses_implausible_times(tmp_path, t):
    f = _ftrace(tmp_path / "trace.txt", t)
    with pytest.raises(InputError) as err:
        read_ftrace(f)
    assert err.value.file == str(f) and err.value.line == 2 and "outside" in err.value.reason


def test_ftrace_keeps_uptimes(tmp_path):
    ts = read_ftrace(_ftrace(tmp_path / "trace.txt", "86400.500000"))
    assert ts.events["time"].max() == pytest.approx(86400.5)


def test_cli_refuses_the_issue_qlog_in_one_line(tmp_path):
    f = _qlog(tmp_path / "a.sqlog", -1e300)
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["infer", str(f), "--out", str(out)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{f}:3:" in lines[0] and "outside" in lines[0]
    assert not out.exists()


def test_read_dispatch_refuses_too(tmp_path):
    with pytest.raises(InputError):
        read([_statemine(tmp_path / "a.log", "-1e297")])


@pytest.mark.parametrize("command", ["infer", "store"])
def test_cli_streamed_paths_refuse_statemine_lines_in_one_line(tmp_path, command):
    """``infer`` folds statemine logs streamed, ``store add`` spills them: both scan with
    the bound."""
    f = _statemine(tmp_path / "a.log", "-1e297")
    out = tmp_path / "out"
    argv = (
        ["infer", str(f), "--out", str(out)]
        if command == "infer"
        else ["store", "add", str(f), "--store", str(out), "--label", "x=y"]
    )
    res = CliRunner().invoke(main, argv)
    assert res.exit_code == 2 and "Traceback" not in res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{f}:2:" in lines[0] and "outside" in lines[0], lines
