"""The request detail screen's renderables: its summary, the result (JSON made readable) and the timeline."""

from __future__ import annotations

import json
import re

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from mcpwatch.console.headless import format as fmt
from mcpwatch.console.headless.records import TimelineItem
from mcpwatch.console.headless.render_base import Palette, gauge, key_value, status_text, wall_clock
from mcpwatch.console.headless.views import RequestDetail
from mcpwatch.terminal import safe_lines

# --- the detail screen ---------------------------------------------------------------------------------------


def pretty_json(text: str | None, limit: int = 4000) -> str:
    """Indented JSON when the text is JSON, else the text itself (both capped)."""
    if not text:
        return ""
    try:
        out = readable_json(json.loads(text))
    except ValueError:
        out = text
    return _cap(safe_lines(out), limit)


def readable_json(value: object, indent: str = "") -> str:
    """Indented JSON, except that a string's line breaks are shown as line breaks (continued under its opening
    quote), not as `\\n`: results are read by people here; copy and export keep the exact JSON."""
    inner = indent + "  "
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [
            f"{inner}{json.dumps(str(k), ensure_ascii=False)}: {readable_json(v, inner)}" for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(f"{inner}{readable_json(v, inner)}" for v in value) + f"\n{indent}]"
    if isinstance(value, str) and "\n" in value:
        lines = [json.dumps(line, ensure_ascii=False)[1:-1] for line in value.split("\n")]
        return '"' + ("\n" + inner + " ").join(lines) + '"'
    return json.dumps(value, ensure_ascii=False)


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "\n… (cut)"


def _pretty_text(text: str) -> str:
    """A content text as a person reads it: indented JSON when it is JSON, else the text as it is."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return readable_json(json.loads(stripped))
        except ValueError:
            pass
    return text


_TEXT_FIELD = re.compile(r'"text"\s*:\s*"')


def _cut_json_string(raw: str) -> str:
    """The beginning of a JSON string literal whose end was cut off (the log keeps 4 KiB), decoded."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == '"':
            break
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        escape = raw[i : i + 6] if raw[i + 1 : i + 2] == "u" else raw[i : i + 2]
        try:
            out.append(json.loads(f'"{escape}"'))
        except ValueError:
            break  # an escape cut in half: the text ends here
        i += len(escape)
    return "".join(out)


def result_texts(preview: str) -> tuple[list[str], bool] | None:
    """The texts of a tools/call result (or of the JSON-RPC answer that carried one), each pretty-printed, and
    whether it was an error result; None when the preview is not one. A preview cut short still yields the
    beginning of its first text."""
    try:
        value = json.loads(preview)
    except ValueError:
        match = _TEXT_FIELD.search(preview)
        if match is None or '"content"' not in preview[: match.start()]:
            return None
        text = safe_lines(_cut_json_string(preview[match.end() :]).rstrip("…")) + "\n… (cut: the log keeps 4 KiB)"
        return [text], re.search(r'"isError"\s*:\s*true', preview) is not None
    if isinstance(value, dict) and isinstance(value.get("result"), dict):
        value = value["result"]  # the whole answer sent to the host
    if not isinstance(value, dict) or not isinstance(value.get("content"), list):
        return None
    texts: list[str] = []
    for item in value["content"]:
        if isinstance(item, dict) and item.get("type", "text") == "text" and isinstance(item.get("text"), str):
            texts.append(safe_lines(_pretty_text(item["text"])))
        elif isinstance(item, dict):
            texts.append(f"({item.get('type', 'unknown')} content)")
    if not texts and value.get("structuredContent") is not None:
        texts.append(safe_lines(readable_json(value["structuredContent"])))
    return texts, value.get("isError") is True


def result_panel(preview: str, p: Palette, limit: int = 8000) -> RenderableType:
    """A result as text: each content text shown as text (or indented JSON when it is JSON), never as escaped
    JSON inside JSON; anything else as indented JSON."""
    found = result_texts(preview)
    if found is None:
        return Text(pretty_json(preview, limit))
    texts, is_error = found
    parts: list[RenderableType] = []
    if is_error:
        parts.append(Text("isError: the host was given this as an error result", style=p("status-warn")))
    for i, text in enumerate(texts):
        if i:
            parts.append(Text("─" * 8, style=p.dim))
        parts.append(Text(_cap(text, limit)))
    if not parts:
        parts.append(Text("(an empty result)", style=p.dim))
    return Group(*parts)


def detail_summary(d: RequestDetail, origin_ts: float | None, p: Palette) -> RenderableType:
    r = d.request
    g = Table.grid(padding=(0, 1), expand=True)
    g.add_column(no_wrap=True)
    g.add_column(overflow="fold", ratio=1)  # an error or a progress message is read in full: it wraps
    key_value(g, "request", Text.assemble((f"#{r.request_id}", "bold"), (f"  upstream id {d.up_id or '—'}", p.dim)), p)
    key_value(g, "call", Text.assemble((r.method, ""), (f"  {r.tool}" if r.tool else "", "bold")), p)
    key_value(g, "started", wall_clock(origin_ts, r.started_mono), p)
    if d.unfinished:
        outcome = Text("⊘ unfinished: the session ended while it ran", style=p("status-warn"))
    else:
        outcome = status_text("degraded" if r.degraded and r.outcome == "ok" else r.outcome, p)
        if r.degraded and r.outcome == "ok":
            outcome.append(f"  {r.degraded}", style=p("status-warn"))
    if r.partial:
        outcome.append("  partial result", style=p("status-warn"))
    key_value(g, "outcome", outcome, p)
    budget = (
        "no budget"
        if d.budget_s is None
        else fmt.seconds(d.budget_s) + (f" ({d.budget_source})" if d.budget_source else "")
    )
    fraction = None if not d.budget_s else d.elapsed_s / d.budget_s
    spent = Text(f"{fmt.duration(d.elapsed_s)} of {budget}  ")
    spent.append_text(gauge(fraction, 20, p))
    key_value(g, "time", spent, p)
    if d.progress is not None or d.message:
        key_value(g, "last progress", f"{fmt.progress(d.progress, d.total)} {d.message or ''}".strip(), p)
    if r.error:
        key_value(g, "error", Text(r.error, style=p("status-error")), p)
    if d.tombstone is not None:
        t = d.tombstone
        left = (
            "no expiry"
            if t.expires_in_s is None
            else "expired"
            if t.expires_in_s <= 0
            else f"expires in {fmt.duration(t.expires_in_s)}"
        )
        text = Text(f"{t.reason or '?'} · TTL {fmt.seconds(t.ttl_s)} · {left} · {t.hits} late response(s) dropped")
        key_value(g, "tombstone", text, p)
    return g


def timeline_panel(
    items: tuple[TimelineItem, ...], dropped: int, origin_ts: float | None, start: float, p: Palette
) -> RenderableType:
    g = Table.grid(padding=(0, 1), expand=True)
    g.add_column(no_wrap=True)
    g.add_column(no_wrap=True, justify="right")
    g.add_column(no_wrap=True)
    g.add_column(overflow="fold", ratio=1)
    kind_colour = {
        "request_start": "status-pending",
        "progress": "text-dim",
        "model_status": "status-pending",
        "request_end": "status-ok",
        "tombstone_add": "status-cancelled",
        "tombstone_hit": "status-late",
        "tombstone_expire": "text-dim",
        "seed": "text-dim",
    }
    for item in items:
        g.add_row(
            Text(wall_clock(origin_ts, item.mono), style=p.dim),
            Text(f"+{fmt.duration(item.mono - start)}", style=p.dim),
            Text(item.kind.replace("_", " "), style=p(kind_colour.get(item.kind, "text-dim"))),
            Text(item.text),
        )
    if dropped:
        return Group(
            Text(f"({dropped:,} earlier entries dropped; the timeline keeps the latest {len(items)})", style=p.dim), g
        )
    return g
