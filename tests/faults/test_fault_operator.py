"""The operator endpoint under hostile or sloppy input, beyond tests/integration/test_wrap_operator.py: every token
variant that is not exactly right, Host headers that only look like loopback, raw JSON NaN/Infinity/1e309 and other
bad values for all three deadline setters. Each is refused with a message, and nothing changes."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import httpx2
import pytest
from faultkit import FAULT_SERVER, raw_host, registry_of, session_events

from wraptools import Operator, first_text

pytestmark = pytest.mark.anyio

HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-06-18",
}
LIST = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}'

# raw JSON text for `seconds`: literals a JSON library may let through, and values the contract refuses
BAD: dict[str, list[str]] = {
    "set_margin": ["NaN", "Infinity", "-Infinity", "1e309", "-1e309", '"1e999"', "1e9", "{}", "[]", "null", '""'],
    "set_host_timeout": ["NaN", "Infinity", "1e309", "0", "-5", '"0"', '"ten"', "true", "1e9", "null"],
    "set_deadline": ["NaN", "-Infinity", "1e309", "-1e309", '"soon"', "false", "1e9", "-1e9", "{}"],
}


async def post(url: str, body: bytes, headers: dict[str, str], method: str = "POST") -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.request(method, url, content=body if method == "POST" else None, headers=headers)


def tool_call(name: str, seconds_json: str) -> bytes:
    """A tools/call whose `seconds` is the raw JSON text given (so NaN and 1e309 go on the wire as they are)."""
    params = f'{{"name":"{name}","arguments":{{"seconds":{seconds_json}}}}}'
    return f'{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{params}}}'.encode()


def refusal_text(reply: httpx2.Response) -> str:
    """The words a refusal carries: a tool error's text, or a JSON-RPC error's message."""
    assert reply.status_code in (200, 400), reply.text
    body: Any = reply.json()
    if "error" in body:
        return str(body["error"]["message"])
    result = body["result"]
    assert result["isError"] is True, body
    return " ".join(block["text"] for block in result["content"])


@pytest.mark.slow
async def test_tokens_hosts_and_bad_values_are_refused_and_change_nothing(tmp_path: Path, isolated_state: Path) -> None:
    log = tmp_path / "events.db"
    async with raw_host(FAULT_SERVER, tmp_path, log=log) as host:
        await host.initialize()
        entry = await registry_of(isolated_state, host.pid)
        registry_file = isolated_state / "wrappers" / f"{host.pid}.json"
        assert stat.S_IMODE(os.stat(registry_file).st_mode) == 0o600
        url, token = entry["operator_url"], entry["token"]
        good = {**HEADERS, "Authorization": f"Bearer {token}"}
        port = url.split(":")[2].split("/")[0]

        wrong_tokens = ["", "Bearer", f"Bearer {token[:-1]}", f"Bearer {token}x", f"Basic {token}", token]
        for value in wrong_tokens:
            headers = {**HEADERS, "Authorization": value} if value else dict(HEADERS)
            reply = await post(url, LIST, headers)
            assert reply.status_code == 401, (value, reply.status_code)
            assert token not in reply.text
        for method in ("GET", "DELETE"):
            assert (await post(url, b"", HEADERS, method)).status_code == 401

        for bad_host in ["127.0.0.1.evil.example", f"localhost.evil.example:{port}", "evil.example", "", "0.0.0.0"]:
            reply = await post(url, LIST, {**good, "Host": bad_host})
            assert reply.status_code == 421, (bad_host, reply.status_code)
        for loopback in [f"localhost:{port}", f"[::1]:{port}", f"127.0.0.1:{port}"]:
            assert (await post(url, LIST, {**good, "Host": loopback})).status_code == 200, loopback

        operator = Operator(entry)
        before = (await operator.tool("status"))["deadline"]
        for tool, values in BAD.items():
            for seconds in values:
                text = refusal_text(await post(url, tool_call(tool, seconds), good))
                assert text.strip(), (tool, seconds)
        after = await operator.tool("status")
        assert after["deadline"] == before
        events = (await operator.tool("events", after=0, limit=10_000))["events"]
        assert not [e for e in events if e["kind"] == "config_change"]

        # and the real thing still works, is logged, and applies
        changed = await operator.tool("set_margin", seconds=30)
        assert changed["margin_s"] == 30 and changed["budget_s"] == 90
        assert await host.close() == 0
    host.assert_clean_stderr()
    assert token not in host.stderr()
    assert not registry_file.exists()
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("events.db*"))
    assert token.encode() not in stored  # the log never holds the operator token
    changes = [e for e in session_events(log, entry["session_id"]) if e.kind == "config_change"]
    assert [(c.data["key"], c.data["new"]) for c in changes] == [("margin_s", 30.0)]
    assert json.dumps(before)  # the refused values left the block serialisable and as it was


async def test_the_sdk_client_speaks_to_the_operator_endpoint(tmp_path: Path, isolated_state: Path) -> None:
    """The endpoint is hand-written (no SDK server in the wrapper): the SDK's own client, as `mcpwatch watch` uses
    it, must still get through the whole handshake and every tool."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with raw_host(FAULT_SERVER, tmp_path) as host:
        await host.initialize()
        entry = await registry_of(isolated_state, host.pid)
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {entry['token']}"}, timeout=30) as http:
            transport = streamable_http_client(entry["operator_url"], http_client=http)
            async with Client(transport, mode="legacy") as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert names == {"status", "events", "health_check", "set_margin", "set_host_timeout"} | {
                    "set_deadline",
                    "reset_deadline",
                    "cancel",
                    "call_upstream",
                }
                status = await client.call_tool("status", {})
                assert not status.is_error and status.structured_content["wrapper"]["pid"] == host.pid
                odd = await client.call_tool("events", {"after": "¹"})  # a digit to str.isdigit, not to int()
                assert odd.is_error and "after must be a whole number" in first_text(odd)
                events = await client.call_tool("events", {"after": "0", "limit": 2})
                assert events.structured_content["events"][0]["kind"] == "session_start"
                latest = events.structured_content["latest"]
                quiet = await client.call_tool("events", {"after": latest + 100, "wait_ms": 200})
                assert quiet.structured_content["events"] == []
                margin = await client.call_tool("set_margin", {"seconds": 20})
                assert margin.structured_content["margin_s"] == 20
                refused = await client.call_tool("set_margin", {"seconds": "soon"})
                assert refused.is_error and "number of seconds" in first_text(refused)
                missing = await client.call_tool("cancel", {"request_id": "nope"})
                assert missing.is_error and "no call with request id 'nope'" in first_text(missing)
                health = await client.call_tool("health_check", {})
                assert health.structured_content["ok"] is True
        assert await host.close() == 0
    host.assert_clean_stderr()
