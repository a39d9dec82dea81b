"""The Synoptic-compatible regex reader (statemine.parse.regex)."""

from __future__ import annotations

import pytest

import statemine.parse.regex as regex_mod
from statemine.errors import InputError, UsageError
from statemine.parse.regex import compile_regex, read_regex, substitute


@pytest.fixture(params=["fast", "loop", "plain"])
def engine(request, monkeypatch):
    """Run each test with the Arrow fast path, with the line loop only, and with the line
    loop on numpy strings (no Arrow: what inputs up to SMALL_INPUT_BYTES get)."""
    if request.param != "plain":
        monkeypatch.setattr(regex_mod, "SMALL_INPUT_BYTES", -1)
    if request.param == "loop":
        monkeypatch.setattr(regex_mod, "_scan_vectorized", lambda *a, **k: None)
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
    assert (m["DTIME"], m["nodename"], m["TYPE"]) == ("12", "n1", "send")
    # the second empty group needs white space before it
    assert r.pattern.fullmatch("12n1 send") is None


def test_substitute_fills_backreferences():
    assert substitute(r"\k<a>/\k<b>", {"a": "x"}) == "x/"


def test_separator_splits_traces_and_time_sorts_within_trace(tmp_path, engine):
    log = write(tmp_path, "a.log", "5 b\n1 a\n--\n--\n3 c\n")
    ts = read_regex([log], ["^(?<DTIME>)(?<TYPE>)$"], separator="^--$")
    assert rows(ts, "trace", "state", "line", "synoptic_time") == [
        ["0", "a", 2, "1"],
        ["0", "b", 1, "5"],
        ["1", "c", 5, "3"],
    ]
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


@pytest.mark.parametrize(
    "regex,reason",
    [
        ("^(?<TYPE>[a-$", "does not compile"),
        ("^(?<DTIME>)$", "has no TYPE group"),
        ("^(?<DTIME>)(?<TIME>)(?<TYPE>)$", "several time groups"),
        ("^(?<HIDE=>yes)$", "HIDE can only"),
    ],
)
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
    from shared_data import shared
    from test_synoptic_oracle import CASES, synoptic_args

    shared("synoptic-oracle")  # skips with the reason where ../shared is absent
    for case in CASES:
        a = synoptic_args(case)
        args = (a["files"], a["regexes"], a["separator"], a["mapping"], a["ignore"])
        with monkeypatch.context() as m:
            m.setattr(regex_mod, "SMALL_INPUT_BYTES", -1)
            fast = read_regex(*args)
            m.setattr(regex_mod, "_scan_vectorized", lambda *x, **k: None)
            loop = read_regex(*args)
        with monkeypatch.context() as m:
            m.setattr(regex_mod, "SMALL_INPUT_BYTES", 1 << 62)
            plain = read_regex(*args)
        assert fast.events.equals(loop.events), case
        assert fast.traces.equals(loop.traces), case
        assert plain.events.equals(loop.events), case
        assert plain.traces.equals(loop.traces), case


# -- the vectorized path against the line loop, on generated logs ------------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_TIMES = ["1", "2", "10", "3.25", "12", "0", "1.5", "77"]  # valid for every time kind
_ODD_TIMES = [
    "007",
    "-3",
    "+4",
    "1e3",
    ".5",
    "5.",
    "x1",
    "-0",
    "99999999999999999999",
    "2147483648",
    "nan",
    "-12.50",
    "1E+3",
]
_TYPES = ["a", "b", "SlowStart", "x-y", "é"]
_ODD_TYPES = ["INITIAL", "a\x01b", "TERMINAL"]
_SPACE = ["", " ", "  ", "\t", "\x0b", "\x0c"]
_CONFIGS = [  # (regexes, separator, mapping)
    (["^(?<DTIME>)(?<TYPE>)$"], "^--$", None),
    (["^(?<TIME>)(?<TYPE>)$"], "^--$", None),
    (["^(?<LTIME>)(?<TYPE>)$"], None, None),
    (["^(?<TYPE>)$"], "--", None),
    (["^(?<DTIME>\\d+(?:\\.\\d+)?) (?<TYPE>\\w+)$", "^#(?<HIDE=>true).*$"], "^--$", None),
    (["^(?<TYPE>\\w+)\\s+(?<host>\\w+)$"], None, "\\k<host>"),
    (["^(?<DTIME>)(?<host>)(?<TYPE>)$"], None, "\\k<host>-\\k<FILE>"),
    (["(?<TYPE>.+)"], "^-+$", None),
    (["^(?<DTIME>\\S+) (?<TYPE>[a-z]+)$", "^(?<TYPE>)(?<DTIME>)$"], None, None),
    (["^\\s*(?<TYPE>\\S+)\\s*$"], "^--$", None),
    (["^(?<DTIME>.+) (?<TYPE>\\w+)$"], "^--$", None),
    (["^(?<TYPE>[^\\s]+)\\s(?<DTIME>\\d+)$"], "^--$", "\\k<SEPCOUNT>\\k<TYPE>"),
]


@st.composite
def _log_line(draw):
    kind = draw(st.sampled_from(["event"] * 12 + ["sep"] * 3 + ["other"]))
    ws = st.sampled_from(_SPACE)
    if kind == "sep":
        return draw(st.sampled_from(["--", "---", " --"]))
    if kind == "other":
        return draw(st.sampled_from(["", "# comment", "a b c d", "h1", "1 a h1"]))
    odd = draw(st.integers(0, 19))
    parts = [
        draw(st.sampled_from(_ODD_TIMES if odd < 2 else _TIMES)),
        draw(st.sampled_from(_ODD_TYPES if odd == 2 else _TYPES)),
    ]
    if draw(st.integers(0, 9)) == 0:
        parts.reverse()
    if draw(st.integers(0, 3)) == 0:
        parts.append(draw(st.sampled_from(["h1", "h2"])))
    return draw(ws) + draw(st.sampled_from([" ", "\t", "  ", "\x0b"])).join(parts) + draw(ws)


def _outcome(read):
    try:
        ts = read()
    except (InputError, UsageError) as exc:
        return type(exc).__name__, str(exc)
    return ts.events.reset_index(drop=True), ts.traces.reset_index(drop=True)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    files=st.lists(st.lists(_log_line(), min_size=1, max_size=25), min_size=1, max_size=2),
    config=st.sampled_from(_CONFIGS),
    ignore=st.booleans(),
    block=st.sampled_from([1 << 21, 1, 30]),
    workers=st.sampled_from([1, 2]),
    longest=st.sampled_from([1 << 20, 1 << 20, 12]),
)
def test_vectorized_path_and_line_loop_agree_on_generated_logs(
    files, config, ignore, block, workers, longest
):
    import tempfile
    from pathlib import Path

    regexes, separator, mapping = config
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for k, lines in enumerate(files):
            path = Path(tmp) / f"log{k}.txt"
            path.write_text("".join(line + "\n" for line in lines))
            paths.append(path)

        def read():
            return read_regex(paths, regexes, separator, mapping, ignore)

        with pytest.MonkeyPatch.context() as m:
            m.setattr(regex_mod, "BLOCK_CHARS", block)
            m.setattr(regex_mod, "WORKERS", workers)
            m.setattr(regex_mod, "MAX_LINE_CHARS", longest)
            m.setattr(regex_mod, "SMALL_INPUT_BYTES", -1)
            fast = _outcome(read)
        with pytest.MonkeyPatch.context() as m:
            m.setattr(regex_mod, "_scan_vectorized", lambda *a, **k: None)
            m.setattr(regex_mod, "MAX_LINE_CHARS", longest)
            loop = _outcome(read)
    if isinstance(loop[0], str):
        assert fast == loop
    else:
        assert not isinstance(fast[0], str), fast
        assert fast[0].equals(loop[0]) and fast[1].equals(loop[1])


def test_vectorized_path_is_used_for_the_common_regexes(tmp_path, monkeypatch):
    """The generated-log test compares something: these regexes take the vectorized path."""
    log = write(tmp_path, "a.log", "1 a\n--\n2 b\n")
    for regexes, _separator, _ in _CONFIGS[:2] + _CONFIGS[4:5]:
        compiled = [regex_mod.compile_regex(r) for r in regexes]
        assert all(regex_mod._vectorizable(r) for r in compiled)
    calls = []
    real = regex_mod._scan_vectorized
    monkeypatch.setattr(regex_mod, "SMALL_INPUT_BYTES", -1)
    monkeypatch.setattr(
        regex_mod, "_scan_vectorized", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    assert len(read_regex([log], ["^(?<DTIME>)(?<TYPE>)$"], "^--$").events) == 2
    assert calls


def _fast_and_loop(monkeypatch, read, block=1 << 21):
    with monkeypatch.context() as m:
        m.setattr(regex_mod, "BLOCK_CHARS", block)
        m.setattr(regex_mod, "SMALL_INPUT_BYTES", -1)
        fast = _outcome(read)
    with monkeypatch.context() as m:
        m.setattr(regex_mod, "_scan_vectorized", lambda *a, **k: None)
        loop = _outcome(read)
    return fast, loop


@pytest.mark.parametrize("kind", ["DTIME", "TIME", "LTIME"])
@pytest.mark.parametrize("ignore", [False, True])
def test_every_time_form_reads_the_same_on_both_paths(tmp_path, monkeypatch, kind, ignore):
    forms = (
        _TIMES
        + _ODD_TIMES
        + [
            "9223372036854775807",
            "9223372036854775808",
            "-2147483648",
            "-2147483649",
            "000",
            "1.000",
        ]
    )
    logs = [write(tmp_path, "all.log", "".join(f"{t} e{k % 3}\n" for k, t in enumerate(forms)))]
    logs += [write(tmp_path, f"{k}.log", f"1 e0\n{t} e1\n2 e2\n") for k, t in enumerate(forms)]
    for log in logs:
        for regex in (f"^(?<{kind}>)(?<TYPE>)$", f"^(?<{kind}>.+) (?<TYPE>e\\d)$"):
            fast, loop = _fast_and_loop(
                monkeypatch,
                lambda log=log, regex=regex: read_regex([log], [regex], ignore_nonmatching=ignore),
            )
            if isinstance(loop[0], str):
                assert fast == loop
            else:
                assert fast[0].equals(loop[0]) and fast[1].equals(loop[1])


@pytest.mark.parametrize("bad_at", [2, 6, 7, 12])
@pytest.mark.parametrize("block", [1 << 21, 12])
def test_errors_come_in_the_line_loops_order(tmp_path, monkeypatch, bad_at, block):
    """A bad time (or reserved type) is reported unless five non-matching lines come first."""
    lines = [
        "1 a",
        "junk x y",
        "2 b",
        "junk",
        "junk",
        "junk",
        "3 c",
        "junk",
        "4 d",
        "5 e",
        "6 f",
        "7 g",
        "8 h",
    ]
    for bad in ("x1 a", "9 INITIAL"):
        text = [*lines[:bad_at], bad, *lines[bad_at:]]
        log = write(tmp_path, "a.log", "\n".join(text) + "\n")
        fast, loop = _fast_and_loop(
            monkeypatch, lambda log=log: read_regex([log], ["^(?<DTIME>)(?<TYPE>)$"]), block
        )
        assert isinstance(loop[0], str) and fast == loop


def test_too_long_lines_are_listed_as_not_matching(tmp_path, monkeypatch):
    """Lines over MAX_LINE_CHARS are not matched; both paths list them the same way."""
    monkeypatch.setattr(regex_mod, "MAX_LINE_CHARS", 8)
    lines = ["1 a", "1 " + "x" * 20, "2 b", "3 " + "y" * 9, "x1 c"]
    for extra in ([], ["1 " + "z" * 30] * 4):
        log = write(tmp_path, "a.log", "\n".join(lines[:2] + extra + lines[2:]) + "\n")
        fast, loop = _fast_and_loop(
            monkeypatch, lambda log=log: read_regex([log], ["^(?<DTIME>)(?<TYPE>)$"])
        )
        assert isinstance(loop[0], str) and fast == loop
        assert ("characters: too long>" in loop[1]) == bool(extra)  # else the bad time
        fast, loop = _fast_and_loop(
            monkeypatch,
            lambda log=log: read_regex([log], ["^(?<DTIME>)(?<TYPE>)$"], ignore_nonmatching=True),
        )
        assert fast[0].equals(loop[0]) and fast[0]["state"].tolist() == ["a", "b"]


@pytest.mark.parametrize("regex", ["^(?<DTIME>)(?<TYPE>)$", "(?<TYPE>)", "^--$", "^-+$"])
@pytest.mark.parametrize(
    "line",
    [
        "1 a",
        "  1\ta  ",
        "1 a b",
        "",
        " ",
        "--",
        "-- ",
        "---",
        "1\x0ba",
        "1\x1ca",
        "1\x1fa",
        "1\xa0a",
        "1\u2028a",
        "1\x85a",
        "é a",
        "1 a\x00",
        "1\x0c a\r",
    ],
)
def test_line_matcher_shortcuts_answer_as_re2(regex, line):
    """The line loop's string comparison (literal lines) and whitespace split (regexes of
    empty groups) give RE2's answer, on lines with whitespace Java and Python disagree on
    (without the per-line test too, on lines that pass it)."""
    separator = "TYPE" not in regex
    r = compile_regex(regex, *(["-s", "(?<SEPCOUNT++>)(?<HIDE=>true)"] if separator else []))
    assert regex_mod._line_matcher(r)(line) == r.pattern.fullmatch(line)
    if regex_mod._plain_text(line):  # the block-wise test passes: no per-line test
        assert regex_mod._line_matcher(r, plain_text=True)(line) == r.pattern.fullmatch(line)


def test_line_matcher_shortcuts_are_taken():
    """The comparison above compares something: these regexes take the shortcuts."""
    for regex, extra in (("^(?<DTIME>)(?<TYPE>)$", []), ("^--$", ["-s", "(?<HIDE=>true)"])):
        r = compile_regex(regex, *extra)
        assert regex_mod._line_matcher(r) != r.pattern.fullmatch
