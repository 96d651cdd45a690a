"""Runs the demo: the console over a live driver (interactive), or the driver alone with a summary (headless)."""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from mcpwatch import paths, registry
from mcpwatch.demo.config import DEMO_TOML
from mcpwatch.demo.driver import DriverStats, drive, wrapper_command
from mcpwatch.errors import UserError

NAME = "demo"
QUIT_NOTE = "Quitting the demo stops its wrapper, council and host too; the log is kept (a summary follows)."


def write_config() -> Path:
    directory = paths.state_dir() / "demo"
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "mcpwatch.toml"
    config.write_text(DEMO_TOML, encoding="utf-8")
    return config


def summary(started_at: float, stats: DriverStats | None) -> str:
    """What happened, read back from the event log (the same figures `mcpwatch report` gives)."""
    from mcpwatch.store import EventReader, LogError

    log_path = paths.default_log_path()
    try:
        reader = EventReader(log_path)
        sessions = [s for s in reader.sessions() if s.name == NAME and s.started_at >= started_at - 1]
    except LogError as exc:
        return f"mcpwatch demo: no log to summarise ({exc})"
    if not sessions:
        return f"mcpwatch demo: the wrapper recorded no session in {log_path}"
    session = sessions[-1]
    outcomes: Counter[str] = Counter()
    partial = disabled = 0
    for event in reader.events(session.id, kinds=["request_end"]):
        if event.data.get("method") == "tools/call":
            outcomes[str(event.data.get("outcome"))] += 1
            partial += event.data.get("outcome") == "deadline" and bool(event.data.get("partial"))
            disabled += event.tool == "council.models.disable" and event.data.get("outcome") == "ok"
    kinds = reader.count_by_kind(session.id)
    by_outcome = ", ".join(f"{name} {count}" for name, count in sorted(outcomes.items())) or "none"
    command = invoked_as()
    lines = [
        f"mcpwatch demo: {time.time() - started_at:.0f} s, session {session.id} ({session.name})",
        f"  tool calls by outcome: {by_outcome}",
        f"  deadlines hit: {outcomes.get('deadline', 0)} ({partial} answered with partial results)"
        f"   late answers: {kinds.get('tombstone_hit', 0)} dropped, {kinds.get('late_result', 0)} kept",
        f"  models disabled: {disabled}   invalidations: {kinds.get('invalidation', 0)}"
        f"   tombstones: {kinds.get('tombstone_add', 0)}",
        f"  log: {log_path}",
        f"  next: {command} report --session {session.id}   |   {command} replay --session {session.id}",
    ]
    if stats is not None and stats.errors:
        lines.append(f"  host-side errors: {len(stats.errors)} (first: {stats.errors[0]})")
    return "\n".join(lines)


def invoked_as(argv0: str | None = None, which: Callable[[str], str | None] = shutil.which) -> str:
    """How to run mcpwatch again as this command was run: `mcpwatch` when that name on the PATH is this very
    program, else the path that was typed (`.venv/bin/mcpwatch` after the README's set-up), or `python -m mcpwatch`."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    if not argv0 or argv0.endswith(("__main__.py", "-c")) or Path(argv0).name not in ("mcpwatch", "mcpwatch.exe"):
        return f"{shlex.quote(sys.executable)} -m mcpwatch"
    on_path = which("mcpwatch")
    if on_path is not None and Path(on_path).resolve() == Path(argv0).resolve():
        return "mcpwatch"
    return shlex.quote(argv0)


STORY_S = 10.0  # from the first call: the 8 s budget cuts the slow tiers, their partial answers reach the log
STORY_GRACE_S = 20.0  # at most this much past --duration, when start-up was slow


async def _end_after_the_story(stats: DriverStats, stop: asyncio.Event, duration: float) -> None:
    """Stop at `duration`, but not before the story had time to happen (`STORY_S` from the first call, at most
    `STORY_GRACE_S` past `duration`): on a loaded machine start-up (four Python processes one after the other: the
    host, the wrapper, the relay, and the council, which imports the MCP SDK) once took 12 s of a 20 s run, and the
    run ended before any call reached its deadline."""
    loop = asyncio.get_running_loop()
    latest = loop.time() + duration + STORY_GRACE_S
    await asyncio.sleep(duration)
    while not stop.is_set():
        first = stats.first_call_at
        due = latest if first is None else min(latest, first + STORY_S)
        if loop.time() >= due:
            break
        await asyncio.sleep(min(0.2, due - loop.time()))
    stop.set()


def run_headless(duration: float, time_scale: float, seed: int) -> int:
    config = write_config()
    started_at = time.time()

    async def main() -> DriverStats:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        command = wrapper_command(str(config), NAME, "default", time_scale, seed)
        stats = DriverStats()
        ending = loop.create_task(_end_after_the_story(stats, stop, duration))
        try:
            return await drive(command, stop, seed=seed, stats=stats)
        finally:
            ending.cancel()

    stats = asyncio.run(main())
    print(summary(started_at, stats), flush=True)
    return 0


def run_with_console(time_scale: float, seed: int, theme: str | None) -> int:
    config = write_config()
    started_at = time.time()
    driver = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcpwatch.demo.driver",
            "--config",
            str(config),
            "--name",
            NAME,
            "--time-scale",
            str(time_scale),
            "--seed",
            str(seed),
        ],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ),
    )
    try:
        from mcpwatch.console import launch  # imported while the host, wrapper and council start, not after

        entry = _wait_for_wrapper(started_at, driver)
        code = launch(str(entry.pid), theme=theme, quit_note=QUIT_NOTE)
    finally:
        _stop(driver)
    print(summary(started_at, None), flush=True)  # after the console: what happened, where the log is, what next
    return code


def _wait_for_wrapper(
    started_at: float, driver: subprocess.Popen[bytes], timeout: float = 30.0
) -> registry.WrapperEntry:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if driver.poll() is not None:
            raise UserError(f"the demo's driver exited early (code {driver.returncode})")
        for entry in registry.find_wrapper(NAME):
            if entry.started_at >= started_at - 1:
                return entry
        time.sleep(0.1)
    raise UserError(f"the demo's wrapper did not start within {timeout:.0f} s")


def _stop(driver: subprocess.Popen[bytes]) -> None:
    """Stop the driver; it closes the wrapper, which stops the council: no orphans, the log flushed."""
    if driver.poll() is None:
        driver.send_signal(signal.SIGTERM)
        try:
            driver.wait(20)
        except subprocess.TimeoutExpired:
            driver.kill()
            driver.wait(5)
