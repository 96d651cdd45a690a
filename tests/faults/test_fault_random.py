"""Randomised (seeded): 2,000 calls, many at once, with upstream delays spread around a sub-second deadline and
random host cancellations, through a real wrapper over pipes.

Every request gets exactly one response, except one the host cancelled before the wrapper answered it, which gets
none (MCP: the receiver of a cancellation should not respond; a response already on its way is fine). No response
is delivered late: an upstream answer never reaches the host after the deadline answer, no request is answered
twice, no progress arrives after its call's answer. And every answer the upstream wrote is accounted for:
delivered, or dropped against a tombstone.

Wall-clock speed is not checked here: under load the event loop runs I/O callbacks before due timers in the same
iteration, so an upstream answer whose delay just exceeds the budget can legitimately win the race, and a deadline
answer can come well after its timer fell due. The exact deadline behaviour is tested on a manual clock
(tests/unit/test_core_deadlines.py). What remains is a generous bound that no deadline answer was held back
(HELD_BACK_S, many times the budget).
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest
from faultkit import FAULT_SERVER, raw_host, read_jsonl, registry_of, session_events, text_of

from mcpwatch.store import EventReader

from waiting import eventually
from wraptools import Operator

pytestmark = pytest.mark.anyio

SEED = 20260509
CALLS = 2_000  # hundreds past the budget, near it and cancelled: each way of answering late, many times over
BUDGET_S = 0.5
IN_FLIGHT = 400
CANCEL_SHARE = 0.1
PROGRESS_SHARE = 0.2
HELD_BACK_S = 10.0  # a deadline answer this late was held back, not merely delayed by a busy machine


def plan(rng: random.Random) -> list[dict[str, Any]]:
    """Delays: half well inside the budget, a third within ±20 % of it, the rest well past it."""
    budget_ms = BUDGET_S * 1000
    calls = []
    for _ in range(CALLS):
        draw = rng.random()
        if draw < 0.5:
            ms = rng.uniform(0, 0.8 * budget_ms)
        elif draw < 0.83:
            ms = rng.uniform(0.8 * budget_ms, 1.2 * budget_ms)
        else:
            ms = rng.uniform(1.2 * budget_ms, 2 * budget_ms)
        calls.append(
            {
                "ms": round(ms, 1),
                "cancel_after_s": rng.uniform(0, 0.8) if rng.random() < CANCEL_SHARE else None,
                "progress": rng.random() < PROGRESS_SHARE,
            }
        )
    return calls


def every_answer_logged(log: Path, session_id: str) -> bool:
    """Whether each call's upstream answer is in the log: delivered, dropped late, or (a failure, said below) not
    recognised."""
    with EventReader(log) as reader:
        events = list(reader.events(session_id, kinds=["request_end", "tombstone_hit", "unknown_response"]))
    delivered = sum(1 for e in events if e.kind == "request_end" and e.tool == "delay" and e.data["outcome"] == "ok")
    dropped = sum(1 for e in events if e.kind == "tombstone_hit" and e.data["what"] == "response")
    return delivered + dropped + sum(1 for e in events if e.kind == "unknown_response") >= CALLS


def outcome_of(message: dict[str, Any]) -> str:
    result = message.get("result")
    if not isinstance(result, dict):
        return "protocol_error"
    partial = (result.get("_meta") or {}).get("dev.mcpwatch/partial")
    if partial is not None:
        return str(partial["outcome"])
    return "ok" if text_of(message).startswith("done ") else "unexpected"


@pytest.mark.slow
async def test_two_thousand_calls_with_deadlines_and_cancellations(tmp_path: Path, isolated_state: Path) -> None:
    calls = plan(random.Random(SEED))
    log = tmp_path / "events.db"
    cancel_log = tmp_path / "cancels.jsonl"
    summary = tmp_path / "summary.jsonl"
    env = {
        "MCPWATCH_TOOL_CALL_DEADLINE_SEC": str(BUDGET_S),
        "FAULT_SERVER_LOG": str(cancel_log),
        "FAULT_SERVER_SUMMARY": str(summary),
    }
    host_ids: dict[str, int] = {}  # request id (JSON) -> index into calls
    cancelled: set[str] = set()
    async with raw_host(FAULT_SERVER, tmp_path, log=log, env=env) as host:
        await host.initialize()
        operator = Operator(await registry_of(isolated_state, host.pid))
        slots = asyncio.Semaphore(IN_FLIGHT)

        async def one(index: int, call: dict[str, Any]) -> None:
            async with slots:
                params: dict[str, Any] = {"name": "delay", "arguments": {"ms": call["ms"], "steps": 2}}
                if call["progress"]:
                    params["_meta"] = {"progressToken": f"p{index}"}
                request_id = host.new_id()
                host_ids[json.dumps(request_id)] = index
                future = host.request("tools/call", params, request_id=request_id)
                if call["cancel_after_s"] is not None:
                    await asyncio.wait({future}, timeout=call["cancel_after_s"])
                    if not future.done():
                        host.cancel(request_id)
                        cancelled.add(json.dumps(request_id))
                        return  # the host owes itself nothing more
                await asyncio.wait_for(asyncio.shield(future), BUDGET_S + 10)

        await asyncio.wait_for(asyncio.gather(*(one(i, c) for i, c in enumerate(calls))), 240)
        status = await operator.tool("status")
        # the upstream's last (late) answers arrive and are dropped, each logged
        await eventually(lambda: every_answer_logged(log, status["log"]["session_id"]), 60, "every answer", poll=0.5)
        assert await host.close(timeout=30) == 0
    host.assert_clean_stderr()
    host.assert_clean_stdout()
    seed = f"(seed {SEED})"

    # -- what the host saw --------------------------------------------------------------------------------
    assert set(host.responses) <= set(host_ids) | {json.dumps(1)}, f"responses to ids never sent {seed}"
    twice = [key for key, replies in host.responses.items() if len(replies) > 1]
    assert not twice, f"answered more than once: {twice[:5]} {seed}"
    seen: dict[str, str] = {}
    held_back: list[tuple[str, float]] = []
    slowest = 0.0
    for key in host_ids:
        replies = host.responses.get(key, [])
        if not replies:
            assert key in cancelled, f"request {key} got no response {seed}"
            continue
        reply = replies[0]
        outcome = seen[key] = outcome_of(reply.message)
        assert outcome in ("ok", "deadline"), (key, reply.message)
        if outcome == "deadline":
            waited = reply.at - host.sent_at[key]
            slowest = max(slowest, waited)
            if waited > BUDGET_S + HELD_BACK_S:
                held_back.append((key, waited))
    assert not held_back, f"deadline answers held back past budget + {HELD_BACK_S} s: {held_back[:5]} {seed}"
    positions = {key: replies[0].index for key, replies in host.responses.items()}
    given = {f"p{i}": json.dumps(rid) for rid_key, i in host_ids.items() for rid in [json.loads(rid_key)]}
    for item in host.notifications:
        assert item.message["method"] == "notifications/progress", item.message
        token = item.message["params"]["progressToken"]
        assert token in given, f"progress with a token nobody gave: {token} {seed}"
        assert item.index < positions.get(given[token], 1 << 60), f"progress after its answer: {token} {seed}"

    # -- what the wrapper logged agrees with it -----------------------------------------------------------
    events = session_events(log, status["log"]["session_id"])
    assert [e.seq for e in events] == list(range(1, len(events) + 1)) and events[-1].kind == "session_end"
    ends = {e.request_id: e.data["outcome"] for e in events if e.kind == "request_end" and e.tool == "delay"}
    up_ids = {e.request_id: e.data["up_id"] for e in events if e.kind == "request_start" and e.tool == "delay"}
    assert len(ends) == len(up_ids) == CALLS
    for key in host_ids:
        logged = ends[key]
        if key in seen:
            assert logged == seen[key], (key, logged, seen[key])
        else:  # no response: the wrapper must have taken the host's cancellation
            assert logged == "cancelled", (key, logged)
    host_cancelled = [k for k, outcome in ends.items() if outcome == "cancelled"]
    assert 0 < len(host_cancelled) <= len(cancelled)

    # -- and the upstream's side: every cancellation sent once, every answer it wrote accounted for ------
    abandoned = {up_ids[k] for k, outcome in ends.items() if outcome in ("deadline", "cancelled")}
    sent_cancels = [c["cancelled"] for c in read_jsonl(cancel_log)]
    assert sorted(sent_cancels) == sorted(abandoned)
    (upstream,) = read_jsonl(summary)
    assert upstream["calls"] == upstream["answered"] == CALLS
    delivered = sum(1 for outcome in ends.values() if outcome == "ok")
    dropped = sum(1 for e in events if e.kind == "tombstone_hit" and e.data["what"] == "response")
    assert delivered + dropped == upstream["answered"], (delivered, dropped, upstream)
    assert not [e for e in events if e.kind == "unknown_response"]
    counters = events[-1].data["counters"]
    assert counters["timeouts"] == sum(1 for o in ends.values() if o == "deadline")
    assert counters["late_dropped"] == sum(1 for e in events if e.kind == "tombstone_hit")
    print(
        f"random run {seed}: {CALLS} calls, {delivered} answered by the upstream in time, "
        f"{counters['timeouts']} deadline answers, {len(cancelled)} host cancellations sent "
        f"({len(host_cancelled)} taken), {dropped} late answers dropped; "
        f"slowest deadline answer {slowest:.3f} s for a {BUDGET_S} s budget"
    )
