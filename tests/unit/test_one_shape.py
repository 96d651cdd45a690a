"""One definition per shape: the copies a type cannot derive are held to the one definition here, and the
defects that hid where two definitions had drifted apart stay fixed."""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path
from typing import get_args

import pytest

from mcpwatch import config, events
from mcpwatch.clock import ManualClock
from mcpwatch.console.headless.model import ConsoleModel
from mcpwatch.console.headless.panels.counters import Counters
from mcpwatch.console.headless.panels.tombstones import TtlTerms as TtlTermsView
from mcpwatch.console.headless.tally import Tally
from mcpwatch.errors import UserError
from mcpwatch.events import (
    COUNTER_NAMES,
    CountersBlock,
    Event,
    Kind,
    Outcome,
    OutcomeText,
    SessionStartData,
    TtlTermsBlock,
)
from mcpwatch.events import HostClock as HostClockBlock
from mcpwatch.reliability.deadline import DeadlinePolicy
from mcpwatch.reliability.hosts import HostClock, HostProfileError, check_override_tables
from mcpwatch.reliability.setting_checks import check_of
from mcpwatch.reliability.settings import DeadlineSettings, TombstoneSettings
from mcpwatch.reliability.tombstones import TtlTerms, ttl_terms
from mcpwatch.wrapper.calls import pending
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.operator.actions import change_deadline, reset_deadline

PACKAGE = Path(config.__file__).parent


def test_the_counters_are_declared_once_and_the_wire_shape_is_held_to_them() -> None:
    """The counters were declared three times (a TypedDict and two dataclasses); the wrapper and the console now
    share `events.Counters`, and the wire's TypedDict (which a type checker must read) is held to it here."""
    assert pending.Counters is events.Counters and Counters is events.Counters
    assert tuple(f.name for f in fields(events.Counters)) == COUNTER_NAMES
    assert tuple(CountersBlock.__annotations__) == COUNTER_NAMES
    assert tuple(events.Counters(requests=1).to_dict()) == COUNTER_NAMES
    assert tuple(Tally().counts) == COUNTER_NAMES


def test_no_other_class_declares_the_counters() -> None:
    """A class with most of the counters as its fields is a second declaration: only the two above may be one."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names = {
                    s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                }
                if len(names & set(COUNTER_NAMES)) >= len(COUNTER_NAMES) // 2:
                    found.append(f"{path.relative_to(PACKAGE)}:{node.name}")
    assert found == ["events.py:Counters", "events.py:CountersBlock"]


def test_the_wrappers_counters_are_all_declared() -> None:
    """The wrapper counted progress_coalesced and upstream_pauses under keys the contract did not have."""
    block = pending.Counters(progress_coalesced=2, upstream_pauses=1).to_dict()
    assert set(block) == set(CountersBlock.__annotations__)
    assert (block["progress_coalesced"], block["upstream_pauses"]) == (2, 1)


def test_a_host_clock_and_the_ttl_terms_have_one_shape_on_the_wire_and_in_the_console() -> None:
    """HostClock and the TTL terms are declared as data (`reliability`) and as the wire shape (`events`); the console
    keeps a view of the terms whose values may be unknown. Their fields are held to the wire shape here."""
    assert tuple(f.name for f in fields(HostClock)) == tuple(HostClockBlock.__annotations__)
    assert set(HostClock("wall", 60.0, "x").to_dict()) == set(HostClockBlock.__annotations__)
    wire = tuple(TtlTermsBlock.__annotations__)
    assert (*(f.name for f in fields(TtlTerms)), "total_s") == wire
    assert tuple(f.name for f in fields(TtlTermsView)) == wire
    assert tuple(TtlTerms(1.0, 2.0, 3.0, 4.0).to_dict()) == wire


@pytest.mark.parametrize("bad", [-5, 0, float("nan"), float("inf"), 10**9, 10**400, True, "300", [1]])
def test_a_host_clock_is_checked_by_the_one_seconds_rule(bad: object) -> None:
    """`[hosts.*]` clocks had a rule of their own ("greater than 0 and at most a week" for -5, where every other
    setting says "must not be negative"): the same bad value now gets the same words as `[deadline]`'s."""
    with pytest.raises(UserError) as deadline:
        config.settings_from_mapping({"deadline": {"host_timeout_s": bad}})
    with pytest.raises(HostProfileError) as host:
        check_override_tables({"codex-mcp-client": {"wall_s": bad}})
    said = str(deadline.value).split("deadline.host_timeout_s ", 1)[1]
    assert str(host.value) == f"hosts.codex-mcp-client.wall_s {said}"


def test_outcome_text_is_the_outcomes_values() -> None:
    assert sorted(get_args(OutcomeText)) == sorted(o.value for o in Outcome)


def test_settings_keys_are_the_dataclasses_fields_and_each_declares_its_check() -> None:
    """A key and its check are one declaration, the field (`setting_checks.setting`): no table beside the
    dataclasses to keep in step, and no setting (a table either) parsed by its name. A field without a check fails
    here."""
    assert set(config.SECTIONS) == {f.name for f in fields(config.Settings)} - {"hosts", "source"}
    for section, cls in config.SECTIONS.items():
        assert tuple(f.name for f in fields(cls)) == config.KEYS[section]
        for f in fields(cls):
            assert check_of(f) is not None, f"{section}.{f.name} declares no check (setting(default, check))"


def test_a_check_declared_on_a_field_is_the_one_the_file_meets() -> None:
    """The metadata is what validation reads: a bad value gets the field's own check's words, naming the key."""
    with pytest.raises(UserError) as bad:
        config.settings_from_mapping({"tombstones": {"cap": 0}})
    assert str(bad.value) == "mcpwatch.toml: tombstones.cap must be a whole number from 1 to 100000000, got 0"
    with pytest.raises(UserError) as directive:
        config.settings_from_mapping({"state_sync": {"default_cache_control": "maybe"}})
    assert str(directive.value).endswith("must be one of no-store, immutable, got 'maybe'")


def test_every_type_ignore_names_its_code_and_says_why() -> None:
    bare = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "type: ignore" in line and not re.search(r"# type: ignore\[[\w, -]+\]\s+#\s*\S", line)
    ]
    assert bare == []


class _Sink:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)


def test_a_deadline_change_carries_the_new_tombstone_ttl_to_the_console() -> None:
    """The console read config_change's `tombstone_ttl`, which no wrapper sent: after an operator moved the host
    timeout, the tombstones panel kept the old TTL. The change now says the new terms, and the console shows them."""
    clock = ManualClock()
    sink = _Sink()
    recorder = Recorder("s-1", sink, clock=clock)
    policy = DeadlinePolicy(DeadlineSettings(host_timeout_s=120.0, margin_s=10.0), environ={})
    tombstones = TombstoneSettings()

    def current():
        return policy.budget(None)

    def terms():
        return ttl_terms(policy.budget(None), tombstones).to_dict()

    start = SessionStartData(
        name="w",
        pid=1,
        version="0",
        front="stdio",
        upstream={"kind": "stdio", "target": "x"},
        config={},
        deadline=current().to_dict(),
        tombstone_ttl=terms(),
        state_sync={"policies": 0, "overlaps": []},
    )
    recorder.emit(Kind.SESSION_START, **start)
    before = terms()["total_s"]
    clock.advance(1.0)
    change_deadline(policy, recorder, "host_timeout_s", 600.0, current, terms)
    change = sink.events[-1]
    assert change.kind == Kind.CONFIG_CHANGE and change.data["tombstone_ttl"] == terms()
    assert terms()["total_s"] == before + 480.0

    model = ConsoleModel()
    model.apply_many(sink.events)
    assert model.view(change.mono + 1.0).tombstones.terms.total_s == before + 480.0

    clock.advance(1.0)
    reset_deadline(policy, recorder, current, terms)
    model.apply_many(sink.events[-1:])
    assert sink.events[-1].data["tombstone_ttl"]["total_s"] == before
    assert model.view(sink.events[-1].mono + 1.0).tombstones.terms.total_s == before
