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
#: "CSV Injection": =, +, -, @, tab, carriage return).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


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


def csv_cell(text: str) -> str:
    """A text cell for CSV: a leading ``'`` when it begins with a formula character
    (OWASP's advice against CSV injection), else unchanged; the csv module does the
    quoting. The whole name stays unchanged in model.json.

    >>> csv_cell("=HYPERLINK(\\"http://x\\")"), csv_cell("SlowStart"), csv_cell("")
    ('\\'=HYPERLINK("http://x")', 'SlowStart', '')
    """
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def frame_csv(frame: pd.DataFrame) -> str:
    """A pandas DataFrame as CSV text (no index) with :func:`csv_cell` applied to its
    text cells (numbers, including negative ones, are left as they are)."""
    safe = frame.copy()
    for column in safe.columns:
        if safe[column].dtype.kind not in "biufcmM":  # text (object or string dtype)
            safe[column] = safe[column].map(lambda v: csv_cell(v) if isinstance(v, str) else v)
    return safe.to_csv(index=False)


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

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([cell(v) for v in row] for row in zip(*columns.values()))
    return out.getvalue()


def one_line(message: object) -> str:
    """A message on one line: newlines and other controls made visible, backslashes kept
    (messages quote regexes and Windows paths).

    >>> one_line("bad.log:3: no state\\nnext")
    'bad.log:3: no state\\\\x0anext'
    """
    return visible(message, backslash=False)


__all__ = [
    "DISPLAY_CHARS",
    "EMPTY",
    "FORMULA_STARTS",
    "TERMINAL_CHARS",
    "columns_csv",
    "csv_cell",
    "display_name",
    "frame_csv",
    "html_text",
    "markup_text",
    "one_line",
    "rich_cell",
    "visible",
]
