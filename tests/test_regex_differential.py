"""The regex reader's vectorized scan is an optimization of its line loop, nothing more.

Differential tests (issue 12): whole ``read_regex`` outcomes (events, traces, or the error
message) with the vectorized scan allowed and with it declined (the line loop, the
reference), on hypothesis-generated logs and regex configurations over the Synoptic
features: named groups, TYPE (given, assigned or absent), the time kinds TIME / LTIME /
DTIME / FTIME (VTIME and DATETIME are refused the same way on both), ``-s`` separators,
``-m`` partitions (groups, FILE, SEPCOUNT, constants, counters), ``-i``, hidden lines and
several files; and every regex case of tests/ and ../shared/synoptic-oracle (in
test_synoptic_regex and test_regex_engine, which use :func:`both_scans`).

A longer run: ``STATEMINE_FUZZ_EXAMPLES=5000 python3 -m pytest tests/test_regex_differential.py``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import statemine.parse.regex as regex_mod
from statemine.errors import InputError, UsageError
from statemine.parse.regex import read_regex

EXAMPLES = int(os.environ.get("STATEMINE_FUZZ_EXAMPLES", "150"))


def outcome(read):
    """What a read gives: (events, traces) frames, or (error class, message)."""
    try:
        ts = read()
    except (InputError, UsageError) as exc:
        return type(exc).__name__, str(exc)
    return ts.events.reset_index(drop=True), ts.traces.reset_index(drop=True)


def both_scans(read, **patches):
    """``read()``'s outcome with Arrow and the vectorized scan allowed, and with the line
    loop only (the vectorized scan declines every block); ``patches`` set module
    constants.  The line loop without Arrow (numpy strings: what small inputs get) must
    give the line loop's outcome too (checked here)."""
    with pytest.MonkeyPatch.context() as m:
        for name, value in patches.items():
            m.setattr(regex_mod, name, value)
        m.setattr(regex_mod, "SMALL_INPUT_BYTES", -1)
        fast = outcome(read)
    with pytest.MonkeyPatch.context() as m:
        for name, value in patches.items():
            m.setattr(regex_mod, name, value)
        m.setattr(regex_mod, "SMALL_INPUT_BYTES", -1)
        m.setattr(regex_mod, "_scan_vectorized", lambda *a, **k: None)
        loop = outcome(read)
    with pytest.MonkeyPatch.context() as m:
        for name, value in patches.items():
            m.setattr(regex_mod, name, value)
        m.setattr(regex_mod, "SMALL_INPUT_BYTES", 1 << 62)
        plain = outcome(read)
    assert_same(plain, loop)
    return fast, loop


def assert_same(fast, loop) -> None:
    """Both outcomes are the same error, or equal frames."""
    if isinstance(loop[0], str):
        assert fast == loop
    else:
        assert not isinstance(fast[0], str), fast
        assert fast[0].equals(loop[0]), (fast[0], loop[0])
        assert fast[1].equals(loop[1]), (fast[1], loop[1])


_TIME_KINDS = ["TIME", "LTIME", "DTIME", "FTIME"]
_TIMES = ["1", "2", "10", "3.25", "0", "77", "007", "-3", "+4", "1e3", ".5", "5.", "x", "-0"]
_TYPES = ["a", "b", "SlowStart", "x-y", "é", "INITIAL", ""]
_SEPARATORS = [None, "^--$", "--", "^-+$", "^#(?<x>.*)$"]


@st.composite
def configs(draw):
    """(regexes, separator, mapping): one to three line regexes over the features."""
    kind = draw(st.sampled_from([None, *_TIME_KINDS]))
    t = f"(?<{kind}>)" if kind else ""
    tv = f"(?<{kind}>\\S*)" if kind else ""
    bodies = [
        f"^{t}(?<TYPE>)$",
        f"^{t}(?<TYPE>)(?<host>)$",
        f"^{tv} ?(?<TYPE>\\w*)(?: (?<host>h\\d))?$",
        f"{t}(?<TYPE>.+)",
        f"^{t}(?<TYPE>[a-z]+)(?<n++>)$",
        f"^{t}(?<++n>)(?<TYPE>)$",
        f"^{t}(?<x>[a-z]+)(?<TYPE=>got \\k<x>)$",
        f"^{t}(?<TYPE>\\S+) (?<host>\\S*)$",
        f"^{t}(?<TYPE>)(?<host=>h9)$",
        "^#(?<HIDE=>true).*$",
        "^(?<TYPE>)$",
        "^(?<n=>5)(?<TYPE>\\w+)!$",
    ]
    regexes = draw(st.lists(st.sampled_from(bodies), min_size=1, max_size=3, unique=True))
    separator = draw(st.sampled_from(_SEPARATORS))
    mapping = draw(
        st.sampled_from(
            [None, "\\k<host>", "\\k<FILE>", "\\k<host>-\\k<FILE>", "\\k<n>", "\\k<TYPE>"]
        )
    )
    return regexes, separator, mapping


@st.composite
def log_lines(draw):
    kind = draw(st.sampled_from(["event"] * 10 + ["sep"] * 2 + ["other"] * 2))
    if kind == "sep":
        return draw(st.sampled_from(["--", "---", "#x", " --"]))
    if kind == "other":
        return draw(st.sampled_from(["", "# comment", "a b c d", "h1", "1 a h1", "ab!"]))
    parts = [draw(st.sampled_from(_TIMES)), draw(st.sampled_from(_TYPES))]
    if draw(st.integers(0, 9)) == 0:
        parts.reverse()
    if draw(st.integers(0, 2)) == 0:
        parts.append(draw(st.sampled_from(["h1", "h2", ""])))
    space = draw(st.sampled_from(["", " ", "\t"]))
    return space + draw(st.sampled_from([" ", "  ", "\t"])).join(parts)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    files=st.lists(st.lists(log_lines(), min_size=0, max_size=14), min_size=1, max_size=3),
    config=configs(),
    ignore=st.booleans(),
    block=st.sampled_from([1 << 21, 1, 17]),
    workers=st.sampled_from([1, 2]),
    longest=st.sampled_from([1 << 20, 9]),
)
def test_vectorized_scan_and_line_loop_agree(files, config, ignore, block, workers, longest):
    regexes, separator, mapping = config
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for k, lines in enumerate(files):
            path = Path(tmp) / f"log{k}.txt"
            path.write_text("".join(line + "\n" for line in lines))
            paths.append(path)
        fast, loop = both_scans(
            lambda: read_regex(paths, regexes, separator, mapping, ignore),
            BLOCK_CHARS=block,
            WORKERS=workers,
            MAX_LINE_CHARS=longest,
        )
    assert_same(fast, loop)


@pytest.mark.parametrize("kind", ["VTIME", "DATETIME"])
def test_unsupported_time_kinds_are_refused_on_both(tmp_path, kind):
    log = tmp_path / "a.log"
    log.write_text("1 a\n")
    fast, loop = both_scans(lambda: read_regex([log], [f"^(?<{kind}>)(?<TYPE>)$"]))
    assert fast == loop and fast[0] == "UsageError" and "not supported" in fast[1]


def test_the_vectorized_scan_runs_on_the_common_regexes(tmp_path, monkeypatch):
    """The comparison compares something: plain regexes and a separator take the
    vectorized scan (and it does not decline them)."""
    log = tmp_path / "a.log"
    log.write_text("1 a\n--\n2 b\n")
    monkeypatch.setattr(regex_mod, "SMALL_INPUT_BYTES", -1)
    calls = []
    real = regex_mod._scan_vectorized
    monkeypatch.setattr(
        regex_mod, "_scan_vectorized", lambda *a, **k: calls.append(real(*a, **k)) or calls[-1]
    )
    assert len(read_regex([log], ["^(?<DTIME>)(?<TYPE>)$"], "^--$").events) == 2
    assert calls and all(c is not None for c in calls)


def test_a_group_named_hide_is_refused(tmp_path):
    """HIDE is only assigned, never captured (a capture made the line loop hide a line
    under one regex and not under another)."""
    log = tmp_path / "a.log"
    log.write_text("1 a\n")
    fast, loop = both_scans(lambda: read_regex([log], ["^(?<HIDE>\\d) (?<TYPE>a)$"]))
    assert fast == loop and fast[0] == "UsageError" and "HIDE" in fast[1]
