"""Operator actions the console can take. Live mode has them; replay has none, so its screens simply lack them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from mcpwatch.console.headless.source import Locator
from mcpwatch.console.headless.wire_text import clean
from mcpwatch.operator import OperatorError, OperatorUnavailable
from mcpwatch.operator.client import OperatorClient
from mcpwatch.registry import WrapperEntry
from mcpwatch.terminal import safe

T = TypeVar("T")


class Controls(Protocol):
    """What an operator can do to a running wrapper (the operator endpoint's write tools)."""

    async def health_check(self) -> dict[str, Any]: ...

    async def set_margin(self, seconds: float) -> dict[str, Any]: ...

    async def set_host_timeout(self, seconds: float) -> dict[str, Any]: ...

    async def set_deadline(self, seconds: float | None) -> dict[str, Any]: ...

    async def reset_deadline(self) -> dict[str, Any]: ...

    async def cancel(self, request_id: str) -> dict[str, Any]: ...

    async def call_upstream(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]: ...


class LiveControls:
    """The actions go through one session to the wrapper the feed follows, opened on the first action and kept
    (a new one when the registry entry changes or the session died). A session per action cost about a second of
    handshakes at load 20 before an Enter took effect, 30 ms reused (`tests/console/test_console_controls_session.py`).
    """

    def __init__(
        self, locator: Locator, client_factory: Callable[[WrapperEntry], OperatorClient] | None = None
    ) -> None:
        self._locator = locator
        self._client_factory = client_factory or OperatorClient.for_entry
        self._held: _HeldSession | None = None

    async def _with(self, action: Callable[[OperatorClient], Awaitable[T]]) -> T:
        """Run one action; its answer and its error text come from the wrapper (and its upstream), so both are
        made safe for the terminal here (`wire_text`)."""
        entry = self._locator.last or self._locator.resolve()
        if entry is None:
            raise OperatorUnavailable(safe(f"no running wrapper matches {self._locator.target.describe()}"))
        if not self._still_running(entry):
            self.close()
            raise OperatorUnavailable(
                safe(f"{entry.name} (pid {entry.pid}) exited or restarted: the action was not sent; "
                     "try again once the console follows its replacement")
            )  # fmt: skip
        try:
            op = await self._session(entry)
            try:
                return clean(await action(op))
            except OperatorUnavailable:
                # The next action opens a new session; this one is not sent again: it may have arrived. Only its own
                # session ends: one opened since (to a restarted wrapper) may be carrying other actions.
                if self._held is not None and self._held.op is op:
                    self.close()
                raise
        except OperatorError as exc:
            text = str(exc)
            if clean(text) is text:
                raise
            raise type(exc)(clean(text, lines=True)) from None

    def _still_running(self, entry: WrapperEntry) -> bool:
        """Whether the wrapper the console follows is still the one in the registry: once it exited its port may be
        anyone's, and a restart under its name has a new token; neither gets an action (or the token) meant for it
        until the feed follows the replacement. A wrapper named by its URL has no registry entry to check."""
        if self._locator.target.url:
            return True
        return any(
            e.pid == entry.pid and e.session_id == entry.session_id and e.operator_url == entry.operator_url
            for e in self._locator.candidates()
        )

    async def _session(self, entry: WrapperEntry) -> OperatorClient:
        held = self._held
        if held is None or held.entry != entry or not held.usable:
            self.close()
            self._held = held = _HeldSession(entry, self._client_factory)
        return await held.ready()  # actions typed while it opens share it

    def close(self) -> None:
        """End the held session (the console quits, or the session is no longer usable)."""
        held, self._held = self._held, None
        if held is not None:
            held.close()

    async def health_check(self) -> dict[str, Any]:
        return await self._with(lambda op: op.health_check())

    async def set_margin(self, seconds: float) -> dict[str, Any]:
        return await self._with(lambda op: op.set_margin(seconds))

    async def set_host_timeout(self, seconds: float) -> dict[str, Any]:
        return await self._with(lambda op: op.set_host_timeout(seconds))

    async def set_deadline(self, seconds: float | None) -> dict[str, Any]:
        return await self._with(lambda op: op.set_deadline(seconds))

    async def reset_deadline(self) -> dict[str, Any]:
        return await self._with(lambda op: op.reset_deadline())

    async def cancel(self, request_id: str) -> dict[str, Any]:
        return await self._with(lambda op: op.cancel(request_id))

    async def call_upstream(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self._with(lambda op: op.call_upstream(name, arguments))


class _HeldSession:
    """An operator session kept open by a task of its own: a session's task group ends in the task that began it,
    and the actions come from many tasks."""

    def __init__(self, entry: WrapperEntry, factory: Callable[[WrapperEntry], OperatorClient]) -> None:
        self.entry = entry
        self.op: OperatorClient | None = None
        self._factory = factory
        self._closing = asyncio.Event()
        self._opened: asyncio.Future[OperatorClient] = asyncio.get_running_loop().create_future()
        self._task = asyncio.ensure_future(self._hold(self._opened))

    @property
    def usable(self) -> bool:
        """Still opening (the next action waits for it), or open and alive."""
        return not self._opened.done() or (self.op is not None and self.op.connected)

    async def ready(self) -> OperatorClient:
        # shielded: an action given up (its screen closed) must not cancel the opening the others wait for
        return await asyncio.shield(self._opened)

    async def _hold(self, opened: asyncio.Future[OperatorClient]) -> None:
        try:
            async with self._factory(self.entry) as op:
                self.op = op
                opened.set_result(op)
                await self._closing.wait()
        except Exception as exc:  # handed to the action that opened it; a session that died later is reopened
            if not opened.done():
                opened.set_exception(exc)
        finally:
            self.op = None
            if not opened.done():
                opened.set_exception(OperatorUnavailable(f"cannot connect to {self.entry.operator_url}"))

    def close(self) -> None:
        self._closing.set()
