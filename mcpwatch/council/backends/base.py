"""The backend contract: one chat completion per call, failures raised as classified `BackendError`s.

Backends do not retry and do not budget time; the caller (`council.calls`) owns both, so the failure
taxonomy (429 backoff, auth fail-fast, network versus timeout) is the same whatever the backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

Purpose = Literal["answer", "review", "synthesis", "probe"]
ErrorKind = Literal["rate_limit", "auth", "network", "server", "client", "bad_response", "timeout"]


@dataclass(frozen=True)
class CallRequest:
    model: str
    messages: list[dict[str, str]]
    purpose: Purpose
    query: str  # the user's question (the simulated backend writes about it; the HTTP one ignores it)
    timeout_s: float  # what is left of this call's window; the caller enforces it too
    attempt: int = 1


class BackendError(Exception):
    """A classified failure of one call."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        status: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.status = status
        self.retry_after_s = retry_after_s


class Backend(Protocol):
    name: str
    requires_key: bool  # does this backend need an API key at all?

    @property
    def key_configured(self) -> bool: ...

    async def complete(self, request: CallRequest) -> str:
        """The model's reply text, or raise BackendError (cancellation is honoured at any await)."""
        ...

    async def aclose(self) -> None: ...

    def typical_latency_s(self, model: str, purpose: Purpose) -> float:
        """A rough expected latency (already time-scaled), for the health check's duration estimates."""
        ...
