"""A realistic recorded session, written through the real EventWriter, for the store and log-command tests.

Every event kind appears, with data fields as events.py specifies. `SampleSession` records what it emitted so
tests can derive their expectations from the input rather than hard-coding results.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpwatch.clock import ManualClock
from mcpwatch.events import Event, Kind, Outcome
from mcpwatch.store import EventWriter

TIERS = {
    "quick": {"total_s": 30, "per_model_s": 20, "models": ["a", "b"]},
    "balanced": {"total_s": 90, "per_model_s": 45, "models": ["a", "b", "c"]},
    "high": {"total_s": 180, "per_model_s": 90, "models": ["a", "b", "c", "d"]},
    "reasoning": {"total_s": 600, "per_model_s": 300, "models": ["o1", "r1"]},
}


def deadline_block(margin: float, host: float = 120.0) -> dict[str, Any]:
    return {
        "host_timeout_s": host,
        "margin_s": margin,
        "override_s": None,
        "budget_s": host - margin,
        "source": "host_timeout-margin",
    }


@dataclass
class SampleSession:
    """Emits events with consecutive seqs and explicit times (seconds after `t0`)."""

    writer: EventWriter
    session_id: str
    t0: float
    seq: int = 0
    emitted: list[Event] = field(default_factory=list)
    durations: dict[str, list[float]] = field(default_factory=dict)
    outcomes: dict[str, list[str]] = field(default_factory=dict)
    model_latency: dict[str, list[float]] = field(default_factory=dict)

    def emit(
        self,
        kind: Kind,
        at: float,
        *,
        request_id: str | None = None,
        tool: str | None = None,
        model: str | None = None,
        **data: Any,
    ) -> Event:
        self.seq += 1
        event = Event(kind.value, self.session_id, self.t0 + at, at, self.seq, request_id, tool, model, data)
        self.writer.emit(event)
        self.emitted.append(event)
        return event

    def call(
        self,
        rid: str,
        tool: str | None,
        at: float,
        duration: float | None,
        outcome: Outcome | None,
        *,
        method: str = "tools/call",
        up_id: int | None = None,
        progress: int = 0,
    ) -> None:
        """One request: start, progress, and (when outcome is given) its end."""
        budget = 110.0 if method == "tools/call" else None
        self.emit(
            Kind.REQUEST_START,
            at,
            request_id=rid,
            tool=tool,
            method=method,
            up_id=up_id,
            budget_s=budget,
            budget_source="host_timeout-margin",
            arguments="{}",
        )
        for step in range(1, progress + 1):
            self.emit(
                Kind.PROGRESS,
                at + step * 0.1,
                request_id=rid,
                tool=tool,
                progress=step,
                total=progress,
                message=f"step {step}",
            )
        if outcome is None or duration is None:
            return
        self.emit(
            Kind.REQUEST_END,
            at + duration,
            request_id=rid,
            tool=tool,
            outcome=outcome.value,
            duration_s=duration,
            partial=outcome == Outcome.DEADLINE,
        )
        if tool:
            self.durations.setdefault(tool, []).append(duration)
            self.outcomes.setdefault(tool, []).append(outcome.value)

    def model(self, rid: str, model: str, at: float, status: str, latency_ms: float | None) -> None:
        self.emit(
            Kind.MODEL_STATUS,
            at,
            request_id=rid,
            tool="consult_council",
            model=model,
            stage=1,
            status="pending",
            latency_ms=None,
            per_model_s=45,
            tier="balanced",
        )
        self.emit(
            Kind.MODEL_STATUS,
            at + 1,
            request_id=rid,
            tool="consult_council",
            model=model,
            stage=1,
            status=status,
            latency_ms=latency_ms,
            per_model_s=45,
            tier="balanced",
        )
        if latency_ms is not None:
            self.model_latency.setdefault(model, []).append(latency_ms)


def write_sample(
    path: Path,
    *,
    t0: float = 1_700_000_000.0,
    name: str = "council",
    end: bool = True,
    pid: int | None = None,
    upstream: str = "stdio: mcpwatch council",
) -> SampleSession:
    """Write one full session (every kind) to `path` and return what was emitted.

    `pid` is the wrapper's recorded pid (default: this process, which is alive): give a dead one for a session
    whose wrapper crashed, since prune and `sessions` treat an unended session with a live pid as running.
    """
    clock = ManualClock(wall=t0)
    writer = EventWriter(path, clock=clock)
    pid = os.getpid() if pid is None else pid
    sid = writer.start_session(name=name, upstream=upstream, pid=pid, config={"x": 1})
    s = SampleSession(writer, sid, t0)
    s.emit(
        Kind.SESSION_START,
        0.0,
        name=name,
        pid=pid,
        version="0.1.0",
        front="stdio",
        upstream={"kind": "stdio", "target": "mcpwatch council"},
        config={"x": 1},
        deadline=deadline_block(10.0),
        state_sync={"policies": 2, "overlaps": []},
    )
    s.emit(Kind.HOST_INFO, 0.1, name="inspector", version="1.0", protocol_version="2025-06-18")
    s.emit(Kind.UPSTREAM_STATE, 0.2, state="connecting", generation=1)
    s.emit(Kind.UPSTREAM_STATE, 0.5, state="ready", generation=1, pid=4242)
    s.call("1", "consult_council", 1.0, 12.0, Outcome.OK, up_id=1, progress=3)
    s.model("1", "gpt", 2.0, "ok", 4000.0)
    s.model("1", "claude", 3.0, "ok", 6000.0)
    s.model("1", "gemini", 4.0, "timeout", 45000.0)
    s.call("2", "consult_council", 20.0, 20.0, Outcome.OK, up_id=2, progress=2)
    s.model("2", "gpt", 21.0, "rate_limited", 100.0)
    s.emit(
        Kind.HEARTBEAT,
        30.0,
        request_id="2",
        tool="consult_council",
        progress=2,
        total=None,
        message="still working: 10s",
        elapsed_s=10.0,
        interval_s=5.0,
    )
    s.call("3", "consult_council", 50.0, 110.0, Outcome.DEADLINE, up_id=3, progress=4)
    s.emit(
        Kind.TOMBSTONE_ADD,
        160.0,
        request_id="3",
        tool="consult_council",
        up_id=3,
        ttl_s=155.0,
        reason="deadline",
        expires_mono=315.0,
    )
    s.emit(Kind.TOMBSTONE_HIT, 170.0, up_id=3, what="response", age_s=10.0)
    s.emit(
        Kind.LATE_RESULT,
        170.0,
        request_id="3",
        tool="consult_council",
        up_id=3,
        reason="deadline",
        cut_after_s=110.0,
        delay_s=10.0,
        duration_s=120.0,
        outcome="ok",
        size_bytes=52,
        result={"content": [{"type": "text", "text": "the council's answer"}]},
        reuse_ttl_s=300.0,
    )
    s.emit(Kind.TOMBSTONE_HIT, 171.0, up_id=3, what="progress", age_s=11.0)
    s.call("4", "tasks.update", 180.0, 0.5, Outcome.TOOL_ERROR, up_id=4)
    s.emit(
        Kind.INVALIDATION,
        180.6,
        request_id="4",
        tool="tasks.update",
        caused_by="tasks.update",
        patterns=["tasks.*", "sprints.*"],
    )
    s.call("5", None, 181.0, 0.2, Outcome.OK, method="resources/read", up_id=5)
    s.emit(
        Kind.CONFIG_CHANGE, 182.0, key="margin_s", old=10.0, new=20.0, source="operator", deadline=deadline_block(20.0)
    )
    s.emit(
        Kind.HEALTH_CHECK,
        183.0,
        ok=True,
        ping_ms=3.0,
        tool="council_health_check",
        result={"tiers": TIERS, "timeout_multiplier": 1.0},
        error=None,
    )
    s.call("6", "consult_council", 190.0, 5.0, Outcome.CANCELLED, up_id=6, progress=1)
    s.emit(Kind.CANCEL_ACK, 195.01, request_id="6", tool="consult_council", up_id=6, reason="host_cancel",
           cut_after_s=5.0, delay_s=0.01, code=0, error='{"code":0,"message":"Request cancelled"}')  # fmt: skip
    # a relay stopping answers it once more, with an error: no result (late_error)
    s.emit(Kind.LATE_ERROR, 195.5, request_id="6", tool="consult_council", up_id=6, reason="host_cancel",
           cut_after_s=5.0, delay_s=0.5, code=-32000, error='{"code":-32000}')  # fmt: skip
    s.emit(Kind.UNKNOWN_RESPONSE, 200.0, up_id=99, reason="unknown_id")
    # an identical call answered from call 3's late result (a reuse policy allowed it)
    s.emit(Kind.REQUEST_START, 201.0, request_id="8", tool="consult_council", method="tools/call", up_id=None,
           budget_s=None, budget_source="late_reuse", arguments="{}")  # fmt: skip
    s.emit(Kind.LATE_REUSE, 201.0, request_id="8", tool="consult_council", from_request_id="3", delay_s=10.0,
           age_s=31.0, ttl_s=300.0)  # fmt: skip
    s.emit(Kind.REQUEST_END, 201.0, request_id="8", tool="consult_council", outcome="ok", duration_s=0.0,
           late_reuse=True)  # fmt: skip
    s.durations["consult_council"].append(0.0)
    s.outcomes["consult_council"].append("ok")
    s.emit(Kind.TOMBSTONE_EXPIRE, 315.0, up_id=3, age_s=155.0)
    s.call("7", "consult_council", 320.0, None, None, up_id=7, progress=1)  # still running at the end
    # … as an MCP task: its status changes belong to it (its request_end will come at its terminal status)
    s.emit(Kind.TASK_CREATED, 320.1, request_id="7", tool="consult_council", task_id="t-7", status="working",
           status_message=None, ttl_ms=600000, poll_interval_ms=2000, era="2025-11-25")  # fmt: skip
    s.emit(Kind.TASK_STATUS, 320.2, request_id="7", tool="consult_council", task_id="t-7", status="working",
           status_message="stage 1", elapsed_s=0.2, seen_by="tasks/get", polls=1)  # fmt: skip
    s.emit(
        Kind.OPERATOR_CALL,
        320.5,
        tool="council.models.disable",
        arguments='{"model": "gemini"}',
        ok=True,
        error=None,
        result_preview='{"changed": true}',
        duration_s=0.01,
    )
    s.emit(Kind.WARNING, 321.0, message="upstream wrote to stdout outside JSON-RPC")
    s.emit(Kind.HOST_SESSION_REFUSED, 321.0, message="a new host session was refused: every session is busy",
           open=16, max=16, refused=1)  # fmt: skip
    if end:
        s.emit(Kind.SESSION_END, 330.0, reason="host closed", counters={"requests": 7})
        clock.advance(330.0)
        writer.end_session(sid, "host closed")
    writer.close()
    return s


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped: no process has it (until the pid is reused)."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(30)
    return child.pid


def test_sample_covers_every_kind(tmp_path: Path) -> None:
    sample = write_sample(tmp_path / "events.db")
    assert {e.kind for e in sample.emitted} == {k.value for k in Kind}
    assert [e.seq for e in sample.emitted] == list(range(1, len(sample.emitted) + 1))
