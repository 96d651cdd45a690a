"""A plain call's answer on the HTTP front in the upstream's own bytes, only its id replaced (`framing.splice`,
`HttpSession.send_raw`): as the JSON body of its POST or as the `data:` line of an SSE event. Attacked as an
upstream (the answers of `test_plain_splice.py`: other orders, escapes, duplicates, line ends that would end an SSE
line early, odd ids) and as hosts (two sessions with the same ids, a batch, a host that leaves before its answer).
What a host receives is, for what orjson writes, exactly what the full path sends, and otherwise the upstream's
bytes with its own id; what the grammar does not prove is sent as the full path sends it; the log is the full
path's either way. In process: the front's ASGI app, real cores, in-memory upstreams, a manual clock."""

from __future__ import annotations

import asyncio
import itertools
import json
import tracemalloc
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, cast

import orjson
import pytest
from test_front_scaling import INIT, SERVER, EchoUpstream, _post
from test_plain_path import full_path_only
from test_plain_splice import CANONICAL, CANONICAL_IDS, DUPLICATE_KEYS, OTHER_ORDERS, UNPROVEN

from mcpwatch.clock import ManualClock
from mcpwatch.config import Settings
from mcpwatch.events import Event
from mcpwatch.reliability.deadline import DeadlinePolicy
from mcpwatch.testing.scheduler import ManualScheduler
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.core import pump
from mcpwatch.wrapper.core.pump import WrapperCore
from mcpwatch.wrapper.framing import frames
from mcpwatch.wrapper.fronts import front_http
from mcpwatch.wrapper.fronts.front_http import HttpFront, HttpSession
from mcpwatch.wrapper.fronts.front_sessions import SHARED_TAG, SessionPool

LONG_TEXT = b"L" * 3000
LONG = b'{"result":{"content":[{"type":"text","text":"' + LONG_TEXT + b'"}]},"jsonrpc":"2.0","id":%d}'  # the TS SDK's
LONG_ORJSON = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"' + LONG_TEXT + b'"}]}}'


class ScriptUpstream(EchoUpstream):
    """An upstream in memory answering a `tools/call` with the bytes `script[arguments.answer]` (`%d`: its id), as an
    upstream link hands a line to the core; with `arguments.ping`, a server request first (which the front sends on
    the call's POST, so as an event stream); with `arguments.hold`, only when the test releases it."""

    target = "script"

    def __init__(self, core: WrapperCore, script: list[bytes]) -> None:
        super().__init__(core)
        self.script = script
        self.held: list[bytes] = []
        self.call_ids: list[int] = []

    def send(self, message: dict[str, Any]) -> str:
        if "id" not in message or "method" not in message:
            return "sent"
        loop = asyncio.get_running_loop()
        if message["method"] != "tools/call":
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": SERVER if "init" in message["method"] else {}}
            loop.call_soon(self.core.upstream_message, answer)
            return "sent"
        arguments = message["params"].get("arguments") or {}
        self.call_ids.append(message["id"])
        if arguments.get("ping"):
            loop.call_soon(self.core.upstream_message, {"jsonrpc": "2.0", "id": "up-ping", "method": "ping"})
        line = self.script[arguments["answer"]].replace(b"%d", b"%d" % message["id"])
        if arguments.get("hold"):
            self.held.append(line)
        else:
            loop.call_soon(self.core.upstream_frame, line)
        return "sent"

    def release(self) -> None:
        for line in self.held:
            self.core.upstream_frame(line)
        self.held.clear()

    def pause_reading(self) -> None:
        """Nothing to stop reading: its answers are already in memory."""

    def resume_reading(self) -> None:
        """Nothing to resume either."""


class Rig:
    """An HTTP front whose sessions' upstreams answer from `script`; its log, and how many answers went raw."""

    def __init__(self, loop: asyncio.AbstractEventLoop, script: list[bytes]) -> None:
        settings = Settings()
        self.scheduler = scheduler = ManualScheduler(ManualClock())
        self.recorder = recorder = Recorder("manual", None, clock=scheduler.clock)
        deadline = DeadlinePolicy(settings.deadline, environ={})
        self.upstreams: list[ScriptUpstream] = []

        def make_core(tag: str) -> WrapperCore:
            return WrapperCore(
                settings=settings, deadline=deadline, recorder=recorder, loop=loop, scheduler=scheduler, front="http"
            )

        def make_upstream(core: WrapperCore) -> ScriptUpstream:
            upstream = ScriptUpstream(core, script)
            self.upstreams.append(upstream)
            return upstream

        pool = SessionPool(
            make_core=make_core,
            make_upstream=make_upstream,
            shared_core=make_core(SHARED_TAG),
            max_sessions=8,
            idle_s=600.0,
            clock=scheduler.time,
        )
        self.front = HttpFront(pool, "http://127.0.0.1:1/mcp")

    async def open(self) -> str:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}
        status, headers, _ = await _post(self.front, init)
        assert status == 200, status
        session = headers["mcp-session-id"]
        await _post(self.front, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        return session

    def log(self) -> list[tuple[Any, ...]]:
        def row(e: Event) -> tuple[Any, ...]:
            return (e.kind, e.ts, e.mono, e.seq, e.request_id, e.tool, frames.encode(e.data))

        return [row(e) for e in self.recorder.since(0, 100_000)]


@pytest.fixture(autouse=True)
def splice_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """The grammar tried on every answer here, however short (the core splices from `SPLICE_BYTES` on)."""
    monkeypatch.setattr(pump, "SPLICE_BYTES", 0)


@pytest.fixture(autouse=True)
def session_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Session ids counted, not random: two runs of the same calls log the same rows."""

    class Id:
        def __init__(self, n: int) -> None:
            self.hex = f"{n:032x}"

    monkeypatch.setattr(front_http.uuid, "uuid4", lambda: Id(next(_SESSION_NUMBERS[0])))


_SESSION_NUMBERS = [itertools.count(1)]  # started again for each front (`_run`)


@pytest.fixture
def raw_sends(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The frames the front was handed in the upstream's bytes."""
    seen: list[bytes] = []
    original = HttpSession.send_raw

    def counting(self: HttpSession, frame: bytes, message: dict[str, Any]) -> bool:
        seen.append(frame)
        return original(self, frame, message)

    monkeypatch.setattr(HttpSession, "send_raw", counting)
    return seen


def _call(host_id: Any, answer: int, **flags: Any) -> dict[str, Any]:
    arguments = {"answer": answer, **flags}
    return {"jsonrpc": "2.0", "id": host_id, "method": "tools/call", "params": {"name": "echo", "arguments": arguments}}


def _events(body: bytes) -> list[bytes]:
    """An event stream's `data:` lines, each checked to be one whole event of one line (no CR in it)."""
    assert b"\r" not in body
    events = body.split(b"\n\n")
    assert events[-1] == b""
    data = []
    for event in events[:-1]:
        kind, line = event.split(b"\n")
        assert kind == b"event: message" and line.startswith(b"data: ")
        data.append(line[len(b"data: ") :])
    return data


def _run(script: list[bytes], scenario: Callable[[Rig], Any]) -> tuple[Any, list[tuple[Any, ...]]]:
    """What `scenario` saw the hosts receive on a fresh front, and the log."""
    loop = asyncio.new_event_loop()
    _SESSION_NUMBERS[0] = itertools.count(1)
    try:
        rig = Rig(loop, script)
        seen = loop.run_until_complete(scenario(rig))
        rig.scheduler.advance(100)  # what no answer ended, its deadline does
        loop.run_until_complete(rig.front.pool.close("the test is over"))
        return seen, rig.log()
    finally:
        loop.close()


def _both(
    monkeypatch: pytest.MonkeyPatch, script: list[bytes], scenario: Callable[[Rig], Any]
) -> Iterator[tuple[Any, list[tuple[Any, ...]]]]:
    """The scenario spliced, then on the full path (the bytes the front sent before answers were spliced)."""
    yield _run(script, scenario)
    with monkeypatch.context() as patched:
        full_path_only(patched)
        yield _run(script, scenario)


def _one_by_one(host_ids: list[Any], **flags: Any) -> Callable[[Rig], Any]:
    """Each answer of the script to a call of its own on one session, one POST at a time: the bodies."""

    async def scenario(rig: Rig) -> list[tuple[str, bytes, int]]:
        session = await rig.open()
        bodies = []
        upstream = rig.front.pool.sessions[session].upstream
        assert isinstance(upstream, ScriptUpstream)
        for n, host_id in enumerate(host_ids):
            status, headers, body = await _answered(rig, _call(host_id, n, **flags), session)
            assert status == 200
            bodies.append((headers["content-type"], body, upstream.call_ids[-1]))
            rig.scheduler.advance(0.25)
        return bodies

    return scenario


async def _answered(rig: Rig, message: dict[str, Any], session: str) -> tuple[int, dict[str, str], bytes]:
    """`_post`, and when the upstream's answer does not end the call (garbage, another id), its deadline does."""
    post = asyncio.ensure_future(_post(rig.front, message, session))
    for _ in range(20):
        await asyncio.sleep(0)
    if not post.done():
        rig.scheduler.advance(3600)
    return await asyncio.wait_for(post, 10)


def test_an_answer_in_orjsons_encoding_is_the_body_the_full_path_sent(monkeypatch, raw_sends) -> None:
    (spliced, spliced_log), (full, full_log) = _both(monkeypatch, CANONICAL, _one_by_one(CANONICAL_IDS))
    assert len(raw_sends) == len(CANONICAL) - 2  # all but the two whose strings hold a colon (`splice`)
    assert spliced == full
    assert spliced_log == full_log
    assert [orjson.loads(body)["id"] for _, body, _ in spliced] == CANONICAL_IDS
    assert {kind for kind, _, _ in spliced} == {"application/json"}


def test_an_answer_in_orjsons_encoding_is_the_event_the_full_path_sent(monkeypatch, raw_sends) -> None:
    """A server request first makes the POST an event stream: the answer is its last event's data line."""
    (spliced, spliced_log), (full, full_log) = _both(monkeypatch, CANONICAL, _one_by_one(CANONICAL_IDS, ping=True))
    assert len(raw_sends) == len(CANONICAL) - 2
    assert spliced == full
    assert spliced_log == full_log
    assert {kind for kind, _, _ in spliced} == {"text/event-stream"}
    answers = [_events(body)[-1] for _, body, _ in spliced]
    assert [orjson.loads(data)["id"] for data in answers] == CANONICAL_IDS


def _upstream_bytes_with(answer: bytes, up_id: int, host_id: Any) -> bytes:
    """The upstream's answer with the host's id in place of its top-level one (the last `%d` when the result comes
    first, else the first)."""
    upstream = answer.replace(b"%d", b"%d" % up_id)
    digits = b"%d" % up_id
    at = upstream.rindex(digits) if answer.startswith(b'{"result"') else upstream.index(digits)
    return upstream[:at] + orjson.dumps(host_id) + upstream[at + len(digits) :]


@pytest.mark.parametrize("ping", [False, True], ids=["json", "sse"])
def test_an_answer_in_another_order_is_the_upstreams_bytes_with_the_hosts_id(monkeypatch, raw_sends, ping) -> None:
    host_ids: list[Any] = ["a", 2, "\u00e93", 4, "5\u2028", 6, "7", 8, 9]
    (spliced, spliced_log), (full, full_log) = _both(monkeypatch, OTHER_ORDERS, _one_by_one(host_ids, ping=ping))
    assert len(raw_sends) == len(OTHER_ORDERS)
    for (_, body, up_id), answer, host_id in zip(spliced, OTHER_ORDERS, host_ids, strict=True):
        data = _events(body)[-1] if ping else body[:-1]
        assert ping or body.endswith(b"\n")
        assert data == _upstream_bytes_with(answer, up_id, host_id)
    # what a host reads is what the full path sent it, and the log is the same
    assert [_values(body, ping) for _, body, _ in spliced] == [_values(body, ping) for _, body, _ in full]
    assert spliced_log == full_log


def _values(body: bytes, sse: bool) -> list[Any]:
    return [orjson.loads(data) for data in (_events(body) if sse else [body])]


@pytest.mark.parametrize("ping", [False, True], ids=["json", "sse"])
def test_what_the_grammar_does_not_prove_goes_as_the_full_path_sends_it(monkeypatch, raw_sends, ping) -> None:
    """Among them a CR or LF inside the frame (JSON's whitespace): in an event's data it would end the line, and
    what follows it would be read as a field of the event (`data: ` and a forged answer, or a new event)."""
    script = [*UNPROVEN, *DUPLICATE_KEYS]
    host_ids = list(range(1, len(script) + 1))
    (spliced, spliced_log), (full, full_log) = _both(monkeypatch, script, _one_by_one(host_ids, ping=ping))
    assert raw_sends == []
    assert spliced == full
    assert spliced_log == full_log
    for _, body, _ in spliced:  # each answer one line of JSON, each event one data line
        for data in _events(body) if ping else [body[:-1]]:
            assert b"\n" not in data and b"\r" not in data
            frames.decode(data)


def test_an_id_beyond_what_orjson_encodes_gets_the_full_paths_bytes(monkeypatch, raw_sends) -> None:
    host_ids: list[Any] = [2**64, "lone \ud800", -(2**63)]
    script = [LONG_ORJSON] * len(host_ids)
    (spliced, spliced_log), (full, full_log) = _both(monkeypatch, script, _one_by_one(host_ids))
    assert len(raw_sends) == 1  # the last: orjson encodes it as the full path does
    assert spliced == full
    assert spliced_log == full_log


def _same_ids_on_two_sessions(rig: Rig) -> Any:
    """Two hosts, each on its session, call with the same ids at once; the upstreams answer in the other order."""

    async def scenario() -> list[list[tuple[int, bytes]]]:
        first, second = await rig.open(), await rig.open()
        ups = [rig.front.pool.sessions[s].upstream for s in (first, second)]
        posts = []
        for host_id in (1, "x"):
            for n, session in enumerate((first, second)):
                flags = {"hold": True, "ping": host_id == "x"}
                posts.append(asyncio.ensure_future(_post(rig.front, _call(host_id, n, **flags), session)))
        while sum(len(u.held) for u in ups if isinstance(u, ScriptUpstream)) < 4:
            await asyncio.sleep(0)
        for _ in range(5):  # the server requests reach their hosts' streams
            await asyncio.sleep(0)
        for upstream in reversed(ups):
            assert isinstance(upstream, ScriptUpstream)
            upstream.held.reverse()
            upstream.release()
        answered = await asyncio.gather(*posts)
        return [[(status, body)] for status, _, body in answered]

    return scenario()


def test_hosts_on_two_sessions_with_the_same_ids_each_get_their_own_answer(monkeypatch, raw_sends) -> None:
    script = [LONG.replace(b"LLL", b"one", 1), LONG.replace(b"LLL", b"two", 1)]
    (spliced, spliced_log), (full, full_log) = _both(monkeypatch, script, _same_ids_on_two_sessions)
    assert len(raw_sends) == 4
    assert spliced_log == full_log
    bodies = [answers[0][1] for answers in spliced]
    texts = []
    for n, body in enumerate(bodies):
        frame = _events(body)[-1] if n >= 2 else body  # the "x" calls were streamed
        message = orjson.loads(frame)
        texts.append((message["id"], message["result"]["content"][0]["text"][:3]))
    assert texts == [(1, "one"), (1, "two"), ("x", "one"), ("x", "two")]
    for n, body in enumerate(bodies):  # the upstream's order: the id last
        frame = _events(body)[-1] if n >= 2 else body[:-1]
        assert frame.endswith(b',"jsonrpc":"2.0","id":%s}' % orjson.dumps(texts[n][0]))
    assert [[_values(b, n >= 2) for _, b in answers] for n, answers in enumerate(spliced)] == [
        [_values(b, n >= 2) for _, b in answers] for n, answers in enumerate(full)
    ]


def _batch(ping: bool) -> Callable[[Rig], Any]:
    async def scenario(rig: Rig) -> tuple[str, bytes]:
        session = await rig.open()
        calls = [_call(1, 0, ping=ping), _call(2, 1)]
        status, headers, body = await _post(rig.front, cast(Any, calls), session)  # a JSON array
        assert status == 200
        return headers["content-type"], body

    return scenario


def test_a_batch_answered_as_one_array_is_encoded_again_and_a_streamed_one_is_spliced(monkeypatch, raw_sends) -> None:
    """A batch's answers joined in one JSON array are its messages encoded (within the body's cap, `BatchAnswers`),
    as before; once a server request makes the POST an event stream, each answer is its own event, spliced."""
    script = [OTHER_ORDERS[0], OTHER_ORDERS[1]]
    (array, array_log), (full_array, full_array_log) = _both(monkeypatch, script, _batch(ping=False))
    assert array == full_array and array_log == full_array_log
    assert array[0] == "application/json" and isinstance(orjson.loads(array[1]), list)
    (streamed, streamed_log), (full_streamed, full_streamed_log) = _both(monkeypatch, script, _batch(ping=True))
    assert streamed_log == full_streamed_log
    answers = _events(streamed[1])[1:]
    assert answers == [
        _upstream_bytes_with(script[0], 2, 1),
        _upstream_bytes_with(script[1], 3, 2),
    ]
    assert _values(streamed[1], True) == _values(full_streamed[1], True)


def _post_then_leave(
    session: str, body: bytes
) -> tuple[dict[str, Any], Callable[[], Awaitable[dict[str, Any]]], asyncio.Event]:
    """An ASGI POST of `body` on `session` from a host that sends it whole and then leaves: the scope, the
    `receive` (the body, then `http.disconnect` once the returned event is set) and that event."""
    headers = [
        (b"host", b"127.0.0.1:1"),
        (b"content-type", b"application/json"),
        (b"mcp-session-id", session.encode()),
        (b"accept", b"application/json, text/event-stream"),
        (b"content-length", str(len(body)).encode()),
    ]
    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers, "client": ("127.0.0.1", 5)}
    parts = [{"type": "http.request", "body": body, "more_body": False}]
    gone = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if parts:
            return parts.pop()
        await gone.wait()
        return {"type": "http.disconnect"}

    return scope, receive, gone


def _host_leaves(rig: Rig) -> Any:
    """The host closes its POST before the upstream answers: the answer cannot reach it, and the log says so."""

    async def scenario() -> bytes:
        session = await rig.open()
        upstream = rig.front.pool.sessions[session].upstream
        assert isinstance(upstream, ScriptUpstream)
        scope, receive, gone = _post_then_leave(session, json.dumps(_call(1, 0, hold=True)).encode())
        sent: list[bytes] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message.get("body", b""))

        post = asyncio.ensure_future(rig.front.app(scope, receive, send))
        while not upstream.held:
            await asyncio.sleep(0)
        gone.set()
        for _ in range(5):
            await asyncio.sleep(0)
        upstream.release()
        await asyncio.wait_for(post, 5)
        return b"".join(sent)

    return scenario()


def test_a_spliced_answer_after_the_host_left_is_logged_as_the_full_path_logs_it(monkeypatch, raw_sends) -> None:
    (spliced, spliced_log), (full, full_log) = _both(monkeypatch, [LONG], _host_leaves)
    assert len(raw_sends) == 1  # handed to the front, which had no stream for it
    assert spliced == full
    assert spliced_log == full_log
    assert any(row[0] == "warning" and b"not delivered" in row[6] for row in spliced_log)


BIG_TEXT = b"B" * 32 * 1024
BIG = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"' + BIG_TEXT + b'"}]}}'
BATCH_CAP = 64 * 1024


def _batch_answered_one_by_one(held_bytes: list[int]) -> Callable[[Rig], Any]:
    """A batch of 20 calls whose 32 KiB answers arrive one at a time, under a 64 KiB body cap: what the front holds
    (traced allocations) once all but the last are in, and the body."""

    async def scenario(rig: Rig) -> tuple[str, bytes]:
        rig.front.max_body_bytes = BATCH_CAP
        session = await rig.open()
        upstream = rig.front.pool.sessions[session].upstream
        assert isinstance(upstream, ScriptUpstream)
        calls = [_call(n, 0, hold=True) for n in range(1, 21)]
        post = asyncio.ensure_future(_post(rig.front, cast(Any, calls), session))
        while len(upstream.held) < len(calls):
            await asyncio.sleep(0)
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            while len(upstream.held) > 1:
                upstream.core.upstream_frame(upstream.held.pop(0))
                for _ in range(3):
                    await asyncio.sleep(0)
            held_bytes.append(tracemalloc.get_traced_memory()[0] - before)
        finally:
            tracemalloc.stop()
        upstream.release()
        status, headers, body = await asyncio.wait_for(post, 10)
        assert status == 200
        return headers["content-type"], body

    return scenario


def test_a_batch_waiting_for_its_last_answer_holds_no_more_than_its_body_can_carry(monkeypatch) -> None:
    """A batch's answers wait outside the stream's queue (whose bytes the backpressure counts) until the last one:
    each was held whole, and with its spliced frame beside it, so a batch of many large answers held them all.
    Only what the JSON array can carry is kept now (each answer's encoding within the body's cap, an error past it),
    and the body is the one the full path sent."""
    held: list[int] = []
    (spliced, _), (full, _) = _both(monkeypatch, [BIG], _batch_answered_one_by_one(held))
    assert spliced == full and spliced[0] == "application/json"
    answers = orjson.loads(spliced[1])
    assert [a["id"] for a in answers] == list(range(1, 21))
    whole = [a for a in answers if "result" in a]
    assert len(whole) == 1 and all("max_body_mb" in a["error"]["message"] for a in answers[1:])
    # 19 answers of 32 KiB, each held parsed and as bytes, were well over a megabyte; now the array's cap, the
    # answer in hand and the one in the queue, and the log's previews (bounded by the log)
    assert all(size < BATCH_CAP + 10 * len(BIG_TEXT) for size in held), held


def test_a_batch_that_turns_into_an_event_stream_sends_what_it_gathered_first(monkeypatch, raw_sends) -> None:
    """A server request after the batch's first answer makes the POST an event stream: the answer gathered before it
    is its event first (as the array would have carried it, the full path's bytes), then the request, then the
    second answer in the upstream's bytes."""

    async def scenario(rig: Rig) -> tuple[str, bytes]:
        session = await rig.open()
        status, headers, body = await _post(rig.front, cast(Any, [_call(1, 0), _call(2, 1, ping=True)]), session)
        assert status == 200
        return headers["content-type"], body

    script = [OTHER_ORDERS[0], OTHER_ORDERS[1]]
    (streamed, streamed_log), (full, full_log) = _both(monkeypatch, script, scenario)
    assert streamed[0] == full[0] == "text/event-stream" and streamed_log == full_log
    events, full_events = _events(streamed[1]), _events(full[1])
    assert [orjson.loads(e).get("method") for e in events] == [None, "ping", None]
    assert events[:2] == full_events[:2]
    assert events[2] == _upstream_bytes_with(script[1], 3, 2)
    assert _values(streamed[1], True) == _values(full[1], True)


def _reads_nothing_then_leaves(rig: Rig) -> Any:
    """40 calls in one POST made an event stream by a server request; the host reads the stream's start and nothing
    more while the 40 answers (32 KiB each) come, then leaves: the backpressure's state then, and once it left."""

    async def scenario() -> tuple[tuple[int, bool], tuple[int, bool], bool]:
        session = await rig.open()
        upstream = rig.front.pool.sessions[session].upstream
        assert isinstance(upstream, ScriptUpstream)
        pressure = upstream.core.pressure
        pressure.high_water, pressure.low_water = 256 * 1024, 64 * 1024
        calls = [_call(1, 0, ping=True, hold=True)] + [_call(n, 0, hold=True) for n in range(2, 41)]
        scope, receive, gone = _post_then_leave(session, json.dumps(calls).encode())
        streamed: list[bytes] = []

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                streamed.append(message["body"])
                await gone.wait()  # the host reads nothing after the stream's first event

        post = asyncio.ensure_future(rig.front.app(scope, receive, send))
        while len(upstream.held) < len(calls):
            await asyncio.sleep(0)
        while not streamed:  # the server request first: the POST is an event stream
            await asyncio.sleep(0)
        assert b'"method":"ping"' in streamed[0]
        upstream.release()
        for _ in range(5):
            await asyncio.sleep(0)
        unread = (pressure.total, pressure.paused)
        gone.set()
        await asyncio.wait_for(post, 5)
        return unread, (pressure.total, pressure.paused), post.done()

    return scenario()


def test_spliced_answers_a_host_does_not_read_hold_the_upstream_until_it_leaves(monkeypatch, raw_sends) -> None:
    """Each spliced frame counts in full as unsent: above the high-water mark the upstream is not read, and a host
    that leaves lets what waited for it go (the count back to nothing, the upstream read again)."""
    (spliced, _), (full, _) = _both(monkeypatch, [BIG], _reads_nothing_then_leaves)
    assert len(raw_sends) == 40
    (unsent, paused), after, ended = spliced
    assert paused and unsent >= 39 * len(BIG_TEXT)  # the first is in the host's hands, the rest wait
    assert after == (0, False) and ended
    assert spliced == full  # the full path's frames are the same bytes here: counted alike


def test_a_batch_past_its_cap_that_turns_into_an_event_stream_keeps_the_caps_errors(monkeypatch) -> None:
    """What a batch gathered past the body's cap was never held: when a server request then makes the POST an event
    stream, those answers are the array's errors, and what comes after is streamed whole."""

    async def scenario(rig: Rig) -> tuple[str, bytes]:
        rig.front.max_body_bytes = BATCH_CAP
        session = await rig.open()
        calls = [_call(1, 0), _call(2, 0), _call(3, 0, ping=True)]
        status, headers, body = await _post(rig.front, cast(Any, calls), session)
        assert status == 200
        return headers["content-type"], body

    (streamed, _), (full, _) = _both(monkeypatch, [BIG], scenario)
    assert streamed == full and streamed[0] == "text/event-stream"
    events = [orjson.loads(e) for e in _events(streamed[1])]
    assert [e.get("id") for e in events] == [1, 2, "up-ping", 3]
    assert len(events[0]["result"]["content"][0]["text"]) == len(BIG_TEXT)
    assert "max_body_mb" in events[1]["error"]["message"] and events[2]["method"] == "ping"
    assert len(events[3]["result"]["content"][0]["text"]) == len(BIG_TEXT)
