"""A session's report, computed from its events alone (so it works on any log, live or finished).

Per tool: calls and outcomes, duration percentiles, late drops; cut calls that finished late and what would have
saved them. Per model: final statuses and latency percentiles.
Council tiers whose total does not fit the deadline budget (from the latest health check). Deadline changes.
Per host (the profile each call's host was detected as): calls, outcomes, durations and the budgets it was given.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from sys import intern
from typing import Any

from mcpwatch.events import Event, Kind, Outcome
from mcpwatch.logview.estimate import budget_needed
from mcpwatch.logview.late_report import finished_late, tier_fits
from mcpwatch.logview.tasks_report import TaskFold
from mcpwatch.logview.whatif import CallFold
from mcpwatch.reliability.degraded import DEGRADED, end_degraded

# Only these kinds feed the report, so a reader can skip the (many) progress events.
REPORT_KINDS = frozenset(
    k.value
    for k in (
        Kind.SESSION_START,
        Kind.HOST_INFO,
        Kind.REQUEST_START,
        Kind.REQUEST_END,
        Kind.MODEL_STATUS,
        Kind.TOMBSTONE_HIT,
        Kind.LATE_RESULT,
        Kind.UNKNOWN_RESPONSE,
        Kind.HEALTH_CHECK,
        Kind.CONFIG_CHANGE,
        Kind.WARNING,
        Kind.TASK_CREATED,
        Kind.TASK_STATUS,
    )
)
_ANSWERED = frozenset({"ok", DEGRADED, "tool_error"})  # such a call left no tombstone: no late drop to name it
ERROR_OUTCOMES = frozenset(o.value for o in (Outcome.TOOL_ERROR, Outcome.ERROR, Outcome.UPSTREAM_LOST))
MODEL_FINAL = ("ok", "timeout", "rate_limited", "auth_error", "error")
WARNINGS_KEPT = 50
# plain strings: a million events compare faster against them than against the enum members
_CANCELLED = Outcome.CANCELLED.value
_CONFIG_CHANGE = Kind.CONFIG_CHANGE.value
_DEADLINE = Outcome.DEADLINE.value
_HEALTH_CHECK = Kind.HEALTH_CHECK.value
_HOST_INFO = Kind.HOST_INFO.value
_MODEL_STATUS = Kind.MODEL_STATUS.value
_OK = Outcome.OK.value
_REQUEST_END = Kind.REQUEST_END.value
_REQUEST_START = Kind.REQUEST_START.value
_SESSION_START = Kind.SESSION_START.value
_TASK_CREATED = Kind.TASK_CREATED.value
_TASK_STATUS = Kind.TASK_STATUS.value
_TOMBSTONE_HIT = Kind.TOMBSTONE_HIT.value
_UNKNOWN_RESPONSE = Kind.UNKNOWN_RESPONSE.value
_WARNING = Kind.WARNING.value


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..1) of unsorted values; None for none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass
class _ToolStats:
    calls: int = 0
    ok: int = 0
    degraded: int = 0  # ok answers that say they are not whole
    errors: int = 0
    deadlines: int = 0
    cancelled: int = 0
    late_drops: int = 0
    durations: list[float] = field(default_factory=list)

    def row(self, name: str) -> dict[str, Any]:
        ended = self.ok + self.degraded + self.errors + self.deadlines + self.cancelled
        return {
            "tool": name,
            "calls": self.calls,
            "ok": self.ok,
            "degraded": self.degraded,
            "errors": self.errors,
            "deadlines": self.deadlines,
            "cancelled": self.cancelled,
            "unfinished": max(0, self.calls - ended),
            "p50_s": percentile(self.durations, 0.50),
            "p95_s": percentile(self.durations, 0.95),
            "max_s": max(self.durations) if self.durations else None,
            "late_drops": self.late_drops,
        }


@dataclass
class _HostStats(_ToolStats):
    budgets: set[float] = field(default_factory=set)
    names: set[str] = field(default_factory=set)
    clock: str | None = None
    sources: set[str] = field(default_factory=set)  # where the calls' budgets came from

    def host_row(self, label: str) -> dict[str, Any]:
        row = self.row(label)
        row["host"] = row.pop("tool")
        row.pop("late_drops")
        return {
            **row,
            "client_names": sorted(self.names),
            "budgets_s": sorted(self.budgets),
            # the host's deciding clock explains the budgets only where they were derived from it
            "clock": self.clock if self.sources == {"derived"} else None,
        }


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000


def _model_row(name: str, finals: list[tuple[str, float | None]]) -> dict[str, Any]:
    """Latencies as logged (`*_ms`) and, like the tools' rows, in seconds (`*_s`), so no reader mixes units."""
    latencies = [ms for _, ms in finals if ms is not None]
    counts = {status: 0 for status in MODEL_FINAL}
    for status, _ in finals:
        counts[status if status in counts else "error"] += 1
    p50, p95 = percentile(latencies, 0.50), percentile(latencies, 0.95)
    top = max(latencies) if latencies else None
    return {
        "model": name,
        "calls": len(finals),
        "ok": counts["ok"],
        "timeouts": counts["timeout"],
        "rate_limited": counts["rate_limited"],
        "auth_errors": counts["auth_error"],
        "errors": counts["error"],
        "p50_ms": p50,
        "p95_ms": p95,
        "max_ms": top,
        "p50_s": _seconds(p50),
        "p95_s": _seconds(p95),
        "max_s": _seconds(top),
    }


def _health_tiers(data: dict[str, Any]) -> dict[str, Any] | None:
    result = data.get("result")
    if isinstance(result, str):
        try:
            result = json.loads(result)
        except ValueError:
            return None
    if not isinstance(result, dict):
        return None
    tiers = result.get("tiers")
    return tiers if isinstance(tiers, dict) and tiers else None


def tier_fit(tiers: dict[str, Any], deadline: dict[str, Any] | None) -> dict[str, Any]:
    """Each tier's total against the deadline budget (the host timeout when the budget is disabled), by the rule
    the advice uses (`tier_fits`): a tier the table says does not fit is never advised as one that fits."""
    deadline = deadline or {}
    budget = _number(deadline.get("budget_s"))
    basis = "deadline budget"
    if budget is None:
        budget = _number(deadline.get("host_timeout_s"))
        basis = "host timeout (deadline budget disabled)" if budget is not None else "unknown"
    items = []
    for name, spec in tiers.items():
        spec = spec if isinstance(spec, dict) else {}
        total = _number(spec.get("total_s"))
        fits = None if total is None or budget is None else tier_fits(total, budget)
        items.append(
            {
                "tier": str(name),
                "total_s": total,
                "per_model_s": _number(spec.get("per_model_s")),
                "fits": fits,
                # the budget it lacks (its total and the tenth the council keeps to deliver)
                "over_by_s": None if fits is None or fits else budget_needed(total, True) - budget,  # type: ignore[arg-type,operator]  # fits is not None: total and budget are numbers
            }
        )
    return {
        "budget_s": budget,
        "basis": basis,
        "items": items,
        "not_fitting": [i["tier"] for i in items if i["fits"] is False],
    }


def build_report(
    events: Iterable[Event],
    session: dict[str, Any] | None = None,
    on_phase: Callable[[str], None] | None = None,
    progress_of: Callable[[list[str]], Iterable[Event]] | None = None,
) -> dict[str, Any]:
    """Figures for one session from its events (in seq order, read once and never held); `session`
    (SessionInfo.to_dict()) is echoed; `on_phase` hears each step after the read (a progress line); `progress_of`
    reads the progress of the calls to estimate, when `events` leave progress out (`REPORT_KINDS` do)."""
    fold = _ReportFold()
    for event in events:
        fold.add(event)
    return fold.report(session, on_phase, progress_of)


class _ReportFold:
    """The one pass over a session's events behind `build_report`: each kind of event has its method, each
    section of the report is read from what they kept."""

    def __init__(self) -> None:
        self.tools: dict[str, _ToolStats] = {}
        self.hosts: dict[str, _HostStats] = {}
        self.host_names: dict[str, tuple[str | None, str | None]] = {}  # label -> (client name, deciding clock)
        self.open_requests: dict[str, tuple[str | None, str | None, Any]] = {}  # request_id -> (method, tool, up key)
        self.host_of: dict[str, str] = {}  # request_id -> host label
        self.tool_by_up_id: dict[Any, str] = {}  # of the calls that can leave a tombstone (not answered), older logs
        self.model_finals: dict[tuple[Any, ...], tuple[str, str, float | None]] = {}
        self.by_method: dict[str, int] = {}
        self.by_outcome: dict[str, int] = {}
        self.deadline_initial: dict[str, Any] | None = None
        self.deadline: dict[str, Any] | None = None
        self.config_changes: list[dict[str, Any]] = []
        self.warnings: list[dict[str, Any]] = []
        self.warning_count = 0
        self.unknown_dropped = 0
        self.tasks = self.task_polls = 0  # calls that ran as MCP tasks, and the polls attributed to them
        self.health: tuple[Event, dict[str, Any]] | None = None
        self.timings = CallFold()  # what the "finished late" section reads (the same as `whatif`), folded as it goes
        self.task_fold = TaskFold()
        self.made_for: set[str] = set()  # requests mcpwatch made on a host call's behalf (era translation)
        self._by_kind: dict[str, Callable[[Event, dict[str, Any]], None]] = {
            _REQUEST_START: self._request_start,
            _MODEL_STATUS: self._model_status,
            _TOMBSTONE_HIT: self._tombstone_hit,
            _UNKNOWN_RESPONSE: self._unknown_response,
            _HOST_INFO: self._host_info,
            _SESSION_START: self._session_start,
            _CONFIG_CHANGE: self._config_change,
            _HEALTH_CHECK: self._health_check,
            _WARNING: self._warning,
        }

    def add(self, event: Event) -> None:
        kind = event.kind
        data = event.data if isinstance(event.data, dict) else {}
        if kind == _REQUEST_END:  # read once for both folds
            degraded = end_degraded(data)
            self.timings.add(event, degraded)
            if self.task_fold.running:
                self.task_fold.add(event)
            self._request_end(event, data, degraded)
            return
        self.timings.add(event)
        if kind in (_TASK_CREATED, _TASK_STATUS):
            self.task_fold.add(event)
        handler = self._by_kind.get(kind)
        if handler is not None:
            handler(event, data)

    def _request_start(self, event: Event, data: dict[str, Any]) -> None:
        method = str(data.get("method") or "?")
        tool = intern(event.tool) if event.tool else None  # a few names, a million mentions
        up_key = _key(data["up_id"], data.get("host_session")) if tool and data.get("up_id") is not None else None
        if event.request_id is not None:
            self.open_requests[event.request_id] = (method, tool, up_key)
        if isinstance(data.get("made_for"), str):  # made on a host call's behalf: that call is the one counted
            self.made_for.add(event.request_id or "")
            return
        self.by_method[method] = self.by_method.get(method, 0) + 1
        label = data.get("host")
        if isinstance(label, str) and label:
            self._host_call(label, event, data)
        if tool:
            self.tools.setdefault(tool, _ToolStats()).calls += 1

    def _host_call(self, label: str, event: Event, data: dict[str, Any]) -> None:
        stats = self.hosts.setdefault(label, _HostStats())
        stats.calls += 1
        name, stats.clock = self.host_names.get(label, (None, stats.clock))
        if name:
            stats.names.add(name)
        budget = _number(data.get("budget_s"))
        if budget is not None:
            stats.budgets.add(budget)
            stats.sources.add(str(data.get("budget_source")))
        if event.request_id is not None:
            self.host_of[event.request_id] = label

    def _request_end(self, event: Event, data: dict[str, Any], degraded: Any) -> None:
        if isinstance(data.get("task_id"), str):  # a call that ran as a task (its polls are counted on it)
            self.tasks += 1
            self.task_polls += data["polls"] if isinstance(data.get("polls"), int) else 0
        _method, tool, up_key = self.open_requests.pop(event.request_id or "", (None, None, None))
        outcome = DEGRADED if degraded is not None else str(data.get("outcome") or "?")
        if up_key is not None and tool is not None and outcome not in _ANSWERED:
            self.tool_by_up_id[up_key] = tool
        if event.request_id in self.made_for:  # its host's call is counted, with its own outcome
            self.made_for.discard(event.request_id)
            return
        tool = event.tool or tool
        self.by_outcome[outcome] = self.by_outcome.get(outcome, 0) + 1
        label = self.host_of.pop(event.request_id or "", None)
        if label in self.hosts:
            _count_end(self.hosts[label], outcome, data)
        if tool:
            _count_end(self.tools.setdefault(tool, _ToolStats()), outcome, data)

    def _model_status(self, event: Event, data: dict[str, Any]) -> None:
        status = str(data.get("status") or "")
        if event.model and status and status != "pending":
            model = intern(event.model)
            key = (event.request_id, model, data.get("stage"))
            self.model_finals[key] = (model, intern(status), _number(data.get("latency_ms")))

    def _tombstone_hit(self, event: Event, data: dict[str, Any]) -> None:
        tool = event.tool or self.tool_by_up_id.get(_key(data.get("up_id"), data.get("host_session")))
        self.tools.setdefault(tool or "(unknown)", _ToolStats()).late_drops += 1

    def _unknown_response(self, event: Event, data: dict[str, Any]) -> None:
        self.unknown_dropped += 1

    def _host_info(self, event: Event, data: dict[str, Any]) -> None:
        if not isinstance(data.get("label"), str):
            return
        clock = got if isinstance(got := data.get("deciding_clock"), dict) else {}
        clock_text = f"{clock.get('setting')} {clock.get('seconds'):g} s" if _number(clock.get("seconds")) else None
        self.host_names[data["label"]] = (data.get("name") if isinstance(data.get("name"), str) else None, clock_text)

    def _session_start(self, event: Event, data: dict[str, Any]) -> None:
        block = data.get("deadline")
        if isinstance(block, dict):
            self.deadline_initial = self.deadline = block

    def _config_change(self, event: Event, data: dict[str, Any]) -> None:
        block = data.get("deadline")
        if isinstance(block, dict):
            self.deadline = block
        self.config_changes.append(
            {
                "ts": event.ts,
                "mono": event.mono,
                "key": data.get("key"),
                "old": data.get("old"),
                "new": data.get("new"),
                "source": data.get("source"),
            }
        )

    def _health_check(self, event: Event, data: dict[str, Any]) -> None:
        tiers = _health_tiers(data)
        if tiers is not None:
            self.health = (event, tiers)

    def _warning(self, event: Event, data: dict[str, Any]) -> None:
        self.warning_count += 1
        if len(self.warnings) < WARNINGS_KEPT:
            self.warnings.append({"ts": event.ts, "mono": event.mono, "message": data.get("message")})

    def report(
        self,
        session: dict[str, Any] | None,
        on_phase: Callable[[str], None] | None,
        progress_of: Callable[[list[str]], Iterable[Event]] | None,
    ) -> dict[str, Any]:
        """The report's sections from what the pass kept (the late calls' progress read now, if asked)."""
        by_model: dict[str, list[tuple[str, float | None]]] = {}
        for model, status, latency in self.model_finals.values():
            by_model.setdefault(model, []).append((status, latency))
        timings, health, deadline = self.timings, self.health, self.deadline
        if on_phase is not None:
            on_phase(f"all events read; working out the advice for {len(timings):,} tool calls")
        if progress_of is not None:
            for late in progress_of(timings.needing_progress()):
                timings.add_progress(late)
        tiers_block = None
        if health is not None:
            checked, tiers = health
            tiers_block = {"checked_ts": checked.ts, **tier_fit(tiers, deadline)}
        tools, hosts = self.tools, self.hosts
        return {
            "session": session,
            "requests": {
                "total": sum(self.by_method.values()),
                "by_method": dict(sorted(self.by_method.items())),
                "by_outcome": dict(sorted(self.by_outcome.items())),
                "unfinished": len(self.open_requests),
                "unknown_dropped": self.unknown_dropped,
                "tasks": self.tasks,
                "task_polls": self.task_polls,
            },
            "tools": [tools[name].row(name) for name in sorted(tools)],
            "hosts": [hosts[label].host_row(label) for label in sorted(hosts)],
            "models": [_model_row(name, by_model[name]) for name in sorted(by_model)],
            "deadline": {"initial": self.deadline_initial, "final": deadline},
            "tiers": tiers_block,
            "finished_late": finished_late(timings.calls(), deadline, health[1] if health else None, timings.by_tier),
            "tasks": self.task_fold.section(),
            "config_changes": self.config_changes,
            "warnings": {"count": self.warning_count, "first": self.warnings},
        }


def _count_end(stats: _ToolStats, outcome: str, data: dict[str, Any]) -> None:
    if outcome == _OK:
        stats.ok += 1
    elif outcome == DEGRADED:
        stats.degraded += 1
    elif outcome in ERROR_OUTCOMES:
        stats.errors += 1
    elif outcome == _DEADLINE:
        stats.deadlines += 1
    elif outcome == _CANCELLED:
        stats.cancelled += 1
    duration = _number(data.get("duration_s"))
    if duration is not None:
        stats.durations.append(duration)


def _key(value: Any, host_session: Any = None) -> Any:
    """Upstream ids may be logged as numbers or text; compare them as text. Each host session of an HTTP front
    numbers its own upstream ids, so they are told apart by session."""
    if value is None:
        return None
    return str(value) if host_session is None else f"{host_session}/{value}"
