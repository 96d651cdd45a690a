"""The flood cases of `mcpwatch bench memory`: the wrapper's peak RSS and an echo call's latency while the upstream
sends as fast as it can (`mcpwatch.bench.flood_upstream`), with a host that reads and with one that does not.

Each case runs a real `mcpwatch wrap` (event log on) between a raw host (a reader thread that can stop reading, so
the pipe really fills) and the flood server over stdio or Streamable HTTP. The host starts one `flood` call and, with
the host reading, sends an `echo` call every 20 ms: their latency is the figure. The direct path (the host on the
flood server's pipes, no wrapper; over HTTP, the wrapper's own HTTP client on the flood server) runs the same echo
schedule under the same flood, for comparison. A host that does
not read stops for the whole flood, then reads what is left: the flood call's answer must still come (responses are
never dropped). Peak RSS is the kernel's high-water mark (VmHWM) of the wrapper process. Targets: ≤ 150 MB, echo
p99 ≤ 100 ms.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpwatch.bench.operator_tool import operator_tool
from mcpwatch.ports import free_port, wait_for_port

TARGET_RSS_MB = 150.0
TARGET_P99_MS = 100.0
ECHO_EVERY_S = 0.02
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench-flood", "version": "1"}}
FLOOD_SERVER = [sys.executable, "-m", "mcpwatch.bench.flood_upstream"]


def _status(pid: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    figures[key] = round(int(value.split()[0]) / 1024, 1)
    except OSError:
        pass
    return figures


class ThreadHost:
    """A raw JSON-RPC host on a process's pipes; its reader thread can be held (then the pipe fills)."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        self.reading = threading.Event()
        self.reading.set()
        self.lock = threading.Lock()
        self.arrived: dict[int, tuple[float, dict[str, Any]]] = {}
        self.sent: dict[int, float] = {}
        self.notifications = 0
        self.bytes_read = 0
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        for line in stdout:
            self.bytes_read += len(line)
            if b'"method"' in line[:40] or b'"method"' in line[-300:]:
                self.notifications += 1  # not parsed: the host must keep up with the flood
            else:
                message = json.loads(line)
                with self.lock:
                    self.arrived[message.get("id")] = (time.perf_counter(), message)
            self.reading.wait()

    def request(self, method: str, params: dict[str, Any]) -> int:
        self.next_id += 1
        data = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}).encode()
        stdin = self.process.stdin
        assert stdin is not None
        self.sent[self.next_id] = time.perf_counter()
        stdin.write(data + b"\n")
        stdin.flush()
        return self.next_id

    def notify(self, method: str) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")
        stdin.flush()

    def wait(self, request_id: int, timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if request_id in self.arrived:
                    return self.arrived[request_id][1]
            time.sleep(0.005)
        return None

    def latency_ms(self, request_id: int) -> float | None:
        with self.lock:
            got = self.arrived.get(request_id)
        return None if got is None else (got[0] - self.sent[request_id]) * 1000

    def close(self) -> None:
        self.reading.set()
        with_stdin = self.process.stdin
        if with_stdin is not None:
            try:
                with_stdin.close()
            except OSError:
                pass
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))], 2)


def run_case(
    transport: str, kind: str, reading: bool, seconds: float, *, direct: bool = False, at_least: int = 0
) -> dict[str, Any]:
    """One flood: `transport` stdio|http, `kind` progress|message, the host reading or not. With `at_least`, the
    flood is that many messages however slow the machine, and a host that does not read waits for the wrapper to
    pause the upstream before it reads on (what a test asserts, not a figure the benchmark reports)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "MCPWATCH_STATE_DIR": tmp, "MCPWATCH_TOOL_CALL_DEADLINE_SEC": str(seconds + 30)}
        env.pop("MCPWATCH_CONFIG", None)
        server = None
        if transport == "http":
            port = free_port()
            server = subprocess.Popen([*FLOOD_SERVER, "http", str(port)], stderr=subprocess.DEVNULL)
            wait_for_port(port)
            upstream = ["--url", f"http://127.0.0.1:{port}/mcp"]
        else:
            upstream = ["--", *FLOOD_SERVER, "stdio"]
        wrap = [sys.executable, "-m", "mcpwatch", "wrap", "--log", str(Path(tmp) / "events.db"), *upstream]
        host = ThreadHost([*FLOOD_SERVER, "stdio"] if direct else wrap, env)
        try:
            pid = None if direct else host.process.pid
            return _drive(host, Flood(kind, reading, seconds, at_least), pid, Path(tmp))
        finally:
            host.close()
            if server is not None:
                server.terminate()
                server.wait()


@dataclass(frozen=True)
class Flood:
    """What one case asks of the flood server and of its host."""

    kind: str
    reading: bool
    seconds: float
    at_least: int = 0


def _paused(state_dir: Path, wrapper_pid: int, bound_s: float = 60.0) -> None:
    """Until the wrapper has stopped reading the upstream (its host's share full), at most `bound_s`."""
    give_up = time.monotonic() + bound_s
    while time.monotonic() < give_up:
        status = operator_tool(state_dir, wrapper_pid)
        if status is not None and status["wrapper"]["upstream"].get("reading_paused"):
            return
        time.sleep(0.05)


def _drive(host: ThreadHost, case: Flood, wrapper_pid: int | None, state_dir: Path) -> dict[str, Any]:
    kind, reading, seconds = case.kind, case.reading, case.seconds
    first = host.request("initialize", INIT)
    if host.wait(first, 30) is None:
        raise RuntimeError("the wrapper did not answer initialize")
    host.notify("notifications/initialized")
    baseline = _status(wrapper_pid) if wrapper_pid else {}
    arguments = {"seconds": seconds, "kind": kind, "at_least": case.at_least}
    flood_args = {"name": "flood", "arguments": arguments, "_meta": {"progressToken": "f"}}
    if not reading:
        host.reading.clear()
    flood = host.request("tools/call", flood_args)
    started = time.perf_counter()
    echoes: list[int] = []
    peak_sampled = 0.0
    while time.perf_counter() - started < seconds:
        if reading:
            echoes.append(host.request("tools/call", {"name": "echo", "arguments": {"n": len(echoes)}}))
        if wrapper_pid:
            peak_sampled = max(peak_sampled, _status(wrapper_pid).get("VmRSS", 0.0))
        time.sleep(ECHO_EVERY_S)
    if wrapper_pid and case.at_least and not reading:
        _paused(state_dir, wrapper_pid)
    seen = operator_tool(state_dir, wrapper_pid) if wrapper_pid else None  # before the host reads on
    held_until = time.perf_counter()
    host.reading.set()
    answer = host.wait(flood, 60)
    for request_id in echoes:
        host.wait(request_id, 10)
    latencies = [v for v in (host.latency_ms(i) for i in echoes) if v is not None]
    status = _status(wrapper_pid) if wrapper_pid else {}
    final = operator_tool(state_dir, wrapper_pid) if wrapper_pid else None
    text = ""
    if answer is not None:
        text = " ".join(b.get("text", "") for b in (answer.get("result") or {}).get("content", []))
    return {
        "echo_calls": len(echoes),
        "echo_answered": len(latencies),
        "echo_p50_ms": _percentile(latencies, 0.5),
        "echo_p99_ms": _percentile(latencies, 0.99),
        "echo_max_ms": round(max(latencies), 2) if latencies else None,
        "notifications_read": host.notifications,
        "mb_read_by_host": round(host.bytes_read / 1e6, 1),
        "flood_answered": answer is not None and "result" in answer,
        "flood_answer": text[:40],
        "flood_answer_after_read_s": None if answer is None else round(time.perf_counter() - held_until, 2),
        "rss_start_mb": baseline.get("VmRSS"),
        "peak_rss_sampled_mb": peak_sampled or None,
        "peak_rss_mb": status.get("VmHWM"),
        "wrapper_at_flood_end": None
        if seen is None
        else {
            "backpressure": seen.get("backpressure"),
            "upstream_reading_paused": seen["wrapper"]["upstream"].get("reading_paused"),
            "log_events_dropped": (seen.get("log") or {}).get("events_dropped"),
        },
        "progress_coalesced": None if final is None else final["counters"]["progress_coalesced"],
        "upstream_pauses": None if final is None else final["counters"]["upstream_pauses"],
    }


CASES = (
    ("stdio", "progress", True),
    ("stdio", "message", True),
    ("stdio", "progress", False),
    ("stdio", "message", False),
    ("http", "progress", True),
    ("http", "message", False),
)


def run_direct_http(kind: str, seconds: float) -> dict[str, Any]:
    """The direct path over HTTP: the flood server's own event stream read as fast as it comes, and the same echo
    schedule, with the wrapper's HTTP client and no wrapper."""
    from mcpwatch.wrapper.upstreams.http11 import Client, EventStream

    port = free_port()
    server = subprocess.Popen([*FLOOD_SERVER, "http", str(port)], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    async def post(client: Client, request_id: int, method: str, params: dict[str, Any]) -> Any:
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode()
        return await client.request("POST", url, headers, body)

    async def drive() -> dict[str, Any]:
        client = Client()
        seen = [0]
        (await post(client, 1, "initialize", INIT)).close()
        arguments = {"seconds": seconds, "kind": kind}
        reply = await post(
            client, 2, "tools/call", {"name": "flood", "arguments": arguments, "_meta": {"progressToken": 1}}
        )
        events = EventStream(lambda data: seen.__setitem__(0, seen[0] + 1))

        async def read_flood() -> None:
            async for chunk in reply.chunks():
                events.feed(chunk)

        reading = asyncio.ensure_future(read_flood())
        latencies: list[float] = []

        async def echo(n: int) -> None:
            sent = time.perf_counter()
            answer = await post(client, 3 + n, "tools/call", {"name": "echo", "arguments": {"n": n}})
            await answer.read()
            answer.close()
            latencies.append((time.perf_counter() - sent) * 1000)

        started = time.perf_counter()
        calls: list[asyncio.Future[None]] = []
        while time.perf_counter() - started < seconds:
            calls.append(asyncio.ensure_future(echo(len(calls))))
            await asyncio.sleep(ECHO_EVERY_S)
        await asyncio.gather(*calls, reading)
        client.close()
        return {"echo_calls": len(calls), "echo_p99_ms": _percentile(latencies, 0.99), "notifications_read": seen[0]}

    try:
        wait_for_port(port)
        return asyncio.run(drive())
    finally:
        server.terminate()
        server.wait()


def run(quick: bool = False) -> dict[str, Any]:
    seconds = 3.0 if quick else 10.0
    cases: dict[str, Any] = {}
    for transport, kind, reading in CASES:
        name = f"{transport}_{kind}_flood_host_{'reading' if reading else 'not_reading'}"
        cases[name] = run_case(transport, kind, reading, seconds)
        if reading:
            direct = (
                run_case(transport, kind, reading, seconds, direct=True)
                if transport == "stdio"
                else run_direct_http(kind, seconds)
            )
            cases[name]["direct_echo_p99_ms"] = direct["echo_p99_ms"]
            cases[name]["direct_notifications_read"] = direct["notifications_read"]
    peak = max(c["peak_rss_mb"] or 0.0 for c in cases.values())
    p99 = max((c["echo_p99_ms"] or 0.0) for c in cases.values() if c["echo_calls"])
    answered = all(c["flood_answered"] for c in cases.values())
    return {
        "flood_seconds": seconds,
        "cases": cases,
        "peak_rss_mb": peak,
        "worst_echo_p99_ms": p99,
        "targets": {"rss_mb": TARGET_RSS_MB, "echo_p99_ms": TARGET_P99_MS},
        "pass": peak <= TARGET_RSS_MB and p99 <= TARGET_P99_MS and answered,
    }


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "case":
        transport, kind, reading = sys.argv[2], sys.argv[3], sys.argv[4] == "reading"
        print(json.dumps(run_case(transport, kind, reading, float(sys.argv[5]) if len(sys.argv) > 5 else 5.0)))
    else:
        print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
