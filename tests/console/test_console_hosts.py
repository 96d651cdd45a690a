"""The Hosts screen: from the start-up screen (no wrapper yet) `h` lists the servers each host's config file holds,
wrapped or not, with the same data as `mcpwatch hosts scan` (a budget that disagrees with its host is said), and
text from the files is shown with its control characters made visible."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from console_helpers import SIZE

from mcpwatch.console.app import ConsoleApp
from mcpwatch.console.headless.hosts_view import load
from mcpwatch.console.headless.source import Target
from mcpwatch.console.screens.empty import NoWrapperScreen
from mcpwatch.console.screens.hosts import HostsScreen

from pilot_tools import screen_text, until

pytestmark = pytest.mark.anyio


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(
        '[mcp_servers.docs]\ncommand = "/opt/mcpwatch"\nargs = ["wrap", "--host-timeout", "120", "--", "npx", "docs"]\n'
        "tool_timeout_sec = 300\n"
    )
    (home / ".gemini").mkdir()
    hostile = "evil\x1b[2J\x1b]0;pwned\x07"
    servers = {
        "pythonTools": {"command": "python", "args": ["-m", "tools"], "timeout": 15000},
        hostile: {"command": "x"},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps({"mcpServers": servers}))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return home


def test_the_view_has_the_scans_rows_counts_and_disagreements(home):
    view = load()
    cells = {row.cells[1]: row for row in view.rows}
    assert set(cells) == {"docs", "pythonTools", "evil\\x1b[2J\\x1b]0;pwned\\x07"}
    docs = cells["docs"]
    assert docs.wrapped and docs.cells[2] == "yes*" and docs.cells[3] == "110 s"
    assert docs.trouble is not None and "the host's timeout is 300 s" in docs.trouble
    assert cells["pythonTools"].cells[3] == "5 s" and not cells["pythonTools"].wrapped
    assert view.summary == "3 servers in 2 files, 1 wrapped; `mcpwatch hosts wrap --all` wraps the other 2"
    assert all("\x1b" not in cell for row in view.rows for cell in row.cells)


def test_a_huge_server_key_is_clipped_in_the_view(home):
    settings = home / ".gemini" / "settings.json"
    settings.write_text(json.dumps({"mcpServers": {"k" * 1_000_000: {"command": "x"}}}))
    row = next(r for r in load().rows if r.host == "gemini-cli")
    assert len(row.cells[1]) == 300 and row.cells[1].endswith("…")


async def test_h_on_the_start_up_screen_lists_the_hosts_servers_and_esc_comes_back(home, tmp_path):
    app = ConsoleApp(target=Target(), registry_dir=tmp_path / "registry", discover_every_s=0.1)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, NoWrapperScreen), what="the start-up screen")
        await pilot.press("h")
        await until(pilot, lambda: isinstance(app.screen, HostsScreen) and app.screen.view is not None, what="hosts")
        text = screen_text(app)
        for expected in ("Codex CLI", "docs", "Gemini CLI", "pythonTools", "3 servers in 2 files, 1 wrapped"):
            assert expected in text, expected
        assert "budget disagrees — Codex CLI docs: budget 110 s (--host-timeout 120)" in text
        assert "\x1b" not in text
        await pilot.press("enter")  # the first row, uncut, with the command that changes it
        await until(pilot, lambda: any("mcpwatch hosts" in str(n.message) for n in app._notifications), what="note")
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, NoWrapperScreen), what="back to the start-up screen")


def test_the_deadline_panel_names_the_host_config_the_budget_follows():
    import io

    from rich.console import Console

    from mcpwatch.console.headless.panels.deadline import build, deadline_panel
    from mcpwatch.console.headless.render_base import Palette

    block = {
        "host_timeout_s": 200.0,
        "margin_s": 10.0,
        "override_s": None,
        "budget_s": 190.0,
        "source": "derived",
        "explanation": "host timeout 200 s (--host-config: ~/.claude.json#raw timeout = 200000 ms\x1b[2J) − margin 10"
        " s",
    }
    out = io.StringIO()
    Console(file=out, width=70, color_system=None).print(deadline_panel(build(block), Palette({})))
    shown = out.getvalue()
    assert "host from" in shown and "~/.claude.json#raw timeout = 200000 ms" in shown and "\x1b" not in shown
    plain = {**block, "explanation": "host timeout 120 s (default) − margin 10 s"}
    out = io.StringIO()
    Console(file=out, width=70, color_system=None).print(deadline_panel(build(plain), Palette({})))
    assert "host from" not in out.getvalue()
