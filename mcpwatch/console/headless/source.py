"""Where the console's events come from: a `Feed` fills a `ConsoleModel` and says what time it is.

Live mode follows a wrapper's operator `events` long poll in a thread of its own and buffers into a deque; the UI
drains it on a timer (`pump`), so a flood of events never turns into per-event UI work. Replay (or a test) supplies
another `Feed` and the same screens render it. No Textual here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from mcpwatch.clock import SYSTEM_CLOCK, Clock
from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.events import Event, Kind
from mcpwatch.logview.ending import gone_reason, stand_in_end
from mcpwatch.registry import WrapperEntry, find_wrapper, pid_alive, running_wrappers
from mcpwatch.reliability.backoff import Backoff
from mcpwatch.terminal import safe

log = logging.getLogger(__name__)

FeedState = Literal["connecting", "live", "disconnected", "waiting", "gone", "static", "replay"]

PAGE = 1000  # events per operator call
WAIT_MS = 1000  # long-poll hold: also how quickly the feed thread notices it should stop
MAX_BACKLOG = 50_000  # items buffered for the UI before the feed stops asking (the wrapper keeps them)
PUMP_LIMIT = 20_000  # events folded per UI tick, so a large history never blocks one frame for long
BACKOFF_S = (0.5, 1.0, 2.0, 3.0, 5.0)


@dataclass(frozen=True, slots=True)
class FeedStatus:
    """What the header says about the connection."""

    state: FeedState
    text: str
    target: str = ""
    retry_in_s: float | None = None

    @property
    def connected(self) -> bool:
        return self.state in ("live", "static", "replay")

    @property
    def label(self) -> str:
        """One or two words for the top bar (the banner carries `text`); a replay shows its clock there."""
        if self.state == "replay":
            return self.text
        labels = {"static": "recorded", "waiting": "waiting for the wrapper", "gone": "wrapper gone"}
        return labels.get(self.state, self.state)


class Feed(Protocol):
    """A source of events for one watched session."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def pump(self, model: ConsoleModel, limit: int = PUMP_LIMIT) -> int:
        """Fold what has arrived into `model`; return how many items were applied."""
        ...

    def now_mono(self, model: ConsoleModel) -> float:
        """The session time the view should show."""
        ...

    def status(self) -> FeedStatus: ...

    @property
    def backlog(self) -> int: ...


# --- finding the wrapper -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Target:
    """Which wrapper to watch: a registry selector (name or pid) or a direct operator URL and token."""

    selector: str | None = None
    url: str | None = None
    token: str | None = None

    @classmethod
    def parse(cls, text: str | None, token: str | None = None) -> Target:
        if text and text.startswith(("http://", "https://")):
            return cls(url=text, token=token)
        return cls(selector=text, token=token)

    def describe(self) -> str:
        return self.url or (f"wrapper {self.selector!r}" if self.selector else "no wrapper")


class Locator:
    """Resolves a target to a registry entry, again on every reconnect: a restarted wrapper has a new entry."""

    def __init__(self, target: Target, registry_dir: Path | None = None) -> None:
        self.target = target
        self.registry_dir = registry_dir
        self._last: WrapperEntry | None = None

    def candidates(self) -> list[WrapperEntry]:
        return running_wrappers(self.registry_dir)

    def resolve(self) -> WrapperEntry | None:
        target = self.target
        if target.url:
            known = next((e for e in self.candidates() if e.operator_url == target.url), None)
            token = target.token or (known.token if known else "")
            self._last = WrapperEntry(
                pid=known.pid if known else 0,
                name=known.name if known else target.url,
                operator_url=target.url,
                token=token,
                log_path=known.log_path if known else "",
                session_id=known.session_id if known else "",
            )
            return self._last
        matches = find_wrapper(target.selector, self.registry_dir)
        if not matches and self._last is not None and target.selector == str(self._last.pid):
            # Watching by pid and that process is gone: follow its name to the replacement.
            matches = find_wrapper(self._last.name, self.registry_dir)
        if not matches:
            return None
        if self._last is not None:
            same = [e for e in matches if e.pid == self._last.pid] or [e for e in matches if e.name == self._last.name]
            if same:
                matches = same
        entry = matches[-1]  # newest
        if target.token:
            entry = WrapperEntry(**{**entry.__dict__, "token": target.token})
        self._last = entry
        return entry

    @property
    def last(self) -> WrapperEntry | None:
        return self._last


# --- the live feed -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Seed:
    """A status() answer to fold after the events fetched before it (attaching mid-session)."""

    status: dict[str, Any]
    wall_ts: float


@dataclass(frozen=True, slots=True)
class _Live:
    """A status() answer asked for while following (every STATUS_EVERY_S): what no event says."""

    status: dict[str, Any]


STATUS_EVERY_S = 2.0


class LiveFeed:
    """Follows one wrapper's operator event stream from a thread; the UI pumps the buffered events."""

    def __init__(
        self,
        locator: Locator,
        clock: Clock = SYSTEM_CLOCK,
        *,
        client_factory: Callable[[WrapperEntry], Any] | None = None,
        page: int = PAGE,
        wait_ms: int = WAIT_MS,
        max_backlog: int = MAX_BACKLOG,
        backoff_s: Sequence[float] = BACKOFF_S,
    ) -> None:
        self.locator = locator
        self._clock = clock
        self._client_factory = client_factory
        self._page = page
        self._wait_ms = wait_ms
        self._max_backlog = max_backlog
        self._backoff = Backoff(steps=backoff_s, jitter=0.0)
        self._buffer: deque[Event | _Seed | _Live] = deque()
        self.last_status: tuple[dict[str, Any], float] | None = None  # the newest status() and its wall time
        self._status = FeedStatus("connecting", "connecting…", locator.target.describe())
        self._frozen_at: float | None = None  # wall time the connection was lost: the view stops there
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = threading.Event()
        self._after = 0
        self._session_id: str | None = None
        self.received = 0  # events fetched so far (the benchmark reads it)
        self._last_event: Event | None = None
        self._ended = False  # the session's end is in the buffer (its own, or one stood in for a crash)

    # -- Feed -------------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._thread_main, name="mcpwatch-feed", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 3.0) -> None:
        self._stopping.set()
        loop, task = self._loop, self._task
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                loop.call_soon_threadsafe(task.cancel)
        if self._thread is not None:
            self._thread.join(timeout)

    def pump(self, model: ConsoleModel, limit: int = PUMP_LIMIT) -> int:
        count = 0
        buffer = self._buffer
        while buffer and count < limit:
            item = buffer.popleft()
            if isinstance(item, _Live):
                model.note_status(item.status)
            elif isinstance(item, _Seed):
                mono = item.status.get("mono")  # the wrapper's own session time, when it says
                now = float(mono) if isinstance(mono, int | float) else model.mono_at(item.wall_ts)
                model.seed(item.status, now)
            else:
                model.apply(item)
            count += 1
        return count

    def now_mono(self, model: ConsoleModel) -> float:
        wall = self._frozen_at if self._frozen_at is not None else self._clock.time()
        return model.mono_at(wall)

    def status(self) -> FeedStatus:
        return self._status

    @property
    def backlog(self) -> int:
        return len(self._buffer)

    # -- the thread --------------------------------------------------------------------------------------

    def _thread_main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._task = loop.create_task(self._follow())
            with contextlib.suppress(asyncio.CancelledError):
                loop.run_until_complete(self._task)
        except BaseException as exc:  # never silently: the header must not go on saying "live"
            log.error("operator feed stopped", exc_info=True)
            self._frozen_at = self._frozen_at or self._clock.time()
            self._set("disconnected", f"the event feed stopped: {type(exc).__name__}: {exc}")
        finally:
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def _set(self, state: FeedState, text: str, retry_in_s: float | None = None) -> None:
        target = self.locator.last.name if self.locator.last else self.locator.target.describe()
        self._status = FeedStatus(state, safe(text), safe(target), retry_in_s)  # an error text or a name: from outside

    def _client(self, entry: WrapperEntry) -> Any:
        if self._client_factory is not None:
            return self._client_factory(entry)
        from mcpwatch.operator.client import OperatorClient

        return OperatorClient.for_entry(entry)

    async def _follow(self) -> None:
        from mcpwatch.operator import OperatorError

        while not self._stopping.is_set():
            entry = self.locator.resolve()
            if entry is None:
                self._note_gone()
                delay = self._backoff.next_delay()
                if self._ended:
                    self._wait_for_successor()
                    await self._sleep(delay)
                    continue
                self._lost(
                    "waiting" if self._session_id is None else "disconnected",
                    f"{self.locator.target.describe()} is not in the registry of running wrappers",
                    delay,
                )
                await self._sleep(delay)
                continue
            try:
                async with self._client(entry) as op:
                    self._backoff.reset()
                    await self._catch_up(op, entry)
                    self._frozen_at = None
                    self._set("live", "live")
                    while not self._stopping.is_set():
                        if len(self._buffer) >= self._max_backlog:
                            await asyncio.sleep(0.05)  # the UI is behind: let it drain before asking for more
                            continue
                        if self.last_status is None or self._clock.time() - self.last_status[1] >= STATUS_EVERY_S:
                            await self._ask_status(op)
                        page = await op.events(after=self._after, limit=self._page, wait_ms=self._wait_ms)
                        self._take(page.events, page.next)
            except (OperatorError, OSError) as exc:
                reason = str(exc)
            except Exception as exc:  # anything else from the transport: say so, log it, keep trying
                log.warning("operator feed failed", exc_info=True)
                reason = f"{type(exc).__name__}: {exc}"
            else:
                continue
            delay = self._backoff.next_delay()
            self._note_gone()
            if self._ended:  # the process is gone, not the connection: nothing to retry
                self._wait_for_successor()
            else:
                self._lost("disconnected", reason, delay)
            await self._sleep(delay)

    async def _catch_up(self, op: Any, entry: WrapperEntry) -> None:
        """Fetch the history this console has not seen; seed from status() when it does not start at the start.

        A different session id means a different wrapper process (restarted under the same name): its sequence
        numbers start again, so the history is fetched from the beginning and the model starts over.
        """
        self._set("connecting", "catching up…")
        session_id = _session_of(await op.status()) or entry.session_id or None
        fresh = session_id is None or session_id != self._session_id
        if fresh:
            self._after = 0
            self._session_id = session_id
            self._ended = False
        saw_start = False
        while True:
            page = await op.events(after=self._after, limit=self._page, wait_ms=0)
            saw_start = saw_start or any(e.kind == Kind.SESSION_START for e in page.events)
            self._take(page.events, page.next)
            if len(page.events) < self._page or self._stopping.is_set():
                break
            while len(self._buffer) >= self._max_backlog and not self._stopping.is_set():
                await asyncio.sleep(0.05)
        if fresh and not saw_start:
            # Attached mid-session: what the missing history would have said, from the wrapper's own summary
            # (taken after the catch-up, so a call that ended meanwhile is not brought back).
            self._buffer.append(_Seed(await op.status(), self._clock.time()))

    async def _ask_status(self, op: Any) -> None:
        """The wrapper's status on the feed's own connection: Fleet's row for the watched wrapper and the
        header's host sessions come from it, never from a probe of their own."""
        status = await op.status()
        if isinstance(status, dict):
            self.last_status = (status, self._clock.time())
            self._buffer.append(_Live(status))

    def _take(self, events: list[Event], next_seq: int) -> None:
        if events:
            self._buffer.extend(events)
            self.received += len(events)
            self._last_event = events[-1]
            self._ended = self._ended or events[-1].kind == Kind.SESSION_END
        self._after = max(self._after, next_seq)

    def _note_gone(self) -> None:
        """The watched wrapper's process is gone: end its session in the view, once, at its last event (crashed,
        unless its log recorded an end)."""
        entry, last = self.locator.last, self._last_event
        if self._ended or self._session_id is None or entry is None or last is None or pid_alive(entry.pid):
            return
        self._ended = True
        reason = gone_reason(entry.log_path, self._session_id, last.ts)
        self._buffer.append(stand_in_end(self._session_id, last, reason))

    def _wait_for_successor(self) -> None:
        """The watched session has ended and its wrapper is gone: say so (the header says how it ended) rather
        than "retrying in 5s", which promised a connection that cannot come back."""
        if self._frozen_at is None:
            self._frozen_at = self._clock.time()
        self._set("gone", gone_text(self.locator.target, self.locator.last))

    def _lost(self, state: FeedState, reason: str, retry_in_s: float) -> None:
        if self._frozen_at is None and state == "disconnected":
            self._frozen_at = self._clock.time()
        verb = "disconnected" if state == "disconnected" else "waiting"
        self._set(state, f"{verb} — retrying in {retry_in_s:g}s: {reason}", retry_in_s)

    async def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self._stopping.is_set() and time.monotonic() < end:
            await asyncio.sleep(min(0.1, end - time.monotonic()))


def gone_text(target: Target, last: WrapperEntry | None) -> str:
    """What the banner says once the watched wrapper's process is gone: which one (by its name, never a pid that
    cannot come back) and what to do. A new wrapper of that name is followed when it starts."""
    if last is None or not last.pid or target.url:
        return f"its process is gone — a new {target.describe()} is watched when it starts"
    return (
        f"wrapper {last.name!r} (pid {last.pid}): its process is gone — start it again and it is watched here,"
        " or press F for the others"
    )


def _session_of(status: dict[str, Any]) -> str | None:
    log = status.get("log")
    session_id = log.get("session_id") if isinstance(log, dict) else None
    return str(session_id) if session_id else None
