"""Every wrapper event goes through here: numbered, kept in a ring for the operator stream, sent to the log.

`emit` is on the hot path of every forwarded frame, so it only builds the event and appends; the log's writer
thread does the encoding and the inserts.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any, Protocol

from mcpwatch.clock import SYSTEM_CLOCK, Clock
from mcpwatch.events import Event, Kind
from mcpwatch.wrapper.framing.frames import KEY_MAX, bounded_key


class EventSink(Protocol):
    def emit(self, event: Event) -> None: ...


class Tee:
    """Several sinks behind one (the log and the OpenTelemetry export)."""

    def __init__(self, *sinks: EventSink) -> None:
        self._sinks = sinks

    def emit(self, event: Event) -> None:
        for sink in self._sinks:
            sink.emit(event)


RING_SIZE = 10_000  # ~1 KB of resident memory per event: ~10 MB, within the wrapper's 60 MB (bench memory)


class Recorder:
    def __init__(
        self,
        session_id: str,
        sink: EventSink | None,
        *,
        clock: Clock = SYSTEM_CLOCK,
        ring_size: int = RING_SIZE,
    ) -> None:
        self.session_id = session_id
        self._sink = sink
        self.clock = clock
        # The system clock's own functions when it is the system clock: no Python frame per event on the hot path.
        self._wall, self._monotonic = (
            (time.time, time.monotonic) if clock is SYSTEM_CLOCK else (clock.time, clock.monotonic)
        )
        self._start = clock.monotonic()
        self._seq = 0
        self._ring: deque[Event] = deque(maxlen=ring_size)
        self._waiters: list[asyncio.Future[None]] = []

    @property
    def seq(self) -> int:
        return self._seq

    def mono(self) -> float:
        """Seconds since the session started, the time axis of every event and of replay."""
        return self.clock.monotonic() - self._start

    def emit(
        self,
        kind: str,
        *,
        request_id: str | None = None,
        tool: str | None = None,
        model: str | None = None,
        **data: Any,
    ) -> Event:
        self._seq += 1
        if tool is not None and len(tool) > KEY_MAX:  # a host names the tool: the ring holds 10,000 events
            tool = bounded_key(tool)
        event = Event(
            kind,
            self.session_id,
            self._wall(),
            self._monotonic() - self._start,
            self._seq,
            request_id,
            tool,
            model,
            data,
        )
        self._ring.append(event)
        sink = self._sink
        if sink is not None:
            sink.emit(event)
        if self._waiters:
            waiters, self._waiters = self._waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)
        return event

    def warn(self, message: str) -> None:
        """A `warning` event: something the wrapper handled that the operator should know."""
        self.emit(Kind.WARNING, message=message)

    def since(self, after: int, limit: int) -> list[Event]:
        """Events with seq > after still in the ring, oldest first (older ones are in the log)."""
        ring = self._ring
        if not ring or after >= self._seq:
            return []
        first = ring[0].seq
        start = max(0, after + 1 - first)
        return [ring[i] for i in range(start, min(len(ring), start + limit))]

    async def wait_for(self, after: int, limit: int, wait_s: float) -> list[Event]:
        """Long poll: return at once if there is anything after `after`, else wait up to `wait_s`."""
        events = self.since(after, limit)
        if events or wait_s <= 0:
            return events
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter, wait_s)
        except TimeoutError:
            pass
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
        return self.since(after, limit)


class HostSessionRecorder(Recorder):
    """The recorder of one host session's core: the wrapper's own (one numbering, one ring, one log), with every
    event stamped `host_session`, so the console and reports never mix two hosts' calls."""

    def __init__(self, base: Recorder, host_session: str) -> None:
        self.base = base
        self.host_session = host_session

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)

    @property
    def seq(self) -> int:
        return self.base.seq

    def mono(self) -> float:
        return self.base.mono()

    def emit(
        self,
        kind: str,
        *,
        request_id: str | None = None,
        tool: str | None = None,
        model: str | None = None,
        **data: Any,
    ) -> Event:
        data["host_session"] = self.host_session  # the short name, even where a part knows the whole session id
        return self.base.emit(kind, request_id=request_id, tool=tool, model=model, **data)

    def since(self, after: int, limit: int) -> list[Event]:
        return self.base.since(after, limit)

    async def wait_for(self, after: int, limit: int, wait_s: float) -> list[Event]:
        return await self.base.wait_for(after, limit, wait_s)
