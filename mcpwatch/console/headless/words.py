"""The console's words for the wire's names: outcomes, tombstone reasons, budget sources, and the symbol legend.

One place, so a thing has one name everywhere (the deadline is "deadline" in the counters, the table and help).
"""

from __future__ import annotations

OUTCOMES = {
    "ok": "ok",
    "degraded": "ok, degraded",
    "tool_error": "tool error",
    "error": "error",
    "auth_error": "auth error",
    "upstream_lost": "upstream lost",
    "deadline": "deadline",
    "timeout": "timed out",
    "rate_limited": "rate limited",
    "cancelled": "cancelled",
    "pending": "pending",
    "in flight": "in flight",
}
REASONS = {
    "deadline": "deadline",
    "host_cancel": "host cancelled",
    "operator_cancel": "operator cancelled",
    "upstream_lost": "upstream lost",
    "shutdown": "shutdown",
}
# At most 13 characters: the Deadline panel shows them whole in a quarter of 120 columns (they were cut mid-word).
BUDGET_SOURCES = {
    "derived": "host − margin",
    "clamped": "1s at least",
    "override": "override",
    "explicit": "env or config",
    "tool": "per tool",
    "disabled": "disabled",
}
CHANGED_KEYS = {"margin_s": "margin", "host_timeout_s": "host timeout", "override_s": "override"}
# Every symbol the console draws, for help.
LEGEND = [
    ("✓", "ok"),
    ("✓!", "ok, but degraded (a fallback or partial answer inside an ok result)"),
    ("✗", "error (tool error, auth error, protocol error)"),
    ("◷", "deadline: mcpwatch cut the call when its budget ran out"),
    ("⊘", "cancelled (by the host or the operator), or ended with the session"),
    ("↯", "upstream lost: the server exited or the connection dropped"),
    ("⋯", "pending, in flight"),
    ("≈", "rate limited"),
    ("◆", "a council call (per-model progress in the Council panel)"),
    ("⚠", "needs attention (a tier longer than the budget, a warning)"),
    ("█░", "share of the budget used (yellow past 80 %, red past 100 %)"),
]


def outcome(name: str | None) -> str:
    key = name or "in flight"
    return OUTCOMES.get(key, key.replace("_", " "))


def reason(name: str | None) -> str:
    return "?" if not name else REASONS.get(name, name.replace("_", " "))


def budget_source(name: str | None) -> str:
    return "?" if not name else BUDGET_SOURCES.get(name, name)
