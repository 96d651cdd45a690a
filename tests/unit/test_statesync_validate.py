"""Fail-fast validation of State Sync policies: every rule, with the exact message an operator sees."""

from __future__ import annotations

import pytest

from mcpwatch.config import settings_from_mapping
from mcpwatch.errors import UserError
from mcpwatch.reliability.statesync import (
    PolicyEngine,
    StateSync,
    StateSyncConfigError,
    parse_policies,
    pattern_problem,
    validate_config,
)

GOOD = {"match": "ok.*", "cache_control": "no-store"}


@pytest.mark.parametrize(
    ("policies", "default", "message"),
    [
        ([GOOD, GOOD, {"match": "a..b"}], None, "policy [2]: match 'a..b' has an empty segment"),
        ([{"match": ".a"}], None, "policy [0]: match '.a' has an empty segment"),
        ([{"match": "a."}], None, "policy [0]: match 'a.' has an empty segment"),
        ([{"match": "."}], None, "policy [0]: match '.' has an empty segment"),
        (
            [{"match": "a.***"}],
            None,
            "policy [0]: match 'a.***' has an invalid segment '***' (a wildcard must be a whole segment: '*' or '**')",
        ),
        (
            [{"match": "a*b"}],
            None,
            "policy [0]: match 'a*b' has an invalid segment 'a*b' (a wildcard must be a whole segment: '*' or '**')",
        ),
        (
            [{"match": "sprints.get*"}],
            None,
            "policy [0]: match 'sprints.get*' has an invalid segment 'get*' (a wildcard must be a whole segment: "
            "'*' or '**')",
        ),
        ([{"match": "a. b"}], None, "policy [0]: match 'a. b' has whitespace in segment ' b'"),
        ([{"match": "a.b\t"}], None, "policy [0]: match 'a.b\\t' has whitespace in segment 'b\\t'"),
        ([{"cache_control": "no-store"}], None, "policy [0]: match is required"),
        ([{"match": None}], None, "policy [0]: match is required"),
        ([{"match": ""}], None, "policy [0]: match must be a non-empty string, got ''"),
        ([{"match": 5}], None, "policy [0]: match must be a non-empty string, got 5"),
        ([{"match": ["a"]}], None, "policy [0]: match must be a non-empty string, got ['a']"),
        (
            [{"match": "a", "cache_control": "max-age=5"}],
            None,
            "policy [0]: cache_control must be 'no-store' or 'immutable', got 'max-age=5'",
        ),
        (
            [GOOD, {"match": "a", "cache_control": "No-Store"}],
            None,
            "policy [1]: cache_control must be 'no-store' or 'immutable', got 'No-Store'",
        ),
        (
            [{"match": "a", "invalidates": "a.*"}],
            None,
            "policy [0]: invalidates must be a list of patterns, got 'a.*'",
        ),
        (
            [{"match": "a", "invalidates": {"a.*": True}}],
            None,
            "policy [0]: invalidates must be a list of patterns, got {'a.*': True}",
        ),
        (
            [{"match": "a", "invalidates": ["a.*", ""]}],
            None,
            "policy [0]: invalidates[1] must be a non-empty string, got ''",
        ),
        (
            [{"match": "a", "invalidates": ["a.*", 3]}],
            None,
            "policy [0]: invalidates[1] must be a non-empty string, got 3",
        ),
        (
            [{"match": "a", "invalidates": ["tasks..x"]}],
            None,
            "policy [0]: invalidates[0] 'tasks..x' has an empty segment",
        ),
        (
            [GOOD, {"match": "a", "invalidates": ["ok", "t*"]}],
            None,
            "policy [1]: invalidates[1] 't*' has an invalid segment 't*' (a wildcard must be a whole segment: "
            "'*' or '**')",
        ),
        (
            [{"match": "a", "cacheControl": "no-store"}],
            None,
            "policy [0]: unknown key 'cacheControl' (known: match, cache_control, invalidates)",
        ),
        ([GOOD, "a.*"], None, "policy [1]: must be a table with a match key, got 'a.*'"),
        ("a.*", None, "policies must be a list of tables, got 'a.*'"),
        ({"match": "a"}, None, "policies must be a list of tables, got {'match': 'a'}"),
        (None, None, "policies must be a list of tables, got None"),
        ([GOOD], "max-age=60", "default_cache_control must be 'no-store' or 'immutable', got 'max-age=60'"),
        ([], "", "default_cache_control must be 'no-store' or 'immutable', got ''"),
    ],
)
def test_every_rule_has_its_message(policies, default, message):
    with pytest.raises(StateSyncConfigError) as caught:
        validate_config(policies, default)
    assert str(caught.value) == message
    with pytest.raises(StateSyncConfigError):  # and the engine and the layer refuse to start with it
        PolicyEngine(policies, default)
    with pytest.raises(StateSyncConfigError):
        StateSync(policies, default)


def test_the_first_bad_policy_is_reported():
    with pytest.raises(StateSyncConfigError, match=r"^policy \[1\]"):
        validate_config([GOOD, {"match": "a..b"}, {"match": ""}], None)


@pytest.mark.parametrize(
    ("policies", "default"),
    [
        ([], None),
        ([], "no-store"),
        ([], "immutable"),
        (
            (
                {"match": "countries.*", "cache_control": "immutable"},
                {"match": "tasks.update", "invalidates": ["tasks.*", "sprints.*"]},
            ),
            "no-store",
        ),
        ([{"match": "**"}], None),  # neither field: allowed (it shadows; see the policy tests)
        ([{"match": "a", "cache_control": None, "invalidates": None}], None),  # None counts as absent
        ([{"match": "a", "invalidates": []}], None),
        ([{"match": "a", "invalidates": ("b.**", "*.c")}], None),
        ([{"match": "a-b_c.D9.*.**"}], None),
        ([{"match": "github/create_issue"}], None),
    ],
)
def test_valid_configs_pass(policies, default):
    assert validate_config(policies, default) is None


def test_parsed_policies_keep_order_index_and_fields():
    parsed = parse_policies([{"match": "a.*", "invalidates": ["x", "y"]}, {"match": "b", "cache_control": "immutable"}])
    assert [(p.index, p.match, p.cache_control, p.invalidates) for p in parsed] == [
        (0, "a.*", None, ("x", "y")),
        (1, "b", "immutable", ()),
    ]
    assert parsed[0].segments == ("a", "*")
    assert parse_policies(parsed) == parsed  # already parsed policies go through unchanged
    assert parsed[0].to_dict() == {"match": "a.*", "invalidates": ["x", "y"]}


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [("a.b", None), ("**", None), ("*", None), ("a..b", "has an empty segment"), ("a.**x", "has an invalid")],
)
def test_pattern_problem(pattern, problem):
    result = pattern_problem(pattern)
    assert result == problem if problem is None else result.startswith(problem)


def test_config_loader_reports_the_message_with_the_file_name():
    raw = {"state_sync": {"policies": [{"match": "ok"}, {"match": "a..b"}]}}
    with pytest.raises(UserError) as caught:
        settings_from_mapping(raw, "/tmp/mcpwatch.toml")
    assert str(caught.value) == "/tmp/mcpwatch.toml: [state_sync] policy [1]: match 'a..b' has an empty segment"


def test_config_loader_accepts_the_design_example():
    raw = {
        "state_sync": {
            "default_cache_control": "no-store",
            "policies": [
                {"match": "countries.*", "cache_control": "immutable"},
                {"match": "tasks.update", "invalidates": ["tasks.*", "sprints.*"]},
            ],
        }
    }
    assert len(settings_from_mapping(raw).state_sync.policies) == 2
