"""The console benchmark's smoke run: a real wrapper flooded by a host process, followed by the real console."""

from __future__ import annotations

import json
import subprocess

from conftest import REPO, mcpwatch_cmd


def test_bench_console_quick_follows_a_flooded_wrapper() -> None:
    result = subprocess.run(
        mcpwatch_cmd("bench", "console", "--quick"), capture_output=True, text=True, cwd=REPO, timeout=180
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["source"].startswith("a real wrapper")
    host = figures["host"]
    assert host["calls"] > 1000 and host["outcomes"]["error"] == 0
    assert host["wrapper_events"] > 2 * host["calls"]  # start, progress and end of each call (the last may run on)
    assert figures["events_applied"] > 0  # the console showed what the wrapper emitted
    assert figures["key_to_repaint_ms"]["samples"] >= 5
