"""MCP Tasks on the wire, both eras, read into one shape: no transport, no state.

2025-11-25 (SEP-1686): a `tools/call` carrying `params.task` is answered with `{"task": Task}`; `tasks/get` answers a
`Task` (`ttl`, `pollInterval` in ms); `tasks/result` answers the call's own result; `notifications/tasks/status`
carries a `Task`. The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): the answer is the `Task` itself
with `resultType: "task"` (`ttlMs`, `pollIntervalMs`); `tasks/get` carries the result (or error) once terminal;
`notifications/tasks` carries the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

Era = Literal["2025-11-25", "extension"]
Status = Literal["working", "input_required", "completed", "failed", "cancelled"]

STATUSES: frozenset[str] = frozenset({"working", "input_required", "completed", "failed", "cancelled"})
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
POLL_METHODS: frozenset[str] = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "tasks/update"})
STATUS_NOTIFICATIONS: frozenset[str] = frozenset({"notifications/tasks/status", "notifications/tasks"})
RELATED_TASK_META = "io.modelcontextprotocol/related-task"
INVALID_PARAMS = -32602  # the spec's code for a bad task id, or a cancel of a finished task
METHOD_NOT_FOUND = -32601
INPUT_ROUNDS_MAX = 10  # input request rounds relayed per task (the SDK clients' own bound on multi round-trips)
MISSING_CAPABILITY = -32021  # the 2026 era's "the client did not declare a capability this request needs"
EXTENSION = "io.modelcontextprotocol/tasks"
CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
ENVELOPE_META = (
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientInfo",
    CLIENT_CAPABILITIES_META,
)


@dataclass(frozen=True, slots=True)
class TaskState:
    """One observation of a task: what its receiver said about it at one moment."""

    task_id: str
    status: Status
    status_message: str | None
    ttl_ms: int | None
    poll_interval_ms: int | None
    era: Era
    updated_at: str | None = None  # lastUpdatedAt: an older observation than the last one seen is stale
    result: Any = None  # the extension's terminal tasks/get: the call's result, inline
    error: Any = None  # … or its JSON-RPC error
    input_requests: Any = None  # the extension's input_required tasks/get: the requests outstanding, by key

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL


MS_MAX = 10**15  # about 31,700 years: a longer time (a 400-digit JSON number) is held here, where floats still work


def _ms(value: Any) -> int | None:
    """A time in ms a peer stated: a number of at least 0, held at MS_MAX (an int of any size is legal JSON, and
    dividing one beyond a float's range raises); anything else is None."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not value >= 0:
        return None
    return int(min(value, MS_MAX))


def read_task(raw: Any, era: Era) -> TaskState | None:
    """A `Task` object as either era writes it, or None when it is not one (no string id, an unknown status)."""
    if not isinstance(raw, dict):
        return None
    task_id, status = raw.get("taskId"), raw.get("status")
    if not isinstance(task_id, str) or not task_id or status not in STATUSES:
        return None
    message, updated = raw.get("statusMessage"), raw.get("lastUpdatedAt")
    ttl_key, poll_key = ("ttl", "pollInterval") if era == "2025-11-25" else ("ttlMs", "pollIntervalMs")
    return TaskState(
        task_id=task_id,
        status=status,
        status_message=message if isinstance(message, str) else None,
        ttl_ms=_ms(raw.get(ttl_key)),
        poll_interval_ms=_ms(raw.get(poll_key)),
        era=era,
        updated_at=updated if isinstance(updated, str) else None,
        result=raw.get("result") if era == "extension" else None,
        error=raw.get("error") if era == "extension" else None,
        input_requests=raw.get("inputRequests") if era == "extension" else None,
    )


def created_task(result: Any) -> TaskState | None:
    """The task a `tools/call` answer creates (a `CreateTaskResult` of either era), else None: an ordinary result."""
    if not isinstance(result, dict):
        return None
    if result.get("resultType") == "task":
        return read_task(result, "extension")
    if "task" in result and "content" not in result:
        return read_task(result["task"], "2025-11-25")
    return None


def polled_task(method: str, result: Any, era: Era) -> list[TaskState]:
    """What one poll's answer says about tasks: `tasks/get` and `tasks/cancel` one, `tasks/list` each listed."""
    if method == "tasks/list" and isinstance(result, dict) and isinstance(result.get("tasks"), list):
        return [t for t in (read_task(raw, era) for raw in result["tasks"]) if t is not None]
    if method in ("tasks/get", "tasks/cancel"):
        task = read_task(result, era)
        return [] if task is None else [task]
    return []


def notified_task(message: dict[str, Any]) -> TaskState | None:
    """The task a status notification carries (either era), else None."""
    method = message.get("method")
    if method not in STATUS_NOTIFICATIONS:
        return None
    era: Era = "2025-11-25" if method == "notifications/tasks/status" else "extension"
    return read_task(message.get("params"), era)


def poll_task_id(params: Any) -> str | None:
    """The task a poll names: its `params.taskId` is the source of truth (the spec: related-task _meta is ignored)."""
    task_id = params.get("taskId") if isinstance(params, dict) else None
    return task_id if isinstance(task_id, str) else None


def call_outcome(result: Any, error: Any) -> Literal["ok", "tool_error", "error"]:
    """How the task's underlying call ended: a JSON-RPC error, a tool error (`isError`), or ok."""
    if error is not None:
        return "error"
    return "tool_error" if isinstance(result, dict) and result.get("isError") is True else "ok"


def tool_task_support(tool: Any) -> str:
    """A listed tool's `execution.taskSupport`; absent means forbidden (the spec's default)."""
    execution = tool.get("execution") if isinstance(tool, dict) else None
    support = execution.get("taskSupport") if isinstance(execution, dict) else None
    return support if support in ("required", "optional", "forbidden") else "forbidden"


def host_has_tasks(capabilities: Any) -> bool:
    """Whether a host's initialize capabilities declare task-augmented tools/call support (either era)."""
    if not isinstance(capabilities, dict):
        return False
    tasks = capabilities.get("tasks")
    if isinstance(tasks, dict):
        return True
    extensions = capabilities.get("extensions")
    return isinstance(extensions, dict) and EXTENSION in extensions


def declares_extension(meta: Any) -> bool:
    """Whether a 2026-era request's own `_meta` client capabilities name the tasks extension."""
    capabilities = meta.get(CLIENT_CAPABILITIES_META) if isinstance(meta, dict) else None
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and EXTENSION in extensions


def with_extension(meta: dict[str, Any] | None) -> dict[str, Any]:
    """A 2026-era request's `_meta` whose client capabilities declare the tasks extension (mcpwatch's, bridging)."""
    capabilities = got if isinstance(got := (meta or {}).get(CLIENT_CAPABILITIES_META), dict) else {}
    extensions = got if isinstance(got := capabilities.get("extensions"), dict) else {}
    declared = {**capabilities, "extensions": {**extensions, EXTENSION: {}}}
    return {**(meta or {}), CLIENT_CAPABILITIES_META: declared}


def envelope(meta: Any) -> dict[str, Any]:
    """The 2026-era envelope of a request's `_meta` (version, client, capabilities): what each poll must repeat."""
    return {k: meta[k] for k in ENVELOPE_META if k in meta} if isinstance(meta, dict) else {}


def needs_extension(error: Any) -> bool:
    """The extension's refusal of a task-only call from a client that did not declare it (`-32021`)."""
    if not isinstance(error, dict) or error.get("code") != MISSING_CAPABILITY:
        return False
    data = error.get("data")
    required = data.get("requiredCapabilities") if isinstance(data, dict) else None
    extensions = required.get("extensions") if isinstance(required, dict) else None
    return isinstance(extensions, dict) and EXTENSION in extensions


def without_task_support(tool: dict[str, Any]) -> dict[str, Any]:
    execution = {k: v for k, v in tool["execution"].items() if k != "taskSupport"}
    shown = {k: v for k, v in tool.items() if k != "execution"}
    return {**shown, "execution": execution} if execution else shown


def strip_related(result: Any) -> Any:
    """The task's result as the host's own call result: without the related-task marker of a call it never made."""
    if not isinstance(result, dict) or not isinstance(result.get("_meta"), dict):
        return result
    meta = {k: v for k, v in result["_meta"].items() if k != RELATED_TASK_META}
    return {**{k: v for k, v in result.items() if k != "_meta"}, **({"_meta": meta} if meta else {})}


def without_extension(meta: dict[str, Any] | None) -> dict[str, Any] | None:
    """A request's `_meta` with the tasks extension taken out of its client capabilities."""
    capabilities = (meta or {}).get(CLIENT_CAPABILITIES_META)
    if not isinstance(capabilities, dict) or not isinstance(capabilities.get("extensions"), dict):
        return meta
    extensions = {k: v for k, v in capabilities["extensions"].items() if k != EXTENSION}
    return {**(meta or {}), CLIENT_CAPABILITIES_META: {**capabilities, "extensions": extensions}}


def related(result: Any, task_id: str) -> Any:
    """A call's result marked with its task (the spec asks every task-related response to say so)."""
    if not isinstance(result, dict):
        return result
    meta = got if isinstance(got := result.get("_meta"), dict) else {}
    return {**result, "_meta": {**meta, RELATED_TASK_META: {"taskId": task_id}}}


def iso_time(wall: float) -> str:
    """A `Task` timestamp (ISO 8601, UTC, milliseconds)."""
    return datetime.fromtimestamp(wall, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
