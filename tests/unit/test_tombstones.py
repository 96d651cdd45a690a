"""Tombstones: the TTL formula, the age < ttl boundary, the cap, sweeps, and invariants under random use."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpwatch.clock import ManualClock
from mcpwatch.config import DeadlineSettings, TombstoneSettings
from mcpwatch.reliability.deadline import ENV_EXPLICIT, DeadlinePolicy
from mcpwatch.reliability.tombstones import REASONS, Tombstone, TombstoneTable, TtlTerms, ttl_terms


def make(cap: int = 100_000) -> tuple[ManualClock, TombstoneTable]:
    clock = ManualClock()
    return clock, TombstoneTable(clock=clock, cap=cap)


# --- TTL terms ----------------------------------------------------------------------------------------------


def test_ttl_is_budget_plus_init_plus_backoff_max_plus_epsilon():
    budget = DeadlinePolicy(DeadlineSettings(), environ={}).budget()
    terms = ttl_terms(budget, TombstoneSettings())
    assert terms == TtlTerms(request_timeout_s=110, init_timeout_s=10, backoff_max_s=30, epsilon_s=5)
    assert terms.total_s == 155
    assert terms.to_dict() == {
        "request_timeout_s": 110,
        "init_timeout_s": 10,
        "backoff_max_s": 30,
        "epsilon_s": 5,
        "total_s": 155,
    }


def test_disabled_budget_uses_the_host_timeout_as_request_timeout():
    budget = DeadlinePolicy(DeadlineSettings(host_timeout_s=300), environ={ENV_EXPLICIT: "0"}).budget()
    assert budget.seconds is None
    terms = ttl_terms(budget, TombstoneSettings(init_timeout_s=1, backoff_max_s=2, epsilon_s=3))
    assert terms.request_timeout_s == 300
    assert terms.total_s == 306


def test_explicit_budget_is_the_request_timeout():
    budget = DeadlinePolicy(DeadlineSettings(), environ={ENV_EXPLICIT: "45"}).budget()
    assert ttl_terms(budget, TombstoneSettings()).total_s == 90


# --- the age < ttl boundary --------------------------------------------------------------------------------


def test_tombstoned_one_millisecond_before_the_ttl():
    clock, table = make()
    table.add(7, ttl_s=155.0, reason="deadline")
    clock.advance(155.0 - 0.001)
    assert table.lookup(7) is not None
    assert table.sweep() == []
    assert len(table) == 1


def test_not_tombstoned_at_exactly_the_ttl():
    clock, table = make()
    stone = table.add(7, ttl_s=155.0, reason="deadline")
    clock.advance(155.0)
    assert table.lookup(7) is None
    assert len(table) == 1  # expired but not yet swept: already absent to lookups
    assert table.sweep() == [stone]
    assert len(table) == 0


def test_zero_ttl_is_never_tombstoned():
    _, table = make()
    table.add(1, ttl_s=0, reason="shutdown")
    assert table.lookup(1) is None


def test_ttl_is_kept_per_tombstone_so_a_change_applies_to_new_ones_only():
    clock, table = make()
    table.add(1, ttl_s=100.0, reason="deadline")
    table.add(2, ttl_s=10.0, reason="deadline")  # the TTL went down (e.g. budget lowered)
    clock.advance(50.0)
    assert table.lookup(1) is not None
    assert table.lookup(2) is None
    assert [s.key for s in table.sweep()] == [2]


# --- add / lookup / hit ----------------------------------------------------------------------------------------


def test_add_records_what_the_console_shows():
    clock, table = make()
    stone = table.add(3, ttl_s=75.0, reason="operator_cancel", request_id="req-9", tool="consult_council")
    assert stone == Tombstone(3, "req-9", "consult_council", "operator_cancel", clock.monotonic(), 75.0)
    assert stone.expires_at == clock.monotonic() + 75.0
    clock.advance(30.0)
    assert stone.age(clock.monotonic()) == 30.0
    assert stone.expires_in(clock.monotonic()) == 45.0
    assert stone.is_live(clock.monotonic())


@pytest.mark.parametrize("reason", sorted(REASONS))
def test_every_reason_is_accepted(reason):
    _, table = make()
    assert table.add(1, ttl_s=1.0, reason=reason).reason == reason


def test_reasons_are_the_documented_five():
    assert {"deadline", "host_cancel", "operator_cancel", "upstream_lost", "shutdown"} == REASONS


def test_unknown_reason_is_refused():
    _, table = make()
    with pytest.raises(ValueError, match="unknown tombstone reason 'timeout'"):
        table.add(1, ttl_s=1.0, reason="timeout")
    assert len(table) == 0


@pytest.mark.parametrize("ttl", [-1.0, math.nan, math.inf, True, "5"])
def test_bad_ttl_is_refused(ttl):
    _, table = make()
    with pytest.raises(ValueError, match="ttl_s must be a finite number"):
        table.add(1, ttl_s=ttl, reason="deadline")


@pytest.mark.parametrize("cap", [0, -1, True, 2.5])
def test_bad_cap_is_refused(cap):
    with pytest.raises(ValueError, match="cap must be"):
        TombstoneTable(clock=ManualClock(), cap=cap)


def test_lookup_of_an_unknown_key_is_none():
    _, table = make()
    table.add(1, ttl_s=10.0, reason="deadline")
    assert table.lookup(2) is None
    assert table.lookup([1]) is None  # an unhashable id from a malformed message
    assert table.hit({"id": 1}) is None
    assert table.hit(True) is None  # JSON true is not id 1
    assert table.hits == 0
    assert 1 in table
    assert 2 not in table


def test_hit_counts_per_entry_and_in_total():
    clock, table = make()
    table.add(1, ttl_s=10.0, reason="deadline")
    table.add(2, ttl_s=10.0, reason="deadline")
    assert table.hit(1).hits == 1
    assert table.hit(1).hits == 2
    assert table.hit(2).hits == 1
    assert table.hits == 3
    assert table.hit(99) is None
    clock.advance(10.0)
    assert table.hit(1) is None  # expired: not a hit
    assert table.hits == 3
    assert table.lookup(2) is None


def test_lookup_does_not_count_a_hit():
    _, table = make()
    table.add(1, ttl_s=10.0, reason="deadline")
    table.lookup(1)
    assert table.hits == 0
    assert table.lookup(1).hits == 0


def test_re_adding_a_key_starts_it_afresh_as_the_newest():
    clock, table = make(cap=2)
    table.add(1, ttl_s=10.0, reason="deadline")
    table.add(2, ttl_s=10.0, reason="deadline")
    clock.advance(8.0)
    table.add(1, ttl_s=10.0, reason="host_cancel")
    clock.advance(5.0)
    assert table.lookup(1).reason == "host_cancel"
    assert table.lookup(2) is None
    table.add(3, ttl_s=10.0, reason="deadline")  # evicts 2, now the oldest, not 1
    assert table.evicted == 1
    assert table.lookup(1) is not None
    assert len(table) == 2


def test_discard_removes_whatever_the_age():
    _, table = make()
    table.add(1, ttl_s=10.0, reason="deadline")
    assert table.discard(1).key == 1
    assert table.discard(1) is None
    assert len(table) == 0


# --- cap -------------------------------------------------------------------------------------------------------


def test_over_the_cap_the_oldest_is_evicted_and_counted():
    _, table = make(cap=3)
    for key in range(1, 6):
        table.add(key, ttl_s=100.0, reason="deadline")
    assert len(table) == 3
    assert table.evicted == 2
    assert table.lookup(1) is None
    assert table.lookup(2) is None
    assert [table.lookup(k) is not None for k in (3, 4, 5)] == [True, True, True]
    assert table.cap == 3


def test_cap_holds_for_a_full_default_table():
    _, table = make()
    for key in range(100_001):
        table.add(key, ttl_s=100.0, reason="deadline")
    assert len(table) == 100_000
    assert table.evicted == 1
    assert table.lookup(0) is None
    assert table.lookup(100_000) is not None


# --- sweep --------------------------------------------------------------------------------------------------------


def test_sweep_removes_exactly_the_expired_and_returns_them_oldest_first():
    clock, table = make()
    table.add(1, ttl_s=5.0, reason="deadline")
    table.add(2, ttl_s=50.0, reason="deadline")
    table.add(3, ttl_s=5.0, reason="deadline")
    clock.advance(5.0)
    assert [s.key for s in table.sweep()] == [1, 3]
    assert len(table) == 1
    assert table.lookup(2) is not None
    assert table.sweep() == []


@pytest.mark.parametrize(("count", "expired"), [(10, 10), (10, 9), (10, 5), (10, 1)])
def test_sweep_paths_all_remove_exactly_the_expired(count, expired):
    clock, table = make()
    for key in range(count):
        table.add(key, ttl_s=1.0 if key % count < expired else 100.0, reason="deadline")
    clock.advance(1.0)
    swept = table.sweep()
    assert sorted(s.key for s in swept) == list(range(expired))
    assert len(table) == count - expired
    assert all(table.lookup(k) is not None for k in range(expired, count))
    # age order survives every path, so the cap still evicts the oldest survivor first
    assert [i["key"] for i in table.stats()["items"]] == list(reversed(range(expired, count)))


# --- next expiry and stats ----------------------------------------------------------------------------------------


def test_next_expiry_in():
    clock, table = make()
    assert table.next_expiry_in() is None
    table.add(1, ttl_s=30.0, reason="deadline")
    table.add(2, ttl_s=10.0, reason="deadline")
    assert table.next_expiry_in() == 10.0
    clock.advance(4.0)
    assert table.next_expiry_in() == 6.0
    clock.advance(20.0)
    assert table.next_expiry_in() == 0.0  # 2 awaits a sweep
    table.sweep()
    assert table.next_expiry_in() == 6.0


def test_stats_count_live_entries_and_list_newest_first():
    clock, table = make()
    table.add(1, ttl_s=5.0, reason="deadline", request_id="a", tool="t1")
    clock.advance(1.0)
    table.add(2, ttl_s=60.0, reason="host_cancel", request_id="b", tool="t2")
    clock.advance(1.0)
    table.add(3, ttl_s=60.0, reason="upstream_lost", request_id="c")
    table.hit(2)
    clock.advance(3.5)  # 1 has expired (age 5.5 ≥ 5) but is not swept
    stats = table.stats()
    assert stats["count"] == 2
    assert stats["stored"] == 3
    assert stats["hits"] == 1
    assert stats["evicted"] == 0
    assert stats["next_expiry_in_s"] == 0.0
    assert stats["items"] == [
        {"key": 3, "request_id": "c", "tool": None, "reason": "upstream_lost", "age_s": 3.5, "expires_in_s": 56.5,
         "hits": 0},
        {"key": 2, "request_id": "b", "tool": "t2", "reason": "host_cancel", "age_s": 4.5, "expires_in_s": 55.5,
         "hits": 1},
    ]  # fmt: skip


def test_stats_limit():
    _, table = make()
    for key in range(10):
        table.add(key, ttl_s=60.0, reason="deadline")
    assert [i["key"] for i in table.stats(limit=3)["items"]] == [9, 8, 7]
    assert table.stats(limit=0)["items"] == []
    assert table.stats(limit=0)["count"] == 10


# --- invariants under random use --------------------------------------------------------------------------------

KEYS = st.integers(min_value=0, max_value=12)
OPS = st.one_of(
    st.tuples(st.just("add"), KEYS, st.sampled_from([0.0, 0.5, 1.0, 2.5, 10.0])),
    st.tuples(st.just("advance"), st.sampled_from([0.0, 0.25, 0.5, 1.0, 3.0])),
    st.tuples(st.just("lookup"), KEYS),
    st.tuples(st.just("hit"), KEYS),
    st.tuples(
        st.just("sweep"),
    ),
)


@settings(max_examples=300, deadline=None)
@given(cap=st.integers(min_value=1, max_value=6), ops=st.lists(OPS, max_size=60))
def test_table_agrees_with_a_model(cap, ops):
    clock, table = make(cap=cap)
    model: dict[int, tuple[float, float]] = {}  # key -> (inserted_at, ttl); insertion order = age order
    evicted = 0
    hits = 0

    def live(key: int) -> bool:
        return key in model and clock.monotonic() - model[key][0] < model[key][1]

    for op in ops:
        if op[0] == "add":
            _, key, ttl = op
            model.pop(key, None)
            model[key] = (clock.monotonic(), ttl)
            table.add(key, ttl_s=ttl, reason="deadline")
            while len(model) > cap:
                del model[next(iter(model))]
                evicted += 1
        elif op[0] == "advance":
            clock.advance(op[1])
        elif op[0] == "lookup":
            assert (table.lookup(op[1]) is not None) == live(op[1])
        elif op[0] == "hit":
            expected = live(op[1])
            assert (table.hit(op[1]) is not None) == expected
            hits += expected
        else:
            expired = [k for k in model if not live(k)]
            assert [s.key for s in table.sweep()] == expired
            for key in expired:
                del model[key]
            assert all(table.lookup(k) is not None for k in model)
        assert len(table) == len(model) <= cap
        assert table.evicted == evicted
        assert table.hits == hits
    assert all((table.lookup(k) is not None) == live(k) for k in range(13))
    assert table.stats()["count"] == sum(live(k) for k in model)
