"""Copy and export from the console (pure, no Textual): a request as JSON or Markdown, where files go, and the
replay command that reopens the moment. (The clipboard is Textual's OSC 52, which works over ssh too.)"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from mcpwatch.console.headless.views import RequestDetail
from mcpwatch.paths import state_dir

OSC52_MAX = 100_000  # bytes of text; terminals refuse (or hang on) far larger clipboard writes


def screenshot_dir() -> Path:
    """Downloads when the user has one, else mcpwatch's state folder (created, private)."""
    try:
        from platformdirs import user_downloads_path

        downloads = Path(user_downloads_path())
        if downloads.is_dir():
            return downloads
    except Exception:  # platformdirs may not know this platform: fall back
        pass
    return export_dir()


def export_dir() -> Path:
    folder = state_dir() / "exports"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def _json_or_text(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def replay_command(detail: RequestDetail, session_id: str | None, log_path: str | None = None) -> str:
    """The command that reopens this moment in replay: the request's start, in session seconds."""
    db = f" {log_path}" if log_path else ""
    session = f" --session {session_id}" if session_id else ""
    return f"mcpwatch replay{db}{session} --at {detail.request.started_mono:.1f}"


def request_record(detail: RequestDetail, session_id: str | None, log_path: str | None = None) -> dict[str, Any]:
    """Everything the detail screen shows about a request, as plain data."""
    r = detail.request
    return {
        "request_id": r.request_id,
        "upstream_id": detail.up_id,
        "method": r.method,
        "tool": r.tool,
        "outcome": r.outcome,
        "degraded": r.degraded,
        "partial": r.partial,
        "error": r.error,
        "started_s": round(r.started_mono, 3),
        "duration_s": r.duration_s,
        "budget_s": detail.budget_s,
        "budget_source": detail.budget_source,
        "arguments": _json_or_text(detail.arguments),
        "result": _json_or_text(detail.result_preview),
        "timeline": [{"at_s": round(item.mono, 3), "kind": item.kind, "text": item.text} for item in detail.timeline],
        "session_id": session_id,
        "replay": replay_command(detail, session_id, log_path),
    }


def as_json(record: dict[str, Any]) -> str:
    return json.dumps(record, indent=2, ensure_ascii=False)


def as_markdown(record: dict[str, Any]) -> str:
    """A request to paste into a bug report or a chat: a summary, then arguments, result and timeline."""
    title = f"#{record['request_id']} {record['tool'] or record['method']}"
    outcome = record["outcome"] or "in flight"
    lines = [
        f"### {title}: {outcome}",
        "",
        f"- duration: {record['duration_s']}s of a {record['budget_s']}s budget ({record['budget_source']})",
        f"- upstream id: {record['upstream_id']}",
    ]
    if record["error"]:
        lines.append(f"- error: {record['error']}")
    if record["degraded"]:
        lines.append(f"- degraded: {record['degraded']}")
    lines.append(f"- reopen: `{record['replay']}`")
    for name in ("arguments", "result"):
        value = record[name]
        body = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
        lines += ["", f"**{name}**", "", "```json", _fence_safe(body or ""), "```"]
    lines += ["", "**timeline**", ""]
    start = record["started_s"]
    lines += [f"- +{item['at_s'] - start:.2f}s {item['kind']}: {item['text']}" for item in record["timeline"]]
    return "\n".join(lines) + "\n"


def _fence_safe(text: str) -> str:
    return text.replace("```", "`\u200b``")


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def write_export(text: str, request_id: str, suffix: str, folder: Path | None = None, session_id: str = "") -> Path:
    """Write an export as a new private file named after the session and request; returns its path. An earlier
    export is never overwritten (ids repeat across sessions): a taken name gets -2, -3, … The whole session id is
    in the name: its first 12 characters are only the date and hour, shared by every session of that hour."""
    target = folder or export_dir()
    stem = "-".join(_UNSAFE.sub("_", part)[:40] for part in (session_id, request_id) if part)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for n in range(1, 1000):
        path = target / f"request-{stem}{'' if n == 1 else f'-{n}'}{suffix}"
        try:
            fd = os.open(path, flags, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        return path
    raise OSError(f"no free export file name for request {request_id} in {target}")
