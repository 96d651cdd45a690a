"""Late-result reuse never hands one call's result to another host: many hosts on a real wrapper's HTTP front, 2025-era
sessions and sessionless 2026-era requests interleaved, every call with the same tool and arguments, half of them cut
at the deadline and answering late. Each answer must carry its own call's tag, or (reused) a tag of a call of the
same session; a sessionless request is never answered from the store."""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from front_tools import ACCEPT, listening_wrapper

from wraptools import FIXTURES

pytestmark = pytest.mark.anyio

TAGGED_SERVER = [sys.executable, str(FIXTURES / "tagged_server.py")]
MODERN = "2026-07-28"
DEADLINE_S = 0.25
SLOW_S = 0.6  # past the deadline: cut, then answers late and is stored for reuse
ROUNDS = 6
SEQUENTIAL = 60
CONFIG = '[[late_results.reuse]]\nmatch = "lookup"\nttl_s = 60\n'
ARGUMENTS = {"q": "the same question"}


def answer_of(response: httpx2.Response) -> dict[str, Any]:
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()
    for line in response.text.splitlines():
        if line.startswith("data: ") and "id" in (message := json.loads(line[6:])):
            return message
    raise AssertionError(response.text)


class Caller:
    """One host: a 2025-era session (initialize first) or a sessionless 2026-era client naming itself per request."""

    ids = itertools.count(1)

    def __init__(self, http: httpx2.AsyncClient, url: str, name: str, *, session: bool) -> None:
        self.http, self.url, self.name, self.session = http, url, name, session
        self.headers = dict(ACCEPT)
        self.tags: set[str] = set()  # every tag this host ever sent

    async def open(self) -> None:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": self.name}}
        opened = await self.http.post(self.url, json=self._rpc("initialize", init), headers=self.headers)
        assert opened.status_code == 200, opened.text
        self.headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await self.http.post(self.url, json=note, headers=self.headers)).status_code == 202

    def _rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}

    async def call(self, tag: str, sleep_s: float) -> tuple[str, dict[str, Any]]:
        meta: dict[str, Any] = {"test/tag": tag, "test/sleep_s": sleep_s}
        if not self.session:
            meta["io.modelcontextprotocol/protocolVersion"] = MODERN
            meta["io.modelcontextprotocol/clientInfo"] = {"name": self.name, "version": "1"}
        self.tags.add(tag)
        params = {"name": "lookup", "arguments": ARGUMENTS, "_meta": meta}
        response = await self.http.post(self.url, json=self._rpc("tools/call", params), headers=self.headers)
        return tag, answer_of(response)


def tag_in(result: dict[str, Any]) -> str | None:
    """The tag of the call whose answer this is (the server's text block), or None for the wrapper's own error."""
    for block in result.get("content", []):
        try:
            return json.loads(block.get("text", ""))["tag"]
        except (ValueError, TypeError, KeyError):
            continue
    return None


@pytest.mark.slow
async def test_no_answer_ever_carries_another_calls_result(tmp_path: Path) -> None:
    async with (
        listening_wrapper(tmp_path, "--deadline", str(DEADLINE_S), config=CONFIG, upstream=TAGGED_SERVER) as front,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        callers = [Caller(http, front.url, f"session-host-{n}", session=True) for n in range(3)]
        callers += [Caller(http, front.url, f"sessionless-host-{n}", session=False) for n in range(3)]
        await asyncio.gather(*(c.open() for c in callers if c.session))
        checked = reused = reused_sessionless = 0
        for round_ in range(ROUNDS):
            calls = [c.call(f"{c.name}/{round_}/{k}", SLOW_S if k == 0 else 0.0) for c in callers for k in range(2)]
            answers = await asyncio.gather(*calls)
            for caller, (tag, answer) in zip([c for c in callers for _ in range(2)], answers, strict=True):
                result = answer["result"]
                carried = tag_in(result)
                late = (result.get("_meta") or {}).get("dev.mcpwatch/late_result")
                if late is not None:
                    reused += 1
                    reused_sessionless += not caller.session
                    assert caller.session and carried in caller.tags and carried != tag, (caller.name, tag, result)
                else:
                    assert carried in (tag, None), (caller.name, tag, result)  # None: cut at the deadline
                    assert carried == tag or result.get("isError") is True
                checked += 1
            await asyncio.sleep(SLOW_S)  # the cut calls answer late meanwhile
        # one sessionless host after another, each asking once: a freed request's memory is soon another's
        for n in range(SEQUENTIAL):
            caller = Caller(http, front.url, f"sessionless-host-{n % 7}", session=False)
            callers.append(caller)
            tag, answer = await caller.call(f"one-off/{n}", SLOW_S if n % 2 == 0 else 0.0)
            result = answer["result"]
            late = (result.get("_meta") or {}).get("dev.mcpwatch/late_result")
            reused_sessionless += late is not None
            assert late is None and tag_in(result) in (tag, None), (tag, result)
            checked += 1
    print(f"reuse isolation: {checked} answers checked, {reused} reused")
    assert checked == ROUNDS * 6 * 2 + SEQUENTIAL
    assert reused_sessionless == 0  # a sessionless request is never answered from the store
    assert reused >= 1  # reuse itself works within a session, so the check above was not vacuous
