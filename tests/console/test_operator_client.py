"""OperatorClient against the operator contract double over real loopback HTTP (bearer token checked)."""

from __future__ import annotations

import threading
import time

import anyio
import pytest
from operator_double import OperatorContractDouble

from mcpwatch.events import Kind
from mcpwatch.operator.client import OperatorClient, OperatorRefused, OperatorUnavailable
from mcpwatch.ports import free_port

pytestmark = pytest.mark.anyio


async def test_status_and_a_page_of_events(double: OperatorContractDouble) -> None:
    double.emit(Kind.WARNING, 1.0, message="one")
    async with OperatorClient(double.url, double.token) as op:
        status = await op.status()
        assert status["wrapper"]["name"] == "council"
        assert status["deadline"]["budget_s"] == 110.0
        page = await op.events(after=0, limit=1)
        assert [e.kind for e in page.events] == ["session_start"] and page.next == 1
        page = await op.events(after=page.next)
        assert [(e.kind, e.data["message"]) for e in page.events] == [("warning", "one")]
        assert page.events[0].session_id == "double-session"


async def test_events_long_poll_returns_when_an_event_arrives(double: OperatorContractDouble) -> None:
    async with OperatorClient(double.url, double.token) as op:
        first = await op.events()
        timer = threading.Timer(0.3, lambda: double.emit(Kind.WARNING, message="late"))
        timer.start()
        started = time.monotonic()
        page = await op.events(after=first.next, wait_ms=30_000)
        waited = time.monotonic() - started
        assert [e.data.get("message") for e in page.events] == ["late"]
        assert 0.2 < waited < 15  # held until the event (0.3 s), not the 30 s poll: a generous bound
        empty = await op.events(after=page.next, wait_ms=100)
        assert empty.events == [] and empty.next == page.next


async def test_setting_values_changes_the_deadline_and_logs_it(double: OperatorContractDouble) -> None:
    async with OperatorClient(double.url, double.token) as op:
        block = await op.set_margin(25)
        assert block["margin_s"] == 25 and block["budget_s"] == 95
        block = await op.set_host_timeout(300)
        assert block["host_timeout_s"] == 300
        block = await op.set_deadline(60)
        assert block["override_s"] == 60 and block["budget_s"] == 60
        block = await op.set_deadline(None)
        assert block["override_s"] is None
    changes = [e.data["key"] for e in double.events if e.kind == Kind.CONFIG_CHANGE]
    assert changes == ["margin_s", "host_timeout_s", "override_s", "override_s"]


async def test_the_wrapper_refusing_a_value_is_its_own_message(double: OperatorContractDouble) -> None:
    async with OperatorClient(double.url, double.token) as op:
        with pytest.raises(OperatorRefused, match="margin must be ≥ 0 seconds, got -1"):
            await op.set_margin(-1)
        with pytest.raises(OperatorRefused, match="absurd"):
            await op.set_host_timeout(1e12)
    assert double.deadline["margin_s"] == 10.0


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), True, "12"])
async def test_non_finite_values_are_refused_before_sending(double: OperatorContractDouble, value: object) -> None:
    async with OperatorClient(double.url, double.token) as op:
        with pytest.raises(OperatorRefused, match="not a finite number"):
            await op.set_margin(value)  # type: ignore[arg-type]
    assert not [c for c in double.calls if c[0] == "set_margin"]


async def test_cancel_and_health_check(double: OperatorContractDouble) -> None:
    double.emit(Kind.REQUEST_START, request_id="7", tool="slow", method="tools/call", budget_s=110.0)
    async with OperatorClient(double.url, double.token) as op:
        with pytest.raises(OperatorRefused, match="no call 8 is in flight"):
            await op.cancel("8")
        assert await op.cancel("7") == {"cancelled": "7"}
        health = await op.health_check()
        assert health["ok"] is True and "high" in health["result"]["tiers"]
    kinds = [e.kind for e in double.events]
    assert kinds[-3:] == ["tombstone_add", "request_end", "health_check"]


async def test_a_wrong_token_says_so(double: OperatorContractDouble) -> None:
    with pytest.raises(OperatorUnavailable, match="refused the operator token"):
        async with OperatorClient(double.url, "wrong", connect_timeout_s=2) as op:
            await op.status()


async def test_a_wrong_path_says_so(double: OperatorContractDouble) -> None:
    with pytest.raises(OperatorUnavailable, match="HTTP 404"):
        async with OperatorClient(double.url.replace("/mcp", "/nope"), double.token, connect_timeout_s=2) as op:
            await op.status()


async def test_nothing_listening_says_the_wrapper_may_have_exited() -> None:
    with pytest.raises(OperatorUnavailable, match="nothing is listening"):
        async with OperatorClient(f"http://127.0.0.1:{free_port()}/mcp", "t", connect_timeout_s=2):
            pass


async def test_the_wrapper_going_away_mid_session_is_a_clear_error() -> None:
    server = OperatorContractDouble().start()
    try:
        async with OperatorClient(server.url, server.token, connect_timeout_s=2, call_timeout_s=3) as op:
            await op.status()
            await anyio.to_thread.run_sync(server.stop)
            with pytest.raises(OperatorUnavailable, match=r"cannot (call status on|reach)"):
                await op.status()
    finally:
        server.stop()


async def test_calls_need_a_session() -> None:
    with pytest.raises(OperatorUnavailable, match="not connected"):
        await OperatorClient("http://127.0.0.1:1/mcp", "t").status()


async def test_an_error_inside_the_session_leaves_it_unwrapped(double: OperatorContractDouble) -> None:
    """`async with` must re-raise the caller's own OperatorError, never an ExceptionGroup around it."""
    with pytest.raises(OperatorRefused):
        async with OperatorClient(double.url, double.token) as op:
            await op.cancel("nope")


async def test_a_long_poll_cut_by_the_wrapper_exiting_is_an_operator_error() -> None:
    server = OperatorContractDouble().start()
    try:
        with pytest.raises(OperatorUnavailable):
            async with OperatorClient(server.url, server.token, connect_timeout_s=2, call_timeout_s=5) as op:
                first = await op.events()
                threading.Timer(0.3, server.stop).start()
                await op.events(after=first.next, wait_ms=4000)
                await op.events(after=first.next, wait_ms=4000)
    finally:
        server.stop()
