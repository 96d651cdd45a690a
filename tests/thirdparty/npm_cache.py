"""Third-party peers from npm, installed once into a cache folder that outlives the run (keyed by the exact
versions): a later run finds them there and does not touch the registry. An install goes to a folder of its own
first and is moved in whole, so an interrupted one never leaves a half-installed cache that looks complete; a lock
beside the cache folder makes concurrent runs (pytest-xdist workers, two checkouts) wait for one install instead of
each installing and removing the other's."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

DONE = "installed.txt"  # written last: its presence means the whole install is there
NPM_FIXTURES: set[str] = set()  # the fixtures that install from npm: their tests are marked `npm` (conftest.py)

Fixture = TypeVar("Fixture", bound=Callable[..., object])


def npm_fixture(function: Fixture) -> Fixture:
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
            options = ["--no-audit", "--no-fund", "--silent", "--prefer-offline", "--prefix", str(staging)]
            install = subprocess.run([npm, "install", *options, *packages], capture_output=True, text=True, timeout=600)
            assert install.returncode == 0, install.stderr[-2000:]
            (staging / DONE).write_text("\n".join(packages) + "\n")
            shutil.rmtree(prefix, ignore_errors=True)  # an older, incomplete install
            staging.rename(prefix)
    return prefix / "node_modules" / ".bin"
