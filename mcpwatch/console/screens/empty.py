"""No wrapper to watch (yet): how to start one. The app checks the registry every second and moves on by itself."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Center, Vertical
from textual.screen import Screen
from textual.widgets import Static

from mcpwatch import paths
from mcpwatch.console.widgets import KeyFooter
from mcpwatch.registry import WrapperEntry, running_wrappers


class NoWrapperScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("h", "hosts", "Hosts' servers", id="empty.hosts")]

    def action_hosts(self) -> None:
        from mcpwatch.console.screens.hosts import HostsScreen

        self.app.push_screen(HostsScreen())

    def __init__(self, selector: str | None = None, registry_dir: Path | None = None) -> None:
        super().__init__()
        self.selector = selector
        self.registry_dir = registry_dir or paths.registry_dir()

    def compose(self) -> ComposeResult:
        with Center(), Vertical(id="empty-box"):
            yield Static(self._text(self._running_now()), id="empty-text")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.set_interval(1.0, self._refresh_running)

    def _running_now(self) -> list[WrapperEntry]:
        """What runs instead of the one asked for (a mistyped name should not just wait)."""
        return running_wrappers(self.registry_dir) if self.selector else []

    def _refresh_running(self) -> None:
        self.query_one("#empty-text", Static).update(self._text(self._running_now()))

    def _text(self, running: list[WrapperEntry]) -> Text:
        t = Text()
        t.append("mcpwatch", style="bold")
        t.append(" — the operator console for long-running MCP tool calls\n\n")
        if self.selector:
            t.append(f"No running wrapper is called {self.selector!r}", style="bold")
        else:
            t.append("No wrapper is running", style="bold")
        if running:
            t.append(". Start it and this screen switches to it by itself.\n\n")
            t.append("Running now", style="bold")
            t.append(" (watch one with mcpwatch watch NAME, or press F for the fleet):\n")
            for entry in running[:8]:
                t.append(f"  {entry.name:<20} pid {entry.pid:<8} {entry.upstream[:40]}\n")
            if len(running) > 8:
                t.append(f"  … and {len(running) - 8} more\n")
            t.append("\nOr start another:\n\n")
        else:
            t.append(". Start one and this screen switches to it by itself:\n\n")
        rows = [
            ("mcpwatch wrap -- <server command…>", "wrap any stdio MCP server"),
            ("mcpwatch wrap --url http://HOST:PORT/mcp", "wrap a Streamable HTTP server"),
            ("mcpwatch hosts wrap --all", "wrap the servers your hosts have (h: list them)"),
            ("mcpwatch demo", "everything at once, on a simulated council"),
        ]
        for command, what in rows:
            t.append("  ")
            t.append(f"{command:<44}", style="bold")
            t.append(f"{what}\n")
        t.append("\nThen point your MCP host at the wrapper instead of the server (see the README).\n")
        t.append("A wrapper started with --name NAME can be watched with: mcpwatch watch NAME\n\n")
        t.append(f"Looking in {self.registry_dir} (every second).  q quits.", style="dim")
        return t
