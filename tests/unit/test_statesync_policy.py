"""Policy resolution (first match wins, defaults, the bounded cache) and overlap detection."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpwatch.reliability.statesync import (
    CACHE_MAX,
    OverlapWarning,
    PolicyEngine,
    ResolvedPolicy,
    StateSyncConfigError,
    covers,
    detect_overlaps,
    match_glob,
    uncovered_name,
)

SEED_POLICIES: list[dict[str, Any]] = [
    {"match": "sprints.update", "invalidates": ["sprints.*"]},
    {"match": "sprints.create", "invalidates": ["sprints.*"]},
    {"match": "sprints.delete", "invalidates": ["sprints.*"]},
    {"match": "tasks.update", "invalidates": ["tasks.*", "sprints.*"]},
    {"match": "countries.*", "cache_control": "immutable"},
]


# --- resolution -------------------------------------------------------------------------------------------------


def test_first_matching_policy_wins():
    engine = PolicyEngine(
        [{"match": "sprints.get", "cache_control": "immutable"}, {"match": "sprints.*", "cache_control": "no-store"}]
    )
    assert engine.resolve("sprints.get") == ResolvedPolicy("sprints.get", "immutable", ())
    assert engine.resolve("sprints.list") == ResolvedPolicy("sprints.*", "no-store", ())


def test_a_matched_policy_with_neither_field_resolves_to_nothing_and_shadows_later_ones():
    engine = PolicyEngine([{"match": "secret.*"}, {"match": "**", "cache_control": "no-store"}])
    assert engine.resolve("secret.read") is None
    assert engine.resolve("public.read") == ResolvedPolicy("**", "no-store", ())


def test_a_matched_policy_with_neither_field_takes_the_default_directive():
    engine = PolicyEngine([{"match": "quiet.*"}, {"match": "**", "invalidates": ["x"]}], "immutable")
    assert engine.resolve("quiet.one") == ResolvedPolicy("quiet.*", "immutable", ())


def test_default_fills_a_matched_policy_without_cache_control():
    engine = PolicyEngine(SEED_POLICIES, "no-store")
    assert engine.resolve("tasks.update") == ResolvedPolicy("tasks.update", "no-store", ("tasks.*", "sprints.*"))
    assert engine.resolve("countries.list") == ResolvedPolicy("countries.*", "immutable", ())


def test_default_applies_when_nothing_matches():
    engine = PolicyEngine(SEED_POLICIES, "no-store")
    assert engine.resolve("reports.weekly") == ResolvedPolicy(None, "no-store", ())


def test_without_a_default_unmatched_tools_resolve_to_none():
    engine = PolicyEngine(SEED_POLICIES)
    assert engine.resolve("reports.weekly") is None
    assert engine.resolve("tasks.update") == ResolvedPolicy("tasks.update", None, ("tasks.*", "sprints.*"))


def test_no_policies_and_no_default_resolve_nothing():
    assert PolicyEngine([]).resolve("anything") is None


def test_invalidates_keep_policy_order():
    engine = PolicyEngine([{"match": "t", "invalidates": ["z.*", "a.*", "m.*"]}])
    assert engine.resolve("t").invalidates == ("z.*", "a.*", "m.*")


def test_resolved_policies_are_immutable() -> None:
    resolved = PolicyEngine(SEED_POLICIES).resolve("tasks.update")
    assert resolved is not None  # the seed policies name tasks.update
    with pytest.raises(dataclasses.FrozenInstanceError):
        resolved.cache_control = "immutable"  # type: ignore[misc]


@pytest.mark.parametrize("name", [None, 5, ["a"]])
def test_a_name_that_is_not_text_resolves_to_none(name: object) -> None:
    engine = PolicyEngine([{"match": "**", "cache_control": "no-store"}], "no-store")
    assert engine.resolve(name) is None  # type: ignore[arg-type]
    assert engine.cache_size == 0


# --- the cache ----------------------------------------------------------------------------------------------------


def test_repeat_resolutions_come_from_the_cache():
    engine = PolicyEngine(SEED_POLICIES, "no-store")
    first = engine.resolve("tasks.update")
    assert engine.cache_size == 1
    assert engine.resolve("tasks.update") is first
    assert engine.cache_size == 1


def test_cache_is_bounded_at_2048_and_emptied_whole_when_full():
    assert CACHE_MAX == 2048
    engine = PolicyEngine(SEED_POLICIES, "no-store")
    for i in range(CACHE_MAX):
        engine.resolve(f"tool{i}")
    assert engine.cache_size == CACHE_MAX
    kept = engine.resolve("tool0")
    assert engine.cache_size == CACHE_MAX  # a hit does not evict
    engine.resolve("one.more")
    assert engine.cache_size == 1  # full eviction, then the new entry
    assert engine.resolve("tool0") == kept  # still correct after eviction
    assert engine.cache_size == 2


# --- overlap detection ----------------------------------------------------------------------------------------------


def test_the_seed_overlap_example():
    warnings = detect_overlaps(
        [{"match": "sprints.*", "cache_control": "no-store"}, {"match": "sprints.update", "invalidates": ["sprints.*"]}]
    )
    assert warnings == [
        OverlapWarning(
            0,
            1,
            "policy [1] match 'sprints.update' is shadowed by policy [0] match 'sprints.*', which matches every "
            "name it does: first match wins, so policy [1] never applies",
        )
    ]


def test_correct_order_has_no_overlap_warning():
    assert (
        detect_overlaps(
            [
                {"match": "sprints.update", "invalidates": ["sprints.*"]},
                {"match": "sprints.*", "cache_control": "no-store"},
            ]
        )
        == []
    )
    assert detect_overlaps(SEED_POLICIES) == []


def test_each_shadowed_policy_is_reported_once_naming_the_first_shadower():
    warnings = detect_overlaps([{"match": "a.*"}, {"match": "**"}, {"match": "a.b"}, {"match": "c"}])
    assert [(w.shadowing_index, w.shadowed_index) for w in warnings] == [(0, 2), (1, 3)]


@pytest.mark.parametrize(
    ("general", "specific", "shadowed"),
    [
        ("a.b", "a.b", True),  # duplicates
        ("**", "anything.**", True),
        ("*.get", "sprints.get", True),
        ("**.get", "*.get", True),
        ("a.**", "a", True),
        ("a.**", "a.*.*", True),
        ("*.**", "**", True),  # every name has at least one segment
        ("**.*", "**", True),
        ("*.**", "**.a", True),
        ("**.a.**", "x.a", True),
        ("sprints.*", "sprints.**", False),  # sprints.** also matches "sprints" and deeper names
        ("sprints.*", "sprints", False),
        ("*.get", "**.get", False),
        ("a.b", "a.*", False),
        ("*.*", "**", False),
        ("a.**.b", "a.**", False),
        ("x.*", "y.*", False),
    ],
)
def test_shadowing_is_decided_exactly(general, specific, shadowed):
    assert covers(general, specific) is shadowed
    found = detect_overlaps([{"match": general}, {"match": specific}])
    assert bool(found) is shadowed
    witness = uncovered_name(general, specific)
    if shadowed:
        assert witness is None
    else:
        assert match_glob(specific, witness) and not match_glob(general, witness)


def test_invalid_policies_are_refused_by_detect_overlaps():
    with pytest.raises(StateSyncConfigError):
        detect_overlaps([{"match": "a..b"}])


SEGMENTS = st.sampled_from(["a", "b", "*", "**"])
# Every name of 1 to 5 segments over the patterns' literals plus one they never mention.
ALL_SHORT_NAMES = [".".join(p) for n in range(1, 6) for p in itertools.product("abx", repeat=n)]


@settings(max_examples=250, deadline=None)
@given(general=st.lists(SEGMENTS, min_size=1, max_size=5), specific=st.lists(SEGMENTS, min_size=1, max_size=5))
def test_shadowing_agrees_with_matching(general, specific):
    g, s = ".".join(general), ".".join(specific)
    witness = uncovered_name(g, s)
    escaping = [name for name in ALL_SHORT_NAMES if match_glob(s, name) and not match_glob(g, name)]
    if witness is not None:  # a concrete name proves "not covered"
        assert not covers(g, s)
        assert match_glob(s, witness)
        assert not match_glob(g, witness)
        assert escaping == [] or len(witness.split(".")) <= len(escaping[0].split("."))  # and it is a shortest one
    else:  # covered: no short name that s matches escapes g
        assert covers(g, s)
        assert escaping == []
