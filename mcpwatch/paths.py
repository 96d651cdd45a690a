"""Where mcpwatch keeps state and looks for configuration."""

from __future__ import annotations

import os
from pathlib import Path


def state_dir() -> Path:
    """`$MCPWATCH_STATE_DIR`, else `$XDG_STATE_HOME/mcpwatch`, else `~/.local/state/mcpwatch`."""
    explicit = os.environ.get("MCPWATCH_STATE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "state"
    return base / "mcpwatch"


def default_log_path() -> Path:
    return state_dir() / "events.db"


def registry_dir() -> Path:
    return state_dir() / "wrappers"


def user_config_path() -> Path:
    """`$XDG_CONFIG_HOME/mcpwatch/mcpwatch.toml`, else `~/.config/mcpwatch/mcpwatch.toml`."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
    return base / "mcpwatch" / "mcpwatch.toml"
