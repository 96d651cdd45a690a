"""What the operator's side may read and ask of one wrapper core, declared in one place: the operator modules are
typed against this, never against the core's class (`core.pump.WrapperCore` satisfies it), so what the operator
reaches is written down and the core can change inside without them."""

from __future__ import annotations

from typing import Protocol

from mcpwatch.reliability.deadline import DeadlinePolicy
from mcpwatch.reliability.statesync import StateSync
from mcpwatch.reliability.tombstones import TtlTerms
from mcpwatch.scheduler import Scheduler
from mcpwatch.wrapper.calls.pending import Counters, HostLink, PendingTable
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.core.hostwatch import HostDirectory
from mcpwatch.wrapper.core.pressure import Backpressure
from mcpwatch.wrapper.core.session import UpstreamSession


class OperatedCore(Protocol):
    name: str
    session: UpstreamSession  # its state, link, tombstones, and the wrapper's own requests upstream
    recorder: Recorder
    scheduler: Scheduler
    deadline: DeadlinePolicy  # the operator's deadline changes apply here
    hosts: HostDirectory
    counters: Counters
    pressure: Backpressure
    table: PendingTable  # the calls in flight, read for status
    state_sync: StateSync | None
    links: list[HostLink]  # the hosts an operator call's invalidation hints go to

    def ttl_terms(self) -> TtlTerms: ...

    def cancel(self, request_id: str) -> bool: ...
