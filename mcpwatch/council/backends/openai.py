"""Any OpenAI-compatible chat-completions endpoint (OpenRouter by default), over async HTTP.

Classification, so the council's taxonomy applies: 200 with content → the text; 429 → rate_limit with the
Retry-After header (seconds or an HTTP date) when present; 401/403 → auth; 5xx (and 408) → server;
other 4xx → client; connection failures → network; the per-call timeout → timeout. OpenRouter sometimes
answers 200 with an `error` object; that is classified by its code the same way. A reply is read up to
REPLY_BYTES_MAX, uncompressed (the request asks for `identity`): a larger one is a bad_response, and the rest of it
is never read.
"""

from __future__ import annotations

import email.utils
import json
import math
import time
from typing import Any

import httpx2

from mcpwatch import __version__
from mcpwatch.council.backends.base import BackendError, CallRequest, Purpose
from mcpwatch.council.catalog import guess_min_tier

# Rough latencies by tier class (seconds at time scale 1), for the health check's estimates only.
_TYPICAL_S = {"quick": 4.0, "balanced": 12.0, "high": 25.0, "reasoning": 90.0}
_PURPOSE_FACTOR = {"answer": 1.0, "review": 0.6, "synthesis": 0.8, "probe": 0.1}
MAX_RETRY_AFTER_S = 3600.0
REPLY_BYTES_MAX = 8 * 1024 * 1024  # a chat completion is kilobytes; a peer sending more is not giving an answer


class _TooLarge(Exception):
    pass


async def _read_capped(response: httpx2.Response, limit: int) -> bytes:
    """The raw body, at most `limit` bytes; a compressed body (asked not to be) could expand without bound."""
    if response.headers.get("content-encoding", "identity").strip().lower() not in ("", "identity"):
        raise _TooLarge(f"a {response.headers['content-encoding']}-encoded reply (identity was asked for)")
    body = bytearray()
    async for chunk in response.aiter_raw():
        body += chunk
        if len(body) > limit:
            raise _TooLarge(f"a reply over {limit // (1024 * 1024)} MiB")
    return bytes(body)


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Retry-After as seconds (delta-seconds or an HTTP date); None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def _error_message(body: Any, fallback: str) -> str:
    if isinstance(body, dict):
        error = body.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        if isinstance(message, str):
            return message[:300]
        if isinstance(error, str):
            return error[:300]
    return fallback


def classify(status: int, body: Any, retry_after: str | None) -> BackendError | str:
    """The reply text, or the BackendError this HTTP outcome stands for."""
    if status == 200 and isinstance(body, dict) and isinstance(body.get("error"), dict):
        code = body["error"].get("code")
        status = code if isinstance(code, int) and 400 <= code <= 599 else 502
    if status == 200:
        try:
            content = body["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return BackendError("bad_response", "HTTP 200 without choices[0].message.content", status=200)
        if not isinstance(content, str) or not content.strip():
            return BackendError("bad_response", "HTTP 200 with empty message content", status=200)
        return content
    message = _error_message(body, "")
    detail = f"HTTP {status}" + (f": {message}" if message else "")
    if status == 429:
        return BackendError("rate_limit", detail, status=429, retry_after_s=parse_retry_after(retry_after))
    if status in (401, 403):
        return BackendError("auth", detail, status=status)
    if status >= 500 or status == 408:
        return BackendError("server", detail, status=status)
    return BackendError("client", detail, status=status)


class OpenAIBackend:
    name = "openai"
    requires_key = True

    def __init__(self, *, base_url: str, api_key: str | None, time_scale: float = 1.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.time_scale = time_scale
        self._client: httpx2.AsyncClient | None = None

    @property
    def key_configured(self) -> bool:
        return bool(self.api_key)

    def typical_latency_s(self, model: str, purpose: Purpose) -> float:
        return _TYPICAL_S[guess_min_tier(model)] * _PURPOSE_FACTOR[purpose] * self.time_scale

    def _http(self) -> httpx2.AsyncClient:
        if self._client is None:
            self._client = httpx2.AsyncClient(
                headers={"X-Title": f"mcpwatch council {__version__}"},
                follow_redirects=False,
            )
        return self._client

    async def complete(self, request: CallRequest) -> str:
        if not self.api_key:
            raise BackendError("auth", "no API key is configured (set OPENROUTER_API_KEY)")
        body: dict[str, Any] = {"model": request.model, "messages": request.messages}
        if request.purpose == "probe":
            body["max_tokens"] = 1
        timeout = max(request.timeout_s, 0.001)
        try:
            async with self._http().stream(
                "POST",
                f"{self.base_url}/chat/completions",
                json=body,
                headers={"Authorization": f"Bearer {self.api_key}", "Accept-Encoding": "identity"},
                timeout=httpx2.Timeout(timeout, connect=min(timeout, 10.0)),
            ) as response:
                data = await _read_capped(response, REPLY_BYTES_MAX)
        except httpx2.TimeoutException as exc:
            raise BackendError("timeout", f"no reply within {timeout:.3g}s ({type(exc).__name__})") from None
        except httpx2.TransportError as exc:
            raise BackendError("network", f"network error: {type(exc).__name__}: {exc}") from None
        except _TooLarge as exc:
            status = response.status_code
            raise BackendError("bad_response", f"HTTP {status} with {exc}", status=status) from None
        try:
            payload: Any = json.loads(data)
        except ValueError:  # not JSON, or not UTF-8
            payload = None
        if response.status_code == 200 and payload is None:
            raise BackendError("bad_response", "HTTP 200 with a body that is not JSON", status=200)
        outcome = classify(response.status_code, payload, response.headers.get("retry-after"))
        if isinstance(outcome, BackendError):
            raise outcome
        return outcome

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
