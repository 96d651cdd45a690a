"""Degraded answers are their own outcome: a council squeezed into a 2 s budget answers with fallback summaries
(ok results that say they are not whole); the wrapper marks each request_end `degraded` and counts it apart, and
`report`, `whatif` and the console's counts and detail screen all show "degraded", never plain ok (29 of 31 answers
of one session were fallbacks while report said `ok 28`)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import run_cli
from rich.console import Console

from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.console.headless.panels.counters import counters_panel
from mcpwatch.console.headless.render_base import Palette
from mcpwatch.console.headless.render_detail import detail_summary
from mcpwatch.events import payload_problems
from mcpwatch.reliability.degraded import degraded_of_result
from mcpwatch.store import EventReader

from wraptools import wrapped_client

pytestmark = pytest.mark.anyio
BUDGET_2S = {"MCPWATCH_HOST_TOOLS_CALL_TIMEOUT_SEC": "3", "MCPWATCH_TOOL_CALL_DEADLINE_MARGIN_SEC": "1"}
COUNCIL = [sys.executable, "-m", "mcpwatch", "council", "--scenario", "default", "--time-scale", "0.2"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)


@pytest.mark.slow
async def test_fallback_summaries_are_degraded_in_every_count_and_view(isolated_state: Path) -> None:
    log = isolated_state / "events.db"
    async with wrapped_client(COUNCIL, env=BUDGET_2S, wrap_args=["--log", str(log)]) as client:
        for query in ("Shard by customer or region?", "Make or Bazel?"):
            result = await client.call_tool("consult_council", {"query": query, "confidence": "high"})
            assert result.is_error is False
            assert result.structured_content["metadata"]["synthesized_by"] == "fallback"
        await client.call_tool("council.models.list", {})  # a whole answer, for contrast
    with EventReader(log) as reader:
        session = reader.latest_session().id
        events = list(reader.events(session))
    ends = [e for e in events if e.kind == "request_end" and e.tool == "consult_council"]
    assert [e.data["outcome"] for e in ends] == ["ok", "ok"]
    assert [e.data.get("degraded") for e in ends] == ["fallback summary", "fallback summary"]
    assert all(payload_problems(e.kind, e.data) == [] for e in ends)
    (end,) = [e for e in events if e.kind == "session_end"]
    whole = sum(1 for e in events if e.kind == "request_end" and e.data["outcome"] == "ok" and "degraded" not in e.data)
    assert whole >= 2  # initialize, council.models.list, …
    assert (end.data["counters"]["degraded"], end.data["counters"]["ok"]) == (2, whole)

    report = json.loads(run("report", str(log), "--json").stdout)
    (row,) = [t for t in report["tools"] if t["tool"] == "consult_council"]
    assert (row["calls"], row["ok"], row["degraded"]) == (2, 0, 2)
    assert report["requests"]["by_outcome"]["degraded"] == 2
    text = run("report", str(log)).stdout
    assert "degraded 2" in text and "┃ degraded ┃" in text

    whatif = json.loads(run("whatif", str(log), "--budget", "60", "--json").stdout)
    council = [i for i in whatif["items"] if i["tool"] == "consult_council"]
    assert [i["outcome"] for i in council] == ["degraded", "degraded"]
    assert whatif["degraded"] == 2 and whatif["per_tool"]["consult_council"]["degraded"] == 2

    model = ConsoleModel()
    model.apply_many(events)
    view = model.view(events[-1].mono)
    assert (view.counters.degraded, view.counters.ok) == (2, whole)
    counts = io.StringIO()
    Console(file=counts, width=60, color_system=None).print(counters_panel(view.counters, Palette({})))
    assert "degraded 2" in " ".join(counts.getvalue().split())
    assert ends[0].request_id is not None  # a call's end names its request
    detail = model.request_detail(ends[0].request_id, events[-1].mono)
    assert detail is not None
    out = io.StringIO()
    Console(file=out, width=160, color_system=None).print(detail_summary(detail, None, Palette({})))
    assert "outcome ✓! ok, degraded fallback summary" in " ".join(out.getvalue().split())


def test_a_mark_past_the_preview_is_still_found() -> None:
    # A long synthesis pushes the metadata past the log's 4 KiB preview: the structured content still says so.
    result = {
        "content": [{"type": "text", "text": "x" * 10_000}],
        "structuredContent": {
            "synthesis": "x" * 10_000,
            "metadata": {"status": "partial", "synthesized_by": "chairman"},
        },
    }
    preview = json.dumps(result)[:4096]
    assert degraded_of_result(result, preview) == "partial answer"
    whole = {"structuredContent": {"metadata": {"status": "complete", "synthesized_by": "chairman"}}}
    assert degraded_of_result(whole, json.dumps(whole)) is None
    assert degraded_of_result({"content": []}, '{"synthesized_by": "fallback"}') == "fallback summary"
