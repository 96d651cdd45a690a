"""`mcpwatch council` over stdio: every tier, the result schema, progress text and its structured `_meta`."""

from __future__ import annotations

import re

import pytest
from council_harness import COUNCIL_META, call, consult, council, statuses

pytestmark = pytest.mark.anyio

QUICK = ["openai/gpt-4o-mini", "google/gemini-2.0-flash-001"]
BALANCED = ["openai/gpt-4o-mini", "anthropic/claude-3.5-sonnet", "google/gemini-2.0-flash-001"]
ALL = [*BALANCED, "meta-llama/llama-3.1-70b-instruct"]
STATUSES = {"pending", "ok", "timeout", "rate_limited", "auth_error", "error"}


@pytest.mark.slow
async def test_tools_are_listed_and_no_progress_is_sent_without_a_token() -> None:
    async with council("--scenario", "fast") as (client, wire):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        result, is_error = await call(client, "consult_council", {"query": "Tabs or spaces?"})
    assert not is_error and result["metadata"]["status"] == "complete"
    assert wire.progress() == []
    assert set(tools) == {
        "consult_council",
        "council_health_check",
        "council.models.list",
        "council.models.enable",
        "council.models.disable",
        "council.chairman.get",
        "council.chairman.set",
    }
    props = tools["consult_council"].input_schema["properties"]
    assert set(props) == {"query", "confidence", "include_details"}
    assert props["confidence"]["default"] == "high" and props["include_details"]["default"] is False
    assert tools["consult_council"].input_schema["required"] == ["query"]
    assert tools["council.models.enable"].input_schema["required"] == ["model"]


TIER_CASES = [
    # confidence, tier, members, total_s, per_model_s (time scale 0.5)
    ("quick", "quick", QUICK, 15.0, 10.0),
    ("balanced", "balanced", BALANCED, 45.0, 22.5),
    ("high", "high", ALL, 90.0, 45.0),
    ("reasoning", "reasoning", ALL, 300.0, 150.0),
    ("auto", "balanced", BALANCED, 45.0, 22.5),  # the slowest fast-scenario member needs `balanced`
    ("ultra", "high", ALL, 90.0, 45.0),  # unknown → high
]


@pytest.mark.slow
async def test_every_tier_runs_the_full_council() -> None:
    async with council("--scenario", "fast", "--time-scale", "0.5") as (client, _):
        for confidence, tier, members, total_s, per_model_s in TIER_CASES:
            result, is_error = await consult(client, "Which database suits a small team?", confidence=confidence)
            meta = result["metadata"]
            assert not is_error
            assert meta["tier"] == tier and meta["confidence"] == confidence
            assert list(result["model_responses"]) == members
            assert set(statuses(result).values()) == {"ok"}
            assert meta["status"] == "complete" and meta["synthesis_type"] == "full" and meta["warning"] is None
            assert meta["completed_models"] == meta["requested_models"] == len(members)
            assert meta["budget"]["total_s"] == total_s and meta["budget"]["per_model_s"] == per_model_s
            assert meta["synthesized_by"] == "chairman" and result["synthesis"].startswith("The council")
            assert sorted(r["model"] for r in result["ranking"]) == sorted(members)
            points = [r["points"] for r in result["ranking"]]
            n = len(members)
            assert points == sorted(points, reverse=True) and sum(points) == n * n * (n - 1) // 2  # Borda, n reviewers
            for entry in result["model_responses"].values():
                assert isinstance(entry["latency_ms"], int) and entry["response"]
            assert ("unknown confidence" in (meta["tier_note"] or "")) == (confidence == "ultra")


@pytest.mark.slow
async def test_answers_differ_per_model_and_per_query_and_details_are_optional() -> None:
    async with council("--scenario", "fast") as (client, _):
        first, _ = await consult(client, "Should we adopt Kubernetes?", include_details=True)
        again, _ = await consult(client, "Should we adopt Kubernetes?")
        other, _ = await consult(client, "How do vaccines train the immune system?")
    texts = [e["response"] for e in first["model_responses"].values()]
    assert len(set(texts)) == len(texts)
    assert all("Kubernetes" in t for t in texts)
    assert [e["response"] for e in again["model_responses"].values()] == texts  # deterministic from the seed
    assert not set(texts) & {e["response"] for e in other["model_responses"].values()}
    details = first["details"]
    assert sorted(details["labels"]) == ["A", "B", "C", "D"] and sorted(details["labels"].values()) == sorted(ALL)
    for review in details["reviews"].values():
        assert review["status"] == "ok" and sorted(review["ranking"]) == ["A", "B", "C", "D"]
    assert details["chairman"]["status"] == "ok"
    assert "details" not in again


WAITING = re.compile(
    r"^(✓ (?P<name>.+?)|✗ (?P<bad>.+?) (?P<status>\w+)) \((?P<k>\d+)/(?P<n>\d+)\)(?: \| waiting: (?P<w>.+))?$"
)


async def test_progress_carries_the_seed_text_and_structured_state_on_the_wire() -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with council("--scenario", "fast", "--time-scale", "0.5") as (client, wire):
        result = await client.call_tool(
            "consult_council", {"query": "Is Rust worth learning?"}, progress_callback=on_progress
        )
        token = next(m["params"]["_meta"]["progressToken"] for m in wire.outbound if m.get("method") == "tools/call")
    assert not result.is_error
    frames = wire.progress_for(token)
    assert len(frames) == len(seen) >= 12  # 1 start + 4 answers + start/4 reviews/close + start/done of stage 3
    assert [f["message"] for f in frames] == [m for _, _, m in seen]
    values = [f["progress"] for f in frames]
    assert values == sorted(values) and len(set(values)) == len(values)  # strictly increasing
    assert {f["total"] for f in frames} == {9.0}  # 2n + 1 steps
    names = {"GPT-4o mini", "Claude", "Gemini", "Llama"}
    stage1 = []
    for frame in frames:
        state = frame["_meta"][COUNCIL_META]
        assert state["tier"] == "high" and state["per_model_s"] == 45.0 and isinstance(state["per_model_s"], float)
        assert set(state["models"]) == set(ALL)
        for model in state["models"].values():
            assert model["status"] in STATUSES
            assert model["latency_ms"] is None if model["status"] == "pending" else isinstance(model["latency_ms"], int)
        if state["stage"] == 1:
            stage1.append((frame["message"], state))
    assert stage1[0][0] == "Stage 1: asking 4 models | waiting: GPT-4o mini, Claude, Gemini, Llama"
    assert all(m["status"] == "pending" for m in stage1[0][1]["models"].values())
    settled = stage1[1:]
    assert len(settled) == 4
    for k, (message, state) in enumerate(settled, 1):
        match = WAITING.match(message)
        assert match, message
        assert int(match["k"]) == k and match["n"] == "4" and match["name"] in names
        waiting = set(match["w"].split(", ")) if match["w"] else set()
        pending = {m["name"] for m in state["models"].values() if m["status"] == "pending"}
        assert waiting == pending  # the text and the structured state agree
        assert len(pending) == 4 - k
    stages = [f["_meta"][COUNCIL_META]["stage"] for f in frames]
    assert stages == sorted(stages) and set(stages) == {1, 2, 3}
    assert any(f["message"].startswith("Stage 2: ✓ ") and "ranked (1/4)" in f["message"] for f in frames)
    last = frames[-1]
    assert last["message"] == "Stage 3: ✓ synthesis by Claude" and last["progress"] == 9.0
    assert last["_meta"][COUNCIL_META]["chairman"]["status"] == "ok"
    assert set(last["_meta"][COUNCIL_META]["reviews"]) == set(ALL)
