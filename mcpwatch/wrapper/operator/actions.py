"""What an operator can ask of a running wrapper, in one place: its status, a health check, deadline changes and
their reset, and cancelling a call. The operator endpoint calls these and nothing else of the core."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, cast

from mcpwatch import __version__
from mcpwatch.events import (
    ConfigChangeData,
    DeadlineBlock,
    DeadlineKey,
    HealthCheckData,
    Kind,
    StateSyncSummary,
    TtlTermsBlock,
)
from mcpwatch.operator import CoreStatus, TombstoneItem
from mcpwatch.reliability.deadline import Budget
from mcpwatch.wrapper.core.health import health_check

if TYPE_CHECKING:
    from collections.abc import Callable

    from mcpwatch.reliability.deadline import Budget, DeadlinePolicy
    from mcpwatch.reliability.statesync import StateSync
    from mcpwatch.wrapper.calls.recorder import Recorder
    from mcpwatch.wrapper.operator.operated import OperatedCore


class OperatorActions:
    def __init__(self, core: OperatedCore) -> None:
        self._core = core

    async def health_check(self, health_tool: str | None, timeout: float = 15.0) -> HealthCheckData:
        core = self._core
        session = core.session
        return await health_check(
            session,
            core.recorder,
            core.scheduler,
            health_tool=health_tool,
            host_initialised=session.init_params is not None or core.hosts.modern_era,
            timeout=timeout,
        )

    def current_budget(self) -> Budget:
        """The budget a tools/call from the latest host would get now (for status and operator changes)."""
        return self._core.deadline.budget(None, self._core.hosts.latest, True)

    async def call_upstream(self, name: Any, arguments: Any, timeout_s: Any = None) -> dict[str, Any]:
        """One tools/call to the upstream for the operator (the council's admin tools); logged as operator_call.
        CallRefused (a ValueError) for a malformed request, which is never sent."""
        from mcpwatch.wrapper.operator.upstream_call import call_upstream, check_call

        return await call_upstream(self._core, *check_call(name, arguments, timeout_s))

    def cancel(self, request_id: str) -> bool:
        """The operator's cancel: the call ends as a deadline would, with its own explanation."""
        return self._core.cancel(request_id)

    def change_deadline(self, key: DeadlineKey, value: Any) -> DeadlineBlock:
        """set_margin / set_host_timeout / set_deadline: validated by the policy; logged as config_change."""
        core = self._core
        return change_deadline(core.deadline, core.recorder, key, value, self.current_budget, self.ttl_terms)

    def reset_deadline(self) -> DeadlineBlock:
        """Undo every operator change to the budget; logged as one config_change per key that changes."""
        return reset_deadline(self._core.deadline, self._core.recorder, self.current_budget, self.ttl_terms)

    def ttl_terms(self) -> TtlTermsBlock:
        return self._core.ttl_terms().to_dict()

    def status(self) -> CoreStatus:
        core = self._core
        session = core.session
        now = core.scheduler.time()
        terms = core.ttl_terms()
        tombstones = session.late.table
        stats = tombstones.stats(limit=50)
        link = session.link
        upstream = link.describe() if link is not None else {}
        return {
            "wrapper": {
                "name": core.name,
                "pid": os.getpid(),
                "version": __version__,
                "upstream": {
                    "kind": getattr(link, "kind", None),
                    "target": getattr(link, "target", None),
                    "state": session.state.value,
                    "generation": session.ids.generation,
                    **upstream,
                },
                "host": core.hosts.latest_info,
                "hosts": core.hosts.sessions(),
                "uptime_s": round(core.recorder.mono(), 3),
            },
            "deadline": self.current_budget().to_dict(),
            "tombstones": {
                "count": len(tombstones),
                "ttl_s": terms.total_s,
                "terms": terms.to_dict(),
                "late_dropped": core.counters.late_dropped,
                "evicted": tombstones.evicted,
                "next_expiry_in_s": tombstones.next_expiry_in(),
                "items": cast("list[TombstoneItem]", stats["items"]),  # TombstoneTable.stats() builds them
            },
            "backpressure": core.pressure.describe(),
            "in_flight": [
                {
                    "request_id": p.request_key,
                    "method": p.method,
                    "tool": p.tool,
                    "elapsed_s": round(now - p.started, 3),
                    "budget_s": p.budget.seconds if p.budget else None,
                    "progress": None if p.last_progress is None else p.last_progress["progress"],
                    "total": None if p.last_progress is None else p.last_progress["total"],
                    "message": None if p.last_progress is None else p.last_progress["message"],
                    "sent": p.sent,
                }
                for p in core.table
            ],
            "counters": core.counters.to_dict(),
            "state_sync": self.state_sync_summary(),
            "mono": round(core.recorder.clock.monotonic(), 3),
        }

    def state_sync_summary(self) -> StateSyncSummary:
        return state_sync_summary(self._core.state_sync)


def state_sync_summary(state_sync: StateSync | None) -> StateSyncSummary:
    if state_sync is None:
        return {"policies": 0, "overlaps": []}
    return {"policies": len(state_sync.policies), "overlaps": [w.message for w in state_sync.overlaps]}


def change_deadline(
    deadline: DeadlinePolicy,
    recorder: Recorder,
    key: DeadlineKey,
    value: Any,
    current: Callable[[], Budget],
    ttl_terms: Callable[[], TtlTermsBlock],
) -> DeadlineBlock:
    """`current`: the budget a call from the latest host would get now (shown before and after); `ttl_terms`: the
    tombstone TTL's terms now, which the budget is one of (so the console's TTL follows the change)."""
    before = current().to_dict()
    setter = {
        "margin_s": deadline.set_margin,
        "host_timeout_s": deadline.set_host_timeout,
        "override_s": deadline.set_deadline,
    }[key]
    setter(value)
    after = current().to_dict()
    change = ConfigChangeData(
        key=key, old=before[key], new=after[key], source="operator", deadline=after, tombstone_ttl=ttl_terms()
    )
    recorder.emit(Kind.CONFIG_CHANGE, **change)
    return after


def reset_deadline(
    deadline: DeadlinePolicy, recorder: Recorder, current: Callable[[], Budget], ttl_terms: Callable[[], TtlTermsBlock]
) -> DeadlineBlock:
    before = current().to_dict()
    deadline.reset()
    after = current().to_dict()
    keys: tuple[DeadlineKey, ...] = ("host_timeout_s", "margin_s", "override_s")
    for key in keys:
        if before[key] != after[key]:
            change = ConfigChangeData(
                key=key, old=before[key], new=after[key], source="reset", deadline=after, tombstone_ttl=ttl_terms()
            )
            recorder.emit(Kind.CONFIG_CHANGE, **change)
    return after
