"""User regexes run on RE2 with Java's meaning (statemine.parse.re2line), and the regex
reader's two paths (Arrow's vectorized RE2, the line loop on google-re2) agree.

Differential fuzz tests: random patterns from a small grammar over random lines, compared

* between the vectorized reader and the line loop (whole ``read_regex`` outcomes);
* against a backtracking engine: Python's ``re`` (fast tier; it captures as Java does for
  this grammar) and Java's own ``java.util.regex`` when a JDK is installed (slow tier).

A longer run: ``STATEMINE_FUZZ_EXAMPLES=20000 python3 -m pytest tests/test_regex_engine.py``.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from test_synoptic_regex import _fast_and_loop

import statemine.parse.regex as regex_mod
from statemine.errors import InputError, UsageError
from statemine.parse.regex import compile_regex, read_regex

EXAMPLES = int(os.environ.get("STATEMINE_FUZZ_EXAMPLES", "50"))
NAMES = ("TYPE", "A", "B")
_ATOMS = [
    "a",
    "b",
    " ",
    "1",
    ".",
    r"\s",
    r"\S",
    r"\w",
    r"\d",
    "[ab]",
    "[^a]",
    r"[\s,]",
    r"[\S]",
    "[a-c1]",
    r"\.",
    "é",
]
_QUANTIFIERS = ["*", "+", "?", "*?", "+?", "??", "{2}", "{0,2}", "{1,3}"]
#: Characters of the lines: Java's ``\s`` has the vertical tab, RE2's not; Java's ``.``
#: excludes U+0085/U+2028 (line terminators), RE2's not.
_LINE_CHARS = ["a", "b", " ", "1", ",", ".", "\t", "\x0b", "\x0c", "é", "\x85", "\u2028"]


def _pattern_body(names: list[str]):
    """A strategy for regex text over :data:`_ATOMS` with groups, alternation and
    quantifiers; named groups take their names from ``names`` (each used once)."""
    atoms = st.sampled_from(_ATOMS)

    def extend(inner):
        return st.one_of(
            st.tuples(inner, inner).map("".join),
            st.tuples(inner, inner).map("|".join),
            inner.map(lambda x: f"(?:{x})"),
            inner.map(lambda x: f"({x})"),
            st.tuples(inner, st.sampled_from(_QUANTIFIERS)).map(lambda t: f"(?:{t[0]}){t[1]}"),
            st.tuples(inner, st.sampled_from(_QUANTIFIERS)).map(lambda t: f"({t[0]}){t[1]}"),
            st.tuples(inner, st.sampled_from(_QUANTIFIERS)).map("".join),
            inner.map(lambda x: f"(?<{names.pop()}>{x})" if names else x),
        )

    return st.recursive(atoms, extend, max_leaves=6)


@st.composite
def patterns(draw) -> str:
    """A Synoptic line regex with a TYPE group (and maybe groups A and B)."""
    names = ["B", "A"][: draw(st.integers(0, 2))]
    body = draw(_pattern_body(names))
    head, tail = draw(_pattern_body([])), draw(_pattern_body([]))
    where = draw(st.integers(0, 2))
    if where == 0:
        return f"^(?<TYPE>{body})$"
    if where == 1:
        return f"^{head}(?<TYPE>{body}){tail}$"
    return f"^(?:{head}|(?<TYPE>{body}))$"


lines = st.lists(st.sampled_from(_LINE_CHARS), max_size=6).map("".join)


def _compiled(pattern: str):
    """The reader's compiled regex, or None when statemine refuses the pattern."""
    try:
        return compile_regex(pattern)
    except UsageError:
        return None


def _python_groups(pattern: str, line: str) -> dict | None:
    """Python's ``re`` (backtracking, Java's capture rules) on a Java pattern."""
    m = re.fullmatch(regex_mod._java_to_python(pattern), line, re.ASCII)
    return None if m is None else {k: v for k, v in m.groupdict().items()}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(pattern=patterns(), texts=st.lists(lines, min_size=1, max_size=8))
def test_re2_captures_what_a_backtracking_engine_captures(pattern, texts):
    """Match and every named group as Python's ``re`` gives them (the lines avoid the
    line terminators, where Java's ``.`` and Python's differ; the Java test covers them)."""
    r = _compiled(pattern)
    if r is None:
        return
    for text in texts:
        text = text.replace("\x85", "").replace("\u2028", "")
        assert r.pattern.fullmatch(text) == _python_groups(pattern, text), (pattern, text)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    pattern=patterns(),
    texts=st.lists(lines, min_size=1, max_size=12),
    ignore=st.booleans(),
    block=st.sampled_from([1 << 21, 7]),
)
def test_vectorized_reader_and_line_loop_agree_on_random_patterns(
    tmp_path_factory, pattern, texts, ignore, block
):
    if _compiled(pattern) is None:
        return
    path = tmp_path_factory.mktemp("log") / "a.log"
    path.write_text("".join(t + "\n" for t in texts), encoding="utf-8")

    def read():
        return read_regex([path], [pattern], ignore_nonmatching=ignore)

    fast, loop = _fast_and_loop(pytest.MonkeyPatch, read, block)
    if isinstance(loop[0], str):
        assert fast == loop
    else:
        assert not isinstance(fast[0], str), fast
        assert fast[0].equals(loop[0]) and fast[1].equals(loop[1])


def test_the_issue_patterns_give_one_answer_on_both_paths(tmp_path):
    """``^(?<TYPE>.*)+$`` gave "1 Probe" on one path and "" on the other: now refused on
    both (Java captures the empty last iteration, RE2 cannot)."""
    log = tmp_path / "a.log"
    log.write_text("1 Probe\n")
    for fast in (True, False):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(regex_mod, "SMALL_INPUT_BYTES", -1)
            if not fast:
                m.setattr(regex_mod, "_scan_vectorized", lambda *a, **k: None)
            with pytest.raises(
                UsageError,
                match=r"^-r regex .*the group TYPE is inside a "
                r"repetition whose body can match the empty",
            ):
                read_regex([log], [r"^(?<TYPE>.*)+$"])


def test_catastrophic_pattern_runs_in_linear_time(tmp_path):
    """``^(?<TYPE>(a+)+)$`` on 35 a's and a b: exponential for a backtracking engine."""
    log = tmp_path / "a.log"
    log.write_text(("a" * 34 + "b\n") * 200 + "a" * 35 + "\n")
    for fast in (True, False):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(regex_mod, "SMALL_INPUT_BYTES", -1)
            if not fast:
                m.setattr(regex_mod, "_scan_vectorized", lambda *a, **k: None)
            t0 = time.process_time()
            ts = read_regex([log], [r"^(?<TYPE>(a+)+)$"], ignore_nonmatching=True)
            assert time.process_time() - t0 < 5  # Python's re: not done in hours
            assert ts.events["state"].tolist() == ["a" * 35]
            with pytest.raises(InputError, match=r"a\.log:1: lines match none"):
                read_regex([log], [r"^(?<TYPE>(a+)+)$"])


@pytest.mark.parametrize(
    "option,regex,reason",
    [
        ("-r", r"^(?<TYPE>a)\k<TYPE>$", r"back-references .* need a backtracking engine"),
        ("-r", r"^(?<TYPE>a)\1$", r"back-references"),
        ("-r", r"^(?<TYPE>(?=a)\w)$", r"look-ahead"),
        ("-r", r"^(?<TYPE>\w)(?<!b)$", r"negative look-ahead/look-behind"),
        ("-r", r"^(?<TYPE>(?>a|ab))$", r"atomic groups"),
        ("-r", r"^(?<TYPE>a*+)$", r"possessive"),
        ("-r", r"^(?<TYPE>a?)*$", r"group TYPE is inside a repetition"),
        ("-r", r"^(?:(?<A>b*)|a)+(?<TYPE>x)$", r"group A is inside a repetition"),
        # found by test_re2_captures_what_java_captures: Java TYPE=" b " on "a b .", RE2 " b ."
        ("-r", r"^(\w)(?<TYPE>([^a]??)+)((\S)?)$", r"may prefer to .* lazy quantifier"),
        ("-r", r"^(?<TYPE>x)(|a)+$", r"empty alternative"),
        ("-r", r"^(?<TYPE>x)(?:b*?){1,3}$", r"may prefer to"),
        ("-r", r"^(?<TYPE>[[:alpha:]]+)$", r"'\[' inside a character class"),
        ("-r", r"^(?<TYPE>[a-z&&[^b]])$", r"inside a character class"),
        ("-r", r"^(?<TYPE>[^\S,])$", r"negated class"),
        ("-r", r"^(?<TYPE>\Z)$", r"cannot run on RE2: invalid escape"),
        ("-r", r"^(?<TYPE>a{,3})$", r"write \{0,n\}"),
        ("-r", r"^(?<TYPE>a{1000}){1000}$", r"cannot run on RE2"),
        ("-s", r"^(?=-)--$", r"^-s regex '\^\(\?=-\)--\$': look-ahead"),
    ],
)
def test_refusals_name_the_option_and_why(tmp_path, option, regex, reason):
    log = tmp_path / "a.log"
    log.write_text("a\n")
    args = ([r"^(?<TYPE>.*)$"], regex) if option == "-s" else ([regex], None)
    with pytest.raises(UsageError, match=reason) as err:
        read_regex([log], *args)
    assert str(err.value).startswith(f"{option} regex ")
    assert "\n" not in str(err.value)


def test_allowed_repetitions_of_groups():
    """A repeated group whose body cannot be empty, or an unnamed group, is fine."""
    assert compile_regex(r"^(?<TYPE>(?:a|b)+)(x*)+$").pattern.fullmatch("abx") == {"TYPE": "ab"}
    assert compile_regex(r"^(?:(?<TYPE>a|b))+$").pattern.fullmatch("ab") == {"TYPE": "b"}


@pytest.mark.parametrize("body", [r"a*", r"[^a]?", r"\S?", r"(?:a|b)?", r"(?:ab?)*"])
@pytest.mark.parametrize("quantifier", ["+", "*", "{1,3}", "{2}"])
def test_greedy_bodies_that_can_be_empty_capture_as_java(body, quantifier):
    """Repetitions of greedy bodies that can match the empty string are accepted, and
    the groups around them capture as a backtracking engine's (Python's ``re``: Java's
    rules here) on every line of up to 4 of a, b, space, '.' (refusing the others
    suffices: on such templates 55 of 800 patterns whose body holds a lazy quantifier or
    an alternative that can be empty differed, none of 240 others)."""
    chars = ["a", "b", " ", "."]
    texts = ["".join(t) for n in range(5) for t in itertools.product(chars, repeat=n)]
    for head, tail in [("", r"((\S)?)"), (r"(\w)", r"(a*)"), (r"(a?)", r"([^a]*)")]:
        pattern = f"^{head}(?<TYPE>({body}){quantifier}){tail}$"
        r = compile_regex(pattern)
        for text in texts:
            assert r.pattern.fullmatch(text) == _python_groups(pattern, text), (pattern, text)


@pytest.mark.parametrize(
    "regex,line,expected",
    [
        (r"^(?<TYPE>\s)$", "\x0b", "\x0b"),  # Java's \s has the vertical tab
        (r"^(?<TYPE>[\s])$", "\x0b", "\x0b"),
        (r"^(?<TYPE>\S)$", "\x0b", None),
        (r"^(?<TYPE>[\S,])$", ",", ","),
        (r"^(?<TYPE>[\S,])$", "\x0b", None),
        (r"^(?<TYPE>.)$", "\u2028", None),  # Java's . stops at line terminators
        (r"^(?<TYPE>.)$", "\x85", None),
        (r"^(?<TYPE>(?s:.))$", "\u2028", "\u2028"),
        (r"^(?<TYPE>.)$", "é", "é"),
    ],
)
def test_java_classes(regex, line, expected):
    m = compile_regex(regex).pattern.fullmatch(line)
    assert (m and m["TYPE"]) == expected


@pytest.mark.parametrize(
    "mapping,ok",
    [
        (r"\k<nope>", False),
        (r"\k<FILE>", True),
        (r"\k<host>", True),
        (r"\k<TYPE>-\k<SEPCOUNT>", True),
        (r"\k<c>", True),
        (r"\k<SEPCOUNT>", False),
    ],
)
def test_mapping_names_must_exist(tmp_path, mapping, ok):
    """-m '\\k<nope>' silently put every event in one trace; now refused."""
    log = tmp_path / "a.log"
    log.write_text("h1 a\n--\nh2 b\n")
    regexes = [r"^(?<host>\w+) (?<TYPE>\w+)(?<c++>)$"]
    sep = "^--$" if "SEPCOUNT" in mapping and ok else None
    if ok:
        read_regex([log], regexes, sep, mapping, ignore_nonmatching=True)
    else:
        with pytest.raises(UsageError, match=r"^-m '.*': \\k<(nope|SEPCOUNT)> names no group"):
            read_regex([log], regexes, sep, mapping, ignore_nonmatching=True)


def test_cli_refuses_unknown_mapping_group(tmp_path):
    log = tmp_path / "a.log"
    log.write_text("1 a\n")
    for cmd in (
        ["infer", "--out", str(tmp_path / "o")],
        ["infer", "--engine", "synoptic", "-o", str(tmp_path / "m")],
    ):
        res = subprocess.run(
            [
                sys.executable,
                "-m",
                "statemine",
                *cmd,
                "-r",
                r"^(?<DTIME>)(?<TYPE>)$",
                "-m",
                r"\k<nope>",
                str(log),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert res.returncode == 2, res.stderr
        assert res.stderr.strip().splitlines() == [
            r"statemine: error: -m '\k<nope>': \k<nope> names no group, constant or "
            r"counter of the regexes (-r, -s), nor FILE"
        ]
        assert not (tmp_path / "o").exists()


# -- Java itself as the oracle --------------------------------------------------------

_JAVA = r"""
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.regex.*;

// For each "pattern hex, line hex..." input line: per line, "-" (no match) or the
// groups TYPE, A, B as hex ("~" when the group did not take part or does not exist).
public class Oracle {
  static String unhex(String h) {
    byte[] b = new byte[h.length() / 2];
    for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
    return new String(b, StandardCharsets.UTF_8);
  }
  static String hex(String s) {
    StringBuilder sb = new StringBuilder();
    for (byte x : s.getBytes(StandardCharsets.UTF_8)) sb.append(String.format("%02x", x));
    return sb.toString();
  }
  public static void main(String[] args) throws IOException {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String row;
    while ((row = in.readLine()) != null) {
      String[] f = row.split(" ", -1);
      Pattern p = Pattern.compile(unhex(f[0]));
      StringBuilder out = new StringBuilder();
      for (int k = 1; k < f.length; k++) {
        Matcher m = p.matcher(unhex(f[k]));
        if (!m.matches()) { out.append(" -"); continue; }
        out.append(" ");
        for (String g : new String[] {"TYPE", "A", "B"}) {
          String v = null;
          try { v = m.group(g); } catch (IllegalArgumentException e) { v = null; }
          out.append(v == null ? "~" : hex(v)).append(",");
        }
      }
      System.out.println(out.toString().trim());
    }
  }
}
"""


@pytest.fixture(scope="module")
def java_oracle(tmp_path_factory):
    if not (shutil.which("javac") and shutil.which("java")):
        pytest.skip("no JDK (javac, java) on this machine: the Java oracle cannot run")
    work = tmp_path_factory.mktemp("java")
    (work / "Oracle.java").write_text(_JAVA)
    subprocess.run(["javac", "Oracle.java"], cwd=work, check=True, capture_output=True)
    return work


def _java_results(work, cases: list[tuple[str, list[str]]]) -> list[list]:
    text = "".join(" ".join(s.encode().hex() for s in (p, *ls)) + "\n" for p, ls in cases)
    res = subprocess.run(
        ["java", "-cp", str(work), "Oracle"],
        input=text,
        text=True,
        capture_output=True,
        check=True,
        timeout=300,
    )
    out = []
    for row in res.stdout.splitlines():
        per_line: list[dict[str, str | None] | None] = []
        for cell in row.split(" ") if row else []:
            if cell == "-":
                per_line.append(None)
                continue
            vals = cell.split(",")[: len(NAMES)]
            per_line.append(
                {g: None if v == "~" else bytes.fromhex(v).decode() for g, v in zip(NAMES, vals)}
            )
        out.append(per_line)
    return out


@pytest.mark.slow
@settings(
    max_examples=max(4, EXAMPLES // 50),
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)  # no shrinking: a JVM per attempt
@given(
    cases=st.lists(
        st.tuples(patterns(), st.lists(lines, min_size=1, max_size=6)), min_size=100, max_size=200
    )
)
def test_re2_captures_what_java_captures(java_oracle, cases):
    """Every pattern statemine accepts matches and captures as ``java.util.regex`` does
    (one JVM per batch of patterns)."""
    cases = [(p, ls) for p, ls in cases if _compiled(p) is not None]
    if not cases:
        return
    java = _java_results(java_oracle, cases)
    for (pattern, texts), expected in zip(cases, java):
        r = compile_regex(pattern)
        for text, exp in zip(texts, expected):
            got = r.pattern.fullmatch(text)
            if got is not None:
                got = {g: got.get(g) for g in NAMES}
            assert got == exp, (pattern, text)
