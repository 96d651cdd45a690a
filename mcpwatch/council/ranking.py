"""Aggregate the reviewers' rankings by Borda count.

With n answers under review, a reviewer's first choice earns n-1 points, the next n-2, …, the last 0; an
answer a reviewer left out earns nothing from that reviewer. Ties go to the better average position, then
to the label, so the aggregate is deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class RankEntry:
    label: str
    points: int
    average_position: float | None  # 1-based, over the reviewers that placed it; None if nobody did
    votes: int  # how many reviewers placed it


def borda(rankings: Mapping[str, Sequence[str]], labels: Sequence[str]) -> list[RankEntry]:
    n = len(labels)
    points = dict.fromkeys(labels, 0)
    positions: dict[str, list[int]] = {label: [] for label in labels}
    for ranking in rankings.values():
        valid = [label for i, label in enumerate(ranking) if label in points and label not in ranking[:i]]
        for position, label in enumerate(valid):
            points[label] += n - 1 - position
            positions[label].append(position + 1)

    def average(label: str) -> float | None:
        placed = positions[label]
        return sum(placed) / len(placed) if placed else None

    entries = [RankEntry(label, points[label], average(label), len(positions[label])) for label in labels]
    entries.sort(key=lambda e: (-e.points, e.average_position if e.average_position is not None else n + 1, e.label))
    return entries
