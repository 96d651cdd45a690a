"""`mcpwatch wrap --host-config FILE#SERVER`: at start the wrapper reads the host's timeout for its server from the
host's own config, so the budget follows the host's setting (change it, restart, the budget follows), and the log
names the file as the budget's source. A reference that cannot be read leaves the budget to the host's profile."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import TextContent

from mcpwatch.cli import main
from mcpwatch.commands.wrap import apply_host_config
from mcpwatch.hostconfig import jsonc
from mcpwatch.reliability.deadline import ENV_HOST_TIMEOUT, SET_BY_FLAG
from mcpwatch.store import EventReader

from wraptools import RAW_SERVER


@pytest.fixture
def clean_flags(monkeypatch):
    monkeypatch.delenv(ENV_HOST_TIMEOUT, raising=False)
    monkeypatch.setattr("mcpwatch.reliability.deadline.SET_BY_FLAG", SET_BY_FLAG)
    saved = dict(SET_BY_FLAG)
    yield
    SET_BY_FLAG.clear()
    SET_BY_FLAG.update(saved)
    os.environ.pop(ENV_HOST_TIMEOUT, None)


def gemini_file(tmp_path: Path, timeout_ms: int) -> Path:
    path = tmp_path / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"command": sys.executable, "args": [RAW_SERVER], "timeout": timeout_ms}
    path.write_text(json.dumps({"mcpServers": {"raw": entry}}, indent=2) + "\n")
    return path


def test_the_host_config_timeout_becomes_the_host_timeout_named_by_its_file(tmp_path, clean_flags):
    path = gemini_file(tmp_path, 200000)
    assert apply_host_config(f"{path}#raw", None, {}) is None
    assert os.environ[ENV_HOST_TIMEOUT] == "200.0"
    assert SET_BY_FLAG[ENV_HOST_TIMEOUT] == f"--host-config: {path}#raw timeout = 200000 ms"


def test_a_host_timeout_flag_wins_over_the_host_config(tmp_path, clean_flags):
    path = gemini_file(tmp_path, 200000)
    assert apply_host_config(f"{path}#raw", "30", {}) is None
    assert ENV_HOST_TIMEOUT not in os.environ


@pytest.mark.parametrize(
    ("ref", "says"),
    [
        ("{dir}/nowhere.json#raw", "No such file or directory"),
        ("{path}#nosuch", "has no server 'nosuch' (servers: raw)"),
        ("{path}", "must look like FILE#SERVER"),
        ("{broken}#raw", "not valid JSON"),
    ],
)
def test_a_reference_that_cannot_be_read_is_one_warning_and_the_profile_decides(tmp_path, clean_flags, ref, says):
    path = gemini_file(tmp_path, 200000)
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    warning = apply_host_config(ref.format(dir=tmp_path, path=path, broken=broken), None, {})
    assert warning is not None and says in warning and warning.endswith("the budget comes from the host's profile")
    assert "\n" not in warning and ENV_HOST_TIMEOUT not in os.environ


async def call_echo(command: str, args: list[str], cwd: Path) -> int:
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ), cwd=str(cwd))
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            result = await client.call_tool("echo", {})
    content = result.content[0]
    assert isinstance(content, TextContent), content
    return int(json.loads(content.text)["deadline_ms"])


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_wrapped_entry_gets_its_hosts_timeout_and_follows_a_change_at_the_next_start(
    tmp_path, isolated_state, monkeypatch
):
    path = gemini_file(tmp_path, 200000)
    assert main(["hosts", "wrap", "raw", "--file", str(path)]) == 0
    for timeout_ms, budget_ms in ((200000, 190000), (400000, 390000)):
        text = path.read_text()
        path.write_text(text.replace('"timeout": 200000', f'"timeout": {timeout_ms}'))  # the user edits the host's
        entry = jsonc.parse(text).value["mcpServers"]["raw"]
        deadline_ms = await call_echo(entry["command"], entry["args"], tmp_path)
        assert budget_ms - 5000 < deadline_ms <= budget_ms  # the budget reached the server with the call
    with EventReader(isolated_state / "events.db") as reader:
        starts = [e.data for s in reader.sessions() for e in reader.events(s.id, kinds=["session_start"])]
    explanations = sorted(s["deadline"]["explanation"] for s in starts)
    assert explanations == [
        f"host timeout 200 s (--host-config: {path}#raw timeout = 200000 ms) − margin 10 s",
        f"host timeout 400 s (--host-config: {path}#raw timeout = 400000 ms) − margin 10 s",
    ]


def test_in_claude_codes_file_the_projects_own_entry_wins_where_the_wrapper_runs(tmp_path):
    from mcpwatch.hostconfig.timeouts import read_ref
    from mcpwatch.reliability.hosts import catalog

    path = tmp_path / ".claude.json"
    project = tmp_path / "app"
    project.mkdir()
    doc = {
        "mcpServers": {"db": {"command": "x", "timeout": 100000}},
        "projects": {str(project): {"mcpServers": {"db": {"command": "x", "timeout": 50000}}}},
    }
    path.write_text(json.dumps(doc))
    assert read_ref(f"{path}#db", catalog(), {}, project).seconds == 50.0
    assert read_ref(f"{path}#db", catalog(), {}, tmp_path).seconds == 100.0
    environ = {"MCP_TOOL_TIMEOUT": "70000"}
    doc["mcpServers"]["db"].pop("timeout")
    path.write_text(json.dumps(doc))
    found = read_ref(f"{path}#db", catalog(), environ, tmp_path)
    assert (found.seconds, found.origin) == (70.0, "environment")  # Claude Code's own variable, as it started us


def test_a_host_config_that_is_a_fifo_or_a_device_is_refused_without_blocking(tmp_path, clean_flags):
    fifo = tmp_path / "settings.json"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer forever
    for ref in (f"{fifo}#raw", "/dev/zero#raw"):
        warning = apply_host_config(ref, None, {})
        assert warning is not None and "not a regular file" in warning, warning
    assert ENV_HOST_TIMEOUT not in os.environ


def test_a_timeout_that_is_not_a_usable_number_leaves_the_budget_to_the_profile(tmp_path, clean_flags):
    for bad in ('"300000"', "-5", "0", "1e400", "true", "null"):
        path = tmp_path / ".gemini" / "settings.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('{"mcpServers": {"raw": {"command": "x", "timeout": ' + bad + "}}}")
        assert apply_host_config(f"{path}#raw", None, {}) is None
        assert ENV_HOST_TIMEOUT not in os.environ, bad
