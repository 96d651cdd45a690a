"""State Sync on raw MCP JSON: cache directives on tools/list, invalidation signals on tools/call.

- tools/list: each tool whose policy resolves to a directive gets ` [Cache-Control: X]` at the end of its
  description. Idempotent: a trailing tag already there (from the upstream, or a previous pass) is replaced, never
  doubled; trailing whitespace before the tag is dropped. A missing, empty or blank description becomes the tag
  alone, without a leading space. Decorations are cached per (name, description), bounded like the policy cache.
- tools/call: when the tool's policy invalidates something and `isError` is not true, a text block
  `[System: Cache invalidated for a.*, b.* — caused by tool.name]` is put first in `content` (patterns in policy
  order), and an `InvalidationEvent` goes to the observer. A failed call changed nothing, so it invalidates
  nothing. A result whose `content` is not a list is left alone (it is not a tools/call result we understand);
  a missing `content` becomes just the block.
- Inputs are never mutated: changed results are new dicts (shallow: untouched tools and blocks are shared).
- An observer that raises is logged and ignored: State Sync must never break the call it decorates.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcpwatch.clock import SYSTEM_CLOCK, Clock
from mcpwatch.reliability.statesync.overlap import OverlapWarning, detect_overlaps
from mcpwatch.reliability.statesync.policy import CACHE_MAX, PolicyEngine
from mcpwatch.reliability.statesync.validate import Policy

if TYPE_CHECKING:
    from mcpwatch.reliability.settings import StateSyncSettings

log = logging.getLogger(__name__)

STALE_URI_PREFIX = "mcpwatch://stale/"
_TAG_OPEN = "[Cache-Control:"
_UNSET = object()


@dataclass(frozen=True)
class InvalidationEvent:
    caused_by: str
    patterns: tuple[str, ...]
    timestamp: float  # unix seconds (the clock's time())

    def to_dict(self) -> dict[str, Any]:
        return {"caused_by": self.caused_by, "patterns": list(self.patterns), "timestamp": self.timestamp}


def cache_control_tag(directive: str) -> str:
    return f"[Cache-Control: {directive}]"


def decorate_description(description: str | None, directive: str) -> str:
    """`description` ending in exactly one tag for `directive`."""
    base = _strip_tags(description or "")
    tag = cache_control_tag(directive)
    return f"{base} {tag}" if base else tag


def _strip_tags(text: str) -> str:
    """`text` without trailing whitespace and trailing `[Cache-Control: …]` tags (linear: no regex backtracking)."""
    text = text.rstrip()
    while text.endswith("]"):
        start = text.rfind(_TAG_OPEN)
        if start < 0 or "]" in text[start:-1]:
            break
        text = text[:start].rstrip()
    return text


def invalidation_text(caused_by: str, patterns: Sequence[str]) -> str:
    return f"[System: Cache invalidated for {', '.join(patterns)} — caused by {caused_by}]"


def resource_notifications(event: InvalidationEvent) -> list[dict[str, Any]]:
    """One `notifications/resources/updated` per invalidated pattern, for clients that subscribe to staleness."""
    return [
        {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": f"{STALE_URI_PREFIX}{pattern}"},
        }
        for pattern in event.patterns
    ]


def policies_from_settings(settings: StateSyncSettings) -> tuple[Policy, ...]:
    """The settings' policies, validated (raises `StateSyncConfigError` on a bad one)."""
    return PolicyEngine(settings.policies, settings.default_cache_control).policies


class StateSync:
    """The State Sync layer for one wrapper: validates at construction, then decorates results."""

    def __init__(
        self,
        policies: Sequence[Mapping[str, object]] | Sequence[Policy],
        default_cache_control: str | None = None,
        *,
        on_invalidation: Callable[[InvalidationEvent], None] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.engine = PolicyEngine(policies, default_cache_control)
        self.overlaps: list[OverlapWarning] = detect_overlaps(self.engine.policies)
        self._on_invalidation = on_invalidation
        self._clock = clock
        self._descriptions: dict[tuple[object, object], str | None] = {}  # (name, description) as a tool gave them
        self.observer_errors = 0

    @classmethod
    def from_settings(
        cls,
        settings: StateSyncSettings,
        *,
        on_invalidation: Callable[[InvalidationEvent], None] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> StateSync:
        return cls(settings.policies, settings.default_cache_control, on_invalidation=on_invalidation, clock=clock)

    @property
    def policies(self) -> tuple[Policy, ...]:
        return self.engine.policies

    @property
    def enabled(self) -> bool:
        """False when there is nothing to do: no policies and no default."""
        return bool(self.engine.policies) or self.engine.default_cache_control is not None

    def summary(self) -> dict[str, Any]:
        """For the operator status: how many policies, the default, and the overlap warnings."""
        return {
            "policies": len(self.engine.policies),
            "default_cache_control": self.engine.default_cache_control,
            "overlaps": [w.message for w in self.overlaps],
        }

    # --- tools/list -----------------------------------------------------------------------------------------

    def decorate_tools(self, result: dict[str, Any]) -> dict[str, Any]:
        """A copy of a tools/list result with each tool's description carrying its cache directive."""
        out = dict(result)
        tools = result.get("tools")
        if not isinstance(tools, list):
            return out
        cache = self._descriptions
        decorated_tools: list[Any] = []
        append = decorated_tools.append
        for tool in tools:
            if not isinstance(tool, dict):
                append(tool)
                continue
            name = tool.get("name")
            description = tool.get("description")
            key = (name, description)
            try:
                decorated = cache.get(key, _UNSET)
            except TypeError:  # unhashable name or description: malformed, leave it alone
                append(tool)
                continue
            if decorated is _UNSET:
                decorated = self._decorated_description(name, description)
                if len(cache) >= CACHE_MAX:
                    cache.clear()
                cache[key] = decorated
            if decorated is None or decorated == description:
                append(tool)
            else:
                append({**tool, "description": decorated})
        out["tools"] = decorated_tools
        return out

    def _decorated_description(self, name: object, description: object) -> str | None:
        if not isinstance(name, str) or (description is not None and not isinstance(description, str)):
            return None
        resolved = self.engine.resolve(name)
        if resolved is None or resolved.cache_control is None:
            return None
        return decorate_description(description, resolved.cache_control)

    # --- tools/call -----------------------------------------------------------------------------------------

    def invalidates(self, tool_name: str) -> bool:
        """Whether the tool's policy invalidates something: a mutation, whose answer changes what others cached."""
        resolved = self.engine.resolve(tool_name)
        return resolved is not None and bool(resolved.invalidates)

    def decorate_call(self, tool_name: str, result: dict[str, Any]) -> tuple[dict[str, Any], InvalidationEvent | None]:
        """The result with the invalidation block first, and the event; or the result unchanged and None."""
        if not isinstance(result, dict) or not isinstance(tool_name, str):
            return result, None
        resolved = self.engine.resolve(tool_name)
        if resolved is None or not resolved.invalidates or result.get("isError") is True:
            return result, None
        content = result.get("content")
        if content is None:
            content = []
        elif not isinstance(content, list):
            return result, None
        block = {"type": "text", "text": invalidation_text(tool_name, resolved.invalidates)}
        decorated = {**result, "content": [block, *content]}
        event = InvalidationEvent(tool_name, resolved.invalidates, self._clock.time())
        self._notify(event)
        return decorated, event

    def _notify(self, event: InvalidationEvent) -> None:
        if self._on_invalidation is None:
            return
        try:
            self._on_invalidation(event)
        except Exception:
            self.observer_errors += 1
            log.warning("state sync: the invalidation observer failed for %s", event.caused_by, exc_info=True)
