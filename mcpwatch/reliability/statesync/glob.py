"""Dot-separated glob matching for tool names (seed: state-sync, "Glob Pattern Matching").

`*` matches exactly one segment, `**` matches zero or more; any other segment matches itself. The matcher is
iterative (no recursion to exhaust) and stops after MAX_ITERATIONS steps, answering "no match", so an adversarial
pattern or name cannot make it spin. One step is one pass of the loop below; matching costs at most about
(pattern segments + 1) × (name segments) steps. A tool name of at most 128 characters has at most 64 segments, so
patterns of up to 15 segments never reach the cap; a longer pattern with `**` against such a name can, and then
answers "no match", as the seed's cap intends.
"""

from __future__ import annotations

from collections.abc import Sequence

MAX_ITERATIONS = 1024
SEPARATOR = "."
ONE = "*"
ANY = "**"


def match_segments(pattern: Sequence[str], name: Sequence[str]) -> bool:
    """Match already split segments: greedy, remembering only the last `**` to backtrack to.

    Backtracking to the most recent `**` alone is enough: an earlier `**` could only absorb segments that the
    later one can absorb just as well, so retrying it never finds a match the later one misses.
    """
    p_len = len(pattern)
    n_len = len(name)
    p = n = 0
    star = -1  # index of the last `**` seen
    resume = 0  # the name index that `**` is currently absorbing up to
    steps = 0
    while n < n_len:
        steps += 1
        if steps > MAX_ITERATIONS:
            return False
        segment = pattern[p] if p < p_len else None
        if segment == ANY:
            star = p
            resume = n
            p += 1
        elif segment is not None and (segment == ONE or segment == name[n]):
            p += 1
            n += 1
        elif star >= 0:
            # Let the last `**` absorb one more segment and retry what follows it.
            resume += 1
            n = resume
            p = star + 1
        else:
            return False
    while p < p_len and pattern[p] == ANY:
        p += 1
    return p == p_len


def match_glob(pattern: str, name: str) -> bool:
    """Whether tool `name` matches dot-separated glob `pattern`."""
    return match_segments(pattern.split(SEPARATOR), name.split(SEPARATOR))
