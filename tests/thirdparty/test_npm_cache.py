"""The npm peers' cache: a registry that cannot be reached makes the tests that need a peer skip with the reason,
and a failed install says what npm said, never an empty AssertionError after a minute of retries."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest
from npm_cache import installed_bin, registry_problem


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty peers' cache and an empty npm cache, so nothing can be found without the registry."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm"))
    return tmp_path


@pytest.mark.slow  # four runs of npm, each a Node start-up
def test_an_unreachable_registry_skips_with_the_reason(fresh_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: this test runs the real npm against a registry that cannot be reached")
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9")  # the discard port: nothing listens
    with pytest.raises(pytest.skip.Exception) as skipped:
        installed_bin("left-pad@1.3.0")
    reason = str(skipped.value)
    assert "the npm registry http://127.0.0.1:9 cannot be reached" in reason, reason
    assert "ECONNREFUSED" in reason and "lacks left-pad@1.3.0" in reason and "ENOTCACHED" in reason, reason
    assert [path.name for path in (fresh_cache / "xdg" / "mcpwatch-tests").iterdir()] == [
        next(path.name for path in (fresh_cache / "xdg" / "mcpwatch-tests").glob("*.lock"))
    ]  # no half-installed folder left beside the lock


def fake_npm(folder: Path, install_exit: int, ping_exit: int) -> Path:
    """An `npm` whose install fails as a registry's 404 does, and whose ping answers or not."""
    folder.mkdir(parents=True, exist_ok=True)
    npm = folder / "npm"
    npm.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        "  config) echo https://registry.example/ ;;\n"
        f"  ping) echo 'npm error code EAI_AGAIN' >&2; exit {ping_exit} ;;\n"
        "  install) echo 'npm error code E404' >&2;"
        " echo 'npm error 404 Not Found - GET https://registry.example/nope' >&2;"
        f" echo 'npm error A complete log of this run can be found in: /x.log' >&2; exit {install_exit} ;;\n"
        "esac\n"
    )
    npm.chmod(npm.stat().st_mode | stat.S_IEXEC)
    return folder


def test_a_failed_install_with_the_registry_up_fails_saying_what_npm_said(
    fresh_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{fake_npm(fresh_cache / 'bin', install_exit=1, ping_exit=0)}:/usr/bin:/bin")
    with pytest.raises(pytest.fail.Exception) as failed:
        installed_bin("nope@1.0.0")
    assert str(failed.value) == (
        "npm install nope@1.0.0 failed (exit 1): npm error code E404 / "
        "npm error 404 Not Found - GET https://registry.example/nope"
    )


def test_a_registry_that_does_not_answer_is_named(fresh_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_folder = fake_npm(fresh_cache / "bin", install_exit=1, ping_exit=1)
    monkeypatch.setenv("npm_config_fetch_timeout", "1")  # another npm setting: asked afresh, not from a memo
    assert registry_problem(str(bin_folder / "npm")) == (
        "the npm registry https://registry.example/ cannot be reached (npm ping: npm error code EAI_AGAIN)"
    )
