"""An upstream on a bad day, as real processes: killed mid-call, babbling, writing huge lines, no longer reading,
never answering, answering after it was told to go. The host always gets a clear answer in time, the wrapper keeps
going, and whatever the upstream says out of turn is dropped and counted."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from faultkit import FAULT_SERVER, INIT_PARAMS, RAW_SERVER, raw_host, read_jsonl, registry_of, session_events, text_of

from mcpwatch.wrapper.upstreams.upstream_stdio import HARD_UNSENT_LIMIT

from waiting import patience, sooner_than
from wraptools import Operator

pytestmark = pytest.mark.anyio


async def wait_status(operator: Operator, predicate: Any, timeout: float, what: str) -> dict[str, Any]:
    deadline = time.monotonic() + patience(timeout)
    while True:
        status = await operator.tool("status")
        if predicate(status):
            return status
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {status}")
        await asyncio.sleep(0.05)


@pytest.mark.slow
async def test_upstream_killed_mid_call_answers_within_a_second_and_respawns_with_backoff(
    tmp_path: Path, isolated_state: Path
) -> None:
    log = tmp_path / "events.db"
    async with raw_host(FAULT_SERVER, tmp_path, log=log) as host:
        await host.initialize()
        operator = Operator(await registry_of(isolated_state, host.pid))
        first = (await operator.tool("status"))["wrapper"]["upstream"]
        assert first["state"] == "ready" and first["generation"] == 1
        progress_params = {"name": "delay", "arguments": {"ms": 3000, "steps": 5}, "_meta": {"progressToken": "p1"}}
        calls = [host.request("tools/call", {"name": "hang", "arguments": {}}) for _ in range(3)]
        calls.append(host.request("tools/call", progress_params))
        await wait_status(operator, lambda s: len(s["in_flight"]) == 4, 10, "four calls in flight")
        await host.wait_until(lambda: bool(host.notifications), 5, "the first progress notification")

        os.kill(first["pid"], signal.SIGKILL)
        killed_at = time.monotonic()
        replies = await asyncio.wait_for(asyncio.gather(*calls), patience(5))
        for reply in replies:  # at once, not when the budget (120 s) ran out: a killed upstream answers nothing
            arrived = host.responses[json.dumps(reply["id"])][0].at
            assert arrived - killed_at < sooner_than(120, 1), arrived - killed_at
            result = reply["result"]
            assert result["isError"] is True
            assert "exited (exit code -9)" in text_of(reply), text_of(reply)
            assert result["_meta"]["dev.mcpwatch/partial"]["outcome"] == "error"
        assert "last progress 1/5 — step 1" in text_of(replies[3])

        echo = await host.tool("echo", {"after": "kill"}, timeout=10)  # waits for the respawn, then succeeds
        assert '"after": "kill"' in text_of(echo)
        second = (await operator.tool("status"))["wrapper"]["upstream"]
        assert second["generation"] == 2 and second["restarts"] == 1 and second["pid"] != first["pid"]

        os.kill(second["pid"], signal.SIGKILL)  # dies again at once: the backoff grows
        await wait_status(operator, lambda s: s["wrapper"]["upstream"]["state"] != "ready", 5, "the loss noticed")
        echo = await host.tool("echo", {"after": "second kill"}, timeout=10)
        assert '"after": "second kill"' in text_of(echo)
        third = (await operator.tool("status"))["wrapper"]["upstream"]
        assert third["generation"] == 3 and third["state"] == "ready"
        counters = (await operator.tool("status"))["counters"]
        session_id = (await operator.tool("status"))["log"]["session_id"]
        assert await host.close() == 0
    host.assert_clean_stderr()
    host.assert_clean_stdout()
    assert all(len(replies) == 1 for replies in host.responses.values()), "a request was answered twice"
    assert counters["errors"] == 4 and counters["ok"] == 3  # initialize and the two echoes

    events = session_events(log, session_id)
    states = [e.data for e in events if e.kind == "upstream_state"]
    closed = [s for s in states if s["state"] == "closed"]
    assert [s["exit_code"] for s in closed] == [-9, -9]
    backoffs = [e for e in events if e.kind == "upstream_state" and e.data["state"] == "backoff"]
    assert 0.4 <= backoffs[0].data["retry_in_s"] <= 0.6  # base 0.5 s ± 20 % jitter
    assert 0.8 <= backoffs[1].data["retry_in_s"] <= 1.2  # doubled
    readies = [e for e in events if e.kind == "upstream_state" and e.data["state"] == "ready"]
    for backoff, ready in zip(backoffs, readies[1:], strict=True):
        assert ready.mono - backoff.mono >= backoff.data["retry_in_s"] - 0.01  # the wrapper really waited
    lost = [e for e in events if e.kind == "request_end" and e.data["outcome"] == "upstream_lost"]
    assert len(lost) == 4
    stones = [e for e in events if e.kind == "tombstone_add"]
    assert len(stones) == 4 and {e.data["reason"] for e in stones} == {"upstream_lost"}


@pytest.mark.slow
async def test_babble_and_huge_lines_while_calls_are_in_flight(tmp_path: Path, isolated_state: Path) -> None:
    log = tmp_path / "events.db"
    async with raw_host(FAULT_SERVER, tmp_path, log=log) as host:
        await host.initialize()
        operator = Operator(await registry_of(isolated_state, host.pid))
        delays = [200 + 10 * i for i in range(60)]
        calls = {
            ms: host.request(
                "tools/call",
                {"name": "delay", "arguments": {"ms": ms, "steps": 2}, "_meta": {"progressToken": f"t{ms}"}},
            )
            for ms in delays
        }
        noise = [host.request("tools/call", {"name": name, "arguments": {}}) for name in ("babble", "huge") * 3]
        answers = await asyncio.wait_for(asyncio.gather(*calls.values(), *noise), 30)
        for ms, reply in zip(delays, answers, strict=False):
            assert text_of(reply) == f"done {ms}", reply
        babbled = [json.loads(text_of(r)) for r in answers[len(delays) :: 2]]
        assert all(text_of(r) == "after huge" for r in answers[len(delays) + 1 :: 2])
        progress_tokens = [n.message["params"]["progressToken"] for n in host.notifications]
        assert sorted(progress_tokens) == sorted(f"t{ms}" for ms in delays for _ in range(2))
        for item in host.notifications:  # every progress arrived before its call's answer
            token = item.message["params"]["progressToken"]
            answer = host.responses[json.dumps(calls[int(token[1:])].result()["id"])][0]
            assert item.index < answer.index
        status = await operator.tool("status")
        garbage = sum(b["garbage"] for b in babbled) + 3  # and one oversized line per huge
        assert status["counters"]["upstream_garbage"] == garbage
        assert status["counters"]["unknown_dropped"] == sum(b["unknown"] for b in babbled)
        assert status["counters"]["ok"] == len(delays) + 6 + 1  # + initialize
        assert status["wrapper"]["upstream"]["generation"] == 1  # never restarted
        assert await host.close() == 0
    host.assert_clean_stderr()
    host.assert_clean_stdout()
    events = session_events(log, status["log"]["session_id"])
    warnings = [e for e in events if e.kind == "warning" and "upstream wrote" in e.data["message"]]
    assert len(warnings) == min(garbage, 20)  # the first 20 are reported one by one, then every 1000th
    assert any("over the frame limit" in w.data["message"] for w in warnings)
    unknown = [e for e in events if e.kind == "unknown_response"]
    assert len(unknown) == sum(b["unknown"] for b in babbled)


@pytest.mark.slow
async def test_an_upstream_that_stops_reading_with_many_calls_in_flight(tmp_path: Path, isolated_state: Path) -> None:
    """Writes towards it stay bounded and calls past the bound fail at once; once nothing has moved for
    write_timeout_s it is stuck: every call it held is answered with that, and calls go on on a new process. Each
    call is answered exactly once. (test_fault_upstream_lifecycle covers the restart itself.)"""
    config = tmp_path / "mcpwatch.toml"
    config.write_text("[upstream]\nwrite_timeout_s = 0.3\n")
    env = {"MCPWATCH_TOOL_CALL_DEADLINE_SEC": "600"}
    async with raw_host(FAULT_SERVER, tmp_path, env=env, wrap_args=["--config", str(config)]) as host:
        await host.initialize()
        operator = Operator(await registry_of(isolated_state, host.pid))
        hangs = [host.request("tools/call", {"name": "hang", "arguments": {}}) for _ in range(10)]
        stopped = await host.tool("stop_reading")
        assert text_of(stopped) == "stopped reading"
        blob = "x" * (1024 * 1024)
        big = [host.request("tools/call", {"name": "echo", "arguments": {"blob": blob}}) for _ in range(40)]
        ping = host.request("ping", {})
        answers = await asyncio.wait_for(asyncio.gather(*big, *hangs), 60)
        kinds = []
        for reply in answers:
            text = text_of(reply)
            if "is not reading its input" in text:  # refused at once: the buffer was past its bound
                kinds.append("refused")
            elif "stopped reading its input" in text:  # held when it was found stuck
                kinds.append("stuck")
            else:  # sent to the new process
                assert json.loads(text)["args"] == {"blob": blob}, text[:200]
                kinds.append("answered")
                continue
            assert reply["result"]["isError"] is True
            unsent = int(text.split("its input (", 1)[1].split(" bytes unsent", 1)[0])
            assert 0 < unsent <= HARD_UNSENT_LIMIT + 2 * len(blob), text  # bounded: past it nothing more is queued
        assert kinds[40:] == ["stuck"] * 10, kinds  # the never-answered calls, held when it stopped reading
        assert kinds.count("stuck") > 10, kinds
        pinged = await asyncio.wait_for(ping, 30)
        assert pinged.get("result") == {} or "reading its input" in pinged["error"]["message"], pinged

        # the held calls are answered as the stuck process is stopped; its successor may still be starting
        def settled(s: dict[str, Any]) -> bool:
            upstream = s["wrapper"]["upstream"]
            return s["in_flight"] == [] and upstream["restarts"] >= 1 and upstream["state"] == "ready"

        status = await wait_status(operator, settled, 30, "no call in flight and a new process ready")
        upstream = status["wrapper"]["upstream"]
        assert upstream["restarts"] >= 1 and upstream["stuck"] is False and upstream["state"] == "ready", upstream
        assert status["counters"]["timeouts"] == 0
        again = await host.tool("echo", {"blob": blob}, timeout=30)  # the new process takes what the old one did not
        assert json.loads(text_of(again))["args"] == {"blob": blob}
        closing = time.monotonic()
        assert await host.close(timeout=15) == 0
        assert time.monotonic() - closing < 8
    host.assert_clean_stderr()
    assert all(len(replies) == 1 for replies in host.responses.values())


async def test_an_upstream_answering_after_it_was_told_to_go_is_dropped_and_counted(
    tmp_path: Path, isolated_state: Path
) -> None:
    """The host leaves with calls in flight: each is cancelled upstream and answered once (by the wrapper); the
    upstream's answers written after its stdin closed are read, dropped and counted before the session ends."""
    log = tmp_path / "events.db"
    cancels = tmp_path / "cancels.jsonl"
    env = {"FAULT_SERVER_LOG": str(cancels), "FAULT_SERVER_ANSWER_ON_EOF": "1"}
    async with raw_host(FAULT_SERVER, tmp_path, log=log, env=env) as host:
        await host.initialize()
        operator = Operator(await registry_of(isolated_state, host.pid))
        calls = [host.request("tools/call", {"name": "delay", "arguments": {"ms": 60_000}}) for _ in range(5)]
        await wait_status(operator, lambda s: len(s["in_flight"]) == 5, 10, "five calls in flight")
        session_id = (await operator.tool("status"))["log"]["session_id"]
        assert await host.close() == 0
        replies = [await asyncio.wait_for(call, patience(1)) for call in calls]  # written before it exited
    host.assert_clean_stderr()
    for reply in replies:
        assert reply["result"]["_meta"]["dev.mcpwatch/partial"]["outcome"] == "shutdown"
    assert all(len(replies) == 1 for replies in host.responses.values())
    events = session_events(log, session_id)
    up_ids = {e.data["up_id"] for e in events if e.kind == "request_start" and e.data["method"] == "tools/call"}
    assert {c["cancelled"] for c in read_jsonl(cancels)} == up_ids
    hits = [e for e in events if e.kind == "tombstone_hit"]
    assert {e.data["up_id"] for e in hits} == up_ids and {e.data["what"] for e in hits} == {"response"}
    end = [e for e in events if e.kind == "session_end"]
    assert len(end) == 1 and end[0].data["counters"]["late_dropped"] == 5
    assert not list((isolated_state / "wrappers").glob("*.json"))


async def test_a_call_queued_during_a_respawn_is_told_the_time_it_really_has_left(
    tmp_path: Path, isolated_state: Path
) -> None:
    config = tmp_path / "mcpwatch.toml"
    config.write_text("[upstream]\nbackoff_base_s = 1.0\n")  # the respawn waits 0.8-1.2 s
    env = {"MCPWATCH_TOOL_CALL_DEADLINE_SEC": "20"}
    async with raw_host(RAW_SERVER, tmp_path, env=env, wrap_args=["--config", str(config)]) as host:
        await host.initialize()
        crashed = await host.tool("crash", {"code": 7})
        assert "exit code 7" in text_of(crashed) and "raw_server: crashing on purpose" in text_of(crashed)
        echo = await host.tool("echo", {"n": 1}, timeout=10)  # waits in the queue for the new process
        seen = json.loads(text_of(echo))
        assert 15_000 <= seen["deadline_ms"] <= 19_300, seen  # 20 s less the wait, not the full 20 s
        assert await host.close() == 0
    assert "mcpwatch: the upstream MCP server exited (exit code 7)" in host.stderr()
    host.assert_clean_stderr()


async def test_an_upstream_that_cannot_be_started_answers_every_request_at_once(
    tmp_path: Path, isolated_state: Path
) -> None:
    async with raw_host(["mcpwatch-no-such-server"], tmp_path) as host:
        replies = await asyncio.wait_for(  # not held for the retries, which go on for ever (a generous bound)
            asyncio.gather(host.request("initialize", INIT_PARAMS), host.request("tools/list", {})), 10
        )
        for reply in replies:
            assert reply["error"]["message"] == (
                "the upstream MCP server could not be started: mcpwatch-no-such-server: no such executable"
            )
        assert await host.close() == 0
    assert "could not be started: mcpwatch-no-such-server: no such executable" in host.stderr()
    assert "did not stop" not in host.stderr()
    host.assert_clean_stderr()
