"""One aioquic connection over loopback, unmodified aioquic: the server sends BYTES on
the stream the client opens; both sides write their qlog (aioquic's QuicFileLogger).

``python3 aioquic_pair.py LISTEN CONNECT BYTES OUT_DIR CC`` (run with the interpreter of
a virtual environment holding the aioquic version wanted; CC ``reno`` or ``cubic``;
LISTEN the server's port, CONNECT the port the client sends to, e.g. relay.py's).
The certificate is statemine's lab certificate (statemine/lab/data), given by the
environment variables CORPUS_CERT and CORPUS_KEY.
"""

from __future__ import annotations

import asyncio
import os
import sys

from aioquic.asyncio import QuicConnectionProtocol, connect, serve
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import StreamDataReceived
from aioquic.quic.logger import QuicFileLogger


class Sender(QuicConnectionProtocol):
    """The server: answers the client's first stream data with ``size`` bytes."""

    size = 0

    def quic_event_received(self, event: object) -> None:
        if isinstance(event, StreamDataReceived) and event.end_stream:
            self._quic.send_stream_data(event.stream_id, b"x" * self.size, end_stream=True)
            self.transmit()


async def run(listen: int, port: int, size: int, out: str, cc: str) -> None:
    def config(client: bool) -> QuicConfiguration:
        extra = {"congestion_control_algorithm": cc} if cc != "default" else {}
        side = os.path.join(out, "client" if client else "server")
        os.makedirs(side, exist_ok=True)
        return QuicConfiguration(
            is_client=client, alpn_protocols=["corpus"], quic_logger=QuicFileLogger(side), **extra
        )

    server_config = config(False)
    server_config.load_cert_chain(os.environ["CORPUS_CERT"], os.environ["CORPUS_KEY"])
    Sender.size = size
    server = await serve("127.0.0.1", listen, configuration=server_config, create_protocol=Sender)
    client_config = config(True)
    client_config.verify_mode = 0  # the lab's self-signed certificate (ssl.CERT_NONE)
    async with connect("127.0.0.1", port, configuration=client_config) as client:
        reader, writer = await client.create_stream()
        writer.write_eof()
        got = len(await reader.read())
        while got < size:
            chunk = await reader.read()
            if not chunk:
                break
            got += len(chunk)
        assert got == size, (got, size)
    await asyncio.sleep(1.0)  # the server's connection closes and its qlog is written
    server.close()


if __name__ == "__main__":
    a = sys.argv[1:]
    asyncio.run(run(int(a[0]), int(a[1]), int(a[2]), a[3], a[4]))
