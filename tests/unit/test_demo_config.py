"""The demo's mcpwatch.toml: its host has a profile, and the budget is short enough to be hit in seconds."""

from __future__ import annotations

from pathlib import Path

from mcpwatch.config import load_settings
from mcpwatch.demo.config import DEMO_TOML
from mcpwatch.reliability.hosts import catalog


def test_the_demo_host_is_known_by_its_own_profile(tmp_path: Path) -> None:
    """The console showed the demo's own host as `unknown host 'mcpwatch-demo-host'`."""
    config = tmp_path / "mcpwatch.toml"
    config.write_text(DEMO_TOML, encoding="utf-8")
    settings = load_settings(config)
    detected = catalog(settings.hosts).detect({"name": "mcpwatch-demo-host", "version": "1"}, "stdio")
    assert detected.label == "mcpwatch demo host"
    clock = detected.deciding_clock(progress=True)
    assert clock is not None and clock.seconds == settings.deadline.host_timeout_s == 8
    assert settings.deadline.host_timeout_s - settings.deadline.margin_s == 5  # a budget hit in the first seconds
