"""What `mcpwatch check` does: drive a real `mcpwatch wrap` over its stdio as a host would, and work out the budget
each known host would get. Every step has a time limit; every failure becomes a line of the report, not a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcpwatch import __version__
from mcpwatch.config import Settings

if TYPE_CHECKING:
    from rich.console import Console

PROTOCOL_VERSION = "2025-06-18"
LINE_LIMIT = 64 * 1024 * 1024


@dataclass
class CheckReport:
    steps: list[tuple[str, bool, str]] = field(default_factory=list)  # (step, ok, detail)
    tools: list[str] = field(default_factory=list)
    server: str = ""
    stderr: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(ok for _, ok, _ in self.steps)

    def add(self, step: str, ok: bool, detail: str) -> None:
        self.steps.append((step, ok, detail))


class _Wire:
    """JSON-RPC over the wrapper's pipes: requests by id, everything else skipped."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.next_id = 0

    async def request(self, method: str, params: dict[str, Any] | None, timeout: float) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        deadline = time.monotonic() + timeout
        assert self.process.stdout is not None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            line = await asyncio.wait_for(self.process.stdout.readline(), left)
            if not line:
                raise ConnectionError("the wrapper closed its output")
            try:
                reply = json.loads(line)
            except ValueError:
                continue
            if isinstance(reply, dict) and reply.get("id") == self.next_id and "method" not in reply:
                return reply

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        await self.process.stdin.drain()


async def probe(argv: list[str], timeout: float) -> CheckReport:
    """Start the wrapper, then handshake, tools/list and ping through it; stop it the way a host does (EOF)."""
    report = CheckReport()
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ},
            limit=LINE_LIMIT,
        )
    except OSError as exc:
        report.add("start", False, f"cannot start mcpwatch wrap: {exc}")
        return report
    wire = _Wire(process)
    try:
        await _steps(wire, report, timeout)
    finally:
        await _stop(process, report)
    return report


async def _steps(wire: _Wire, report: CheckReport, timeout: float) -> None:
    init = {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "mcpwatch-check", "version": __version__},
    }
    for step, method, params in (
        ("handshake", "initialize", init),
        ("tools", "tools/list", {}),
        ("ping", "ping", None),
    ):
        started = time.monotonic()
        try:
            reply = await wire.request(method, params, timeout)
        except TimeoutError:
            report.add(step, False, f"no answer within {timeout:g} s")
            return
        except (ConnectionError, OSError) as exc:
            report.add(step, False, str(exc))
            return
        took = f"{(time.monotonic() - started) * 1000:.0f} ms"
        if "error" in reply:
            report.add(step, False, f"{method} failed: {json.dumps(reply['error'])[:300]}")
            return
        result = got if isinstance(got := reply.get("result"), dict) else {}
        if method == "initialize":
            info = got if isinstance(got := result.get("serverInfo"), dict) else {}
            report.server = f"{info.get('name', '?')} {info.get('version', '')}".strip()
            version = result.get("protocolVersion", "?")
            report.add(step, True, f"{report.server}, protocol {version} ({took})")
            await wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        elif method == "tools/list":
            tools = got if isinstance(got := result.get("tools"), list) else []
            report.tools = [str(t.get("name")) for t in tools if isinstance(t, dict)]
            report.add(step, True, f"{len(report.tools)} tools ({took})")
        else:
            report.add(step, True, took)


async def _stop(process: asyncio.subprocess.Process, report: CheckReport) -> None:
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    try:
        await asyncio.wait_for(process.wait(), 15)
    except TimeoutError:
        process.kill()
        await process.wait()
    if process.stderr is not None:
        text = (await process.stderr.read()).decode(errors="replace")
        report.stderr = [line for line in text.splitlines() if line.strip()][-20:]


def budgets_by_host(settings: Settings, front: str) -> list[dict[str, Any]]:
    """The budget each known host would get for a tools/call (with a progress token, and without when different)."""
    from mcpwatch.reliability.deadline import DeadlinePolicy
    from mcpwatch.reliability.heartbeat import heartbeat_interval
    from mcpwatch.reliability.hosts import DetectedHost, catalog

    warnings: list[str] = []
    policy = DeadlinePolicy(settings.deadline, on_warning=warnings.append)
    rows = []
    for profile in catalog(settings.hosts, settings.source or "mcpwatch.toml").profiles:
        if profile.fronts and front not in profile.fronts:
            continue
        host = DetectedHost(profile.names[0], None, front, profile)
        with_token, without = policy.budget(None, host, True), policy.budget(None, host, False)
        idle = host.idle_clock()
        rows.append(
            {
                "host": profile.label,
                "client_name": profile.names[0],
                "budget_s": with_token.seconds,
                "explanation": with_token.explanation,
                "without_token_s": without.seconds if without.seconds != with_token.seconds else None,
                "heartbeat_s": heartbeat_interval(idle.seconds) if idle is not None else None,
                "uncertain": any(c.uncertain for c in profile.clocks_on(front)),
            }
        )
    return rows


def print_report(report: CheckReport, budgets: list[dict[str, Any]], console: Console) -> None:
    """The report on `console`, which the command hands in (the CLI's, which shows control characters visibly)."""
    from rich.markup import escape
    from rich.table import Table

    from mcpwatch.reliability.deadline import fmt_seconds

    for step, ok, detail in report.steps:
        mark = "[green]ok[/]  " if ok else "[red]FAIL[/]"
        console.print(f"{mark} {step:<10} {escape(detail)}")
    if report.tools:
        console.print(f"     tools      {escape(', '.join(report.tools))}")
    if not report.ok and report.stderr:
        console.print("the wrapper's last stderr lines:")
        for line in report.stderr:
            console.print(f"  {escape(line)}")
    table = Table(title="the budget each known host would get (the earliest clock that would end a call − margin)")
    for column in ("host", "client name", "budget", "decided by", "heartbeat"):
        table.add_column(column, overflow="fold")
    for row in budgets:
        budget = "none" if row["budget_s"] is None else f"{fmt_seconds(row['budget_s'])} s"
        if row["without_token_s"] is not None:
            budget += f" ({fmt_seconds(row['without_token_s'])} s without a progress token)"
        explanation = row["explanation"] + (" [uncertain]" if row["uncertain"] else "")
        beat = "-" if row["heartbeat_s"] is None else f"every {fmt_seconds(row['heartbeat_s'])} s of silence"
        table.add_row(escape(row["host"]), escape(row["client_name"]), escape(budget), escape(explanation), beat)
    console.print(table)
    console.print("unknown hosts get 120 s − margin; `mcpwatch hosts` shows every clock and its source")
