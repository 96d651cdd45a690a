"""Private by default: the state dir is 0700, the log, its WAL and SHM and the registry 0600; a state dir or log
that another user owns or others can write to is refused in one line naming the path and the fix; a planted
symlink never makes a wrapper write its registry entry elsewhere; the console takes only loopback URLs from the
registry. Real wrapper processes and real files (another user is `nobody`, made the owner with chown: root only).
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from mcpwatch import registry
from mcpwatch.privacy import UnsafePathError
from mcpwatch.store import EventWriter

from checkout import mcpwatch_cmd

NOBODY = 65534
ECHO_HOST_INPUT = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def run_wrapper(*wrap_args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """A real wrapper over `cat` (it echoes the host's frames back), ended by the host closing stdin."""
    return subprocess.run(
        mcpwatch_cmd("wrap", *wrap_args, "--", "cat"),
        input=ECHO_HOST_INPUT,
        capture_output=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_a_wrapper_keeps_its_state_private(tmp_path: Path) -> None:
    state = tmp_path / "fresh-state"
    done = run_wrapper(env={"MCPWATCH_STATE_DIR": str(state)})
    assert done.returncode == 0, done.stderr
    assert mode(state) == 0o700 and mode(state / "wrappers") == 0o700
    log = state / "events.db"
    assert mode(log) == 0o600
    writer = EventWriter(log)  # the WAL and SHM exist while a writer has the file open
    try:
        for suffix in ("-wal", "-shm"):
            side = Path(f"{log}{suffix}")
            assert side.exists() and mode(side) == 0o600, suffix
    finally:
        writer.close()


def test_an_old_log_readable_by_others_is_made_private(tmp_path: Path) -> None:
    log = tmp_path / "events.db"
    EventWriter(log).close()
    os.chmod(log, 0o644)
    EventWriter(log).close()
    assert mode(log) == 0o600


def test_registry_files_are_0600(tmp_path: Path) -> None:
    entry = registry.WrapperEntry(os.getpid(), "w", "http://127.0.0.1:1/mcp", "secret", "", "s")
    written = registry.register(entry, tmp_path / "wrappers")
    assert mode(written) == 0o600 and mode(tmp_path / "wrappers") == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="making a file another user's needs root")
@pytest.mark.parametrize("how", ["owned by another user", "writable by others"])
def test_an_unsafe_state_dir_is_refused_in_one_line_and_the_host_is_still_served(tmp_path: Path, how: str) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    if how == "owned by another user":
        os.chown(state, NOBODY, NOBODY)
        fix = f"chown {os.geteuid()} {state}"
    else:
        os.chmod(state, 0o777)
        fix = f"chmod 700 {state}"
    done = run_wrapper(env={"MCPWATCH_STATE_DIR": str(state)})
    stderr = done.stderr.decode()
    assert done.returncode == 0 and b'"id":1' in done.stdout  # the host got its answer
    lines = [line for line in stderr.splitlines() if str(state) in line and fix in line]
    assert len(lines) == 1, stderr
    assert not (state / "events.db").exists() and not (state / "wrappers").exists()
    watch = subprocess.run(
        mcpwatch_cmd("watch"), capture_output=True, timeout=60, env={**os.environ, "MCPWATCH_STATE_DIR": str(state)}
    )
    assert watch.returncode == 2
    assert watch.stderr.decode().strip().count("\n") == 0 and fix in watch.stderr.decode()


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="making a file another user's needs root")
@pytest.mark.parametrize("how", ["owned by another user", "writable by others"])
def test_an_unsafe_log_is_refused_in_one_line_and_left_alone(tmp_path: Path, how: str) -> None:
    log = tmp_path / "shared.db"
    EventWriter(log).close()
    if how == "owned by another user":
        os.chown(log, NOBODY, NOBODY)
        fix = "chown"
    else:
        os.chmod(log, 0o666)
        fix = f"chmod 600 {log}"
    before = log.read_bytes()
    done = run_wrapper("--log", str(log))
    stderr = done.stderr.decode()
    assert done.returncode == 0 and b'"id":1' in done.stdout
    lines = [line for line in stderr.splitlines() if f"{log}: the event log" in line and fix in line]
    assert len(lines) == 1, stderr
    assert log.read_bytes() == before


def test_a_planted_symlink_never_redirects_the_registry(tmp_path: Path) -> None:
    directory = tmp_path / "wrappers"
    directory.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file\n")
    pid = os.getpid()
    # every name an attacker could predict: the old fixed temp name and the final name
    (directory / f".{pid}.json.tmp").symlink_to(victim)
    (directory / f"{pid}.json").symlink_to(victim)
    entry = registry.WrapperEntry(pid, "w", "http://127.0.0.1:1/mcp", "secret-token", "", "s")
    written = registry.register(entry, directory)
    assert victim.read_text() == "the user's own file\n"
    assert not written.is_symlink() and mode(written) == 0o600 and "secret-token" in written.read_text()


def test_a_registry_dir_others_can_write_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "wrappers"
    directory.mkdir()
    os.chmod(directory, 0o777)
    entry = registry.WrapperEntry(os.getpid(), "w", "http://127.0.0.1:1/mcp", "t", "", "s")
    with pytest.raises(UnsafePathError) as info:
        registry.register(entry, directory)
    assert str(directory) in str(info.value) and "chmod 700" in str(info.value)
    assert list(directory.iterdir()) == []


def test_the_console_takes_only_loopback_urls_from_the_registry(tmp_path: Path) -> None:
    directory = tmp_path / "wrappers"
    alive = os.getpid()
    urls = {
        "loop4": "http://127.0.0.1:4100/mcp",
        "loop6": "http://[::1]:4100/mcp",
        "named": "http://localhost:4100/mcp",
        "remote": "http://10.1.2.3:4100/mcp",
        "dns": "http://evil.example:4100/mcp",
        "scheme": "file:///etc/passwd",
    }
    for i, (name, url) in enumerate(urls.items()):
        registry.register(registry.WrapperEntry(alive, name, url, "t", "", "s", started_at=float(i)), directory)
        os.rename(directory / f"{alive}.json", directory / f"{alive}-{name}.json")
    found = {e.name for e in registry.running_wrappers(directory)}
    assert found == {"loop4", "loop6", "named"}


def test_reading_the_registry_removes_the_files_of_dead_wrappers(tmp_path: Path) -> None:
    directory = tmp_path / "wrappers"
    dead = subprocess.Popen(["true"])
    dead.wait()
    registry.register(registry.WrapperEntry(dead.pid, "gone", "http://127.0.0.1:1/mcp", "t", "", "s"), directory)
    registry.register(registry.WrapperEntry(os.getpid(), "here", "http://127.0.0.1:2/mcp", "t", "", "s"), directory)
    assert [e.name for e in registry.running_wrappers(directory)] == ["here"]
    assert sorted(p.name for p in directory.iterdir()) == [f"{os.getpid()}.json"]
