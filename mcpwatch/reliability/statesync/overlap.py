"""Start-up check for policies that can never apply because an earlier one matches every name they match.

Under first-match-wins, policy j is dead when an earlier policy i matches every tool name that j matches, i.e. the
language of j's pattern is contained in i's. The check is exact rather than a structural guess: both patterns are
small automata over segments, and a breadth-first walk of their product looks for a name that j matches and i does
not. Only the literals the two patterns mention can tell names apart, so the walk tries those plus one fresh
literal standing for every other segment. A name has at least one segment (`"".split(".")` is `[""]`), so the walk
never accepts the empty word. The counterexample it finds is returned as a real name, which makes the answer easy
to check.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcpwatch.reliability.statesync.glob import ANY, ONE, SEPARATOR
from mcpwatch.reliability.statesync.validate import Policy, parse_policies

STATE_LIMIT = 10_000  # product states explored before giving up (then no warning is raised)

_State = tuple[frozenset[int], frozenset[int]]  # (positions in the specific pattern, positions in the general one)


@dataclass(frozen=True)
class OverlapWarning:
    shadowing_index: int
    shadowed_index: int
    message: str


def _closure(segments: Sequence[str], positions: set[int]) -> frozenset[int]:
    """Positions reachable by letting `**` match nothing."""
    stack = list(positions)
    seen: set[int] = set()
    while stack:
        position = stack.pop()
        if position in seen:
            continue
        seen.add(position)
        if position < len(segments) and segments[position] == ANY:
            stack.append(position + 1)
    return frozenset(seen)


def _step(segments: Sequence[str], positions: frozenset[int], symbol: str) -> frozenset[int]:
    following: set[int] = set()
    for position in positions:
        if position == len(segments):
            continue
        segment = segments[position]
        if segment == ANY:
            following.add(position)
        elif segment in (ONE, symbol):
            following.add(position + 1)
    return _closure(segments, following)


def _fresh_literal(taken: set[str]) -> str:
    candidate = "x"
    while candidate in taken:
        candidate += "x"
    return candidate


def uncovered_name(general: str, specific: str) -> str | None:
    """A name that `specific` matches and `general` does not; None when none exists (or the search gave up)."""
    found, witness = _search(general.split(SEPARATOR), specific.split(SEPARATOR))
    return witness if found else None


def covers(general: str, specific: str) -> bool:
    """Whether `general` matches every name that `specific` matches (False if that could not be decided)."""
    found, witness = _search(general.split(SEPARATOR), specific.split(SEPARATOR))
    return not found and witness == ""


def _search(general: Sequence[str], specific: Sequence[str]) -> tuple[bool, str | None]:
    """(True, name) with a counterexample; (False, "") when general covers specific; (False, None) if undecided."""
    literals = {s for s in (*general, *specific) if s not in (ONE, ANY)}
    alphabet = [*sorted(literals), _fresh_literal(literals)]
    g_end = len(general)
    s_end = len(specific)
    start: _State = (_closure(specific, {0}), _closure(general, {0}))
    parent: dict[_State, tuple[_State | None, str]] = {}
    queue: deque[_State] = deque()
    # The start state is the empty word, which is no name: expand it but never accept it.
    for symbol in alphabet:
        state = (_step(specific, start[0], symbol), _step(general, start[1], symbol))
        if state[0] and state not in parent:
            parent[state] = (None, symbol)
            queue.append(state)
    while queue:
        state = queue.popleft()
        s_positions, g_positions = state
        if s_end in s_positions and g_end not in g_positions:
            return True, _word(parent, state)
        if len(parent) > STATE_LIMIT:
            return False, None
        for symbol in alphabet:
            following = (_step(specific, s_positions, symbol), _step(general, g_positions, symbol))
            if following[0] and following not in parent:
                parent[following] = (state, symbol)
                queue.append(following)
    return False, ""


def _word(parent: Mapping[_State, tuple[_State | None, str]], state: _State) -> str:
    symbols: list[str] = []
    current: _State | None = state
    while current is not None:
        current, symbol = parent[current]
        symbols.append(symbol)
    return SEPARATOR.join(reversed(symbols))


def detect_overlaps(policies: Sequence[Mapping[str, object]] | Sequence[Policy]) -> list[OverlapWarning]:
    """One warning per policy that an earlier policy fully shadows (naming the first such earlier policy)."""
    parsed = parse_policies(policies)
    warnings: list[OverlapWarning] = []
    for later in parsed:
        for earlier in parsed[: later.index]:
            if covers(earlier.match, later.match):
                warnings.append(
                    OverlapWarning(
                        earlier.index,
                        later.index,
                        f"policy [{later.index}] match {later.match!r} is shadowed by policy [{earlier.index}] "
                        f"match {earlier.match!r}, which matches every name it does: first match wins, so "
                        f"policy [{later.index}] never applies",
                    )
                )
                break
    return warnings
