"""Every upstream tools/call carries a progress token: the host's (mapped) or, when the host sent none, one of the
wrapper's own. Progress for an own token is logged (a basis for the advice's estimates) and never reaches the host:
no notification, and the cut call's partial answer is the one the host got before, byte for byte."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from taskrig import TaskRig, closing_loop

from mcpwatch.logview.whatif import calls_from_events
from mcpwatch.wrapper.calls import progress as progress_module


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    yield from closing_loop()


def council_progress(token: Any, stage: int, models: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "progressToken": token,
        "progress": stage,
        "total": 3,
        "message": f"stage {stage}",
        "_meta": {"dev.mcpwatch/council": {"stage": stage, "tier": "high", "models": models}},
    }


def drive(rig: TaskRig, meta: dict[str, Any] | None) -> tuple[int, list[dict[str, Any]]]:
    """A council call cut at its 2 s budget after its stage 1 answers: what the host was sent."""
    params: dict[str, Any] = {"name": "consult_council", "arguments": {"q": "x"}}
    if meta is not None:
        params["_meta"] = meta
    up_id = rig.request("h1", "tools/call", params)
    token = rig.upstream.sent[-1]["params"]["_meta"]["progressToken"]
    ok = {"status": "ok", "latency_ms": 900}
    rig.notify("notifications/progress", council_progress(token, 1, {"a": ok, "b": {"status": "pending"}}))
    rig.notify("notifications/progress", council_progress(token, 1, {"a": ok, "b": ok}))  # a changes nothing
    rig.notify("notifications/progress", council_progress(token, 2, {"a": ok, "b": ok}))
    rig.scheduler.advance(2.5)  # past the budget (host timeout 3 s − margin 1 s)
    return up_id, rig.host.sent


def test_a_host_without_a_token_gets_no_progress_and_the_log_gets_a_basis(loop) -> None:
    rig = TaskRig(loop)
    up_id, sent = drive(rig, None)
    assert rig.upstream.sent[0]["params"]["_meta"]["progressToken"] == up_id  # a token of the wrapper's own
    assert [m.get("method") for m in sent] == [None]  # only the cut answer: no progress notification
    progress = rig.events("progress")
    assert [e.data["stage"] for e in progress] == [1, 1, 2]
    statuses = [(e.model, e.data["status"]) for e in rig.events("model_status")]
    assert statuses == [("a", "ok"), ("b", "pending"), ("b", "ok")]  # each model's change once
    (call,) = calls_from_events(rig.events())
    assert (call.cut, call.stage, call.models_ok, call.tier) == (True, 1, 2, "high")  # a basis to estimate from
    assert rig.events("unknown_response") == []


def test_the_host_receives_byte_for_byte_what_it_did_without_own_tokens(loop, monkeypatch) -> None:
    with_own = drive(TaskRig(loop), None)[1]
    # the same calls as before own tokens: none sent upstream, so the server sends no progress
    monkeypatch.setattr("mcpwatch.wrapper.core.pump.own_token", lambda meta, up_id: meta)
    monkeypatch.setattr("mcpwatch.wrapper.core.plain.PlainCalls.request", lambda self, link, message: False)
    rig = TaskRig(loop)
    params = {"name": "consult_council", "arguments": {"q": "x"}}
    rig.request("h1", "tools/call", params)
    assert "progressToken" not in rig.upstream.sent[0]["params"]["_meta"]
    rig.scheduler.advance(2.5)
    assert json.dumps(with_own, sort_keys=True) == json.dumps(rig.host.sent, sort_keys=True)


def test_a_host_token_is_still_the_hosts_and_its_progress_still_reaches_it(loop) -> None:
    rig = TaskRig(loop)
    up_id, sent = drive(rig, {"progressToken": "host-7"})
    notes = [m for m in sent if m.get("method") == "notifications/progress"]
    assert len(notes) == 3 and {m["params"]["progressToken"] for m in notes} == {"host-7"}
    assert rig.upstream.sent[0]["params"]["_meta"]["progressToken"] == up_id


def test_progress_for_another_calls_token_or_a_guess_is_never_logged_as_its(loop) -> None:
    rig = TaskRig(loop)
    rig.request("h1", "tools/list", {})  # not a tools/call: no token of ours
    up_id = rig.upstream.sent[-1]["id"]
    rig.notify("notifications/progress", {"progressToken": up_id, "progress": 1})
    assert rig.events("progress") == [] and len(rig.events("unknown_response")) == 1


def test_the_logged_only_state_is_bounded(loop, monkeypatch) -> None:
    monkeypatch.setattr(progress_module, "OWN_TOKENS_KEPT", 4)
    rig = TaskRig(loop)
    for n in range(12):  # each call reports progress, then is answered
        up_id = rig.request(f"h{n}", "tools/call", {"name": "t", "arguments": {"n": n}})
        rig.notify("notifications/progress", council_progress(up_id, 1, {"a": {"status": "pending"}}))
        rig.answer(up_id, {"content": [], "isError": False})
    kept = rig.core.inbound._logged_only._models
    assert len(kept) <= 4 and len(rig.events("model_status")) == 12
