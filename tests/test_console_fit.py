"""Terminal tables at 80, 100 and 120 columns: every line fits and no token is split.

The commands run as a user's terminal would show them (rich told it writes to a terminal of
``COLUMNS`` cells). Whole tokens are found independently of statemine's tokenizer: names
with a version (``aioquic@1.7.2``), state names, and numbers with their unit, matched by
regular expressions on the plain (piped, unfitted) output of the same command. Each must
stand whole on a line of the fitted output at least as often as in the unfitted one.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.cells import cell_len

from statemine.cli import main
from statemine.cli.console import text_tables, tokens, wrap

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "traces"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# a number and its unit, a stack@version, or a CamelCase state name
WHOLE = re.compile(
    r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?: ?(?:%|pp|ms|s)\b)"
    r"|[\w.-]+@v?\d[\w.]*\d"
    r"|\b(?:[A-Z][a-z]+){2,}\b"
)

COMMANDS = {
    "infer": [
        "infer",
        str(TRACES / "quic-go-versions"),
        "--select",
        "role=server",
        "--select",
        "version=v0.63.0",
        "--select",
        "jitter_ms=10",
    ],
    "diff": [
        "diff",
        str(TRACES / "jitter"),
        str(TRACES / "jitter"),
        "--select",
        "role=server",
        "--select-a",
        "jitter_ms=0",
        "--select-b",
        "jitter_ms=10",
        "--bootstrap",
        "200",
        "--permutations",
        "200",
        "--out",
        "{out}",
    ],
    "lab findings": [
        "lab",
        "findings",
        str(TRACES),
        "--finding",
        "mobile-vs-desktop",
        "--bootstrap",
        "100",
        "--permutations",
        "100",
    ],
}


def _run(args: list[str], columns: int | None, out: Path) -> str:
    args = [str(out / str(columns)) if a == "{out}" else a for a in args]
    env = {"NO_COLOR": "1"}
    if columns is not None:
        env.update(TTY_COMPATIBLE="1", COLUMNS=str(columns))
    result = CliRunner().invoke(main, args, env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return ANSI.sub("", result.stdout)


@pytest.fixture(scope="module")
def piped(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    if not TRACES.is_dir():
        pytest.skip("the shipped traces/ are not beside the tests")
    out = tmp_path_factory.mktemp("piped")
    return {name: _run(args, None, out) for name, args in COMMANDS.items()}


@pytest.mark.parametrize("columns", [80, 100, 120])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_tables_fit_without_splitting_a_token(
    name: str, columns: int, piped: dict[str, str], tmp_path: Path
) -> None:
    fitted = _run(COMMANDS[name], columns, tmp_path)
    lines = fitted.splitlines()
    assert max(cell_len(line) for line in lines) <= columns
    table_text = "\n".join(line for line in lines if line[:1] in "│┃")
    plain_table = "\n".join(line for line in piped[name].splitlines() if line[:1] in "│┃")
    wanted = Counter(m.group(0) for m in WHOLE.finditer(plain_table))
    assert wanted, "the command printed no table"
    found = Counter(m.group(0) for m in WHOLE.finditer(table_text))
    split = {token: n for token, n in wanted.items() if found[token] < n}
    assert not split, f"split at {columns} columns: {split}"


def test_tokens_keep_units_and_brackets() -> None:
    assert tokens("+10.8 [+10.2, +11.4] pp") == ["+10.8", "[+10.2, +11.4] pp"]
    assert tokens("1.10 s / 2.20 s (4.9e-20)") == ["1.10 s", "/", "2.20 s", "(4.9e-20)"]
    assert tokens("  a  b ") == ["a", "b"]


def test_wrap_fills_lines_and_never_cuts() -> None:
    assert wrap("a bb ccc dddd", 6) == ["a bb", "ccc", "dddd"]
    assert wrap("averyveryverylongname", 5) == ["averyveryverylongname"]
    assert wrap("x\ny", 10) == ["x", "y"]


def test_columns_that_do_not_fit_move_to_a_table_repeating_the_key() -> None:
    headers = ["name", *(f"column{i}" for i in range(12))]
    rows = [["key-cell", *(f"{i}.5 ms" for i in range(12))]]
    tables = text_tables(headers, rows, width=60)
    assert len(tables) > 1
    shown = [[str(c.header) for c in t.columns] for t in tables]
    assert all(cols[0] == "name" for cols in shown)
    assert sorted(c for cols in shown for c in cols[1:]) == sorted(headers[1:])
    assert len(text_tables(headers, rows)) == 1  # unfitted: one table
