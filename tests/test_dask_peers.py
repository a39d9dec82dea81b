"""``--dask tcp://`` peers that are not Dask schedulers (issue 27 item 4): an HTTP server
and a listener that never speaks end in one line within the timeout, exit 2; a real
scheduler still connects. Everything on loopback."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
from click.testing import CliRunner

import statemine
from statemine.cli import main
from statemine.distributed.cluster import dask_client, probe_scheduler
from statemine.errors import StatemineError

pytest.importorskip("distributed")

HTTP_REPLY = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


@contextmanager
def listener(serve: Callable[[socket.socket], None] | None) -> Iterator[str]:
    """A loopback listener; ``serve`` handles each accepted connection (None: accept
    nothing, so connections wait in the backlog and the peer never speaks)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    stop = threading.Event()
    held: list[socket.socket] = []

    def loop() -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            held.append(conn)
            if serve is not None:
                serve(conn)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        sock.close()


def http_after_request(conn: socket.socket) -> None:
    """An HTTP server: reads what the client sends, then answers 400 and closes."""
    conn.settimeout(2)
    with suppress(OSError):
        conn.recv(65536)
    conn.sendall(HTTP_REPLY)
    conn.close()


def http_at_once(conn: socket.socket) -> None:
    """A server that answers HTTP before the client says anything."""
    conn.sendall(HTTP_REPLY)


def silent(conn: socket.socket) -> None:
    """Accepts and never speaks (the connection stays open)."""


@pytest.mark.parametrize("serve", [http_after_request, http_at_once, silent, None])
def test_a_peer_that_is_not_a_scheduler_is_one_error_within_the_timeout(serve):
    with listener(serve) as address:
        start = time.monotonic()
        with (
            pytest.raises(StatemineError, match=f"--dask {address}: not a Dask scheduler"),
            dask_client(address, timeout=2),
        ):
            pass
        elapsed = time.monotonic() - start
    assert elapsed < 2 + 1.5, elapsed


def test_an_http_peer_is_named_as_such():
    with listener(http_at_once) as address, pytest.raises(StatemineError) as err:
        probe_scheduler(address, 2)
    assert "b'HTTP/1.1'" in str(err.value) and "HTTP server" in str(err.value)
    assert "\n" not in str(err.value)


def test_a_real_scheduler_passes_the_probe_and_connects():
    from dask.distributed import LocalCluster

    with LocalCluster(
        n_workers=0,
        processes=False,
        protocol="tcp://",
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
    ) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://127.0.0.1:")
        probe_scheduler(address, 5)
        with dask_client(address, timeout=5) as client:
            assert client.scheduler_info()["address"] == address


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("peers")
    log = d / "a.log"
    log.write_text(
        "STATEMINE t=0 conn=a state=SlowStart\nSTATEMINE t=1 conn=a state=Recovery\n"
        "STATEMINE t=2 conn=a event=Close\n"
    )
    statemine.store_add([log], d / "store", {"env": "x"})
    return d / "store"


def _cli_one_line(store: Path, address: str, out: Path) -> tuple[float, list[str]]:
    start = time.monotonic()
    result = CliRunner().invoke(main, ["infer", str(store), "--out", str(out), "--dask", address])
    elapsed = time.monotonic() - start
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and not out.exists()
    return elapsed, result.stderr.strip().splitlines()


def test_cli_http_peer_is_one_line_exit_2(store, tmp_path):
    with listener(http_after_request) as address:
        elapsed, lines = _cli_one_line(store, address, tmp_path / "o")
    assert len(lines) == 1 and f"--dask {address}: not a Dask scheduler" in lines[0]
    assert elapsed < 10, elapsed


@pytest.mark.slow
def test_cli_silent_peer_is_one_line_exit_2_within_the_documented_10_s(store, tmp_path):
    with listener(silent) as address:
        elapsed, lines = _cli_one_line(store, address, tmp_path / "o")
    assert len(lines) == 1 and "sent nothing within 10 s" in lines[0], lines
    assert elapsed < 10 + 3, elapsed


def test_a_peer_that_greets_like_a_scheduler_then_stalls_ends_within_the_timeout():
    """A real scheduler's first message, replayed by a peer that then says nothing: past
    the probe, Dask's own deadlines (the scheduler info, the stream start) end it."""
    import struct

    from dask.distributed import LocalCluster

    with LocalCluster(
        n_workers=0,
        processes=False,
        protocol="tcp://",
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
    ) as cluster:
        host, port = cluster.scheduler_address[len("tcp://") :].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.settimeout(5)
            head = sock.recv(8, socket.MSG_WAITALL)
            greeting = head + sock.recv(struct.unpack("<Q", head)[0], socket.MSG_WAITALL)
    with listener(lambda conn: conn.sendall(greeting)) as address:
        start = time.monotonic()
        with (
            pytest.raises(StatemineError, match=f"--dask {address}"),
            dask_client(address, timeout=2),
        ):
            pass
        assert time.monotonic() - start < 2 + 3
