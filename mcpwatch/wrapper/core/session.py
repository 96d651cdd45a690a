"""One upstream connection as the core sees it, across reconnects: its state, the frames waiting for it to be ready,
the host's handshake to replay on a new connection, the id space and its generations, the tombstones of calls it
was sent, and the wrapper's own requests to it.

The core holds one per upstream; nothing here knows about hosts beyond the link a server→client request went to
(only that link may answer it). The HTTP front runs one core, so one of these, per host session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from mcpwatch.config import Settings
from mcpwatch.events import Kind, UpstreamState, UpstreamStateData
from mcpwatch.operator import UpstreamDetail
from mcpwatch.scheduler import Scheduler
from mcpwatch.wire import DEADLINE_META, deadline_ms
from mcpwatch.wrapper.calls.pending import HostLink, Pending
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.core.late import LateFrames
from mcpwatch.wrapper.framing import frames


class UpstreamLink(Protocol):
    kind: str
    target: str

    def send(self, message: dict[str, Any]) -> str:
        """ "sent", "down" (not connected: the caller queues) or "stuck" (the upstream stopped reading)."""
        ...

    def describe(self) -> UpstreamDetail: ...

    def pause_reading(self) -> None:
        """Stop reading what the upstream sends (the hosts have too much unsent); idempotent."""
        ...

    def resume_reading(self) -> None: ...


WAITING_MAX = 10_000  # host frames held while the upstream is unavailable; past it requests fail, notifications go


class UpstreamSession:
    def __init__(
        self,
        *,
        settings: Settings,
        recorder: Recorder,
        scheduler: Scheduler,
        loop: asyncio.AbstractEventLoop,
        late: LateFrames,
        undeliverable: Callable[[Pending, str], None],
    ) -> None:
        """`late`: the tombstones of the calls it was sent, in the id space they share (built first: the failure path
        the session is handed buries calls in them). `undeliverable`: answers a call it can neither send nor queue."""
        self.settings = settings
        self.link: UpstreamLink | None = None
        self.state = UpstreamState.CONNECTING
        self.late = late
        self.ids = late.ids
        self.waiting: list[tuple[Pending | None, dict[str, Any]]] = []  # frames held until the upstream is ready
        self.init_params: dict[str, Any] | None = None  # the host's initialize, replayed to a new connection
        self.init_result: dict[str, Any] | None = None
        self.last_exit: dict[str, Any] = {}
        self.start_failure: str | None = None  # the upstream command could not be started: said at once
        self._recorder = recorder
        self._scheduler = scheduler
        self._loop = loop
        self._undeliverable = undeliverable
        self.internal: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._server_requests: dict[Any, tuple[int, HostLink]] = {}
        self._connected_once = False
        self._propagate = settings.deadline.propagate
        self._queue_limit_s = settings.tombstones.init_timeout_s + settings.tombstones.backoff_max_s

    def capabilities(self) -> Any:
        """What the upstream declared in its `initialize` answer (None before it answered)."""
        return (self.init_result or {}).get("capabilities")

    @property
    def ready(self) -> bool:
        return self.link is not None and self.state == UpstreamState.READY

    # ------------------------------------------------------------------ sending

    def send(self, pending: Pending | None, message: dict[str, Any]) -> None:
        """Send now or queue; a call the upstream cannot take (stuck, or cannot be started) is answered at once."""
        outcome = self.transmit(pending, message)
        if pending is not None and outcome not in ("sent", "queued"):
            self._undeliverable(pending, self.refusal_text(outcome))

    def refusal_text(self, outcome: str) -> str:
        """Why a call that `transmit` did not send or queue is answered at once."""
        if outcome == "stuck":
            return self.stuck_text()
        if outcome == "unstartable" and self.start_failure is not None:
            return self.start_failure
        return f"{self.unavailable_text()}; {WAITING_MAX} frames wait for it already"

    def transmit(self, pending: Pending | None, message: dict[str, Any]) -> str:
        """Send now, or queue until the upstream is ready: "sent", "queued", or "stuck" / "unstartable" / "full"
        (the caller fails it; nothing waits for an upstream whose command cannot even be started)."""
        link = self.link
        if link is None or self.state != UpstreamState.READY:
            if self.start_failure is not None:
                return "unstartable"
            return "queued" if self.queue(pending, message) else "full"
        if pending is not None and pending.budget is not None and self._propagate:
            self._stamp_time_left(pending, message)
        outcome = link.send(message)
        if outcome == "sent":
            if pending is not None:
                pending.sent = True
                if pending.budget is None and pending.timer is not None:  # its wait limit was for the queue only
                    pending.timer.cancel()
                    pending.timer = None
            return outcome
        return self.unsent(pending, message, outcome)

    def unsent(self, pending: Pending | None, message: dict[str, Any], outcome: str) -> str:
        """What `transmit` makes of a frame the link did not send: queued while the link is down, else `outcome`."""
        if outcome == "down":
            return "queued" if self.queue(pending, message) else "full"
        return outcome

    def send_direct(self, message: dict[str, Any]) -> None:
        """A frame that is only worth sending now (a cancel, an answer to a server request): never queued."""
        if self.ready:
            self.link.send(message)  # type: ignore[union-attr]  # ready means a link is attached

    def stuck_text(self) -> str:
        unsent = self.link.describe().get("unsent_bytes", 0) if self.link is not None else 0
        return f"the upstream MCP server is not reading its input ({unsent} bytes unsent)"

    def _stamp_time_left(self, pending: Pending, message: dict[str, Any]) -> None:
        """The deadline a tools/call carries upstream is the time left as it leaves (less after a wait in the queue)."""
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        seconds = pending.budget.seconds if pending.budget is not None else None
        if isinstance(meta, dict) and DEADLINE_META in meta and seconds is not None:
            meta[DEADLINE_META] = deadline_ms(seconds - (self._scheduler.time() - pending.started))

    def queue(self, pending: Pending | None, message: dict[str, Any]) -> bool:
        """Hold a frame until the upstream is ready. A tools/call waits within its budget; any other request gets
        a bound of its own (the handshake timeout plus the longest reconnect delay), so nothing waits for ever.
        False (nothing held) once WAITING_MAX frames wait."""
        if len(self.waiting) >= WAITING_MAX:
            self.waiting = [(p, m) for p, m in self.waiting if p is None or p.open]
            if len(self.waiting) >= WAITING_MAX:  # a host sending on and on while the upstream is away
                return False
        self.waiting.append((pending, message))
        if pending is not None and pending.timer is None and pending.due is None:  # a deadline bounds it already
            limit = self._queue_limit_s
            pending.timer = self._scheduler.call_later(limit, self._queue_timeout, pending, limit)
        return True

    def _queue_timeout(self, pending: Pending, limit: float) -> None:
        if pending.open and not pending.sent:
            self._undeliverable(pending, f"{self.unavailable_text()} for {limit:g} s")

    def flush(self) -> None:
        waiting, self.waiting = self.waiting, []
        for pending, message in waiting:
            if pending is not None and not pending.open:
                continue  # answered meanwhile (deadline, cancel)
            self.send(pending, message)

    def requeue(self, pending: Pending | None) -> bool:
        """A request the upstream never received (its connection was gone): send it again on the next one."""
        if pending is None or not pending.sent:
            return False
        pending.sent = False
        if not self.queue(pending, pending.message):
            self._undeliverable(pending, self.refusal_text("full"))
        return True

    # ------------------------------------------------------------------ server→client requests

    def note_server_request(self, request_id: Any, link: HostLink) -> None:
        self._server_requests[frames.id_key(request_id)] = (self.ids.generation, link)

    def forget_server_request(self, request_id: Any) -> None:
        self._server_requests.pop(frames.id_key(request_id), None)

    def take_server_request(self, request_id: Any, link: HostLink) -> bool:
        """Whether a host's answer is for a request of the current connection (its requester is still there) that
        was sent to this very host: any other host's answer, even with a guessed id, is ignored."""
        key = frames.id_key(request_id)
        entry = self._server_requests.get(key)
        if entry is None or entry[1] is not link:
            return False
        del self._server_requests[key]
        return entry[0] == self.ids.generation

    # ------------------------------------------------------------------ lifecycle

    def connecting(self) -> int:
        generation = self.ids.new_generation() if self._connected_once else self.ids.generation
        self._connected_once = True
        self.start_failure = None  # this attempt may start it; requests wait for its outcome (a moment)
        self.set_state(UpstreamState.CONNECTING, generation=generation)
        return generation

    async def started(self) -> None:
        """A new upstream connection is up: replay the host's handshake if it completed on an earlier connection
        (a host initialize still waiting in the queue goes through itself: a server must see it only once), then
        flush the queue."""
        if self.init_params is not None and self.init_result is not None:
            timeout = self.settings.tombstones.init_timeout_s
            response = await self.request("initialize", self.init_params, timeout, force=True)
            if response is None or "error" in response:
                raise ConnectionError(f"the upstream refused the replayed initialize: {response}")
            self.link.send({"jsonrpc": "2.0", "method": "notifications/initialized"})  # type: ignore[union-attr]  # ready means a link is attached
        self.set_state(UpstreamState.READY, generation=self.ids.generation)
        self.flush()

    def lost(self, reason: str, exit_code: int | None, stderr_tail: list[str]) -> str:
        """The connection is gone: say so, fail the wrapper's own requests; returns the text hosts are told."""
        self.last_exit = {"reason": reason, "exit_code": exit_code, "stderr_tail": stderr_tail}
        self.set_state(
            UpstreamState.CLOSED,
            generation=self.ids.generation,
            reason=reason,
            exit_code=exit_code,
            stderr_tail=stderr_tail,
        )
        text = f"the upstream MCP server {reason}"
        if exit_code is not None:
            text += f" (exit code {exit_code})"
        if stderr_tail:
            text += "; its last stderr lines: " + " | ".join(stderr_tail[-5:])
        for future in self.internal.values():
            if not future.done():
                future.set_exception(ConnectionError(text))
        self.internal.clear()
        self._server_requests.clear()
        return text

    def backoff(self, retry_in_s: float) -> None:
        self.set_state(UpstreamState.BACKOFF, generation=self.ids.generation, retry_in_s=round(retry_in_s, 3))

    def set_state(self, state: UpstreamState, **data: Any) -> None:
        self.state = state
        event = UpstreamStateData(state=state.value, **data)  # type: ignore[typeddict-item]  # callers pass UpstreamStateData's other keys
        self._recorder.emit(Kind.UPSTREAM_STATE, **event)

    def unavailable_text(self) -> str:
        text = f"the upstream MCP server was not available (state: {self.state.value})"
        if self.last_exit.get("exit_code") is not None:
            text += f"; it last exited with code {self.last_exit['exit_code']}"
        return text

    # ------------------------------------------------------------------ the wrapper's own requests

    def take_internal(self, up_id: Any) -> asyncio.Future[dict[str, Any]] | None:
        """The wrapper's own request waiting for this id, taken (the caller answers it)."""
        return self.internal.pop(up_id, None) if type(up_id) is int else None

    def has_internal(self, up_id: Any) -> bool:
        return up_id in self.internal

    def answer_internal(self, message: dict[str, Any]) -> bool:
        """A response to one of the wrapper's own requests (handshake replay, health check) goes to its waiter."""
        up_id = message["id"]
        future = self.internal.pop(up_id, None) if isinstance(up_id, int) else None
        if future is None:
            return False
        if not future.done():
            future.set_result(message)
        return True

    async def request_when_ready(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """The wrapper's own request, held in the queue as a host's is until the upstream is ready; a lost upstream
        fails it (the caller bounds the wait)."""
        up_id = self.ids.allocate()
        future: asyncio.Future[dict[str, Any]] = self._loop.create_future()
        self.internal[up_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": up_id, "method": method}
        if params is not None:
            message["params"] = params
        outcome = self.transmit(None, message)
        if outcome not in ("sent", "queued"):
            self.internal.pop(up_id, None)
            raise ConnectionError(self.refusal_text(outcome))
        try:
            return await future
        finally:
            self.internal.pop(up_id, None)

    async def request(
        self, method: str, params: dict[str, Any] | None, timeout: float, *, force: bool = False
    ) -> dict[str, Any] | None:
        if self.link is None or (self.state != UpstreamState.READY and not force):
            raise ConnectionError(self.unavailable_text())
        up_id = self.ids.allocate()
        future: asyncio.Future[dict[str, Any]] = self._loop.create_future()
        self.internal[up_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": up_id, "method": method}
        if params is not None:
            message["params"] = params
        if self.link.send(message) != "sent":
            self.internal.pop(up_id, None)
            raise ConnectionError(self.unavailable_text())
        try:
            return await asyncio.wait_for(future, timeout)
        except (TimeoutError, asyncio.CancelledError):  # its asker gave up: nothing waits for the answer any more
            self.internal.pop(up_id, None)
            raise
