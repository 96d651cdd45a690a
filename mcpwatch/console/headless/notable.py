"""What an operator must not miss, folded from the event stream: the Events view and its unread count.

Upstream exits (with their code and last stderr lines) and respawns, budget changes and who made them, disabled
budgets, tiers that cannot fit the budget, spikes of late answers, cut calls that finished late after all and calls
answered with such a late result, and every warning the wrapper logs (frames it discarded, log losses, bad
settings). Pure: no Textual, no clock; time comes in as the events' `mono`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless.panels.events import NotableEvent

LATE_SPIKE_COUNT = 5  # late answers dropped within LATE_SPIKE_WINDOW_S that make a spike worth an entry
LATE_SPIKE_WINDOW_S = 10.0
BUDGET_KEYS = {"margin_s": "margin", "host_timeout_s": "host timeout", "override_s": "deadline override"}


class NotableLog:
    """A bounded list of notable events, newest last, with a running total (what "unread" counts against)."""

    def __init__(self, limit: int = 200) -> None:
        self.items: deque[NotableEvent] = deque(maxlen=limit)
        self.total = 0
        self._upstream_state: str | None = None
        self._late: deque[float] = deque(maxlen=LATE_SPIKE_COUNT)
        self._late_spike_until = -1.0
        self._tiers_over: frozenset[str] = frozenset()

    def copy(self) -> NotableLog:
        clone = NotableLog(self.items.maxlen or 200)
        clone.items.extend(self.items)
        clone.total = self.total
        clone._upstream_state = self._upstream_state
        clone._late.extend(self._late)
        clone._late_spike_until = self._late_spike_until
        clone._tiers_over = self._tiers_over
        return clone

    def add(self, mono: float, kind: str, severity: str, text: str, detail: Iterable[str] = ()) -> None:
        self.items.append(NotableEvent(mono, kind, severity, text, tuple(detail)))
        self.total += 1

    def newest_first(self) -> tuple[NotableEvent, ...]:
        return tuple(reversed(self.items))

    # -- folds, one per event kind that can be notable ------------------------------------------------------

    def upstream_state(self, mono: float, data: Mapping[str, Any]) -> None:
        state = data.get("state")
        before, self._upstream_state = self._upstream_state, state if isinstance(state, str) else None
        code = data.get("exit_code")
        tail = tuple(str(line) for line in data.get("stderr_tail") or () if isinstance(line, str))
        generation = data.get("generation")
        gen = f" (generation {generation})" if isinstance(generation, int) else ""
        if state in ("backoff", "closed") and before not in ("backoff", "closed"):
            why = f"exit code {code}" if isinstance(code, int) else "connection lost"
            retry = data.get("retry_in_s")
            after = f", respawn in {fmt.seconds(retry)}" if isinstance(retry, int | float) else ""
            self.add(mono, "upstream_exit", "error", f"upstream exited: {why}{gen}{after}", tail[-5:])
        elif state == "ready" and before in ("backoff", "closed", "connecting") and _later(generation):
            self.add(mono, "respawn", "info", f"upstream running again{gen}")

    def config_change(self, mono: float, data: Mapping[str, Any]) -> None:
        key = data.get("key")
        what = BUDGET_KEYS.get(key, str(key)) if isinstance(key, str) else "setting"
        source = data.get("source")
        whose: dict[object, str] = {"operator": "by the operator", "reset": "by a reset"}
        who = whose.get(source, f"by {source}" if source else "")
        old, new = data.get("old"), data.get("new")
        self.add(mono, "budget", "info", f"{what} {_value(old)} → {_value(new)} {who}".strip())
        deadline = data.get("deadline")
        if isinstance(deadline, Mapping) and deadline.get("budget_s") is None and "budget_s" in deadline:
            self.add(
                mono, "budget_disabled", "warn", f"deadline budget disabled {who}: calls run until the host gives up"
            )

    def tiers(self, mono: float, tiers: Mapping[str, Mapping[str, Any]], limit_s: float | None) -> None:
        """Tiers whose total cannot finish within the budget (reported when that set changes)."""
        over = {}
        for name, body in tiers.items():
            total = body.get("total_s")
            if limit_s is not None and isinstance(total, int | float) and total > limit_s:
                over[name] = float(total)
        names = frozenset(over)
        if names and names != self._tiers_over:
            listed = ", ".join(f"{n} {fmt.seconds(t)}" for n, t in sorted(over.items()))
            self.add(mono, "tier", "warn", f"tiers longer than the {fmt.seconds(limit_s)} budget: {listed}")
        self._tiers_over = names

    def late_answer(self, mono: float) -> None:
        """A spike: LATE_SPIKE_COUNT late answers within LATE_SPIKE_WINDOW_S (one entry per spike)."""
        self._late.append(mono)
        if len(self._late) < LATE_SPIKE_COUNT or mono < self._late_spike_until:
            return
        if mono - self._late[0] <= LATE_SPIKE_WINDOW_S:
            self._late_spike_until = mono + LATE_SPIKE_WINDOW_S
            self.add(
                mono,
                "late_spike",
                "warn",
                f"late answers spiking: {LATE_SPIKE_COUNT} dropped within {fmt.duration(mono - self._late[0])}",
            )

    def late_result(self, mono: float, request_id: str | None, tool: str | None, data: Mapping[str, Any]) -> None:
        """A cut call answered after all: how late, how long it really took, and where the answer went (the host had
        its cut answer already; the demo's story at 80×24 is told by this line)."""
        delay, took = data.get("delay_s"), data.get("duration_s")
        after = f", {fmt.duration(float(delay))} after its cut" if isinstance(delay, int | float) else ""
        total = f" ({fmt.duration(float(took))} in all)" if isinstance(took, int | float) else ""
        outcome = data.get("outcome") if isinstance(data.get("outcome"), str) else "?"
        self.add(
            mono,
            "late_result",
            "info",
            f"{_who(request_id, tool)} finished late: {outcome}{after}{total}; dropped for the host, kept in the log",
        )

    def late_reuse(self, mono: float, request_id: str | None, tool: str | None, data: Mapping[str, Any]) -> None:
        source = data.get("from_request_id")
        age = data.get("age_s")
        old = f", {fmt.duration(float(age))} old" if isinstance(age, int | float) else ""
        self.add(
            mono,
            "late_reuse",
            "info",
            f"{_who(request_id, tool)} answered with the late result of #{source}{old} (reuse policy)",
        )

    def warning(self, mono: float, message: str) -> None:
        self.add(mono, "warning", "warn", message)


def _who(request_id: str | None, tool: str | None) -> str:
    return " ".join(part for part in (f"#{request_id}" if request_id else None, tool) if part) or "a call"


def _later(generation: Any) -> bool:
    """A generation after the first: the upstream was started again."""
    return isinstance(generation, int) and generation > 1


def _value(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return fmt.seconds(float(value))
    return str(value)
