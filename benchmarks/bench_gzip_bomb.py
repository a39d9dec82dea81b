"""Peak memory and time of `statemine infer` refusing gzip decompression bombs (issue 11).

Writes, in a temporary folder, gzip files that decompress to more than the readers'
limits, and runs the command on each in a fresh process; reports the exit status, wall and CPU
time and the child's peak RSS (wait4). The bombs:

* qlog document, one member (its trailer states the size: refused before decompressing);
* qlog document, two members (the trailer of the last one is small: refused while
  measuring, holding ~1 MiB pieces);
* NDJSON qlog with one 100 MiB record (refused at max_record_bytes, 64 MiB);
* statemine log of 300 MiB of zeros, read as --format statemine (refused at the 1 MiB
  line limit).

    python benchmarks/bench_gzip_bomb.py [--size-mib 1100]
"""

from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def gz(*pieces: tuple[bytes, int]) -> bytes:
    """One gzip member of ``piece`` repeated ``count`` times for each (piece, count)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = []
    for piece, count in pieces:
        total = len(piece) * count
        block = piece * max(1, (1 << 20) // len(piece))
        while total > 0:
            chunk = block[: min(len(block), total)]
            out.append(c.compress(chunk))
            total -= len(chunk)
    return b"".join(out) + c.flush()


def run(args: list[str]) -> tuple[int, float, float, float]:
    """Exit status, wall seconds, CPU seconds and peak RSS (MiB) of ``python -m statemine
    args`` (the child's own figures, from wait4)."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "statemine", *args],
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=REPO,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
        )
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        err.seek(0)
        print("  " + err.read().decode(errors="replace").strip().splitlines()[-1][:160])
    return proc.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--size-mib", type=int, default=1100, help="decompressed size of the document bombs"
    )
    opts = parser.parse_args()
    doc = b'{"qlog_version": "0.3", "traces": ['
    ndjson = b'{"qlog_version": "draft-02", "qlog_format": "NDJSON", "title": "x"}\n'
    bombs = {
        "document-one-member.qlog.gz": (
            gz((doc, 1), (b" ", opts.size_mib << 20)),
            ["--format", "qlog"],
        ),
        "document-two-members.qlog.gz": (
            gz((doc, 1), (b" ", opts.size_mib << 20)) + gzip.compress(b"]}"),
            ["--format", "qlog"],
        ),
        "record.ndjson.gz": (gz((ndjson, 1), (b"a", 100 << 20)), ["--format", "qlog"]),
        "zeros.log.gz": (gz((b"\0", 300 << 20)), ["--format", "statemine"]),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, (data, extra) in bombs.items():
            path = Path(tmp) / name
            path.write_bytes(data)
            print(f"{name}: {len(data) / 1e6:.2f} MB compressed")
            code, wall, cpu, peak = run(["infer", str(path), *extra])
            print(f"  exit {code}, {wall:.2f} s wall, {cpu:.2f} s CPU, peak RSS {peak:.0f} MiB")


if __name__ == "__main__":
    main()
