"""The operator endpoint's contract (mcpwatch/ARCHITECTURE.md, "Contracts"): shared by the wrapper and its clients.

An MCP server over Streamable HTTP on 127.0.0.1; every request needs `Authorization: Bearer <token>`.
Tools return JSON as structured content:

- `status()` → `Status` (below): the wrapper, its upstream and host, the deadline block, tombstones, calls in
  flight, counters, State Sync and the log (and, with `[tasks] offer_slow`, the tools offered for outrunning the
  budget, each with its basis)
- `events(after=0, limit=1000, wait_ms=0)` → {"events": [Event.to_dict()...], "next": seq} (long poll; `after` and
  `next` are session sequence numbers, `Event.seq`; after 0..2^53, limit 1..10000, wait_ms 0..30000, else a tool
  error saying the range)
- `health_check()` → `HealthCheckData`; also logged as a `health_check` event
- `set_margin(seconds)`, `set_host_timeout(seconds)`, `set_deadline(seconds | null)` → the new `deadline` block;
  bad values are refused with a tool error (isError) whose text says why, and nothing changes
- `reset_deadline()` → clears every operator change to the budget (environment and file rule again); the new block
- `cancel(request_id)` → cancels an in-flight call as a deadline would
- `call_upstream(name, arguments, timeout_s)` → one tools/call to the upstream on the operator's behalf, logged as an
  `operator_call` event (the console uses it for the council's admin tools)
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from mcpwatch.events import CountersBlock, DeadlineBlock, StateSyncSummary, TtlTermsBlock


class OperatorError(Exception):
    """Something the operator endpoint could not do; the message says what and, where possible, why."""


class OperatorUnavailable(OperatorError):
    """The wrapper could not be reached: it has gone, the URL is wrong, or it refused the token."""


class OperatorRefused(OperatorError):
    """The wrapper answered and refused (its own message, e.g. a margin that is not a finite number)."""


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


class UpstreamDetail(TypedDict, total=False):
    """What an upstream link says of itself (`describe()`), by transport."""

    stuck: bool  # it took none of its input for upstream.write_timeout_s (it is then restarted)
    restarts: int
    reading_paused: bool  # the wrapper stopped reading it: hosts have too much unsent (see backpressure)
    pid: int | None  # stdio
    stuck_for_s: float  # stdio
    unsent_bytes: int  # stdio
    stderr_tail: list[str]  # stdio
    session_id: str | None  # http: Mcp-Session-Id
    protocol_version: str | None  # http
    open_posts: int  # http


class UpstreamStatus(UpstreamDetail):
    kind: Literal["stdio", "http"] | None
    target: str | None
    state: Literal["connecting", "ready", "backoff", "closed", "idle"]  # idle: an HTTP front with no host session
    generation: int


HostStatus = dict[str, Any]
"""A host as `host_info` tells it (`HostInfoData`), once it has initialised; {} before."""


class HostSessionRow(TypedDict):
    host_session: str  # the session's short name, as its events carry it
    host: HostStatus
    upstream_state: str
    upstream_pid: int | None  # stdio
    upstream_session: str | None  # http: the upstream's Mcp-Session-Id
    generation: int
    in_flight: int
    open_streams: int  # POST answer streams and GET streams
    receiving: int  # request bodies still arriving (the session is busy meanwhile)
    idle_s: float


class HostSessionsStatus(TypedDict):
    """An HTTP front's host sessions, each with its own upstream (absent on the stdio front)."""

    open: int
    max: int  # [front] max_sessions
    idle_expiry_s: float  # [front] session_idle_s
    upstreams_open: int  # not closed (including the one 2026-era requests share, once started)
    upstreams_ready: int
    sessionless_upstream: bool  # whether the upstream 2026-era requests share is running
    opened: int
    expired: int
    reclaimed: int  # idle sessions ended to make room for a newcomer at the cap
    refused: int  # initialize refused at the cap
    sessions: list[HostSessionRow]


class WrapperStatus(TypedDict):
    name: str
    pid: int
    version: str
    upstream: UpstreamStatus  # on an HTTP front: the first ready upstream's
    host: HostStatus  # the latest host's
    hosts: list[HostStatus]  # each 2025-era host session's host (`DetectedHost.to_dict()`)
    uptime_s: float
    host_sessions: NotRequired[HostSessionsStatus]


class TombstoneItem(TypedDict):
    key: int  # the upstream id (up_id) the tombstone holds
    request_id: str | None
    tool: str | None
    reason: str
    age_s: float
    expires_in_s: float
    hits: int
    host_session: NotRequired[str]  # an HTTP front's: its keys are numbered per host session


class TombstonesStatus(TypedDict):
    count: int
    ttl_s: float
    terms: TtlTermsBlock
    late_dropped: int
    evicted: int
    next_expiry_in_s: float | None
    items: list[TombstoneItem]  # newest first, at most 50


class InFlightStatus(TypedDict):
    request_id: str
    method: str
    tool: str | None
    elapsed_s: float
    budget_s: float | None
    progress: float | None
    total: float | None
    message: str | None
    sent: bool  # forwarded to the upstream (else queued until it is ready)
    host_session: NotRequired[str]  # an HTTP front's


class LogStatus(TypedDict):
    path: str | None  # None: logging is off
    session_id: str
    state: Literal["ok", "unavailable", "off"]
    problem: str | None  # why it is unavailable or off, in one line
    events_written: int
    events_pending: NotRequired[int]  # the rest: while a log is open (state ok or unavailable)
    events_dropped: NotRequired[int]
    losses_recorded: NotRequired[int]  # lost events the log says were lost (a warning in their place)
    last_error: NotRequired[str | None]


class BackpressureStatus(TypedDict):
    """What hosts have not yet read, and the pauses in reading the upstream it caused (`wrapper.pressure`)."""

    unsent_bytes: int
    peak_unsent_bytes: int
    high_water_bytes: int
    paused: bool
    pauses: int
    paused_s: float
    progress_coalesced: int


class CoreStatus(TypedDict):
    """What the wrapper's core reports; the endpoint adds the log's and the export's state to make a `Status`."""

    wrapper: WrapperStatus
    deadline: DeadlineBlock
    tombstones: TombstonesStatus
    backpressure: BackpressureStatus
    in_flight: list[InFlightStatus]
    counters: CountersBlock
    state_sync: StateSyncSummary
    mono: float  # the wrapper's session clock when the answer was built


class OfferedSlowTool(TypedDict):
    tool: str
    basis: str  # why, in words and figures: "seen cut at the deadline 3× in the log (…)"


class OfferedSlowStatus(TypedDict):
    """`[tasks] offer_slow`: the tools offered as tasks because the log shows them outrunning the budget."""

    log_read: Literal["reading", "read", "none"]  # none: no log (--no-log, or it could not be opened)
    tools: list[OfferedSlowTool]
    log_sessions_read: int  # the upstream's newest sessions the start read covered
    log_events_read: int  # their newest events (bounded)
    log_problem: str | None  # why the log could not be read at start
    untracked: int  # ends of tools beyond the tracked maximum, not counted


class Status(CoreStatus):
    """What `status()` answers; the console seeds its model from it when it attaches mid-session."""

    log: LogStatus
    otel: dict[str, Any] | None  # OpenTelemetry export's queue and counts; None when it is off
    offered_slow: NotRequired[OfferedSlowStatus]  # with [tasks] offer_slow on


def status_problems(status: Any) -> list[str]:
    """What in a `status()` answer breaks `Status` (missing fields, wrong types); fields added later are allowed."""
    from mcpwatch.events import typed_dict_problems

    return typed_dict_problems(Status, status, "status", strict=False)
