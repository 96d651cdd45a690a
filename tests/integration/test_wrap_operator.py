"""The operator endpoint: token, loopback Host only, validated runtime changes, cancel, registry file mode."""

from __future__ import annotations

import asyncio
import math
import os
import stat
import sys

import pytest

from mcpwatch.events import payload_problems, typed_dict_problems
from mcpwatch.operator import Status, status_problems

from waiting import eventually, patience
from wraptools import RAW_SERVER, Operator, registry_entry, wrapped_client

pytestmark = pytest.mark.anyio


PING = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


async def test_token_host_and_registry_mode(isolated_state):
    async with wrapped_client([sys.executable, RAW_SERVER], wrap_args=["--no-log"]):
        entry = registry_entry(isolated_state)
        path = next((isolated_state / "wrappers").glob("*.json"))
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert (await Operator(entry, token="").post(PING)).status_code == 401
        assert (await Operator(entry, token="wrong").post(PING)).status_code == 401
        evil = await Operator(entry).post(PING, headers={"Host": "evil.example:80"})
        assert evil.status_code == 421
        good = await Operator(entry).post(PING)
        assert good.status_code == 200
        names = {t["name"] for t in good.json()["result"]["tools"]}
        expected = {"status", "events", "health_check", "set_margin", "set_host_timeout", "set_deadline", "cancel"}
        assert expected | {"reset_deadline", "call_upstream"} == names
    assert not list((isolated_state / "wrappers").glob("*.json"))


async def test_bad_margins_are_refused_and_change_nothing(isolated_state):
    async with wrapped_client([sys.executable, RAW_SERVER], wrap_args=["--no-log"]):
        operator = Operator(registry_entry(isolated_state))
        before = (await operator.tool("status"))["deadline"]
        for bad in ["NaN", "inf", "-inf", -1, "1e309", "ten", True]:  # one wrapper takes each in turn
            refused = await operator.call("set_margin", seconds=bad)
            assert refused["isError"] is True, bad
            assert refused["content"][0]["text"].strip(), bad
            after = (await operator.tool("status"))["deadline"]
            assert after == before, bad


async def test_margin_change_applies_to_the_next_call_and_is_logged(isolated_state):
    async with wrapped_client([sys.executable, RAW_SERVER]) as client:
        operator = Operator(registry_entry(isolated_state))
        changed = await operator.tool("set_margin", seconds=119.5)
        assert changed["budget_s"] == 0.5 and changed["source"] == "derived"
        result = await client.call_tool("sleep", {"seconds": 2, "steps": 1})
        assert (
            result.is_error
            and "margin 119.5 s" in result.content[0].text
            and "budget of 0.5 s" in result.content[0].text
        )
        reset = await operator.tool("reset_deadline")
        assert (reset["margin_s"], reset["budget_s"], reset["source"]) == (10, 110, "derived")
        assert (await client.call_tool("sleep", {"seconds": 0.6, "steps": 1})).is_error is False
        events = await operator.tool("events", after=0, limit=1000)
        changes = [e["data"] for e in events["events"] if e["kind"] == "config_change"]
        assert [(c["key"], c["old"], c["new"], c["source"]) for c in changes] == [
            ("margin_s", 10, 119.5, "operator"),
            ("margin_s", 119.5, 10, "reset"),
        ]


async def in_flight_of(operator: Operator) -> list[dict]:
    return (await operator.tool("status"))["in_flight"]


async def test_operator_cancel_answers_the_host_and_health_check_pings(isolated_state):
    async with wrapped_client([sys.executable, RAW_SERVER], wrap_args=["--no-log"]) as client:
        operator = Operator(registry_entry(isolated_state))
        call = asyncio.ensure_future(client.call_tool("hang", {}))
        in_flight = await eventually(lambda: in_flight_of(operator), 10, "the call in flight")
        assert in_flight[0]["tool"] == "hang"
        await operator.tool("cancel", request_id=in_flight[0]["request_id"])
        result = await asyncio.wait_for(call, patience(5))
        text = result.content[0].text
        assert result.is_error and "'hang' was cancelled by an operator (its budget was 110 s" in text, text
        health = await operator.tool("health_check")
        assert health["ok"] is True and isinstance(health["ping_ms"], float) and not math.isnan(health["ping_ms"])
        missing = await operator.call("cancel", request_id="nope")
        assert missing["isError"] is True


async def test_status_and_every_event_follow_the_contract(isolated_state):
    """A real wrapper's `status` is a `Status` and every event it logs has its kind's payload type."""
    async with wrapped_client([sys.executable, RAW_SERVER], wrap_args=["--no-log"]) as client:
        operator = Operator(registry_entry(isolated_state))
        call = asyncio.ensure_future(client.call_tool("hang", {}))
        await eventually(lambda: in_flight_of(operator), 10, "the call in flight")
        status = await operator.tool("status")
        assert status_problems(status) == [] and status["in_flight"][0]["tool"] == "hang"
        # every key the wrapper sends is declared (it once sent backpressure, hosts and reading_paused undeclared)
        assert typed_dict_problems(Status, status, "status") == []
        await operator.tool("cancel", request_id=status["in_flight"][0]["request_id"])
        await asyncio.wait_for(call, patience(5))
        status = await operator.tool("status")
        assert status_problems(status) == [] and status["tombstones"]["items"][0]["reason"] == "operator_cancel"
        await operator.tool("health_check")
        await operator.tool("set_margin", seconds=5)
        await operator.tool("reset_deadline")
        refused = await operator.call("set_deadline", seconds=0.01)  # below the floor: every call would be cut
        assert refused["isError"] is True
        assert refused["content"][0]["text"].endswith(": deadline is too small (0.01 s; at least 0.05 s)")
        assert (await operator.tool("status"))["deadline"]["override_s"] is None
        events = (await operator.tool("events", after=0, limit=1000))["events"]
    assert {e["kind"] for e in events} >= {
        "session_start",
        "upstream_state",
        "host_info",
        "request_start",
        "request_end",
        "tombstone_add",
        "health_check",
        "config_change",
    }
    assert [(e["kind"], p) for e in events for p in payload_problems(e["kind"], e["data"])] == []
