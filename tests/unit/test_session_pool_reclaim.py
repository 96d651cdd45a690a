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
    table = pool.sessions["b" * 32].core.table
    assert isinstance(table, list)  # a _Core fake's table (_pool): one call in it
    table.append("call")
    assert pool.reclaimable() is None  # every session in use: the newcomer is refused, no task is lost
    polling.core.tasks.clear()
    assert pool.reclaimable() == "a" * 32


def test_a_body_arriving_is_work_a_get_stream_is_not_and_silent_sessions_go_first() -> None:
    asyncio.run(_order())


async def _order() -> None:
    now = [0.0]
    refusals: list[tuple[str, int, int, int]] = []
    pool = _pool(now)
    pool._on_refused = lambda why, open_, cap, refused: refusals.append((why, open_, cap, refused))
    uploading = _opened(pool, "a" * 32)
    now[0] = 10.0
    listening = _opened(pool, "b" * 32)
    pool.touch(uploading, receiving=1)  # its request is on its way: never reclaimed, never expired
    pool.touch(listening, listening=1)  # only a GET stream open: the host listens, it does not work
    now[0] = 20.0
    assert pool.reclaimable() == "b" * 32 and pool.idle() == []
    pool.touch(uploading, receiving=-1)
    now[0] = 30.0
    assert pool.reclaimable() == "a" * 32  # silent sessions go before listening ones, however recent
    pool.touch(uploading, receiving=1)
    listening.core.table.append("call")
    assert pool.reclaimable() is None and pool.open("c" * 32) is None
    assert refusals == [("a new host session was refused: every session is busy", 2, 2, 1)]
    for _ in range(5000):  # a process hammering initialize at a full front: counted, not one log row each
        assert pool.open("d" * 32, "127.0.0.1:4000") is None
    assert len(refusals) == 1 and pool.refused == 5001
    now[0] += 1.0
    assert pool.open("e" * 32, "127.0.0.1:4001") is None
    said = "a new host session from 127.0.0.1:4001 was refused: every session is busy"
    assert refusals[-1] == (f"{said} (5001 refused since the last such event)", 2, 2, 5001)
    now[0] = 10_000.0
    assert pool.idle() == []  # neither expires while it works or listens


def test_the_refusals_of_a_burst_that_ends_are_all_logged_within_a_second_and_at_close() -> None:
    asyncio.run(_burst())


async def _burst() -> None:
    """A burst of refusals that then stops left all but its first unsaid in the log for ever (the next event only
    came with the next refusal, perhaps never): the log said 1 where `status` said 5,001. The front's periodic
    expiry check says what is pending once its second has passed, and closing the pool says the rest, so the
    events' `refused` always add up to the counter."""
    now = [0.0]
    refusals: list[int] = []
    pool = _pool(now)
    pool._on_refused = lambda why, open_, cap, refused: refusals.append(refused)
    for name in ("a", "b"):
        _opened(pool, name * 32).core.table.append("call")  # every session busy
    for _ in range(5001):
        assert pool.open("c" * 32, "127.0.0.1:4000") is None
    pool.say_refusals()
    assert refusals == [1]  # within the second of the last event: still one event a second at most
    now[0] += 1.0
    pool.say_refusals()
    assert refusals == [1, 5000] and sum(refusals) == pool.refused
    pool.say_refusals()
    assert refusals == [1, 5000]  # nothing new: nothing said
    assert pool.open("c" * 32) is None
    pool.sessions.clear()  # (their fake cores have nothing to stop)
    await pool.close("stopping")
    assert refusals == [1, 5000, 1] and sum(refusals) == pool.refused
