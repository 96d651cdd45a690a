"""`[tasks] offer_slow`: the tools the log shows outrunning the budget are offered as tasks, each with its basis;
a tool never cut is not, the setting off offers nothing new, and a hostile or huge log costs a bounded read."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from taskrig import Host, TaskRig

from mcpwatch.config import TasksSettings, load_settings
from mcpwatch.errors import UserError
from mcpwatch.events import Event, Kind, typed_dict_problems
from mcpwatch.operator import OfferedSlowStatus
from mcpwatch.store import EventWriter
from mcpwatch.store.slow_calls import CallEnd, CallEnds, recent_call_ends
from mcpwatch.terminal import CONTROL
from mcpwatch.wrapper.tasks.slow_tools import SlowTools, offered_text, tell_hosts

UPSTREAM = "python -m mcpwatch.bench.noop_server"
TASK_HOST: dict[str, Any] = {"tasks": {"list": {}, "cancel": {}, "requests": {}}}
TOOLS = [{"name": name, "inputSchema": {"type": "object"}} for name in ("slow", "echo", "quick")]


def end(sid: str, seq: int, tool: str, outcome: str, duration_s: float, method: str = "tools/call") -> Event:
    data = {"outcome": outcome, "duration_s": duration_s, "method": method}
    return Event(Kind.REQUEST_END, sid, 1_700_000_000.0 + seq, float(seq), seq, str(seq), tool, None, data)


def late(sid: str, seq: int, tool: str, duration_s: float) -> Event:
    data = {"up_id": seq, "reason": "deadline", "cut_after_s": 2.0, "delay_s": duration_s - 2.0}
    data |= {"duration_s": duration_s, "outcome": "ok", "size_bytes": 10, "reuse_ttl_s": None}
    return Event(Kind.LATE_RESULT, sid, 1_700_000_000.0 + seq, float(seq), seq, str(seq), tool, None, data)


def write_log(path: Path, sessions: list[list[tuple[Any, ...]]], upstream: str = UPSTREAM) -> list[str]:
    """One session per list of (maker, tool, …) rows, in order; their ids."""
    ids = []
    with EventWriter(path) as writer:
        for rows in sessions:
            sid = writer.start_session(name="w", upstream=upstream, pid=1, config={})
            for seq, (maker, *args) in enumerate(rows, start=1):
                writer.emit(maker(sid, seq, *args))
            ids.append(sid)
        assert writer.flush(10)
    return ids


def slow_tools(budget_s: float | None = 2.0) -> tuple[SlowTools, list[str]]:
    said: list[str] = []
    tools = SlowTools(lambda tool: budget_s, on_offered=lambda new: said.extend(offered_text(*each) for each in new))
    return tools, said


def listed_support(loop, slow: SlowTools | None, **tasks: Any) -> dict[str, str | None]:
    """What a host with tasks is told of each tool's task support, through the wrapper's core."""
    rig = TaskRig(loop, tasks=TasksSettings(**tasks))
    if slow is not None:
        rig.core.offer.also_offered = slow.offers
    init = {"protocolVersion": "2025-11-25", "capabilities": TASK_HOST, "clientInfo": {"name": "vsc"}}
    rig.answer(rig.request(0, "initialize", init), {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}})
    rig.answer(rig.request("l", "tools/list", {}), {"tools": TOOLS})
    listed = rig.replies()[-1]["result"]["tools"]
    return {tool["name"]: (tool.get("execution") or {}).get("taskSupport") for tool in listed}


def test_a_tool_the_log_shows_cut_at_the_deadline_is_offered_with_its_basis(loop, tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    cuts = [(end, "slow", "deadline", 2.0), (end, "quick", "ok", 0.1), (end, "echo", "tool_error", 0.2)]
    write_log(path, [cuts, [(end, "slow", "deadline", 2.0), (end, "slow", "deadline", 2.0)]])
    slow, said = slow_tools()
    slow.load(recent_call_ends(path, UPSTREAM))
    assert listed_support(loop, slow) == {"slow": "optional", "echo": None, "quick": None}
    assert slow.basis("slow") == "seen cut at the deadline 3× in the log"
    assert said == [
        "[tasks] offer_slow: slow is offered as a task to hosts with tasks: seen cut at the deadline 3× in the log"
    ]
    status = slow.describe()
    assert typed_dict_problems(OfferedSlowStatus, status, "offered_slow") == []
    assert status["tools"] == [{"tool": "slow", "basis": "seen cut at the deadline 3× in the log"}]
    assert (status["log_sessions_read"], status["log_events_read"], status["log_problem"]) == (2, 5, None)


def test_a_late_result_and_a_run_past_the_budget_count_with_their_true_duration(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    rows = [(end, "slow", "deadline", 2.0), (late, "slow", 6.5), (end, "echo", "ok", 5.0), (end, "quick", "ok", 1.9)]
    write_log(path, [rows])
    slow, _ = slow_tools(budget_s=2.0)
    slow.load(recent_call_ends(path, UPSTREAM))
    assert slow.basis("slow") == "seen cut at the deadline 1×, finished late after a cut 1× in the log (longest 6.5 s)"
    assert slow.basis("echo") == "seen ran past the budget 1× in the log (longest 5.0 s, budget 2 s)"
    assert not slow.offers("quick")  # 1.9 s under a 2 s budget
    unbounded, _ = slow_tools(budget_s=None)  # no budget now: a long run outran nothing
    unbounded.load(recent_call_ends(path, UPSTREAM))
    assert not unbounded.offers("echo") and unbounded.offers("slow")


def test_a_tool_never_cut_and_another_upstreams_cuts_offer_nothing(loop, tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    write_log(path, [[(end, "slow", "ok", 0.5), (end, "echo", "cancelled", 9.0)]])
    write_log(path, [[(end, "echo", "deadline", 2.0)]], upstream="some other server")
    write_log(path, [[(end, "quick", "deadline", 2.0, "resources/read")]])  # not a tool call
    slow, said = slow_tools(budget_s=None)
    slow.load(recent_call_ends(path, UPSTREAM))
    assert listed_support(loop, slow) == {"slow": None, "echo": None, "quick": None}
    assert said == [] and slow.describe()["tools"] == []


def test_the_setting_off_offers_nothing_new(loop, tmp_path: Path) -> None:
    assert TasksSettings().offer_slow is False
    assert listed_support(loop, None) == {"slow": None, "echo": None, "quick": None}
    assert listed_support(loop, None, offer=("echo",)) == {"slow": None, "echo": "optional", "quick": None}
    config = tmp_path / "mcpwatch.toml"
    config.write_text("[tasks]\noffer_slow = true\n")
    assert load_settings(config).tasks.offer_slow is True
    config.write_text('[tasks]\noffer_slow = "yes"\n')
    with pytest.raises(UserError, match="offer_slow"):
        load_settings(config)


def test_this_sessions_cuts_are_learnt_live(loop) -> None:
    slow, said = slow_tools(budget_s=2.0)
    slow.emit(end("s", 1, "echo", "ok", 0.3))
    slow.emit(end("s", 2, "slow", "deadline", 2.0, method="tasks/get"))  # not a tool call
    slow.emit(Event(Kind.WARNING, "s", 1.0, 1.0, 3, data={"message": "x"}))
    assert listed_support(loop, slow)["slow"] is None and said == []
    slow.emit(end("s", 4, "slow", "deadline", 2.0))
    assert listed_support(loop, slow)["slow"] == "optional"
    slow.emit(late("s", 5, "slow", 4.0))
    assert said == [offered_text("slow", "seen cut at the deadline 1× in this session")]  # said once
    assert (
        slow.basis("slow")
        == "seen cut at the deadline 1×, finished late after a cut 1× in this session (longest 4.0 s)"
    )


def test_a_huge_log_is_read_only_to_its_bound(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    old_cut = [(end, "slow", "deadline", 2.0)]
    write_log(path, [old_cut + [(end, "quick", "ok", 0.1)] * 3000])  # the cut is older than the newest 1000 events
    write_log(path, [[(end, "echo", "deadline", 2.0)]] + [[(end, "quick", "ok", 0.1)]] * 5)  # then 5 newer sessions
    read = recent_call_ends(path, UPSTREAM, max_sessions=5, max_events=1000)
    assert (read.sessions, read.events, read.problem) == (5, 5, None)  # the 5 newest sessions: no cut among them
    read = recent_call_ends(path, UPSTREAM, max_sessions=10, max_events=1000)
    assert read.sessions == 7 and read.events == 1000  # every session, but only the newest 1000 events in all
    assert {e.tool for e in read.ends if e.outcome == "deadline"} == {"echo"}  # the old cut is beyond the bound


def test_a_hostile_log_costs_bounded_memory_and_says_what_it_could_not_read(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    many = [(end, f"tool-{i}", "deadline", 2.0) for i in range(30)] + [(end, "x" * 100_000, "deadline", 2.0)]
    (sid,) = write_log(path, [many])
    with sqlite3.connect(path) as conn:  # a damaged row: not JSON
        row = (sid, 99, 1.0, 1.0, "request_end", "slow", "{not json")
        conn.execute("INSERT INTO events (session_id, seq, ts, mono, kind, tool, data) VALUES (?,?,?,?,?,?,?)", row)
    slow = SlowTools(lambda tool: 2.0, max_tools=20)
    read = recent_call_ends(path, UPSTREAM)
    assert max(len(e.tool) for e in read.ends) == 513  # a huge name is read only far enough to tell it is too long
    slow.load(read)
    assert len(slow.describe()["tools"]) == 20 and slow.describe()["untracked"] == 11  # the rest, and the huge name
    assert not slow.offers("slow")  # a damaged row says nothing
    missing = recent_call_ends(tmp_path / "none.db", UPSTREAM)
    assert missing.ends == [] and "no such event log" in (missing.problem or "")
    (tmp_path / "foreign.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    assert recent_call_ends(tmp_path / "foreign.db", UPSTREAM).problem


def test_a_tool_name_with_escape_sequences_is_safe_where_it_is_said() -> None:
    hostile = "\x1b]0;owned\x07slow\x1b[2J\u202e"
    slow, said = slow_tools()
    slow.emit(end("s", 1, hostile, "deadline", 2.0))
    assert slow.offers(hostile)  # the host lists it by its own name
    assert len(said) == 1 and not CONTROL.search(said[0])
    assert "\\x1b]0;owned\\x07slow\\x1b[2J\\u202e is offered" in said[0]
    assert slow.describe()["tools"][0]["tool"] == hostile  # status is JSON: the name as it is, escaped by JSON


def test_the_log_is_read_in_a_thread_and_its_own_session_left_to_live_learning(loop, tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    _, own = write_log(path, [[(end, "slow", "deadline", 2.0)], [(end, "echo", "deadline", 2.0)]])
    slow, _ = slow_tools()
    assert slow.describe()["log_read"] == "none"
    read = loop.run_in_executor(None, lambda: recent_call_ends(path, UPSTREAM, exclude=own))
    slow.reading(read)
    assert slow.describe()["log_read"] == "reading" and not slow.offers("slow")
    loop.run_until_complete(read)
    loop.run_until_complete(asyncio.sleep(0))  # its done callback
    assert slow.offers("slow") and not slow.offers("echo")  # the own session's cut is learnt live, not read twice
    assert (slow.describe()["log_read"], slow.describe()["log_sessions_read"]) == ("read", 1)

    failing, _ = slow_tools()
    broken = loop.create_future()
    failing.reading(broken)
    broken.set_exception(OSError("disk gone"))
    loop.run_until_complete(asyncio.sleep(0))
    assert failing.describe()["log_problem"] == "the log could not be read: disk gone"
    stopped, _ = slow_tools()
    job = loop.create_future()
    stopped.reading(job)
    job.cancel()
    loop.run_until_complete(asyncio.sleep(0))
    assert stopped.describe()["log_read"] == "reading" and stopped.describe()["tools"] == []


def test_hosts_with_tasks_are_told_the_list_changed_only_where_the_upstream_declared_it(loop) -> None:
    rig = TaskRig(loop, tasks=TasksSettings(offer_slow=True))
    init = {"protocolVersion": "2025-11-25", "capabilities": TASK_HOST, "clientInfo": {"name": "vsc"}}
    declared = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": True}}}
    rig.answer(rig.request(0, "initialize", init), declared)
    plain = Host()
    rig.core.attach_link(plain)
    rig.core.bridge.host_initialized(plain, {})  # a host without tasks: nothing to re-list for
    assert rig.core.session.init_result is not None  # the upstream answered initialize above
    capabilities = rig.core.session.init_result["capabilities"]
    assert tell_hosts(rig.core.links, rig.core.bridge.host_has_tasks, capabilities) == 1
    assert rig.host.sent[-1] == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    assert plain.sent == []
    assert tell_hosts(rig.core.links, rig.core.bridge.host_has_tasks, {"tools": {}}) == 0  # not declared: never
    assert tell_hosts(rig.core.links, rig.core.bridge.host_has_tasks, None) == 0
    assert rig.host.sent.count({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}) == 1


def cancelled_late(sid: str, seq: int, tool: str, duration_s: float) -> Event:
    event = late(sid, seq, tool, duration_s)
    event.data["reason"] = "host_cancel"
    return event


def test_a_late_result_of_a_call_the_host_cancelled_is_no_sign_of_slowness(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    write_log(path, [[(cancelled_late, "echo", 9.0), (late, "slow", 9.0)]])
    slow, _ = slow_tools()
    slow.load(recent_call_ends(path, UPSTREAM))
    slow.emit(cancelled_late("s", 1, "quick", 9.0))
    assert slow.offers("slow") and not slow.offers("echo") and not slow.offers("quick")


def test_a_log_of_many_other_upstreams_is_looked_through_only_to_its_newest_sessions(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    write_log(path, [[(end, "slow", "deadline", 2.0)]])
    write_log(path, [[]] * 30, upstream="another server")
    assert recent_call_ends(path, UPSTREAM, scanned_sessions=30).sessions == 0  # beyond the 30 newest
    assert recent_call_ends(path, UPSTREAM, scanned_sessions=31).sessions == 1


def test_the_host_is_served_after_the_read_or_after_its_wait_whichever_comes_first(loop) -> None:
    slow, _ = slow_tools()
    loop.run_until_complete(slow.read_or_wait(30))  # nothing being read: no wait
    job = loop.create_future()
    slow.reading(job)
    read = CallEnds([CallEnd("slow", "deadline", 2.0, late=False)], 1, 1)
    loop.call_soon(job.set_result, read)
    loop.run_until_complete(slow.read_or_wait(30))
    assert slow.offers("slow")  # the first tools/list will show it
    stuck, _ = slow_tools()
    stuck.reading(loop.create_future())  # a read that never ends (a disk that hangs)
    loop.run_until_complete(stuck.read_or_wait(0.01))
    assert stuck.describe()["log_read"] == "reading"  # served anyway; offered when (if) the read ends


def cancel(sid: str, seq: int, tool: str, duration_s: float) -> Event:
    data = {"outcome": "cancelled", "duration_s": duration_s, "method": "tools/call", "error": "host_cancel"}
    return Event(Kind.REQUEST_END, sid, 1_700_000_000.0 + seq, float(seq), seq, str(seq), tool, None, data)


def test_a_hosts_cancel_after_a_long_run_is_a_sign_of_slowness(loop, tmp_path: Path) -> None:
    """A host that gives up on a call at its own timeout says what a cut says; a quick cancel (a user changing
    their mind) says nothing. Half the budget the call would get now, or CANCEL_MIN_S without one."""
    path = tmp_path / "events.db"
    write_log(path, [[(cancel, "slow", 1.5), (cancel, "quick", 0.4), (end, "echo", "ok", 0.1)]])
    slow, said = slow_tools(budget_s=2.0)
    slow.load(recent_call_ends(path, UPSTREAM))
    assert listed_support(loop, slow) == {"slow": "optional", "echo": None, "quick": None}
    assert said == [offered_text("slow", "seen cancelled by the host after a long run 1× in the log")]
    assert slow.basis("slow") == "seen cancelled by the host after a long run 1× in the log"
    live, _ = slow_tools(budget_s=None)
    live.emit(cancel("s", 1, "quick", 9.9))
    assert not live.offers("quick")
    live.emit(cancel("s", 2, "quick", 10.0))
    assert live.basis("quick") == "seen cancelled by the host after a long run 1× in this session"


def test_one_read_of_the_log_is_said_in_one_line_however_many_tools_it_offers(tmp_path: Path) -> None:
    from mcpwatch.wrapper.tasks.slow_tools import offered_line

    path = tmp_path / "events.db"
    write_log(path, [[(end, f"tool{n:02}", "deadline", 2.0) for n in range(12)]])
    lines: list[str] = []
    problems: list[str] = []
    slow = SlowTools(
        lambda tool: 2.0, on_offered=lambda new: lines.append(offered_line(new)), on_problem=problems.append
    )
    slow.load(recent_call_ends(path, UPSTREAM))
    basis = "seen cut at the deadline 1× in the log"
    named = "; ".join(f"tool{n:02} ({basis})" for n in range(5))
    assert lines == [
        f"[tasks] offer_slow: 12 tools are offered as tasks to hosts with tasks: {named}; and 7 more "
        "(`mcpwatch status` lists each)"
    ]
    assert problems == [] and offered_line([("slow", basis)]) == offered_text("slow", basis)
    unread = SlowTools(
        lambda tool: 2.0, on_offered=lambda new: lines.append(offered_line(new)), on_problem=problems.append
    )
    unread.load(recent_call_ends(tmp_path / "missing.db", UPSTREAM))
    assert problems == [
        f"[tasks] offer_slow: the log was not read ({tmp_path / 'missing.db'}: no such event log); tools are "
        "offered as this session's calls show"
    ]
