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
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from mcpwatch import paths, registry
from mcpwatch.demo.config import DEMO_TOML
from mcpwatch.demo.driver import DriverStats, drive, start_wrapper, stop_wrapper, wrapper_command
from mcpwatch.errors import UserError

if TYPE_CHECKING:
    from mcpwatch.store.reader import SessionInfo

NAME = "demo"
STARTING = "mcpwatch demo: starting a simulated council behind the wrapper, a host calling it, and the console…"
QUIT_NOTE = "Quitting the demo stops its wrapper, council and host too; the log is kept (a summary follows)."


def write_config() -> Path:
    directory = paths.state_dir() / "demo"
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "mcpwatch.toml"
    config.write_text(DEMO_TOML, encoding="utf-8")
    return config


def summary(started_at: float, stats: DriverStats | None, pid: int | None = None) -> str:
    """What happened, read back from the event log (the same figures `mcpwatch report` gives)."""
    from mcpwatch.store import EventReader, LogError

    log_path = paths.default_log_path()
    try:
        reader = EventReader(log_path)
        sessions = this_run(reader.sessions(), started_at, pid)
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


STORY_KINDS = ("tombstone_hit", "late_result", "invalidation")  # with a cut call answered with partial results
STORY_GRACE_S = 20.0  # at most this much past --duration, when start-up was slow
STORY_POLL_S = 0.25


def this_run(sessions: list[SessionInfo], started_at: float, pid: int | None) -> list[SessionInfo]:
    """This run's demo sessions: by its wrapper's pid, as two demos at once share the log and the name (without
    it, each summed up and waited on the other's session)."""
    recent = [s for s in sessions if s.name == NAME and s.started_at >= started_at - 1]
    return recent if pid is None else [s for s in recent if s.pid == pid]


def story_told(log_path: Path, started_at: float, pid: int | None = None) -> bool:
    """Whether the log holds the demo's whole story for this run: a call cut with a partial answer, a late answer
    dropped for the host and kept, and an invalidation (a model disabled)."""
    from mcpwatch.store import EventReader, LogError

    try:
        with EventReader(log_path) as reader:
            sessions = this_run(reader.sessions(), started_at, pid)
            if not sessions:
                return False
            kinds = reader.count_by_kind(sessions[-1].id)
            if not all(kinds.get(kind, 0) for kind in STORY_KINDS):
                return False
            return any(
                event.data.get("outcome") == "deadline" and event.data.get("partial")
                for event in reader.events(sessions[-1].id, kinds=["request_end"])
            )
    except LogError:
        return False


async def _end_after_the_story(told: Callable[[], bool], stop: asyncio.Event, duration: float) -> None:
    """Stop at `duration`, but not before the story is in the log (at most `STORY_GRACE_S` past `duration`): on a
    loaded machine start-up once took 12 s of a 20 s run, and the run ended before any call reached its deadline.
    Waits on what happened, not on how long it usually takes."""
    loop = asyncio.get_running_loop()
    latest = loop.time() + duration + STORY_GRACE_S
    await asyncio.sleep(duration)
    while not stop.is_set() and loop.time() < latest:
        if await asyncio.to_thread(told):
            break
        await asyncio.sleep(min(STORY_POLL_S, max(0.0, latest - loop.time())))
    stop.set()


def run_headless(duration: float, time_scale: float, seed: int) -> int:
    config = write_config()
    started_at = time.time()
    wrapper = start_wrapper(wrapper_command(str(config), NAME, "default", time_scale, seed))
    assert wrapper.stdin is not None and wrapper.stdout is not None
    pipes = (os.dup(wrapper.stdout.fileno()), os.dup(wrapper.stdin.fileno()))  # the host's ends, closed by drive
    wrapper.stdin.close()
    wrapper.stdout.close()

    async def main() -> DriverStats:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        stats = DriverStats()
        told = partial(story_told, paths.default_log_path(), started_at, wrapper.pid)
        ending = loop.create_task(_end_after_the_story(told, stop, duration))
        try:
            return await drive(pipes, stop, seed=seed, stats=stats)
        finally:
            ending.cancel()

    try:
        stats = asyncio.run(main())
    finally:
        stop_wrapper(wrapper)
    print(summary(started_at, stats, wrapper.pid), flush=True)
    return 0


def run_with_console(time_scale: float, seed: int, theme: str | None) -> int:
    """The wrapper (with the council behind it) and the host start at once, the host on the wrapper's pipes; the
    console's Textual is imported while they start; the console opens once the wrapper is registered."""
    if theme:  # a wrong name is said before anything starts (and leaves no demo session in the log)
        from mcpwatch.console.themes import check_theme_name, load_themes

        check_theme_name(theme, load_themes())
    config = write_config()
    started_at = time.time()
    wrapper = start_wrapper(wrapper_command(str(config), NAME, "default", time_scale, seed), subprocess.DEVNULL)
    assert wrapper.stdin is not None and wrapper.stdout is not None
    pipes = (wrapper.stdout.fileno(), wrapper.stdin.fileno())
    driver = subprocess.Popen(
        [sys.executable, "-m", "mcpwatch.demo.driver", "--seed", str(seed), *_fd_args(pipes)],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=pipes,
    )
    wrapper.stdin.close()  # the host holds them now: its exit is the wrapper's EOF
    wrapper.stdout.close()
    print(STARTING, flush=True)  # the console takes a few seconds on a loaded machine: say what is happening meanwhile
    try:
        from mcpwatch.console import launch

        _import_the_console()
        entry = _wait_for_wrapper(started_at, {"host": driver, "wrapper": wrapper}, wrapper.pid)
        code = launch(str(entry.pid), theme=theme, quit_note=QUIT_NOTE)
    finally:
        _stop(driver)
        stop_wrapper(wrapper)
    # after the console: what happened, where the log is, what next
    print(summary(started_at, None, wrapper.pid), flush=True)
    return code


def _fd_args(pipes: tuple[int, int]) -> list[str]:
    return ["--read-fd", str(pipes[0]), "--write-fd", str(pipes[1])]


def _import_the_console() -> None:
    """Textual and the console's screens, and the MCP client its feed connects with (together over a second of CPU,
    seconds at load 15: the feed imported the client only once the console was up, and showed "connecting" meanwhile),
    imported while the wrapper and the host start."""
    import httpx2  # noqa: F401
    import mcp.client.streamable_http  # noqa: F401

    import mcpwatch.console.app  # noqa: F401


def _wait_for_wrapper(
    started_at: float, children: dict[str, subprocess.Popen[bytes]], pid: int | None = None, timeout: float = 30.0
) -> registry.WrapperEntry:
    """This run's wrapper once registered: by its pid (another demo at once registers under the same name)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for role, child in children.items():
            if child.poll() is not None:
                raise UserError(f"the demo's {role} exited early (code {child.returncode})")
        for entry in registry.find_wrapper(NAME):
            if entry.started_at >= started_at - 1 and pid in (None, entry.pid):
                return entry
        time.sleep(0.1)
    raise UserError(f"the demo's wrapper did not start within {timeout:.0f} s")


def _stop(driver: subprocess.Popen[bytes]) -> None:
    """Stop the driver; closing its pipes stops the wrapper, which stops the council: no orphans, the log flushed."""
    if driver.poll() is None:
        driver.send_signal(signal.SIGTERM)
        try:
            driver.wait(20)
        except subprocess.TimeoutExpired:
            driver.kill()
            driver.wait(5)
