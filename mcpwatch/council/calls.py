"""One model call under a time window, with the seed's failure taxonomy.

* timeout: the window closed; not retried (the time is spent).
* 429: retried with backoff, honouring Retry-After, but only while the wait fits the window; else `rate_limited`.
* 401: the key is bad for everyone: `auth_error`, and the shared `AuthGate` trips so the council stops calling.
* 403: this key may not use this model: `auth_error` at once, no retry (other models go on).
* network errors and 5xx: a short backoff and one more try (a different strategy from timeouts); else `error`.
Waits are multiplied by the time scale, like every other duration.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from mcpwatch.council.backends.base import Backend, BackendError, CallRequest, Purpose

log = logging.getLogger(__name__)

STATUSES = ("ok", "timeout", "rate_limited", "auth_error", "error")


@dataclass
class CallOutcome:
    """What became of one model's call; `status` is pending until it settles."""

    model: str
    status: str = "pending"
    latency_ms: int | None = None
    text: str | None = None
    error: str | None = None
    error_type: str | None = None  # timeout | rate_limit | auth | network | server | client | bad_response
    http_status: int | None = None
    retry_after_s: float | None = None
    attempts: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.status != "pending"

    def public(self, *, with_text: bool = True) -> dict[str, Any]:
        """The per-model entry of the result schema."""
        out: dict[str, Any] = {"status": self.status, "latency_ms": self.latency_ms}
        if self.status == "ok" and with_text:
            out["response"] = self.text
        if self.error:
            out["error"] = self.error
        if self.error_type:
            out["error_type"] = self.error_type
        if self.http_status is not None:
            out["http_status"] = self.http_status
        if self.status == "rate_limited" and self.retry_after_s is not None:
            out["retry_after"] = round(self.retry_after_s, 3)
        out["attempts"] = self.attempts
        out.update(self.extra)
        return out


@dataclass(frozen=True)
class RetryPolicy:
    time_scale: float = 1.0
    rate_limit_attempts: int = 3
    transient_attempts: int = 2  # network errors and 5xx
    backoff_base_s: float = 1.0  # at time scale 1: 1 s, 2 s, 4 s, …
    backoff_max_s: float = 30.0

    def backoff_s(self, attempt: int) -> float:
        return min(self.backoff_base_s * 2.0 ** (attempt - 1), self.backoff_max_s) * self.time_scale


class AuthGate:
    """Trips on the first 401: every later call is refused and in-flight stages are told to stop."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.tripped = anyio.Event()

    def trip(self, model: str, status: int | None, detail: str = "") -> None:
        if self.reason is None:
            self.reason = f"the API key was rejected (HTTP {status} on {model})" if status else detail
            self.tripped.set()

    @property
    def is_tripped(self) -> bool:
        return self.reason is not None


RetryHook = Callable[[str, int, float, str], Awaitable[None]]  # model, next attempt, wait seconds, why


def format_seconds(seconds: float) -> str:
    return f"{seconds:.3g}s" if seconds < 10 else f"{seconds:.0f}s"


async def call_model(
    backend: Backend,
    outcome: CallOutcome,
    *,
    messages: list[dict[str, str]],
    purpose: Purpose,
    query: str,
    window_end: float,
    policy: RetryPolicy,
    gate: AuthGate,
    on_retry: RetryHook | None = None,
    window_s: float | None = None,
) -> CallOutcome:
    """Fill `outcome` in place (so a cancelled caller still sees how far it got) and return it.

    `window_s` is how the window is described in a timeout message (default: its length from now).
    """
    start = anyio.current_time()
    if window_s is None:
        window_s = max(0.0, window_end - start)

    def settle(status: str, **fields: Any) -> CallOutcome:
        outcome.latency_ms = round((anyio.current_time() - start) * 1000)
        outcome.status = status
        for key, value in fields.items():
            setattr(outcome, key, value)
        return outcome

    if gate.is_tripped:
        return settle("auth_error", error=f"not attempted: {gate.reason}", error_type="auth")
    while True:
        outcome.attempts += 1
        remaining = window_end - anyio.current_time()
        if remaining <= 0:
            return settle("timeout", error=f"timeout after {format_seconds(window_s)}", error_type="timeout")
        request = CallRequest(
            model=outcome.model,
            messages=messages,
            purpose=purpose,
            query=query,
            timeout_s=remaining,
            attempt=outcome.attempts,
        )
        try:
            with anyio.fail_after(remaining):
                text = await backend.complete(request)
            return settle("ok", text=text, error=None, error_type=None)
        except TimeoutError:
            return settle("timeout", error=f"timeout after {format_seconds(window_s)}", error_type="timeout")
        except BackendError as exc:
            failure = exc
        retry_wait = _retry_wait(failure, outcome.attempts, policy)
        if failure.kind == "auth":
            if failure.status != 403:
                gate.trip(outcome.model, failure.status, str(failure))
            return settle("auth_error", error=str(failure), error_type="auth", http_status=failure.status)
        if failure.kind == "timeout":
            return settle("timeout", error=f"timeout after {format_seconds(window_s)}", error_type="timeout")
        if retry_wait is not None and anyio.current_time() + retry_wait < window_end and not gate.is_tripped:
            why = "rate limited (429)" if failure.kind == "rate_limit" else f"{failure.kind} error: {failure}"
            log.info("%s: %s; retrying in %.3fs", outcome.model, why, retry_wait)
            if on_retry is not None:
                await on_retry(outcome.model, outcome.attempts + 1, retry_wait, why)
            await anyio.sleep(retry_wait)
            continue
        if failure.kind == "rate_limit":
            note = f"{failure}" + (f" (Retry-After {failure.retry_after_s:g}s)" if failure.retry_after_s else "")
            if retry_wait is not None and not gate.is_tripped:
                note += "; the wait does not fit the time left"
            return settle(
                "rate_limited",
                error=note,
                error_type="rate_limit",
                http_status=failure.status or 429,
                retry_after_s=failure.retry_after_s,
            )
        return settle("error", error=str(failure), error_type=failure.kind, http_status=failure.status)


def _retry_wait(failure: BackendError, attempt: int, policy: RetryPolicy) -> float | None:
    """How long to wait before the next attempt, or None when this failure is not retried (any more)."""
    if failure.kind == "rate_limit":
        if attempt >= policy.rate_limit_attempts:
            return None
        if failure.retry_after_s is not None:
            return failure.retry_after_s * policy.time_scale
        return policy.backoff_s(attempt)
    if failure.kind in ("network", "server"):
        if attempt >= policy.transient_attempts:
            return None
        return policy.backoff_s(attempt) / 2
    return None
