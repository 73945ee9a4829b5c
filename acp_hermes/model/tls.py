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


class TlsContext:
    """One TLS context, begun by ``start`` (any number of times) and waited for by ``get``."""

    def __init__(self) -> None:
        self._built: Future[ssl.SSLContext] = Future()
        self._lock = threading.Lock()
        self._started = False

    def start(self) -> None:
        """Begin building it on a thread, unless that is done or under way already."""
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._build, name="TLS context", daemon=True).start()

    def get(self) -> ssl.SSLContext:
        """The context (built here if ``start`` was never called); raises what building it raised."""
        self.start()
        return self._built.result()

    def _build(self) -> None:
        self._built.set_running_or_notify_cancel()
        try:
            import httpx2

            self._built.set_result(httpx2.create_ssl_context())
        except BaseException as exc:  # raised again in get()
            self._built.set_exception(exc)
