"""Backpressure from the hosts to the upstream: what a host has not read yet is bounded, whatever the upstream sends.

Each host link reports its unsent bytes (its transport's buffer and its outbox). Above the high-water mark, summed
over hosts, the upstream is not read any more (its pipe or socket fills and the upstream's own writes block) until
the hosts drain below the low-water mark. While a host's frames wait in its outbox, a progress notification
replaces an older one for the same token still waiting there: the host is told the latest, not every step.
Responses and every other message wait in turn, never dropped.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from mcpwatch.operator import BackpressureStatus
from mcpwatch.wrapper.framing import frames

HIGH_WATER_BYTES = 4 * 1024 * 1024
LOW_WATER_BYTES = 1024 * 1024
LOG_EVERY_S = 10.0  # a host reading slowly pauses and resumes the upstream often: one warning per this many seconds


def progress_key(message: Any) -> tuple[bool, Any] | None:
    """What identifies a progress notification's stream (its token, "7" apart from 7), else None."""
    if not isinstance(message, dict) or message.get("method") != "notifications/progress":
        return None
    params = message.get("params")
    token = params.get("progressToken") if isinstance(params, dict) else None
    if isinstance(token, str) or (isinstance(token, int) and not isinstance(token, bool)):
        return (isinstance(token, str), token)
    return None


class Outbox:
    """Frames waiting for one host, in order, with their encoded size; progress coalesced per token."""

    __slots__ = ("_items", "_progress", "bytes", "coalesced")

    def __init__(self) -> None:
        self._items: deque[list[Any]] = deque()  # [message, data, progress key]
        self._progress: dict[tuple[bool, Any], list[Any]] = {}
        self.bytes = 0
        self.coalesced = 0

    def __len__(self) -> int:
        return len(self._items)

    def push(self, message: Any, data: bytes, *, keep_message: bool = True) -> bool:
        """Queue a frame; True when it replaced an older progress notification for the same token.

        The bytes are copied: orjson's output keeps the over-allocated buffer it was encoded in (kilobytes for a
        frame of a few hundred bytes), which a queue of thousands would multiply. Without `keep_message`, only the
        bytes are kept (pop gives None for the message)."""
        key = progress_key(message)
        data = bytes(memoryview(data))
        if not keep_message:
            message = None
        if key is not None:
            slot = self._progress.get(key)
            if slot is not None:
                self.bytes += len(data) - len(slot[1])
                slot[0], slot[1] = message, data
                self.coalesced += 1
                return True
        slot = [message, data, key]
        self._items.append(slot)
        if key is not None:
            self._progress[key] = slot
        self.bytes += len(data)
        return False

    def pop(self) -> tuple[Any, bytes]:
        message, data, key = self._items.popleft()
        if key is not None:
            self._progress.pop(key, None)
        self.bytes -= len(data)
        return message, data

    def clear(self) -> None:
        self._items.clear()
        self._progress.clear()
        self.bytes = 0


class Pausable(Protocol):
    """An upstream link whose reading can be paused."""

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...


class Backpressure:
    """Unsent bytes of every host, summed; pauses and resumes reading the upstream around the two marks."""

    def __init__(
        self,
        *,
        clock: Callable[[], float],
        warn: Callable[[str], None],
        counters: Any,
        high_water: int = HIGH_WATER_BYTES,
        low_water: int = LOW_WATER_BYTES,
    ) -> None:
        self.clock = clock
        self.warn = warn
        self.counters = counters  # its progress_coalesced and upstream_pauses go to status and session_end
        self.high_water = high_water
        self.low_water = low_water
        self.upstream: Pausable | None = None
        self._unsent: dict[int, int] = {}
        self.total = 0
        self.peak = 0
        self.paused = False
        self._paused_at = 0.0
        self._paused_s = 0.0
        self._logged_at: float | None = None

    def set_unsent(self, link: object, unsent: int) -> None:
        """A host link's unsent bytes now (0 once it is gone or drained)."""
        key = id(link)
        before = self._unsent.pop(key, 0)
        if unsent > 0:
            self._unsent[key] = unsent
        self.total += unsent - before
        if self.total > self.peak:
            self.peak = self.total
        if self.total > self.high_water:
            if self.upstream is not None:
                self.upstream.pause_reading()  # again after a respawn: a new process starts unpaused
            if not self.paused:
                self._pause()
        elif self.paused and self.total <= self.low_water:
            self._resume()

    def note_coalesced(self, count: int = 1) -> None:
        self.counters.progress_coalesced += count
        self._maybe_log("a host reads slower than progress arrives: waiting progress is replaced by the latest")

    def _pause(self) -> None:
        self.paused = True
        self.counters.upstream_pauses += 1
        self._paused_at = self.clock()
        self._maybe_log(
            f"a host is not reading fast enough ({self.total} bytes unsent, over the mark of "
            f"{self.high_water} bytes): reading from the upstream MCP server paused until it drains"
        )

    def _resume(self) -> None:
        self.paused = False
        self._paused_s += self.clock() - self._paused_at
        if self.upstream is not None:
            self.upstream.resume_reading()

    def _maybe_log(self, what: str) -> None:
        now = self.clock()
        if self._logged_at is not None and now - self._logged_at < LOG_EVERY_S:
            return
        self._logged_at = now
        counters = self.counters
        self.warn(
            f"{what}; so far {counters.upstream_pauses} pause(s), "
            f"{counters.progress_coalesced} progress notification(s) coalesced"
        )

    def describe(self) -> BackpressureStatus:
        paused_s = self._paused_s + (self.clock() - self._paused_at if self.paused else 0.0)
        return {
            "unsent_bytes": self.total,
            "peak_unsent_bytes": self.peak,
            "high_water_bytes": self.high_water,
            "paused": self.paused,
            "pauses": self.counters.upstream_pauses,
            "paused_s": round(paused_s, 3),
            "progress_coalesced": self.counters.progress_coalesced,
        }


class HostQueue:
    """What the HTTP front holds for one stream of a host until the stream takes it: in order, progress coalesced,
    its bytes counted as unsent for the backpressure. A `None` put ends the stream (after what came before it)."""

    def __init__(self, pressure: Backpressure) -> None:
        self._outbox = Outbox()
        self._pressure = pressure
        self._waiter: asyncio.Future[None] | None = None

    def qsize(self) -> int:
        return len(self._outbox)

    @property
    def unsent_bytes(self) -> int:
        return self._outbox.bytes

    def put_nowait(self, message: Any, frame: bytes | None = None) -> None:
        """Queue `message` encoded once here (the stream sends these bytes, `take`), or as `frame` when it is
        already encoded (a plain call's answer in the upstream's bytes, `HttpSession.send_raw`)."""
        if frame is None:
            frame = b"" if message is None else frames.encode(message)  # None: the end of the stream, no bytes
        if self._outbox.push(message, frame):
            self._pressure.note_coalesced()
        self._pressure.set_unsent(self, self._outbox.bytes)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def empty(self) -> bool:
        return not self._outbox

    def get_nowait(self) -> Any:
        if not self._outbox:
            raise asyncio.QueueEmpty
        message, _ = self._outbox.pop()
        self._pressure.set_unsent(self, self._outbox.bytes)
        return message

    async def take(self) -> tuple[Any, bytes]:
        """The next message and its bytes as queued (its frame, newline included; b"" for the None that ends)."""
        while not self._outbox:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        taken = self._outbox.pop()
        self._pressure.set_unsent(self, self._outbox.bytes)
        return taken

    def close(self) -> None:
        """The stream is gone: what it held is let go and no longer counts."""
        self._outbox.clear()
        self._pressure.set_unsent(self, 0)
