"""Servers on the host that a sandboxed command must not reach: each answers every connection once."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def answering(server: socket.socket, reply: bytes) -> Iterator[None]:
    """Accept connections on the bound ``server`` (listening from here on) and send each ``reply``."""
    server.listen()

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:  # closed at the end
                return
            connection.sendall(reply)
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown(socket.SHUT_RDWR)
        server.close()
        thread.join()
