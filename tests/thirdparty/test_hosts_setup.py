"""`mcpwatch hosts scan|wrap|unwrap` against the real host CLIs from npm (Claude Code, Gemini CLI, Codex CLI) in a
throw-away home directory: each host's config holds a command server with a custom timeout and a URL server (the
council over Streamable HTTP on loopback). Scan reads the right timeouts; after wrapping, each host's own
`mcp list` shows every server running through mcpwatch (Claude Code and Gemini CLI connect to each); a call made
as the host makes it reaches the server with the budget from that host's setting, and follows a change at the
next start; unwrapping leaves each file byte-identical. Wrapping and unwrapping through Claude Code's own CLI
(`--via-cli`) restores every value too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import anyio
import pytest
from clirun import run_cli
from mcp import Client, StdioServerParameters
from mcp.types import Implementation
from npm_cache import installed_bin, npm_fixture

from mcpwatch.hostconfig import jsonc
from mcpwatch.ports import free_port, wait_for_port

from checkout import mcpwatch_cmd
from wraptools import RAW_SERVER, first_text

CLAUDE_CODE = "@anthropic-ai/claude-code@2.1.330"
GEMINI_CLI = "@google/gemini-cli@0.61.0"
CODEX_CLI = "@openai/codex@0.171.0"


@npm_fixture
def host_clis() -> dict[str, Path]:
    return {
        "claude": installed_bin(CLAUDE_CODE) / "claude",
        "gemini": installed_bin(GEMINI_CLI) / "gemini",
        "codex": installed_bin(CODEX_CLI) / "codex",
    }


@pytest.fixture
def council_url(tmp_path):
    port = free_port()
    process = subprocess.Popen(
        mcpwatch_cmd("council", "--http", f"127.0.0.1:{port}", "--time-scale", "0.01"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, timeout=60)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)


# host → (config file under HOME, the client name the host sends, the custom timeout as written, its seconds)
HOSTS = {
    "claude": (".claude.json", "claude-code", "200000", 200.0),
    "gemini": (".gemini/settings.json", "gemini-cli-mcp-client", "300000", 300.0),
    "codex": (".codex/config.toml", "codex-mcp-client", "120", 120.0),
}


def write_configs(home: Path, project: Path, url: str) -> None:
    raw = [sys.executable, RAW_SERVER]
    (home / ".gemini").mkdir(parents=True)
    (home / ".codex").mkdir()
    (home / ".claude.json").write_text(
        "{\n"
        '  "mcpServers": {\n'
        f'    "raw": {{"command": {json.dumps(raw[0])}, "args": [{json.dumps(raw[1])}], "timeout": 200000}},\n'
        f'    "council": {{"type": "http", "url": "{url}"}}\n'
        "  }\n}\n"
    )
    (home / ".gemini" / "settings.json").write_text(
        "{\n  // Gemini CLI\n"
        '  "mcpServers": {\n'
        f'    "raw": {{"command": {json.dumps(raw[0])}, "args": [{json.dumps(raw[1])}], "timeout": 300000}},\n'
        f'    "council": {{"httpUrl": "{url}"}}\n'
        "  }\n}\n"
    )
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(project): "TRUST_FOLDER"}))
    (home / ".codex" / "config.toml").write_text(
        "# Codex CLI\n[mcp_servers.raw]\n"
        f"command = {json.dumps(raw[0])}\nargs = [{json.dumps(raw[1])}]\ntool_timeout_sec = 120\n\n"
        f'[mcp_servers.council]\nurl = "{url}"\n'
    )


def entry_of(path: Path, key: str) -> dict:
    text = path.read_text()
    doc = tomllib.loads(text)["mcp_servers"] if path.suffix == ".toml" else jsonc.parse(text).value["mcpServers"]
    return doc[key]


async def budget_ms(entry: dict, client_name: str, env: dict[str, str], cwd: Path) -> int:
    """Start the entry as its host does and call the server's echo: the deadline the wrapper forwarded with it."""
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env, cwd=str(cwd))
    with anyio.fail_after(90):
        async with Client(params, mode="legacy", client_info=Implementation(name=client_name, version="1")) as client:
            result = await client.call_tool("echo", {})
    return int(json.loads(first_text(result))["deadline_ms"])


@pytest.mark.slow
@pytest.mark.anyio
async def test_each_hosts_cli_runs_its_servers_through_mcpwatch_with_the_hosts_budget(
    host_clis, council_url, tmp_path, isolated_state, monkeypatch
):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    write_configs(home, project, council_url)
    env = {
        **os.environ,
        "HOME": str(home),
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "MCPWATCH_STATE_DIR": str(isolated_state),
    }
    env.pop("MCP_TOOL_TIMEOUT", None)
    # `mcpwatch hosts …` runs in this process (the same command, without an interpreter start each): in that home
    # and project, with the hosts' CLIs it starts (--via-cli) seeing what they see when the test starts them.
    for name in ("HOME", "DISABLE_AUTOUPDATER", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"):
        monkeypatch.setenv(name, env[name])
    monkeypatch.delenv("MCP_TOOL_TIMEOUT", raising=False)
    monkeypatch.chdir(project)

    def hosts(*args: str) -> str:
        done = run_cli("hosts", *args)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return done.stdout + done.stderr

    def run(*command: str | Path) -> str:
        done = subprocess.run(
            [str(c) for c in command], capture_output=True, text=True, cwd=project, env=env, timeout=180
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return done.stdout + done.stderr

    def mcp_lists() -> dict[str, str]:
        return {name: run(cli, "mcp", "list") for name, cli in host_clis.items()}

    # Claude Code rewrites ~/.claude.json at its first start: compare with it after. (Gemini CLI's own start costs
    # 1.7 s of CPU: it lists its servers once, through mcpwatch.)
    before_wrap = run(host_clis["claude"], "mcp", "list")
    assert before_wrap.count("Connected") == 2, before_wrap
    originals = {name: (home / file).read_bytes() for name, (file, *_rest) in HOSTS.items()}

    found = json.loads(hosts("scan", "--json"))
    timeouts = {(r["host"], r["server"]): r["host_timeout"]["seconds"] for r in found["servers"]}
    assert timeouts == {
        ("claude-code", "raw"): 200.0,
        ("claude-code", "council"): 100000.0,
        ("gemini-cli", "raw"): 300.0,
        ("gemini-cli", "council"): 600.0,
        ("codex", "raw"): 120.0,
        ("codex", "council"): 60.0,
    }

    hosts("wrap", "--all")
    listed = mcp_lists()
    mcpwatch_line = "wrap --name {key} --host-config"
    for name, text in listed.items():
        for key in ("raw", "council"):
            assert mcpwatch_line.format(key=key) in text, (name, text)
    assert listed["claude"].count("✔ Connected") == 2, listed["claude"]
    assert listed["gemini"].count("- Connected") == 2, listed["gemini"]
    assert "enabled" in listed["codex"]  # Codex lists its servers without connecting to them

    for name, (file, client_name, written, seconds) in HOSTS.items():
        path = home / file
        got = await budget_ms(entry_of(path, "raw"), client_name, env, project)
        assert (seconds - 10) * 1000 - 5000 < got <= (seconds - 10) * 1000, (name, got)
        text = path.read_text()
        doubled = str(int(written) * 2)
        path.write_text(
            text.replace(f" = {written}\n", f" = {doubled}\n").replace(f'"timeout": {written}', f'"timeout": {doubled}')
        )
        got = await budget_ms(entry_of(path, "raw"), client_name, env, project)  # a restart: the budget follows
        assert (2 * seconds - 10) * 1000 - 5000 < got <= (2 * seconds - 10) * 1000, (name, got)
        path.write_text(text)

    hosts("unwrap", "--all")
    for name, (file, *_rest) in HOSTS.items():
        assert (home / file).read_bytes() == originals[name], name

    # Through Claude Code's own CLI (`--via-cli`, with `claude` on PATH): it writes its own file, and unwrapping
    # through it restores every value.
    env["PATH"] = f"{host_clis['claude'].parent}{os.pathsep}{os.environ.get('PATH', '')}"
    monkeypatch.setenv("PATH", env["PATH"])
    original = jsonc.parse((home / ".claude.json").read_text()).value["mcpServers"]
    out = hosts("wrap", "--all", "--host", "claude-code", "--via-cli")
    assert "changed by Claude Code's own CLI (claude mcp add-json)" in out
    listed_via_cli = run(host_clis["claude"], "mcp", "list")
    assert listed_via_cli.count("✔ Connected") == 2 and listed_via_cli.count("--host-config") == 2, listed_via_cli
    out = hosts("unwrap", "--all", "--host", "claude-code", "--via-cli")
    assert "changed by Claude Code's own CLI" in out
    assert jsonc.parse((home / ".claude.json").read_text()).value["mcpServers"] == original
