"""Third-party peers from npm, installed once into a cache folder that outlives the run (keyed by the exact
versions): a later run finds them there and does not touch the registry. An install goes to a folder of its own
first and is moved in whole, so an interrupted one never leaves a half-installed cache that looks complete; a lock
beside the cache folder makes concurrent runs (pytest-xdist workers, two checkouts) wait for one install instead of
each installing and removing the other's.

When the registry cannot be reached (npm present, the network or the registry down), the tests that need a peer
not yet cached skip and say so, instead of erroring after npm's minute of retries with nothing to read."""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

DONE = "installed.txt"  # written last: its presence means the whole install is there
NPM_FIXTURES: set[str] = set()  # the fixtures that install from npm: their tests are marked `npm` (conftest.py)

if TYPE_CHECKING:
    from _pytest.fixtures import FixtureFunctionDefinition  # what pytest.fixture makes (pytest exports no name)


def npm_fixture(function: Callable[..., object]) -> FixtureFunctionDefinition:
    """A session fixture that installs peers from npm; `-m "not npm"` leaves out every test that uses it."""
    NPM_FIXTURES.add(function.__name__)
    return pytest.fixture(scope="session")(function)


def installed_bin(*packages: str) -> Path:
    """`node_modules/.bin` holding `packages` (name@version), installed on first use; skips without npm."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: the third-party peers come from the npm registry")
    key = hashlib.sha256(" ".join(packages).encode()).hexdigest()[:12]
    prefix = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mcpwatch-tests" / f"npm-{key}"
    if (prefix / DONE).is_file():
        return prefix / "node_modules" / ".bin"
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(prefix.with_name(f"{prefix.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if not (prefix / DONE).is_file():  # no other run installed it while this one waited
            staging = prefix.with_name(f"{prefix.name}.{os.getpid()}.tmp")
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir()
            install = _install(npm, staging, packages)
            if install.returncode != 0:
                unreachable = registry_problem(npm)
                failure = _last_lines(install)
                shutil.rmtree(staging, ignore_errors=True)
                if unreachable is not None:
                    pytest.skip(f"{unreachable}, and npm's own cache lacks {' '.join(packages)} ({failure})")
                pytest.fail(f"npm install {' '.join(packages)} failed (exit {install.returncode}): {failure}")
            (staging / DONE).write_text("\n".join(packages) + "\n")
            shutil.rmtree(prefix, ignore_errors=True)  # an older, incomplete install
            staging.rename(prefix)
    return prefix / "node_modules" / ".bin"


def _install(npm: str, staging: Path, packages: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    """`npm install` into `staging`; from npm's own cache alone when the registry cannot be reached (that fails in a
    second when something is missing, where reaching for the registry retries for a minute)."""
    mode = "--offline" if registry_problem(npm) is not None else "--prefer-offline"
    options = ["--no-audit", "--no-fund", "--loglevel=error", mode, "--prefix", str(staging)]
    return subprocess.run([npm, "install", *options, *packages], capture_output=True, text=True, timeout=600)


def registry_problem(npm: str) -> str | None:
    """None when npm's registry answers a ping, else one line naming the registry and npm's error code; asked once
    per process and npm setting in the environment (`npm_config_*`)."""
    settings = tuple(sorted((k, v) for k, v in os.environ.items() if k.lower().startswith("npm_config_")))
    return _registry_problem(npm, settings)


@functools.cache
def _registry_problem(npm: str, settings: tuple[tuple[str, str], ...]) -> str | None:
    registry = subprocess.run([npm, "config", "get", "registry"], capture_output=True, text=True, timeout=60)
    where = registry.stdout.strip() or "the npm registry"
    try:
        ping = subprocess.run(
            [npm, "ping", "--fetch-retries=0", "--fetch-timeout=10000"], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        return f"the npm registry {where} cannot be reached (npm ping: no answer within 60 s)"
    if ping.returncode == 0:
        return None
    return f"the npm registry {where} cannot be reached (npm ping: {_last_lines(ping, 1)})"


def _last_lines(done: subprocess.CompletedProcess[str], count: int = 3) -> str:
    """npm's error lines, first ones first (its code, then what failed), without the pointer to its debug log."""
    lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
    lines = [line for line in lines if "complete log of this run" not in line and not line.startswith("npm notice")]
    return " / ".join(lines[:count]) or "npm said nothing"
