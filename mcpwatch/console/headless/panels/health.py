"""The Health panel: the last health check, its ping and the recent pings."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rich.console import RenderableType
from rich.text import Text

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless.render_base import Palette, key_value, kv_grid, sparkline

HELP: tuple[str, str] | None = ("Health", "the last health check: result, ping, and recent pings")
WIDGET: str | None = "health"


@dataclass(frozen=True, slots=True)
class HealthView:
    ok: bool | None = None
    ping_ms: float | None = None
    tool: str | None = None
    error: str | None = None
    at_mono: float | None = None
    ago_s: float | None = None
    history: tuple[float, ...] = ()
    timeout_multiplier: float | None = None
    latency_ms: float | None = None  # how long the whole check took (a host's call of the health tool has no ping)
    source: str | None = None  # "host" when the host called the health tool itself; else the operator's check

    @property
    def state(self) -> str | None:
        """ "ok", "not_ready" (it answered, but with a problem: e.g. the upstream is not initialised), "failing",
        or None before any check. A check that carries an error is never shown as ok, whatever its flag says."""
        if self.ok is None and self.at_mono is None:
            return None
        if self.ok and not self.error:
            return "ok"
        return "not_ready" if self.ok else "failing"


HEALTH_STATE = {
    "ok": ("✓ ok", "status-ok"),
    "not_ready": ("⚠ not ready", "status-warn"),
    "failing": ("✗ failing", "status-error"),
}


def health_panel(h: HealthView, p: Palette, live: bool = True) -> RenderableType:
    if h.state is None:
        return Text("no health check yet — " + ("press h" if live else "none in the recording so far"), style=p.dim)
    g = kv_grid()
    label, colour = HEALTH_STATE[h.state]
    state = Text(label, style=p(colour, "bold"))
    state.append(f"  {fmt.duration(h.ago_s)} ago", style=p.dim)
    key_value(g, "last", state, p)
    if h.ping_ms is None and h.latency_ms is not None:
        # The host called the health tool itself: no MCP ping, but the call's own time says as much.
        took = Text(fmt.millis(h.latency_ms))
        if h.source == "host":
            took.append(" (host)", style=p.dim)  # the host called it; short: the panel is a quarter of 120
        key_value(g, "took", took, p)
    else:
        key_value(g, "ping", fmt.millis(h.ping_ms), p)
    if h.error:
        key_value(g, "error", Text(fmt.clip(h.error, 60), style=p("status-error")), p)
    else:
        tool = h.tool or "ping only"
        if h.timeout_multiplier is not None and h.timeout_multiplier != 1:
            tool += f"  ×{h.timeout_multiplier:g}"
        key_value(g, "tool", tool, p)
    if h.history:
        key_value(g, "history", Text(sparkline(h.history, 24), style=p("gauge-fill")), p)
    return g


def build(health: Mapping[str, Any], history: Iterable[float], now: float) -> HealthView:
    """The last health check the model folded (`health`), with its recent pings."""
    hv = health
    return HealthView(
        ok=hv.get("ok"),
        ping_ms=hv.get("ping_ms"),
        tool=hv.get("tool"),
        error=hv.get("error"),
        at_mono=hv.get("at_mono"),
        ago_s=None if hv.get("at_mono") is None else max(0.0, now - hv["at_mono"]),
        history=tuple(history),
        timeout_multiplier=hv.get("timeout_multiplier"),
        latency_ms=hv.get("latency_ms"),
        source=hv.get("source"),
    )
