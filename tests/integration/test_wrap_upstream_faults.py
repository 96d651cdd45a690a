"""A dying, babbling or wedged upstream: the host gets clear answers fast, and the wrapper recovers."""

from __future__ import annotations

import sys
import time

import pytest

from wraptools import RAW_SERVER, Operator, registry_entry, wrapped_client

pytestmark = pytest.mark.anyio


async def test_crash_mid_call_answers_at_once_then_respawns(isolated_state):
    async with wrapped_client([sys.executable, RAW_SERVER]) as client:
        operator = Operator(registry_entry(isolated_state))
        started = time.monotonic()
        result = await client.call_tool("crash", {"code": 3})
        assert time.monotonic() - started < 10  # on the crash, not the host's timeout (generous: a busy machine)
        assert result.is_error
        text = result.content[0].text
        assert "exit code 3" in text and "crashing on purpose" in text
        # the next call waits for the respawn (with the host's handshake replayed) and succeeds
        echo = await client.call_tool("echo", {"after": "crash"})
        assert not echo.is_error, echo
        status = await operator.tool("status")
        assert status["wrapper"]["upstream"]["generation"] == 2
        assert status["wrapper"]["upstream"]["state"] == "ready"


async def test_garbage_and_oversized_lines_are_counted_and_other_calls_unaffected(isolated_state):
    async with wrapped_client([sys.executable, RAW_SERVER]) as client:
        operator = Operator(registry_entry(isolated_state))
        garbage = await client.call_tool("garbage", {})
        assert garbage.content[0].text == "after garbage"
        huge = await client.call_tool("huge", {})
        assert huge.content[0].text == "after huge"
        status = await operator.tool("status")
        assert status["counters"]["upstream_garbage"] == 4


async def test_an_upstream_that_stops_reading_is_restarted_and_the_next_call_works(isolated_state, tmp_path):
    env = {"MCPWATCH_TOOL_CALL_DEADLINE_SEC": "600"}
    config = tmp_path / "mcpwatch.toml"
    config.write_text("[upstream]\nwrite_timeout_s = 0.5\n")
    async with wrapped_client([sys.executable, RAW_SERVER], env=env, wrap_args=["--config", str(config)]) as client:
        operator = Operator(registry_entry(isolated_state))
        await client.list_tools()  # the client would otherwise list tools after the first call, unanswered
        first_pid = (await operator.tool("status"))["wrapper"]["upstream"]["pid"]
        stopped = await client.call_tool("stop_reading", {})
        assert stopped.content[0].text == "stopped reading"
        stuck = await client.call_tool("echo", {"blob": "x" * 2_000_000})  # more than its pipe holds
        assert stuck.is_error and "stopped reading its input" in stuck.content[0].text, stuck
        echo = await client.call_tool("echo", {"after": "restart"})
        assert not echo.is_error, echo
        upstream = (await operator.tool("status"))["wrapper"]["upstream"]
        assert upstream["pid"] != first_pid and upstream["restarts"] >= 1 and upstream["stuck"] is False
