"""An upstream MCP server over Streamable HTTP: POST per frame (JSON or SSE answers), a GET stream for
server-initiated messages, the session id and protocol-version headers, and reconnection with backoff.

A connection error or an expired session (404) counts as losing the upstream: in-flight calls get a clear error
at once, and the next connection replays the host's handshake to get a fresh session. Any other reply to a request's
POST that does not carry its answer (a redirect, an HTTP error, a 2xx that is neither JSON nor an event stream, a
JSON body that answers something else or cannot be decoded) answers the request at once with a JSON-RPC error saying
what came instead. Bodies and events are held only up to the frame cap (a larger one is dropped as it streams and
answered as an error), and no response is read while the hosts have too much unsent (backpressure).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from mcpwatch.config import Settings
from mcpwatch.operator import UpstreamDetail
from mcpwatch.reliability.backoff import Backoff, Reconnect
from mcpwatch.wire import modern_version
from mcpwatch.wrapper.core import oversize
from mcpwatch.wrapper.core.port import UpstreamPort, retrieve_exception
from mcpwatch.wrapper.framing import frames
from mcpwatch.wrapper.upstreams.http11 import Client, EventStream, Response, TransportError

ERROR_BODY_BYTES = 64 * 1024  # of an HTTP error's body, for the message
ERROR_BODY_WAIT_S = 2.0  # an error's body that takes longer is not waited for: the request is answered without it


def routing_headers(message: dict[str, Any], version: str) -> dict[str, str]:
    """2026 era over HTTP: each request names its version, its method and (for some methods) its target in headers,
    spelled as the SDK's server checks them."""
    from mcp.shared.inbound import NAME_BEARING_METHODS, encode_header_value

    headers = {
        "MCP-Protocol-Version": encode_header_value(version),
        "Mcp-Method": encode_header_value(str(message["method"])),
    }
    name = NAME_BEARING_METHODS.get(str(message.get("method")))
    value = message["params"].get(name) if name else None
    if isinstance(value, str):
        headers["Mcp-Name"] = encode_header_value(value)
    return headers


class HttpUpstream:
    kind = "http"

    def __init__(self, url: str, headers: dict[str, str], core: UpstreamPort, settings: Settings) -> None:
        self.url = url
        self.target = url
        self.core = core
        self.settings = settings
        self.extra_headers = headers
        self.reconnect = Reconnect(
            Backoff(base_s=settings.upstream.backoff_base_s, max_s=settings.tombstones.backoff_max_s)
        )
        self.client = Client()
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.connected = False
        self.closing = False
        self.restarts = 0
        self._lost: asyncio.Future[str] | None = None
        self._posts: set[asyncio.Task[None]] = set()
        self._get_task: asyncio.Task[None] | None = None
        self._initialize_ids: set[Any] = set()
        self._modern_posts: dict[Any, asyncio.Task[None]] = {}  # 2026 era: a request's POST, to abort on cancel

    # ------------------------------------------------------------------ the link the core writes to

    def send(self, message: dict[str, Any]) -> str:
        if not self.connected:
            return "down"
        method = message.get("method")
        if method == "initialize":
            self._initialize_ids.add(message.get("id"))
        version = modern_version(message) if method is not None else None
        if self._modern_posts and method == "notifications/cancelled" and "id" not in message:
            # The 2026 HTTP wire has no client notifications: a request is cancelled by closing its POST.
            task = self._modern_posts.get((message.get("params") or {}).get("requestId"))
            if task is not None:
                task.cancel()
                return "sent"
        task = asyncio.ensure_future(self._post(message, version))
        self._posts.add(task)
        task.add_done_callback(self._posts.discard)
        if version is not None and "id" in message:
            request_id = message["id"]
            self._modern_posts[request_id] = task
            task.add_done_callback(lambda _: self._modern_posts.pop(request_id, None))
        return "sent"

    def pause_reading(self) -> None:
        self.client.pause_reading()

    def resume_reading(self) -> None:
        self.client.resume_reading()

    def describe(self) -> UpstreamDetail:
        return {
            "reading_paused": self.client.reading_paused,
            "session_id": self.session_id,
            "protocol_version": self.protocol_version,
            "open_posts": len(self._posts),
            "restarts": self.restarts,
            "stuck": False,
        }

    def _headers(self, accept: str) -> dict[str, str]:
        headers = {"Accept": accept, **self.extra_headers}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    async def _post(self, message: dict[str, Any], version: str | None = None) -> None:
        headers = self._headers("application/json, text/event-stream")
        headers["Content-Type"] = "application/json"
        if version is not None:
            headers.update(routing_headers(message, version))
        request_id = message["id"] if "id" in message and "method" in message else oversize.UNKNOWN
        try:
            reply = await self.client.request("POST", self.url, headers, frames.encode(message))
            try:
                if reply.status == 404 and self.session_id:
                    if request_id is not oversize.UNKNOWN:
                        self.core.requeue(request_id)  # the server never saw it: it goes again, on the new session
                    self._lose("ended its session (HTTP 404); reconnecting with a new one")
                    return
                if not 200 <= reply.status < 300:
                    if request_id is not oversize.UNKNOWN:
                        self._answer(request_id, await _refusal(reply))
                    return
                session = reply.headers.get("mcp-session-id")
                if session:
                    self.session_id = session
                await self._read_body(reply, request_id)
                if request_id is not oversize.UNKNOWN and not _streams(reply) and self.core.is_waiting(request_id):
                    content_type = reply.headers.get("content-type") or "none"
                    self._answer(request_id, f"upstream HTTP {reply.status} carried no answer to it ({content_type})")
            finally:
                reply.close()
        except TransportError as exc:
            if not self.closing:
                self._lose(f"is unreachable ({exc})")
            return
        if message.get("method") == "notifications/initialized" and self._get_task is None:
            self._get_task = asyncio.ensure_future(self._listen())

    def _answer(self, request_id: Any, text: str) -> None:
        """The request a POST carried is answered with an error in the upstream's name: nothing else will answer it."""
        self.core.upstream_message(frames.error_response(request_id, frames.INTERNAL_ERROR, text))

    async def _read_body(self, reply: Response, request_id: Any = oversize.UNKNOWN) -> None:
        """Deliver what a response carries. An event or body over the cap, or one that cannot be decoded, answers the
        request its start names; one whose id cannot be read, on a request's POST, is taken for that request's."""
        content_type = reply.headers.get("content-type", "")
        cap = self.settings.limits.max_frame_bytes
        if _streams(reply):

            def deliver(data: bytes) -> None:
                self._deliver(data, request_id)

            def over_cap(size: int, head: bytes) -> None:
                self.core.upstream_oversize(size, head, request_id)

            events = EventStream(deliver, over_cap, cap)
            async for chunk in reply.chunks():
                events.feed(chunk)
                if events.dropping and request_id is not oversize.UNKNOWN and not self.core.is_waiting(request_id):
                    return  # its request is answered (the frame's error): an event that never ends is not read on
        elif content_type.startswith("application/json"):
            body, size = await reply.read_capped(cap)
            if size > cap:
                self.core.upstream_oversize(size, body, request_id)
            elif body.strip():
                self._deliver(body, request_id)

    def _deliver(self, data: bytes, request_id: Any = oversize.UNKNOWN) -> None:
        if self._initialize_ids:
            with contextlib.suppress(ValueError):
                message = frames.decode(data)
                if isinstance(message, dict) and message.get("id") in self._initialize_ids:
                    self._initialize_ids.discard(message.get("id"))
                    version = (message.get("result") or {}).get("protocolVersion")
                    if isinstance(version, str):
                        self.protocol_version = version
        self.core.upstream_frame(data, request_id)

    async def _listen(self) -> None:
        """The standalone GET stream: server-initiated notifications and requests (optional for servers)."""
        try:
            reply = await self.client.request("GET", self.url, self._headers("text/event-stream"))
            try:
                if reply.status == 200:  # else 405: the server offers no such stream
                    await self._read_body(reply)
            finally:
                reply.close()
        except TransportError:
            return

    def _lose(self, reason: str) -> None:
        if self._lost is not None and not self._lost.done():
            self._lost.set_result(reason)

    # ------------------------------------------------------------------ lifecycle

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self.closing:
            self.core.upstream_connecting()
            self._lost = loop.create_future()
            self.session_id = None
            self.protocol_version = None
            self.connected = True
            self.reconnect.started(loop.time())
            starting = asyncio.ensure_future(self.core.upstream_started())
            starting.add_done_callback(retrieve_exception)
            waiters: set[asyncio.Future[Any]] = {starting, self._lost}
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            if not starting.done():
                starting.cancel()
            elif starting.exception() is not None:
                self._lose(f"refused the handshake ({starting.exception()})")
            reason = await self._lost
            self.connected = False
            if self._get_task is not None:
                self._get_task.cancel()
                self._get_task = None
            if self.closing:
                break
            self.core.upstream_lost(reason=reason)
            delay = self.reconnect.delay_after_loss(loop.time())
            self.core.upstream_backoff(delay)
            await asyncio.sleep(delay)
            self.restarts += 1

    async def close(self) -> None:
        self.closing = True
        self._lose("closed")
        if self.session_id:
            with contextlib.suppress(TransportError, TimeoutError):
                ending = self.client.request("DELETE", self.url, self._headers("application/json"))
                (await asyncio.wait_for(ending, 2)).close()
        for task in list(self._posts):
            task.cancel()
        if self._get_task is not None:
            self._get_task.cancel()
        self.client.close()


def _streams(reply: Response) -> bool:
    return reply.headers.get("content-type", "").startswith("text/event-stream")


async def _refusal(reply: Response) -> str:
    """What a POST's non-2xx reply said, as the error its request is answered with."""
    status = reply.status
    if 300 <= status < 400:
        target = reply.headers.get("location") or "no Location given"
        return f"upstream HTTP {status}: a redirect to {target}, not followed (give --url that address)"
    try:
        body, _ = await asyncio.wait_for(reply.read_capped(ERROR_BODY_BYTES), ERROR_BODY_WAIT_S)
    except TimeoutError:
        body = b""
    text = body.decode("utf-8", "replace").strip()
    return f"upstream HTTP {status}: {frames.text_of(text, 300)}" if text else f"upstream HTTP {status}"
