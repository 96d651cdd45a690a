"""The upstream id space, owned by the wrapper: ids are never reused and each belongs to one connection generation.

This is the seed's deferred "session ID gating" (tombstone-ttl-adr): because an id is never handed out twice and
its generation is known, a response from an old connection, or for an id never issued, is recognised and dropped
even after its tombstone has expired.
"""

from __future__ import annotations

from bisect import bisect_right


class UpstreamIds:
    """The wrapper owns the upstream id space: ids are never reused, and each id belongs to the connection
    generation it was issued in."""

    def __init__(self, *, first_id: int = 1) -> None:
        if isinstance(first_id, bool) or not isinstance(first_id, int):
            raise ValueError(f"first_id must be an int, got {first_id!r}")
        self._first = first_id
        self._next = first_id
        self.generation = 1
        # _starts[g - 1] is the first id issued in generation g; ids rise, so a bisect finds an id's generation.
        self._starts: list[int] = [first_id]

    @property
    def issued(self) -> int:
        """How many ids have been handed out in all generations."""
        return self._next - self._first

    def new_generation(self) -> int:
        """Start the next connection generation (called on each connect and reconnect); returns its number."""
        self.generation += 1
        self._starts.append(self._next)
        return self.generation

    def allocate(self) -> int:
        """The next id: strictly greater than every id issued before, in any generation."""
        up_id = self._next
        self._next += 1
        return up_id

    def generation_of(self, up_id: object) -> int | None:
        """The generation `up_id` was issued in, or None if it never was (including any non-int id)."""
        if type(up_id) is not int or not self._first <= up_id < self._next:  # bool and int subclasses excluded
            return None
        return bisect_right(self._starts, up_id)

    def classify(self, up_id: object) -> str:
        """ "current", "stale_generation" (issued on an earlier connection) or "unknown" (never issued)."""
        generation = self.generation_of(up_id)
        if generation is None:
            return "unknown"
        return "current" if generation == self.generation else "stale_generation"
