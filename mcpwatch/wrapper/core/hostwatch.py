"""Which host is behind each host link, so each call gets the budget of the host that made it.

A 2025-era host names itself once, in `initialize`: that name holds for its link (the stdio front's one link, or
one HTTP-front session). A 2026-era host names itself on every request (`_meta["io.modelcontextprotocol/clientInfo"]`),
so two hosts of different kinds may share one front and still get different budgets. Every new host is logged once
as a `host_info` event carrying its profile.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mcpwatch.events import Kind
from mcpwatch.reliability.hosts import NAME_MAX, DetectedHost, HostCatalog

MODERN_CLIENT_META = "io.modelcontextprotocol/clientInfo"
SEEN_MAX = 1024  # distinct 2026-era (name, version) pairs remembered; beyond, the memory starts again (bounded)


class HostDirectory:
    def __init__(self, catalog: HostCatalog, emit: Callable[..., Any], front: str = "stdio") -> None:
        self.catalog = catalog
        self.front = front
        self._emit = emit
        self._by_link: dict[int, DetectedHost] = {}
        self._modern: dict[tuple[Any, Any, str], DetectedHost] = {}
        self.latest: DetectedHost | None = None
        self.latest_info: dict[str, Any] = {}
        self.modern_era = False  # a host has spoken the 2026 era (its requests carry the protocol version)

    def speaks_modern(self) -> bool:
        """Whether a host of this core speaks the 2026 era (its results then carry resultType)."""
        return self.modern_era

    def initialized(self, link: Any, client_info: Any, protocol_version: Any) -> DetectedHost:
        """A 2025-era `initialize`: the host of this link from now on."""
        host = self.catalog.detect(client_info, self.front)
        self._by_link[id(link)] = host
        self._note(host, link, protocol_version)
        return host

    def for_request(
        self, link: Any, meta: Mapping[str, Any] | None, protocol_version: str | None
    ) -> DetectedHost | None:
        """The host of one request: its own 2026-era clientInfo when it carries one, else its link's host."""
        if protocol_version is not None:
            self.modern_era = True
            info = meta.get(MODERN_CLIENT_META) if meta is not None else None
            info = info if isinstance(info, Mapping) else {}
            key = (_hashable(info.get("name")), _hashable(info.get("version")), self.front)
            host = self._modern.get(key)
            if host is None:
                if len(self._modern) >= SEEN_MAX:
                    self._modern.clear()
                host = self._modern[key] = self.catalog.detect(info, self.front)
                self._note(host, link, protocol_version)
            return host
        return self._by_link.get(id(link))

    def forget(self, link: Any) -> None:
        self._by_link.pop(id(link), None)

    def sessions(self) -> list[dict[str, Any]]:
        """Each 2025-era link's host, for `status`."""
        return [host.to_dict() for host in self._by_link.values()]

    def _note(self, host: DetectedHost, link: Any, protocol_version: Any) -> None:
        self.latest = host
        info = {**host.to_dict(), "protocol_version": protocol_version}
        session = getattr(link, "session_id", None)
        if session:
            info["host_session"] = session
        self.latest_info = info
        self._emit(Kind.HOST_INFO, **info)


def _hashable(value: Any) -> Any:
    """A bounded key part: what detection reads of a name or version (a hostile host may send megabytes)."""
    if isinstance(value, str):
        return value[:NAME_MAX]
    return value if isinstance(value, int | float | bool) or value is None else repr(value)[:NAME_MAX]
