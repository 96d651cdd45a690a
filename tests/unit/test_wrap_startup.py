"""What `mcpwatch wrap` on stdio loads before it answers its host: every host starts one per server, and waits for
it. Counted (modules imported), never timed: a module a path does not use, imported at module scope somewhere
along it, fails here in the commit that adds it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from checkout import REPO

RAW_SERVER = str(REPO / "tests" / "fixtures" / "raw_server.py")

NOT_ON_STDIO = ("uvicorn", "httptools", "click", "starlette", "mcp", "httpx2", "textual", "rich", "opentelemetry")
"""Packages a stdio wrapper never uses until someone connects to its operator endpoint (uvicorn), or at all."""
NOT_FOR_A_WRAPPER = ("mcpwatch.httpserve.limits", "mcpwatch.store.reader", "importlib.resources")
"""uvicorn's protocol (for the first operator client), the log's reader (a wrapper only writes), and the package
resources machinery (the host profiles are one file beside their module)."""

PROBE = """
import atexit, json, os, sys
from mcpwatch.cli import main
atexit.register(lambda: open(os.environ["PROBE_OUT"], "w").write(json.dumps(sorted(sys.modules))))
sys.exit(main(sys.argv[1:]))
"""


def _frame(message: dict[str, object]) -> bytes:
    return (json.dumps(message) + "\n").encode()


def _modules_after_one_call(tmp_path: Path, wrap_args: list[str]) -> list[str]:
    """The modules a stdio wrapper onto the raw server has imported once it has answered one call, and still has when
    its host leaves (nothing connects to its operator endpoint)."""
    out = tmp_path / "modules.json"
    env = {**os.environ, "MCPWATCH_STATE_DIR": str(tmp_path / "state"), "PROBE_OUT": str(out)}
    argv = [sys.executable, "-c", PROBE, "wrap", *wrap_args, "--", sys.executable, RAW_SERVER]
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=tmp_path) as wrap:
        assert wrap.stdin is not None and wrap.stdout is not None
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}
        wrap.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
        wrap.stdin.flush()
        assert json.loads(wrap.stdout.readline())["id"] == 1
        call = {"name": "echo", "arguments": {"said": "hi"}}
        wrap.stdin.write(_frame({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        wrap.stdin.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}))
        wrap.stdin.flush()
        answer = json.loads(wrap.stdout.readline())
        assert answer["id"] == 2 and "hi" in json.dumps(answer["result"])  # it did answer the call
        wrap.stdin.close()
        assert wrap.wait(timeout=60) == 0
    modules: list[str] = json.loads(out.read_text())
    return modules


@pytest.mark.parametrize("logged", [False, True], ids=["no-log", "log"])
def test_a_stdio_wrapper_imports_no_http_server_until_its_operator_endpoint_is_used(
    tmp_path: Path, logged: bool
) -> None:
    wrap_args = ["--log", str(tmp_path / "events.db")] if logged else ["--no-log"]
    modules = _modules_after_one_call(tmp_path, wrap_args)
    top = {name.split(".")[0] for name in modules}
    assert "mcpwatch.wrapper.fronts.front_stdio" in modules  # the probe saw a stdio wrapper
    assert not top & set(NOT_ON_STDIO), sorted(top & set(NOT_ON_STDIO))
    assert not [name for name in NOT_FOR_A_WRAPPER if name in modules]
    assert ("mcpwatch.store.writer" in modules) is logged


@pytest.mark.parametrize("server", ["raw_server.py", "task_server.py"])
def test_the_hand_written_servers_start_without_asyncio(server: str) -> None:
    """The upstreams most tests wrap, started once per wrapper (or host session): asyncio was most of their start."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(REPO / "tests" / "fixtures" / server)],
        input=b"",
        capture_output=True,
        timeout=60,
        check=True,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.decode().splitlines() if "|" in line}
    assert "json" in imported  # the probe saw the server's imports
    assert "asyncio" not in imported
