"""`mcpwatch hosts scan`: every server of every host, the host's timeout and its source, the budget the wrapper's
own policy gives, wrappers whose budget disagrees with their host, and unreadable files named, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpwatch.cli import main


def scan(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main(["hosts", "scan", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def row(found: dict, host: str, server: str) -> dict:
    return next(r for r in found["servers"] if r["host"] == host and r["server"] == server)


def test_scan_lists_every_hosts_servers_with_timeouts_and_sources(home, capsys):
    found = scan(capsys)
    assert {(r["host"], r["server"]) for r in found["servers"]} == {
        ("claude-code", "files"),
        ("claude-code", "docs"),
        ("claude-code", "local-db"),
        ("claude-code", "council"),
        ("claude-code", "search"),
        ("claude-desktop", "council"),
        ("claude-desktop", "weather"),
        ("codex", "docs"),
        ("codex", "figma"),
        ("gemini-cli", "pythonTools"),
        ("gemini-cli", "httpServer"),
        ("vscode", "Perplexity"),
        ("vscode", "github"),
        ("cursor", "linear"),
        ("cursor", "context7"),
        ("windsurf", "brave-search"),
        ("windsurf", "remote"),
    }
    expected = {  # (host, server): (host timeout s, origin, budget s with the 10 s margin)
        ("claude-code", "files"): (900.0, "server", 890.0),
        ("claude-code", "council"): (300.0, "server", 290.0),
        ("claude-code", "docs"): (100000.0, "default", 99990.0),
        ("claude-desktop", "council"): (60.0, "default", 50.0),
        ("codex", "docs"): (300.0, "server", 290.0),
        ("codex", "figma"): (60.0, "default", 50.0),
        ("gemini-cli", "pythonTools"): (15.0, "server", 5.0),
        ("cursor", "linear"): (300.0, "default", 290.0),
        ("vscode", "github"): (None, "default", 110.0),
    }
    for (host, server), (seconds, origin, budget) in expected.items():
        got = row(found, host, server)
        assert (got["host_timeout"]["seconds"], got["host_timeout"]["origin"], got["budget_s"]) == (
            seconds,
            origin,
            budget,
        ), (host, server, got)
    assert row(found, "claude-code", "files")["host_timeout"]["source"] == "~/.claude.json#files timeout = 900000 ms"
    assert row(found, "claude-code", "local-db")["scope"] == "local: /home/me/app"
    assert row(found, "gemini-cli", "httpServer")["transport"] == "url"
    assert not any(r["wrapped"] or r["disagrees"] for r in found["servers"])


def test_the_hosts_environment_sets_claude_codes_timeout(home, capsys, monkeypatch):
    monkeypatch.setenv("MCP_TOOL_TIMEOUT", "600000")
    found = scan(capsys)
    docs = row(found, "claude-code", "docs")
    assert docs["host_timeout"]["seconds"] == 600.0 and docs["host_timeout"]["origin"] == "environment"
    assert docs["budget_s"] == 590.0
    assert row(found, "claude-code", "files")["host_timeout"]["seconds"] == 900.0  # the server's own wins


def test_a_wrapper_whose_budget_disagrees_with_its_host_is_flagged(home, capsys):
    codex = home / ".codex" / "config.toml"
    text = codex.read_text()
    wrapped = text.replace(
        'command = "npx"   # the docs server\nargs = [',
        'command = "/opt/mcpwatch"\nargs = ["wrap", "--host-timeout", "120", "--", "npx", ',
    )
    codex.write_text(wrapped)
    gemini = home / ".gemini" / "settings.json"
    gemini.write_text(
        gemini.read_text().replace(
            '"command": "python",\n      "args": [', '"command": "mcpwatch",\n      "args": ["wrap", "--", "python", '
        )
    )
    found = scan(capsys)
    docs = row(found, "codex", "docs")
    assert docs["wrapped"] and docs["budget_s"] == 110.0
    assert (
        "budget 110 s (--host-timeout 120), but the host's timeout is 300 s" in docs["disagrees"]
        and "it should be 290 s" in docs["disagrees"]
    )
    tools = row(found, "gemini-cli", "pythonTools")
    assert tools["wrapped"] and "(no --host-config)" in tools["disagrees"]
    assert main(["hosts", "scan"]) == 0
    table = capsys.readouterr().out
    assert "! Codex CLI docs: budget 110 s (--host-timeout 120)" in table


def test_wrapped_with_host_config_agrees(home, capsys):
    assert main(["hosts", "wrap", "--all"]) == 0
    capsys.readouterr()
    found = scan(capsys)
    assert all(r["wrapped"] and r["host_config"] and not r["disagrees"] for r in found["servers"])
    assert row(found, "codex", "docs")["budget_s"] == 290.0


def test_unreadable_files_are_listed_with_the_reason(home, capsys, tmp_path):
    (home / ".gemini" / "settings.json").write_text("{ not json")
    (home / ".cursor" / "mcp.json").write_bytes(b'{"mcpServers": {"x": {"command": "\xff"}}}')
    missing = tmp_path / "nowhere.json"
    found = scan(capsys, str(missing))
    problems = {Path(f["file"]).name: f["problem"] for f in found["files"] if f["problem"]}
    assert problems["settings.json"].startswith("not valid JSON: line 1 column 3")
    assert problems["mcp.json"] == "not UTF-8 text"
    assert problems["nowhere.json"] == "no such file"
    assert main(["hosts", "scan"]) == 0
    out = capsys.readouterr().out
    assert "unreadable" in out and "not valid JSON" in out


def test_a_file_given_by_path_is_read_as_its_host(home, capsys, tmp_path):
    extra = tmp_path / "elsewhere" / ".gemini" / "settings.json"
    extra.parent.mkdir(parents=True)
    extra.write_text('{"mcpServers": {"far": {"command": "x", "timeout": 2000}}}')
    found = scan(capsys, str(extra))
    far = row(found, "gemini-cli", "far")
    assert far["scope"] == "file" and far["host_timeout"]["seconds"] == 2.0


def test_hosts_alone_still_prints_the_profiles(capsys):
    assert main(["hosts"]) == 0
    assert "MCP host profiles" in capsys.readouterr().out


def test_a_config_file_over_the_size_bound_is_not_read(home, capsys):
    big = home / ".cursor" / "mcp.json"
    big.write_text('{"mcpServers": {}, "pad": "' + "x" * (16 * 1024 * 1024) + '"}')
    found = scan(capsys)
    assert any(f["file"] == str(big) and f["problem"] == "larger than 16 MB" for f in found["files"])


def test_config_and_json_count_before_or_after_the_action(home, capsys, tmp_path):
    config = tmp_path / "mcpwatch.toml"
    config.write_text("[deadline]\nmargin_s = 30\n")
    for args in (
        ["hosts", "--config", str(config), "--json", "scan"],
        ["hosts", "scan", "--json", "--config", str(config)],
    ):
        assert main(args) == 0
        found = json.loads(capsys.readouterr().out)
        assert row(found, "codex", "docs")["budget_s"] == 270.0, args  # tool_timeout_sec 300 − the file's margin 30
