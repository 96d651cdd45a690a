"""The operator endpoint's contract (DESIGN.md "Operator endpoint"): shared by the wrapper and its clients.

An MCP server over Streamable HTTP on 127.0.0.1; every request needs `Authorization: Bearer <token>`.
Tools return JSON as structured content:

- `status()` → {"wrapper": {name, pid, version, upstream: {kind, target, state, generation}, host},
  "deadline": {host_timeout_s, margin_s, override_s, budget_s, source},
  "tombstones": {count, ttl_s, terms, late_dropped, items: [{request_id, tool, age_s, expires_in_s}]},
  "in_flight": [{request_id, method, tool, elapsed_s, budget_s, progress, total, message}],
  "counters": {requests, ok, errors, timeouts, cancelled, late_dropped, unknown_dropped, invalidations},
  "state_sync": {policies, overlaps}, "log": {path, session_id, events_written}}
- `events(after=0, limit=1000, wait_ms=0)` → {"events": [Event.to_dict()...], "next": seq} (long poll; `after` and
  `next` are session sequence numbers, `Event.seq`)
- `health_check()` → {ok, ping_ms, tool, result, error}; also logged as a `health_check` event
- `set_margin(seconds)`, `set_host_timeout(seconds)`, `set_deadline(seconds | null)` → the new `deadline` block;
  bad values are refused with a tool error (isError) whose text says why, and nothing changes
- `reset_deadline()` → clears every operator change to the budget (environment and file rule again); the new block
- `cancel(request_id)` → cancels an in-flight call as a deadline would
"""

TOOL_STATUS = "status"
TOOL_EVENTS = "events"
TOOL_HEALTH_CHECK = "health_check"
TOOL_SET_MARGIN = "set_margin"
TOOL_SET_HOST_TIMEOUT = "set_host_timeout"
TOOL_SET_DEADLINE = "set_deadline"
TOOL_RESET_DEADLINE = "reset_deadline"
TOOL_CANCEL = "cancel"
TOOL_CALL_UPSTREAM = "call_upstream"
OPERATOR_PATH = "/mcp"
