"""At the `[front] max_sessions` cap a newcomer reclaims an idle host session, never one still in use: a call in
flight, or a task the host runs upstream and polls (its call has left the pending table, the task has not ended)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from mcpwatch.wrapper.fronts.front_sessions import SessionPool


class _Core(SimpleNamespace):
    def attach_upstream(self, upstream: Any) -> None:
        self.upstream = upstream


async def _no_upstream() -> None:
    return None


def _pool(now: list[float]) -> SessionPool:
    return SessionPool(
        make_core=lambda tag: _Core(table=[], tasks=[]),  # type: ignore[arg-type,return-value]
        make_upstream=lambda core: SimpleNamespace(run=_no_upstream),
        shared_core=_Core(table=[], tasks=[]),  # type: ignore[arg-type]
        max_sessions=2,
        idle_s=600.0,
        clock=lambda: now[0],
    )


def _opened(pool: SessionPool, session_id: str) -> Any:
    entry = pool.open(session_id)
    assert entry is not None
    return entry


def test_a_session_whose_host_runs_a_task_upstream_is_not_reclaimed() -> None:
    asyncio.run(_scenario())


async def _scenario() -> None:
    now = [0.0]
    pool = _pool(now)
    polling = _opened(pool, "a" * 32)
    now[0] = 10.0
    _opened(pool, "b" * 32)
    polling.core.tasks.append("task-1")  # the host's task runs upstream; its call is no longer pending
    assert pool.full() and pool.reclaimable() == "b" * 32
    pool.sessions["b" * 32].core.table.append("call")
    assert pool.reclaimable() is None  # every session in use: the newcomer is refused, no task is lost
    polling.core.tasks.clear()
    assert pool.reclaimable() == "a" * 32
