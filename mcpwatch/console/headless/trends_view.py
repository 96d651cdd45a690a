"""Trends as Rich text: a marker line, then per tool its totals and five block charts (Textual-free)."""

from __future__ import annotations

import time

from rich.text import Text

from mcpwatch.console.headless import charts
from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless.render_base import Palette
from mcpwatch.console.headless.trends import ToolTrend, Trends

LABEL = 15  # "  p95 latency  "
SUMMARY = 16  # right of a chart: the latest and the peak


def clock_text(ts: float, bucket_s: float) -> str:
    """Local time of a bucket edge: `HH:MM`, with the date when the window spans days."""
    return time.strftime("%H:%M" if bucket_s < 3600 else "%d %b %H:%M", time.localtime(ts))


def _rate(trends: Trends, value: float | None) -> str:
    if not value:
        return "none"
    rate = trends.per_minute(int(value))
    return f"{rate:.0f}" if rate >= 10 else f"{rate:.1f}"


def _chart(
    trends: Trends, label: str, values: list[float | None], width: int, style: str, summary: str, p: Palette
) -> Text:
    line = Text(f"  {label:<{LABEL - 2}}", style=p.dim)
    line.append(charts.blocks(values, width), style=style)
    line.append(f"  {summary}", style=p.dim)
    return line


def _latest(values: list[float | None]) -> float | None:
    return next((v for v in reversed(values) if v is not None), None)


def tool_block(trends: Trends, tool: ToolTrend, width: int, p: Palette) -> Text:
    """One tool: a title line with its totals, then calls, deadlines, errors, p50 and p95."""
    out = Text()
    out.append(tool.tool, style="bold")
    out.append(f"  {fmt.count(tool.total_calls, 'call')}", style=p.dim)
    warn, error = p("status-warn") if tool.total_deadlines else p.dim, p("status-error") if tool.total_errors else p.dim
    out.append(f" · {fmt.count(tool.total_deadlines, 'deadline')}", style=warn)
    out.append(f" · {fmt.count(tool.total_errors, 'error')}", style=error)
    out.append(f" · p50 {fmt.millis(tool.p50_all_ms)} · p95 {fmt.millis(tool.p95_all_ms)}", style=p.dim)
    per = "/min" if trends.bucket_s == 60 else f"/min (avg of {trends.bucket_s / 60:.0f} min)"

    def peak(series: list[int], unit: str) -> str:
        return f"peak {_rate(trends, max(series))}{unit}" if any(series) else "none"

    rows = [
        ("calls/min", tool.calls, "status-ok", peak(tool.calls, per)),
        ("deadlines", tool.deadlines, "status-warn", peak(tool.deadlines, "/min")),
        ("errors", tool.errors, "status-error", peak(tool.errors, "/min")),
    ]
    for label, series, colour, summary in rows:
        out.append("\n")
        out.append_text(_chart(trends, label, list(series), width, p(colour), summary, p))
    top = max((v for v in tool.p95_ms if v is not None), default=None)
    for label, latency in (("p50 latency", tool.p50_ms), ("p95 latency", tool.p95_ms)):
        out.append("\n")
        summary = f"now {fmt.millis(_latest(latency))}, max {fmt.millis(top)}"
        out.append_text(_chart(trends, label, latency, width, p("accent"), summary, p))
    return out


def trends_text(trends: Trends, width: int, p: Palette) -> Text:
    """The whole view for a terminal `width` columns wide."""
    chart_width = max(10, width - LABEL - SUMMARY - 24)
    out = Text()
    marks = charts.marker_line(trends.buckets, chart_width, [(m.bucket, m.kind) for m in trends.markers])
    out.append(" " * LABEL)
    out.append(marks, style=p("status-warn"))
    out.append("\n" + " " * LABEL)
    left = clock_text(trends.start_ts, trends.bucket_s)
    right = clock_text(trends.end_ts, trends.bucket_s)
    out.append(charts.axis_line(trends.buckets, chart_width, left, right), style=p.dim)
    step = "1 min" if trends.bucket_s == 60 else fmt.duration(trends.bucket_s)
    out.append(f"  one bar = {step}", style=p.dim)
    if not trends.tools:
        out.append("\n\n  no calls ended in this window", style=p.dim)
    for tool in trends.tools:
        out.append("\n\n")
        out.append_text(tool_block(trends, tool, chart_width, p))
    if trends.markers:
        out.append("\n\n")
        out.append("Markers", style="bold")
        for m in trends.markers[-12:]:
            out.append(f"\n  {charts.MARKS.get(m.kind, '|')} {clock_text(m.ts, 60)}  {m.text}", style=p.dim)
        if len(trends.markers) > 12:
            out.append(f"\n  … and {len(trends.markers) - 12} earlier", style=p.dim)
    return out
