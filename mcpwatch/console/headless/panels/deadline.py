"""The Deadline panel: the budget each new tools/call gets, where it comes from, who last changed it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rich.console import RenderableType
from rich.text import Text

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless import words
from mcpwatch.console.headless.render_base import Palette, key_value, kv_grid
from mcpwatch.terminal import safe

HELP: tuple[str, str] | None = (
    "Deadline",
    "the budget each new tools/call gets, where it comes from, and who last changed it",
)
WIDGET: str | None = "deadline"


@dataclass(frozen=True, slots=True)
class DeadlineView:
    host_timeout_s: float | None = None
    margin_s: float | None = None
    override_s: float | None = None
    budget_s: float | None = None  # None: the budget is disabled (the host timeout still applies)
    source: str | None = None
    known: bool = False
    explanation: str | None = None  # how the budget was reached, in words (names a --host-config file)

    @property
    def host_config(self) -> str | None:
        """The host config file (and server) the host timeout was read from, when `--host-config` set it."""
        marker = "(--host-config: "
        text = self.explanation or ""
        at = text.find(marker)
        if at < 0:
            return None
        rest = text[at + len(marker) :]
        return rest[: rest.find(")")] if ")" in rest else rest

    @property
    def limit_s(self) -> float | None:
        """How long a call can run before someone gives up: the budget, or the host timeout when disabled."""
        return self.budget_s if self.budget_s is not None else self.host_timeout_s


@dataclass(frozen=True, slots=True)
class ConfigChangeView:
    mono: float
    key: str
    old: Any
    new: Any
    source: str | None


def deadline_panel(d: DeadlineView, p: Palette, changed: ConfigChangeView | None = None) -> RenderableType:
    """The budget, where it comes from, and (`changed`) the last operator change to it: five short lines, so a
    quarter of an 80-column terminal shows them whole."""
    if not d.known:
        return Text("waiting for the wrapper's deadline settings…", style=p.dim)
    g = kv_grid()
    if d.budget_s is None:
        key_value(g, "budget", Text("DISABLED", style=p("status-warn", "bold")), p)
        key_value(g, "", Text("the host's timeout rules", style=p("status-warn")), p)
    else:
        key_value(g, "budget", Text(fmt.seconds(d.budget_s), style="bold"), p)
        key_value(g, "source", Text(words.budget_source(d.source), style=p.dim), p)
    key_value(g, "host, margin", f"{fmt.seconds(d.host_timeout_s)}, {fmt.seconds(d.margin_s)}", p)
    if d.host_config:
        key_value(g, "host from", Text(safe(d.host_config), style=p.dim), p)
    override = Text("none", style=p.dim) if d.override_s is None else Text(fmt.seconds(d.override_s))
    if d.override_s is not None and d.override_s <= 0:
        override.append(" (disables)", style=p("status-warn"))
    key_value(g, "override", override, p)
    if changed is not None and changed.source in ("operator", "reset"):
        # the key says who, the value what: "margin by operator" was cut to "margin by op…" in a quarter of 120
        who = "operator set" if changed.source == "operator" else "reset"
        key_value(g, who, Text(words.CHANGED_KEYS.get(changed.key, changed.key), style=p("status-warn")), p)
    return g


def build(block: Mapping[str, Any]) -> DeadlineView:
    """The deadline from the model's settings (empty until the wrapper said them)."""
    if not block:
        return DeadlineView()
    d = block
    explanation = d.get("explanation")
    return DeadlineView(
        d["host_timeout_s"],
        d["margin_s"],
        d["override_s"],
        d["budget_s"],
        d["source"],
        known=True,
        explanation=explanation if isinstance(explanation, str) else None,
    )


def last_change(changes: Iterable[ConfigChangeView]) -> ConfigChangeView | None:
    """The newest change to a setting the panel shows (`changes` newest first)."""
    return next((c for c in changes if c.key in ("margin_s", "host_timeout_s", "override_s")), None)
