"""Showing untrusted strings (state names, trace ids, labels, file names) safely.

Logs are untrusted: a state name may be empty, hold NUL, escape sequences or bidi
controls, rich markup (``[/bold]``, ``[link=...]``), a spreadsheet formula, or be 200 KB
long. The output formats meant for people (terminal tables, DOT/SVG labels, HTML,
one-line messages) show a *display form*: every non-printable character written as a
Python-style escape (``\\x1b``, ``\\u202e``; a backslash as ``\\\\``, so two different
names never look alike), shortened past a length limit. Data files (model.json, and
CSV apart from the formula guard below) keep names whole and unchanged.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from rich.text import Text

#: Longest display form of a name (characters) in tables and diagrams, before the suffix
#: saying how long the name really is.
DISPLAY_CHARS = 80
#: The same in terminal tables (characters), so a table fits a terminal.
TERMINAL_CHARS = 40
#: How an empty name is shown (the data files hold the empty string).
EMPTY = "(empty)"
#: First characters that make a spreadsheet treat a CSV cell as a formula (OWASP,
#: "CSV Injection": =, +, -, @, tab, carriage return). A cell is guarded when it starts
#: with one of them or when its first character after any whitespace and control
#: characters (:func:`_ignorable`) is one of :data:`FORMULA_TRIGGERS`.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: The formula characters proper, and their fullwidth forms (which some spreadsheets
#: read as the ASCII ones).
FORMULA_TRIGGERS = frozenset("=+-@\uff1d\uff0b\uff0d\uff20")
#: Characters that force a CSV cell into double quotes: the separator, the quote, and
#: every character some reader takes for the end of a line (the csv module's reader: CR
#: and LF; ``str.splitlines``: also VT, FF, FS, GS, RS, NEL, LS, PS). The csv module's
#: writer quotes CR only when it is in the line terminator, so statemine writes its own.
CSV_QUOTED = frozenset(',"\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029')


def name_text(name: str) -> str:
    """A file name as text that any writer takes (Arrow, Parquet, JSON: UTF-8): bytes of a
    POSIX name that are not UTF-8 (``os.fsdecode`` keeps them as lone surrogates) written
    ``\\xNN``; every other name unchanged.

    >>> name_text("run-1.log"), name_text("run-\\udcff.log")
    ('run-1.log', 'run-\\\\xff.log')
    """
    if name.isascii():  # most names: nothing to check
        return name
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return name


def name_texts(names: Sequence[str]) -> list[str]:
    """:func:`name_text` of each of ``names``: ``names`` itself (a list) when all are ASCII
    (one check of them joined, not one call a name: a folder may hold 1e5 files).

    >>> name_texts(["a.log", "b-\\udcff.log"])
    ['a.log', 'b-\\\\xff.log']
    """
    if "".join(names).isascii():
        return list(names)
    return [name_text(n) for n in names]


def visible(text: object, *, backslash: bool = True) -> str:
    """``text`` with every non-printable character (controls, NUL, bidi overrides, line
    separators) and (with ``backslash``) the backslash written as an escape; printable
    text is unchanged.

    >>> visible("Recovery"), visible("a\\x1b[31mb"), visible("x\\\\y"), visible("\\u202eevil")
    ('Recovery', 'a\\\\x1b[31mb', 'x\\\\\\\\y', '\\\\u202eevil')
    """
    text = str(text)
    if text.isprintable() and not (backslash and "\\" in text):
        return text
    return "".join(_escape_char(c, backslash) for c in text)


def _escape_char(c: str, backslash: bool) -> str:
    if c == "\\" and backslash:
        return "\\\\"
    if c.isprintable():
        return c
    code = ord(c)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def display_name(text: object, limit: int = DISPLAY_CHARS) -> str:
    """The display form of a name: :func:`visible`, ``(empty)`` for an empty name, and
    for a name longer than ``limit`` characters its start and end around an ellipsis,
    followed by its length.

    >>> display_name(""), display_name("SlowStart"), display_name("x" * 1000, 10)
    ('(empty)', 'SlowStart', 'xxxxx…xxxxx (1000 chars)')
    """
    text = str(text)
    if not text:
        return EMPTY
    if len(text) <= limit:
        return visible(text)
    half = max(1, limit // 2)
    return f"{visible(text[:half])}…{visible(text[-half:])} ({len(text)} chars)"


def html_text(text: object, limit: int | None = None) -> str:
    """HTML-escaped display form (quotes too), for HTML pages and Graphviz HTML-like
    labels; ``limit`` shortens like :func:`display_name` (None: whole, only made visible).

    >>> html_text('<b>"x"</b>\\x00')
    '&lt;b&gt;&quot;x&quot;&lt;/b&gt;\\\\x00'
    """
    shown = visible(text) if limit is None else display_name(text, limit)
    return html.escape(shown, quote=True)


def markup_text(text: object, limit: int | None = None) -> str:
    """Display form escaped for rich markup (``[`` cannot open a tag), for strings that
    are printed through rich mixed with statemine's own markup.

    >>> markup_text("[/bold]Recovery")
    '\\\\[/bold]Recovery'
    """
    from rich.markup import escape

    return escape(visible(text) if limit is None else display_name(text, limit))


def rich_cell(text: object, limit: int | None = TERMINAL_CHARS) -> Text:
    """A rich ``Text`` of the display form: rendered literally (no markup, no emoji codes)."""
    from rich.text import Text

    return Text(display_name(text, limit) if limit is not None else visible(text))


def _ignorable(c: str) -> bool:
    """Whitespace or a character that is not printed (controls, format characters such
    as zero-width spaces): what a reader may skip before a formula character."""
    return c.isspace() or not c.isprintable()


def formula_like(text: str) -> bool:
    """True when a spreadsheet could read ``text`` as a formula: it starts with one of
    :data:`FORMULA_STARTS`, or its first character after whitespace and control
    characters is one of :data:`FORMULA_TRIGGERS`.

    >>> formula_like("\\r=cmd"), formula_like(" \\x00@x"), formula_like("a=b"), formula_like("\\tx")
    (True, True, False, True)
    """
    if text.startswith(FORMULA_STARTS):
        return True
    for c in text:
        if not _ignorable(c):
            return c in FORMULA_TRIGGERS
    return False


def csv_cell(text: str) -> str:
    """A text cell for CSV: a leading ``'`` when a spreadsheet could read it as a formula
    (:func:`formula_like`; OWASP's advice against CSV injection), else unchanged;
    :func:`csv_field` does the quoting. The whole name stays unchanged in model.json.

    >>> csv_cell("=HYPERLINK(\\"http://x\\")"), csv_cell("SlowStart"), csv_cell("")
    ('\\'=HYPERLINK("http://x")', 'SlowStart', '')
    >>> csv_cell(" \\x00+1")
    "' \\x00+1"
    """
    return "'" + text if formula_like(text) else text


def csv_field(cell: str) -> str:
    """One CSV field: ``cell`` in double quotes (inner quotes doubled) when it holds any of
    :data:`CSV_QUOTED`, so no line break inside a cell can end a row for any reader.

    >>> csv_field("a"), csv_field("a,b"), csv_field("x\\ry")
    ('a', '"a,b"', '"x\\ry"')
    """
    if CSV_QUOTED.isdisjoint(cell):
        return cell
    return '"' + cell.replace('"', '""') + '"'


def csv_rows(rows: Iterable[Sequence[str]]) -> str:
    """Rows of already formatted cells as CSV text (comma, LF line ends, :func:`csv_field`
    quoting; a row of one empty cell written ``""`` as the csv module writes it)."""
    out = []
    for row in rows:
        if len(row) == 1 and row[0] == "":
            out.append('""\n')
        else:
            out.append(",".join(map(csv_field, row)) + "\n")
    return "".join(out)


#: The line breaks the csv module's writer (LF line ends) leaves unquoted.
_UNQUOTED_BREAKS = re.compile("[" + re.escape("".join(sorted(CSV_QUOTED - set(',"\n')))) + "]")


def _csv_module_suffices(texts: Iterable[str]) -> bool:
    """True when no text holds a line break that the csv module would leave unquoted:
    then its writer (C, fast) writes exactly what :func:`csv_rows` would."""
    return not _UNQUOTED_BREAKS.search("\n".join(texts))


def frame_csv(frame: pd.DataFrame) -> str:
    """A pandas DataFrame as CSV text (no index) with :func:`csv_cell` applied to its
    text cells (numbers, including negative ones, are left as they are): pandas formats
    every cell (``DataFrame.to_csv``, all quoted, so it reads back exactly), and
    :func:`csv_rows` writes them."""
    import csv
    import io

    safe = frame.copy()
    for column in safe.columns:
        if safe[column].dtype.kind not in "biufcmM":  # text (object or string dtype)
            safe[column] = safe[column].map(lambda v: csv_cell(v) if isinstance(v, str) else v)
    texts = [v for c in safe.columns for v in safe[c] if isinstance(v, str)]
    if _csv_module_suffices([*map(str, safe.columns), *texts]):
        return safe.to_csv(index=False, lineterminator="\n")
    quoted = safe.to_csv(index=False, quoting=csv.QUOTE_ALL, lineterminator="\n")
    return csv_rows(csv.reader(io.StringIO(quoted, newline="")))


def columns_csv(columns: dict) -> str:
    """A table given as columns (name -> array) as CSV text, formatted as pandas'
    ``DataFrame.to_csv(index=False)`` formats it: shortest round-trip floats, NaN empty;
    text cells through :func:`csv_cell`. (No pandas: the streamed infer never imports it.)"""
    import csv
    import io

    import numpy as np

    def cell(value: object) -> str:
        if isinstance(value, (float, np.floating)):
            return "" if value != value else repr(float(value))
        if isinstance(value, str):
            return csv_cell(value)
        return str(value)

    header = [str(name) for name in columns]
    rows = ([cell(v) for v in row] for row in zip(*columns.values()))
    texts = [v for col in columns.values() if col.dtype.kind in "OUS" for v in col.tolist()]
    if _csv_module_suffices([*header, *(v for v in texts if isinstance(v, str))]):
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        return out.getvalue()
    return csv_rows([header, *rows])


def one_line(message: object) -> str:
    """A message on one line: newlines and other controls made visible, backslashes kept
    (messages quote regexes and Windows paths).

    >>> one_line("bad.log:3: no state\\nnext")
    'bad.log:3: no state\\\\x0anext'
    """
    return visible(message, backslash=False)


__all__ = [
    "CSV_QUOTED",
    "DISPLAY_CHARS",
    "EMPTY",
    "FORMULA_STARTS",
    "FORMULA_TRIGGERS",
    "TERMINAL_CHARS",
    "columns_csv",
    "csv_cell",
    "csv_field",
    "csv_rows",
    "display_name",
    "formula_like",
    "frame_csv",
    "html_text",
    "markup_text",
    "one_line",
    "rich_cell",
    "visible",
]
