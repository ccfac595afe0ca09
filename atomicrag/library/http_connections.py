"""The connections of the index server: a threaded HTTP server with a proper listen backlog and a
cap on connections (503 past it, never a reset), and the reading end of a connection with a
whole-request deadline. Nothing here knows what the server serves (``http_server`` does)."""
from __future__ import annotations

import io
import json
import logging
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from atomicrag.library.http_access import error_payload

log = logging.getLogger("atomicrag")


class DeadlineSocket(io.RawIOBase):
    """The connection's reading end with a deadline: every receive waits at most the time left of
    the request, so a client that trickles its request line, headers or body a byte at a time
    cannot hold a thread past ``request_timeout_s`` (a timeout per receive alone would restart
    with each byte). No deadline: the socket's own timeout (the idle wait)."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self.sock = sock
        self.deadline: float | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request did not arrive within the request timeout")
            self.sock.settimeout(left)
        return self.sock.recv_into(buffer)


class CappedHTTPServer(ThreadingHTTPServer):
    """One thread per connection, at most ``max_connections`` of them; a connection beyond that
    gets a 503 from a short-lived thread (no reset), and past ``2 * max_connections`` waiting
    refusals the socket is closed at once (the last resort of a flood)."""

    daemon_threads = True  # an open keep-alive connection does not hold up shutdown
    block_on_close = False
    request_queue_size = 128  # the listen backlog (socketserver's default of 5 reset bursts of clients)

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], *,
                 max_connections: int = 128, idle_timeout_s: float = 15.0, request_timeout_s: float = 30.0) -> None:
        if max_connections < 1 or idle_timeout_s <= 0 or request_timeout_s <= 0:
            raise ValueError("max_connections must be >= 1 and the timeouts > 0")
        self.max_connections = max_connections
        self.idle_timeout_s, self.request_timeout_s = idle_timeout_s, request_timeout_s
        self._count = threading.Lock()
        self.active = 0  # connections being served
        self.refusing = 0  # connections being answered 503
        self.refused = 0  # total 503s (for tests and logs)
        super().__init__(address, handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._count:
            full = self.active >= self.max_connections
            if not full:
                self.active += 1
            elif self.refusing < 2 * self.max_connections:
                self.refusing += 1
            else:
                self.shutdown_request(request)
                return
        target = self._refuse_busy if full else self.process_request_thread
        threading.Thread(target=target, args=(request, client_address), daemon=True).start()

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._count:
                self.active -= 1

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that reset or vanished is routine (logged at debug); anything else is a bug."""
        if isinstance(sys.exc_info()[1], OSError):
            log.debug("connection from %s ended: %s", client_address, sys.exc_info()[1])
        else:
            log.exception("serving %s failed", client_address)

    def _refuse_busy(self, request: socket.socket, _client: Any) -> None:
        """503 to a connection over the cap: read its request head (1 s at most), answer, read
        away the rest, close."""
        try:
            read_away(request, time.monotonic() + 1.0, until=b"\r\n\r\n")
            data = json.dumps(error_payload(f"the server is busy ({self.max_connections} connections); retry",
                                            503, code="server_busy")).encode()
            request.settimeout(1.0)
            request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                            b"Retry-After: 1\r\nConnection: close\r\n"
                            b"Content-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
            request.shutdown(socket.SHUT_WR)
            read_away(request, time.monotonic() + 1.0)
        except OSError:
            pass
        finally:
            request.close()
            with self._count:
                self.refusing -= 1
                self.refused += 1


def read_away(sock: socket.socket, deadline: float, until: bytes | None = None, limit: int = 1 << 20) -> None:
    """Read and drop what a client sends until it closes, ``until`` has arrived, ``limit`` bytes
    or ``deadline`` (a whole deadline: a client trickling bytes cannot hold the thread longer)."""
    tail = b""
    try:
        while limit > 0 and (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            chunk = sock.recv(min(65536, limit))
            if not chunk:
                return
            limit -= len(chunk)
            if until is not None:
                tail = (tail + chunk)[-(len(until) + 65536):]
                if until in tail:
                    return
    except OSError:
        pass


