"""The operator's `call_upstream`: one tools/call sent to the upstream on the operator's behalf (the console uses it
for the council's admin tools, `council.models.disable/enable`).

It goes over the wrapper's own upstream connection, so it reaches the same process the hosts use; it is logged as
an `operator_call` event; and when State Sync says the tool is a mutation, the hosts get the same invalidation
hints as if one of them had called it, so none keeps a stale answer.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from mcpwatch.events import Kind
from mcpwatch.reliability.statesync import resource_notifications
from mcpwatch.wrapper.core.health import tool_payload
from mcpwatch.wrapper.framing import frames

if TYPE_CHECKING:
    from mcpwatch.wrapper.operator.operated import OperatedCore

MAX_NAME = 200
MAX_ARGUMENTS_BYTES = 64 * 1024
DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 300.0
PREVIEW_CHARS = 4096


class CallRefused(ValueError):
    """The request itself is wrong (name, arguments, timeout): said in one line, nothing sent upstream."""


def check_call(name: Any, arguments: Any, timeout_s: Any) -> tuple[str, dict[str, Any], float]:
    """Validate what the operator asked for."""
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
        raise CallRefused(f"name must be a tool name (1 to {MAX_NAME} characters)")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise CallRefused("arguments must be an object")
    if len(frames.encode(arguments)) > MAX_ARGUMENTS_BYTES:
        raise CallRefused(f"arguments must be at most {MAX_ARGUMENTS_BYTES // 1024} KiB")
    if timeout_s is None:
        timeout_s = DEFAULT_TIMEOUT_S
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not math.isfinite(timeout_s):
        raise CallRefused("timeout_s must be a number of seconds")
    if not 0 < timeout_s <= MAX_TIMEOUT_S:
        raise CallRefused(f"timeout_s must be more than 0 and at most {MAX_TIMEOUT_S:g}")
    return name, arguments, float(timeout_s)


async def call_upstream(core: OperatedCore, name: str, arguments: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """Send the call, log it, pass on State Sync's hints; returns {tool, ok, result, error, duration_s}."""
    scheduler, recorder = core.scheduler, core.recorder
    started = scheduler.time()
    outcome: dict[str, Any] = {"tool": name, "ok": False, "result": None, "error": None}
    try:
        reply = await core.session.request("tools/call", {"name": name, "arguments": arguments}, timeout_s)
        payload, ok, error = tool_payload(reply)
        outcome.update(result=payload, ok=ok)
        if not ok:
            outcome["error"] = error if error != "the health tool reported a problem" else _error_text(payload)
        elif reply is not None and core.state_sync is not None:
            _invalidate(core, name, reply.get("result") or {})
    except TimeoutError:
        outcome["error"] = f"no answer within {timeout_s:g} s"
    except ConnectionError as exc:
        outcome["error"] = str(exc)
    outcome["duration_s"] = round(scheduler.time() - started, 6)
    recorder.emit(
        Kind.OPERATOR_CALL,
        tool=name,
        arguments=frames.text_of(arguments, PREVIEW_CHARS),
        ok=outcome["ok"],
        error=outcome["error"],
        result_preview=frames.text_of(outcome["result"], PREVIEW_CHARS),
        duration_s=outcome["duration_s"],
    )
    return outcome


def _error_text(payload: Any) -> str:
    if isinstance(payload, str) and payload.strip():
        return payload.strip()[:300]
    return "the tool reported an error"


def _invalidate(core: OperatedCore, name: str, result: dict[str, Any]) -> None:
    assert core.state_sync is not None
    _, event = core.state_sync.decorate_call(name, result)
    if event is None:
        return
    core.counters.invalidations += 1
    core.recorder.emit(Kind.INVALIDATION, tool=name, caused_by=event.caused_by, patterns=list(event.patterns))
    for notification in resource_notifications(event):
        for link in list(core.links):
            link.send(notification)
