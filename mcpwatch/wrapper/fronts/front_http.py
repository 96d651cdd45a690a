"""The host side over Streamable HTTP (`--listen http://127.0.0.1:PORT/mcp`).

Each host session is a link into a core of its own, with its own upstream (front_sessions): its `initialize`
reaches that upstream, and nothing its upstream sends reaches another host. A POST carrying requests is answered
on its own SSE stream, which also carries the progress of those requests and closes once they are answered; other
server messages go to the session's GET stream. A batch is answered with a batch (one JSON array) unless something
streams first. 2026-era sessionless requests share one upstream, each answered on its own POST. Every request
passes the FrontGuard (one Host, Host and Origin naming this machine, the bearer token when serving remote hosts);
bodies are capped and read in linear time, heads and connections are bounded by httpserve.limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any
from urllib.parse import urlsplit

from mcpwatch.errors import UserError
from mcpwatch.httpserve.asgi import quiet_server, respond
from mcpwatch.httpserve.bounds import ConnectionLimits
from mcpwatch.httpserve.guard import FrontGuard
from mcpwatch.wire import SUBSCRIPTION_ID_META, modern_version
from mcpwatch.wrapper.core.port import HostPort
from mcpwatch.wrapper.core.pressure import Backpressure, HostQueue
from mcpwatch.wrapper.framing import frames
from mcpwatch.wrapper.framing.batch_answers import BatchAnswers
from mcpwatch.wrapper.framing.json_reply import respond_json
from mcpwatch.wrapper.fronts.front_sessions import HostSession, SessionPool
from mcpwatch.wrapper.tasks.owners import LOCAL, token_principal

SESSION_HEADER = "mcp-session-id"
GET_BUFFER = 1000
GET_BUFFER_BYTES = 4 * 1024 * 1024  # a GET stream not read: what no longer fits is not delivered (send says False)
INVALID_PARAMS = -32602
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024


def parse_listen(url: str) -> tuple[str, int, str]:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # out of range
        port = None
    if parts.scheme != "http" or not parts.hostname or port is None:
        raise UserError(f"--listen must look like http://127.0.0.1:PORT/mcp (a port from 1 to 65535), got {url!r}")
    return parts.hostname, port, parts.path or "/mcp"


class _Stream:
    """One SSE response: the answers (and progress) for the requests of one POST."""

    def __init__(self, request_ids: set[Any], tokens: set[Any], pressure: Backpressure) -> None:
        self.request_ids = request_ids
        self.tokens = tokens
        self.queue = HostQueue(pressure)  # bounded by the backpressure on the upstream
        self.shutdown = False  # ended because the wrapper stops (503), not because the session did (a clean end)

    def release(self, request_id: Any) -> None:
        """The host cancelled this request: no answer is owed (MCP), so once none is left the stream ends."""
        key = frames.id_key(request_id)
        if key in self.request_ids:
            self.request_ids.discard(key)
            if not self.request_ids:
                self.queue.put_nowait(None)


ID_IN_FLIGHT = (
    "Invalid Request: this id is already used by a request of this session still waiting for its answer; give each "
    "request in flight an id of its own (nothing was forwarded)"
)


def _reused_id(requests: list[dict[str, Any]], session: HttpSession) -> Any:
    """The first request id this POST shares with a request of its session still waiting for its answer, or with
    another of its own requests; None when every id is its own. Answers find their POST by id: two requests in flight
    under one id would each be sent the other's answer when the upstream answers them the other way round."""
    seen: set[Any] = set()
    for stream in session.streams:
        seen.update(stream.request_ids)
    for request in requests:
        key = frames.id_key(request["id"])
        if key in seen:
            return request["id"]
        seen.add(key)
    return None


class HttpSession:
    """A host session: the link its core answers through."""

    def __init__(
        self, session_id: str, entry: HostSession, key_prefix: str, principal: str | None = None, *, owner: str = LOCAL
    ) -> None:
        self.session_id = session_id
        self.entry = entry
        self.port: HostPort = entry.core
        self.key_prefix = key_prefix  # request ids in the log: "<session>/<host id>", apart from other hosts'
        # a session id is a fresh uuid4; a sessionless request (no id) proves no host, so nothing is reused for it
        self.connection = f"session {session_id}" if session_id else None
        # what a sessionless request proves about who sent it ("bearer": the front's token; "local": nothing but
        # this machine): with its client's name, whose running bridged task a retried call may attach to
        self.sessionless_principal = principal if not session_id else None
        self.task_principal = owner  # who the front let in, as offered tasks' owners name it (`tasks.owners`)
        self.streams: list[_Stream] = []
        self.get_queue: HostQueue | None = None

    def send(self, message: dict[str, Any]) -> bool:
        if "method" not in message:  # a response: only its request's POST can carry it
            return self._answer(message, None)
        elif message.get("method") == "notifications/progress":
            token = (message.get("params") or {}).get("progressToken")
            for stream in self.streams:
                if token in stream.tokens:
                    stream.queue.put_nowait(message)
                    return True
        elif (listen_id := _subscription_id(message)) is not None:  # a listen stream's frame rides that POST
            key = frames.id_key(listen_id)
            for stream in self.streams:
                if key in stream.request_ids:
                    stream.queue.put_nowait(message)
                    return True
            return False
        get_queue = self.get_queue
        if get_queue is not None and get_queue.qsize() < GET_BUFFER and get_queue.unsent_bytes < GET_BUFFER_BYTES:
            get_queue.put_nowait(message)
            return True
        if "id" in message:  # a server request with no GET stream: the newest POST stream still open for answers
            for stream in reversed(self.streams):
                if stream.request_ids:
                    stream.queue.put_nowait(message)
                    return True
        return False

    def send_raw(self, frame: bytes, message: dict[str, Any]) -> bool:
        """`send` for a plain call's answer already encoded as `frame`: the upstream's bytes with the host's id
        (`framing.splice`), which its POST's stream sends as they are, as the JSON body or an SSE event's data (the
        grammar let no CR or LF in but the last). A batch answered as one array takes `message` instead."""
        return self._answer(message, frame)

    def _answer(self, message: dict[str, Any], frame: bytes | None) -> bool:
        """Queue a response on the stream of the POST that carried its request; False when none is open."""
        key = frames.id_key(message.get("id"))
        for stream in self.streams:
            if key in stream.request_ids:
                stream.queue.put_nowait(message, frame)
                stream.request_ids.discard(key)
                if not stream.request_ids:
                    stream.queue.put_nowait(None)
                return True
        return False

    def release_cancelled(self, items: list[dict[str, Any]]) -> None:
        """The host cancelled these requests (`notifications/cancelled` among `items`): their POSTs owe no answer."""
        for item in items:
            if item.get("method") == "notifications/cancelled" and isinstance(item.get("params"), dict):
                for stream in list(self.streams):
                    stream.release(item["params"].get("requestId"))

    def end_streams(self, *, shutdown: bool = False) -> None:
        """End every open stream: cleanly when only the session ends, with 503 when the wrapper stops."""
        for stream in self.streams:
            stream.shutdown = shutdown
            stream.queue.put_nowait(None)
        if self.get_queue is not None:
            self.get_queue.put_nowait(None)


class HttpFront:
    def __init__(
        self,
        pool: SessionPool,
        listen: str,
        guard: FrontGuard | None = None,
        limits: ConnectionLimits | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ) -> None:
        self.pool = pool
        self.host, self.port, self.path = parse_listen(listen)
        self.guard = guard or FrontGuard()
        self.limits = limits or ConnectionLimits()
        self.max_body_bytes = max_body_bytes
        self.sessions: dict[str, HttpSession] = {}
        self._server: Any = None
        self._stopped = asyncio.Event()
        self._requests = 0  # names sessionless requests in the log
        self.task_principal = token_principal(self.guard.token)  # offered tasks belong to it, and to their session

    async def serve(self) -> None:
        self._server = quiet_server(self.app, self.host, self.port, self.limits)
        expiry = asyncio.ensure_future(self._expire_idle())
        try:
            await self._server.serve()
        finally:
            expiry.cancel()
            self._stopped.set()

    async def _expire_idle(self) -> None:
        """End host sessions (and their upstreams) that sent nothing and held no stream for `session_idle_s`; log
        the refusals of a burst that has stopped."""
        every = min(max(self.pool.idle_s / 4, 0.05), 30.0)
        while True:
            await asyncio.sleep(every)
            self.pool.say_refusals()
            for session_id in self.pool.idle():
                why = f"the host session was idle for {self.pool.idle_s:g} s"
                await self._end_session(session_id, why, cause="expired")

    def _unlink(self, session_id: str) -> bool:
        """Detach a host session from the front: its streams end, its id answers 404 from now on."""
        session = self.sessions.pop(session_id, None)
        if session is None:
            return False
        session.end_streams()
        session.port.detach_link(session)
        return True

    async def _end_session(self, session_id: str, why: str, *, cause: str = "ended") -> bool:
        return self._unlink(session_id) and await self.pool.end(session_id, why, cause=cause)

    async def close(self) -> None:
        """End every open stream, then let the server finish its responses (bounded) before the loop stops."""
        for session in self.sessions.values():
            session.end_streams(shutdown=True)
        if self._server is not None:
            self._server.should_exit = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopped.wait(), 3)

    # ------------------------------------------------------------------ ASGI

    async def app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        raw_headers = scope.get("headers") or []
        refusal = self.guard.refusal(raw_headers)
        if refusal is not None:
            await _plain(send, refusal.status, refusal.text, close=True, raw=list(refusal.headers))
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in raw_headers}
        if scope["path"].rstrip("/") != self.path.rstrip("/"):
            await _plain(send, 404, "Not Found")
            return
        method = scope["method"]
        if method == "POST":
            await self._post(headers, receive, send, _client(scope))
        elif method == "GET":
            await self._get(headers, receive, send)
        elif method == "DELETE":
            ended = await self._end_session(headers.get(SESSION_HEADER, ""), "the host ended its session")
            await _plain(send, 200 if ended else 404, "")
        else:
            await _plain(send, 405, "Method Not Allowed")

    async def _read_body(self, headers: dict[str, str], receive: Any, send: Any) -> bytes | None:
        """The whole body, read in linear time; None (after a 413, or the client's disconnect) past the cap."""
        declared = headers.get("content-length", "")
        too_large = f"Payload Too Large: a request body is at most {self.max_body_bytes} bytes"
        if declared.isascii() and declared.isdigit() and int(declared) > self.max_body_bytes:
            await _plain(send, 413, too_large, close=True)
            return None
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            if len(body) > self.max_body_bytes:
                await _plain(send, 413, too_large, close=True)
                return None
            if not message.get("more_body"):
                return bytes(body)

    def _open_session(self, client: str = "") -> HttpSession | None:
        """A host's `initialize`: a new session with its own upstream. At the `max_sessions` cap a session doing no
        work is reclaimed for it (`SessionPool.reclaimable`); None when every session is busy."""
        if self.pool.full() and (victim := self.pool.reclaimable()) is not None:
            idle_s = self.pool.clock() - self.pool.sessions[victim].last_seen
            self._unlink(victim)
            why = f"reclaimed for a new host at the max_sessions cap ({self.pool.max_sessions}), idle {idle_s:.0f} s"
            self.pool.reclaim(victim, why)
        session_id = uuid.uuid4().hex
        entry = self.pool.open(session_id, client)
        if entry is None:
            return None
        session = HttpSession(session_id, entry, f"{entry.tag}/", owner=self.task_principal)
        self.sessions[session_id] = session
        session.port.attach_link(session)
        return session

    async def _post(self, headers: dict[str, str], receive: Any, send: Any, client: str = "") -> None:
        # A session whose request is still arriving is busy: never reclaimed for a newcomer nor expired meanwhile
        # (its complete request would get 404). The body's own rate bound (httpserve.limits) ends a trickle.
        arriving = self.sessions.get(headers.get(SESSION_HEADER, ""))
        if arriving is not None:
            self.pool.touch(arriving.entry, receiving=1)
        try:
            body = await self._read_body(headers, receive, send)
        finally:
            if arriving is not None:
                self.pool.touch(arriving.entry, receiving=-1)
        if body is None:
            return
        try:
            payload = frames.decode(body)
        except ValueError:
            await respond_json(send, 400, frames.error_response(None, frames.PARSE_ERROR, "Parse error"))
            return
        items = payload if isinstance(payload, list) else [payload]
        invalid = [i for i in items if frames.kind_of(i) == frames.INVALID]
        if invalid or not items:
            bad_id = invalid[0].get("id") if invalid and isinstance(invalid[0], dict) else None
            error = frames.error_response(
                bad_id if frames.valid_id(bad_id) else None, frames.INVALID_REQUEST, "Invalid Request"
            )
            await respond_json(send, 400, error)
            return
        is_init = any(i.get("method") == "initialize" for i in items)
        session = self.sessions.get(headers.get(SESSION_HEADER, ""))
        ephemeral = None
        if is_init:
            session = self._open_session(client)
            if session is None:
                first_id = next((i.get("id") for i in items if i.get("method") == "initialize"), None)
                text = (
                    f"mcpwatch: every host session is busy ({self.pool.max_sessions} open, the [front] max_sessions "
                    "limit, each with a call or task in flight or a request arriving); try again when one is done"
                )
                await respond_json(send, 503, frames.error_response(first_id, frames.INTERNAL_ERROR, text))
                return
        elif session is None and not headers.get(SESSION_HEADER) and all(modern_version(i) is not None for i in items):
            self._requests += 1  # 2026 era: sessionless, answered on this POST (attached below)
            principal = "bearer" if self.guard.token is not None else "local"
            session = ephemeral = HttpSession(
                "", self.pool.shared_session(), f"r{self._requests}/", principal, owner=self.task_principal
            )
        elif session is None:
            status = 404 if headers.get(SESSION_HEADER) else 400
            await respond_json(
                send, status, frames.error_response(None, frames.INVALID_REQUEST, "Bad Request: no valid session")
            )
            return
        self.pool.touch(session.entry)
        session.release_cancelled(items)
        requests = [i for i in items if frames.kind_of(i) == frames.REQUEST]
        extra = {SESSION_HEADER: session.session_id} if session.session_id else {}
        port = session.port
        if not requests:
            for item in items:
                port.host_message(session, item)
            await _plain(send, 202, "", extra)
            return
        reused = _reused_id(requests, session)
        if reused is not None:
            await respond_json(send, 400, frames.error_response(reused, frames.INVALID_REQUEST, ID_IN_FLIGHT))
            return
        tokens = {_progress_token(i) for i in requests} - {None, _BAD_TOKEN}
        stream = _Stream({frames.id_key(i["id"]) for i in requests}, tokens, session.port.pressure)
        session.streams.append(stream)
        self.pool.touch(session.entry, streams=1)
        if ephemeral is not None:
            port.attach_link(ephemeral)  # for as long as its POST is open (detached in the finally below)
        for item in items:
            if frames.kind_of(item) == frames.REQUEST and _progress_token(item) is _BAD_TOKEN:
                problem = "Invalid params: _meta.progressToken must be a string or a number"
                session.send(frames.error_response(item["id"], INVALID_PARAMS, problem))
            else:
                port.host_message(session, item)
        watcher = asyncio.ensure_future(self._on_disconnect(session, stream, receive, cancel=ephemeral is not None))
        try:
            first = await stream.queue.take()
            message = first[0]
            if message is None and stream.shutdown:
                await _plain(send, 503, "Service Unavailable: mcpwatch is shutting down", extra)
            elif message is None:  # cancelled by the host, or its session ended: an event stream that ends
                await _sse(send, stream.queue, extra, [first])
            elif isinstance(payload, list) and "method" not in message:
                await self._answer_batch(send, stream, first, extra)
            elif "method" not in message and not stream.request_ids:
                # The POST's only answer, with nothing streamed before it: plain JSON, which every client reads
                # faster than an event stream (the spec lets the server choose). Its bytes as queued.
                await respond(send, 200, first[1], b"application/json", _encoded(extra))
            else:
                await _sse(send, stream.queue, extra, [first])
        finally:
            if stream in session.streams:
                session.streams.remove(stream)
            stream.queue.close()
            watcher.cancel()
            self.pool.touch(session.entry, streams=-1)
            if ephemeral is not None:
                port.detach_link(ephemeral)

    async def _answer_batch(self, send: Any, stream: _Stream, first: tuple[Any, bytes], extra: dict[str, str]) -> None:
        """A batch's answers as one JSON array once all are in (JSON-RPC's way); if anything is to be streamed first
        (progress, a server request), an event stream instead: the answers gathered so far, then everything else.
        Until then the answers wait outside the stream's queue, so only what the array can carry is held
        (`BatchAnswers`), never the answers themselves."""
        gathered = BatchAnswers(self.max_body_bytes, "[front] max_body_mb")
        message, frame = first
        while message is not None and "method" not in message:
            gathered.add(message)
            message, frame = await stream.queue.take()  # None once all are answered (or shutting down, or closed)
        if message is None and not stream.request_ids:
            await respond(send, 200, gathered.body(), b"application/json", _encoded(extra))
        else:
            await _sse(send, stream.queue, extra, [*((_GATHERED, line) for line in gathered.lines()), (message, frame)])

    async def _on_disconnect(self, session: HttpSession, stream: _Stream, receive: Any, *, cancel: bool) -> None:
        """The host closed its POST before every answer went out: the answers it still waits for, or that wait in
        the queue, cannot reach it, and the log says so (the core sees `send` fail for later ones). In the 2026 era
        a closed POST also cancels its requests (such a host sends no notifications)."""
        await _disconnected(receive)
        if stream in session.streams:
            session.streams.remove(stream)
        while not stream.queue.empty():
            message = stream.queue.get_nowait()
            if message is not None and "method" not in message:
                session.port.warn(f"answer to request {message.get('id')!r} not delivered: the host closed its request")
        if not cancel:
            stream.queue.put_nowait(None)
            return
        for request_id in list(stream.request_ids):
            params = {"requestId": request_id, "reason": "the host closed the request"}
            notice = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
            session.port.host_message(session, notice)
        stream.queue.put_nowait(None)

    async def _get(self, headers: dict[str, str], receive: Any, send: Any) -> None:
        session = self.sessions.get(headers.get(SESSION_HEADER, ""))
        if session is None:
            await _plain(send, 400, "Bad Request: no valid session")
            return
        session.get_queue = queue = HostQueue(session.port.pressure)
        self.pool.touch(session.entry, listening=1)

        async def end_on_disconnect() -> None:  # a host that vanishes without DELETE must not leave this open
            await _disconnected(receive)
            queue.put_nowait(None)

        watcher = asyncio.ensure_future(end_on_disconnect())
        try:
            await _sse(send, queue, {SESSION_HEADER: session.session_id})
        finally:
            watcher.cancel()
            queue.close()
            self.pool.touch(session.entry, listening=-1)
            if session.get_queue is queue:
                session.get_queue = None


def _client(scope: dict[str, Any]) -> str:
    """The peer's address as the server saw it ("127.0.0.1:51234"), for the log; "" when unknown."""
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if isinstance(client, list | tuple) and len(client) == 2 else ""


_GATHERED = object()  # an answer of a batch held as its bytes only (`BatchAnswers.lines`)


def _subscription_id(message: dict[str, Any]) -> Any:
    """The `subscriptions/listen` request a notification belongs to (2026 era), else None."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get(SUBSCRIPTION_ID_META) if isinstance(meta, dict) else None


async def _disconnected(receive: Any) -> None:
    """Return once the client has closed the connection (the request's body is read and ignored meanwhile)."""
    while (await receive())["type"] != "http.disconnect":
        pass


_BAD_TOKEN = object()


def _progress_token(request: dict[str, Any]) -> Any:
    """The request's progress token, None without one, or _BAD_TOKEN for a type MCP does not allow."""
    params = request.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    if token is None or (isinstance(token, str | int | float) and not isinstance(token, bool)):
        return token
    return _BAD_TOKEN


def _encoded(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    """Response headers as ASGI sends them."""
    return [(name.encode(), value.encode()) for name, value in headers.items()]


async def _plain(
    send: Any,
    status: int,
    text: str,
    extra: dict[str, str] | None = None,
    *,
    close: bool = False,
    raw: list[tuple[bytes, bytes]] | None = None,
) -> None:
    headers = _encoded(extra or {}) + (raw or [])
    if close:  # a refused request's connection is not reused (nor is the rest of its body read)
        headers.append((b"connection", b"close"))
    await respond(send, status, text.encode(), b"text/plain", headers)


async def _sse(
    send: Any, queue: HostQueue, extra: dict[str, str], first: list[tuple[Any, bytes]] | None = None
) -> None:
    """An event stream of the queue's messages (after those in `first`, if given) until None, each as the bytes it
    was queued as: one line of JSON (its newline dropped), so one `data:` line."""
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
    headers += _encoded(extra)
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    ready = list(first or [])
    ready.reverse()
    try:
        while True:
            message, frame = ready.pop() if ready else await queue.take()
            if message is None:
                break
            data = b"".join((b"event: message\ndata: ", memoryview(frame)[:-1], b"\n\n"))
            await send({"type": "http.response.body", "body": data, "more_body": True})
    finally:
        with contextlib.suppress(Exception):
            await send({"type": "http.response.body", "body": b"", "more_body": False})
