"""The tasks mcpwatch offers are bounded in every dimension a host or a log can push: unknown ids cost no log read
(a batch of 2,000 made-up ids beside a host's own `tasks/result`, 20,000 on a fresh log), a lookup whose requester
left is dropped, running tasks are capped per host and in all, finished results are held in memory by bytes, and
kept results are served only to a wrapper of the same server, from a log of this user. Counted, never timed."""

from __future__ import annotations

import asyncio
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from taskrig import Host, TaskRig
from test_tasks_offer import CALL, offering
from test_tasks_offer_owners import same_name_host

from mcpwatch.events import Event, Kind
from mcpwatch.privacy import UnsafePathError
from mcpwatch.store import EventWriter
from mcpwatch.store.db import connect_writer
from mcpwatch.store.kept_tasks import KeptRef, KeptRefs, find_kept_task, read_kept_refs
from mcpwatch.store.slow_calls import recent_call_ends
from mcpwatch.wrapper.tasks.kept_log import KeptLog
from mcpwatch.wrapper.tasks.owners import upstream_key

NOBODY = 65534


class CountingLog:
    """A log's kept tasks, in memory: counts the index reads and the reads of one task."""

    def __init__(self, kept: dict[str, dict[str, Any]], gate: threading.Event | None = None) -> None:
        self.kept = kept
        self.index_reads = 0
        self.fetches = 0
        self.gate = gate

    def read_refs(self) -> KeptRefs:
        if self.gate is not None:
            self.gate.wait(60)
        self.index_reads += 1
        return KeptRefs({task_id: KeptRef("before", task_id) for task_id in self.kept})

    def fetch(self, ref: KeptRef, task_id: str) -> dict[str, Any] | None:
        self.fetches += 1
        return self.kept.get(task_id)


def kept_end(rig: TaskRig, task_id: str, owner: str = "local|stdio|vsc", upstream: str | None = None) -> dict:
    offer = rig.core.offer
    return {
        "owner": owner,
        "upstream": offer.shared.upstream if upstream is None else upstream,
        "task": {"taskId": task_id, "status": "completed", "ttl": 60000},
        "reply": {"result": {"content": [{"type": "text", "text": "kept"}]}},
        "expires_ts": offer._wall() + 600,
    }


def with_log(rig: TaskRig, log: CountingLog) -> KeptLog:
    kept = KeptLog(log.read_refs, log.fetch, session_id="now")
    rig.core.offer.kept = kept
    kept.start(asyncio.get_event_loop())
    return kept


def run_until(loop, done, what: str) -> None:
    async def waiting() -> None:
        for _ in range(6000):  # the index read's thread may wait for a core on a loaded machine: 60 s at most
            if done():
                return
            await asyncio.sleep(0.01)
        raise AssertionError(what)

    loop.run_until_complete(waiting())


def random_ids(count: int) -> list[str]:
    return ["mcpwatch-" + secrets.token_urlsafe(18) for _ in range(count)]


def test_a_batch_of_2000_unknown_ids_costs_no_log_read_beside_a_hosts_own_result(loop) -> None:
    """Each unknown id queued a scan of a day of events: 2,000 in one POST batch pushed a host's own tasks/result
    from 0.3 s to 505 s. Now the log's index is read once and an id it lacks is answered from it alone."""
    rig = offering(loop)
    log = CountingLog({"mcpwatch-mine": kept_end(rig, "mcpwatch-mine")})
    kept = with_log(rig, log)
    batch = [
        {"jsonrpc": "2.0", "id": n, "method": "tasks/result", "params": {"taskId": task_id}}
        for n, task_id in enumerate(random_ids(2000))
    ]
    batch.insert(1000, {"jsonrpc": "2.0", "id": "own", "method": "tasks/result", "params": {"taskId": "mcpwatch-mine"}})
    rig.core.host_frame(rig.host, __import__("json").dumps(batch).encode())
    run_until(loop, lambda: len(rig.replies()) >= 2 + 2001, "the batch was never answered whole")
    answers = {r["id"]: r for r in rig.replies()}
    assert answers["own"]["result"]["content"] == [{"type": "text", "text": "kept"}]
    assert sum("error" in answers[n] for n in range(2000)) == 2000
    assert (log.index_reads, log.fetches) == (1, 1)  # the host's own task: one read; the 2,000: none
    assert (kept.queries, kept.unknown) == (1, 2000)


def test_2000_ids_on_a_fresh_log_cost_one_index_read(loop, tmp_path: Path) -> None:
    """A read of the log per id would be 2,000 reads; one read of the index answers them all."""
    rig = offering(loop)
    path = tmp_path / "events.db"
    with EventWriter(path) as writer:
        writer.start_session(name="w", upstream="u", pid=1, config={})
    fetches: list[str] = []

    def fetch(ref: KeptRef, task_id: str) -> dict[str, Any] | None:
        fetches.append(task_id)
        return find_kept_task(path, ref, task_id)

    upstream = rig.core.offer.shared.upstream
    kept = KeptLog(lambda: read_kept_refs(path, upstream, 0.0), fetch, session_id="now")
    rig.core.offer.kept = kept
    kept.start(loop)
    ids = random_ids(2_000)
    for n, task_id in enumerate(ids):
        rig.request(n, "tasks/get", {"taskId": task_id})
    run_until(loop, lambda: len(rig.replies()) >= 2 + 2_000, "the ids were never all answered")
    assert fetches == [] and kept.unknown == 2_000 and kept.problem is None
    rig.request("late", "tasks/cancel", {"taskId": ids[0]})  # the index is read: answered at once, no job
    assert rig.replies()[-1]["error"]["message"].startswith(f"no task {ids[0]!r}")


def test_a_lookup_whose_requester_left_is_dropped(loop) -> None:
    """Lookups wait for the index; a requester that has gone by then (its session ended, its sessionless POST
    closed, as an attacker's batch does) costs no read of the log."""
    gate = threading.Event()
    rig = offering(loop, connection="session a")
    log = CountingLog({"mcpwatch-mine": kept_end(rig, "mcpwatch-mine", owner="local|session z|vsc")}, gate)
    kept = with_log(rig, log)
    sessionless = Host(connection=None)
    rig.core.attach_link(sessionless)
    rig.request(1, "tasks/result", {"taskId": "mcpwatch-mine"})  # waits for the index, still being read
    rig.request(2, "tasks/result", {"taskId": "mcpwatch-mine"}, host=sessionless)
    rig.core.detach_link(rig.host)  # the host's session ended meanwhile
    rig.core.detach_link(sessionless)  # … and the sessionless POST closed
    gate.set()
    run_until(loop, lambda: log.index_reads == 1 and not rig.core.offer._lookups, "the lookup never ended")
    assert log.fetches == 0 and kept.queries == 0


def test_running_tasks_are_capped_per_host_and_in_all(loop) -> None:
    rig = offering(loop, connection="session a", max_running_per_host=3, max_running=5)
    for n in range(3):
        rig.request(n, "tools/call", CALL)
        assert "task" in rig.replies()[-1]["result"]
    rig.request(3, "tools/call", CALL)
    refused = rig.replies()[-1]["error"]
    assert refused["code"] == -32000
    assert refused["message"] == (
        "3 tasks of this host are running, the most mcpwatch runs for one host ([tasks] max_running_per_host); "
        "wait for one to end or cancel one"
    )
    other = same_name_host(rig, "session b")
    for n in range(2):
        rig.request(10 + n, "tools/call", CALL, host=other)
        assert "task" in rig.replies(other)[-1]["result"]
    rig.request(12, "tools/call", CALL, host=other)
    assert rig.replies(other)[-1]["error"]["message"].startswith("5 offered tasks are running, the most mcpwatch")
    first = rig.replies()[2]["result"]["task"]["taskId"]
    rig.scheduler.advance(1.0)
    rig.request(4, "tasks/cancel", {"taskId": first})  # one ends: room for one more
    rig.request(5, "tools/call", CALL)
    assert "task" in rig.replies()[-1]["result"]
    assert sum(rig.core.offer.shared.running.values()) == 5


def test_finished_results_of_1_mib_are_held_by_bytes(loop) -> None:
    """1,500 tasks each answering 1 MiB held 2.8 GB for their TTL; now memory holds `results_memory_mb` of results
    (the oldest are let go, then read back from the log when it kept them, else one clear error). 150 tasks, held
    by count, would hold 150 MiB against the 8 MiB allowed here: the bound is checked after each."""
    tasks = 150
    rig = offering(loop, results_memory_mb=8, max_running=2000, max_running_per_host=2000)
    big = "x" * (1024 * 1024)
    offer = rig.core.offer
    ids = []
    for n in range(tasks):
        rig.request(f"c{n}", "tools/call", CALL)
        ids.append(rig.replies()[-1]["result"]["task"]["taskId"])
        up_id = [m for m in rig.upstream.sent if m.get("method") == "tools/call"][-1]["id"]
        rig.answer(up_id, {"content": [{"type": "text", "text": big}]})
        assert offer.shared.held.total <= 8 * 1024 * 1024
    held = [t for t in offer.tasks.values() if t.reply is not None]
    assert 1 <= len(held) <= 8 and offer.shared.held.total == sum(t.reply_size for t in held)
    assert len(offer.tasks) == tasks  # what routes each is still there
    rig.request("newest", "tasks/result", {"taskId": ids[-1]})
    assert rig.replies()[-1]["result"]["content"][0]["text"] == big
    rig.request("oldest", "tasks/result", {"taskId": ids[0]})
    size = offer.tasks[ids[0]].reply_size
    assert size > len(big) and rig.replies()[-1]["error"]["message"] == (
        f"task {ids[0]} ended completed, but its result ({size} bytes) was let go: [tasks] "
        "results_memory_mb holds the newest results in memory, [late_results] keep_bytes those the log keeps"
    )


def task_end(sid: str, seq: int, task_id: str, upstream: str, owner: str = "local|stdio|vsc") -> Event:
    kept = {
        "owner": owner,
        "upstream": upstream,
        "task": {"taskId": task_id, "status": "completed", "ttl": 600000},
        "reply": {"result": {"content": [{"type": "text", "text": f"from {upstream}"}]}},
        "expires_ts": time.time() + 600,
    }
    data = {"task_id": task_id, "status": "completed", "status_message": None, "kept": kept}
    return Event(Kind.TASK_STATUS, sid, time.time(), float(seq), seq, f"r{seq}", "slow", None, data)


def shared_log(path: Path, ours: str = upstream_key("python ours.py")) -> tuple[str, str]:
    """Two wrappers of two servers wrote one kept task each to one log."""
    theirs = upstream_key("python theirs.py")
    with EventWriter(path) as writer:
        for n, (upstream, task_id) in enumerate(((ours, "mcpwatch-ours"), (theirs, "mcpwatch-theirs"))):
            sid = writer.start_session(name="w", upstream=f"u{n}", pid=1, config={})
            writer.emit(task_end(sid, 1, task_id, upstream))
        assert writer.flush(10)
    return ours, theirs


def test_kept_results_are_served_only_by_a_wrapper_of_the_same_server(loop, tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    rig = offering(loop)
    ours, _ = shared_log(path, rig.core.offer.shared.upstream)
    refs = read_kept_refs(path, ours, 0.0)
    assert list(refs.refs) == ["mcpwatch-ours"] and refs.problem is None
    kept = find_kept_task(path, refs.refs["mcpwatch-ours"], "mcpwatch-ours")
    assert kept is not None and kept["upstream"] == ours
    log = KeptLog(lambda: read_kept_refs(path, ours, 0.0), lambda r, t: find_kept_task(path, r, t), session_id="n")
    rig.core.offer.kept = log
    log.start(loop)
    rig.request(1, "tasks/result", {"taskId": "mcpwatch-theirs"})
    rig.request(2, "tasks/result", {"taskId": "mcpwatch-ours"})
    run_until(loop, lambda: len(rig.replies()) >= 4, "the polls were never answered")
    answers = {r["id"]: r for r in rig.replies()}
    assert answers[1]["error"]["message"].startswith("no task 'mcpwatch-theirs'")
    assert answers[2]["result"]["content"] == [{"type": "text", "text": f"from {ours}"}]
    assert log.queries == 1  # the other server's id: not even read


@pytest.mark.skipif(os.geteuid() != 0, reason="making another user own the log needs root (chown)")
def test_every_reader_of_the_log_refuses_one_another_user_owns(tmp_path: Path) -> None:
    """The writer refuses a log another user owns; so do the readers the wrapper acts on: whoever owns it could
    answer a host's tasks/result with anything, or have any tool offered as a task."""
    path = tmp_path / "events.db"
    ours, _ = shared_log(path)
    os.chown(path, NOBODY, NOBODY)
    refs = read_kept_refs(path, ours, 0.0)
    assert refs.refs == {} and refs.problem is not None
    assert refs.problem.startswith(f"{path}: the event log belongs to another user (uid {NOBODY})")
    assert find_kept_task(path, KeptRef("s", "r1"), "mcpwatch-ours") is None
    slow = recent_call_ends(path, "u0")
    assert slow.ends == [] and slow.problem is not None and "belongs to another user" in slow.problem
    os.chown(path, os.geteuid(), os.getegid())
    os.chmod(path, 0o666)  # writable by others: as bad
    assert "writable by other users" in (read_kept_refs(path, ours, 0.0).problem or "")


def test_without_a_log_a_result_let_go_is_said_to_be_let_go(loop) -> None:
    """`results_memory_mb = 0` holds no result; with no log (`--no-log`) nothing else keeps it either: the host is
    told so, not that its task is unknown."""
    rig = offering(loop, results_memory_mb=0)
    assert rig.core.offer.kept is None
    rig.request(1, "tools/call", CALL)
    task_id = rig.replies()[-1]["result"]["task"]["taskId"]
    up_id = [m for m in rig.upstream.sent if m.get("method") == "tools/call"][-1]["id"]
    rig.answer(up_id, {"content": [{"type": "text", "text": "small"}]})
    rig.request(2, "tasks/result", {"taskId": task_id})
    assert "was let go: [tasks] results_memory_mb" in rig.replies()[-1]["error"]["message"]
    rig.scheduler.advance(1.0)
    rig.request(3, "tasks/get", {"taskId": task_id})
    assert rig.replies()[-1]["result"]["status"] == "completed"


def test_sessionless_requests_giving_many_names_are_one_host_for_the_cap(loop) -> None:
    """A name proves nothing: sessionless requests that give a new client name each still count as one host."""
    from test_tasks_offer_extension import call

    rig = offering(loop, max_running_per_host=2)
    sessionless = Host(connection=None)
    rig.core.attach_link(sessionless)
    for n in range(2):
        rig.request(n, "tools/call", call(name=f"name-{n}"), host=sessionless)
        assert rig.replies(sessionless)[-1]["result"]["resultType"] == "task"
    rig.request(9, "tools/call", call(name="yet-another"), host=sessionless)
    assert rig.replies(sessionless)[-1]["error"]["message"].startswith("2 tasks of this host are running")


def test_an_extension_task_whose_result_was_let_go_says_so_on_tasks_get(loop) -> None:
    """The extension's tasks/get carries the result: one let go must not read as a completed task without one."""
    from test_tasks_offer_extension import call, poll

    rig = offering(loop, results_memory_mb=0)
    sessionless = Host(connection=None)
    rig.core.attach_link(sessionless)
    rig.request(1, "tools/call", call(), host=sessionless)
    task_id = rig.replies(sessionless)[-1]["result"]["taskId"]
    up_id = [m for m in rig.upstream.sent if m.get("method") == "tools/call"][-1]["id"]
    rig.answer(up_id, {"content": [{"type": "text", "text": "small"}]})
    rig.request(2, "tasks/get", poll(task_id), host=sessionless)
    assert "was let go: [tasks] results_memory_mb" in rig.replies(sessionless)[-1]["error"]["message"]


def test_the_bounds_are_settings_with_defaults_checked_on_load(tmp_path: Path) -> None:
    from mcpwatch.config import TasksSettings, load_settings
    from mcpwatch.errors import UserError

    defaults = TasksSettings()
    assert (defaults.max_running, defaults.max_running_per_host, defaults.results_memory_mb) == (256, 64, 32)
    config = tmp_path / "mcpwatch.toml"
    config.write_text("[tasks]\nmax_running = 10\nmax_running_per_host = 2\nresults_memory_mb = 0\n")
    tasks = load_settings(config).tasks
    assert (tasks.max_running, tasks.max_running_per_host, tasks.results_memory_mb) == (10, 2, 0)
    for bad in ("max_running = 0", "max_running_per_host = -1", 'results_memory_mb = "lots"'):
        config.write_text(f"[tasks]\n{bad}\n")
        with pytest.raises(UserError, match=bad.split(" ")[0]):
            load_settings(config)


@pytest.mark.skipif(os.geteuid() != 0, reason="making another user own a file needs root (chown)")
def test_a_wal_another_user_planted_beside_the_log_is_refused(tmp_path: Path) -> None:
    """The log is ours and 0600, but it lies in a directory others may write (a sticky /tmp too): another user who
    cannot read it plants `events.db-wal`, and SQLite reads the whole log through it (their own database's pages).
    A forged kept result was served that way; now every reader and the writer refuse the log in one line."""
    shared = tmp_path / "shared"
    shared.mkdir()
    path = shared / "events.db"
    ours, _ = shared_log(path)
    os.chmod(shared, 0o1777)
    evil = tmp_path / "evil"
    evil.mkdir()
    with EventWriter(evil / "events.db") as writer:  # the other user's own log, its pages still in its WAL
        sid = writer.start_session(name="w", upstream="u0", pid=1, config={})
        writer.emit(task_end(sid, 1, "mcpwatch-forged", ours))
        assert writer.flush(10)
        wal = Path(f"{path}-wal")
        wal.write_bytes(Path(f"{evil / 'events.db'}-wal").read_bytes())
    os.chown(wal, NOBODY, NOBODY)
    os.chmod(wal, 0o666)
    refs = read_kept_refs(path, ours, 0.0)
    assert "mcpwatch-forged" not in refs.refs and refs.problem is not None
    assert refs.problem.startswith(f"{shared}: the event log's directory is writable by other users")
    assert find_kept_task(path, KeptRef("s", "r1"), "mcpwatch-ours") is None
    assert "writable by other users" in (recent_call_ends(path, "u0").problem or "")
    with pytest.raises(UnsafePathError, match="writable by other users"):
        connect_writer(path)
    with pytest.raises(UnsafePathError, match="writable by other users"):
        connect_writer(shared / "new.db")
    assert not (shared / "new.db").exists()  # nothing is made there
    os.chmod(shared, 0o700)  # the directory made private: the planted WAL itself is still refused
    assert f"{wal}: the event log's WAL belongs to another user" in (read_kept_refs(path, ours, 0.0).problem or "")
    wal.unlink()
    wal.symlink_to(tmp_path / "the-users-own-file")
    assert "a symlink" in (read_kept_refs(path, ours, 0.0).problem or "")
    wal.unlink()
    assert list(read_kept_refs(path, ours, 0.0).refs) == ["mcpwatch-ours"]
