"""`mcpwatch bench sessions`: what each host session of an HTTP front costs in resident memory.

Every host session on `mcpwatch wrap --listen` has its own upstream process, so a front serving N hosts runs N
copies of the server. The run opens 1, 2, 4, 8 and 16 sessions (raw HTTP hosts, each with a handshake and 50
calls, the event log on) against the raw upstream (`mcpwatch.bench.raw_upstream`) and samples the wrapper's RSS
and its upstream processes' RSS; the figures per session are the slopes from 1 to 16 sessions. Target: the
wrapper's own share at most 1 MB per session (its state per session is a core, a pending table and a link).

Then 100 hosts that each open a session, make a call and go without DELETE (as many hosts do), on the default
`[front] max_sessions`: the sessions idle longest are reclaimed, so the upstreams stay at the cap and the
wrapper's RSS after the hundredth is the figure (target: upstreams never above the cap).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcpwatch.bench import RAW_UPSTREAM, procstat
from mcpwatch.bench.memory import rss_mb
from mcpwatch.ports import free_port, wait_for_port

HELP = "wrapper RSS per HTTP host session, its upstream process excluded and included (1 to 16 sessions)"

TARGET_WRAPPER_MB_PER_SESSION = 1.0
QUICK_CAP = 4  # a smoke run's cap for the abandoned hosts: reclaiming at the cap shown with a few processes
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}


def _sample(pid: int, sessions: int) -> dict[str, Any]:
    children = procstat.children(pid)
    upstream = round(sum(rss_mb(child).get("VmRSS", 0.0) for child in children), 1)
    wrapper = rss_mb(pid)["VmRSS"]
    return {"sessions": sessions, "wrapper_mb": wrapper, "upstreams": len(children), "upstreams_mb": upstream}


async def _open_session(http: Any, url: str, calls: int) -> None:
    reply = await http.post(
        url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}, headers=ACCEPT
    )
    headers = {**ACCEPT, "Mcp-Session-Id": reply.headers["mcp-session-id"]}
    await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    call = {"name": "noop", "arguments": {}}
    for n in range(calls):
        await http.post(
            url, json={"jsonrpc": "2.0", "id": n + 1, "method": "tools/call", "params": call}, headers=headers
        )


async def _drive(url: str, pid: int, counts: list[int], calls: int) -> list[dict[str, Any]]:
    import httpx2

    samples = []
    opened = 0
    async with httpx2.AsyncClient(timeout=30) as http:
        for count in counts:
            while opened < count:
                await _open_session(http, url, calls)
                opened += 1
            await asyncio.sleep(1.0)  # let the new processes settle
            samples.append(_sample(pid, opened))
    return samples


def _measure(config_text: str, drive: Any) -> Any:
    """Run `drive(url, pid)` against a wrapper of the raw upstream with `config_text`, the event log on."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "mcpwatch.toml"
        config.write_text(config_text)
        upstream = list(RAW_UPSTREAM)
        wrap = ["wrap", "--config", str(config), "--log", str(Path(tmp) / "bench.db"), "--listen", url]
        env = {**os.environ, "MCPWATCH_STATE_DIR": tmp}
        process = subprocess.Popen(
            [sys.executable, "-m", "mcpwatch", *wrap, "--", *upstream], env=env, stderr=subprocess.DEVNULL
        )
        try:
            wait_for_port(port, 30)
            return asyncio.run(drive(url, process.pid))
        finally:
            process.terminate()
            process.wait(15)


def run(quick: bool = False) -> dict[str, Any]:
    from mcpwatch.config import FrontSettings

    counts = [1, 2] if quick else [1, 2, 4, 8, 16]
    calls = 2 if quick else 50
    samples = _measure("[front]\nmax_sessions = 64\n", lambda url, pid: _drive(url, pid, counts, calls))
    hosts = 6 if quick else 100
    cap = QUICK_CAP if quick else FrontSettings().max_sessions
    config = f"[front]\nmax_sessions = {cap}\n"
    (abandoned,) = _measure(config, lambda url, pid: _drive(url, pid, [hosts], 1))
    first, last = samples[0], samples[-1]
    span = last["sessions"] - first["sessions"]
    wrapper_per = round((last["wrapper_mb"] - first["wrapper_mb"]) / span, 3)
    upstream_per = round((last["upstreams_mb"] - first["upstreams_mb"]) / span, 3)
    return {
        "machine": f"{os.cpu_count()} cores, {sys.platform}, Python {sys.version.split()[0]}",
        "calls_per_session": calls,
        "samples": samples,
        "wrapper_mb_per_session": wrapper_per,
        "upstream_mb_per_session": upstream_per,
        "total_mb_per_session": round(wrapper_per + upstream_per, 3),
        "abandoned": {**abandoned, "max_sessions": cap},  # `sessions` hosts gone without DELETE
        "targets": {"wrapper_mb_per_session": TARGET_WRAPPER_MB_PER_SESSION, "abandoned_upstreams": cap},
        "pass": wrapper_per <= TARGET_WRAPPER_MB_PER_SESSION
        and all(s["upstreams"] == s["sessions"] for s in samples)
        and abandoned["upstreams"] <= cap,
    }
