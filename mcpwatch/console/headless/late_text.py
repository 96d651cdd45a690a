"""How the request detail shows a late result: the answer a cut call gave after all, or the stored late result a
reused call was answered with. Rich only (no Textual), so it is tested and reused without a screen."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from mcpwatch.console.headless.records import LateView
from mcpwatch.console.headless.render_base import Palette
from mcpwatch.console.headless.render_detail import result_panel


def _s(seconds: float | None) -> str:
    return "?" if seconds is None else f"{seconds:.1f}s"


def late_part(late: LateView, p: Palette) -> RenderableType:
    """A heading line and, for a late result, what it said (a preview beyond the kept size)."""
    rule = Text("─" * 24, style=p.dim)
    if late.from_request_id is not None:
        line = Text.assemble(
            ("answered with a stored late result ", p("status-late", "bold")),
            (f"of #{late.from_request_id}: it finished {_s(late.delay_s)} after its deadline, ", ""),
            (f"{_s(late.age_s)} before this call", ""),
        )
        return Group(rule, line)
    size = "" if late.size_bytes is None else f", {late.size_bytes:,} bytes"
    line = Text.assemble(
        ("finished late ", p("status-late", "bold")),
        (f"({late.outcome or '?'}) {_s(late.delay_s)} after the cut", ""),
        (f" · it took {_s(late.duration_s)} in all{size}", p.dim),
    )
    parts: list[RenderableType] = [rule, line]
    if late.truncated:
        parts.append(Text("(too large to keep whole: a preview)", style=p.dim))
    if late.result:
        parts.append(result_panel(late.result, p) if late.outcome != "error" else Text(late.result))
    return Group(*parts)
