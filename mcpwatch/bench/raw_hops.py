"""The stdio hop with nothing else in the way, for `mcpwatch bench wrap`: a raw client (a line written, a line read,
blocking) and the raw upstream, direct, through the line forwarder and through `mcpwatch wrap`.

The SDK paths' figures also hold the SDK client's and server's threads, which the scheduler places differently
beside a third process; here there is one thread at each end, so what the wrapper adds over the forwarder is its own
work on the way there and back (`wrapper_over_floor_us`).
"""

from __future__ import annotations

import subprocess
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


def _open(stack: ExitStack, argv: list[str], env: dict[str, str]) -> tuple[IO[bytes], IO[bytes]]:
    """The process's stdin and stdout, initialized; closed, and the process ended, when `stack` closes."""
    process = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, bufsize=0
    )
    stack.callback(_end, process)
    if process.stdin is None or process.stdout is None:  # pragma: no cover - PIPE always gives both
        raise RuntimeError(f"{argv[0]}: no pipes")
    process.stdin.write(INITIALIZE)
    _answer(process.stdout, argv)
    process.stdin.write(INITIALIZED)
    return process.stdin, process.stdout


def _answer(stdout: IO[bytes], argv: list[str]) -> None:
    if not stdout.readline():
        raise RuntimeError(f"{' '.join(argv)}: closed its output")


def _end(process: subprocess.Popen[bytes]) -> None:
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            pipe.close()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def figures(calls: int, warmup: int, env: dict[str, str], log: str) -> dict[str, Any]:
    """Median and p99 microseconds a call per path, taken in turns of BLOCK calls: the turns that hold the first
    `warmup` calls (rounded up to whole turns) are not counted, then `calls` rounded down to whole turns (one at
    least) are."""
    argvs = {
        "direct": [*RAW_UPSTREAM],
        "line_forwarder": [*LINE_FORWARDER, *RAW_UPSTREAM],
        "wrapped": wrap_argv("--log", log, "--", *RAW_UPSTREAM),
    }
    samples: dict[str, list[float]] = {name: [] for name in argvs}
    warm_turns = -(-warmup // BLOCK)
    request_id = 0
    with ExitStack() as stack:
        pipes = {name: _open(stack, argv, env) for name, argv in argvs.items()}
        for turn in range(warm_turns + max(1, calls // BLOCK)):
            for name, (stdin, stdout) in pipes.items():
                write, read = stdin.write, stdout.readline
                for _ in range(BLOCK):
                    request_id += 1
                    started = time.perf_counter()
                    write(CALL % request_id)
                    if not read():
                        raise RuntimeError(f"{' '.join(argvs[name])}: closed its output")
                    if turn >= warm_turns:
                        samples[name].append(time.perf_counter() - started)
    out: dict[str, Any] = {name: summary(values) for name, values in samples.items()}
    out["wrapper_over_floor_us"] = round(out["wrapped"]["median_us"] - out["line_forwarder"]["median_us"], 1)
    return out
