"""The Synoptic-compatible regex reader (statemine.parse.regex)."""

from __future__ import annotations

import pytest

import statemine.parse.regex as regex_mod
from statemine.errors import InputError, UsageError
from statemine.parse.regex import compile_regex, read_regex, substitute


@pytest.fixture(params=["fast", "loop"])
def engine(request, monkeypatch):
    """Run each test with the Arrow fast path and with the line loop only."""
    if request.param == "loop":
        monkeypatch.setattr(regex_mod, "_read_file_fast", lambda *a, **k: False)
    return request.param


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def rows(ts, *cols):
    ev = ts.events.sort_values(["synoptic_trace", "seq"])
    return ev[list(cols)].values.tolist()


def test_empty_groups_get_synoptics_default_patterns():
    r = compile_regex("^(?<DTIME>)(?<nodename>)(?<TYPE>)$")
    m = r.pattern.fullmatch("  12  n1   send ")
    assert (m.group("DTIME"), m.group("nodename"), m.group("TYPE")) == ("12", "n1", "send")
    # the second empty group needs white space before it
    assert r.pattern.fullmatch("12n1 send") is None


def test_substitute_fills_backreferences():
    assert substitute(r"\k<a>/\k<b>", {"a": "x"}) == "x/"


def test_separator_splits_traces_and_time_sorts_within_trace(tmp_path, engine):
    log = write(tmp_path, "a.log", "5 b\n1 a\n--\n--\n3 c\n")
    ts = read_regex([log], ["^(?<DTIME>)(?<TYPE>)$"], separator="^--$")
    assert rows(ts, "trace", "state", "line", "synoptic_time") == [
        ["0", "a", 2, "1"], ["0", "b", 1, "5"], ["1", "c", 5, "3"]]
    assert ts.events["time"].tolist() == [1.0, 5.0, 3.0]


def test_implicit_time_is_the_line_number(tmp_path, engine):
    log = write(tmp_path, "a.log", "x\ny\n")
    ts = read_regex([log], ["^(?<TYPE>)$"])
    assert rows(ts, "state", "time", "synoptic_time") == [["x", 1.0, "1"], ["y", 2.0, "2"]]


def test_mapping_backreference_groups_lines_across_the_file(tmp_path, engine):
    log = write(tmp_path, "a.log", "1 h1 a\n2 h2 a\n3 h1 b\n4 h2 c\n")
    ts = read_regex([log], ["^(?<TIME>)(?<host>)(?<TYPE>)$"], mapping=r"\k<host>")
    assert rows(ts, "trace", "state") == [["0", "a"], ["0", "b"], ["1", "a"], ["1", "c"]]
    assert ts.traces["partition"].tolist() == ["h1", "h2"]


def test_each_file_is_a_trace_by_default_and_counters_restart(tmp_path, engine):
    a = write(tmp_path, "a.log", "x\n--\ny\n")
    b = write(tmp_path, "b.log", "z\n")
    ts = read_regex([a, b], ["^(?<TYPE>)$"], separator="^--$")
    assert rows(ts, "trace", "state", "line") == [["0", "x", 1], ["1", "y", 3], ["2", "z", 1]]


def test_regexes_tried_in_order_and_hidden_lines(tmp_path, engine):
    log = write(tmp_path, "a.log", "# comment\nsend 1\nrecv\n")
    ts = read_regex([log], ["^(?<TYPE>send) \\d+$", "^(?<TYPE>\\w+)$", "^#(?<HIDE=>true).*$"])
    assert rows(ts, "state", "line") == [["send", 2], ["recv", 3]]


def test_type_group_absent_uses_whole_line(tmp_path):
    log = write(tmp_path, "a.log", "foo bar\nbaz\n")
    ts = read_regex([log], ["^(?<TYPE>baz)$|^foo (?:bar)$"])
    assert rows(ts, "state") == [["foo bar"], ["baz"]]


def test_ltime_and_decimal_time_texts(tmp_path, engine):
    log = write(tmp_path, "a.log", "+0012 a\n7 b\n")
    ts = read_regex([log], ["^(?<LTIME>)(?<TYPE>)$"])
    assert rows(ts, "synoptic_time", "time") == [["7", 7.0], ["12", 12.0]]
    log2 = write(tmp_path, "b.log", "443.139080 a\n1e3 b\n")
    ts2 = read_regex([log2], ["^(?<DTIME>)(?<TYPE>)$"])
    assert rows(ts2, "synoptic_time", "time") == [["443.139080", 443.13908], ["1E+3", 1000.0]]


def test_nonmatching_lines_are_listed_with_line_numbers(tmp_path, engine):
    log = write(tmp_path, "a.log", "1 a\nbad\n2 b\nworse\n")
    with pytest.raises(InputError) as err:
        read_regex([log], ["^(?<DTIME>)(?<TYPE>)$"])
    msg = str(err.value)
    assert msg.startswith(f"{log}:2:")
    assert "line 2: 'bad'" in msg and "line 4: 'worse'" in msg
    ts = read_regex([log], ["^(?<DTIME>)(?<TYPE>)$"], ignore_nonmatching=True)
    assert rows(ts, "state") == [["a"], ["b"]]


def test_bad_time_is_an_error_unless_ignored(tmp_path, engine):
    log = write(tmp_path, "a.log", "1 a\nx1 b\n")
    with pytest.raises(InputError, match=r":2: cannot parse the DTIME time 'x1'"):
        read_regex([log], ["^(?<DTIME>)(?<TYPE>)$"])
    ts = read_regex([log], ["^(?<DTIME>)(?<TYPE>)$"], ignore_nonmatching=True)
    assert rows(ts, "state") == [["a"]]


@pytest.mark.parametrize("regex,reason", [
    ("^(?<TYPE>[a-$", "does not compile"),
    ("^(?<DTIME>)$", "has no TYPE group"),
    ("^(?<DTIME>)(?<TIME>)(?<TYPE>)$", "several time groups"),
    ("^(?<HIDE=>yes)$", "HIDE can only"),
])
def test_bad_regexes(regex, reason):
    with pytest.raises(UsageError, match=reason):
        compile_regex(regex)


@pytest.mark.parametrize("text", ["INITIAL\n", "a\x01b\n"])
def test_types_that_would_break_the_model_files(tmp_path, engine, text):
    log = write(tmp_path, "a.log", "ok\n" + text)
    with pytest.raises(InputError, match=":2: event type"):
        read_regex([log], ["^(?<TYPE>.+)$"])


def test_empty_input_is_an_error(tmp_path, engine):
    log = write(tmp_path, "a.log", "")
    with pytest.raises(InputError, match="no events"):
        read_regex([log], ["^(?<TYPE>)$"])


def test_fast_path_and_line_loop_agree_on_the_oracle_logs(monkeypatch):
    from test_synoptic_oracle import CASES, synoptic_args

    for case in CASES:
        a = synoptic_args(case)
        args = (a["files"], a["regexes"], a["separator"], a["mapping"], a["ignore"])
        fast = read_regex(*args)
        with monkeypatch.context() as m:
            m.setattr(regex_mod, "_read_file_fast", lambda *x, **k: False)
            loop = read_regex(*args)
        assert fast.events.equals(loop.events), case
        assert fast.traces.equals(loop.traces), case
