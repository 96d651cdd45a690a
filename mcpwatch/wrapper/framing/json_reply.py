"""A JSON payload as one whole HTTP response, encoded as every frame the wrapper writes (`frames.encode`: integers
beyond 64 bits and lone surrogates pass unchanged). The front and the operator endpoint both answer this way."""

from __future__ import annotations

from typing import Any

from mcpwatch.httpserve.asgi import respond
from mcpwatch.wrapper.framing import frames


async def respond_json(send: Any, status: int, payload: Any, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = b"" if payload is None else frames.encode(payload)
    await respond(send, status, body, b"application/json", extra)
