"""`mcpwatch bench paced`: the wrapper's CPU per call, with its log, at fixed call rates (5,000 and 250 calls/s).

A host's calls come at the pace its model and user set, not as fast as the wrapper answers; what a call costs at
that pace is its CPU time, which a shared machine's load changes far less than latency. A raw JSON-RPC host (no
SDK: it would be the bottleneck) calls `noop` through `mcpwatch wrap --log` onto the raw upstream on a fixed
schedule its answers do not move (open loop), in windows of `WINDOW_S`; the wrapper's CPU over each window is read
from the kernel's per-thread counters (`/proc/PID/task/*/schedstat`, nanoseconds on a CPU), not from wall time,
once every answer of the window is back and the log has had `SETTLE_S` to write them.

`MCPWATCH_BENCH_BASELINE=DIR` adds a second wrapper, run from the mcpwatch package in DIR (an older checkout), fed by
a host of its own; the windows alternate (this, DIR, DIR, this, …) so a drift in the machine's load hits both alike,
and each rate reports both sides and the ratio of their medians. `MCPWATCH_BENCH_RATES=5000,250` sets the rates.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from mcpwatch.bench import RAW_UPSTREAM
from mcpwatch.bench.baseline import BASELINE_ENV, baseline_root
from mcpwatch.bench.procstat import thread_cpu
from mcpwatch.errors import UserError

HELP = "the wrapper's CPU per call with its log at fixed call rates (5,000 and 250 calls/s), against a baseline"
BASELINE_INSIDE = True  # runs the baseline's wrapper beside its own, window by window (not `bench.baseline.compare`)

RATES = (5000, 250)
RATES_ENV = "MCPWATCH_BENCH_RATES"
RATE_MIN, RATE_MAX = 1.0, 100_000.0  # calls per second a window may ask for
WINDOW_S = 4.0  # one measured window; a round is one window per side
ROUNDS = 3  # windows per side and rate (ABBA order across rounds)
WARMUP_S = 1.0
ANSWER_WAIT_S = 60.0  # after a window's last call: a no-op's answer takes milliseconds, a stuck wrapper forever
SETTLE_S = 0.3  # after a window's last answer: the log writer's batch (flush_interval 100 ms) written
TARGETS_US = {5000: 120.0, 250: 200.0}
# `feature_cost` as `bench otel` and `bench metrics` run it: the rate, the window and the rounds; a smoke run's
FEATURE_RATE, FEATURE_WINDOW_S, FEATURE_ROUNDS = 1000.0, 3.0, 7
FEATURE_QUICK = (0.2, 2)  # window_s, rounds
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "mcpwatch-bench-paced", "version": "1"},
}
WrapperCommand = tuple[list[str], dict[str, str], str | None]  # a wrapper's argv, environment and working directory


@dataclass
class Window:
    """One measured window of one wrapper: its calls and what its threads spent on them."""

    calls: int
    seconds: float
    cpu_ns: dict[int, int] = field(default_factory=dict)  # by thread id (the process id: the loop's thread)
    switches: dict[int, int] = field(default_factory=dict)

    def per_call_us(self) -> float:
        return sum(self.cpu_ns.values()) / 1000 / max(1, self.calls)


class RawHost:
    """A host speaking raw JSON-RPC lines to a `wrap` process over its stdin and stdout, answers matched by id."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.waiting: dict[int, asyncio.Future[None]] = {}
        self.next_id = 0
        self.gone: str | None = None  # why the wrapper's answers ended, once they have
        self.reader = asyncio.ensure_future(self._read())

    @classmethod
    async def start(cls, argv: list[str], env: dict[str, str], cwd: str | None = None) -> RawHost:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            limit=1 << 20,
        )
        host = cls(process)
        try:
            await host.request("initialize", INIT)
        except ConnectionError:
            await process.wait()
            command = " ".join(argv)
            raise UserError(f"{command} exited ({process.returncode}) before it answered; run it alone") from None
        host.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await host.request("tools/list", {})
        return host

    async def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        problem = "the wrapper closed its stdout"
        try:
            while line := await stdout.readline():
                message = json.loads(line)
                request_id = message.get("id") if isinstance(message, dict) else None
                future = self.waiting.pop(request_id, None) if isinstance(request_id, int) else None
                if future is not None and not future.done():
                    future.set_result(None)
        except ValueError as exc:  # a line that is not JSON, or longer than the reader's limit
            problem = f"the wrapper wrote a line that is not a JSON-RPC message ({type(exc).__name__})"
        finally:  # every call still waiting fails, and every later one: nothing else would end their wait
            self.gone = problem
            self.waiting, waiting = {}, self.waiting
            for future in waiting.values():
                if not future.done():
                    future.set_exception(ConnectionError(problem))

    def send(self, message: dict[str, Any]) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def request(self, method: str, params: dict[str, Any]) -> asyncio.Future[None]:
        self.next_id += 1
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.gone is not None:
            future.set_exception(ConnectionError(self.gone))
            return future
        self.waiting[self.next_id] = future
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return future

    async def paced(self, rate: float, seconds: float) -> int:
        """Call `noop` `rate` times a second for `seconds` on a fixed schedule (a call late for its time goes at
        once); return when every answer is back. The number of calls made."""
        total = max(1, round(rate * seconds))
        started = time.perf_counter()
        issued = 0
        answers: list[asyncio.Future[None]] = []
        while issued < total:
            due = min(total, int((time.perf_counter() - started) * rate) + 1)
            while issued < due:
                answers.append(self.request("tools/call", {"name": "noop", "arguments": {}}))
                issued += 1
            await asyncio.sleep(max(0.0, started + issued / rate - time.perf_counter()))
        answered, unanswered = await asyncio.wait(answers, timeout=ANSWER_WAIT_S)
        for future in unanswered:
            future.cancel()  # their wait ends here, and so does any later word of them
        failed = [problem for future in answered if (problem := future.exception()) is not None]  # each one read
        pid = self.process.pid
        if unanswered:
            raise UserError(
                f"the wrapper (pid {pid}) left {len(unanswered)} of {total} calls unanswered {ANSWER_WAIT_S:g} s "
                "after the last was sent; run it alone to see why"
            )
        if failed:
            raise UserError(f"the wrapper (pid {pid}) stopped answering: {failed[0]}; run it alone to see why")
        return total

    async def close(self) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), 15)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        self.reader.cancel()


async def measure(host: RawHost, rate: float, seconds: float, settle_s: float = SETTLE_S) -> Window:
    """One window: the wrapper's threads' CPU and switches over `seconds` of calls at `rate`, and `settle_s` more
    for the work its threads do after the answers (the log's batch, an export's)."""
    pid = host.process.pid
    before = thread_cpu(pid)
    began = time.perf_counter()
    calls = await host.paced(rate, seconds)
    elapsed = time.perf_counter() - began
    await asyncio.sleep(settle_s)
    after = thread_cpu(pid)
    window = Window(calls, elapsed)
    for tid, (ns, switches) in after.items():
        ns0, switches0 = before.get(tid, (0, 0))
        window.cpu_ns[tid] = ns - ns0
        window.switches[tid] = switches - switches0
    return window


def _side(windows: list[Window], pid: int, rate: float) -> dict[str, Any]:
    """A side's windows summarised: CPU per call (median, spread), the loop thread's and the others', switches."""
    per_call = [w.per_call_us() for w in windows]
    loop = [w.cpu_ns.get(pid, 0) / 1000 / max(1, w.calls) for w in windows]
    switches = [sum(w.switches.values()) / max(1, w.calls) for w in windows]
    return {
        "calls_per_s": round(statistics.median(w.calls / w.seconds for w in windows)),
        "rate_asked": rate,
        "calls": sum(w.calls for w in windows),
        "cpu_us_per_call": round(statistics.median(per_call), 1),
        "cpu_us_per_call_min": round(min(per_call), 1),
        "cpu_us_per_call_max": round(max(per_call), 1),
        "loop_thread_us_per_call": round(statistics.median(loop), 1),
        "other_threads_us_per_call": round(statistics.median(p - q for p, q in zip(per_call, loop, strict=True)), 1),
        "context_switches_per_call": round(statistics.median(switches), 2),
        "windows": len(windows),
    }


async def open_hosts(paths: dict[str, WrapperCommand]) -> dict[str, RawHost]:
    """One raw host per path (its wrapper's argv, environment and working directory), each initialised."""
    hosts: dict[str, RawHost] = {}
    try:
        for name, (argv, env, cwd) in paths.items():
            hosts[name] = await RawHost.start(argv, env, cwd)
    except BaseException:
        await close_hosts(hosts)
        raise
    return hosts


async def close_hosts(hosts: dict[str, RawHost]) -> None:
    for host in hosts.values():
        await host.close()


async def interleaved(
    hosts: dict[str, RawHost], rate: float, window_s: float, rounds: int, settle_s: float = SETTLE_S
) -> dict[str, list[Window]]:
    """`rounds` windows per host at `rate`, after a warm-up: each round runs every host once, the order rotated
    round by round, so a drift in the machine's load hits every host alike."""
    for host in hosts.values():
        await host.paced(rate, min(WARMUP_S, window_s))
    names = list(hosts)
    windows: dict[str, list[Window]] = {name: [] for name in names}
    for n in range(rounds):
        for name in names[n % len(names) :] + names[: n % len(names)]:
            windows[name].append(await measure(hosts[name], rate, window_s, settle_s))
    return windows


def round_ratios(windows: dict[str, list[Window]], name: str, base: str) -> dict[str, float]:
    """`name`'s CPU per call over `base`'s, round by round (each pair measured minutes apart at most): the median
    and the spread. The same figure for two identical wrappers is what noise alone makes of it."""
    ratios = sorted(
        a.per_call_us() / b.per_call_us() for a, b in zip(windows[name], windows[base], strict=True) if b.per_call_us()
    )
    if not ratios:
        return {}
    return {
        "median": round(statistics.median(ratios), 3),
        "min": round(ratios[0], 3),
        "max": round(ratios[-1], 3),
        "rounds": len(ratios),
    }


def wrapper_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "mcpwatch", "wrap", *args, "--", *RAW_UPSTREAM]


async def feature_cost(
    plain: WrapperCommand,
    feature: WrapperCommand,
    rate: float,
    window_s: float,
    rounds: int,
    settle_s: float = SETTLE_S,
    others: dict[str, WrapperCommand] | None = None,
) -> dict[str, Any]:
    """What a feature adds to the CPU per call: two plain wrappers and one with the feature, paced windows in
    rotating order; each round's ratio of the feature's over the first plain one's, beside the same ratio for the
    second plain one (noise alone). Within noise when the feature's median falls inside the plain pair's spread.
    `others` (say, the feature from an older checkout) join the rotation, each with its ratio to the plain one and
    the feature's to it."""
    paths = {"plain": plain, "plain_again": plain, "feature": feature, **(others or {})}
    hosts = await open_hosts(paths)
    try:
        windows = await interleaved(hosts, rate, window_s, rounds, settle_s)
    finally:
        await close_hosts(hosts)
    ratio, noise = round_ratios(windows, "feature", "plain"), round_ratios(windows, "plain_again", "plain")
    figures = {
        "calls_per_s": rate,
        "window_s": window_s,
        "cpu_us_per_call": {name: [round(w.per_call_us(), 1) for w in found] for name, found in windows.items()},
        "feature_to_plain": ratio,
        "plain_again_to_plain": noise,
        "within_noise": bool(ratio and noise and noise["min"] <= ratio["median"] <= noise["max"]),
    }
    for name in others or {}:
        figures[f"{name}_to_plain"] = round_ratios(windows, name, "plain")
        figures[f"feature_to_{name}"] = round_ratios(windows, "feature", name)
    return figures


async def _drive(rates: list[float], window_s: float, rounds: int, env: dict[str, str], tmp: str) -> dict[str, Any]:
    paths: dict[str, WrapperCommand] = {"this": (wrapper_argv("--log", os.path.join(tmp, "this.db")), env, None)}
    baseline = baseline_root()
    if baseline:
        # run from that directory: `python -m` looks in the working directory before PYTHONPATH
        argv = wrapper_argv("--log", os.path.join(tmp, "baseline.db"))
        paths["baseline"] = (argv, {**env, "PYTHONPATH": baseline}, baseline)
    hosts = await open_hosts(paths)
    try:
        out: dict[str, Any] = {}
        for rate in rates:
            windows = await interleaved(hosts, rate, window_s, rounds)
            figures: dict[str, Any] = {name: _side(windows[name], hosts[name].process.pid, rate) for name in hosts}
            if "baseline" in figures:
                figures["ratio_this_to_baseline"] = round_ratios(windows, "this", "baseline")
            figures["target_cpu_us_per_call"] = TARGETS_US.get(int(rate))
            out[f"{rate:g}_calls_per_s"] = figures
        return out
    finally:
        await close_hosts(hosts)


def rates_asked(environ: dict[str, str] | os._Environ[str], default: tuple[float, ...] = RATES) -> list[float]:
    """The rates to run: `MCPWATCH_BENCH_RATES` (comma-separated calls per second), else `default`."""
    text = environ.get(RATES_ENV, "").strip()
    if not text:
        return [float(r) for r in default]
    try:
        rates = [float(part) for part in text.split(",")]
    except ValueError:
        rates = []
    if not rates or any(not RATE_MIN <= r <= RATE_MAX for r in rates):  # below 1, a call waits 1/rate seconds
        raise UserError(f"{RATES_ENV}={text[:80]!r}: give calls per second from 1 to 100000, e.g. 5000,250")
    return rates


def require_thread_counters() -> None:
    """Refuse to run where the kernel keeps no per-thread CPU counters in /proc (not Linux): every window would
    read as no CPU at all, a figure that meets any target and means nothing."""
    if not thread_cpu(os.getpid()):
        raise UserError("this bench reads each thread's CPU time from /proc/PID/task (Linux); this system has none")


def run(quick: bool = False) -> dict[str, Any]:
    rates = rates_asked(os.environ)
    require_thread_counters()
    window_s, rounds = (0.2, 1) if quick else (WINDOW_S, ROUNDS * 2 if os.environ.get(BASELINE_ENV) else ROUNDS)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "MCPWATCH_STATE_DIR": tmp}
        env.pop(BASELINE_ENV, None)
        figures = asyncio.run(_drive(rates, window_s, rounds, env, tmp))
    return {
        "machine": f"{os.cpu_count()} cores, {sys.platform}, Python {sys.version.split()[0]}",
        "window_s": window_s,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "paced": figures,
        "targets": {f"{int(r)}_calls_per_s.cpu_us_per_call": t for r, t in TARGETS_US.items()},
    }
