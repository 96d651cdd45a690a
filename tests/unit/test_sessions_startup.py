"""`mcpwatch sessions` costs the same on any log: it imports only what listing needs, and reads one row per
session whatever the number of events. Counted (modules, SQLite steps), never timed."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpwatch.events import Event, Kind, Outcome
from mcpwatch.store import EventReader, EventWriter
from mcpwatch.store import reader as reader_module

HEAVY = ("textual", "mcp", "opentelemetry", "uvicorn", "starlette", "pydantic", "httpx2", "prometheus_client")
"""Packages no listing needs; importing any of them is most of a slow start."""
NOT_FOR_LISTING = ("mcpwatch.config", "mcpwatch.store.writer", "mcpwatch.wrapper", "mcpwatch.console")
"""mcpwatch's own parts a listing does not use (the settings, the writer, the wrapper, the console)."""

PROBE = """
import contextlib, io, json, sys
from mcpwatch.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def _write_log(path: Path, sessions: int, calls: int) -> None:
    """`sessions` runs of `calls` calls each (a start and an end apiece), every tenth cut at its deadline."""
    for n in range(sessions):
        writer = EventWriter(path, queue_max=2 * calls + 10)
        session_id = writer.start_session(name=f"run-{n}", upstream="bench", pid=None, config={})
        for call in range(calls):
            rid, seq, ts = str(call), 2 * call + 1, 1_700_000_000.0 + call
            start = {"method": "tools/call", "up_id": call}
            writer.emit(Event(Kind.REQUEST_START.value, session_id, ts, float(call), seq, rid, "t", None, start))
            outcome = Outcome.DEADLINE if call % 10 == 9 else Outcome.OK
            end = {"outcome": outcome.value, "duration_s": 0.5}
            writer.emit(Event(Kind.REQUEST_END.value, session_id, ts + 0.5, call + 0.5, seq + 1, rid, "t", None, end))
        writer.flush()
        writer.close()


@pytest.mark.parametrize("table", [False, True], ids=["json", "table"])
def test_the_listing_imports_nothing_heavy(tmp_path: Path, table: bool) -> None:
    log = tmp_path / "events.db"
    _write_log(log, sessions=2, calls=3)
    args = ["sessions", str(log)] if table else ["sessions", "--json", str(log)]
    env = {**os.environ, "MCPWATCH_STATE_DIR": str(tmp_path / "state"), "COLUMNS": "120"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, timeout=60, check=True
    )
    probe = json.loads(done.stdout)
    assert probe["code"] == 0
    assert "run-0" in probe["out"] and "run-1" in probe["out"]  # it did list them
    modules: list[str] = probe["modules"]
    top = {name.split(".")[0] for name in modules}
    assert not top & set(HEAVY), sorted(top & set(HEAVY))
    assert not [m for m in modules if m.startswith(NOT_FOR_LISTING)]
    others = [m for m in modules if m.startswith("mcpwatch.commands.") and m != "mcpwatch.commands.sessions"]
    assert others in ([], ["mcpwatch.commands._output"] if table else [])  # no other command is configured
    assert ("rich" in top) is table  # the JSON listing draws no table


def _steps_to_list(log: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int, list[Any]]:
    """SQLite virtual-machine steps and statements `EventReader.sessions()` takes on this log, and what it answers."""
    counted = {"steps": 0, "statements": 0}
    opened = reader_module.connect_reader

    def counting(path: Path) -> sqlite3.Connection:
        conn = opened(path)

        def step() -> int:
            counted["steps"] += 1
            return 0

        def statement(sql: str) -> None:
            counted["statements"] += 1

        conn.set_progress_handler(step, 1)
        conn.set_trace_callback(statement)
        return conn

    monkeypatch.setattr(reader_module, "connect_reader", counting)
    with EventReader(log) as reader:
        sessions = reader.sessions()
    return counted["steps"], counted["statements"], [(s.name, s.requests, s.timeouts) for s in sessions]


def test_the_listing_reads_the_same_rows_on_a_larger_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = tmp_path / "small.db", tmp_path / "large.db"
    _write_log(small, sessions=3, calls=10)
    _write_log(large, sessions=3, calls=1000)  # 100 times the events
    small_steps, small_statements, small_sessions = _steps_to_list(small, monkeypatch)
    large_steps, large_statements, large_sessions = _steps_to_list(large, monkeypatch)
    assert small_sessions == [(f"run-{n}", 10, 1) for n in range(3)]
    assert large_sessions == [(f"run-{n}", 1000, 100) for n in range(3)]  # counted, though not read event by event
    assert large_statements == small_statements
    assert large_steps <= small_steps * 1.1  # a scan of the events would take 100 times as many
