"""Answers on the HTTP front find their POST by request id. A host that sends a second request under an id still
waiting for its answer in the same session (JSON-RPC forbids it; a buggy host does it) used to get the two answers
crossed when the upstream answered them the other way round: each POST was sent the other call's result. Now the
second POST is refused at once with a JSON-RPC error naming why, nothing of it is forwarded, and the first call is
answered as always. In process: the front's ASGI app, real cores, an in-memory upstream, a manual clock."""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast

from test_front_scaling import _post
from test_front_splice import LONG_ORJSON, Rig, ScriptUpstream, _call, _run

from mcpwatch.wrapper.fronts.front_http import ID_IN_FLIGHT

SCRIPT = [LONG_ORJSON, b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"second"}]}}']


def _text(body: bytes) -> str:
    return cast(str, json.loads(body)["result"]["content"][0]["text"])


def test_a_second_request_under_an_id_in_flight_is_refused_and_the_first_keeps_its_answer() -> None:
    async def scenario(rig: Rig) -> tuple[Any, ...]:
        session = await rig.open()
        upstream = rig.front.pool.sessions[session].upstream
        assert isinstance(upstream, ScriptUpstream)
        first = asyncio.ensure_future(_post(rig.front, _call(7, 0, hold=True), session))
        while not upstream.held:
            await asyncio.sleep(0)
        refused = await asyncio.wait_for(_post(rig.front, _call(7, 1), session), 10)
        batch = await asyncio.wait_for(_post(rig.front, cast(Any, [_call(8, 1), _call(7, 1)]), session), 10)
        twice = await asyncio.wait_for(_post(rig.front, cast(Any, [_call(9, 1), _call(9, 1)]), session), 10)
        forwarded = list(upstream.call_ids)
        upstream.release()
        answered = await asyncio.wait_for(first, 10)
        again = await asyncio.wait_for(_post(rig.front, _call(7, 1), session), 10)  # answered: the id is free again
        return refused, batch, twice, forwarded, answered, again

    (refused, batch, twice, forwarded, answered, again), _log = _run(SCRIPT, scenario)
    for status, _headers, body in (refused, batch, twice):
        assert status == 400
        error = json.loads(body)
        assert error["error"] == {"code": -32600, "message": ID_IN_FLIGHT}
    assert [json.loads(body)["id"] for _s, _h, body in (refused, batch, twice)] == [7, 7, 9]
    assert len(forwarded) == 1  # only the first call reached the upstream
    assert answered[0] == 200 and _text(answered[2]).startswith("LLL")
    assert again[0] == 200 and _text(again[2]) == "second"
