"""Several real hosts on one `mcpwatch wrap --listen` front, compared case by case with the same server
(`server-everything`) serving Streamable HTTP itself: each host's sampling, elicitation and roots requests reach
that host alone, notifications reach only the session they belong to, each host gets the protocol version and the
capability-dependent tools the server would give it alone, and a host that never answers blocks nobody."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, types
from npm_cache import installed_bin, npm_fixture
from pydantic import FileUrl

from mcpwatch.ports import free_port

from checkout import REPO, mcpwatch_cmd
from waiting import patience, wait_for_port

pytestmark = pytest.mark.anyio
SIMULATED_LOG = re.compile(r"^(Debug|Info|Notice|Warning|Error|Critical|Emergency)-level message|^Alert level-message")
ASKED_OF_CAPABLE = {"elicitation", "roots", "sampling"}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@asynccontextmanager
async def process(argv: list[str], port: int, env: dict[str, str] | None = None) -> AsyncIterator[None]:
    proc = subprocess.Popen(argv, cwd=REPO, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        await anyio.to_thread.run_sync(wait_for_port, port, 30)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@asynccontextmanager
async def everything_direct(bin_dir: Path) -> AsyncIterator[str]:
    port = free_port()
    async with process([str(bin_dir / "mcp-server-everything"), "streamableHttp"], port, {"PORT": str(port)}):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def direct(npm_bin: Path) -> Iterator[str]:
    """One server-everything serving Streamable HTTP itself for the module: the reference each comparison is made
    against, and the upstream of the front over HTTP. Its state is per MCP session, and every host here opens its
    own sessions and ends them, so the tests share it rather than start it again."""
    port = free_port()
    argv = [str(npm_bin / "mcp-server-everything"), "streamableHttp"]
    proc = subprocess.Popen(argv, cwd=REPO, env={**os.environ, "PORT": str(port)}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        wait_for_port(port, 30)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@pytest.fixture(scope="module")
def wrapped_stdio(npm_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One front for the module over server-everything over stdio (a server process per host session): every host
    here opens its own session and ends it, so the tests share the front as they share `direct`."""
    port = free_port()
    log = tmp_path_factory.mktemp("front") / "events.db"
    argv = mcpwatch_cmd("wrap", "--log", str(log), "--listen", f"http://127.0.0.1:{port}/mcp", "--",
                        str(npm_bin / "mcp-server-everything"))  # fmt: skip
    proc = subprocess.Popen(argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        wait_for_port(port, 30)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@asynccontextmanager
async def everything_wrapped(
    bin_dir: Path, tmp_path: Path, *, over_http: bool, upstream_url: str | None = None
) -> AsyncIterator[str]:
    """The wrapper's front over server-everything: a process per host (stdio), or an MCP session per host (HTTP, to
    `upstream_url` or a server-everything of its own)."""
    port = free_port()
    wrap = ["--log", str(tmp_path / f"events-{port}.db"), "--listen", f"http://127.0.0.1:{port}/mcp"]
    async with AsyncExitStack() as stack:
        if over_http:
            if upstream_url is None:
                upstream_url = await stack.enter_async_context(everything_direct(bin_dir))
            argv = mcpwatch_cmd("wrap", *wrap, "--url", upstream_url)
        else:
            argv = mcpwatch_cmd("wrap", *wrap, "--", str(bin_dir / "mcp-server-everything"))
        await stack.enter_async_context(process(argv, port))
        yield f"http://127.0.0.1:{port}/mcp"


@dataclass
class HostRecord:
    """What one host saw: the server's requests it was asked, the notifications it got."""

    name: str
    asked: list[str] = field(default_factory=list)
    logs: list[Any] = field(default_factory=list)

    async def sampling(self, context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.asked.append("sampling")
        text = types.TextContent(type="text", text=f"sampled by {self.name}")
        return types.CreateMessageResult(role="assistant", content=text, model=f"model-{self.name}")

    async def elicitation(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append("elicitation")
        return types.ElicitResult(action="accept", content={"name": f"name-{self.name}"})

    async def roots(self, context: Any) -> types.ListRootsResult:
        self.asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri=FileUrl(f"file:///roots/{self.name}"), name=self.name)])

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        if SIMULATED_LOG.search(str(params.data)):  # the logging a host switches on for its own session
            self.logs.append(params.data)


def host_client(url: str, record: HostRecord, *, capable: bool = True) -> Client:
    if not capable:  # no sampling, elicitation or roots: the server lists fewer tools for this host
        return Client(url, mode="legacy", logging_callback=record.log)
    return Client(
        url,
        mode="legacy",
        sampling_callback=record.sampling,
        elicitation_callback=record.elicitation,
        list_roots_callback=record.roots,
        logging_callback=record.log,
    )


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def three_hosts(url: str) -> dict[str, Any]:
    """Hosts a and b (sampling, elicitation, roots) and c (none of them) on one server; what each one saw."""
    records = {name: HostRecord(name) for name in "abc"}
    seen: dict[str, Any] = {}
    async with AsyncExitStack() as stack:
        clients = {
            name: await stack.enter_async_context(host_client(url, records[name], capable=name != "c"))
            for name in "abc"
        }
        for name, client in clients.items():
            tools = {tool.name for tool in (await client.list_tools()).tools}
            seen[f"{name}.protocol"] = client.protocol_version
            seen[f"{name}.conditional_tools"] = sorted(
                tools & {"trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"}
            )
        await clients["a"].call_tool("toggle-simulated-logging", {})
        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:  # a and b at once: answers must not cross
                for name in "ab":
                    group.start_soon(one_host_calls, clients[name], name, seen)
        with anyio.fail_after(patience(15)):  # a bounded wait for what arrives on its own time, not a speed check
            while not records["a"].logs or any(set(records[n].asked) != ASKED_OF_CAPABLE for n in "ab"):
                await anyio.sleep(0.1)
        await anyio.sleep(0.5)
    for name, record in records.items():
        # server-everything asks for roots on a 350 ms timer after `initialized` and again from `get-roots-list`
        # if it has none yet, so a loaded machine can see roots asked twice; a server may send roots/list at any
        # time. Sampling and elicitation are each asked once per call.
        seen[f"{name}.asked"] = sorted(set(record.asked))
        seen[f"{name}.asked_twice"] = sorted({k for k in record.asked if k != "roots" and record.asked.count(k) > 1})
        seen[f"{name}.got_logs"] = bool(record.logs)
    return seen


async def one_host_calls(client: Client, name: str, seen: dict[str, Any]) -> None:
    sampled = await client.call_tool("trigger-sampling-request", {"prompt": f"from {name}", "maxTokens": 5})
    seen[f"{name}.sampling_answer"] = f"sampled by {name}" in text_of(sampled) and "sampled by" in text_of(sampled)
    seen[f"{name}.sampling_crossed"] = any(f"sampled by {o}" in text_of(sampled) for o in "abc" if o != name)
    elicited = await client.call_tool("trigger-elicitation-request", {})
    seen[f"{name}.elicitation_answer"] = f"name-{name}" in text_of(elicited)
    roots = await client.call_tool("get-roots-list", {})
    seen[f"{name}.roots"] = sorted(o for o in "abc" if f"file:///roots/{o}" in text_of(roots))


@pytest.mark.slow
async def test_three_sdk_hosts_see_what_they_would_see_directly(npm_bin, direct, wrapped_stdio, tmp_path):
    reference = await three_hosts(direct)
    # the direct run is the reference; it must show what the comparison is about
    assert reference["a.asked"] == reference["b.asked"] == sorted(ASKED_OF_CAPABLE)
    assert reference["a.asked_twice"] == reference["b.asked_twice"] == []
    assert reference["c.asked"] == [] and reference["c.conditional_tools"] == []
    assert reference["a.got_logs"] and not reference["b.got_logs"] and not reference["c.got_logs"]
    assert reference["a.roots"] == ["a"] and reference["b.roots"] == ["b"]
    for over_http in (False, True):  # the front over a stdio and an HTTP upstream, each against the one direct run
        front = everything_wrapped(npm_bin, tmp_path, over_http=True, upstream_url=direct) if over_http else None
        async with front or nullcontext(wrapped_stdio) as url:
            wrapped = await three_hosts(url)
        for key in sorted(reference):
            assert wrapped[key] == reference[key], (over_http, key, wrapped[key], reference[key])


async def raw_initialize(url: str, version: str) -> tuple[str, dict[str, Any]]:
    """A plain HTTP host asking for an older protocol version: the version and tool names it is given."""
    init = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "old-host", "version": "1"}}
    async with httpx2.AsyncClient(timeout=20) as http:
        reply = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
                                headers=ACCEPT)  # fmt: skip
        assert reply.status_code == 200, reply.text
        answer = parse_reply(reply)
        headers = {**ACCEPT, "Mcp-Session-Id": reply.headers["mcp-session-id"], "MCP-Protocol-Version": version}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(url, json=note, headers=headers)).status_code == 202
        listed = parse_reply(await http.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                                             headers=headers))  # fmt: skip
        await http.delete(url, headers=headers)
    return answer["result"]["protocolVersion"], {"tools": sorted(t["name"] for t in listed["result"]["tools"])}


def parse_reply(reply: httpx2.Response) -> dict[str, Any]:
    if reply.headers.get("content-type", "").startswith("application/json"):
        return reply.json()
    data = [line[5:].strip() for line in reply.text.splitlines() if line.startswith("data:")]
    return json.loads(data[-1])


@pytest.mark.slow
async def test_each_host_gets_its_own_protocol_version(direct, wrapped_stdio):
    """A current SDK host first, then a host asking for 2025-03-26: each is answered as the server alone would."""
    results = {}
    for arrangement in ("direct", "wrapped"):
        async with nullcontext(direct if arrangement == "direct" else wrapped_stdio) as url:
            record = HostRecord("a")
            async with host_client(url, record) as modern:
                old = await raw_initialize(url, "2025-03-26")
                results[arrangement] = (modern.protocol_version, old)
    assert results["direct"][1][0] == "2025-03-26"
    assert results["wrapped"] == results["direct"]


async def silent_sampling_host(url: str, asked: anyio.Event) -> None:
    """A plain HTTP host that offers sampling, calls a tool that needs it, and never answers the request."""
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"sampling": {}},
        "clientInfo": {"name": "silent", "version": "1"},
    }
    async with httpx2.AsyncClient(timeout=60) as http:
        reply = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
                                headers=ACCEPT)  # fmt: skip
        headers = {**ACCEPT, "Mcp-Session-Id": reply.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
        await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        call = {"name": "trigger-sampling-request", "arguments": {"prompt": "x", "maxTokens": 5}}
        request = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
        async with http.stream("POST", url, json=request, headers=headers) as stream:
            async for line in stream.aiter_lines():
                if "sampling/createMessage" in line:
                    asked.set()  # and never answered


OLD_TS_SDK = "@modelcontextprotocol/sdk@1.12"
OLD_TS_CLIENT = Path(__file__).parent.parent / "fixtures" / "ts_old_client.mjs"


@npm_fixture
def old_ts_sdk() -> Path:
    """The 1.12 TypeScript SDK (protocol 2025-03-26): its `node_modules` folder."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the TypeScript SDK host runs on it")
    return installed_bin(OLD_TS_SDK).parent


@pytest.mark.slow
async def test_an_older_typescript_host_connects_after_a_current_one(direct, wrapped_stdio, old_ts_sdk):
    """A current SDK host is connected first; then TypeScript SDK 1.12 (which refuses any version newer than
    2025-03-26) connects, lists and calls, as it does directly."""
    seen = {}
    for arrangement in ("direct", "wrapped"):
        url = direct if arrangement == "direct" else wrapped_stdio
        async with host_client(url, HostRecord("a")) as current:
            assert current.protocol_version == "2025-11-25"
            old = await anyio.run_process(["node", str(OLD_TS_CLIENT), url], env={**os.environ, "NODE_PATH": str(
                old_ts_sdk)}, check=False)  # fmt: skip
            seen[arrangement] = json.loads(old.stdout.decode().strip().splitlines()[-1])
    assert seen["direct"]["connected"] is True and seen["direct"]["echo"] == "Echo: old"
    assert "trigger-sampling-request" not in seen["direct"]["tools"]  # it offered no sampling
    assert seen["wrapped"] == seen["direct"]


@pytest.mark.slow
async def test_a_host_that_never_answers_sampling_blocks_no_other_host(wrapped_stdio):
    async with nullcontext(wrapped_stdio) as url:
        answering = HostRecord("b")
        asked = anyio.Event()
        async with host_client(url, answering) as host, anyio.create_task_group() as group:
            group.start_soon(silent_sampling_host, url, asked)
            with anyio.fail_after(patience(15)):
                await asked.wait()  # the silent host holds an unanswered sampling request
            with anyio.fail_after(patience(10)):  # not held behind the silent host (which never answers)
                result = await host.call_tool("trigger-sampling-request", {"prompt": "y", "maxTokens": 5})
            assert "sampled by b" in text_of(result)
            assert answering.asked.count("sampling") == 1  # (it is also asked for its roots on connecting)
            group.cancel_scope.cancel()
