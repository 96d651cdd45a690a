"""Keys, one at a time: each reaches what has focus once the keys typed before it have done all they do.

Textual routes a key to the widget focused when the key is read, not when it was typed: keys typed in one burst
(a busy machine, a slow frame) are all read before the first has opened its prompt or moved the focus. So `/took`
fired `t` (the host-timeout prompt) before the filter field had focus, and the keys typed after a prompt's Enter
landed in the closing prompt. The router delivers a key, then waits until it has been handled along the whole
focus chain (and what its action deferred, a focus change or a new screen's mount, has run) before the next.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from textual import events
from textual.app import App
from textual.message_pump import MessagePump

log = logging.getLogger(__name__)

SETTLE_LIMIT_S = 30.0  # a pump that never answers (torn down between two checks) must not stop the keys for good


Route = Callable[[events.Key], Awaitable[None]]


async def after_queue(pump: MessagePump) -> None:
    """Return once `pump` has handled everything queued to it before this call (nothing, if it is closed)."""
    done = asyncio.get_running_loop().create_future()

    def mark() -> None:
        if not done.done():
            done.set_result(None)

    if not pump.call_later(mark):
        return
    try:
        await asyncio.wait_for(done, SETTLE_LIMIT_S)
    except TimeoutError:
        log.warning("key routing: %r did not answer in %.0f s; going on", pump, SETTLE_LIMIT_S)


class KeyRouter:
    """The app hands it every key typed (`take`); it delivers them in order, one settled before the next."""

    def __init__(self, app: App[Any], textual_route: Route) -> None:
        self._app = app
        self._textual_route = textual_route  # Textual's own: priority bindings, else forward to the focused widget
        self._waiting: deque[events.Key] = deque()
        self._busy = False
        self._task: asyncio.Task[None] | None = None
        self.delivered = 0  # keys delivered and settled (tests wait on it)

    @property
    def idle(self) -> bool:
        return not self._busy and not self._waiting

    async def take(self, event: events.Key) -> None:
        """A key as typed. Delivered now when nothing is in progress (so a single key costs no extra turn),
        else queued behind the keys still settling."""
        if self._busy:
            self._waiting.append(event)
            return
        self._busy = True
        try:
            pending = await self._deliver(event)
        except Exception:
            self._busy = False
            raise
        self._task = asyncio.create_task(self._settle_then_drain(pending), name="mcpwatch keys")

    async def _settle_then_drain(self, pending: Awaitable[None] | None) -> None:
        try:
            await self._finish(pending)
            while self._waiting:
                event = self._waiting.popleft()
                try:
                    pending = await self._deliver(event)
                except Exception:
                    log.exception("key %s could not be delivered", event.key)
                    continue
                await self._finish(pending)
        finally:
            self._busy = False

    async def _finish(self, pending: Awaitable[None] | None) -> None:
        try:
            if pending is not None:
                await pending
        except Exception:
            log.exception("a key's action failed")
        self.delivered += 1

    async def _deliver(self, event: events.Key) -> Awaitable[None] | None:
        """Start delivering one key; returns what to await for it to have settled."""
        screen = self._app.screen
        take_key = getattr(screen, "take_key", None)  # a prompt takes its keys itself (`TypedAheadPrompt`)
        if take_key is not None:
            taken: Awaitable[None] | None = take_key(event)
            return self._then_settled(taken)
        target = self._app.focused or screen
        await self._textual_route(event)
        return self._settled(event, target)

    async def _then_settled(self, taken: Awaitable[None] | None) -> None:
        if taken is not None:
            await taken
        await self._effects_done()

    async def _settled(self, event: events.Key, target: MessagePump) -> None:
        """The key has been handled by each node it bubbles through (forwarded ones), then its effects ran."""
        if event.is_forwarded:
            node: MessagePump | None = target
            while node is not None:
                await after_queue(node)
                if event._stop_propagation:  # handled there (a field took the letter): it goes no further
                    break
                node = node._parent
        await self._effects_done()

    async def _effects_done(self) -> None:
        """What the key's action left to the app (a focus change, a screen pushed or popped) has run, and the
        screen now on top is mounted (it sets its focus when mounted)."""
        app = self._app
        await after_queue(app)
        # An action may post to the focused widget (Enter in a field: `Submitted`, handled by the screen as it
        # bubbles up): one pass up the focus chain lets that run too.
        node: MessagePump | None = app.focused
        while node is not None and node is not app:
            await after_queue(node)
            node = node._parent
        await after_queue(app)
        screen = app.screen
        if not screen.is_mounted:
            try:
                await asyncio.wait_for(screen._mounted_event.wait(), SETTLE_LIMIT_S)
            except TimeoutError:
                log.warning("key routing: %r did not mount in %.0f s; going on", screen, SETTLE_LIMIT_S)
            await after_queue(screen)
            await after_queue(app)
