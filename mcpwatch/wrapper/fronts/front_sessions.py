"""The HTTP front's host sessions, each with a core and an upstream of its own.

Hosts on one front must not see each other: a server→client request, a notification, a protocol version or a
capability of one host's upstream session must never reach another. So each 2025-era host session (its
`initialize`) gets its own core (ids, generations, tombstones, handshake replay) and its own upstream (a process
for stdio, an MCP session for HTTP), up to `[front] max_sessions`; a session ends on DELETE, or after
`[front] session_idle_s` with no request and no open stream, and its upstream with it. Many hosts exit without
DELETE, so at the cap a session doing no work is reclaimed for the newcomer: only when every session is busy (a
call in flight, a task, a POST being answered or a request body still arriving) is a newcomer refused. A GET
stream is a host listening, not working: a process holding every slot with GET streams alone cannot keep newcomers
out. Among the sessions doing no work, those with no stream at all go first, then the idle longest. Addresses prove
nothing on loopback (every local process is 127.0.0.1, and may bind any 127.x address), so the rule is by work,
never by client. 2026-era requests carry their own version and capabilities and share one upstream, started when
the first of them arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcpwatch.wrapper.calls.pending import Counters
from mcpwatch.wrapper.core.port import retrieve_exception
from mcpwatch.wrapper.core.pump import WrapperCore

SHARED_TAG = "sessionless"
CLOSE_TIMEOUT_S = 10.0
REFUSAL_EVENT_EVERY_S = 1.0


@dataclass(eq=False)
class HostSession:
    """One host session's core and upstream, and when the host was last seen."""

    tag: str  # the short name events and request ids carry (never the whole session id: it admits a host)
    core: WrapperCore
    upstream: Any
    task: asyncio.Task[None] | None
    last_seen: float
    streams: int = 0  # open POST answer streams
    listening: int = 0  # open GET streams: the host waits for server messages (not idle, but not working)
    receiving: int = 0  # request bodies still arriving: a request is on its way, so the session is working

    @property
    def busy(self) -> bool:
        """A request arriving or being answered, a call in flight or a task the host runs upstream (its call has
        left the pending table; the host polls between whiles): the host is using it, so it is never reclaimed."""
        return self.streams > 0 or self.receiving > 0 or len(self.core.table) > 0 or len(self.core.tasks) > 0

    def start(self) -> None:
        if self.task is None:
            self.task = asyncio.ensure_future(self.upstream.run())
            self.task.add_done_callback(retrieve_exception)

    async def stop(self, why: str) -> None:
        """Cancel its calls upstream, answer its host, and stop its upstream (bounded)."""
        self.core.shutdown(why)
        if self.task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.upstream.close(), CLOSE_TIMEOUT_S)
            self.task.cancel()


class SessionPool:
    def __init__(
        self,
        *,
        make_core: Callable[[str], WrapperCore],
        on_refused: Callable[[str, int, int, int], object] | None = None,
        make_upstream: Callable[[WrapperCore], Any],
        shared_core: WrapperCore,
        max_sessions: int,
        idle_s: float,
        clock: Callable[[], float],
    ) -> None:
        self._make_core = make_core
        self._make_upstream = make_upstream
        self._on_refused = on_refused  # (why, open, max, refused): the wrapper logs refused newcomers as an event
        self._refusals_unsaid = 0  # refused since the last event (one a second at most: a flood is not a log flood)
        self._refusal_said_at: float | None = None
        self.max_sessions = max_sessions
        self.idle_s = idle_s
        self.clock = clock
        self.sessions: dict[str, HostSession] = {}
        self.shared = self._entry(SHARED_TAG, shared_core)
        self._stopping: set[asyncio.Future[None]] = set()  # reclaimed sessions' upstreams, stopping
        self.retired = Counters()  # the counts of ended sessions, kept in the wrapper's totals
        self.opened = 0
        self.expired = 0
        self.reclaimed = 0
        self.refused = 0

    def _entry(self, tag: str, core: WrapperCore) -> HostSession:
        upstream = self._make_upstream(core)
        core.attach_upstream(upstream)
        return HostSession(tag, core, upstream, None, self.clock())

    def full(self) -> bool:
        return len(self.sessions) >= self.max_sessions

    def reclaimable(self) -> str | None:
        """The session to make room for a newcomer at the cap, or None: one doing no work (`busy`), a session with
        no stream at all before one that only listens, the idle longest first."""
        idle = [(entry.listening > 0, entry.last_seen, sid) for sid, entry in self.sessions.items() if not entry.busy]
        return min(idle)[2] if idle else None

    def open(self, session_id: str, client: str = "") -> HostSession | None:
        """A new host session with its own upstream (started now); None when `max_sessions` are open."""
        if self.full():
            self.refused += 1
            self._say_refused(client)
            return None
        tag = session_id[:8]
        entry = self._entry(tag, self._make_core(tag))
        self.sessions[session_id] = entry
        self.opened += 1
        entry.start()
        return entry

    def _say_refused(self, client: str) -> None:
        """One event for the refusals of the last REFUSAL_EVENT_EVERY_S at most, with how many it stands for: a
        process hammering `initialize` at a full front costs a counter, not a log row per request."""
        self._refusals_unsaid += 1
        self._say(f"a new host session{f' from {client}' if client else ''} was refused: every session is busy")

    def say_refusals(self, *, now_or_never: bool = False) -> None:
        """Log the refusals not said yet once their second has passed (the front's periodic check calls this) or,
        closing, at once: a burst that stops is in the log too, so the events' `refused` add up to the counter."""
        if self._refusals_unsaid:
            self._say("host sessions were refused: every session is busy", force=now_or_never)

    def _say(self, why: str, *, force: bool = False) -> None:
        now = self.clock()
        if self._on_refused is None or (
            not force and self._refusal_said_at is not None and now - self._refusal_said_at < REFUSAL_EVENT_EVERY_S
        ):
            return
        if self._refusals_unsaid > 1:
            why += f" ({self._refusals_unsaid} refused since the last such event)"
        self._on_refused(why, len(self.sessions), self.max_sessions, self._refusals_unsaid)
        self._refusal_said_at, self._refusals_unsaid = now, 0

    def shared_session(self) -> HostSession:
        """The upstream 2026-era requests share, started on first use."""
        self.shared.start()
        self.shared.last_seen = self.clock()
        return self.shared

    def touch(self, entry: HostSession, streams: int = 0, listening: int = 0, receiving: int = 0) -> None:
        entry.last_seen = self.clock()
        entry.streams += streams
        entry.listening += listening
        entry.receiving += receiving

    def idle(self) -> list[str]:
        """Sessions with no request, no request arriving and no open stream for `idle_s`."""
        cutoff = self.clock() - self.idle_s
        return [
            sid
            for sid, e in self.sessions.items()
            if e.streams <= 0 and e.listening <= 0 and e.receiving <= 0 and e.last_seen <= cutoff
        ]

    def retire(self, session_id: str, why: str, *, cause: str = "ended") -> HostSession | None:
        """Take a session out of the pool at once (its id answers 404 from now on); `stop` it next. `cause` is
        counted: "expired" (idle) or "reclaimed" (room for a newcomer), both logged as a warning saying why, since
        the host did not ask for them; or "ended" (DELETE, shutdown)."""
        entry = self.sessions.pop(session_id, None)
        if entry is None:
            return None
        self.expired += cause == "expired"
        self.reclaimed += cause == "reclaimed"
        if cause != "ended":
            entry.core.warn(f"host session {entry.tag} ended: {why}")
        return entry

    async def stop(self, entry: HostSession, why: str) -> None:
        """Stop a retired session's upstream; its counts join the wrapper's totals."""
        await entry.stop(why)
        for name, value in entry.core.counters.to_dict().items():
            setattr(self.retired, name, getattr(self.retired, name) + value)

    def reclaim(self, session_id: str, why: str) -> HostSession | None:
        """Retire a session for a newcomer, at once; its upstream stops in the background (awaited by `close`)."""
        entry = self.retire(session_id, why, cause="reclaimed")
        if entry is not None:
            task = asyncio.ensure_future(self.stop(entry, why))
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)
        return entry

    async def end(self, session_id: str, why: str, *, cause: str = "ended") -> bool:
        entry = self.retire(session_id, why, cause=cause)
        if entry is None:
            return False
        await self.stop(entry, why)
        return True

    def all(self) -> list[HostSession]:
        started = [self.shared] if self.shared.task is not None else []
        return [*self.sessions.values(), *started]

    def shutdown(self, why: str) -> None:
        for entry in self.all():
            entry.core.shutdown(why)

    async def close(self, why: str) -> None:
        self.say_refusals(now_or_never=True)
        await asyncio.gather(*(self.end(sid, why) for sid in list(self.sessions)), *self._stopping)
        if self.shared.task is not None:
            await self.shared.stop(why)
