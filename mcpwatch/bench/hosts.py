"""`mcpwatch bench hosts`: the HTTP front with 1, 4, 16 and 64 hosts, at saturation and at a host's pace.

One `mcpwatch wrap --listen` (event log on, `[front] max_sessions = 64`) over the raw upstream
(`mcpwatch.bench.raw_upstream`); each host is a session of its own (its own upstream process, as on a real front)
on one kept-alive HTTP/1.1 connection. Two figures per number of hosts, which are not the same question:

- **saturation** (closed loop): every host calls `noop` again as soon as its last call is answered. Its calls/s is
  the most the front (with its upstreams, on this machine) answers; its latency is not a latency a host would see,
  since by Little's law the median is about the hosts over the throughput (64 hosts at 2,000 calls/s: 32 ms).
- **paced** (open loop): every host calls at PER_HOST_CALLS_PER_S, on a schedule its answers do not move (a real
  host calls when its model or its user asks, not when its last answer came). The latency is counted from when the
  call left (`p99_from_due_ms` also counts from when it was due: a host that fell behind waits that long more, and
  so does one whose own process woke late). This is the latency hosts see.

Each stage runs for the same time after a warm-up, and gives CPU per call of the three parties on the machine: the
wrapper (all its threads), its upstream processes (all of them) and the hosts (raw asyncio clients in this process);
CPU per call is the figure a loaded machine changes least. Also how often the wrapper was preempted per call, and
the cores the machine's other work kept busy meanwhile. On a machine busy anyway, throughput is the share it gets
over the CPU a call costs, so `cpu_ratio_64_to_4` (CPU per call at 4 hosts over at 64) is the saturation ratio the
work itself allows. `upstreams_alone` drives 4 and 64 upstream processes in turn over their pipes with no front:
what a call costs them when each is woken once every 4 or 64 calls.

With `MCPWATCH_BENCH_FRONT_ROOT=DIR` the wrapper runs from another checkout (DIR holding its `mcpwatch` package):
the same hosts against the code before a change, in the same run.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcpwatch.bench import RAW_UPSTREAM
from mcpwatch.bench.baseline import baseline_root
from mcpwatch.bench.paced import require_thread_counters
from mcpwatch.bench.procstat import cpu_s, descendants, machine_cpu_s, preemptions, queued_s
from mcpwatch.ports import free_port, wait_for_port

HELP = "HTTP front: calls/s at saturation and latency at a host's pace with 1, 4, 16 and 64 hosts, a session each"

HOSTS = (1, 4, 16, 64)
STDERR = subprocess.DEVNULL
ROOT_ENV = "MCPWATCH_BENCH_FRONT_ROOT"
PER_HOST_CALLS_PER_S = 5.0  # a call every 200 ms per host: more often than a model-driven host calls a tool
PACED_MIN_S = 2.0  # at that pace a stage needs seconds to hold enough calls for a median (even with --quick)
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}


class RawHost:
    """One host session over one kept-alive connection; `call` returns the latency of one `noop`."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.session = ""
        self.next_id = 0
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        await self._post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
        await self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def _post(self, message: dict[str, Any]) -> bytes:
        assert self.reader is not None and self.writer is not None
        body = json.dumps(message).encode()
        session = f"Mcp-Session-Id: {self.session}\r\n" if self.session else ""
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\n{session}Content-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        try:
            status_and_headers = await self.reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as closed:
            if closed.partial:
                raise
            # the server closed the kept-alive connection before this request (uvicorn: 5 s idle): a new one, as
            # HTTP clients do
            self.writer.close()
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
            self.writer.write(head.encode() + body)
            status_and_headers = await self.reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in status_and_headers.split(b"\r\n"):
            name, _, value = line.partition(b":")
            key = name.strip().lower()
            if key == b"content-length":
                length = int(value)
            elif key == b"mcp-session-id" and not self.session:
                self.session = value.strip().decode()
        if not status_and_headers.startswith(b"HTTP/1.1 2"):
            raise RuntimeError(f"the front answered {status_and_headers[:60]!r}")
        return await self.reader.readexactly(length) if length else b""

    async def call(self) -> float:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call", "params": {"name": "noop"}}
        started = time.perf_counter()
        await self._post(message)
        return time.perf_counter() - started

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def _cpu_of(pids: list[int]) -> float:
    return sum(cpu_s(pid) for pid in pids)


async def _stage(
    hosts: list[RawHost], seconds: float, warmup_s: float, pid: int, per_host: float | None = None
) -> dict[str, Any]:
    """All hosts calling for `seconds` after `warmup_s`: in a closed loop (saturation), or each at `per_host` calls/s
    on a fixed schedule its answers do not move (paced, open loop)."""
    latencies: list[float] = []
    from_due: list[float] = []  # paced: from when each call was due (the host's wait, if it fell behind, counted)
    counting = False
    stop = False
    gap = 1 / per_host if per_host else 0.0

    async def loop(host: RawHost, offset: float) -> None:
        due = time.perf_counter() + offset
        while not stop:
            if gap:
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
            took = await host.call()
            if counting:
                latencies.append(took)
                from_due.append(time.perf_counter() - due)
            due += gap

    tasks = [asyncio.ensure_future(loop(host, gap * n / len(hosts))) for n, host in enumerate(hosts)]
    await asyncio.sleep(warmup_s)
    upstreams = descendants(pid)
    counting = True
    before = _Counts.read(pid, upstreams)
    await asyncio.sleep(seconds)
    counting = False
    spent = _Counts.read(pid, upstreams).minus(before)
    stop = True
    await asyncio.gather(*tasks)
    latencies.sort()
    from_due.sort()
    calls = max(1, len(latencies))
    return {
        "hosts": len(hosts),
        **({"per_host_calls_per_s": per_host} if per_host else {}),
        "calls_per_s": round(len(latencies) / spent.elapsed),
        "median_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 2),
        # also this process's own lateness in waking up for a call (a few ms on a loaded machine), not the front's
        **({"p99_from_due_ms": round(from_due[int(len(from_due) * 0.99)] * 1000, 2)} if gap else {}),
        **spent.per_call(calls),
    }


class _Counts:
    """CPU and preemptions of the stage's three parties (the hosts, the wrapper, its upstreams) and the machine's
    busy time: what a loaded machine changes least, and where the saturation curve's calls/s go."""

    def __init__(self, values: list[float]) -> None:
        self.values = values

    @classmethod
    def read(cls, pid: int, upstreams: list[int]) -> _Counts:
        machine_all, machine_idle = machine_cpu_s()
        own = [cpu_s(os.getpid()), cpu_s(pid), _cpu_of(upstreams), float(preemptions(pid)), queued_s(pid)]
        return cls([time.perf_counter(), *own, machine_all - machine_idle, machine_all])

    def minus(self, before: _Counts) -> _Counts:
        return _Counts([now - then for now, then in zip(self.values, before.values, strict=True)])

    @property
    def elapsed(self) -> float:
        return self.values[0]

    def per_call(self, calls: int) -> dict[str, float]:
        elapsed, hosts, wrapper, upstreams, preempted, queued, busy, every = self.values
        ours = hosts + wrapper + upstreams
        cores = os.cpu_count() or 1
        return {
            # the wrapper's own CPU (all its threads) per call, and its upstream processes': flat while the curve
            # bends means the time goes elsewhere (the upstreams, the machine's other work), not to the front's work
            "wrapper_cpu_us_per_call": round(wrapper / calls * 1e6, 1),
            "upstreams_cpu_us_per_call": round(upstreams / calls * 1e6, 1),
            "hosts_cpu_us_per_call": round(hosts / calls * 1e6, 1),  # the benchmark's own clients (this process)
            "cpu_us_per_call": round(ours / calls * 1e6, 1),  # all three: what a call costs the machine
            # the scheduler took the CPU from the wrapper while it could run: another task ran on its core meanwhile
            "wrapper_preempted_per_call": round(preempted / calls, 2),
            # and how long it waited for a CPU while it could run: the machine's other work, in time per call
            "wrapper_queued_us_per_call": round(queued / calls * 1e6, 1),
            # the cores everything else on the machine kept busy meanwhile: a share the stage did not get
            "others_cores": round(max(0.0, busy / every * cores - ours / elapsed), 2) if every else 0.0,
        }


async def _drive(
    port: int, pid: int, counts: tuple[int, ...], seconds: float, warmup_s: float
) -> dict[str, list[dict[str, Any]]]:
    hosts: list[RawHost] = []
    saturation, paced = [], []
    try:
        for count in counts:
            while len(hosts) < count:
                host = RawHost(port)
                await host.open()
                hosts.append(host)
            await host.call()  # the newest upstream has started
            saturation.append(await _stage(hosts, seconds, warmup_s, pid))
            paced.append(await _stage(hosts, max(seconds, PACED_MIN_S), warmup_s, pid, per_host=PER_HOST_CALLS_PER_S))
    finally:
        for host in hosts:
            host.close()
    return {"saturation": saturation, "paced": paced}


NOOP_LINE = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"noop"}}\n'


def upstreams_alone(count: int, calls: int, root: str | None = None) -> dict[str, Any]:
    """`count` upstream processes answering `calls` calls in turn over their pipes, no front at all: what a call
    costs the upstreams alone when each is woken once every `count` calls (cold caches with many, warm with few)."""
    env = {**os.environ, **({"PYTHONPATH": root} if root else {})}
    argv = list(RAW_UPSTREAM)
    pipe = subprocess.PIPE
    processes = [subprocess.Popen(argv, stdin=pipe, stdout=pipe, env=env, cwd=root, bufsize=0) for _ in range(count)]
    try:

        def call(process: subprocess.Popen[bytes]) -> None:
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(NOOP_LINE)
            process.stdout.readline()

        for _ in range(20):  # started and warmed
            for process in processes:
                call(process)
        pids = [process.pid for process in processes]
        before = _cpu_of(pids)
        for n in range(calls):
            call(processes[n % count])
        return {"processes": count, "cpu_us_per_call": round((_cpu_of(pids) - before) / calls * 1e6, 1)}
    finally:
        for process in processes:
            if process.stdin is not None:
                process.stdin.close()
        for process in processes:
            process.wait(15)
            if process.stdout is not None:
                process.stdout.close()


def curve(
    root: str | None = None, counts: tuple[int, ...] = HOSTS, seconds: float = 5.0
) -> dict[str, list[dict[str, Any]]]:
    """The stages against a fresh wrapper (from `root`'s checkout when given)."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "mcpwatch.toml"
        config.write_text(f"[front]\nmax_sessions = {max(counts)}\n")
        env = {**os.environ, "MCPWATCH_STATE_DIR": tmp}
        if root:
            env["PYTHONPATH"] = root
        wrap = ["wrap", "--config", str(config), "--log", str(Path(tmp) / "bench.db")]
        wrap += ["--listen", f"http://127.0.0.1:{port}/mcp", "--", *RAW_UPSTREAM]
        process = subprocess.Popen([sys.executable, "-m", "mcpwatch", *wrap], env=env, cwd=root or None, stderr=STDERR)
        try:
            wait_for_port(port, 30)
            return asyncio.run(_drive(port, process.pid, counts, seconds, min(1.0, seconds / 5)))
        finally:
            process.terminate()
            process.wait(15)


def front_held_ratio(at_4: dict[str, Any] | None, at_64: dict[str, Any] | None) -> float | None:
    """CPU per call at 4 hosts over that at 64 with the front's own share at 64 taken as at 4 (None without both)."""
    if not at_4 or not at_64:
        return None
    held = at_64["cpu_us_per_call"] - at_64["wrapper_cpu_us_per_call"] + at_4["wrapper_cpu_us_per_call"]
    return round(at_4["cpu_us_per_call"] / held, 2) if held > 0 else None


def run(quick: bool = False) -> dict[str, Any]:
    counts = (1, 4) if quick else HOSTS
    seconds = 0.5 if quick else 5.0
    require_thread_counters()  # the counters per call are read from /proc
    root = baseline_root(ROOT_ENV)  # a checkout whose code runs as this user: checked as a baseline's is
    stages = curve(root, counts, seconds)
    alone = [upstreams_alone(count, 100 if quick else 3200, root) for count in ((1, 4) if quick else (4, 64))]
    by_hosts = {stage["hosts"]: stage for stage in stages["saturation"]}
    cpu_4, cpu_64 = (by_hosts[n]["cpu_us_per_call"] if n in by_hosts else None for n in (4, 64))
    paced_64 = next((stage for stage in stages["paced"] if stage["hosts"] == 64), None)
    return {
        "machine": f"{os.cpu_count()} cores, {sys.platform}, Python {sys.version.split()[0]}",
        "seconds_per_stage": seconds,
        **stages,
        "targets": {
            "saturation_calls_per_s_at_64_vs_4": ">= 1.0",
            "paced_median_ms_at_64": f"< 5 at {PER_HOST_CALLS_PER_S:g} calls/s per host",
        },
        "ratio_64_to_4": round(by_hosts[64]["calls_per_s"] / by_hosts[4]["calls_per_s"], 2) if 64 in by_hosts else None,
        # the same ratio as the calls' CPU alone allows where the machine's cores are all busy anyway (a shared
        # machine): CPU per call at 4 hosts over that at 64
        "cpu_ratio_64_to_4": round(cpu_4 / cpu_64, 2) if cpu_4 and cpu_64 else None,
        # … and if the front's own CPU per call at 64 hosts were what it is at 4 (the upstreams and the hosts as they
        # are at 64): what the rest of the machine's work allows, whatever the front does
        "cpu_ratio_with_the_front_at_4": front_held_ratio(by_hosts.get(4), by_hosts.get(64)),
        # the upstream processes driven over their pipes with no front, the same calls in turn
        "upstreams_alone": alone,
        "paced_median_ms_at_64": paced_64["median_ms"] if paced_64 else None,
    }
