"""Outputs of infer, diff and report on every shipped trace folder, as recorded.

The cases, their normalization (Graphviz SVGs as their titles, matplotlib date stamps) and
the comparison (bytes, or numbers within a stated tolerance where numpy, scipy or pandas
computed them: ``golden.mismatch``) are in ``tests/golden.py``; the recorded outputs in
``tests/data/golden/``. A failure means
a command's output changed: if that was meant, re-record with
``python3 tests/golden.py --record CASE`` and say so in the commit message.
"""

from __future__ import annotations

import difflib

import pytest
from golden import CASES, GOLDEN, REL_TOL, differing, mismatch, read_golden, run_case, stored


def test_every_case_is_recorded() -> None:
    assert sorted(p.name for p in GOLDEN.iterdir() if p.name != "inputs") == sorted(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str) -> None:
    expected = read_golden(case)
    got = stored(run_case(CASES[case]))
    assert sorted(got) == sorted(expected), f"{case}: other files than recorded"
    for name, data in got.items():
        if mismatch(name, expected[name], data):
            diff = difflib.unified_diff(
                expected[name].decode(errors="replace").splitlines(),
                data.decode(errors="replace").splitlines(),
                f"recorded/{case}/{name}",
                f"now/{case}/{name}",
                lineterm="",
            )
            pytest.fail("\n".join(list(diff)[:60]))


def _csv(lo: str) -> bytes:
    return f"state,time_fraction_lo\nRecovery,{lo}\n".encode()


def test_numbers_move_within_the_tolerance_only() -> None:
    """The recorded infer-jitter bound and the one numpy 2.4 / pandas 3.1 / scipy 1.17 give
    (16th digit) agree; a change in the 9th digit, of an integer, of the text between
    numbers, or of an exact file does not."""
    old = _csv("0.5584533071690939")
    assert not mismatch("states.csv", old, _csv("0.5584533071690942"))
    assert not mismatch("model.json", b'{"x": 0.0}', b'{"x": 1e-17}')  # zero up to rounding
    assert mismatch("states.csv", old, _csv(repr(0.5584533071690939 * (1 + 20 * REL_TOL))))
    assert mismatch("states.csv", old, _csv("0.5584533"))
    assert mismatch("stdout.txt", b"traces: 120\n", b"traces: 121\n")
    assert mismatch("states.csv", old, old.replace(b"Recovery", b"Recovery2"))
    assert mismatch("states.csv", old, old + b"extra\n")
    assert mismatch("exit.txt", b"0\n", b"0.0\n")  # would pass as numbers; exact here
    assert mismatch("model.svg", b"a 0.5\n", b"a 0.50000000001\n")
    assert differing({"a.csv": old}, {"a.csv": old, "b.csv": old}) == ["b.csv"]
