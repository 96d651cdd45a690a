"""The `openai` backend against a local OpenAI-compatible server: classification, retries, and end to end."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import anyio
import pytest
from council_harness import call, consult, council, statuses
from fake_openai import FakeOpenAI

from mcpwatch.council.backends.base import BackendError, CallRequest
from mcpwatch.council.backends.openai import OpenAIBackend, parse_retry_after
from mcpwatch.council.calls import AuthGate, CallOutcome, RetryPolicy, call_model

pytestmark = pytest.mark.anyio


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(slow_s=1.0) as server:
        yield server


def request(model: str, timeout_s: float = 5.0) -> CallRequest:
    return CallRequest(
        model=model, messages=[{"role": "user", "content": "hi"}], purpose="answer", query="hi", timeout_s=timeout_s
    )


async def failure(backend: OpenAIBackend, model: str, timeout_s: float = 5.0) -> BackendError:
    with pytest.raises(BackendError) as caught:
        await backend.complete(request(model, timeout_s))
    return caught.value


async def test_classifies_every_http_outcome(fake: FakeOpenAI) -> None:
    backend = OpenAIBackend(base_url=fake.base_url, api_key="test-key")
    try:
        assert await backend.complete(request("lab/ok-1")) == "lab/ok-1 says: it depends on the constraints."
        sent = fake.requests[-1]
        assert sent["body"]["model"] == "lab/ok-1" and sent["body"]["messages"][0]["content"] == "hi"
        assert sent["headers"]["Authorization"] == "Bearer test-key"
        assert sent["headers"]["X-Title"].startswith("mcpwatch council ")

        limited = await failure(backend, "lab/ratelimit-once-a")
        assert (limited.kind, limited.status, limited.retry_after_s) == ("rate_limit", 429, 2.0)
        dated = await failure(backend, "lab/ratelimit-date")
        assert dated.kind == "rate_limit" and 25 <= (dated.retry_after_s or 0) <= 31
        bare = await failure(backend, "lab/ratelimit-bare")
        assert bare.kind == "rate_limit" and bare.retry_after_s is None
        for model, kind, status in [
            ("lab/unauthorized", "auth", 401),
            ("lab/forbidden", "auth", 403),
            ("lab/broken", "server", 500),
            ("lab/empty", "bad_response", 200),
            ("lab/error-in-200", "rate_limit", 429),
        ]:
            error = await failure(backend, model)
            assert (error.kind, error.status) == (kind, status), model
        assert "not available to your key" in str(await failure(backend, "lab/forbidden"))
        slow = await failure(backend, "lab/slow-1", timeout_s=0.2)
        assert slow.kind == "timeout"  # had it waited for the slow reply, the key check would have answered
        wrong_key = OpenAIBackend(base_url=fake.base_url, api_key="wrong")
        assert (await failure(wrong_key, "lab/ok-1")).status == 401
        await wrong_key.aclose()
    finally:
        await backend.aclose()


async def test_connection_errors_are_network_failures_not_timeouts() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once the socket closes
    backend = OpenAIBackend(base_url=f"http://127.0.0.1:{port}/v1", api_key="test-key")
    try:
        error = await failure(backend, "lab/ok-1")
        assert error.kind == "network" and "ConnectError" in str(error)
        outcome = await call_model(
            backend,
            CallOutcome(model="lab/ok-1"),
            messages=[{"role": "user", "content": "hi"}],
            purpose="answer",
            query="hi",
            window_end=anyio.current_time() + 5,
            policy=RetryPolicy(time_scale=0.01),
            gate=AuthGate(),
        )
        assert (outcome.status, outcome.error_type, outcome.attempts) == ("error", "network", 2)
    finally:
        await backend.aclose()


async def test_missing_key_is_an_auth_failure_without_a_request(fake: FakeOpenAI) -> None:
    backend = OpenAIBackend(base_url=fake.base_url, api_key=None)
    error = await failure(backend, "lab/ok-1")
    assert (error.kind, error.status) == ("auth", None) and fake.requests == []
    assert str(error) == "no API key is configured (set OPENROUTER_API_KEY)"


async def test_retry_after_is_honoured_then_the_call_succeeds(fake: FakeOpenAI) -> None:
    backend = OpenAIBackend(base_url=fake.base_url, api_key="test-key", time_scale=0.05)
    outcome = CallOutcome(model="lab/ratelimit-once-b")
    started = anyio.current_time()
    try:
        await call_model(
            backend,
            outcome,
            messages=[{"role": "user", "content": "hi"}],
            purpose="answer",
            query="hi",
            window_end=started + 5,
            policy=RetryPolicy(time_scale=0.05),
            gate=AuthGate(),
        )
    finally:
        await backend.aclose()
    assert (outcome.status, outcome.attempts) == ("ok", 2)
    assert anyio.current_time() - started >= 0.1  # Retry-After 2 s × time scale 0.05
    assert fake.counts["lab/ratelimit-once-b"] == 2


def test_retry_after_parsing() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after("99999") == 3600.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None and parse_retry_after("") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0


MODELS = "lab/ok-alpha,lab/ratelimit-once-c,lab/forbidden,lab/slow-1"


@pytest.mark.slow
async def test_council_end_to_end_over_the_openai_backend(fake: FakeOpenAI) -> None:
    env = {"OPENROUTER_API_KEY": "test-key", "LLM_COUNCIL_MODELS": MODELS, "LLM_COUNCIL_BASE_URL": fake.base_url}
    # time scale 0.01: high allows 0.9 s per model, so the 1 s slow model times out
    async with council("--backend", "openai", "--time-scale", "0.01", env=env) as (client, _):
        health, _ = await call(client, "council_health_check")
        result, is_error = await consult(client, "Which cloud region should we use?", include_details=True)
    assert health["backend"] == "openai" and health["scenario"] is None
    assert health["api_key_configured"] is True and health["models"] == MODELS.split(",")
    assert health["api_reachable"] is True and isinstance(health["latency_ms"], int) and health["ready"] is True
    assert health["probe_model"] == "lab/ok-alpha" and health["chairman_model"] == "lab/ok-alpha"
    assert not is_error
    assert statuses(result) == {
        "lab/ok-alpha": "ok",
        "lab/ratelimit-once-c": "ok",
        "lab/forbidden": "auth_error",
        "lab/slow-1": "timeout",
    }
    assert result["model_responses"]["lab/ratelimit-once-c"]["attempts"] == 2
    assert result["model_responses"]["lab/forbidden"]["http_status"] == 403
    meta = result["metadata"]
    assert meta["warning"] == "This answer is based on 2 of 4 intended models; forbidden and slow-1 did not respond."
    assert meta["stages"] == {"answers": "partial", "review": "complete", "synthesis": "chairman"}
    assert result["synthesis"] == "Synthesis by lab/ok-alpha: the members agree."
    assert [r["points"] for r in result["ranking"]] == [2, 0]
    chat = [r for r in fake.requests if r["body"]["model"] == "lab/ok-alpha"]
    assert len(chat) == 4  # probe, answer, review, synthesis
    assert chat[0]["body"]["max_tokens"] == 1  # the probe is cheap


@pytest.mark.slow
async def test_health_and_consult_without_a_key(fake: FakeOpenAI) -> None:
    env = {"LLM_COUNCIL_MODELS": "lab/ok-alpha,lab/ok-bravo", "LLM_COUNCIL_BASE_URL": fake.base_url}
    async with council("--backend", "openai", "--time-scale", "0.01", env=env) as (client, _):
        health, _ = await call(client, "council_health_check")
        result, is_error = await consult(client, "Anyone there?")
    assert health["api_key_configured"] is False and health["api_key_required"] is True
    assert (health["api_reachable"], health["ready"]) == (False, False)
    assert health["message"] == "OPENROUTER_API_KEY is not set: the openai backend cannot call any model"
    assert is_error and set(statuses(result).values()) == {"auth_error"}
    assert "no API key is configured (set OPENROUTER_API_KEY)" in result["error"]
    assert "rejected" not in result["error"] and "rejected" not in (result["metadata"]["warning"] or "")
    assert fake.requests == []


@pytest.mark.slow
async def test_a_rejected_key_stops_the_council_at_once(fake: FakeOpenAI) -> None:
    env = {
        "OPENROUTER_API_KEY": "revoked",
        "LLM_COUNCIL_MODELS": "lab/ok-alpha,lab/slow-1",
        "LLM_COUNCIL_BASE_URL": fake.base_url,
    }
    async with council("--backend", "openai", "--time-scale", "0.01", env=env) as (client, _):
        health, _ = await call(client, "council_health_check")
        result, is_error = await consult(client, "Anyone there?")
    assert health["api_reachable"] is True and health["ready"] is False and "auth_error" in health["message"]
    assert is_error
    assert statuses(result) == {"lab/ok-alpha": "auth_error", "lab/slow-1": "auth_error"}
    assert result["model_responses"]["lab/ok-alpha"]["http_status"] == 401
    # did not wait for the slow model: it is reported stopped by the 401, not answered or timed out
    assert result["model_responses"]["lab/slow-1"]["error"].startswith(
        "not completed: the API key was rejected (HTTP 401 on lab/ok-alpha)"
    )


async def test_a_huge_or_compressed_reply_is_refused_without_reading_it(fake: FakeOpenAI) -> None:
    """A peer answering 200 with 300 MiB (or gzip, which could expand without bound) is a bad_response; the
    connection is dropped after the cap, so the rest is never read into memory."""
    backend = OpenAIBackend(base_url=fake.base_url, api_key="test-key")
    try:
        huge = await failure(backend, "lab/huge", timeout_s=60.0)
        assert (huge.kind, huge.status) == ("bad_response", 200) and "over 8 MiB" in str(huge)
        packed = await failure(backend, "lab/gzip", timeout_s=60.0)
        assert packed.kind == "bad_response" and "gzip" in str(packed)
        assert await backend.complete(request("lab/ok-1")) == "lab/ok-1 says: it depends on the constraints."
    finally:
        await backend.aclose()
    for _ in range(600):  # a server thread notes what it wrote when it sees the hang-up, on a busy machine after this
        if len(fake.huge_sent) == 2:
            break
        await anyio.sleep(0.05)
    assert len(fake.huge_sent) == 2 and max(fake.huge_sent) < 32 * 1024 * 1024, fake.huge_sent
