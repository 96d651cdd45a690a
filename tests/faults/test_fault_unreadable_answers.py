"""An upstream answer the wrapper cannot use, as real processes: a frame nested deeper than the decoder allows, one
in invalid UTF-8, and (over HTTP) a reply to the POST that is not a 2xx answer. The request it was for is answered at
once with a JSON-RPC error that names what was wrong, where before it waited for its whole budget (here 600 s; the
host gives up after 30 s, so the old code fails), and the next call works."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from faultkit import FAULT_SERVER, FIXTURES, raw_host, text_of

from mcpwatch.ports import free_port

from waiting import wait_for_port

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
LONG_BUDGET = {"MCPWATCH_TOOL_CALL_DEADLINE_SEC": "600"}
HOST_WAIT_S = 30.0  # far below the budget: only an answer that comes at once arrives within it
WHAT_WAS_WRONG = {"nested": "JSON nested deeper than 256 levels", "utf8": "not valid UTF-8 (byte 0xff at offset"}


@contextlib.contextmanager
def http_server() -> Iterator[str]:
    port = free_port()
    script = str(FIXTURES / "fault_http_server.py")
    process = subprocess.Popen([sys.executable, script, str(port)], stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait(10)


def assert_error(reply: dict, *words: str) -> str:
    assert "error" in reply, reply
    error = reply["error"]
    assert error["code"] == -32603, reply
    for word in words:
        assert word in error["message"], error["message"]
    return str(error["message"])


async def test_a_stdio_answer_that_cannot_be_decoded_answers_its_call_at_once(tmp_path: Path) -> None:
    async with raw_host(FAULT_SERVER, tmp_path, env=LONG_BUDGET) as host:
        await host.initialize()
        for kind, what in WHAT_WAS_WRONG.items():
            reply = await host.tool("unreadable", {"kind": kind}, timeout=HOST_WAIT_S)
            assert reply["id"] == host._next_id
            assert_error(reply, "answer could not be read", what, "discarded")
        # an unreadable request of the server's own that carries the call's id is no answer to the call
        reply = await host.tool("unreadable", {"kind": "request"}, timeout=HOST_WAIT_S)
        assert text_of(reply) == "answered after an unreadable request of its own", reply
        assert json.loads(text_of(await host.tool("echo", {"n": 1})))["args"] == {"n": 1}
        assert await host.close() == 0
    host.assert_clean_stderr()
    assert all(len(replies) == 1 for replies in host.responses.values()), "a request was answered twice"


async def test_an_http_answer_that_cannot_be_decoded_answers_its_call_at_once(tmp_path: Path) -> None:
    """As a JSON body or an event, its id read from its start, or (id after the result) taken from its POST."""
    with http_server() as url:
        async with raw_host([], tmp_path, env=LONG_BUDGET, wrap_args=["--url", url]) as host:
            await host.initialize()
            for stream in (False, True):
                for id_first in (True, False):
                    for kind, what in WHAT_WAS_WRONG.items():
                        args = {"kind": kind, "stream": stream, "id_first": id_first}
                        reply = await host.tool("unreadable", args, timeout=HOST_WAIT_S)
                        assert reply["id"] == host._next_id, args
                        assert_error(reply, "answer could not be read", what)
            assert json.loads(text_of(await host.tool("echo", {"n": 1}))) == {"n": 1}
            assert await host.close() == 0
        host.assert_clean_stderr()
    assert all(len(replies) == 1 for replies in host.responses.values()), "a request was answered twice"


async def test_an_http_reply_that_is_not_2xx_answers_its_call_at_once_with_the_status(tmp_path: Path) -> None:
    with http_server() as url:
        async with raw_host([], tmp_path, env=LONG_BUDGET, wrap_args=["--url", url]) as host:
            await host.initialize()
            for code in (200, 202, 302, 307, 400, 403, 500, 503):
                reply = await host.tool("status", {"code": code}, timeout=HOST_WAIT_S)
                message = assert_error(reply, f"HTTP {code}")
                if code < 300:  # a 2xx that is not JSON or an event stream cannot carry the answer
                    assert "carried no answer to it (text/plain" in message, message
                elif code < 400:
                    assert "a redirect to http://127.0.0.1:9/elsewhere, not followed" in message, message
                else:
                    assert f"status {code} on purpose" in message, message
            calls = [host.request("tools/call", {"name": "status", "arguments": {"code": 502}}) for _ in range(5)]
            for reply in await asyncio.wait_for(asyncio.gather(*calls), HOST_WAIT_S):
                assert_error(reply, "HTTP 502")
            endless = await host.tool("status", {"code": 500, "trickle": True}, timeout=HOST_WAIT_S)
            assert endless["error"]["message"] == "upstream HTTP 500", endless  # its body is not waited for
            assert json.loads(text_of(await host.tool("echo", {"n": 2}))) == {"n": 2}
            assert await host.close() == 0
        host.assert_clean_stderr()
