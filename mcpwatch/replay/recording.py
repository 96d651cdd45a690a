"""One recorded session of an event log, opened read-only and cheaply whatever its size.

Opening resolves the session (by id, unique prefix, or the latest) and reads only its first and last events; the
markers scan (deadlines, errors, late drops, config changes) is one SQL pass over narrow columns, run in the
background by the replay. Every problem with the file or the session is a `LogError` (one line, exit 2).

The session lookup here does not count events the way `EventReader.session()` does: that aggregate reads every row
of the session (about a second for a million events), which would use up replay's whole opening budget. All SQL is
the store's own (`EventReader`): the schema has one reader.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mcpwatch.events import Event, Kind, Outcome
from mcpwatch.logview.ending import crashed_reason, stand_in_end
from mcpwatch.registry import pid_alive
from mcpwatch.store import EventReader
from mcpwatch.store.reader import MarkerRow, SessionInfo

# request_end outcomes that `n` / `N` stop at (with late drops); `cancelled` is an operator's choice, not a fault.
PROBLEM_OUTCOMES = (Outcome.DEADLINE, Outcome.ERROR, Outcome.UPSTREAM_LOST, Outcome.TOOL_ERROR)


@dataclass(frozen=True, slots=True)
class Marker:
    """Something worth jumping to or seeing on the timeline bar.

    kind: "deadline" (a call cut at its budget), "error" (tool_error, error, upstream_lost), "late_drop" (a late
    answer dropped by a tombstone), "late_result" (a cut call's answer arrived after all) or "config" (a deadline
    setting changed).
    """

    seq: int
    mono: float
    kind: str
    text: str
    request_id: str | None = None

    @property
    def is_problem(self) -> bool:
        """Whether `n` / `N` stop here."""
        return self.kind != "config"


def _marker(row: MarkerRow) -> Marker:
    seq, mono, kind, request_id, tool, outcome, key, old, new, delay = row
    who = f"#{request_id} {tool}" if request_id and tool else f"#{request_id}" if request_id else tool or "?"
    if kind == Kind.LATE_RESULT:
        after = f" {delay:.1f}s after its cut" if isinstance(delay, int | float) else ""
        return Marker(seq, mono, "late_result", f"finished late ({outcome or '?'}){after}: {who}", request_id)
    if kind == Kind.TOMBSTONE_HIT:
        return Marker(seq, mono, "late_drop", f"late answer dropped for {who}", request_id)
    if kind == Kind.CONFIG_CHANGE:
        return Marker(seq, mono, "config", f"{key or 'setting'}: {old} → {new}", request_id)
    what = "deadline" if outcome == Outcome.DEADLINE else "error"
    return Marker(seq, mono, what, f"{(outcome or '?').replace('_', ' ')}: {who}", request_id)


def resolve_session(path: Path, id_or_prefix: str | None) -> SessionInfo:
    """The session with this id, the only one starting with it, or (None) the latest; LogError otherwise.
    Its counts are not read (see the module docstring)."""
    with EventReader(path) as reader:
        return reader.find_session(id_or_prefix, counts=False)


class Recording:
    """A session of a log file, read-only. `events()` is for the thread that opened it; a background thread
    opens its own reader with `open_reader()` (an SQLite connection belongs to one thread at a time)."""

    def __init__(self, path: str | Path, session: str | None = None, *, last_seq: int | None = None) -> None:
        self.path = Path(path)
        self.session = resolve_session(self.path, session)
        self.reader = EventReader(self.path)
        try:
            # Where the recording ends for this replay: a session still being written grows, but not under us.
            recorded = self.reader.max_seq(self.session.id)
            self.last_seq = recorded if last_seq is None else min(last_seq, recorded)
            last = next(self.reader.events(self.session.id, after_seq=max(0, self.last_seq - 1), limit=1), None)
            first = next(self.reader.events(self.session.id, limit=1), None)
        except BaseException:
            self.reader.close()
            raise
        self.first: Event | None = first
        self.last: Event | None = last
        self.end: Event | None = None  # a crashed session's stand-in end, after its last recorded event
        if last is not None and last.seq == recorded and self._crashed(last):
            self.end = stand_in_end(self.session.id, last, crashed_reason(last.ts))
            self.last, self.last_seq = self.end, self.end.seq
        self._seek_reader: EventReader | None = None

    def _crashed(self, last: Event) -> bool:
        """No end recorded, none in the events, and the wrapper's process is gone."""
        session = self.session
        return session.ended_at is None and last.kind != Kind.SESSION_END and not pid_alive(session.pid)

    @property
    def session_id(self) -> str:
        return self.session.id

    @property
    def end_mono(self) -> float:
        """Session time of the last recorded event (0 for an empty session)."""
        return max(0.0, self.last.mono) if self.last is not None else 0.0

    @property
    def origin_ts(self) -> float | None:
        """Unix time of mono 0, as the console's model derives it."""
        event = self.first
        return None if event is None else event.ts - event.mono

    def open_reader(self) -> EventReader:
        return EventReader(self.path)

    def events(
        self, after_seq: int = 0, limit: int | None = None, reader: EventReader | None = None
    ) -> Iterator[Event]:
        """The session's events after `after_seq` (up to the last one seen at opening), in seq order."""
        last = self.last_seq
        given = 0
        for event in (reader or self.reader).events(self.session.id, after_seq=after_seq, limit=limit):
            if event.seq > last or (self.end is not None and event.seq >= self.end.seq):
                return
            given += 1
            yield event
        if self.end is not None and after_seq < self.end.seq and (limit is None or given < limit):
            yield self.end

    def event_at_offset(self, after_seq: int, offset: int) -> tuple[int, float] | None:
        """(seq, mono) of the `offset`-th event after `after_seq` (1 = the next one); None past the end.

        On a reader of its own, opened on first use by the thread that seeks.
        """
        if self._seek_reader is None:
            self._seek_reader = EventReader(self.path)
        return self._seek_reader.event_at_offset(self.session.id, after_seq, self.last_seq, offset)

    def markers(self) -> list[Marker]:
        """Deadlines, errors, late drops and config changes, in seq order (one pass over the session's rows)."""
        with EventReader(self.path) as reader:
            rows = reader.marker_rows(self.session.id, self.last_seq, PROBLEM_OUTCOMES)
        return [_marker(r) for r in rows]

    def close(self) -> None:
        self.reader.close()
        if self._seek_reader is not None:
            self._seek_reader.close()
            self._seek_reader = None
