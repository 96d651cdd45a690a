"""Bookkeeping for events the writer could not store: counted per session, recorded later as one warning each.

A loss is never silent: once the log can be written, the writer records a `warning` event in the session that lost
events, in the place (seq) of the first one lost, saying how many were lost and why.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from mcpwatch.events import Event, Kind


@dataclass(slots=True)
class Loss:
    """A run of lost events in one session, to be recorded as one warning event."""

    first: Event
    count: int
    last_seq: int
    cause: str

    def warning(self) -> Event:
        first = self.first
        message = (
            f"{self.count} events dropped ({self.cause}; seq {first.seq}..{self.last_seq}); "
            f"this warning takes the seq of the first one lost"
        )
        return Event(
            kind=Kind.WARNING.value,
            session_id=first.session_id,
            ts=first.ts,
            mono=first.mono,
            seq=first.seq,
            data={"message": message, "dropped": self.count, "first_seq": first.seq, "last_seq": self.last_seq},
        )


class LossLedger:
    """Thread-safe: `lose` is called from the caller's thread (a full queue) and the writer's (a failed write)."""

    def __init__(self) -> None:
        self.dropped = 0  # every event lost, recorded as lost or not
        self.recorded = 0  # of those, how many a warning written to the log accounts for
        self._lock = threading.Lock()
        self._pending: dict[str, Loss] = {}

    def __bool__(self) -> bool:
        return bool(self._pending)

    def lose(self, events: list[Any], cause: str) -> None:
        with self._lock:
            self.dropped += len(events)
            for event in events:
                if not isinstance(event, Event):
                    continue  # counted; without a session there is nowhere to report it
                loss = self._pending.get(event.session_id)
                if loss is None:
                    self._pending[event.session_id] = Loss(event, 1, event.seq, cause)
                else:
                    loss.count += 1
                    loss.last_seq = max(loss.last_seq, event.seq)

    def count_unusable(self) -> None:
        with self._lock:
            self.dropped += 1

    def take(self) -> list[Loss]:
        if not self._pending:
            return []
        with self._lock:
            losses = list(self._pending.values())
            self._pending.clear()
        return losses

    def restore(self, losses: list[Loss]) -> None:
        """Put back losses whose warnings could not be written, merging with any lost since."""
        with self._lock:
            for loss in losses:
                current = self._pending.get(loss.first.session_id)
                if current is None:
                    self._pending[loss.first.session_id] = loss
                else:
                    current.count += loss.count
                    current.last_seq = max(current.last_seq, loss.last_seq)
                    if loss.first.seq < current.first.seq:
                        current.first = loss.first

    def mark_recorded(self, losses: list[Loss]) -> None:
        with self._lock:
            self.recorded += sum(loss.count for loss in losses)
