r"""User regexes on RE2: linear time in the line whatever the pattern, Java's meaning.

Synoptic's ``-r``/``-s`` regexes are Java regexes, run by a backtracking engine: a pattern
such as ``^(?<TYPE>(a+)+)$`` takes exponential time on a 35-character line there (and on
Python's ``re``).  statemine runs them on RE2 (google-re2 for the line loop, Arrow's
bundled RE2 for the vectorized reader), whose running time is linear in the line.

:func:`translate` takes a pattern in Python's syntax (Java's named groups already
rewritten) and returns it in RE2's syntax with Java's meaning, or refuses it (a one-line
:class:`~statemine.errors.UsageError` naming the option and why):

* back-references, look-ahead/behind, conditionals, atomic groups and possessive
  quantifiers need a backtracking engine: refused;
* a named group inside a repetition whose body can match the empty string
  (``(?<TYPE>.*)+``, ``(?:(?<A>a?))*``): Java keeps the last, empty, iteration (``""``),
  RE2 the last non-empty one; refused;
* a repetition whose body can match the empty string and may prefer to (a lazy
  quantifier or an empty alternative inside: ``(a??)+``): Java ends it at an empty
  iteration, RE2 may go on, so the groups around it can end elsewhere; refused (with
  these, the differential fuzz tests against Java and a backtracking engine find no
  other difference in capture or match, see tests/test_regex_engine.py);
* ``\s`` is Java's ``[ \t\n\x0B\f\r]`` (RE2's lacks the vertical tab), ``\S`` its
  complement; ``.`` excludes Java's line terminators ``\r``, ``\n``, U+0085, U+2028,
  U+2029 (RE2's ``.`` only ``\n``), except under ``(?s)``;
* ``[:``, ``[`` or ``&&`` inside a character class: Java reads a nested class, union or
  intersection there, RE2 a POSIX class or literals: refused (escape them);
* ``\S`` in a negated class (``[^\S,]``) has no RE2 spelling: refused;
* ``{,n}`` (a repetition for Python's parser, literal text for RE2, an error in Java):
  refused.

Differences that remain (documented in docs/synoptic-engine.md): ``(?i)`` folds case with
Unicode's simple folding in RE2 (Java: ASCII only unless ``(?u)``), so ``(?i)k`` also
matches the Kelvin sign; Java's ``\b`` treats non-ASCII letters and digits as word
characters, RE2's only ASCII ones.
"""

from __future__ import annotations

import re

# Why Python's private regex parser: the refusals below need the pattern's syntax tree
# (which named group sits inside which repetition, and whether that repetition's body can
# match the empty string; which construct needs backtracking). No supported API gives a
# tree: ``re.compile`` only says whether a pattern compiles, google-re2 exposes neither its
# parser nor its parse errors' positions, and RE2 accepts the empty-repetition groups that
# must be refused. ``re._parser`` (``sre_parse`` before 3.11; the package needs 3.11) is
# the parser ``re.compile`` itself runs; its tree is only read here, and a change in it
# fails tests/test_regex_engine.py, which checks every refusal. What it refuses that RE2
# would accept (``\pL``, ``\Q...\E``, ``\x{e9}``) stays refused, in words.
import re._parser as _sre_parse  # no typeshed stub: typed Any
import warnings
from collections.abc import Iterator
from typing import Any

import re2

from ..errors import UsageError

#: Java's (and ASCII Python's) ``\s`` spelled out for RE2, whose ``\s`` lacks ``\x0b``.
SPACE_CHARS = r"\t\n\x0b\f\r "
#: Java's ``.``: anything but a line terminator.
JAVA_DOT = r"[^\n\r\x{85}\x{2028}\x{2029}]"

_BACKTRACKING = {
    "GROUPREF": "back-references (\\k<name>, \\1)",
    "GROUPREF_IGNORE": "back-references (\\k<name>, \\1)",
    "GROUPREF_LOC_IGNORE": "back-references (\\k<name>, \\1)",
    "GROUPREF_UNI_IGNORE": "back-references (\\k<name>, \\1)",
    "GROUPREF_EXISTS": "conditionals ((?(group)yes|no))",
    "ASSERT": "look-ahead/look-behind ((?=...), (?<=...))",
    "ASSERT_NOT": "negative look-ahead/look-behind ((?!...), (?<!...))",
    "ATOMIC_GROUP": "atomic groups ((?>...))",
    "POSSESSIVE_REPEAT": "possessive quantifiers (*+, ++, ?+)",
}


def translate(pattern: str, where: str) -> str:
    r"""``pattern`` (Python syntax, named groups ``(?P<name>...)``) in RE2's syntax with
    Java's meaning; :class:`UsageError` starting with ``where`` (e.g. ``-r regex '...'``)
    when it does not compile or RE2 cannot give Java's result.

    >>> translate(r"^\s*(?P<TYPE>\S+)[\s,]$", "-r")
    '^[\\t\\n\\x0b\\f\\r ]*(?P<TYPE>[^\\t\\n\\x0b\\f\\r ]+)[\\t\\n\\x0b\\f\\r ,]$'
    >>> translate(r"(?P<TYPE>.*)+", "-r regex 'x'")
    Traceback (most recent call last):
    ...
    statemine.errors.UsageError: -r regex 'x': the group TYPE is inside a repetition ...
    """
    try:
        with warnings.catch_warnings():  # "possible nested set": refused below, in words
            warnings.simplefilter("ignore", FutureWarning)
            tree = _sre_parse.parse(pattern, re.ASCII)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        # ValueError: flags the parser cannot combine, e.g. (?u) with the ASCII meaning
        raise UsageError(f"{where} does not compile: {exc}") from None
    named = {num: name for name, num in tree.state.groupdict.items()}
    _refuse(tree, named, where)
    dotall = bool(tree.state.flags & re.DOTALL) or _has_scoped_dotall(tree)
    return _rewrite(pattern, where, dotall)


def _items(tree: _sre_parse.SubPattern) -> list[tuple[str, Any]]:
    """The (op name, argument) items of a parsed (sub)pattern."""
    return [(str(op), av) for op, av in tree]


def _children(op: str, av: Any) -> list:
    """The sub-patterns of one parsed item."""
    if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        return [av[2]]
    if op == "SUBPATTERN":
        return [av[3]]
    if op == "BRANCH":
        return list(av[1])
    if op in ("ASSERT", "ASSERT_NOT"):
        return [av[1]]
    if op == "ATOMIC_GROUP":
        return [av]
    if op == "GROUPREF_EXISTS":
        return [p for p in av[1:] if p is not None]
    return []


def _walk(tree: _sre_parse.SubPattern) -> Iterator[tuple[str, Any]]:
    """Every (op name, argument) item of ``tree`` and of its sub-patterns, each item
    before the items inside it."""
    for op, av in _items(tree):
        yield op, av
        for child in _children(op, av):
            yield from _walk(child)


def _named_groups_in(tree: _sre_parse.SubPattern, named: dict[int, str]) -> list[str]:
    """Names of the named groups anywhere inside ``tree``."""
    return [named[av[0]] for op, av in _walk(tree) if op == "SUBPATTERN" and av[0] in named]


def _refuse(tree: _sre_parse.SubPattern, named: dict[int, str], where: str) -> None:
    """Raise :class:`UsageError` for the first construct RE2 cannot run with Java's result."""
    for op, av in _items(tree):
        if op in _BACKTRACKING:
            raise UsageError(
                f"{where}: {_BACKTRACKING[op]} need a backtracking engine; "
                "statemine runs regexes on RE2 (linear time: no hang on any "
                "line), which has none"
            )
        if op in ("MAX_REPEAT", "MIN_REPEAT") and av[1] > 1 and av[2].getwidth()[0] == 0:
            inside = _named_groups_in(av[2], named)
            if inside:
                raise UsageError(
                    f"{where}: the group {inside[0]} is inside a repetition whose body can "
                    "match the empty string (as in (?<TYPE>.*)+); Java and RE2 capture "
                    "different iterations there, so write it without that repetition"
                )
            if _prefers_empty(av[2]):
                raise UsageError(
                    f"{where}: a repetition whose body can match the empty string and may "
                    "prefer to (a lazy quantifier or an empty alternative inside, as in "
                    "(a??)+): Java ends it at an empty iteration and RE2 may go on, so the "
                    "groups around it can capture differently; write its body so that it "
                    "takes at least one character"
                )
        for child in _children(op, av):
            _refuse(child, named, where)


def _prefers_empty(tree: _sre_parse.SubPattern) -> bool:
    r"""Does ``tree`` hold a lazy quantifier, or an alternation one of whose branches can
    match the empty string?  Then a repetition of it may prefer an empty iteration where
    a greedy one would not, and there Java's backtracking ends the repetition while RE2
    can go on (tests/test_regex_engine.py's fuzzers found ``^(\w)(?<TYPE>([^a]??)+)((\S)?)$``
    on ``a b .``: Java ``TYPE`` = ``" b "``, RE2 ``" b ."``; google/re2 issue 245 and the
    ``(|a)*`` fix of 2021 discuss such preferences)."""
    return any(
        op == "MIN_REPEAT" or (op == "BRANCH" and any(b.getwidth()[0] == 0 for b in av[1]))
        for op, av in _walk(tree)
    )


def _has_scoped_dotall(tree: _sre_parse.SubPattern) -> bool:
    """Does a ``(?s:...)`` group appear anywhere?"""
    return any(op == "SUBPATTERN" and av[1] & re.DOTALL for op, av in _walk(tree))


def _rewrite(pattern: str, where: str, dotall: bool) -> str:
    """Spell out ``\\s``, ``\\S`` and ``.`` for RE2 (see the module docstring); refuse
    what reads differently inside a character class."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            e = pattern[i + 1]
            out.append(
                f"[{SPACE_CHARS}]"
                if e == "s"
                else f"[^{SPACE_CHARS}]"
                if e == "S"
                else pattern[i : i + 2]
            )
            i += 2
        elif c == "[":
            text, i = _rewrite_class(pattern, i, where)
            out.append(text)
        elif pattern.startswith("{,", i):
            raise UsageError(
                f"{where}: '{{,n}}' is a repetition in Python but literal text in "
                "RE2 and an error in Java; write {0,n}"
            )
        elif c == "." and not dotall:
            out.append(JAVA_DOT)
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _rewrite_class(pattern: str, start: int, where: str) -> tuple[str, int]:
    """The character class opening at ``start`` rewritten for RE2, and the index after it."""
    negated = pattern.startswith("[^", start)
    i = start + (2 if negated else 1)
    first = i
    body: list[str] = []
    not_space = False
    while i < len(pattern):
        c = pattern[i]
        if c == "]" and i > first:
            break
        if c == "\\" and i + 1 < len(pattern):
            e = pattern[i + 1]
            if e == "s":
                body.append(SPACE_CHARS)
            elif e == "S":
                not_space = True
            else:
                body.append(pattern[i : i + 2])
            i += 2
            continue
        if c == "[" or pattern.startswith("&&", i):
            raise UsageError(
                f"{where}: {'&&' if c == '&' else c!r} inside a character "
                "class is a nested class or intersection in Java and not in "
                "RE2; escape it (\\[, \\&)"
            )
        body.append(c)
        i += 1
    end = i + 1
    if not not_space:
        return ("[^" if negated else "[") + "".join(body) + "]", end
    if negated:
        raise UsageError(
            f"{where}: \\S inside a negated class ([^...\\S...]) has no RE2 "
            "spelling; list the characters instead"
        )
    rest = "".join(body)
    return (f"(?:[{rest}]|[^{SPACE_CHARS}])" if rest else f"[^{SPACE_CHARS}]"), end


class Re2Line:
    """A translated regex compiled on RE2 (google-re2), matched against whole lines.

    ``pattern`` is the RE2 text, ``groupindex`` maps group names to numbers.
    :class:`UsageError` (starting with ``where``) when RE2 refuses the pattern.
    """

    def __init__(self, pattern: str, where: str = "regex") -> None:
        options = re2.Options()
        options.log_errors = False
        try:
            compiled = re2.compile(pattern, options)
        except re2.error as exc:
            reason = (
                exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
            )
            raise UsageError(f"{where} cannot run on RE2: {reason}") from None
        self.pattern = pattern
        self.groupindex: dict[str, int] = dict(compiled.groupindex)
        self._groups = list(self.groupindex.items())
        # google-re2's matcher without its Python match object (3x faster per line):
        # byte spans of every group, (-1, -1) for a group that did not take part.
        self._match = compiled._regexp.Match
        self._anchor = re2._re2.RE2.Anchor.ANCHOR_BOTH

    def fullmatch(self, line: str) -> dict[str, str | None] | None:
        """The named groups' values when the regex matches the whole ``line`` (None for a
        group that did not take part), else None."""
        data = line.encode("utf-8", "surrogatepass")
        spans = self._match(self._anchor, data, 0, len(data))
        if spans[0][0] < 0:
            return None
        return {
            name: data[spans[k][0] : spans[k][1]].decode("utf-8", "surrogatepass")
            if spans[k][0] >= 0
            else None
            for name, k in self._groups
        }
