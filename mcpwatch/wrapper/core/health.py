"""Health checks of the upstream: MCP ping, then its health tool (named in the settings, or the council's when the
upstream offers it), and how a health tool's answer reads as ok / not ok."""

from __future__ import annotations

from typing import Any

from mcpwatch.events import HealthCheckData, Kind
from mcpwatch.scheduler import Scheduler
from mcpwatch.wire import DEFAULT_HEALTH_TOOL
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.core.session import UpstreamSession
from mcpwatch.wrapper.framing import frames


async def health_check(
    session: UpstreamSession,
    recorder: Recorder,
    scheduler: Scheduler,
    *,
    health_tool: str | None,
    host_initialised: bool,
    timeout: float = 15.0,
) -> HealthCheckData:
    """MCP ping, then the upstream's health tool when it has one; the result is logged as an event."""
    result = HealthCheckData(ok=False, ping_ms=None, tool=None, result=None, error=None, latency_ms=0.0)
    started = scheduler.time()
    try:
        reply = await session.request("ping", None, timeout)
        result["ping_ms"] = round((scheduler.time() - started) * 1000, 2)
        if reply is not None and "error" in reply:
            result["error"] = f"ping failed: {frames.text_of(reply['error'], 300)}"
        elif not host_initialised:
            result["ok"] = True
            result["error"] = "the upstream has not been initialised by a host yet; health tool not called"
        else:
            tool = health_tool or await _find_health_tool(session, timeout)
            result["ok"] = True
            if tool:
                result["tool"] = tool
                call = await session.request("tools/call", {"name": tool, "arguments": {}}, timeout)
                result["result"], result["ok"], result["error"] = tool_payload(call)
    except TimeoutError:
        result["error"] = f"no answer within {timeout:g} s"
    except ConnectionError as exc:
        result["error"] = str(exc)
    result["latency_ms"] = round((scheduler.time() - started) * 1000, 2)
    recorder.emit(Kind.HEALTH_CHECK, **result)
    return result


async def _find_health_tool(session: UpstreamSession, timeout: float) -> str | None:
    reply = await session.request("tools/list", {}, timeout)
    tools = (reply or {}).get("result", {}).get("tools", [])
    names = [t.get("name") for t in tools if isinstance(t, dict)]
    return DEFAULT_HEALTH_TOOL if DEFAULT_HEALTH_TOOL in names else None


def tool_payload(reply: dict[str, Any] | None) -> tuple[Any, bool, str | None]:
    """A health tool's answer as (payload, ok, error)."""
    if reply is None:
        return None, False, "no answer"
    if "error" in reply:
        return None, False, frames.text_of(reply["error"], 300)
    result = reply.get("result") or {}
    payload: Any = result.get("structuredContent")
    if payload is None:
        for block in result.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "text":
                try:
                    payload = frames.decode(block["text"])
                except ValueError:
                    payload = block["text"]
                break
    if isinstance(payload, dict) and set(payload) == {"result"} and isinstance(payload["result"], dict):
        payload = payload["result"]
    ok = result.get("isError") is not True
    if isinstance(payload, dict) and payload.get("ready") is False:
        ok = False
    return payload, ok, None if ok else "the health tool reported a problem"
