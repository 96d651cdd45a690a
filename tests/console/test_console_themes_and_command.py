"""Theme files (shipped, validated, defaults for missing colours) and the `mcpwatch watch` command's errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from textual.theme import BUILTIN_THEMES

from mcpwatch.console.themes import (
    SEMANTIC,
    ThemeError,
    check_theme_name,
    load_theme_file,
    load_themes,
    semantic_defaults,
    themes_dir,
)
from mcpwatch.errors import UserError

from checkout import REPO


def test_the_shipped_themes_load_and_set_every_semantic_colour() -> None:
    themes = {t.name: t for t in load_themes()}
    assert {"mcpwatch-dark", "mcpwatch-light", "mcpwatch-high-contrast"} <= set(themes)
    for theme in themes.values():
        assert set(SEMANTIC) <= set(theme.variables), theme.name
    assert themes["mcpwatch-light"].dark is False


def test_themes_are_found_in_the_checkout() -> None:
    assert themes_dir() == REPO / "themes"


def test_a_theme_without_semantic_colours_gets_them_from_its_palette(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\nprimary = "#112233"\nerror = "#FF0000"\n')
    theme = load_theme_file(path)
    defaults = semantic_defaults(theme)
    assert defaults["status-error"] == "#FF0000" and defaults["status-pending"] == "#112233"
    assert set(defaults) == set(SEMANTIC)
    assert set(semantic_defaults(BUILTIN_THEMES["nord"])) == set(SEMANTIC)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ('name = "x"\nprimary = "not-a-colour"\n', "primary is not a colour"),
        ('primary = "#fff"\n', "name must be a non-empty string"),
        ('name = "x"\n', "primary is required"),
        ('name = "x"\nprimary = "#fff"\nsparkle = 1\n', "unknown key(s) sparkle"),
        ('name = "x"\nprimary = "#fff"\n[variables]\nstatus-ok = "greenish"\n', "variables.status-ok is not a colour"),
        ('name = "x"\nprimary = "#fff"\ndark = "yes"\n', "dark must be true or false"),
        ("name = [", "not valid TOML"),
    ],
)
def test_a_bad_theme_file_is_one_clear_error(tmp_path: Path, body: str, problem: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(body)
    with pytest.raises(ThemeError) as caught:
        load_theme_file(path)
    assert str(path) in str(caught.value) and problem in str(caught.value)


def test_unknown_theme_name_lists_the_known_ones() -> None:
    with pytest.raises(UserError, match="unknown theme 'sepia'; mcpwatch themes: mcpwatch-dark"):
        check_theme_name("sepia", load_themes())
    assert check_theme_name("nord", load_themes()) == "nord"


def _watch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpwatch", "watch", *args], capture_output=True, text=True, timeout=60, cwd=REPO
    )


def test_watch_with_a_bad_theme_exits_2_with_one_line() -> None:
    result = _watch("--theme", "sepia")
    assert result.returncode == 2
    assert result.stderr.startswith("mcpwatch: unknown theme 'sepia'") and result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_watch_a_url_without_a_token_says_how_to_give_one() -> None:
    result = _watch("http://127.0.0.1:9/mcp")
    assert result.returncode == 2
    assert "no token for http://127.0.0.1:9/mcp: pass --token T" in result.stderr


def test_importing_the_command_stays_light() -> None:
    code = (
        "import sys, mcpwatch.commands.watch; print(sorted(m for m in sys.modules if m.startswith(('textual', 'mcp'))))"
    )
    code = code.replace("'mcp'", "'mcp.'")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "[]"


def test_installed_package_data_comes_before_a_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After `pip install .` the themes live in the package (`mcpwatch/themes`, force-included by the wheel)."""
    import importlib.resources

    package = tmp_path / "mcpwatch"
    (package / "themes").mkdir(parents=True)
    (package / "themes" / "only.toml").write_text('name = "only"\nprimary = "#123456"\n')
    monkeypatch.setattr(importlib.resources, "files", lambda name: package)
    assert themes_dir() == package / "themes"
    assert [t.name for t in load_themes()] == ["only"]
