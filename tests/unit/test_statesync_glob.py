"""Dot-separated glob matching: the seed's table, the iteration cap, and agreement with a reference matcher."""

from __future__ import annotations

import sys
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpwatch.reliability.statesync import MAX_ITERATIONS, match_glob, match_segments

# Every row of the seed's table: (pattern, names it matches, names it does not match).
SEED_TABLE = [
    ("sprints.get", ["sprints.get"], ["sprints.list"]),
    ("sprints.*", ["sprints.get", "sprints.update"], ["sprints.tasks.get"]),
    ("sprints.**", ["sprints.get", "sprints.tasks.get"], ["tasks.get"]),
    ("**", ["sprints.get", "a", "a.b.c.d.e", "anything.at.all"], []),
    ("*.get", ["sprints.get", "tasks.get"], ["sprints.tasks.get"]),
    ("**.get", ["sprints.get", "a.b.c.get"], ["sprints.update"]),
]


@pytest.mark.parametrize(("pattern", "name"), [(p, n) for p, names, _ in SEED_TABLE for n in names], ids=lambda v: v)
def test_seed_table_matches(pattern, name):
    assert match_glob(pattern, name)


@pytest.mark.parametrize(("pattern", "name"), [(p, n) for p, _, names in SEED_TABLE for n in names], ids=lambda v: v)
def test_seed_table_does_not_match(pattern, name):
    assert not match_glob(pattern, name)


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("sprints.**", "sprints", True),  # ** may match nothing
        ("**.get", "get", True),
        ("a.**.b", "a.b", True),
        ("a.**.b", "a.x.y.b", True),
        ("a.**.b", "a.x.y.c", False),
        ("*", "sprints", True),
        ("*", "sprints.get", False),
        ("*.*", "a.b", True),
        ("*.*", "a", False),
        ("**.*", "a", True),
        ("**.**", "a.b.c", True),
        ("a.**.**.b", "a.b", True),
        ("**.a.**.a", "x.a.y.a", True),
        ("**.a.**.a", "a.x.a.y", False),
        ("a.b", "a.b.c", False),
        ("a.b.c", "a.b", False),
        ("Sprints.get", "sprints.get", False),  # case-sensitive, as tool names are
        ("sprints_get", "sprints_get", True),
    ],
)
def test_more_cases(pattern, name, expected):
    assert match_glob(pattern, name) is expected


def test_the_examples_from_the_api_reference():
    assert match_glob("sprints.*", "sprints.get") is True
    assert match_glob("sprints.*", "sprints.tasks.get") is False
    assert match_glob("**", "anything.at.all") is True


def test_max_iterations_is_1024():
    assert MAX_ITERATIONS == 1024


def test_a_match_within_the_cap_is_found():
    name = ".".join(["seg"] * 900 + ["get"])
    assert match_glob("**.get", name)


def test_beyond_the_cap_there_is_no_match():
    name = ".".join(["seg"] * 1100 + ["get"])
    assert not match_glob("**.get", name)
    assert not match_glob("**", ".".join(["seg"] * 1100))


def test_the_cap_is_exactly_where_steps_run_out():
    # `**.x` against n segments ending in x takes n + 1 steps: one to enter `**`, then one per segment.
    def matches_with_segments(n: int) -> bool:
        return match_glob("**.x", ".".join(["a"] * (n - 1) + ["x"]))

    assert matches_with_segments(MAX_ITERATIONS - 1)  # 1024 steps
    assert not matches_with_segments(MAX_ITERATIONS)  # 1025 steps


def test_an_adversarial_pattern_is_cut_off_quickly():
    pattern = ".".join(["**", "a"] * 12 + ["b"])
    name = ".".join(["a"] * 200)
    assert not match_glob(pattern, name)


def test_no_recursion_even_for_very_long_names():
    name = ".".join(["a"] * (sys.getrecursionlimit() * 3))
    assert match_glob(name, name) is False  # literal compare still counts steps: beyond the cap
    assert match_glob("a", "a") is True


# --- agreement with an independent reference --------------------------------------------------------------------


@cache
def reference(pattern: tuple[str, ...], name: tuple[str, ...]) -> bool:
    """The definition, written recursively: ** takes zero segments or one more; * takes one; text takes itself."""
    if not pattern:
        return not name
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return reference(rest, name) or (bool(name) and reference(pattern, name[1:]))
    return bool(name) and (head == "*" or head == name[0]) and reference(rest, name[1:])


PATTERN_SEGMENTS = st.sampled_from(["a", "b", "c", "*", "**"])
NAME_SEGMENTS = st.sampled_from(["a", "b", "c", "d", ""])


@settings(max_examples=1500)
@given(
    pattern=st.lists(PATTERN_SEGMENTS, min_size=1, max_size=7),
    name=st.lists(NAME_SEGMENTS, min_size=1, max_size=9),
)
@pytest.mark.slow
def test_agrees_with_the_reference(pattern, name):
    # (7 + 1) × 9 = 72 steps at most: well within the cap, so the cap never decides here.
    expected = reference(tuple(pattern), tuple(name))
    assert match_segments(pattern, name) is expected
    assert match_glob(".".join(pattern), ".".join(name)) is expected


@settings(max_examples=300)
@given(name=st.lists(NAME_SEGMENTS, min_size=1, max_size=9))
def test_a_name_used_as_its_own_pattern_matches(name):
    joined = ".".join(name)
    assert match_glob(joined, joined)
    assert match_glob("**", joined)
    assert match_glob(".".join("*" for _ in name), joined)
