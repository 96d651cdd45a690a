"""View state → Rich renderables for the console's panels (Rich only, no Textual: replay and reports reuse it).

Colours come from a `Palette` of the theme's semantic variables, so every panel follows the theme. The panels live
by group in `render_base` (palette, icons, gauges), `render_status` (top bar, deadline, tiers, health, counters),
`render_feeds` (council, tombstones, invalidations, warnings, request rows) and `render_detail` (the detail
screen); screens import them all from here.
"""

from __future__ import annotations

from mcpwatch.console.headless.render_base import (
    STATUS_STYLE,
    UPSTREAM_STYLE,
    Fitted,
    Palette,
    gauge,
    plain,
    sparkline,
    status_text,
    wall_clock,
)
from mcpwatch.console.headless.render_detail import (
    detail_summary,
    pretty_json,
    readable_json,
    result_panel,
    result_texts,
    timeline_panel,
)
from mcpwatch.console.headless.render_feeds import (
    council_panel,
    council_title,
    in_flight_row,
    in_flight_stage,
    invalidations_panel,
    request_note,
    request_row,
    tiers_title,
    time_left,
    tombstones_panel,
    tombstones_title,
    warnings_panel,
)
from mcpwatch.console.headless.render_status import (
    HEALTH_STATE,
    counters_panel,
    deadline_panel,
    health_panel,
    tiers_panel,
    top_bar,
)

__all__ = [
    "HEALTH_STATE",
    "STATUS_STYLE",
    "UPSTREAM_STYLE",
    "Fitted",
    "Palette",
    "council_panel",
    "council_title",
    "counters_panel",
    "deadline_panel",
    "detail_summary",
    "gauge",
    "health_panel",
    "in_flight_row",
    "in_flight_stage",
    "invalidations_panel",
    "plain",
    "pretty_json",
    "readable_json",
    "request_note",
    "request_row",
    "result_panel",
    "result_texts",
    "sparkline",
    "status_text",
    "tiers_panel",
    "tiers_title",
    "time_left",
    "timeline_panel",
    "tombstones_panel",
    "tombstones_title",
    "top_bar",
    "wall_clock",
    "warnings_panel",
]
