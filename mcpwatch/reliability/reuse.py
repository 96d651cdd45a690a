"""Opt-in reuse of late results: the next identical call to a safe tool gets a result that finished after its deadline.

Pure: no I/O, no transport. An identical call is the same tool with the same arguments once canonicalised (keys
sorted, no insignificant whitespace), from the same host connection and the same host (name and version): one host
never sees another's results. Every part of the key is a value the wrapper gave or read, never an object's identity
(a freed object's id is soon another's). A request with no connection of its own (a sessionless 2026-era request)
is never reused: nothing it sends proves it comes from the host whose call was cut. Memory
is bounded: arguments over 64 KiB are never matched, and the store keeps at most 256 results and 32 MiB. Only
successful results are kept; each answers at most one later call, within its policy's TTL counted from its arrival.
A tool State Sync treats as a mutation (its policy has `invalidates`) is never reused, whatever the reuse policies say.
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcpwatch.clock import SYSTEM_CLOCK, Clock
from mcpwatch.reliability.settings import ReusePolicy
from mcpwatch.reliability.statesync.glob import SEPARATOR, match_segments

STORE_MAX = 256  # stored late results; the oldest goes first
STORE_BYTES_MAX = 32 * 1024 * 1024  # and at most this many bytes of them
ARGUMENTS_MAX = 64 * 1024  # a call with longer canonical arguments is never reused (nor remembered for it)
META_KEY = "dev.mcpwatch/late_result"


def canonical_arguments(arguments: Any) -> str | None:
    """The arguments as canonical JSON text, or None when they cannot be (then the call is never reused)."""
    try:
        text = json.dumps(
            {} if arguments is None else arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
    except (TypeError, ValueError, RecursionError):
        return None
    return text if len(text) <= ARGUMENTS_MAX else None


@dataclass(frozen=True, slots=True)
class ReuseKey:
    """What makes two calls identical for reuse."""

    connection: str  # the host connection, named once by its front and never given to another (see HostLink)
    host: tuple[str | None, str | None]  # the clientInfo name and version the host gave
    tool: str
    arguments: str  # canonical JSON


@dataclass(frozen=True, slots=True)
class StoredResult:
    """A late successful result kept for reuse."""

    tool: str
    request_id: str | None  # the call that was cut
    result: dict[str, Any]
    delay_s: float  # how long after its cut it finished
    arrived_at: float  # the clock's monotonic seconds
    ttl_s: float
    size_bytes: int = 0


@dataclass(frozen=True, slots=True)
class Reuse:
    """A stored result given to a new call: what to answer and what to log."""

    stored: StoredResult
    age_s: float
    result: dict[str, Any]


def reuse_note(delay_s: float, age_s: float) -> str:
    """The text a reused result starts with, so the model reading it knows where it came from."""
    return (
        f"[mcpwatch: result of an identical call that finished {_whole(delay_s)} s after its deadline, "
        f"{_whole(age_s)} s ago]"
    )


def _whole(seconds: float) -> str:
    return f"{seconds:.0f}" if seconds >= 10 else f"{seconds:.1f}".removesuffix(".0")


def marked_result(stored: StoredResult, age_s: float) -> dict[str, Any]:
    """The stored result with the note as its first text block and the facts in `_meta`."""
    result = dict(stored.result)
    content = result.get("content")
    note = {"type": "text", "text": reuse_note(stored.delay_s, age_s)}
    result["content"] = [note, *content] if isinstance(content, list) else [note]
    meta = dict(result["_meta"]) if isinstance(result.get("_meta"), dict) else {}
    meta[META_KEY] = {
        "request_id": stored.request_id,
        "delay_s": round(stored.delay_s, 3),
        "age_s": round(age_s, 3),
        "ttl_s": stored.ttl_s,
    }
    result["_meta"] = meta
    return result


class LateResultReuse:
    """The reuse policies and the store of late results they allow."""

    def __init__(
        self,
        policies: Sequence[ReusePolicy],
        *,
        is_mutation: Callable[[str], bool] = lambda tool: False,
        clock: Clock = SYSTEM_CLOCK,
        store_max: int = STORE_MAX,
        store_bytes_max: int = STORE_BYTES_MAX,
    ) -> None:
        self.policies = tuple(policies)
        self._segments = [(policy, policy.match.split(SEPARATOR)) for policy in self.policies]
        self._is_mutation = is_mutation
        self.clock = clock
        self._store_max = store_max
        self._store_bytes_max = store_bytes_max
        self._store_bytes = 0
        self._store: OrderedDict[ReuseKey, StoredResult] = OrderedDict()

    @property
    def enabled(self) -> bool:
        return bool(self.policies)

    def __len__(self) -> int:
        return len(self._store)

    def policy_for(self, tool: str) -> ReusePolicy | None:
        """The first reuse policy matching the tool, unless State Sync says the tool mutates."""
        if not self.policies or not isinstance(tool, str):
            return None
        segments = tool.split(SEPARATOR)
        for policy, pattern in self._segments:
            if match_segments(pattern, segments):
                return None if self._is_mutation(tool) else policy
        return None

    def refused_as_mutation(self, tool: str) -> bool:
        """True when a reuse policy matches the tool but State Sync's mutation guard wins."""
        if not self.policies or not isinstance(tool, str) or not self._is_mutation(tool):
            return False
        segments = tool.split(SEPARATOR)
        return any(match_segments(pattern, segments) for _, pattern in self._segments)

    def key(
        self, connection: str | None, host: tuple[str | None, str | None], tool: str, arguments: Any
    ) -> ReuseKey | None:
        """The identity of a call for reuse, or None when no policy allows it or it has no connection of its own."""
        if connection is None or self.policy_for(tool) is None:
            return None
        canonical = canonical_arguments(arguments)
        return None if canonical is None else ReuseKey(connection, host, tool, canonical)

    def keep(
        self, key: ReuseKey, result: Any, *, request_id: str | None, delay_s: float, size_bytes: int = 0
    ) -> StoredResult | None:
        """Store a late successful result (isError true is not a success); returns what was stored."""
        policy = self.policy_for(key.tool)
        if policy is None or not isinstance(result, dict) or result.get("isError") is True:
            return None
        if not math.isfinite(delay_s) or size_bytes > self._store_bytes_max:
            return None
        stored = StoredResult(key.tool, request_id, result, delay_s, self.clock.monotonic(), policy.ttl_s, size_bytes)
        self._drop(key)
        self._store[key] = stored
        self._store_bytes += size_bytes
        while len(self._store) > self._store_max or self._store_bytes > self._store_bytes_max:
            self._drop(next(iter(self._store)))
        return stored

    def _drop(self, key: ReuseKey) -> None:
        stored = self._store.pop(key, None)
        if stored is not None:
            self._store_bytes -= stored.size_bytes

    def take(self, key: ReuseKey | None) -> Reuse | None:
        """The stored result for this call if one is still within its TTL; it answers this call only."""
        if key is None:
            return None
        stored = self._store.get(key)
        if stored is None:
            return None
        age = self.clock.monotonic() - stored.arrived_at
        self._drop(key)
        if age >= stored.ttl_s or self.policy_for(key.tool) is None:
            return None
        return Reuse(stored, age, marked_result(stored, age))

    def forget_connection(self, connection: str | None) -> None:
        """A host connection went away: its stored results can answer no one."""
        for key in [k for k in self._store if k.connection == connection]:
            self._drop(key)
