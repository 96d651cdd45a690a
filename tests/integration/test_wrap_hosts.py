"""Host detection end to end: a real wrapper gives each host's calls the budget of that host's clocks, on the stdio
front and the HTTP front, in the 2025 era (clientInfo in initialize) and the 2026 era (clientInfo on each request).

The budget a call got is read where the upstream sees it: the `dev.mcpwatch/deadline_ms` the wrapper stamps on it.
Every host's budget in both eras, the deadline's text naming the host's clock and the heartbeats' timing are the
core's, tested exactly on a manual clock in tests/unit/test_core_hosts.py; here what only a real process shows:
the HTTP front's sessions, the command line's flags and start-up line, the operator's status, heartbeats on an
event stream.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import httpx2
import pytest
from faults.faultkit import RAW_SERVER, raw_host

from mcpwatch.ports import free_port

from checkout import REPO, mcpwatch_cmd
from host_budgets import BUDGETS, modern_meta, stamped_budget_s
from waiting import wait_for_port
from wraptools import SDK_SERVER

pytestmark = pytest.mark.anyio


def logged(log) -> list:
    """The events of the log's latest session."""
    from mcpwatch.store import EventReader

    with EventReader(log) as reader:
        return list(reader.events(reader.latest_session().id))


def assert_budget(got: float, expected: float, who: str) -> None:
    assert expected - 1.0 <= got <= expected, (who, got, expected)


def http_post(http: httpx2.AsyncClient, url: str, body: dict, session: str | None = None):
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if session:
        headers["Mcp-Session-Id"] = session
    return http.post(url, json=body, headers=headers)


def answer_of(response: httpx2.Response) -> dict:
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()
    for line in response.text.splitlines():
        if line.startswith("data: "):
            message = json.loads(line[6:])
            if "id" in message:
                return message
    raise AssertionError(response.text)


async def test_http_front_two_hosts_of_different_kinds_get_different_budgets_in_both_eras(tmp_path):
    port = free_port()
    listen = f"http://127.0.0.1:{port}/mcp"
    log = tmp_path / "events.db"
    wrapper = subprocess.Popen(
        mcpwatch_cmd("wrap", "--log", str(log), "--listen", listen, "--", *RAW_SERVER),
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(port)
        async with httpx2.AsyncClient(timeout=30) as http:
            sessions = {}
            for n, name in enumerate(("codex-mcp-client", "gemini-cli-mcp-client", "claude-code")):
                init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": name}}
                opened = await http_post(
                    http, listen, {"jsonrpc": "2.0", "id": n, "method": "initialize", "params": init}
                )
                sessions[name] = opened.headers["mcp-session-id"]
            for name, session in sessions.items():
                call = {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "echo", "arguments": {}}}
                reply = answer_of(await http_post(http, listen, call, session))
                assert_budget(stamped_budget_s(reply), BUDGETS[name][1], name)
            # Claude Code with a progress token: its idle clock is kept alive, the HTTP cut decides
            call = {"jsonrpc": "2.0", "id": 11, "method": "tools/call"}
            call["params"] = {"name": "echo", "arguments": {}, "_meta": {"progressToken": 5}}
            reply = answer_of(await http_post(http, listen, call, sessions["claude-code"]))
            assert_budget(stamped_budget_s(reply), 340, "claude-code with a token")
            for n, (name, (_, expected)) in enumerate(BUDGETS.items()):  # 2026 era: sessionless, clientInfo per request
                params = {"name": "echo", "arguments": {}, "_meta": modern_meta(name)}
                reply = answer_of(
                    await http_post(
                        http, listen, {"jsonrpc": "2.0", "id": 100 + n, "method": "tools/call", "params": params}
                    )
                )
                assert_budget(stamped_budget_s(reply), expected, f"{name} (2026 era)")
    finally:
        wrapper.terminate()
        wrapper.wait(15)
    assert b"Traceback" not in wrapper.stderr.read()
    infos = [e.data for e in logged(log) if e.kind == "host_info"]
    legacy = [d for d in infos if d.get("host_session") not in (None, "sessionless")]  # 2026-era share one upstream
    assert [d["label"] for d in legacy] == ["Codex CLI", "Gemini CLI", "Claude Code"]
    assert all(d["host_session"] == "sessionless" for d in infos if d not in legacy)
    assert len({d["host_session"] for d in legacy}) == 3 and all(d["front"] == "http" for d in infos)
    assert infos[[d["name"] for d in infos].index("claude-ai")]["label"] == "claude.ai connectors"


async def test_budget_flags_beat_the_profile_and_the_start_up_line_says_where_things_are(tmp_path):
    log = tmp_path / "events.db"
    env = {"MCPWATCH_TOOL_CALL_DEADLINE_MARGIN_SEC": "9"}  # the flag wins over its variable
    flags = ["--name", "flagged", "--host-timeout", "40", "--margin", "5"]
    async with raw_host(RAW_SERVER, tmp_path, log=log, env=env, wrap_args=flags) as host:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "codex-mcp-client"}}
        await host.call("initialize", init, timeout=30)
        assert_budget(stamped_budget_s(await host.tool("echo")), 35, "flags")
        assert await host.close() == 0
    lines = [line for line in host.stderr().splitlines() if line.startswith("mcpwatch: wrapping")]
    assert lines == [
        f"mcpwatch: wrapping {' '.join(RAW_SERVER)} on stdio; log {log}; watch it with `mcpwatch watch flagged`"
    ]


async def test_status_shows_the_host_its_profile_and_the_deciding_clock(tmp_path, isolated_state):
    from wraptools import Operator, registry_entry

    async with raw_host(RAW_SERVER, tmp_path) as host:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "codex-mcp-client"}}
        await host.call("initialize", init, timeout=30)
        operator = Operator(registry_entry(isolated_state))
        status = await operator.tool("status")
        shown = status["wrapper"]["host"]
        assert (shown["name"], shown["label"], shown["profile"]) == ("codex-mcp-client", "Codex CLI", "codex")
        assert shown["deciding_clock"]["setting"] == "tool_timeout_sec"
        assert status["wrapper"]["hosts"][0]["label"] == "Codex CLI"
        deadline = status["deadline"]
        assert (deadline["budget_s"], deadline["host"], deadline["clock"]) == (50, "Codex CLI", "tool_timeout_sec 60 s")
        changed = await operator.tool("set_margin", seconds=20)
        assert changed["budget_s"] == 40 and changed["explanation"].startswith("Codex CLI tool_timeout_sec 60 s")
        assert await host.close() == 0


async def test_heartbeats_reach_a_host_over_the_http_front(tmp_path):
    config = tmp_path / "mcpwatch.toml"
    config.write_text("[hosts.patient-host]\nidle_s = 0.6\nwall_s = 30\n")
    port = free_port()
    listen = f"http://127.0.0.1:{port}/mcp"
    wrapper = subprocess.Popen(
        mcpwatch_cmd("wrap", "--no-log", "--config", str(config), "--listen", listen, "--", *RAW_SERVER),
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(port)
        async with httpx2.AsyncClient(timeout=30) as http:
            init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "patient-host"}}
            opened = await http_post(http, listen, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
            session = opened.headers["mcp-session-id"]
            params = {"name": "sleep", "arguments": {"seconds": 1.5, "steps": 1}, "_meta": {"progressToken": "hb"}}
            reply = await http_post(
                http, listen, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}, session
            )
        frames = [json.loads(line[6:]) for line in reply.text.splitlines() if line.startswith("data: ")]
        beats = [f for f in frames if "still working" in str((f.get("params") or {}).get("message"))]
        assert len(beats) >= 3 and all(b["params"]["progressToken"] == "hb" for b in beats), frames
        assert frames[-1]["id"] == 2 and frames[-1]["result"]["content"][0]["text"] == "slept 1.5"
    finally:
        wrapper.terminate()
        wrapper.wait(15)
    assert b"Traceback" not in wrapper.stderr.read()


@pytest.mark.slow
async def test_check_over_url_reaches_an_http_server(tmp_path):
    port = free_port()
    server = subprocess.Popen([sys.executable, SDK_SERVER, "http", str(port)], stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        done = await asyncio.to_thread(
            subprocess.run,
            mcpwatch_cmd("check", "--front", "http", "--url", f"http://127.0.0.1:{port}/mcp"),
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=120,
        )
    finally:
        server.terminate()
        server.wait(10)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   handshake  sdk-fixture" in done.stdout and "ok   ping" in done.stdout
    rows = {line.split("│")[1].strip(): line for line in done.stdout.splitlines() if line.count("│") >= 5}
    assert "claude.ai connectors" in rows and "Claude Desktop" not in rows  # the HTTP front's hosts
    assert "340 s (290 s without a progress token)" in rows["Claude Code"]
