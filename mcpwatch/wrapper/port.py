"""What the links may ask of the core: a host front, and an upstream connection. Links hold one of these, never
the core's attributes, so the core can change inside without touching a transport."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from mcpwatch.wrapper.pending import HostLink


class LinkPort(Protocol):
    def warn(self, message: str) -> None:
        """Log a warning event (an operator sees it in the console)."""
        ...


class HostPort(LinkPort, Protocol):
    """A host front (stdio, or one HTTP session per host) feeding frames in; the core answers through the link."""

    def host_frame(self, link: HostLink, line: bytes) -> None: ...

    def host_message(self, link: HostLink, message: Any) -> None: ...

    def count_frame_error(self) -> None:
        """A host frame that could not be taken (too large, not JSON): counted in the wrapper's status."""
        ...

    def attach_link(self, link: HostLink) -> None: ...

    def detach_link(self, link: HostLink) -> None: ...

    def handshake_result(self) -> dict[str, Any] | None:
        """The upstream's answer to the first host's initialize, for a later host session, once there is one."""
        ...


class UpstreamPort(LinkPort, Protocol):
    """An upstream connection: its frames in, its lifecycle reported."""

    def upstream_frame(self, line: bytes) -> None: ...

    def upstream_message(self, message: Any) -> None: ...

    def upstream_oversize(self, size: int) -> None: ...

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
