"""The console benchmark's smoke run: a real wrapper flooded by a host process, followed by the real console."""

from __future__ import annotations

import json
import subprocess

import pytest

from checkout import REPO, mcpwatch_cmd


@pytest.mark.slow
@pytest.mark.bench
def test_bench_console_quick_follows_a_flooded_wrapper() -> None:
    result = subprocess.run(
        mcpwatch_cmd("bench", "console", "--quick"), capture_output=True, text=True, cwd=REPO, timeout=180
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    # How much the flood achieves in its few seconds depends on the machine: only the shape is checked here.
    assert figures["source"].startswith("a real wrapper")
    host = figures["host"]
    assert host["calls"] > 0 and host["outcomes"]["error"] == 0
    # Under load the console can apply nothing in the measured seconds while the flood goes on (seen at a load
    # average of 8 on 2 cores): the count is a figure to read, not a condition.
    assert host["wrapper_events"] > 0 and figures["events_applied"] >= 0
    latency = figures["key_to_repaint_ms"]
    assert latency["samples"] >= 1 and 0 <= latency["p50"] <= latency["p95"] <= latency["max"]
    assert set(figures["backlog_events"]) == {"mean_first_half", "mean_second_half", "max", "final"}
    assert figures["rss_mb"]["peak"] > 0
    assert set(figures["targets"]) == {"p95_le_100ms", "no_growing_backlog", "rss_le_250mb"}
