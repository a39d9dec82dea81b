"""Agreement of derived states with the references, on the corpus of qlogs written by
unmodified stacks (tests/data/corpus, docs/qlog.md "Real stacks' qlogs: the corpus").

Not a speed benchmark: for each corpus file it prints the RFC 9002 reference Recovery
(tests/rfc9002_reference.py, from the file's own packet events), the states the file
logs (where its stack logs them: quic-go, quiche) and the states derived from the file
without its ``congestion_state_updated`` events, as shares of the trace's time (percent),
and the largest gap per state between derived and logged. quiche logs no ``packet_lost``:
its reference takes the congestion events from its window's reductions; its logged
``recovery`` is an instant and it logs no ApplicationLimited, so its gap is no agreement
measure (docs/qlog.md). The numbers of the table in
docs/qlog.md; tests/test_qlog_corpus.py checks them.

    python benchmarks/qlog_corpus_agreement.py
"""

from __future__ import annotations

import gzip
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from rfc9002_reference import recovery_periods  # noqa: E402

import statemine  # noqa: E402
from statemine.parse.qlog import read_qlog  # noqa: E402
from statemine.parse.qlog.agreement import strip_state_events  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "corpus"


def shares(ts: statemine.TraceSet) -> dict[str, float]:
    """Each state's share of the trace's time, percent (the derived mark dropped)."""
    states = statemine.summarize(ts)[0]
    return {
        str(s).replace(" (derived)", ""): 100 * float(f)
        for s, f in zip(states["state"], states["time_fraction"])
    }


def line(path: Path, tmp: Path) -> str:
    """One table row: file, reference Recovery, logged and derived shares, largest gap."""
    ref = recovery_periods(path, by_window=path.parent.name.startswith("quiche"))
    text = f"{path.parent.name}/{path.name.split('.')[0]}"
    reference = f"{100 * ref.recovery_share():.4f}" if ref.acks else "none (no ACK frames)"
    plain = tmp / path.name.removesuffix(".gz")
    plain.write_bytes(gzip.decompress(path.read_bytes()))
    stripped = strip_state_events(plain, tmp / f"stripped-{plain.name}")
    derived = shares(read_qlog(stripped, derive_states=True))
    try:
        logged = shares(read_qlog(path))
    except statemine.errors.InputError:
        logged = {}
    cells = " ".join(
        f"{s} {logged.get(s, 0):.2f}/{derived.get(s, 0):.4f}" if logged else f"{s} {derived[s]:.4f}"
        for s in sorted(set(logged) | set(derived), key=lambda s: -derived.get(s, 0))
    )
    gap = max(abs(logged.get(s, 0) - derived.get(s, 0)) for s in set(logged) | set(derived))
    told = f"gap {gap:.2f}" if logged else "no logged states"
    return f"{text}: reference Recovery {reference} | {told} | {cells}"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted(CORPUS.glob("*/*.gz")):
            print(line(path, Path(tmp)))


if __name__ == "__main__":
    main()
