"""Late results in the wrapper's core (in-process, manual clock): logged with exact delays, reused only when a policy
allows it, never for a mutation, never past the TTL; and the reuse store's own rules."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from mcpwatch.clock import ManualClock
from mcpwatch.config import DeadlineSettings, LateResultSettings, ReusePolicy, Settings, settings_from_mapping
from mcpwatch.errors import UserError
from mcpwatch.events import Event, UpstreamState
from mcpwatch.operator import UpstreamDetail
from mcpwatch.reliability.deadline import DeadlinePolicy
from mcpwatch.reliability.reuse import META_KEY, LateResultReuse, ReuseKey, canonical_arguments, reuse_note
from mcpwatch.reliability.statesync import StateSync
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.core.pump import WrapperCore
from mcpwatch.wrapper.framing import frames

BUDGET_S = 0.05  # the smallest budget mcpwatch accepts: calls are cut fast


class Sink:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.kind == kind]


class Link:
    """A host or upstream end that keeps what it was sent (as it would appear on the wire)."""

    kind = "fake"
    target = "fake upstream"
    key_prefix = ""
    send_raw = None

    def __init__(self, connection: str | None = "host") -> None:
        self.sent: list[dict[str, Any]] = []
        self.connection = connection

    def record(self, message: dict[str, Any]) -> None:
        self.sent.append(json.loads(frames.encode(message)))


class HostEnd(Link):
    def send(self, message: dict[str, Any]) -> bool:
        self.record(message)
        return True  # delivered


class UpstreamEnd(Link):
    def send(self, message: dict[str, Any]) -> str:
        self.record(message)
        return "sent"

    def describe(self) -> UpstreamDetail:
        return {"unsent_bytes": 0}

    def pause_reading(self) -> None:
        """Nothing to pause: the fake upstream's answers are given by the test, not read from a pipe."""

    def resume_reading(self) -> None:
        """As pause_reading."""


class Wrapper:
    """A core with a tiny budget on a real loop (the deadline timer is real), and a manual clock for the log."""

    def __init__(self, reuse: tuple[ReusePolicy, ...] = (), state_sync: StateSync | None = None, **late: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.clock = ManualClock()
        self.sink = Sink()
        settings = Settings(
            deadline=DeadlineSettings(explicit_s=BUDGET_S), late_results=LateResultSettings(reuse=reuse, **late)
        )
        self.core = WrapperCore(
            settings=settings,
            deadline=DeadlinePolicy(settings.deadline, environ={}),
            recorder=Recorder("s", self.sink, clock=self.clock),
            state_sync=state_sync,
            loop=self.loop,
        )
        self.host, self.upstream = HostEnd(), UpstreamEnd()
        self.core.attach_upstream(self.upstream)
        self.core.attach_link(self.host)
        self.core.session.state = UpstreamState.READY
        self.next_id = 0

    def close(self) -> None:
        self.loop.close()

    def call(self, tool: str, arguments: dict[str, Any]) -> str:
        self.next_id += 1
        rid = f"h{self.next_id}"
        request = {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        self.core.host_frame(self.host, json.dumps(request).encode())
        return rid

    def cut(self, tool: str, arguments: dict[str, Any]) -> int:
        """A call that runs past its budget; returns its upstream id."""
        before = len(self.upstream.sent)
        rid = self.call(tool, arguments)
        assert len(self.upstream.sent) == before + 1
        up_id = self.upstream.sent[-1]["id"]
        self.loop.run_until_complete(asyncio.sleep(BUDGET_S * 4))
        assert self.reply(rid)["result"]["isError"] is True  # cut: the deadline answer
        return up_id

    def answer(self, up_id: int, **body: Any) -> None:
        self.core.upstream_frame(json.dumps({"jsonrpc": "2.0", "id": up_id, **body}).encode())

    def reply(self, rid: str) -> dict[str, Any]:
        (reply,) = [m for m in self.host.sent if m.get("id") == rid]
        return reply


def ok(text: str) -> dict[str, Any]:
    return {"result": {"content": [{"type": "text", "text": text}], "isError": False}}


@pytest.fixture
def wrapper_factory():
    made: list[Wrapper] = []

    def make(**kwargs: Any) -> Wrapper:
        made.append(Wrapper(**kwargs))
        return made[-1]

    yield make
    for w in made:
        w.close()


REUSE_SEARCH = (ReusePolicy("search", 60.0),)


def test_a_late_result_is_logged_with_its_delay_and_true_duration(wrapper_factory) -> None:
    w = wrapper_factory()
    up_id = w.cut("search", {"q": "x"})
    w.clock.advance(8.0)
    w.answer(up_id, **ok("found it"))
    assert [m["id"] for m in w.host.sent] == ["h1"]  # the host that gave up is not sent the late answer
    (hit,) = w.sink.of("tombstone_hit")
    (late,) = w.sink.of("late_result")
    assert hit.seq < late.seq and late.request_id == "h1" and late.tool == "search"
    assert late.data["delay_s"] == 8.0 and late.data["reason"] == "deadline"
    assert late.data["duration_s"] == pytest.approx(late.data["cut_after_s"] + 8.0)
    assert BUDGET_S <= late.data["cut_after_s"] < 1.0
    assert late.data["outcome"] == "ok" and late.data["result"] == ok("found it")["result"]
    assert late.data["size_bytes"] == len(json.dumps(ok("found it")["result"], separators=(",", ":")))
    assert late.data["reuse_ttl_s"] is None  # no reuse policy
    assert w.core.counters.late_results == 1 and w.core.counters.late_dropped == 1


def test_late_errors_late_progress_and_oversized_results(wrapper_factory) -> None:
    w = wrapper_factory(reuse=REUSE_SEARCH, keep_bytes=1024)
    first = w.cut("search", {"q": 1})
    second = w.cut("search", {"q": 2})
    third = w.cut("search", {"q": 3})
    w.core.upstream_frame(
        json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": first, "progress": 1}}
        ).encode()
    )
    w.answer(first, error={"code": -32000, "message": "boom"})
    w.answer(second, result={"content": [{"type": "text", "text": "no"}], "isError": True})
    w.answer(third, **ok("y" * 5000))
    lates = w.sink.of("late_result")
    assert [e.data["outcome"] for e in lates] == ["tool_error", "ok"]  # an error answer is no result
    (error,) = w.sink.of("late_error")
    assert error.request_id == "h1" and error.data["code"] == -32000 and "boom" in error.data["error"]
    assert "duration_s" not in error.data and w.core.counters.late_results == 2
    assert lates[1].data["truncated"] is True and "result" not in lates[1].data
    assert lates[1].data["size_bytes"] > 5000 and len(lates[1].data["result_preview"]) <= 4096
    assert [e.data["what"] for e in w.sink.of("tombstone_hit")] == ["progress", "response", "response", "response"]
    # none of them can be reused: an error, a tool error, a result too large to keep whole
    assert all(e.data["reuse_ttl_s"] is None for e in lates)
    for q in (1, 2, 3):
        w.call("search", {"q": q})
    assert len(w.upstream.sent) == 3 + 3 + 3  # three calls, three cancels, the three calls again


def test_a_closed_connection_after_the_cut_is_no_late_result_nor_a_known_duration(wrapper_factory) -> None:
    """A relay that stops answers the calls still open with `-32000 Connection closed`: that is no answer, so
    neither `report` nor `whatif` may take its delay for the call's true duration."""
    from mcpwatch.logview.report import build_report
    from mcpwatch.logview.whatif import calls_from_events, whatif

    w = wrapper_factory()
    up_id = w.cut("search", {"q": "x"})
    w.clock.advance(3.0)
    w.answer(up_id, error={"code": -32000, "message": "Connection closed"})
    assert w.sink.of("late_result") == [] and len(w.sink.of("late_error")) == 1
    (call,) = calls_from_events(w.sink.events)
    assert call.cut and call.true_s is None and call.late_delay_s is None
    figures = whatif([call], 100.0)
    assert figures["saved"] == 0 and figures["budget_to_save"]["all"] is None
    (row,) = build_report(w.sink.events)["finished_late"]
    assert (row["finished_late"], row["known"]) == (0, 0)


def test_an_older_logs_error_late_result_is_no_known_duration() -> None:
    """Logs written before `late_error` hold the error as a late_result with outcome "error": still no answer."""
    from mcpwatch.logview.whatif import calls_from_events

    def event(seq: int, kind: str, **data: Any) -> Event:
        return Event(kind, "s", float(seq), float(seq), seq, "h1", "search", None, data)

    events = [
        event(1, "request_start", method="tools/call", budget_s=5.0, budget_source="explicit"),
        event(2, "request_end", method="tools/call", outcome="deadline", duration_s=5.0),
        event(3, "late_result", outcome="error", delay_s=2.0, duration_s=7.0, error='{"code":-32000}'),
    ]
    (call,) = calls_from_events(events)
    assert call.true_s is None and call.late_delay_s is None


def test_reuse_answers_the_next_identical_call_at_once_and_only_once(wrapper_factory) -> None:
    w = wrapper_factory(reuse=REUSE_SEARCH)
    up_id = w.cut("search", {"q": "x", "limit": 5})
    w.clock.advance(8.0)
    w.answer(up_id, **ok("found it"))
    assert w.sink.of("late_result")[0].data["reuse_ttl_s"] == 60.0
    w.clock.advance(40.0)
    sent_before = len(w.upstream.sent)
    rid = w.call("search", {"limit": 5, "q": "x"})  # the same arguments in another order
    assert len(w.upstream.sent) == sent_before  # answered without the upstream
    result = w.reply(rid)["result"]
    assert result["content"] == [
        {
            "type": "text",
            "text": "[mcpwatch: result of an identical call that finished 8 s after its deadline, 40 s ago]",
        },
        {"type": "text", "text": "found it"},
    ]
    assert result["isError"] is False
    assert result["_meta"][META_KEY] == {"request_id": "h1", "delay_s": 8.0, "age_s": 40.0, "ttl_s": 60.0}
    (reuse,) = w.sink.of("late_reuse")
    assert reuse.request_id == rid and reuse.data["from_request_id"] == "h1" and reuse.data["age_s"] == 40.0
    start, end = [e for e in w.sink.events if e.request_id == rid and e.kind in ("request_start", "request_end")]
    assert start.seq < reuse.seq < end.seq
    assert end.data["outcome"] == "ok" and end.data["late_reuse"] is True
    assert w.core.counters.late_reused == 1
    # used once: the next identical call goes upstream; other arguments or another tool never matched
    w.call("search", {"q": "x", "limit": 5})
    w.call("search", {"q": "y", "limit": 5})
    assert len(w.upstream.sent) == sent_before + 2


def test_reuse_is_off_by_default(wrapper_factory) -> None:
    w = wrapper_factory()
    up_id = w.cut("search", {"q": "x"})
    w.answer(up_id, **ok("found it"))
    sent_before = len(w.upstream.sent)
    w.call("search", {"q": "x"})
    assert len(w.upstream.sent) == sent_before + 1 and not w.sink.of("late_reuse")


def test_reuse_expires_with_its_ttl(wrapper_factory) -> None:
    w = wrapper_factory(reuse=REUSE_SEARCH)
    up_id = w.cut("search", {"q": "x"})
    w.answer(up_id, **ok("found it"))
    w.clock.advance(60.0)  # age == ttl: expired (the same boundary as tombstones)
    sent_before = len(w.upstream.sent)
    w.call("search", {"q": "x"})
    assert len(w.upstream.sent) == sent_before + 1 and not w.sink.of("late_reuse")


def test_a_state_sync_mutation_is_never_reused(wrapper_factory) -> None:
    state_sync = StateSync([{"match": "tasks.update", "invalidates": ["tasks.*"]}])
    w = wrapper_factory(reuse=(ReusePolicy("tasks.**", 60.0),), state_sync=state_sync)
    for tool in ("tasks.update", "tasks.list"):
        up_id = w.cut(tool, {"id": 1})
        w.answer(up_id, **ok(f"{tool} done"))
    lates = w.sink.of("late_result")
    assert [e.data["reuse_ttl_s"] for e in lates] == [None, 60.0]
    sent_before = len(w.upstream.sent)
    w.call("tasks.update", {"id": 1})
    w.call("tasks.update", {"id": 1})
    assert len(w.upstream.sent) == sent_before + 2
    warnings = [e.data["message"] for e in w.sink.of("warning")]
    assert warnings == [
        "late results of tasks.update are never reused: State Sync treats it as a mutation (invalidates)"
    ]  # once per tool
    w.call("tasks.list", {"id": 1})  # the read-only tool is reused
    assert len(w.upstream.sent) == sent_before + 2 and len(w.sink.of("late_reuse")) == 1


def test_another_host_connection_never_gets_the_result(wrapper_factory) -> None:
    w = wrapper_factory(reuse=REUSE_SEARCH)
    up_id = w.cut("search", {"q": "x"})
    w.answer(up_id, **ok("found it"))
    other = HostEnd("another host")
    w.core.attach_link(other)
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": {"q": "x"}}}
    sent_before = len(w.upstream.sent)
    w.core.host_frame(other, json.dumps(request).encode())
    assert len(w.upstream.sent) == sent_before + 1
    w.core.detach_link(w.host)  # its host is gone: the stored result goes with it
    assert len(w.core.late_results.reuse) == 0


def send_as(w: Wrapper, link: HostEnd, request_id: Any, method: str, params: dict[str, Any]) -> None:
    w.core.host_frame(
        link, json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode()
    )


def test_a_late_result_due_to_a_host_that_left_is_never_stored(wrapper_factory) -> None:
    """The host left between the cut and the late answer: nothing may keep it, whatever link comes next."""
    w = wrapper_factory(reuse=REUSE_SEARCH)
    up_id = w.cut("search", {"q": "x"})
    w.core.detach_link(w.host)
    w.answer(up_id, **ok("found it"))
    assert len(w.sink.of("late_result")) == 1 and len(w.core.late_results.reuse) == 0


def test_a_link_without_a_connection_of_its_own_is_never_reused(wrapper_factory) -> None:
    """A sessionless 2026-era request is its own link: even the same link asking again gets nothing stored."""
    w = wrapper_factory(reuse=REUSE_SEARCH)
    w.host.connection = None
    up_id = w.cut("search", {"q": "x"})
    w.answer(up_id, **ok("found it"))
    sent_before = len(w.upstream.sent)
    w.call("search", {"q": "x"})
    assert len(w.upstream.sent) == sent_before + 1 and not w.sink.of("late_reuse")


def test_another_host_on_the_same_connection_never_gets_the_result(wrapper_factory) -> None:
    """The key holds the host's name and version: a host that initializes anew as another one starts afresh."""
    w = wrapper_factory(reuse=REUSE_SEARCH)
    info = {"protocolVersion": "2025-06-18", "capabilities": {}}
    send_as(w, w.host, "i1", "initialize", {**info, "clientInfo": {"name": "claude-code", "version": "2"}})
    up_id = w.cut("search", {"q": "x"})
    w.answer(up_id, **ok("found it"))
    send_as(w, w.host, "i2", "initialize", {**info, "clientInfo": {"name": "cursor-vscode", "version": "1"}})
    sent_before = len(w.upstream.sent)
    w.call("search", {"q": "x"})
    assert len(w.upstream.sent) == sent_before + 1 and not w.sink.of("late_reuse")


def test_the_reuse_store_rules() -> None:
    clock = ManualClock()
    reuse = LateResultReuse([ReusePolicy("docs.*", 30.0)], clock=clock, store_max=2)
    host = ("claude-code", "2")
    assert reuse.key("c", host, "search", {}) is None  # no policy
    assert reuse.key(None, host, "docs.get", {}) is None  # no connection of its own
    key = reuse.key("c", host, "docs.get", {"b": [1, 2], "a": "é"})
    assert key == ReuseKey("c", host, "docs.get", '{"a":"é","b":[1,2]}')
    assert key == reuse.key("c", host, "docs.get", {"a": "é", "b": [1, 2]})
    assert key != reuse.key("c", ("claude-code", "3"), "docs.get", {"a": "é", "b": [1, 2]})
    assert canonical_arguments(None) == "{}" and canonical_arguments({"x": float("nan")}) is not None
    assert reuse.keep(key, {"content": [], "isError": True}, request_id="a", delay_s=1.0) is None
    assert reuse.keep(key, {"content": []}, request_id="a", delay_s=1.0) is not None
    clock.advance(29.999)
    taken = reuse.take(key)
    assert taken is not None and taken.result["content"][0]["text"] == reuse_note(1.0, 29.999)
    assert (
        reuse_note(1.0, 29.999)
        == "[mcpwatch: result of an identical call that finished 1 s after its deadline, 30 s ago]"
    )
    assert reuse.take(key) is None  # consumed
    keys = [reuse.key("c", host, "docs.get", {"n": n}) for n in range(3)]
    for k in keys:
        assert k is not None  # small arguments are matched
        reuse.keep(k, {"content": []}, request_id=None, delay_s=0.5)
    assert len(reuse) == 2 and reuse.take(keys[0]) is None  # bounded: the oldest went first
    assert reuse.key("c", host, "docs.get", {"text": "x" * 70_000}) is None  # huge arguments are never matched


def test_the_reuse_store_is_bounded_in_bytes() -> None:
    reuse = LateResultReuse([ReusePolicy("**", 30.0)], clock=ManualClock(), store_bytes_max=1000)
    keys = [reuse.key("c", (None, None), "t", {"n": n}) for n in range(4)]
    for k in keys[:3]:
        assert k is not None  # small arguments are matched
        assert reuse.keep(k, {"content": []}, request_id=None, delay_s=1.0, size_bytes=400) is not None
    assert len(reuse) == 2  # 1200 bytes > 1000: the oldest went
    last = keys[3]
    assert last is not None
    assert reuse.keep(last, {"content": []}, request_id=None, delay_s=1.0, size_bytes=1001) is None
    assert reuse.take(keys[2]) is not None and reuse.take(keys[1]) is not None and len(reuse) == 0


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"reuse": {"match": "a", "ttl_s": 1}}, "must be an array of tables"),
        ({"reuse": [{"match": "a"}]}, "late_results.reuse[0] needs ttl_s"),
        ({"reuse": [{"ttl_s": 5}]}, "late_results.reuse[0] needs match"),
        ({"reuse": [{"match": "a", "ttl_s": 0}]}, "late_results.reuse[0].ttl_s must be greater than 0"),
        ({"reuse": [{"match": "a", "ttl_s": float("inf")}]}, "late_results.reuse[0].ttl_s must be finite"),
        ({"reuse": [{"match": "a*", "ttl_s": 5}]}, "late_results.reuse[0].match 'a*' has an invalid segment"),
        ({"reuse": [{"match": "a", "ttl_s": 5, "ttl": 3}]}, "has unknown key(s): ttl"),
        ({"keep_bytes": 10}, "late_results.keep_bytes must be a whole number from 1024"),
    ],
)
def test_late_results_settings_are_validated(table: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError) as caught:
        settings_from_mapping({"late_results": table})
    assert message in str(caught.value)


def test_late_results_settings_parse() -> None:
    settings = settings_from_mapping({"late_results": {"reuse": [{"match": "docs.**", "ttl_s": 90}]}})
    assert settings.late_results.reuse == (ReusePolicy("docs.**", 90.0),)
    assert list(settings.snapshot()["late_results"]["reuse"]) == [{"match": "docs.**", "ttl_s": 90.0}]
