"""Heartbeats on a manual clock: half the host's idle clock after the upstream's last word, never past the budget."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcpwatch.clock import ManualClock
from mcpwatch.config import DeadlineSettings
from mcpwatch.reliability.deadline import DeadlinePolicy
from mcpwatch.reliability.heartbeat import elapsed_text, heartbeat_message, next_heartbeat
from mcpwatch.reliability.hosts import catalog
from mcpwatch.testing.scheduler import ManualScheduler
from mcpwatch.wrapper.core.heartbeat import Heartbeats


class Timers:
    """The project's manual scheduler, driven to absolute times."""

    def __init__(self, scheduler: ManualScheduler) -> None:
        self.scheduler = scheduler

    def run_until(self, when: float) -> None:
        self.scheduler.advance(when - self.scheduler.time())


@dataclass
class Link:
    sent: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    clock: ManualClock | None = None

    def send(self, message: dict[str, Any]) -> None:
        assert self.clock is not None  # set before the heartbeat runs
        self.sent.append((self.clock.monotonic(), message))


@dataclass
class Call:
    up_id: int
    started: float
    budget: Any
    host: Any
    link: Link
    host_token: Any = "tok-1"
    method: str = "tools/call"
    tool: str = "slow"
    request_key: str = "7"
    last_progress: dict[str, Any] | None = None
    open: bool = True


def rig(host_name: str = "mcp-inspector", front: str = "stdio", **budget_kwargs):
    clock = ManualClock(monotonic=100.0)
    timers = Timers(ManualScheduler(clock))
    events: list[tuple[str, dict[str, Any]]] = []
    beats = Heartbeats(timers.scheduler, lambda kind, **data: events.append((kind, data)))
    host = catalog().detect({"name": host_name}, front)
    budget = DeadlinePolicy(DeadlineSettings(**budget_kwargs), environ={}).budget("slow", host, progress=True)
    link = Link(clock=clock)
    call = Call(up_id=1, started=clock.monotonic(), budget=budget, host=host, link=link)
    return clock, timers, events, beats, call


def test_heartbeats_every_half_idle_clock_until_the_budget_and_never_after():
    _clock, timers, events, beats, call = rig()  # Inspector: idle 60 s (reset by progress); budget 110 s (default)
    assert call.budget.seconds == 110
    beats.start(call)
    timers.run_until(100 + 200)
    times = [round(at - 100, 6) for at, _ in call.link.sent]
    assert times == [30, 60, 90]  # 120 would be past the budget's end (110 s): no heartbeat there
    first = call.link.sent[0][1]
    assert first == {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": "tok-1", "progress": 0, "message": "still working: 30s"},
    }
    assert [kind for kind, _ in events] == ["heartbeat"] * 3
    assert events[-1][1]["message"] == "still working: 1m30s" and events[-1][1]["interval_s"] == 30


def test_upstream_progress_pushes_the_next_heartbeat_back_and_is_repeated():
    _clock, timers, _events, beats, call = rig()
    beats.start(call)
    timers.run_until(120)
    call.last_progress = {"progress": 3, "total": 8, "message": "step 3"}
    beats.touch(call)  # the upstream spoke at 20 s
    timers.run_until(149.9)
    assert call.link.sent == []
    timers.run_until(150)
    at, message = call.link.sent[0]
    assert at == 150
    assert message["params"] == {"progressToken": "tok-1", "progress": 3, "total": 8, "message": "still working: 50s"}


def test_stop_ends_the_heartbeats():
    _clock, timers, _events, beats, call = rig()
    beats.start(call)
    timers.run_until(131)
    beats.stop(call)
    timers.run_until(200)
    assert len(call.link.sent) == 1 and len(beats) == 0


def test_no_heartbeat_without_a_token_or_an_idle_clock():
    for name, front, token in (
        ("mcp-inspector", "stdio", None),
        ("codex-mcp-client", "stdio", "t"),
        ("Visual Studio Code", "stdio", "t"),
    ):
        _clock, timers, events, beats, call = rig(name, front)
        call.host_token = token
        beats.start(call)
        timers.run_until(100 + 3600)
        assert call.link.sent == [] and events == [], name


def test_claude_code_over_http_beats_every_150_s_within_its_budget():
    _clock, timers, _events, beats, call = rig("claude-code", "http")
    assert call.budget.seconds == 340  # the HTTP cut (350 s) decides once the idle clock is kept alive
    beats.start(call)
    timers.run_until(100 + 400)
    assert [round(at - 100) for at, _ in call.link.sent] == [150, 300]
    assert call.link.sent[0][1]["params"]["message"] == "still working: 2m30s"


def test_the_pure_schedule():
    assert next_heartbeat(10.0, 5.0, 0.0, 20.0) == 15.0
    assert next_heartbeat(15.0, 5.0, 0.0, 20.0) is None  # due exactly at the budget's end
    assert next_heartbeat(15.0, 5.0, 0.0, None) == 20.0  # no budget: no bound
    assert [elapsed_text(s) for s in (0, 45, 100, 3725)] == ["0s", "45s", "1m40s", "1h02m"]
    assert heartbeat_message(100) == "still working: 1m40s"


def test_a_call_that_ended_gets_no_more_heartbeats():
    _clock, timers, _events, beats, call = rig()
    beats.start(call)
    timers.run_until(131)
    call.open = False  # answered: the table finished it
    timers.run_until(300)
    assert len(call.link.sent) == 1 and len(beats) == 0
