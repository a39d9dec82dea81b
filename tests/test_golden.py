"""Outputs of infer, diff and report on every shipped trace folder, byte for byte as recorded.

The cases and their normalization (Graphviz SVGs as their titles, matplotlib date stamps)
are in ``tests/golden.py``; the recorded outputs in ``tests/data/golden/``. A failure means
a command's output changed: if that was meant, re-record with
``python3 tests/golden.py --record CASE`` and say so in the commit message.
"""

from __future__ import annotations

import difflib

import pytest
from golden import CASES, GOLDEN, read_golden, run_case, stored


def test_every_case_is_recorded() -> None:
    assert sorted(p.name for p in GOLDEN.iterdir() if p.name != "inputs") == sorted(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str) -> None:
    expected = read_golden(case)
    got = stored(run_case(CASES[case]))
    assert sorted(got) == sorted(expected), f"{case}: other files than recorded"
    for name, data in got.items():
        if data != expected[name]:
            diff = difflib.unified_diff(
                expected[name].decode(errors="replace").splitlines(),
                data.decode(errors="replace").splitlines(),
                f"recorded/{case}/{name}",
                f"now/{case}/{name}",
                lineterm="",
            )
            pytest.fail("\n".join(list(diff)[:60]))
