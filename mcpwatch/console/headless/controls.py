"""Operator actions the console can take. Live mode has them; replay has none, so its screens simply lack them."""

from __future__ import annotations

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
    """Each action opens a short session to the wrapper the feed follows (its registry entry may have changed)."""

    def __init__(
        self, locator: Locator, client_factory: Callable[[WrapperEntry], OperatorClient] | None = None
    ) -> None:
        self._locator = locator
        self._client_factory = client_factory or OperatorClient.for_entry

    async def _with(self, action: Callable[[OperatorClient], Awaitable[T]]) -> T:
        """Run one action; its answer and its error text come from the wrapper (and its upstream), so both are
        made safe for the terminal here (`wire_text`)."""
        entry = self._locator.last or self._locator.resolve()
        if entry is None:
            raise OperatorUnavailable(safe(f"no running wrapper matches {self._locator.target.describe()}"))
        try:
            async with self._client_factory(entry) as op:
                return clean(await action(op))
        except OperatorError as exc:
            text = str(exc)
            if clean(text) is text:
                raise
            raise type(exc)(clean(text, lines=True)) from None

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
