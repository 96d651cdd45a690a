"""A wrapper killed outright leaves no ghost: the next command that reads the registry removes its file, and its
session is shown as ended (crashed) at its last event in `sessions`, `report` and their JSON."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from faultkit import RAW_SERVER, raw_host, registry_of

from mcpwatch.logview.units import format_time
from mcpwatch.store import EventReader, LogError

from checkout import mcpwatch_cmd
from waiting import patience

pytestmark = pytest.mark.anyio


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(mcpwatch_cmd(*args), capture_output=True, text=True, timeout=60)


async def killed_wrapper_session(tmp_path: Path, state: Path, log: Path) -> tuple[str, Path]:
    async with raw_host(RAW_SERVER, tmp_path, log=log) as host:
        await host.initialize()
        reply = await host.tool("echo", {"x": 1})
        assert "result" in reply
        entry = await registry_of(state, host.pid)
        deadline = time.monotonic() + patience(10)
        while time.monotonic() < deadline:  # wait until its events are on disk, then kill it outright
            try:
                with EventReader(log) as reader:
                    if reader.count_by_kind(entry["session_id"]).get("request_end", 0) >= 2:
                        break
            except LogError as exc:  # the writer's thread may not have made the schema yet (a loaded machine)
                assert "empty" in str(exc), exc
            time.sleep(0.05)
        await host.signal(signal.SIGKILL)
        await host.wait_exit()
    return entry["session_id"], state / "wrappers" / f"{host.pid}.json"


@pytest.mark.slow
async def test_a_killed_wrapper_is_shown_crashed_and_its_registry_file_removed(
    tmp_path: Path, isolated_state: Path
) -> None:
    log = tmp_path / "events.db"
    session_id, ghost = await killed_wrapper_session(tmp_path, isolated_state, log)
    assert ghost.exists()  # nobody cleaned up after a SIGKILL
    with EventReader(log) as reader:
        last_ts = max(e.ts for e in reader.events(session_id))

    listed = run("sessions", str(log))
    assert listed.returncode == 0, listed.stderr
    assert not ghost.exists()  # the first command to look removed it
    (row,) = [line for line in listed.stdout.splitlines() if line.startswith("│") and session_id in line]
    assert "(crashed)" in row and "(open)" not in listed.stdout
    note = f"{session_id}: crashed — its wrapper stopped without recording an end; counted as ended at its last"
    assert note in listed.stdout and format_time(last_ts) in listed.stdout

    (item,) = json.loads(run("sessions", str(log), "--json").stdout)
    assert item["state"] == "crashed" and item["last_event_at"] == last_ts and item["ended_at"] is None

    report = run("report", str(log), "--session", session_id)
    assert report.returncode == 0, report.stderr
    assert "(crashed)" in report.stdout and note in report.stdout and format_time(last_ts) in report.stdout
    assert json.loads(run("report", str(log), "--json").stdout)["session"]["state"] == "crashed"
