"""The model client's TLS context, built on a thread of its own while the SDK is imported.

Building it (the system's CA store read and parsed) is ~20 ms of CPU in OpenSSL, which runs without
holding the GIL: on its own thread it overlaps the SDK's import, which holds it throughout, so a
first prompt sent as a thread opens no longer waits for it. The context is the one the SDK's HTTP
client would build for itself (``httpx2.create_ssl_context``: the same CA files, ``SSL_CERT_FILE``
and ``SSL_CERT_DIR`` honoured), handed to it through the SDK's public ``http_client`` option.
"""

from __future__ import annotations

import ssl
import threading
from concurrent.futures import Future

from acp_hermes_memory.threads import on_thread


class TlsContext:
    """One TLS context, begun by ``start`` (any number of times) and waited for by ``get``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._built: Future[ssl.SSLContext] | None = None

    def start(self) -> Future[ssl.SSLContext]:
        """Begin building it on a thread, unless that is done or under way already."""
        with self._lock:
            if self._built is None:
                self._built = on_thread("TLS context", _ssl_context)
            return self._built

    def get(self) -> ssl.SSLContext:
        """The context (begun here if ``start`` was never called); raises what building it raised."""
        return self.start().result()


def _ssl_context() -> ssl.SSLContext:
    import httpx2

    return httpx2.create_ssl_context()
