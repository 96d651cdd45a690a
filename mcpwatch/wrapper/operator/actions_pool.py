"""The operator's actions on an HTTP front, where every host session has its own core and upstream: one status
over all of them (how many sessions and upstreams are open, every call in flight with its host session, summed
counters), a health check of a ready upstream, a cancel that finds the call in whichever session holds it."""

from __future__ import annotations

import asyncio
from typing import Any

from mcpwatch.events import (
    COUNTER_NAMES,
    CountersBlock,
    DeadlineBlock,
    DeadlineKey,
    HealthCheckData,
    Kind,
    StateSyncSummary,
    TtlTermsBlock,
    UpstreamState,
)
from mcpwatch.operator import CoreStatus, HostSessionRow, TombstonesStatus
from mcpwatch.reliability.deadline import Budget, DeadlinePolicy
from mcpwatch.wrapper.calls.pending import Counters
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.fronts.front_sessions import HostSession, SessionPool
from mcpwatch.wrapper.operator.actions import OperatorActions, change_deadline, reset_deadline

TOMBSTONE_ITEMS = 50


class PoolActions:
    def __init__(self, pool: SessionPool, deadline: DeadlinePolicy, recorder: Recorder) -> None:
        self._pool = pool
        self._deadline = deadline
        self._recorder = recorder

    def _entries(self) -> list[HostSession]:
        return self._pool.all()

    async def health_check(self, health_tool: str | None, timeout: float = 15.0) -> HealthCheckData:
        """The first ready upstream is checked (any upstream when none is ready yet)."""
        entries = self._entries()
        ready = [e for e in entries if e.core.session.ready]
        target = ready[0] if ready else entries[0] if entries else None
        if target is None:
            error = "no host session is open, so no upstream is running to check"
            result = HealthCheckData(ok=False, ping_ms=None, tool=None, result=None, error=error, latency_ms=0.0)
            self._recorder.emit(Kind.HEALTH_CHECK, **result)
            return result
        return await OperatorActions(target.core).health_check(health_tool, timeout)

    async def call_upstream(self, name: Any, arguments: Any, timeout_s: Any = None) -> dict[str, Any]:
        """The operator's tools/call goes to every ready upstream: each host session has its own server process,
        and an admin change (a council model disabled) must reach all of them. ok only if every one answered ok."""
        from mcpwatch.wrapper.operator.upstream_call import call_upstream, check_call

        request = check_call(name, arguments, timeout_s)
        ready = [entry for entry in self._entries() if entry.core.session.ready]
        if not ready:
            error = "no host session has a ready upstream to call"
            return {"tool": request[0], "ok": False, "result": None, "error": error, "duration_s": 0.0, "sessions": []}
        outcomes = await asyncio.gather(*(call_upstream(entry.core, *request) for entry in ready))
        failed = [outcome for outcome in outcomes if not outcome["ok"]]
        return {
            **(failed[0] if failed else outcomes[0]),
            "ok": not failed,
            "sessions": [
                {"host_session": e.tag, "ok": o["ok"], "error": o["error"]}
                for e, o in zip(ready, outcomes, strict=True)
            ],
        }

    def cancel(self, request_id: str) -> bool:
        return any(entry.core.cancel(request_id) for entry in self._entries())

    def _current_budget(self) -> Budget:
        """The budget a call from the newest host session would get now."""
        entries = list(self._pool.sessions.values())
        return OperatorActions((entries[-1] if entries else self._pool.shared).core).current_budget()

    def change_deadline(self, key: DeadlineKey, value: Any) -> DeadlineBlock:
        return change_deadline(self._deadline, self._recorder, key, value, self._current_budget, self._ttl_terms)

    def reset_deadline(self) -> DeadlineBlock:
        return reset_deadline(self._deadline, self._recorder, self._current_budget, self._ttl_terms)

    def _ttl_terms(self) -> TtlTermsBlock:
        """Every host session's tombstones live by the same terms (one deadline policy, one [tombstones])."""
        return OperatorActions(self._pool.shared.core).ttl_terms()

    def state_sync_summary(self) -> StateSyncSummary:
        return OperatorActions(self._pool.shared.core).state_sync_summary()

    def status(self) -> CoreStatus:
        pool = self._pool
        entries = self._entries()
        parts = [(entry, OperatorActions(entry.core).status()) for entry in entries]
        status = OperatorActions(pool.shared.core).status() if not parts else parts[0][1].copy()
        ready = [part for entry, part in parts if entry.core.session.ready]
        wrapper = status["wrapper"].copy()
        if ready:
            wrapper["upstream"] = ready[0]["wrapper"]["upstream"]
        elif not parts:
            upstream = wrapper["upstream"].copy()
            upstream["state"] = "idle"
            upstream["pid"] = None
            wrapper["upstream"] = upstream
        if parts:  # every session's hosts (each session's core knows its own)
            wrapper["hosts"] = [host for _, part in parts for host in part["wrapper"]["hosts"]]
        now = pool.clock()
        wrapper["host_sessions"] = {
            "open": len(pool.sessions),
            "max": pool.max_sessions,
            "idle_expiry_s": pool.idle_s,
            "upstreams_open": sum(1 for entry in entries if entry.core.session.state != UpstreamState.CLOSED),
            "upstreams_ready": len(ready),
            "sessionless_upstream": pool.shared.task is not None,
            "opened": pool.opened,
            "expired": pool.expired,
            "reclaimed": pool.reclaimed,
            "refused": pool.refused,
            "sessions": [_session_row(entry, part, now) for entry, part in parts],
        }
        status["wrapper"] = wrapper
        status["in_flight"] = [
            {**call, "host_session": entry.tag} for entry, part in parts for call in part["in_flight"]
        ]
        status["counters"] = _summed([entry.core.counters for entry in entries] + [pool.retired])
        tagged: list[TombstonesStatus] = [
            {**part["tombstones"], "items": [{**item, "host_session": e.tag} for item in part["tombstones"]["items"]]}
            for e, part in parts
        ]
        status["tombstones"] = _tombstones(tagged, status["tombstones"])
        return status


def _session_row(entry: HostSession, part: CoreStatus, now: float) -> HostSessionRow:
    upstream = part["wrapper"]["upstream"]
    return {
        "host_session": entry.tag,
        "host": part["wrapper"]["host"],
        "upstream_state": upstream["state"],
        "upstream_pid": upstream.get("pid"),
        "upstream_session": upstream.get("session_id"),
        "generation": upstream["generation"],
        "in_flight": len(part["in_flight"]),
        "open_streams": entry.streams + entry.listening,
        "receiving": entry.receiving,
        "idle_s": round(max(0.0, now - entry.last_seen), 3),
    }


def _summed(counters: list[Counters]) -> CountersBlock:
    total = Counters()
    for one in counters:
        for name in COUNTER_NAMES:
            setattr(total, name, getattr(total, name) + getattr(one, name))
    return total.to_dict()


def _tombstones(parts: list[TombstonesStatus], template: TombstonesStatus) -> TombstonesStatus:
    if not parts:
        return template
    expiries = [p["next_expiry_in_s"] for p in parts if p["next_expiry_in_s"] is not None]
    return {
        **template,
        "count": sum(p["count"] for p in parts),
        "late_dropped": sum(p["late_dropped"] for p in parts),
        "evicted": sum(p["evicted"] for p in parts),
        "next_expiry_in_s": min(expiries) if expiries else None,
        "items": [item for p in parts for item in p["items"]][:TOMBSTONE_ITEMS],
    }
