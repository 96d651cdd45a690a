"""Host detection in the wrapper's core on a manual clock: each host's calls get the budget of that host's clocks, in
the 2025 era (clientInfo in initialize) and the 2026 era (clientInfo on each request), exact to the millisecond.

The budget a call got is read where the upstream sees it: the `dev.mcpwatch/deadline_ms` the core stamps on it
(`RawUpstream`'s echo returns it). The same paths through a real wrapper over its pipes and over the HTTP front:
tests/integration/test_wrap_hosts.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from taskrig import RawRig

from mcpwatch.config import Settings, settings_from_mapping
from mcpwatch.events import Kind

from host_budgets import BUDGETS, modern_meta, stamped_budget_s

LABELS = {
    "claude-code": "Claude Code",
    "codex-mcp-client": "Codex CLI",
    "gemini-cli-mcp-client": "Gemini CLI",
    "someone-new": "unknown host 'someone-new'",
}


def rig_with(loop: asyncio.AbstractEventLoop, config: dict[str, Any] | None = None, **kwargs: Any) -> RawRig:
    """A core with the settings `mcpwatch.toml` would give (none: the defaults, the host's profile decides)."""
    return RawRig(loop, base=settings_from_mapping(config) if config else Settings(), **kwargs)


@pytest.mark.parametrize("name", sorted(BUDGETS))
def test_stdio_2025_era_each_client_name_gets_its_hosts_budget(loop, name: str) -> None:
    """A stdio front serves one host: each name is a wrapper's only host."""
    rig = rig_with(loop)
    rig.initialize(name, version="9.9")
    assert stamped_budget_s(rig.tool("echo")) == BUDGETS[name][0]
    [info] = rig.events(Kind.HOST_INFO)
    assert (info.data["name"], info.data["version"], info.data["front"]) == (name, "9.9", "stdio")
    assert info.data["known"] is (name != "someone-new")
    if name in LABELS:
        assert info.data["label"] == LABELS[name]


def test_stdio_2026_era_each_request_names_its_own_host(loop) -> None:
    rig = rig_with(loop)
    for name, (expected, _) in BUDGETS.items():
        reply = rig.call("tools/call", {"name": "echo", "arguments": {}, "_meta": modern_meta(name)})
        assert stamped_budget_s(reply) == expected, name
    # the same host again is not logged again
    rig.call("tools/call", {"name": "echo", "arguments": {}, "_meta": modern_meta("codex-mcp-client")})
    assert [e.data["name"] for e in rig.events(Kind.HOST_INFO)] == list(BUDGETS)


def test_on_the_http_front_each_kind_of_host_gets_its_budget_in_both_eras(loop) -> None:
    """The HTTP front gives each 2025-era session a core of its own, and 2026-era requests one shared core."""
    for name, (_, expected) in BUDGETS.items():
        session = rig_with(loop, front="http")
        session.initialize(name)
        assert stamped_budget_s(session.tool("echo")) == expected, name
    claude = rig_with(loop, front="http")
    claude.initialize("claude-code")
    # with a progress token Claude Code's idle clock is kept alive: the HTTP cut decides
    assert stamped_budget_s(claude.tool("echo", _meta={"progressToken": 5})) == 340
    shared = rig_with(loop, front="http")
    for name, (_, expected) in BUDGETS.items():
        reply = shared.call("tools/call", {"name": "echo", "arguments": {}, "_meta": modern_meta(name)})
        assert stamped_budget_s(reply) == expected, f"{name} (2026 era)"
    infos = [e.data for e in shared.events(Kind.HOST_INFO)]
    assert all(d["front"] == "http" for d in infos)
    assert infos[[d["name"] for d in infos].index("claude-ai")]["label"] == "claude.ai connectors"


def test_a_deadline_names_the_hosts_clock(loop) -> None:
    rig = rig_with(
        loop, {"hosts": {"codex-mcp-client": {"wall_s": 3}}}, environ={"MCPWATCH_TOOL_CALL_DEADLINE_MARGIN_SEC": "2"}
    )
    rig.initialize("codex-mcp-client")
    request_id = rig.send("tools/call", {"name": "sleep", "arguments": {"seconds": 3}})
    rig.scheduler.advance(0.999)
    assert [m for m in rig.host.sent if m.get("id") == request_id] == []
    rig.scheduler.advance(0.001)  # the budget: 3 s − 2 s
    reply = rig.reply_to(request_id)
    text = reply["result"]["content"][0]["text"]
    assert reply["result"]["isError"] is True
    assert "deadline budget of 1 s (Codex CLI tool_timeout_sec 3 s − margin 2 s" in text, text


def test_heartbeats_keep_an_idle_clock_alive_and_stop_at_the_answer(loop) -> None:
    rig = rig_with(loop, {"hosts": {"patient-host": {"idle_s": 0.6, "wall_s": 30}}})
    rig.initialize("patient-host")
    params = {"name": "sleep", "arguments": {"seconds": 1.6, "steps": 1}, "_meta": {"progressToken": "p1"}}
    request_id = rig.send("tools/call", params)
    rig.scheduler.advance(1.6)
    reply = rig.reply_to(request_id)
    assert reply["result"]["content"][0]["text"] == "slept 1.6"
    sent = rig.host.sent
    beats = [m for m in sent if "still working" in str(m.get("params", {}).get("message"))]
    upstream = [m for m in sent if m.get("params", {}).get("message") == "step 1"]
    assert len(beats) == 5, sent  # every 0.3 s while the upstream is silent: 0.3 … 1.5 s
    assert all(b["params"]["progressToken"] == "p1" and b["params"]["progress"] == 0 for b in beats)
    assert len(upstream) == 1  # the upstream's own progress still passes through, once
    assert all(sent.index(b) < sent.index(reply) for b in beats)
    rig.scheduler.advance(10.0)
    assert len([m for m in rig.host.sent if "still working" in str(m.get("params", {}).get("message"))]) == 5
    heartbeats = rig.events(Kind.HEARTBEAT)
    assert len(heartbeats) == 5 and heartbeats[0].data["interval_s"] == 0.3
    assert [e.data["message"] for e in rig.events(Kind.PROGRESS)] == ["step 1"]  # heartbeats are not progress
