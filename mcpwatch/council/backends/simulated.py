"""The simulated backend: scenario-driven latencies and failures, reproducible from a seed.

Each call draws from a `random.Random` seeded by (seed, model, purpose, attempt, query), so the same question
gets the same answers, timings and failures in every run, and a retry may fare differently from the first try.
Every latency is multiplied by the time scale.
"""

from __future__ import annotations

import hashlib
import math
import random

import anyio

from mcpwatch.council import prompts
from mcpwatch.council.backends import simtext
from mcpwatch.council.backends.base import BackendError, CallRequest, Purpose
from mcpwatch.council.scenarios import ModelProfile, Outcome, Scenario

_HTTP_REASON = {401: "Unauthorized", 403: "Forbidden", 500: "Internal Server Error", 502: "Bad Gateway"}


class SimulatedBackend:
    name = "simulated"
    requires_key = False

    def __init__(self, scenario: Scenario, *, seed: int, time_scale: float, key_configured: bool = False) -> None:
        self.scenario = scenario
        self.seed = seed
        self.time_scale = time_scale
        self.key_configured = key_configured

    def _rng(self, request: CallRequest) -> random.Random:
        material = f"{self.seed}|{request.model}|{request.purpose}|{request.attempt}|{request.query}"
        return random.Random(int.from_bytes(hashlib.sha256(material.encode()).digest()[:8], "big"))

    def outcome(self, profile: ModelProfile, request: CallRequest, rng: random.Random) -> Outcome:
        """The scripted outcome for this attempt, else one drawn from the profile's probabilities."""
        if request.purpose == "probe":
            return Outcome("ok")
        script = {"answer": profile.script, "review": profile.review_script, "synthesis": profile.synthesis_script}
        steps = script[request.purpose]
        if steps:
            return steps[min(request.attempt, len(steps)) - 1]
        roll = rng.random()
        for kind, p in (
            ("hang", profile.p_hang),
            ("rate_limited", profile.p_rate_limit),
            ("server", profile.p_server_error),
            ("network", profile.p_network_error),
        ):
            if roll < p:
                if kind == "rate_limited":
                    return Outcome(kind, retry_after_s=profile.retry_after_s or None)
                return Outcome(kind, status=502 if kind == "server" else None)
            roll -= p
        return Outcome("ok")

    def latency_s(self, profile: ModelProfile, purpose: Purpose, rng: random.Random) -> float:
        """Log-normal around the profile's median, clamped to [median/4, median*4], at scale 1."""
        median = profile.median_s(purpose)
        if median <= 0:
            return 0.0
        drawn = median * math.exp(profile.jitter * rng.gauss(0.0, 1.0))
        return min(max(drawn, median / 4), median * 4)

    def typical_latency_s(self, model: str, purpose: Purpose) -> float:
        profile = self.scenario.profile(model)
        return (profile.median_s(purpose) if profile else 5.0) * self.time_scale

    async def complete(self, request: CallRequest) -> str:
        profile = self.scenario.profile(request.model)
        if profile is None:
            raise BackendError("client", f"HTTP 404: model {request.model} is not in the scenario", status=404)
        rng = self._rng(request)
        outcome = self.outcome(profile, request, rng)
        latency = self.latency_s(profile, request.purpose, rng)
        if outcome.latency_s is not None:
            latency = outcome.latency_s
        scale = self.time_scale
        if outcome.kind == "hang":
            await anyio.sleep_forever()
        if outcome.kind == "ok":
            await anyio.sleep(latency * scale)
            return self._text(profile, request, rng)
        if outcome.kind == "rate_limited":
            await anyio.sleep(0.1 * latency * scale)
            raise BackendError(
                "rate_limit", "HTTP 429 Too Many Requests", status=429, retry_after_s=outcome.retry_after_s
            )
        if outcome.kind == "network":
            await anyio.sleep(0.05 * latency * scale)
            raise BackendError("network", "connection reset by peer")
        if outcome.kind == "bad_response":
            await anyio.sleep(latency * scale)
            raise BackendError("bad_response", "the reply had no message content", status=200)
        status = outcome.status or 500
        await anyio.sleep((0.1 if outcome.kind != "server" else 0.3) * latency * scale)
        kind = {"auth": "auth", "server": "server", "client": "client"}[outcome.kind]
        raise BackendError(kind, f"HTTP {status} {_HTTP_REASON.get(status, 'error')}".strip(), status=status)  # type: ignore[arg-type]  # the dict's values are ErrorKind literals

    def _text(self, profile: ModelProfile, request: CallRequest, rng: random.Random) -> str:
        prompt = request.messages[-1]["content"] if request.messages else ""
        if request.purpose == "review":
            return simtext.review_text(prompts.review_blocks(prompt), rng)
        if request.purpose == "synthesis":
            ranked = "Peer-review ranking" in prompt
            return simtext.synthesis_text(request.query, prompts.synthesis_blocks(prompt), rng, ranked=ranked)
        if request.purpose == "probe":
            return "pong"
        return simtext.answer_text(profile.spec.id, request.query, rng)

    async def aclose(self) -> None:
        return None
