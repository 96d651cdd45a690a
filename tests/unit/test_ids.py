"""The upstream id space: never reused, and every id tied to the connection generation it was issued in."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpwatch.reliability.ids import UpstreamIds


def test_starts_at_generation_one_with_id_one():
    ids = UpstreamIds()
    assert ids.generation == 1
    assert ids.issued == 0
    assert ids.allocate() == 1
    assert ids.allocate() == 2
    assert ids.issued == 2


def test_ids_keep_rising_across_generations():
    ids = UpstreamIds()
    first = [ids.allocate() for _ in range(3)]
    assert ids.new_generation() == 2
    second = [ids.allocate() for _ in range(3)]
    assert first == [1, 2, 3]
    assert second == [4, 5, 6]


def test_classification_across_generations():
    ids = UpstreamIds()
    old = ids.allocate()
    ids.new_generation()
    current = ids.allocate()
    assert ids.generation_of(old) == 1
    assert ids.generation_of(current) == 2
    assert ids.classify(old) == "stale_generation"
    assert ids.classify(current) == "current"
    ids.new_generation()
    assert ids.classify(current) == "stale_generation"
    assert ids.generation_of(current) == 2


def test_generations_that_issued_nothing_do_not_confuse_the_lookup():
    ids = UpstreamIds()
    ids.new_generation()  # 2: nothing issued (connect failed)
    ids.new_generation()  # 3
    up_id = ids.allocate()
    ids.new_generation()  # 4: nothing issued
    assert ids.generation_of(up_id) == 3
    assert ids.classify(up_id) == "stale_generation"
    assert ids.generation == 4


@pytest.mark.parametrize("up_id", [0, -1, 3, 10**30, True, False, 1.0, "1", None, [1], {"id": 1}])
def test_anything_never_issued_is_unknown(up_id):
    ids = UpstreamIds()
    ids.allocate()
    ids.allocate()
    assert ids.generation_of(up_id) is None
    assert ids.classify(up_id) == "unknown"


def test_a_future_id_is_unknown_until_issued():
    ids = UpstreamIds()
    assert ids.classify(1) == "unknown"
    ids.allocate()
    assert ids.classify(1) == "current"


def test_int_subclasses_other_than_int_are_not_ids():
    class Sneaky(int):
        pass

    ids = UpstreamIds()
    ids.allocate()
    assert ids.classify(Sneaky(1)) == "unknown"


def test_custom_first_id() -> None:
    ids = UpstreamIds(first_id=1000)
    assert ids.allocate() == 1000
    assert ids.classify(999) == "unknown"
    assert ids.classify(1000) == "current"
    with pytest.raises(ValueError):
        UpstreamIds(first_id="1")  # type: ignore[arg-type]


@given(st.lists(st.sampled_from(["allocate", "reconnect"]), max_size=80))
def test_every_issued_id_keeps_its_generation(script):
    ids = UpstreamIds()
    issued: dict[int, int] = {}
    for step in script:
        if step == "allocate":
            up_id = ids.allocate()
            assert up_id not in issued
            assert all(up_id > earlier for earlier in issued)
            issued[up_id] = ids.generation
        else:
            ids.new_generation()
    for up_id, generation in issued.items():
        assert ids.generation_of(up_id) == generation
        assert ids.classify(up_id) == ("current" if generation == ids.generation else "stale_generation")
    assert ids.classify(max(issued, default=0) + 1) == "unknown"
    assert ids.issued == len(issued)
