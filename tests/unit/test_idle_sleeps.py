"""An idle wrapper sleeps: nothing in it wakes on a timer while no host calls and nothing is owed. Counted, never
timed: the log writer's waits (through its wake event), the HTTP servers' timers on their loop (uvicorn's 10 Hz
tick is gone) and the core's timers on the manual scheduler once its calls are over."""

from __future__ import annotations

import asyncio
import threading
import urllib.request
from email.utils import formatdate
from pathlib import Path

from taskrig import TaskRig, spin
from writer_wake import CountingWake, warning

from mcpwatch.clock import ManualClock
from mcpwatch.events import Event, Kind
from mcpwatch.httpserve.asgi import quiet_server, respond, stop_server
from mcpwatch.httpserve.bounds import ConnectionLimits
from mcpwatch.ports import free_port
from mcpwatch.store import EventReader, EventWriter


def test_the_log_writer_waits_with_no_timeout_once_everything_is_written(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(EventWriter, "wake_factory", CountingWake)
    CountingWake.made.clear()
    writer = EventWriter(tmp_path / "events.db", clock=ManualClock())
    (wake,) = CountingWake.made
    try:
        sid = writer.start_session(name="idle", upstream="stdio: x", pid=1, config={})
        for seq in range(1, 4):
            writer.emit(warning(sid, seq))
        assert writer.flush(30)
        assert wake.asleep.wait(30), "the writer never went to sleep: it keeps waking on its flush interval"
        asleep_at = len(wake.timeouts)
        assert wake.timeouts[-1] is None
        # asleep, it takes no timed wait at all; the next event wakes it, it writes, and it sleeps again
        writer.emit(warning(sid, 4))
        assert writer.flush(30)
        assert wake.asleep.wait(30)
        timed = [t for t in wake.timeouts[asleep_at:] if t is not None]
        assert timed == [writer.flush_interval] * len(timed) and 1 <= len(timed) <= 2  # the batch, then sleep
    finally:
        writer.close()
    with EventReader(tmp_path / "events.db") as reader:
        assert [e.data["message"] for e in reader.events(sid)] == ["m1", "m2", "m3", "m4"]


async def _ok(scope, receive, send) -> None:
    if scope["type"] == "http":
        await respond(send, 200, b"ok", b"text/plain")


def test_an_idle_http_server_schedules_no_timer_and_still_stops_at_once() -> None:
    port = free_port()

    async def scenario() -> tuple[list[asyncio.TimerHandle], str | None]:
        loop = asyncio.get_running_loop()
        server = quiet_server(_ok, "127.0.0.1", port, ConnectionLimits())
        task = asyncio.ensure_future(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        date = await asyncio.to_thread(
            lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).headers.get("date")
        )
        for _ in range(50):  # the answered connection closes; let its callbacks run
            await asyncio.sleep(0)
        timers = [h for h in loop._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
        await stop_server(server, task)
        assert task.done()
        return timers, date

    timers, date = asyncio.run(scenario())
    # uvicorn's own loop slept 0.1 s between ticks: a timer always pending. urllib closed its connection (it asks
    # for `Connection: close`), so nothing is owed and nothing is scheduled
    assert timers == [], timers
    assert date is not None and date.endswith(" GMT")  # the Date header is still made, per request


def test_the_core_holds_no_timer_once_its_calls_are_over(loop) -> None:
    rig = TaskRig(loop)
    up_id = rig.request(1, "tools/call", {"name": "echo", "arguments": {}})
    assert rig.scheduler.pending >= 1  # the call's deadline (and its heartbeat) while it runs
    rig.answer(up_id, {"content": []})
    spin(loop)
    # at most the deadline sweep's one timer, at the deadline the call had: it wakes once, finds nothing, arms nothing
    assert rig.scheduler.pending <= 1
    assert rig.scheduler.advance(3600.0) <= 1
    assert rig.scheduler.pending == 0


def test_the_otlp_export_thread_sleeps_until_an_event_comes(monkeypatch) -> None:
    from mcpwatch.otel.config import OtelTarget
    from mcpwatch.otel.exporter import OtelSink

    monkeypatch.setattr(OtelSink, "wake_factory", CountingWake)
    CountingWake.made.clear()
    sink = OtelSink(OtelTarget(traces_url=None, metrics_url=None))
    (wake,) = CountingWake.made
    try:
        assert wake.asleep.wait(30), "the export thread polls while nothing is queued"
        before = sink.wakeups
        assert before == 0  # asleep from the start: not one round yet
        sink.emit(Event(Kind.SESSION_START, "s", 1e9, 0.0, 1, None, None, None, {"name": "w"}))
        while len(wake.timeouts) < 2 or not wake.asleep.is_set():  # woken, one gathering round, asleep again
            wake.asleep.wait(30)
        assert sink.wakeups == 1 and wake.timeouts == [None, None]
    finally:
        sink.close()


def test_the_date_header_is_the_second_the_answer_is_sent_not_when_its_request_came() -> None:
    """Without uvicorn's tick the Date header is made by mcpwatch: a long call's answer, sent 30 s after its
    request arrived, is dated when it is sent (RFC 9110: the time the message was made), as uvicorn's tick dated
    it, and a response sent in a later second than the last one made is never dated with the old second."""
    port, now = free_port(), [1_000_000_000.25]
    arrived = threading.Event()
    answer: asyncio.Event | None = None  # made on the server's loop, in scenario()

    async def slow(scope, receive, send) -> None:
        if scope["type"] == "http":
            arrived.set()
            assert answer is not None  # made before the server started
            await answer.wait()
            await respond(send, 200, b"ok", b"text/plain")

    async def scenario() -> list[str | None]:
        nonlocal answer
        answer = asyncio.Event()
        server = quiet_server(slow, "127.0.0.1", port, ConnectionLimits(wall_clock=lambda: now[0]))
        task = asyncio.ensure_future(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        get = asyncio.to_thread(
            lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30).headers.get("date")
        )
        first = asyncio.ensure_future(get)
        await asyncio.to_thread(arrived.wait, 30)
        now[0] += 30.0  # the call took 30 s
        answer.set()
        dates = [await first]
        now[0] += 1.0  # a second later, a quick one
        dates.append(
            await asyncio.to_thread(
                lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30).headers.get("date")
            )
        )
        await stop_server(server, task)
        return dates

    assert asyncio.run(scenario()) == [formatdate(1_000_000_030, usegmt=True), formatdate(1_000_000_031, usegmt=True)]


def test_a_malformed_request_is_answered_with_the_date_of_now_not_of_the_last_answer() -> None:
    """uvicorn answers a request it cannot parse with a 400 of its own, from the server's default headers: those
    were dated only when a request arrived, so a 400 an hour after the last answer said it was an hour old."""
    port, now = free_port(), [1_000_000_000.0]

    async def scenario() -> tuple[str | None, bytes]:
        server = quiet_server(_ok, "127.0.0.1", port, ConnectionLimits(wall_clock=lambda: now[0]))
        task = asyncio.ensure_future(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        first = await asyncio.to_thread(
            lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30).headers.get("date")
        )
        now[0] += 3600.0
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n")
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 30)
        writer.close()
        await stop_server(server, task)
        return first, answer

    first, answer = asyncio.run(scenario())
    assert first == formatdate(1_000_000_000, usegmt=True)
    assert answer.startswith(b"HTTP/1.1 400"), answer[:100]
    assert f"\r\ndate: {formatdate(1_000_003_600, usegmt=True)}\r\n".lower().encode() in answer.lower()
