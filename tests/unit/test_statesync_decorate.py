"""State Sync on tools/list and tools/call results: decoration, idempotence, the isError guard, observers."""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest

from mcpwatch.clock import ManualClock
from mcpwatch.config import StateSyncSettings
from mcpwatch.reliability.statesync import (
    CACHE_MAX,
    InvalidationEvent,
    StateSync,
    decorate_description,
    policies_from_settings,
    resource_notifications,
)

POLICIES: list[dict[str, Any]] = [
    {"match": "sprints.update", "invalidates": ["sprints.*"]},
    {"match": "tasks.update", "invalidates": ["tasks.*", "sprints.*"]},
    {"match": "countries.*", "cache_control": "immutable"},
    {"match": "reports.*", "cache_control": "no-store"},
]


def tools(*entries: tuple[str, str | None]) -> dict:
    out = []
    for name, description in entries:
        tool = {"name": name, "inputSchema": {"type": "object"}}
        if description is not None:
            tool["description"] = description
        out.append(tool)
    return {"tools": out, "nextCursor": "abc"}


def descriptions(result: dict) -> list[str | None]:
    return [t.get("description") for t in result["tools"]]


# --- tools/list ----------------------------------------------------------------------------------------------------


def test_descriptions_get_their_cache_directive():
    sync = StateSync(POLICIES, "no-store")
    result = sync.decorate_tools(
        tools(("sprints.list", "Manage workspace sprints."), ("countries.list", "List country codes."))
    )
    assert descriptions(result) == [
        "Manage workspace sprints. [Cache-Control: no-store]",
        "List country codes. [Cache-Control: immutable]",
    ]
    assert result["nextCursor"] == "abc"
    assert result["tools"][0]["inputSchema"] == {"type": "object"}


def test_unmatched_tools_without_a_default_are_left_alone():
    sync = StateSync(POLICIES)
    result = sync.decorate_tools(tools(("misc.thing", "Does a thing."), ("reports.weekly", "Weekly report.")))
    assert descriptions(result) == ["Does a thing.", "Weekly report. [Cache-Control: no-store]"]


def test_a_mutation_gets_the_default_directive_when_it_has_none():
    sync = StateSync(POLICIES, "no-store")
    assert descriptions(sync.decorate_tools(tools(("tasks.update", "Update a task."))))[0] == (
        "Update a task. [Cache-Control: no-store]"
    )


@pytest.mark.parametrize("description", [None, "", "   "])
def test_a_missing_or_blank_description_becomes_the_tag_alone(description):
    sync = StateSync([], "no-store")
    assert descriptions(sync.decorate_tools(tools(("a", description)))) == ["[Cache-Control: no-store]"]


def test_decoration_is_idempotent():
    sync = StateSync(POLICIES, "no-store")
    once = sync.decorate_tools(tools(("sprints.list", "Manage sprints."), ("x", None)))
    twice = sync.decorate_tools(once)
    assert twice == once
    fresh = StateSync(POLICIES, "no-store")  # also without the cache's help
    assert fresh.decorate_tools(once) == once


def test_an_existing_tag_is_replaced_never_doubled():
    sync = StateSync(POLICIES, "no-store")
    result = sync.decorate_tools(
        tools(
            ("countries.list", "Codes. [Cache-Control: no-store]"),
            ("sprints.list", "Sprints.  [Cache-Control: immutable] [Cache-Control: no-store]\n"),
            ("reports.x", "[Cache-Control: no-store]"),
        )
    )
    assert descriptions(result) == [
        "Codes. [Cache-Control: immutable]",
        "Sprints. [Cache-Control: no-store]",
        "[Cache-Control: no-store]",
    ]


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        ("Text [with brackets]", "Text [with brackets] [Cache-Control: no-store]"),
        ("See [Cache-Control: a] then more", "See [Cache-Control: a] then more [Cache-Control: no-store]"),
        ("Odd [Cache-Control: x]y]", "Odd [Cache-Control: x]y] [Cache-Control: no-store]"),
        ("  padded  ", "  padded [Cache-Control: no-store]"),
    ],
)
def test_only_trailing_tags_are_replaced(description, expected):
    assert decorate_description(description, "no-store") == expected


def test_a_long_blank_description_is_handled_in_linear_time():
    assert decorate_description(" " * 200_000 + "x", "immutable") == " " * 200_000 + "x [Cache-Control: immutable]"


def test_input_is_never_mutated_and_a_new_dict_is_returned():
    sync = StateSync(POLICIES, "no-store")
    original = tools(("sprints.list", "Manage sprints."), ("countries.list", None))
    snapshot = copy.deepcopy(original)
    result = sync.decorate_tools(original)
    assert original == snapshot
    assert result is not original
    assert result["tools"] is not original["tools"]


def test_a_result_without_a_tool_list_is_copied_unchanged():
    sync = StateSync(POLICIES, "no-store")
    original = {"tools": "nonsense"}
    result = sync.decorate_tools(original)
    assert result == original and result is not original
    assert sync.decorate_tools({}) == {}


def test_malformed_tools_are_passed_through():
    sync = StateSync(POLICIES, "no-store")
    odd = [
        "not a tool",
        {"description": "no name"},
        {"name": 5, "description": "bad name"},
        {"name": "x", "description": 7},
        {"name": ["unhashable"], "description": "x"},
    ]
    result = sync.decorate_tools({"tools": odd})
    assert result["tools"] == odd


def test_decorations_are_cached_per_name_and_description():
    sync = StateSync(POLICIES, "no-store")
    sync.decorate_tools(tools(("reports.a", "One.")))
    assert len(sync._descriptions) == 1
    result = sync.decorate_tools(tools(("reports.a", "Two.")))  # the upstream changed its description
    assert descriptions(result) == ["Two. [Cache-Control: no-store]"]
    assert len(sync._descriptions) == 2


def test_description_cache_is_bounded():
    sync = StateSync([], "no-store")
    sync.decorate_tools({"tools": [{"name": f"t{i}", "description": "d"} for i in range(CACHE_MAX)]})
    assert len(sync._descriptions) == CACHE_MAX
    result = sync.decorate_tools(tools(("new", "d")))
    assert len(sync._descriptions) == 1
    assert descriptions(result) == ["d [Cache-Control: no-store]"]


# --- tools/call ----------------------------------------------------------------------------------------------------


def call_result(text: str = '{"ok": true}', **extra: object) -> dict:
    return {"content": [{"type": "text", "text": text}], **extra}


def test_a_successful_mutation_gets_the_invalidation_block_first():
    clock = ManualClock()
    sync = StateSync(POLICIES, clock=clock)
    original = call_result(structuredContent={"ok": True})
    result, event = sync.decorate_call("tasks.update", original)
    assert result["content"] == [
        {"type": "text", "text": "[System: Cache invalidated for tasks.*, sprints.* — caused by tasks.update]"},
        {"type": "text", "text": '{"ok": true}'},
    ]
    assert result["structuredContent"] == {"ok": True}
    assert event == InvalidationEvent("tasks.update", ("tasks.*", "sprints.*"), clock.time())
    assert event.to_dict() == {
        "caused_by": "tasks.update",
        "patterns": ["tasks.*", "sprints.*"],
        "timestamp": clock.time(),
    }


@pytest.mark.parametrize("flag", [False, None, "true", 1])
def test_is_error_other_than_true_still_invalidates(flag):
    sync = StateSync(POLICIES)
    _, event = sync.decorate_call("sprints.update", call_result(isError=flag))
    assert event is not None


def test_a_failed_mutation_invalidates_nothing():
    seen: list[InvalidationEvent] = []
    sync = StateSync(POLICIES, on_invalidation=seen.append)
    original = call_result("boom", isError=True)
    result, event = sync.decorate_call("tasks.update", original)
    assert result is original
    assert event is None
    assert seen == []


@pytest.mark.parametrize("tool", ["countries.list", "reports.x", "unknown.tool"])
def test_tools_without_invalidations_are_returned_unchanged(tool):
    sync = StateSync(POLICIES, "no-store")
    original = call_result()
    result, event = sync.decorate_call(tool, original)
    assert result is original
    assert event is None


def test_the_input_result_is_not_mutated():
    sync = StateSync(POLICIES)
    original = call_result()
    snapshot = copy.deepcopy(original)
    result, _ = sync.decorate_call("sprints.update", original)
    assert original == snapshot
    assert result is not original


def test_missing_content_becomes_just_the_block_and_odd_content_is_left_alone() -> None:
    sync = StateSync(POLICIES)
    result, event = sync.decorate_call("sprints.update", {})
    assert result == {
        "content": [{"type": "text", "text": "[System: Cache invalidated for sprints.* — caused by sprints.update]"}]
    }
    assert event is not None
    odd = {"content": "text"}
    assert sync.decorate_call("sprints.update", odd) == (odd, None)
    assert sync.decorate_call("sprints.update", "not a dict") == ("not a dict", None)  # type: ignore[arg-type]


def test_the_observer_gets_each_event():
    seen: list[InvalidationEvent] = []
    sync = StateSync(POLICIES, on_invalidation=seen.append)
    sync.decorate_call("sprints.update", call_result())
    sync.decorate_call("tasks.update", call_result())
    assert [e.caused_by for e in seen] == ["sprints.update", "tasks.update"]


def test_an_observer_that_raises_never_breaks_the_pipeline(caplog):
    def broken(_event: InvalidationEvent) -> None:
        raise RuntimeError("observer bug")

    sync = StateSync(POLICIES, on_invalidation=broken)
    with caplog.at_level(logging.WARNING):
        result, event = sync.decorate_call("sprints.update", call_result())
    assert event is not None
    assert result["content"][0]["text"].startswith("[System: Cache invalidated")
    assert sync.observer_errors == 1
    assert "sprints.update" in caplog.text


def test_resource_notifications_one_per_pattern():
    event = InvalidationEvent("tasks.update", ("tasks.*", "sprints.*"), 0.0)
    assert resource_notifications(event) == [
        {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "mcpwatch://stale/tasks.*"}},
        {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": "mcpwatch://stale/sprints.*"},
        },
    ]


# --- the layer -----------------------------------------------------------------------------------------------------


def test_enabled_only_with_policies_or_a_default():
    assert not StateSync([]).enabled
    assert StateSync([], "no-store").enabled
    assert StateSync([{"match": "a", "cache_control": "immutable"}]).enabled


def test_built_from_settings():
    settings = StateSyncSettings(default_cache_control="no-store", policies=tuple(POLICIES))
    sync = StateSync.from_settings(settings)
    assert sync.enabled
    assert [p.match for p in policies_from_settings(settings)] == [p["match"] for p in POLICIES]
    assert descriptions(sync.decorate_tools(tools(("x", "X."))))[0] == "X. [Cache-Control: no-store]"


def test_summary_reports_overlaps_found_at_start():
    sync = StateSync(
        [{"match": "sprints.*", "cache_control": "no-store"}, {"match": "sprints.update", "invalidates": ["sprints.*"]}]
    )
    summary = sync.summary()
    assert [p.match for p in sync.policies] == ["sprints.*", "sprints.update"]
    assert summary["policies"] == 2
    assert summary["default_cache_control"] is None
    assert len(summary["overlaps"]) == 1 and "policy [1]" in summary["overlaps"][0]
    assert [(w.shadowing_index, w.shadowed_index) for w in sync.overlaps] == [(0, 1)]
