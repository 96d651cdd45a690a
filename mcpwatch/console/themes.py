"""Console themes: TOML files in `themes/` (shipped in the wheel as `mcpwatch/themes`), plus Textual's built-ins.

A theme file holds Textual `Theme` fields and a `[variables]` table of the console's semantic colours
(`SEMANTIC`). `semantic_defaults(theme)` derives any missing one from the theme's own colours, so a theme file that
sets only a few (or a Textual built-in that sets none) still works.
"""

from __future__ import annotations

import importlib.resources
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import BUILTIN_THEMES, Theme

from mcpwatch.errors import UserError

DEFAULT_THEME = "mcpwatch-dark"

# name -> (Theme attribute to derive from, fallback colour): what each semantic colour means is in its name.
SEMANTIC: dict[str, tuple[str, str]] = {
    "status-ok": ("success", "#4CD97B"),
    "status-error": ("error", "#FF5F5F"),
    "status-timeout": ("warning", "#FF9F43"),
    "status-cancelled": ("secondary", "#B48CFF"),
    "status-pending": ("primary", "#4FA3FF"),
    "status-late": ("warning", "#F2C94C"),
    "status-warn": ("warning", "#F2C94C"),
    "text-dim": ("foreground", "#8A93A3"),
    "gauge-fill": ("primary", "#4FA3FF"),
    "gauge-empty": ("panel", "#2E3440"),
    "gauge-over": ("error", "#FF5F5F"),
    # Borders: derived in `semantic_defaults`, lighter than a dark theme's panel, darker than a light one's.
    "panel-border": ("panel", "#444955"),
}
_COLOUR_FIELDS: tuple[str, ...] = (
    "primary",
    "secondary",
    "warning",
    "error",
    "success",
    "accent",
    "foreground",
    "background",
)
_COLOUR_FIELDS += ("surface", "panel", "boost")
_THEME_FIELDS = {f.name for f in fields(Theme)}


class ThemeError(UserError):
    """A theme file that cannot be used; the message names the file and the key."""


def themes_dir() -> Path | None:
    """The shipped themes: package data in an installed wheel, the repository's `themes/` in a checkout."""
    packaged = importlib.resources.files("mcpwatch") / "themes"
    if packaged.is_dir():
        return Path(str(packaged))
    checkout = Path(__file__).resolve().parents[2] / "themes"
    return checkout if checkout.is_dir() else None


def _colour(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str):
        raise ThemeError(f"{where}: {key} must be a colour string, got {value!r}")
    try:
        Color.parse(value)
    except ColorParseError:
        raise ThemeError(f"{where}: {key} is not a colour: {value!r}") from None
    return value


def load_theme_file(path: Path) -> Theme:
    """Parse and validate one theme file into a Textual `Theme`."""
    where = str(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ThemeError(f"{where}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ThemeError(f"{where}: cannot read: {exc}") from None
    unknown = set(raw) - _THEME_FIELDS
    if unknown:
        raise ThemeError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    if not isinstance(raw.get("name"), str) or not raw["name"].strip():
        raise ThemeError(f"{where}: name must be a non-empty string")
    if "primary" not in raw:
        raise ThemeError(f"{where}: primary is required")
    for key in _COLOUR_FIELDS:
        if key in raw:
            _colour(raw[key], where, key)
    if "dark" in raw and not isinstance(raw["dark"], bool):
        raise ThemeError(f"{where}: dark must be true or false")
    for key in ("luminosity_spread", "text_alpha"):
        if key in raw and (isinstance(raw[key], bool) or not isinstance(raw[key], int | float)):
            raise ThemeError(f"{where}: {key} must be a number")
    variables = raw.get("variables", {})
    if not isinstance(variables, dict):
        raise ThemeError(f"{where}: [variables] must be a table")
    for key, value in variables.items():
        if key in SEMANTIC:
            _colour(value, where, f"variables.{key}")
        elif not isinstance(value, str):
            raise ThemeError(f"{where}: variables.{key} must be a string")
    return Theme(**{**raw, "variables": dict(variables)})


def user_themes_dir() -> Path:
    """Your own themes, beside your mcpwatch.toml: `~/.config/mcpwatch/themes/*.toml`."""
    from mcpwatch.paths import user_config_path

    return user_config_path().parent / "themes"


def load_themes(directory: Path | None = None, user: Path | None = None) -> list[Theme]:
    """Every `*.toml` theme in the directory (default: the shipped ones) and in the user themes folder (default:
    `user_themes_dir()`), sorted by name; a user theme with a shipped theme's name replaces it."""
    found: dict[str, Theme] = {}
    shipped = directory if directory is not None else themes_dir()
    folders = [shipped] if directory is not None else [shipped, user if user is not None else user_themes_dir()]
    for folder in folders:
        if folder is None or not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            theme = load_theme_file(path)
            found[theme.name] = theme
    return sorted(found.values(), key=lambda t: t.name)


def semantic_defaults(theme: Theme | None) -> dict[str, str]:
    """The console's semantic colours for a theme that does not set them, from its own palette."""
    out: dict[str, str] = {}
    for name, (attribute, fallback) in SEMANTIC.items():
        value = getattr(theme, attribute, None) if theme is not None else None
        out[name] = value or fallback
    if theme is not None and theme.foreground:
        background = Color.parse(theme.background or ("#000000" if theme.dark else "#FFFFFF"))
        out["text-dim"] = Color.parse(theme.foreground).blend(background, 0.4).hex
    if theme is not None:
        # Borders must stand out from the surface: $panel-lighten-2 (the old rule) is pure white on a light theme.
        shades = theme.to_color_system().generate()
        out["panel-border"] = shades["panel-lighten-2" if theme.dark else "panel-darken-3"]
    return out


def available_theme_names(extra: list[Theme]) -> list[str]:
    return sorted({*BUILTIN_THEMES, *(t.name for t in extra)})


def check_theme_name(name: str, extra: list[Theme]) -> str:
    """The name if it is a known theme; otherwise a `UserError` that lists the known ones."""
    names = available_theme_names(extra)
    if name not in names:
        ours = [t.name for t in extra]
        others = [n for n in names if n not in ours]
        raise UserError(f"unknown theme {name!r}; mcpwatch themes: {', '.join(ours)}; also: {', '.join(others)}")
    return name
