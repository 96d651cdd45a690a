"""`mcpwatch hosts` and the wrap budget flags as a person meets them: the table, JSON, overrides and clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

from clirun import run_cli


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """The command in this process (`tests/clirun.py`): what it prints and its exit code are the point here."""
    return run_cli(*args)


def test_hosts_table_lists_every_profile_with_its_clocks_and_sources():
    done = run("hosts")
    assert done.returncode == 0, done.stderr
    for label in (
        "Claude Code",
        "Claude Desktop",
        "claude.ai connectors",
        "Cursor",
        "VS Code",
        "Codex CLI",
        "Gemini CLI",
        "Windsurf",
        "GitHub Copilot CLI",
        "MCP Inspector",
    ):
        assert label in done.stdout, label
    assert "tool_timeout_sec" in done.stdout and "anthropics/claude-code#93143" in done.stdout
    assert "(uncertain)" in done.stdout


def test_hosts_json_carries_the_overrides_from_mcpwatch_toml(tmp_path):
    config = tmp_path / "mcpwatch.toml"
    config.write_text('[hosts.codex-mcp-client]\nwall_s = 300\n[hosts.my-agent]\nlabel = "My agent"\nwall_s = 45\n')
    done = run("hosts", "--json", "--config", str(config))
    assert done.returncode == 0, done.stderr
    profiles = {p["key"]: p for p in json.loads(done.stdout)}
    assert profiles["codex"]["origin"] == str(config)
    assert [c["seconds"] for c in profiles["codex"]["clocks"]] == [300]
    assert profiles["my-agent"]["label"] == "My agent" and profiles["my-agent"]["names"] == ["my-agent"]
    assert profiles["gemini-cli"]["origin"] == "built-in"


def test_a_bad_hosts_table_is_one_clear_line(tmp_path):
    config = tmp_path / "mcpwatch.toml"
    config.write_text("[hosts.codex-mcp-client]\nwall_s = -5\n")
    done = run("hosts", "--config", str(config))
    assert done.returncode == 2
    assert done.stderr.strip() == (f"mcpwatch: {config}: hosts.codex-mcp-client.wall_s must not be negative, got -5")


def test_wrap_budget_flags_refuse_bad_values_before_starting_anything():
    for flag, value, words in (
        ("--margin", "nan", "--margin must be finite"),
        ("--host-timeout", "0", "--host-timeout must be greater than 0"),
        ("--deadline", "soon", "--deadline must be a number of seconds"),
        ("--margin", "-1", "--margin must not be negative"),
    ):
        done = run("wrap", flag, value, "--", sys.executable, "-c", "pass")
        assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr, (flag, done.stderr)
