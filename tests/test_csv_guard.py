"""The CSV formula guard (issue 27 item 5): a cell a spreadsheet could read as a formula
starts with ``'``, whatever whitespace or control characters come first, and no line
break inside a cell can start a row (every such cell is quoted). Fuzzed with hypothesis,
read back with the csv module and with pandas."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statemine.cli import main
from statemine.escape import columns_csv, csv_cell, csv_field, frame_csv

#: The issue's name: a CR, then a live formula.
ISSUE_NAME = "\r=cmd|' /C calc'!A0"
TRIGGERS = "=+-@\uff1d\uff0b\uff0d\uff20"


def meaningful_start(cell: str) -> str:
    """The first character of ``cell`` that is neither whitespace nor unprintable ('' if
    none): what a spreadsheet looks at, whatever it skips first."""
    for c in cell:
        if not (c.isspace() or not c.isprintable()):
            return c
    return ""


def is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def assert_no_live_formula(rows: list[list[str]]) -> None:
    """No cell of any row starts (after whitespace and controls) with a formula character,
    unless it is guarded (starts with ') or is a number."""
    for row in rows:
        for cell in row:
            cell = "" if cell is None or cell != cell else str(cell)  # pandas NaN
            if cell.startswith("'") or is_number(cell):
                continue
            assert meaningful_start(cell) not in TRIGGERS or not meaningful_start(cell), (
                row,
                cell,
            )
            assert not cell.startswith(("\t", "\r")), (row, cell)


def read_both(text: str) -> tuple[list[list[str]], pd.DataFrame]:
    """``text`` read by the csv module and by pandas (every cell as text)."""
    csv.field_size_limit(1 << 24)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    frame = pd.read_csv(io.StringIO(text, newline=""), dtype=str, keep_default_na=False)
    return rows, frame


@pytest.mark.parametrize(
    "text, expected",
    [
        (ISSUE_NAME, "'" + ISSUE_NAME),
        (" =1", "' =1"),
        ("\x00+1", "'\x00+1"),
        ("\u200b@SUM(A1)", "'\u200b@SUM(A1)"),
        ("\n\n-2", "'\n\n-2"),
        ("\uff1dcmd", "'\uff1dcmd"),
        ("\tplain", "'\tplain"),
        ("  plain", "  plain"),
        ("a\r=b", "a\r=b"),
        ("\r\n", "'\r\n"),
    ],
)
def test_guard_looks_past_whitespace_and_controls(text, expected):
    assert csv_cell(text) == expected


def test_line_breaks_and_quotes_force_quoting():
    for c in ',"\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029':
        assert csv_field(f"a{c}b").startswith('"'), repr(c)
    assert csv_field("a b'c") == "a b'c"


def test_the_issue_name_cannot_start_a_row():
    text = columns_csv({"state": np.array([ISSUE_NAME, "Recovery"]), "x": np.array([1.0, -2.5])})
    rows, frame = read_both(text)
    assert rows == [["state", "x"], ["'" + ISSUE_NAME, "1.0"], ["Recovery", "-2.5"]]
    assert frame["state"].tolist() == ["'" + ISSUE_NAME, "Recovery"]
    # the cell is quoted: the old writer left the CR bare, and a reader ended the row there
    assert '"' + "'" + ISSUE_NAME + '"' in text


#: Names made of the characters that matter: triggers, whitespace, controls, quotes,
#: separators, line breaks, and ordinary text.
LABELS = st.text(
    alphabet=st.sampled_from(
        list(TRIGGERS)
        + list(" \t\r\n\v\f\x00\x1b\x1c\x85\u2028\u200b\ufeff\"',;|!")
        + list("aZ09.eE")
    ),
    max_size=12,
) | st.text(max_size=8)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(names=st.lists(LABELS, min_size=1, max_size=6))
def test_fuzzed_labels_read_back_guarded_by_csv_and_pandas(names):
    values = np.array([-1.5 * i for i in range(len(names))])
    expected = [csv_cell(n) for n in names]
    for text in (
        columns_csv({"state": np.array(names, dtype=object), "share": values}),
        frame_csv(pd.DataFrame({"src": names, "dst": names[::-1], "share": values})),
    ):
        rows, frame = read_both(text)
        assert len(rows) == len(names) + 1  # no cell started a row of its own
        assert all(len(r) == len(rows[0]) for r in rows)
        assert [r[0] for r in rows[1:]] == expected  # and each name came back whole
        assert frame.iloc[:, 0].tolist() == expected
        assert len(frame) == len(names)
        assert_no_live_formula(rows)
        assert_no_live_formula(frame.astype(str).values.tolist())


def test_frame_csv_keeps_pandas_number_formatting():
    frame = pd.DataFrame(
        {
            "state": ["a", "=b", ISSUE_NAME],
            "f": [0.1, float("nan"), -1e-300],
            "i": [1, -2, 3],
            "b": [True, False, True],
        }
    )
    plain = frame.assign(state=[csv_cell(s) for s in frame["state"]])
    ours = frame_csv(frame)
    # pandas' own text, except that the CR cell is quoted
    theirs = plain.to_csv(index=False, lineterminator="\n")
    assert ours.replace('"' + "'" + ISSUE_NAME + '"', "X") == theirs.replace("'" + ISSUE_NAME, "X")


def raw(path: Path) -> str:
    """A file's text, line ends as written (no newline translation)."""
    return path.read_bytes().decode("utf-8")


def _log(path: Path, names: list[str]) -> Path:
    """A qlog-free statemine log can't hold a CR in a name (lines end there), so the
    names go through a qlog document: JSON strings hold any character."""
    events = [
        {
            "time": 10.0 * i,
            "name": "recovery:congestion_state_updated",
            "data": {"new": name},
        }
        for i, name in enumerate(names)
    ]
    doc = {
        "qlog_version": "0.3",
        "qlog_format": "JSON",
        "traces": [
            {
                "vantage_point": {"type": "server"},
                "common_fields": {"ODCID": "ab"},
                "events": events,
            }
        ],
    }
    path.write_text(json.dumps(doc))
    return path


def test_infer_and_diff_write_the_issue_name_guarded(tmp_path):
    names = ["slow_start", ISSUE_NAME, "=1+1", "recovery", ISSUE_NAME, "slow_start"]
    a = _log(tmp_path / "a.qlog", names)
    b = _log(tmp_path / "b.qlog", names[::-1])
    runner = CliRunner()
    res = runner.invoke(
        main, ["infer", str(a), "--out", str(tmp_path / "i"), "--bootstrap", "0", "--no-svg"]
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(
        main,
        ["diff", str(a), str(b), "--out", str(tmp_path / "d"), "--no-svg", "--permutations", "9"],
    )
    assert res.exit_code == 0, res.output
    seen = set()
    for f in ("i/states.csv", "i/transitions.csv", "d/states_diff.csv", "d/transitions_diff.csv"):
        rows, frame = read_both(raw(tmp_path / f))
        assert_no_live_formula(rows)
        assert_no_live_formula(frame.astype(str).values.tolist())
        seen |= {c for r in rows for c in r}
    assert "'" + ISSUE_NAME in seen
    rows, _ = read_both(raw(tmp_path / "d/one_sided.csv"))
    assert_no_live_formula(rows)
