"""The stdio hop with nothing else in the way, for `mcpwatch bench wrap`: a raw client (a line written, a line read,
blocking) and the raw upstream, direct, through the line forwarder and through `mcpwatch wrap`.

The SDK paths' figures also hold the SDK client's and server's threads, which the scheduler places differently
beside a third process; here there is one thread at each end, so what the wrapper adds over the forwarder is its own
work on the way there and back (`wrapper_over_floor_us`).
"""

from __future__ import annotations

import subprocess
import threading
import time
from contextlib import ExitStack
from typing import IO, Any

from mcpwatch.bench import LINE_FORWARDER, RAW_UPSTREAM
from mcpwatch.bench.sdk_paths import summary, wrap_argv

BLOCK = 100  # calls on one path before the next path's turn
INITIALIZE = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},'
    b'"clientInfo":{"name":"raw","version":"1"}}}\n'
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
CALL = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"noop","arguments":{}}}\n'


STALL_S = 30.0  # a turn of BLOCK calls taking longer than this is a peer that stopped answering: the run ends


def _open(
    stack: ExitStack, argv: list[str], env: dict[str, str]
) -> tuple[subprocess.Popen[bytes], IO[bytes], IO[bytes]]:
    """The process, its stdin and its stdout; closed, and the process ended, when `stack` closes."""
    process = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, bufsize=0
    )
    stack.callback(_end, process)
    if process.stdin is None or process.stdout is None:  # pragma: no cover - PIPE always gives both
        raise RuntimeError(f"{argv[0]}: no pipes")
    return process, process.stdin, process.stdout


def _end(process: subprocess.Popen[bytes]) -> None:
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            pipe.close()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class _Watchdog:
    """Ends every process when no turn finished for `stall_s` seconds, so a peer that stops answering ends the run
    (its blocked read then reads nothing) rather than holding it for good."""

    def __init__(self, processes: list[subprocess.Popen[bytes]], stall_s: float) -> None:
        self.processes, self.stall_s = processes, stall_s
        self.turns, self.stalled = 0, False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="raw-hops-watchdog", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        seen = -1
        while not self._done.wait(self.stall_s):
            if self.turns == seen:
                self.stalled = True
                for process in self.processes:
                    process.kill()
                return
            seen = self.turns

    def stop(self) -> None:
        self._done.set()
        self._thread.join()

    def problem(self, argv: list[str]) -> RuntimeError:
        what = f"answered nothing for {self.stall_s:g} s" if self.stalled else "closed its output"
        return RuntimeError(f"{' '.join(argv)}: {what}")


def figures(calls: int, warmup: int, env: dict[str, str], log: str) -> dict[str, Any]:
    """Median and p99 microseconds a call per path, taken in turns of BLOCK calls: the turns that hold the first
    `warmup` calls (rounded up to whole turns) are not counted, then `calls` rounded down to whole turns (one at
    least) are."""
    argvs = {
        "direct": [*RAW_UPSTREAM],
        "line_forwarder": [*LINE_FORWARDER, *RAW_UPSTREAM],
        "wrapped": wrap_argv("--log", log, "--", *RAW_UPSTREAM),
    }
    samples = measure(argvs, calls, warmup, env)
    out: dict[str, Any] = {name: summary(values) for name, values in samples.items()}
    out["wrapper_over_floor_us"] = round(out["wrapped"]["median_us"] - out["line_forwarder"]["median_us"], 1)
    return out


def measure(
    argvs: dict[str, list[str]], calls: int, warmup: int, env: dict[str, str], stall_s: float = STALL_S
) -> dict[str, list[float]]:
    """Each path's latencies in seconds (see `figures`); a RuntimeError naming the path whose peer closed its
    output or answered nothing for `stall_s`."""
    samples: dict[str, list[float]] = {name: [] for name in argvs}
    warm_turns = -(-warmup // BLOCK)
    request_id = 0
    with ExitStack() as stack:
        opened = {name: _open(stack, argv, env) for name, argv in argvs.items()}
        watchdog = _Watchdog([process for process, _, _ in opened.values()], stall_s)
        stack.callback(watchdog.stop)
        for name, (_, stdin, stdout) in opened.items():
            try:
                stdin.write(INITIALIZE)
                if not stdout.readline():
                    raise watchdog.problem(argvs[name])
                stdin.write(INITIALIZED)
            except OSError:
                raise watchdog.problem(argvs[name]) from None
        for turn in range(warm_turns + max(1, calls // BLOCK)):
            for name, (_, stdin, stdout) in opened.items():
                write, read = stdin.write, stdout.readline
                try:
                    for _ in range(BLOCK):
                        request_id += 1
                        started = time.perf_counter()
                        write(CALL % request_id)
                        if not read():
                            raise watchdog.problem(argvs[name])
                        if turn >= warm_turns:
                            samples[name].append(time.perf_counter() - started)
                except OSError:  # a pipe the peer (or the watchdog) closed
                    raise watchdog.problem(argvs[name]) from None
                watchdog.turns += 1
    return samples
