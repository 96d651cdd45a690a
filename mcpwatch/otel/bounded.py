"""The HTTP session the OTLP exporters use: a collector's answer is read up to a small cap, never whole.

The SDK's exporters read every response body into memory; a collector (or anything listening at its address) that
answers with hundreds of megabytes would then grow the wrapper by as much. Only the status, a few headers
(`Retry-After`) and at most `RESPONSE_BYTES_MAX` of the body matter; past that, or past the request's timeout, the
rest is left unread and the connection closed. The timeout bounds the whole answer, head included: a socket timeout
alone only bounds the silence between two bytes, so a peer trickling its status line and headers a byte at a time
would hold the exporting thread for ever; at the deadline its socket is shut.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

RESPONSE_BYTES_MAX = 64 * 1024  # an OTLP response is a few bytes (a partial-success message at most)
DEFAULT_TIMEOUT_S = 5.0


class BoundedSession(requests.Session):
    """A `requests.Session` whose responses hold at most `RESPONSE_BYTES_MAX` of body, read within the timeout."""

    def __init__(self, body_max: int = RESPONSE_BYTES_MAX) -> None:
        super().__init__()
        self.body_max = body_max
        self.mount("http://", _DeadlineAdapter())
        self.mount("https://", _DeadlineAdapter())
        self.last_problem: str | None = None  # the last refusal or failure, in words, for status and the log

    def request(self, method: str, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs["stream"] = True
        timeout = kwargs.get("timeout")
        budget = timeout if isinstance(timeout, int | float) and timeout > 0 else DEFAULT_TIMEOUT_S
        started = time.monotonic()
        _request.deadline = started + budget
        try:
            response = super().request(method, url, *args, **kwargs)
        except requests.Timeout:  # silence, or a head trickled past the deadline
            self.last_problem = f"no complete answer within {budget:.3g} s"
            raise
        except requests.ConnectionError:
            self.last_problem = "cannot connect"
            raise
        except requests.RequestException as exc:
            self.last_problem = type(exc).__name__
            raise
        finally:
            _request.deadline = None
        if response.status_code >= 300:
            self.last_problem = f"HTTP {response.status_code} {response.reason or ''}".rstrip()
        body, complete = read_bounded(response.raw, self.body_max, started + budget)
        response._content = body  # what `content`, `text` and `json()` give; the SDK reads nothing else
        response._content_consumed = True
        if not complete:
            response.close()  # the rest is never read: the connection goes with it
        return response


def read_bounded(raw: Any, limit: int, deadline: float) -> tuple[bytes, bool]:
    """Up to `limit` bytes of a urllib3 response (undecoded: a compressed reply cannot expand), and whether that
    was all of it. Each read returns what one receive brings, so a trickling peer is stopped at the deadline."""
    read_some = getattr(raw, "read1", None) or raw.read
    chunks: list[bytes] = []
    size = 0
    try:
        while size <= limit and time.monotonic() < deadline:
            chunk = read_some(min(64 * 1024, limit + 1 - size), decode_content=False)
            if not chunk:
                return b"".join(chunks), True
            chunks.append(chunk)
            size += len(chunk)
    except Exception:  # boundary: a reset or a timeout mid-body is a failed export, told by the status alone
        pass
    return b"".join(chunks)[:limit], False


_request = threading.local()  # the deadline of the request this thread is making (exporters each have a thread)


def _head_by_deadline(connection: HTTPConnection, read_head: Any) -> Any:
    """Read the status line and headers, shutting the socket if the request's deadline passes first."""
    deadline: float | None = getattr(_request, "deadline", None)
    sock = connection.sock
    if deadline is None or sock is None:
        return read_head()
    cut = threading.Event()
    timer = threading.Timer(max(0.0, deadline - time.monotonic()), _shut, (sock, cut))
    timer.daemon = True
    timer.start()
    try:
        head = read_head()
    finally:
        timer.cancel()
    if cut.is_set():  # what was read is a head cut short, whatever http.client made of it
        raise TimeoutError("the answer's head did not end by the deadline")
    return head


def _shut(sock: socket.socket, cut: threading.Event) -> None:
    cut.set()
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed: the answer ended just in time
        pass


class _DeadlineConnection(HTTPConnection):
    def getresponse(self) -> Any:
        return _head_by_deadline(self, super().getresponse)


class _DeadlineTlsConnection(HTTPSConnection):
    def getresponse(self) -> Any:
        return _head_by_deadline(self, super().getresponse)


class _DeadlinePool(HTTPConnectionPool):
    ConnectionCls = _DeadlineConnection


class _DeadlineTlsPool(HTTPSConnectionPool):
    ConnectionCls = _DeadlineTlsConnection


class _DeadlineAdapter(HTTPAdapter):
    """requests' adapter with connections whose head is read by the request's deadline."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _DeadlinePool, "https": _DeadlineTlsPool}
