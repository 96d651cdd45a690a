"""State Sync in the wrapper's core against the raw fixture server's tools in memory: lists decorated with their
Cache-Control, a successful mutation's answer and the host told what went stale, a failed one left alone. A real
wrapper reads the same policies from its mcpwatch.toml in tests/integration/test_wrap_statesync_http.py."""

from __future__ import annotations

import tomllib

from statesync_sample import POLICIES
from taskrig import RawRig

from mcpwatch.config import settings_from_mapping
from mcpwatch.wrapper.operator.actions import OperatorActions


def test_state_sync_decorates_lists_and_invalidates_after_successful_mutations(loop) -> None:
    rig = RawRig(loop, base=settings_from_mapping(tomllib.loads(POLICIES)))
    tools = {t["name"]: t["description"] for t in rig.call("tools/list")["result"]["tools"]}
    assert tools["tasks.list"] == "The tasks.list tool. [Cache-Control: immutable]"
    assert tools["echo"] == "The echo tool. [Cache-Control: no-store]"
    updated = rig.tool("tasks.update")["result"]["content"]
    assert updated[0]["text"] == "[System: Cache invalidated for tasks.*, sprints.* — caused by tasks.update]"
    assert updated[1]["text"] == '{"ok": true}'
    failed = rig.tool("tasks.update", {"fail": True})["result"]
    assert failed["isError"] and len(failed["content"]) == 1
    stale = [m["params"]["uri"] for m in rig.notifications() if m["method"] == "notifications/resources/updated"]
    assert stale == ["mcpwatch://stale/tasks.*", "mcpwatch://stale/sprints.*"]
    status = OperatorActions(rig.core).status()
    assert status["counters"]["invalidations"] == 1
    assert status["state_sync"]["policies"] == 2
