"""Reconnect backoff: the exponential sequence, its cap, jitter bounds and seeded determinism."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpwatch.reliability.backoff import Backoff


def test_sequence_without_jitter_doubles_up_to_the_cap():
    backoff = Backoff(base_s=0.5, max_s=30.0, factor=2.0, jitter=0.0)
    assert [backoff.next_delay() for _ in range(9)] == [0.5, 1, 2, 4, 8, 16, 30, 30, 30]
    assert backoff.attempt == 9


def test_reset_starts_again_from_the_base():
    backoff = Backoff(jitter=0.0)
    for _ in range(5):
        backoff.next_delay()
    backoff.reset()
    assert backoff.attempt == 0
    assert backoff.next_delay() == 0.5


def test_peek_does_not_consume_an_attempt():
    backoff = Backoff(jitter=0.0)
    assert backoff.peek() == 0.5
    assert backoff.peek() == 0.5
    assert backoff.attempt == 0


def test_jitter_spreads_the_delays_within_bounds():
    backoff = Backoff(base_s=1.0, max_s=1.0, jitter=0.2, rng=random.Random(1))
    delays = [backoff.next_delay() for _ in range(500)]
    assert all(0.8 <= d <= 1.2 for d in delays)
    assert len(set(delays)) > 100  # jitter is really applied
    assert min(delays) < 0.85 and max(delays) > 1.15  # and uses its whole range


def test_same_seed_same_delays_and_different_seed_different_delays():
    def run(seed: int) -> list[float]:
        backoff = Backoff(rng=random.Random(seed))
        return [backoff.next_delay() for _ in range(12)]

    assert run(42) == run(42)
    assert run(42) != run(43)


def test_a_very_long_outage_does_not_overflow():
    backoff = Backoff(factor=10.0, jitter=0.2, rng=random.Random(0))
    backoff.attempt = 5000
    assert 24.0 <= backoff.next_delay() <= 36.0
    assert backoff.peek() == 30.0


def test_default_rng_is_private():
    state = random.getstate()
    Backoff().next_delay()
    assert random.getstate() == state


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base_s": -1.0},
        {"max_s": math.inf},
        {"factor": 0.5},
        {"factor": math.nan},
        {"jitter": 1.5},
        {"jitter": -0.1},
        {"base_s": True},
        {"max_s": "30"},
    ],
)
def test_bad_parameters_are_refused(kwargs):
    with pytest.raises(ValueError):
        Backoff(**kwargs)


@given(
    base=st.floats(min_value=0.0, max_value=10.0),
    max_s=st.floats(min_value=0.0, max_value=100.0),
    factor=st.floats(min_value=1.0, max_value=5.0),
    jitter=st.floats(min_value=0.0, max_value=1.0),
    seed=st.integers(min_value=0, max_value=2**32),
    attempts=st.integers(min_value=1, max_value=40),
)
def test_delays_stay_within_bounds(base, max_s, factor, jitter, seed, attempts):
    backoff = Backoff(base_s=base, max_s=max_s, factor=factor, jitter=jitter, rng=random.Random(seed))
    for attempt in range(attempts):
        raw = min(max_s, base * factor**attempt)
        delay = backoff.next_delay()
        assert 0.0 <= delay <= max_s * (1 + jitter)
        assert raw * (1 - jitter) - 1e-9 <= delay <= raw * (1 + jitter) + 1e-9
    assert backoff.attempt == attempts


def test_steps_give_the_listed_delays_then_repeat_the_last():
    from mcpwatch.reliability.backoff import Backoff as B

    backoff = B(steps=(0.5, 1.0, 2.0, 3.0, 5.0), jitter=0.0)
    assert [backoff.next_delay() for _ in range(7)] == [0.5, 1.0, 2.0, 3.0, 5.0, 5.0, 5.0]
    backoff.reset()
    assert backoff.next_delay() == 0.5
    with pytest.raises(ValueError):
        B(steps=())
    with pytest.raises(ValueError):
        B(steps=(1.0, math.nan))


def test_reconnect_starts_over_only_after_a_connection_that_stayed_up():
    from mcpwatch.reliability.backoff import Reconnect

    reconnect = Reconnect(Backoff(base_s=1.0, max_s=8.0, jitter=0.0), stable_after_s=30.0)
    reconnect.started(0.0)
    assert reconnect.delay_after_loss(29.999) == 1.0  # a short life: the backoff grows
    reconnect.started(31.0)
    assert reconnect.delay_after_loss(40.0) == 2.0
    reconnect.started(42.0)
    assert reconnect.delay_after_loss(72.0) == 1.0  # up for 30 s: back to the first delay
    assert reconnect.attempts == 3
