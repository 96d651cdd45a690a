"""A 2025-era host session on the HTTP front calls a tool its server runs only as a task of the tasks extension: the
server refuses it on the session's connection (`-32021`), so the call is made again on the front's 2026-era upstream
(the one sessionless requests share), run there as a bridged extension task, and its result answers the host's call.
Two cores on one manual clock, each with a recording upstream."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from taskrig import Host, Upstream, spin

from mcpwatch.clock import ManualClock
from mcpwatch.config import DeadlineSettings, Settings
from mcpwatch.events import Kind, UpstreamState
from mcpwatch.reliability.deadline import DeadlinePolicy
from mcpwatch.testing.scheduler import ManualScheduler
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.core.pump import WrapperCore
from mcpwatch.wrapper.fronts.era_translate import EraTranslator

EXTENSION = "io.modelcontextprotocol/tasks"
REFUSAL = {
    "code": -32021,
    "message": "Tool 'crunch' requires the tasks extension",
    "data": {"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
}
CLIENT = {"name": "claude-code", "version": "2.1"}
CRUNCH = {"name": "crunch", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}}
RESULT = {"content": [{"type": "text", "text": "crunched"}]}


class Session(Host):
    def __init__(self, name: str) -> None:
        super().__init__(f"session {name}")
        self.key_prefix = f"{name}/"


class Front:
    """A 2025-era host session's core and the shared 2026-era core, as the HTTP front builds them."""

    def __init__(self, loop, budget_s: float = 30.0) -> None:
        self.loop = loop
        self.settings = replace(Settings(), deadline=DeadlineSettings(host_timeout_s=budget_s, margin_s=0.0))
        self.scheduler = ManualScheduler(ManualClock())
        self.recorder = Recorder("manual", None, clock=self.scheduler.clock)
        self.shared, self.shared_up = self._core(), Upstream()
        self.shared.attach_upstream(self.shared_up)
        self.started = 0
        self.translator = EraTranslator(self.shared, self._start_shared)
        self.cores: list[tuple[WrapperCore, Upstream]] = []

    def _core(self, **parts: Any) -> WrapperCore:
        return WrapperCore(
            settings=self.settings,
            deadline=DeadlinePolicy(self.settings.deadline, environ={}),
            recorder=self.recorder,
            loop=self.loop,
            scheduler=self.scheduler,
            **parts,
        )

    def _start_shared(self) -> None:
        self.started += 1
        self.shared.session.set_state(UpstreamState.READY)
        self.shared.session.flush()

    def session(self, host: Session) -> tuple[WrapperCore, Upstream]:
        """A host that initialized (without tasks) and listed the tools through its own session."""
        core, upstream = self._core(translate=self.translator.take), Upstream()
        core.on_detach.append(self.translator.session_ended)
        core.attach_upstream(upstream)
        core.session.set_state(UpstreamState.READY)
        core.attach_link(host)
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT}
        self.answer(core, self.send(core, host, 0, "initialize", init), {"protocolVersion": "2025-11-25"})
        self.answer(core, self.send(core, host, "l", "tools/list", {}), {"tools": [CRUNCH]})
        return core, upstream

    def send(self, core: WrapperCore, host: Host, request_id: Any, method: str, params: dict[str, Any]) -> Any:
        core.host_message(host, {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        spin(self.loop)
        sent = [m for m in core.session.link.sent if m.get("method") == method]  # type: ignore[union-attr]
        return sent[-1]["id"] if sent else None

    def answer(self, core: WrapperCore, up_id: Any, result: Any = None, error: Any = None) -> None:
        core.upstream_message({"jsonrpc": "2.0", "id": up_id, **({"error": error} if error else {"result": result})})
        spin(self.loop)

    def shared_sent(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.shared_up.sent if m.get("method") == method]

    def call(self, core: WrapperCore, host: Host, request_id: Any, token: Any = None) -> None:
        """The host calls crunch; its own upstream refuses it as a 2025-era call."""
        meta = {"progressToken": token} if token is not None else {}
        params = {"name": "crunch", "arguments": {"n": 1}, **({"_meta": meta} if meta else {})}
        self.answer(core, self.send(core, host, request_id, "tools/call", params), error=REFUSAL)

    def discover(self, extension: bool = True) -> None:
        (discover,) = self.shared_sent("server/discover")
        capabilities: dict[str, Any] = {"tools": {}, **({"extensions": {EXTENSION: {}}} if extension else {})}
        self.answer(self.shared, discover["id"], {"supportedVersions": ["2026-07-28"], "capabilities": capabilities})

    def task_made(self) -> None:
        """The shared upstream refuses the 2026-era call too (no extension declared), then makes it a task."""
        self.answer(self.shared, self.shared_sent("tools/call")[-1]["id"], error=REFUSAL)
        again = self.shared_sent("tools/call")[-1]
        task = {"resultType": "task", "taskId": "t-1", "status": "working", "ttlMs": 60000, "pollIntervalMs": 1000}
        self.answer(self.shared, again["id"], task)

    def poll(self, status: str, **extra: Any) -> None:
        self.scheduler.advance(1.0)
        spin(self.loop)
        poll = self.shared_sent("tasks/get")[-1]
        task = {"resultType": "complete", "taskId": "t-1", "status": status, "ttlMs": 60000, **extra}
        self.answer(self.shared, poll["id"], task)


def replies(host: Host) -> list[dict[str, Any]]:
    return [m for m in host.sent if "id" in m and "method" not in m]


def test_a_2025_era_hosts_extension_only_call_runs_as_a_2026_era_task(loop) -> None:
    front = Front(loop)
    host = Session("a1")
    core, _ = front.session(host)
    front.call(core, host, 1, token="p1")
    assert front.started == 1  # the shared 2026-era upstream, started for it
    front.discover()
    (call,) = front.shared_sent("tools/call")
    envelope = call["params"]["_meta"]
    assert envelope["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert envelope["io.modelcontextprotocol/clientInfo"] == CLIENT  # the client the host named in initialize
    assert envelope["io.modelcontextprotocol/clientCapabilities"] == {}  # it can answer no 2026-era question
    assert call["params"]["arguments"] == {"n": 1}
    front.task_made()
    front.poll("working", statusMessage="halfway")
    progress = [m["params"] for m in host.sent if m.get("method") == "notifications/progress"]
    assert progress[-1]["progressToken"] == "p1" and progress[-1]["message"] == "working: halfway"
    front.poll("completed", result=RESULT)
    assert replies(host)[-1] == {"jsonrpc": "2.0", "id": 1, "result": RESULT}  # no 2026-era resultType
    ends = [e for e in front.recorder.since(0, 1000) if e.kind == Kind.REQUEST_END and e.tool == "crunch"]
    assert {(e.request_id, e.data["outcome"]) for e in ends} == {("a1/1", "ok"), ("a1/2026:1", "ok")}


def test_cut_at_the_hosts_budget_the_task_goes_on_for_the_same_sessions_retry_alone(loop) -> None:
    front = Front(loop, budget_s=2.0)
    host, other = Session("a1"), Session("b2")
    core, _ = front.session(host)
    other_core, _ = front.session(other)
    front.call(core, host, 1)
    front.scheduler.advance(1.5)  # the 2026-era upstream takes its time to say what it takes
    spin(loop)
    front.discover()
    front.task_made()
    front.scheduler.advance(0.5)  # the host's budget, counted from its own call's start, not the 2026-era call's
    spin(loop)
    cut = replies(host)[-1]
    assert cut["id"] == 1 and "goes on upstream as task t-1" in cut["result"]["content"][0]["text"]
    assert "stopped after 2.0 s" in cut["result"]["content"][0]["text"]
    front.call(other_core, other, 7)  # another session's identical call: a task of its own
    assert len(front.shared_sent("tools/call")) == 3
    front.call(core, host, 2)  # the same session's retry: it waits for the task
    assert len(front.shared_sent("tools/call")) == 3
    front.poll("completed", result=RESULT)
    assert replies(host)[-1] == {"jsonrpc": "2.0", "id": 2, "result": RESULT}
    assert [m for m in replies(other) if m["id"] == 7] == []  # still waiting for its own task


def test_when_the_2026_era_upstream_lacks_the_extension_the_host_reads_the_one_line(loop) -> None:
    front = Front(loop)
    host = Session("a1")
    core, _ = front.session(host)
    front.call(core, host, 1)
    front.discover(extension=False)
    error = replies(host)[-1]["error"]
    assert error["code"] == -32021 and "this host connected with initialize (2025 era)" in error["message"]
    assert front.shared_sent("tools/call") == []


def test_calls_waiting_to_learn_the_upstreams_era_cost_one_discover(loop) -> None:
    front = Front(loop)
    host = Session("a1")
    core, _ = front.session(host)
    for request_id in range(1, 51):  # fifty refused calls before the upstream said what it takes
        front.call(core, host, request_id)
    front.discover()  # exactly one request to answer (it unpacks one)
    assert len(front.shared_sent("tools/call")) == 50


def test_the_hosts_cancel_reaches_the_2026_era_call_and_the_task_goes_on(loop) -> None:
    front = Front(loop)
    host = Session("a1")
    core, _ = front.session(host)
    front.call(core, host, 1)
    front.discover()
    front.task_made()
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    core.host_message(host, cancel)
    spin(loop)
    assert replies(host)[-1]["id"] == "l"  # a host that cancelled is owed nothing
    assert [m for m in front.shared_up.sent if m.get("method") in ("tasks/cancel", "notifications/cancelled")] == []
    front.poll("completed", result=RESULT)  # the task goes on, and its result is kept for the same session's retry
    (late,) = [e.data for e in front.recorder.since(0, 1000) if e.kind == Kind.LATE_RESULT]
    assert late["reason"] == "host_cancel"  # cut by the host's cancel, at once, not at its budget
    front.call(core, host, 2)
    assert replies(host)[-1] == {"jsonrpc": "2.0", "id": 2, "result": RESULT}
