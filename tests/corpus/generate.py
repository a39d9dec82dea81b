"""Make statemine's corpus of qlogs written by unmodified QUIC stacks (tests/data/corpus).

``python3 tests/corpus/generate.py [CASE...]`` builds each stack once into
``$STATEMINE_CACHE/corpus`` (default ``~/.cache/statemine/corpus``: aioquic from PyPI in a
virtual environment per version, quinn and quiche from crates.io with their ``qlog`` feature
through cargo (a small pair program each: tests/corpus/quinn, tests/corpus/quiche), tquic's ``tquic_tools`` from crates.io through ``cargo install``, quic-go from the
Go module proxy), runs each case on loopback through relay.py
(a bottleneck, a delay, a drop-tail queue and seeded random loss on the server-to-client
direction) and writes its qlogs gzip-compressed to ``tests/data/corpus/<case>/``. Nothing
leaves loopback. The committed files are this script's output; CI reads them and needs no
stack built (docs/qlog.md, "Corpus").
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OUT = REPO / "tests" / "data" / "corpus"
CACHE = Path(os.environ.get("STATEMINE_CACHE", Path.home() / ".cache" / "statemine")) / "corpus"
CERT = REPO / "statemine" / "lab" / "data"
#: the path: 20 Mbit/s, 15 ms each way, a 60 kB queue; loss per case
RATE, DELAY, QUEUE = "20e6", "0.015", "60000"
#: case -> (stack, version, loss, extra); extra: the congestion controller (aioquic), the
#: milliseconds the server starts late (quic-go) or the bytes the server sends instead of
#: SIZE (quiche: its qlog at the Base level, which congestion_state_updated needs, logs a
#: stream_data_moved per stream write; 200 kB keep its files under 40 kB compressed)
CASES = {
    "aioquic-1.2.0-cubic-loss2": ("aioquic", "1.2.0", 0.02, "cubic"),
    "aioquic-1.7.2-cubic-loss2": ("aioquic", "1.7.2", 0.02, "cubic"),
    "aioquic-1.7.2-reno-loss2": ("aioquic", "1.7.2", 0.02, "reno"),
    "aioquic-1.7.2-cubic-clean": ("aioquic", "1.7.2", 0.0, "cubic"),
    "quinn-0.11.12-loss2": ("quinn", "0.11.12", 0.02, ""),
    "quinn-0.11.12-clean": ("quinn", "0.11.12", 0.0, ""),
    "quicgo-v0.55.0-late-server": ("quicgo", "v0.55.0", 0.0, "1500"),
    "quicgo-v0.55.0-loss2": ("quicgo", "v0.55.0", 0.02, "0"),
    "quicgo-v0.62.0-loss2": ("quicgo", "v0.62.0", 0.02, "0"),
    "tquic-1.6.0-cubic-loss2": ("tquic", "1.6.0", 0.02, ""),
    "tquic-1.6.0-cubic-clean": ("tquic", "1.6.0", 0.0, ""),
    "quicgo-v0.62.0-clean": ("quicgo", "v0.62.0", 0.0, "0"),
    "quiche-0.30.0-clean": ("quiche", "0.30.0", 0.0, "200000"),
    "quiche-0.30.0-loss2": ("quiche", "0.30.0", 0.02, "200000"),
    "quicgo-v0.52.0-clean": ("quicgo", "v0.52.0", 0.0, "0"),
    "quicgo-v0.52.0-loss2": ("quicgo", "v0.52.0", 0.02, "0"),
}
SIZE = "400000"  # bytes the server sends


def build(stack: str, version: str) -> list[str]:
    """The command that runs one connection of ``stack`` ``version`` (built once)."""
    home = CACHE / f"{stack}-{version}"
    if stack == "aioquic":
        python = home / "bin" / "python"
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(home)], check=True)
            subprocess.run([str(python), "-m", "pip", "install", "-q", f"aioquic=={version}"],
                           check=True)  # fmt: skip
        return [str(python), str(HERE / "aioquic_pair.py"), "{listen}", "{connect}", SIZE, "{out}"]
    if stack == "tquic":  # tquic_tools' client and server (BoringSSL built from source)
        if not (home / "bin" / "tquic_server").exists():
            subprocess.run(["nice", "cargo", "install", "tquic_tools", "--version", version,
                            "--root", str(home), "--locked"], check=True)  # fmt: skip
        return ["sh", str(HERE / "tquic_pair.sh"), str(home / "bin"), "{listen}", "{connect}",
                "{out}", str(CERT)]  # fmt: skip
    if stack in ("quinn", "quiche"):  # a small Rust pair over the crate (tests/corpus/<stack>)
        # quiche shares the lab's target folder, so BoringSSL (boring-sys) is built once
        target = CACHE.parent / "cargo" / "target" if stack == "quiche" else home / "target"
        binary = target / "release" / f"{stack}-qlog-corpus"
        if not binary.exists():
            (home / "src").mkdir(parents=True, exist_ok=True)
            pinned = {"quinn": "=0.11.12", "quiche": "=0.30.0"}[stack]
            text = (HERE / stack / "Cargo.toml").read_text().replace(pinned, f"={version}")
            (home / "Cargo.toml").write_text(text)
            shutil.copy(HERE / stack / "main.rs", home / "src" / "main.rs")
            env = {**os.environ, "CARGO_TARGET_DIR": str(target)}
            subprocess.run(["nice", "cargo", "build", "--release"], cwd=home, env=env, check=True)
        return [str(binary), "127.0.0.1:{listen}", "127.0.0.1:{connect}", SIZE, "{out}"]
    binary = home / "quicgo-corpus"
    if not binary.exists():
        home.mkdir(parents=True, exist_ok=True)
        shutil.copy(HERE / "quicgo" / "main.go", home / "main.go")
        (home / "go.mod").write_text("module corpus\n\ngo 1.22\n")
        subprocess.run(["go", "get", f"github.com/quic-go/quic-go@{version}"], cwd=home, check=True)
        subprocess.run(["go", "mod", "tidy"], cwd=home, check=True)
        subprocess.run(["nice", "go", "build", "-o", str(binary), "."], cwd=home, check=True)
    return [str(binary), "127.0.0.1:{listen}", "127.0.0.1:{connect}", SIZE]


def run(case: str) -> None:
    stack, version, loss, extra = CASES[case]
    command = build(stack, version)
    work = CACHE / "runs" / case
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = {**os.environ, "CORPUS_CERT": str(CERT / "cert.pem"), "CORPUS_KEY": str(CERT / "key.pem"),
           "QLOGDIR": str(work)}  # fmt: skip
    if stack == "quiche":  # the bytes to send
        command = [extra if a == SIZE else a for a in command]
    elif extra:  # the controller (aioquic), the server's delay (quic-go)
        command = [*command, extra]
    shape = [RATE, DELAY, QUEUE, str(loss), "1"]
    done = subprocess.run(
        [sys.executable, str(HERE / "run_pair.py"), str(work), *shape, "--", *command], env=env
    )
    if done.returncode:
        raise SystemExit(f"{case}: the run failed ({done.returncode})")
    target = OUT / case
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for qlog in sorted(work.rglob("*qlog")):
        side = "client" if "client" in str(qlog.relative_to(work)) else "server"
        if stack == "aioquic" and side == "client":
            continue  # the receiver: nothing to derive
        suffix = ".sqlog" if qlog.suffix == ".sqlog" else ".qlog"
        with open(qlog, "rb") as src, gzip.open(target / f"{side}{suffix}.gz", "wb", 9) as dst:
            shutil.copyfileobj(src, dst)
    made = sorted(p.name for p in target.iterdir())
    if not made:
        raise SystemExit(f"{case}: the run wrote no qlog")
    print(case, made)


if __name__ == "__main__":
    for name in sys.argv[1:] or list(CASES):
        run(name)
