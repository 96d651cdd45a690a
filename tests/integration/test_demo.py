"""`mcpwatch demo --headless` from a non-editable install, as the README's first command makes it: the one this suite
runs in when it is one (as `.ci/run` installs it), else a fresh virtualenv with this checkout installed."""

from __future__ import annotations

import io
import re
import signal
import site
import subprocess
import sys
import time
import venv
from pathlib import Path

import pytest

from mcpwatch.demo.run import story_told

from checkout import REPO
from waiting import wait_until


def _installed_here(outside: Path) -> bool:
    """Whether this interpreter's mcpwatch, imported from outside the checkout, is an install rather than the source."""
    found = subprocess.run(
        [sys.executable, "-c", "import mcpwatch; print(mcpwatch.__file__)"],
        capture_output=True,
        text=True,
        cwd=outside,
        timeout=60,
    )
    source = REPO / "mcpwatch"  # an install can sit inside the checkout too (.ci/run makes .venv there)
    return found.returncode == 0 and not Path(found.stdout.strip()).resolve().is_relative_to(source)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin folder of a non-editable mcpwatch."""
    outside = tmp_path_factory.mktemp("outside")
    here = Path(sys.executable).parent
    if _installed_here(outside) and (here / "mcpwatch").exists():
        return here
    env_dir = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder().create(env_dir)  # no pip of its own: this pip installs into it (`--python`), saving ensurepip
    python = env_dir / "bin" / "python"
    # Its dependencies are this environment's, seen through a path file (a plain path: that folder's own path files,
    # among them the editable install's finder, are not run), so only mcpwatch itself is built and installed.
    # Installing the ~60 dependencies again took most of a minute and a half on a loaded machine.
    own = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                         capture_output=True, text=True, check=True, timeout=60).stdout.strip()  # fmt: skip
    (Path(own) / "_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    install = subprocess.run(
        [*pip, "install", "-q", "--disable-pip-version-check", "--no-deps", str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    return env_dir / "bin"


@pytest.mark.slow
@pytest.mark.timeout(300)  # the install (once per module) and a run that lengthens with the load
def test_the_demo_tells_its_story(installed: Path, isolated_state: Path, tmp_path: Path) -> None:
    """The headless demo shows a deadline answered with partial results, a late answer dropped and kept, a model
    disabled and an invalidation; stopped with ctrl+c once its log holds that story (as a user stops it, and however
    long the machine takes to tell it: 11-13 s at load, while a fixed 20 s run beside four CPU burners once showed
    no deadline yet), its summary says each, and everything stops cleanly. Its own end at `--duration` is
    `tests/unit/test_demo_story_time.py`'s."""
    started_at = time.time()
    demo = subprocess.Popen(
        [str(installed / "mcpwatch"), "demo", "--headless", "--duration", "120"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        log = isolated_state / "events.db"
        wait_until(lambda: demo.poll() is not None or story_told(log, started_at), 60, "the story in the log", 0.5)
        demo.send_signal(signal.SIGINT)
        stdout, stderr = demo.communicate(timeout=120)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.communicate()
    result = subprocess.CompletedProcess(demo.args, demo.returncode, stdout, stderr)
    assert result.returncode == 0, result.stderr
    figures = {
        name: int(match.group(1))
        for name, pattern in {
            "partial": r"\((\d+) answered with partial results\)",
            "dropped": r"late answers: (\d+) dropped",
            "kept": r"dropped, (\d+) kept",
            "disabled": r"models disabled: (\d+)",
            "invalidations": r"invalidations: (\d+)",
        }.items()
        if (match := re.search(pattern, result.stdout))
    }
    assert len(figures) == 5, result.stdout
    assert all(count > 0 for count in figures.values()), result.stdout
    assert "tool calls by outcome:" in result.stdout and "ok " in result.stdout
    assert f"log: {isolated_state / 'events.db'}" in result.stdout
    assert "Traceback" not in result.stderr
    assert not list((isolated_state / "wrappers").glob("*.json"))  # everything stopped cleanly


def test_the_relay_ignores_every_second_cancellation():
    from mcpwatch.demo.deaf_relay import relay

    cancel = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}\n'
    call = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"notifications/cancelled"}}\n'
    host = io.BytesIO(call + cancel % 1 + cancel % 2 + cancel % 3)
    upstream = io.BytesIO()
    assert relay(host, upstream) == 2
    assert upstream.getvalue() == call + cancel % 2


@pytest.mark.slow  # with an editable checkout, it installs one first
def test_the_install_carries_its_themes(installed: Path, tmp_path: Path) -> None:
    themes = subprocess.run(
        [
            str(installed / "python"),
            "-c",
            "import importlib.resources as r; print(sorted(p.name for p in "
            "(r.files('mcpwatch') / 'themes').iterdir()))",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert "mcpwatch-dark.toml" in themes.stdout and "mcpwatch-high-contrast.toml" in themes.stdout, themes.stderr


@pytest.mark.slow  # with an editable checkout, it installs one first
def test_the_install_carries_its_manual(installed: Path, tmp_path: Path) -> None:
    """The manual's pages ship in the package, so an installed mcpwatch has its documentation beside it."""
    listing = subprocess.run(
        [
            str(installed / "python"),
            "-c",
            "import importlib.resources as r; print(*(p.name for p in (r.files('mcpwatch') / 'docs').iterdir()))",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    shipped = {page.name for page in (REPO / "mcpwatch" / "docs").glob("*.md")}
    assert len(shipped) >= 12 and shipped <= set(listing.stdout.split()), listing.stderr
