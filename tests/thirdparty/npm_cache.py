"""Third-party peers from npm, installed once into a cache folder that outlives the run (keyed by the exact
versions): a later run finds them there and does not touch the registry. An install goes to a folder of its own
first and is moved in whole, so an interrupted one (or two runs at once) never leaves a half-installed cache that
looks complete."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

DONE = "installed.txt"  # written last: its presence means the whole install is there


def installed_bin(*packages: str) -> Path:
    """`node_modules/.bin` holding `packages` (name@version), installed on first use; skips without npm."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: the third-party peers come from the npm registry")
    key = hashlib.sha256(" ".join(packages).encode()).hexdigest()[:12]
    prefix = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mcpwatch-tests" / f"npm-{key}"
    if not (prefix / DONE).is_file():
        staging = prefix.with_name(f"{prefix.name}.{os.getpid()}.tmp")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        options = ["--no-audit", "--no-fund", "--silent", "--prefer-offline", "--prefix", str(staging)]
        install = subprocess.run([npm, "install", *options, *packages], capture_output=True, text=True, timeout=600)
        assert install.returncode == 0, install.stderr[-2000:]
        (staging / DONE).write_text("\n".join(packages) + "\n")
        shutil.rmtree(prefix, ignore_errors=True)  # an older, incomplete install
        try:
            staging.rename(prefix)
        except OSError:  # another run moved its own complete install in first
            shutil.rmtree(staging, ignore_errors=True)
    return prefix / "node_modules" / ".bin"
