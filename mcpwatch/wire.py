"""The names mcpwatch puts on the MCP wire, in one place: the `_meta` keys the wrapper, the council and the console
agree on, the default health tool, and the shape of the partial result mcpwatch writes when a call cannot finish.

Pure: no transport, no Textual. A producer and its consumer import the same constant, so a renamed key cannot drift.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from mcpwatch.events import DeadlineBlock

DEADLINE_META = "dev.mcpwatch/deadline_ms"
"""`params._meta` of a forwarded tools/call: the milliseconds left in its budget as it leaves the wrapper."""


def deadline_ms(seconds_left: float) -> int:
    """The value of `DEADLINE_META` for the seconds a call has left (never negative)."""
    return max(0, round(seconds_left * 1000))


PARTIAL_META = "dev.mcpwatch/partial"
"""`result._meta` of a result mcpwatch wrote itself (deadline, cancel, failure): a `PartialResult`."""

COUNCIL_META = "dev.mcpwatch/council"
"""`params._meta` of the council's progress notifications: stage, tier, budgets and each model's state."""

MODERN_VERSION_META = "io.modelcontextprotocol/protocolVersion"
"""2026-era MCP: the protocol version each message carries in its own `_meta` (no initialize handshake)."""

MODERN_CLIENT_META = "io.modelcontextprotocol/clientInfo"
"""2026-era MCP: the client's name and version, in each request's `_meta`."""

SUBSCRIPTION_ID_META = "io.modelcontextprotocol/subscriptionId"
"""2026-era MCP: the `subscriptions/listen` request's id, on every frame of its stream."""

DEFAULT_HEALTH_TOOL = "council_health_check"
"""The upstream tool a health check calls when the settings name none (the council's own)."""


class PartialProgress(TypedDict):
    """The numbers of a cut call's last progress (its message is in the answer's text, once)."""

    progress: int | float | None
    total: int | float | None


class PartialResult(TypedDict):
    """What `result._meta["dev.mcpwatch/partial"]` holds: why the call stopped and what is known by then, as numbers
    and per-model state; the peer's free text (progress messages, the error) is in the content, once."""

    outcome: Literal["deadline", "operator_cancel", "shutdown", "error"] | str
    tool: str
    last_progress: PartialProgress | None
    models: dict[str, dict[str, Any]]
    elapsed_s: NotRequired[float]
    budget: NotRequired[DeadlineBlock | None]
    progress_messages: NotRequired[int]  # progress messages the content shows (the last one and those before)


def modern_version(message: dict[str, Any]) -> str | None:
    """The protocol version a 2026-era message carries in its own `_meta`, else None (a 2025-era frame)."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(MODERN_VERSION_META) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None
