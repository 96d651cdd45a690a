"""The console model's parts, composed: each owns its state and folds the events of its kind; they share only the
`Tally` (counters) and the `NotableLog` (the Events feed), and the tombstones and tasks parts reach a call through
the calls part's methods. `ConsoleModel` routes each event kind to the part that handles it."""

from __future__ import annotations

from dataclasses import dataclass

from mcpwatch.console.headless.notable import NotableLog
from mcpwatch.console.headless.request_events import CallsPart
from mcpwatch.console.headless.session_events import SessionPart
from mcpwatch.console.headless.tally import Tally
from mcpwatch.console.headless.task_events import TasksPart
from mcpwatch.console.headless.tombstone_events import TombstonesPart
from mcpwatch.console.headless.views import Limits


@dataclass(slots=True)
class ModelParts:
    limits: Limits
    tally: Tally
    notable: NotableLog
    session: SessionPart
    calls: CallsPart
    tombstones: TombstonesPart
    tasks: TasksPart

    @classmethod
    def fresh(cls, limits: Limits) -> ModelParts:
        tally, notable = Tally(), NotableLog()
        calls = CallsPart(limits, tally)
        return cls(
            limits,
            tally,
            notable,
            SessionPart(limits, tally, notable),
            calls,
            TombstonesPart(limits, calls, tally, notable),
            TasksPart(calls),
        )

    def copy(self) -> ModelParts:
        """A deep-enough copy: containers are copied, immutable items (view tuples, strings) shared; each part of
        the copy works with the copy's other parts, and a request still shares its tombstone's record."""
        tally, notable = self.tally.copy(), self.notable.copy()
        records, by_original = self.tombstones.copied_records()
        calls = self.calls.copy(tally, by_original)
        return ModelParts(
            self.limits,
            tally,
            notable,
            self.session.copy(tally, notable),
            calls,
            TombstonesPart(self.limits, calls, tally, notable, records),
            TasksPart(calls),
        )
