"""`bench wrap`'s raw hops against peers that stop: a clear error naming the peer, never a hang."""

from __future__ import annotations

import os
import sys
import time

import pytest

from mcpwatch.bench import RAW_UPSTREAM, raw_hops

ANSWERS_ONCE = [
    sys.executable,
    "-c",
    "import sys, time; sys.stdin.readline(); sys.stdout.write('{}\\n'); sys.stdout.flush(); time.sleep(120)",
]


def test_two_raw_paths_give_a_latency_for_every_counted_call() -> None:
    samples = raw_hops.measure({"a": [*RAW_UPSTREAM], "b": [*RAW_UPSTREAM]}, 100, 20, dict(os.environ))
    assert [len(values) for values in samples.values()] == [100, 100]  # the warm-up's turn not counted
    assert all(value > 0 for values in samples.values() for value in values)


def test_a_peer_that_stops_answering_ends_the_run_with_its_name() -> None:
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"time\.sleep\(120\): answered nothing for 0\.5 s"):
        raw_hops.measure({"raw": [*RAW_UPSTREAM], "silent": ANSWERS_ONCE}, 100, 0, dict(os.environ), stall_s=0.5)
    assert time.monotonic() - started < 60  # ended by the watchdog, not by the peer's own end


def test_a_peer_that_exits_is_named_as_closing_its_output() -> None:
    with pytest.raises(RuntimeError, match=r"-c pass: closed its output"):
        raw_hops.measure({"gone": [sys.executable, "-c", "pass"]}, 100, 0, dict(os.environ), stall_s=30)
