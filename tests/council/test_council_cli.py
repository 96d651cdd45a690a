"""`mcpwatch council` start-up: bad configuration is one clear line and exit 2; stdout carries only frames;
`--http` serves Streamable HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest
from mcp import Client

from mcpwatch.ports import free_port

from checkout import REPO, mcpwatch_cmd
from waiting import patience, wait_for_port


def run_council(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        mcpwatch_cmd("council", *args),
        cwd=REPO,
        env=full_env,
        input="",
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ((), {"LLM_COUNCIL_TIMEOUT_HIGH": "abc"}, "LLM_COUNCIL_TIMEOUT_HIGH='abc' is not a number of seconds"),
        ((), {"LLM_COUNCIL_MODEL_TIMEOUT_QUICK": "-5"}, "LLM_COUNCIL_MODEL_TIMEOUT_QUICK='-5' must be a positive"),
        ((), {"LLM_COUNCIL_TIMEOUT_REASONING": "inf"}, "LLM_COUNCIL_TIMEOUT_REASONING='inf' must be a positive"),
        ((), {"LLM_COUNCIL_TIMEOUT_MULTIPLIER": "0"}, "LLM_COUNCIL_TIMEOUT_MULTIPLIER='0' must be a number greater"),
        ((), {"LLM_COUNCIL_TIMEOUT_MULTIPLIER": "x2"}, "LLM_COUNCIL_TIMEOUT_MULTIPLIER='x2' is not a number"),
        ((), {"LLM_COUNCIL_RACE_QUICK": "maybe"}, "LLM_COUNCIL_RACE_QUICK='maybe' must be true or false"),
        ((), {"LLM_COUNCIL_MODELS_BALANCED": "0"}, "LLM_COUNCIL_MODELS_BALANCED='0' must be a whole number"),
        (("--time-scale", "fast"), {}, "--time-scale 'fast' is not a number"),
        (("--time-scale", "0"), {}, "--time-scale '0' must be greater than 0"),
        (("--scenario", "nope"), {}, "unknown scenario 'nope'; choose one of default, fast, flaky, reasoning"),
        (("--scenario", "/no/such/file.toml"), {}, "cannot read scenario file /no/such/file.toml"),
        (("--http", "localhost"), {}, "--http 'localhost': expected HOST:PORT"),
        (("--http", "127.0.0.1:¹²"), {}, "--http '127.0.0.1:¹²': expected HOST:PORT"),
        (("--backend", "openai", "--base-url", "ftp://x"), {}, "base URL 'ftp://x' must be an http(s) URL"),
    ],
)
def test_bad_configuration_is_one_line_and_exit_2(args: tuple[str, ...], env: dict[str, str], message: str) -> None:
    done = run_council(*args, env=env)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcpwatch: ") and message in lines[0], done.stderr


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("models = 3", "needs at least one [[models]] entry"),
        ('[[models]]\nid = "a/b"\nlatency_s = "slow"', "models[0] (a/b): latency_s must be a number"),
        ('[[models]]\nid = "a/b"\nscript = ["teleport"]', "script: unknown outcome 'teleport'"),
        ('[[models]]\nid = "a/b"\nscript = ["auth:500"]', "status 500 does not fit 'auth'"),
        ('chairman = "x/y"\n[[models]]\nid = "a/b"', "chairman 'x/y' is not one of the models (a/b)"),
        ('[[models]]\nid = "a/b"\nmin_tier = "ultra"', "min_tier must be one of quick, balanced, high, reasoning"),
        ('[tiers.turbo]\nrace = true\n[[models]]\nid = "a/b"', "[tiers.turbo]: no such tier"),
        ("[[models]\n", "not valid TOML"),
    ],
)
def test_bad_scenario_files_are_named_in_one_line(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(body, encoding="utf-8")
    done = run_council("--scenario", str(path))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"mcpwatch: scenario {path}") and message in lines[0], done.stderr


@pytest.mark.slow
def test_stdout_carries_only_protocol_frames() -> None:
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "consult_council", "arguments": {"query": "Hello?"}, "_meta": {"progressToken": "p"}}},
    ]  # fmt: skip
    proc = subprocess.Popen(
        mcpwatch_cmd("council", "--scenario", "fast", "--log-level", "DEBUG"),
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    for frame in frames:
        proc.stdin.write(json.dumps(frame) + "\n")
        proc.stdin.flush()
    lines = []
    while True:
        line = proc.stdout.readline()
        assert line, "the server closed stdout before answering"
        lines.append(json.loads(line))  # every line is a JSON-RPC frame
        if lines[-1].get("id") == 2:
            break
    proc.stdin.close()  # EOF: the server exits
    assert proc.wait(timeout=patience(10)) == 0
    stderr = proc.stderr.read() if proc.stderr else ""
    assert all(m["jsonrpc"] == "2.0" for m in lines)
    assert sum(1 for m in lines if m.get("method") == "notifications/progress") >= 10
    assert "mcpwatch council: INFO mcpwatch.council.core: consult done: complete" in stderr  # the log went to stderr


@pytest.mark.slow
def test_http_port_in_use_is_one_line_and_exit_2() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run_council("--scenario", "fast", "--http", f"127.0.0.1:{port}")
    assert done.returncode == 2
    assert done.stderr.strip() == f"mcpwatch: --http 127.0.0.1:{port}: cannot listen there (Address already in use)"


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_http_mode_serves_streamable_http_with_progress_meta(anyio_backend: str) -> None:
    port = free_port()
    proc = subprocess.Popen(
        mcpwatch_cmd("council", "--scenario", "fast", "--http", f"127.0.0.1:{port}"),
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_port(port, process=proc)  # fails at once if the council exits instead
        metas: list[dict] = []

        async def on_message(message: object) -> None:
            params = getattr(message, "params", None)
            if getattr(message, "method", None) == "notifications/progress" and params is not None:
                metas.append(params.meta or {})

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            return None

        async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy", message_handler=on_message) as client:
            result = await client.call_tool("consult_council", {"query": "Over HTTP?"}, progress_callback=on_progress)
        assert not result.is_error and result.structured_content is not None
        assert result.structured_content["metadata"]["status"] == "complete"
        assert len(metas) >= 10 and all(m["dev.mcpwatch/council"]["tier"] == "high" for m in metas)
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=10)
    assert f"serving Streamable HTTP at http://127.0.0.1:{port}/mcp" in stderr
