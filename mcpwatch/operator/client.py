"""A client for a wrapper's operator endpoint (the contract in `mcpwatch.operator`).

One `OperatorClient` is one MCP session over Streamable HTTP carrying the bearer token. Every failure becomes an
`OperatorError` (the contract's) whose message a user can act on: `OperatorUnavailable` when the wrapper cannot be
reached (gone, wrong URL, token refused), `OperatorRefused` when it answered but said no (a bad value, an unknown
request id). Nothing from the transport leaks out as a traceback.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from mcpwatch import operator as contract
from mcpwatch.events import Event
from mcpwatch.operator import OperatorError, OperatorRefused, OperatorUnavailable
from mcpwatch.registry import WrapperEntry

__all__ = ["EventPage", "OperatorClient", "OperatorError", "OperatorRefused", "OperatorUnavailable"]

CONNECT_TIMEOUT_S = 5.0
CALL_TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class EventPage:
    events: list[Event]
    next: int
    malformed: int = 0  # items that were not events (skipped)


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


class OperatorClient:
    """`async with OperatorClient(url, token) as op: await op.status()` — the contract's tools as methods."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        call_timeout_s: float = CALL_TIMEOUT_S,
    ) -> None:
        self.url = url
        self._token = token
        self._connect_timeout_s = connect_timeout_s
        self._call_timeout_s = call_timeout_s
        self._client: Any = None
        self._last_http_status: int | None = None

    @classmethod
    def for_entry(cls, entry: WrapperEntry, **kwargs: Any) -> OperatorClient:
        return cls(entry.operator_url, entry.token, **kwargs)

    # -- session -------------------------------------------------------------------------------------------
    #
    # The MCP client runs transport tasks in its own task group. Entered in the caller's task, a dying wrapper
    # would cancel the caller from inside; so one runner task owns the session and the caller only sends
    # requests through it. If the session dies, the runner records why and the calls fail with that reason.

    async def __aenter__(self) -> OperatorClient:
        import anyio

        self._closing = anyio.Event()
        self._failure: OperatorError | None = None
        group = anyio.create_task_group()
        await group.__aenter__()
        try:
            await group.start(self._run_session)
        except BaseException as exc:
            group.cancel_scope.cancel()
            await group.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        if self._client is None:
            await group.__aexit__(None, None, None)
            raise self._failure or OperatorUnavailable(f"cannot connect to {self.url}")
        self._group: anyio.abc.TaskGroup | None = group
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        group, self._group = getattr(self, "_group", None), None
        if group is None:
            return
        self._closing.set()  # the runner closes the session and ends
        if exc is not None and _is_cancellation(exc):
            group.cancel_scope.cancel()
        try:
            # Not handed the caller's exception: a task group would wrap it in an ExceptionGroup, and callers
            # catch OperatorError. Whatever the caller was raising propagates unchanged.
            await group.__aexit__(None, None, None)
        except BaseException:
            if exc is None:
                raise

    async def _run_session(self, *, task_status: Any) -> None:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        async def remember_status(response: httpx2.Response) -> None:
            self._last_http_status = response.status_code

        started = False
        try:
            http = httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {self._token}"},
                timeout=httpx2.Timeout(self._connect_timeout_s, read=self._call_timeout_s + 60.0),
                event_hooks={"response": [remember_status]},
            )
            transport = streamable_http_client(self.url, http_client=http)
            client = Client(
                transport, mode="legacy", read_timeout_seconds=self._connect_timeout_s + self._call_timeout_s
            )
            async with http, client:
                self._client = client
                started = True
                task_status.started()
                await self._closing.wait()
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            if _is_cancellation(exc) and self._closing.is_set():
                raise
            self._failure = self._translate(exc, "reach" if started else "connect to")
        finally:
            self._client = None
            if not started:
                task_status.started()

    def _translate(self, exc: BaseException, doing: str) -> OperatorError:
        """One clear sentence for whatever the transport raised."""
        import httpx2
        from mcp import MCPError

        where = f"the wrapper's operator endpoint at {self.url}"
        status = self._last_http_status
        if status in (401, 403):
            return OperatorUnavailable(
                f"{where} refused the operator token (HTTP {status}); use the token from its registry file or --token"
            )
        if status == 404:
            return OperatorUnavailable(f"nothing answers at {self.url} (HTTP 404): is this an mcpwatch operator URL?")
        for leaf in _leaves(exc):
            if isinstance(leaf, OperatorError):
                return leaf
            if isinstance(leaf, httpx2.ConnectError):
                return OperatorUnavailable(f"cannot {doing} {where}: nothing is listening (has the wrapper exited?)")
            if isinstance(leaf, httpx2.TimeoutException):
                return OperatorUnavailable(f"cannot {doing} {where}: it did not answer in time")
            if isinstance(leaf, httpx2.TransportError):
                return OperatorUnavailable(f"cannot {doing} {where}: the connection failed ({leaf})")
            if isinstance(leaf, MCPError):
                if status is not None and status >= 400:
                    return OperatorUnavailable(f"cannot {doing} {where}: HTTP {status}")
                return OperatorUnavailable(f"cannot {doing} {where}: {leaf.message or leaf}")
            if isinstance(leaf, OSError):
                return OperatorUnavailable(f"cannot {doing} {where}: {leaf.strerror or leaf}")
        first = _leaves(exc)[0]
        return OperatorUnavailable(f"cannot {doing} {where}: {type(first).__name__}: {first}")

    # -- calls ---------------------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """Whether the session is open and has not died (a wrapper gone, its session ended): a call can be sent."""
        return getattr(self, "_group", None) is not None and self._client is not None

    async def call(
        self, tool: str, arguments: Mapping[str, Any] | None = None, *, timeout_s: float | None = None
    ) -> Any:
        """Call one operator tool and return its JSON; raise `OperatorRefused` with the wrapper's own words."""
        client = self._client
        if client is None:
            failure = getattr(self, "_failure", None)
            if failure is not None:
                raise OperatorUnavailable(str(failure))
            raise OperatorUnavailable("not connected to the operator endpoint (use `async with`)")
        self._last_http_status = None
        try:
            result = await client.call_tool(
                tool, dict(arguments or {}), read_timeout_seconds=timeout_s or self._call_timeout_s
            )
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt | SystemExit) or _is_cancellation(exc):
                raise
            raise self._translate(exc, f"call {tool} on") from None
        if result.is_error:
            raise OperatorRefused(_text_of(result) or f"the wrapper refused {tool} without saying why")
        return _json_of(result)

    async def status(self) -> dict[str, Any]:
        return _mapping(await self.call(contract.TOOL_STATUS), contract.TOOL_STATUS)

    async def events(self, after: int = 0, limit: int = 1000, wait_ms: int = 0) -> EventPage:
        """One page of events with `seq > after`; with `wait_ms`, the wrapper holds the call until one arrives."""
        raw = _mapping(
            await self.call(
                contract.TOOL_EVENTS,
                {"after": int(after), "limit": int(limit), "wait_ms": int(wait_ms)},
                timeout_s=self._call_timeout_s + wait_ms / 1000.0,
            ),
            contract.TOOL_EVENTS,
        )
        events: list[Event] = []
        malformed = 0
        for item in raw.get("events") or ():
            try:
                events.append(Event.from_dict(item))
            except (KeyError, TypeError, ValueError, AttributeError):
                malformed += 1
        try:
            next_seq = int(raw.get("next", after))
        except (TypeError, ValueError):
            next_seq = max([after, *(e.seq for e in events)])
        return EventPage(events, next_seq, malformed)

    async def health_check(self) -> dict[str, Any]:
        return _mapping(await self.call(contract.TOOL_HEALTH_CHECK, timeout_s=self._call_timeout_s + 30.0), "health")

    async def set_margin(self, seconds: float) -> dict[str, Any]:
        return _mapping(await self.call(contract.TOOL_SET_MARGIN, {"seconds": _finite(seconds)}), "set_margin")

    async def set_host_timeout(self, seconds: float) -> dict[str, Any]:
        result = await self.call(contract.TOOL_SET_HOST_TIMEOUT, {"seconds": _finite(seconds)})
        return _mapping(result, "set_host_timeout")

    async def set_deadline(self, seconds: float | None) -> dict[str, Any]:
        value = None if seconds is None else _finite(seconds)
        return _mapping(await self.call(contract.TOOL_SET_DEADLINE, {"seconds": value}), "set_deadline")

    async def reset_deadline(self) -> dict[str, Any]:
        return _mapping(await self.call(contract.TOOL_RESET_DEADLINE, {}), "reset_deadline")

    async def call_upstream(self, name: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """One of the upstream's tools called for the operator (logged by the wrapper as operator_call):
        {tool, ok, result, error, duration_s}. A tool error is an answer (ok false), not an exception."""
        result = await self.call(
            contract.TOOL_CALL_UPSTREAM,
            {"name": name, "arguments": dict(arguments or {})},
            timeout_s=self._call_timeout_s + 30.0,
        )
        return _mapping(result, contract.TOOL_CALL_UPSTREAM)

    async def cancel(self, request_id: str) -> dict[str, Any]:
        result = await self.call(contract.TOOL_CANCEL, {"request_id": str(request_id)})
        return result if isinstance(result, dict) else {"result": result}


def _finite(seconds: float) -> float:
    """JSON cannot carry NaN or infinity (they would arrive as null): refuse them here, in words."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds):
        raise OperatorRefused(f"{seconds!r} is not a finite number of seconds")
    return float(seconds)


def _is_cancellation(exc: BaseException) -> bool:
    import anyio

    return any(isinstance(leaf, anyio.get_cancelled_exc_class()) for leaf in _leaves(exc))


def _text_of(result: Any) -> str:
    parts = [getattr(block, "text", "") for block in result.content or ()]
    text = "\n".join(p for p in parts if p).strip()
    prefix = "Error executing tool "
    if text.startswith(prefix) and ": " in text:
        text = text.split(": ", 1)[1]  # the SDK's "Error executing tool set_margin: " adds nothing for a user
    return text


def _json_of(result: Any) -> Any:
    structured = result.structured_content
    if isinstance(structured, dict):
        if set(structured) == {"result"}:
            return structured["result"]  # the SDK wraps non-object returns as {"result": …}
        return structured
    text = _text_of(result)
    try:
        return json.loads(text)
    except ValueError:
        return text


def _mapping(value: Any, tool: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise OperatorRefused(f"the wrapper's {tool} answer was not a JSON object: {str(value)[:200]}")
    return value
