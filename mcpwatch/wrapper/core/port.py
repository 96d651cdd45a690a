"""What the links may ask of the core: a host front, and an upstream connection. Links hold one of these, never
the core's attributes, so the core can change inside without touching a transport."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from mcpwatch.wrapper.calls.pending import HostLink
from mcpwatch.wrapper.core.pressure import Backpressure


class LinkPort(Protocol):
    pressure: Backpressure  # hosts report their unsent bytes to it; it pauses reading the upstream

    def warn(self, message: str) -> None:
        """Log a warning event (an operator sees it in the console)."""
        ...

    def frame_limit(self) -> int:
        """The frame cap in bytes (`[limits] max_frame_mb`)."""
        ...


class HostPort(LinkPort, Protocol):
    """A host front (stdio, or one HTTP session per host) feeding frames in; the core answers through the link."""

    def host_frame(self, link: HostLink, line: bytes) -> None: ...

    def host_message(self, link: HostLink, message: Any) -> None: ...

    def host_oversize(self, link: HostLink, size: int, head: bytes = b"") -> None:
        """A host frame over the cap (its first bytes in `head`): answered, counted, logged."""
        ...

    def count_frame_error(self) -> None:
        """A host frame that could not be taken (too large, not JSON): counted in the wrapper's status."""
        ...

    def attach_link(self, link: HostLink) -> None: ...

    def detach_link(self, link: HostLink) -> None: ...


class UpstreamPort(LinkPort, Protocol):
    """An upstream connection: its frames in, its lifecycle reported."""

    def upstream_frame(self, line: bytes, fallback: Any = ...) -> None:
        """One frame from the upstream; one that cannot be decoded answers the request it was for (the id its start
        shows, else `fallback`) with an error at once."""
        ...

    def upstream_message(self, message: Any) -> None: ...

    def upstream_oversize(self, size: int, head: bytes = b"", fallback: Any = ...) -> None:
        """An upstream frame over the cap: the request it answers (the id in `head`, else `fallback`) is answered."""
        ...

    def is_waiting(self, up_id: Any) -> bool:
        """Whether a request sent upstream under this id still waits for its answer."""
        ...

    def requeue(self, up_id: Any) -> bool:
        """A request the upstream never received: send it again on the next connection."""
        ...

    def upstream_connecting(self) -> int: ...

    async def upstream_started(self) -> None: ...

    def upstream_lost(
        self,
        *,
        reason: str,
        exit_code: int | None = None,
        stderr_tail: list[str] | None = None,
        fail_queued: bool = False,
    ) -> None: ...

    def upstream_backoff(self, retry_in_s: float) -> None: ...


def retrieve_exception(task: asyncio.Task[Any]) -> None:
    """Mark a link's start task's failure as seen: the loss that caused it is reported already, not as a traceback."""
    if not task.cancelled():
        task.exception()
