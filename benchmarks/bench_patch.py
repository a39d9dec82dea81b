"""Benchmark of the patch engine (statemine.patch) on generated trees and on aioquic.

Usage: python benchmarks/bench_patch.py [--lines 200000] [--hunks 200] [--aioquic 1.7.2]

1. A generated file of LINES lines and a patch of HUNKS hunks (git-style, made with
   difflib): time to parse, check, apply and revert it.
2. ``port`` with fuzz 2 on a copy whose lines are shifted and where every other hunk's
   context is broken, so half the hunks search the whole file and fail (the worst case).
3. With ``--aioquic VERSION``: fetch (cached), apply and revert the real patch.

Targets (one core): 200k lines / 200 hunks apply + revert under 1 s; port worst case
under 3 s; aioquic apply + revert under 0.5 s.
"""

from __future__ import annotations

import argparse
import difflib
import random
import resource
import tempfile
import time
from pathlib import Path

from statemine.patch import PortFailed, apply, check, fetch, port, revert
from statemine.patch.unified_diff import read_patch


def timed(label: str, fn):
    t0 = time.perf_counter()
    out = fn()
    print(f"{label:<44s} {time.perf_counter() - t0:8.3f} s")
    return out


def generated(work: Path, lines: int, hunks: int, seed: int = 1) -> tuple[Path, Path, list[str]]:
    """A patches dir with impl ``gen`` version ``1`` and a tree holding ``big.txt``."""
    rng = random.Random(seed)
    orig = [f"line {i} {rng.random():.6f}\n" for i in range(lines)]
    new = list(orig)
    for pos in sorted(rng.sample(range(10, lines - 10), hunks), reverse=True):
        new[pos : pos + 1] = [f"LOG {pos}\n", new[pos].upper()]
    patches = work / "patches"
    (patches / "gen" / "1").mkdir(parents=True)
    (patches / "gen" / "impl.toml").write_text(
        'name = "gen"\nfetch = "pypi-sdist"\npackage = "gen"\n'
    )
    diff = difflib.unified_diff(orig, new, "a/big.txt", "b/big.txt")
    (patches / "gen" / "1" / "statemine.patch").write_text("".join(diff))
    tree = work / "tree"
    tree.mkdir()
    (tree / "big.txt").write_text("".join(orig))
    return patches, tree, orig


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--hunks", type=int, default=200)
    ap.add_argument("--aioquic", default=None, help="also fetch/apply/revert this aioquic version")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        patches, tree, orig = generated(work, args.lines, args.hunks)
        print(f"generated: {args.lines} lines, {args.hunks} hunks")
        timed("parse patch", lambda: read_patch(patches / "gen/1/statemine.patch"))
        timed("check", lambda: check("gen", "1", tree, patches))
        timed("apply", lambda: apply("gen", "1", tree, patches))
        timed("revert", lambda: revert("gen", "1", tree, patches))
        shifted = ["inserted\n"] * 37 + list(orig)
        for i, line in enumerate(shifted):
            if line.startswith("line ") and int(line.split()[1]) % 2 == 0 and i % 7 == 0:
                shifted[i] = "changed\n"
        (tree / "big.txt").write_text("".join(shifted))

        def port_report():
            """The port's report (it fails: nothing written, the report says why)."""
            try:
                return port("gen", "1", "2", tree, fuzz=2, patches=patches, max_offset=len(shifted))
            except PortFailed as exc:
                return exc.report

        report = timed("port (fuzz 2, shifted, some contexts broken)", port_report)
        print(f"  {report}")
        if args.aioquic:
            src = timed(
                f"fetch aioquic {args.aioquic} (cached)",
                lambda: fetch("aioquic", args.aioquic, work / "aq"),
            )
            timed("apply aioquic", lambda: apply("aioquic", args.aioquic, src))
            timed("revert aioquic", lambda: revert("aioquic", args.aioquic, src))
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
