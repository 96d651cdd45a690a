"""The stdio hop with nothing else in the way, for `mcpwatch bench wrap`: a raw client (a line written, a line read,
blocking) and the raw upstream, direct, through the line forwarder and through `mcpwatch wrap`.

The SDK paths' figures also hold the SDK client's and server's threads, which the scheduler places differently
beside a third process; here there is one thread at each end, so what the wrapper adds over the forwarder is its own
work on the way there and back (`wrapper_over_floor_us`).
"""

from __future__ import annotations

import statistics
import subprocess
import time
from typing import IO, Any

from mcpwatch.bench import LINE_FORWARDER, RAW_UPSTREAM
from mcpwatch.bench.sdk_paths import wrap_argv

INITIALIZE = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},'
    b'"clientInfo":{"name":"raw","version":"1"}}}\n'
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
CALL = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"noop","arguments":{}}}\n'


def _open(argv: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[bytes], IO[bytes], IO[bytes]]:
    """The process, its stdin and its stdout, initialized."""
    process = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, bufsize=0
    )
    if process.stdin is None or process.stdout is None:  # pragma: no cover - PIPE always gives both
        raise RuntimeError(f"{argv[0]}: no pipes")
    process.stdin.write(INITIALIZE)
    process.stdout.readline()
    process.stdin.write(INITIALIZED)
    return process, process.stdin, process.stdout


def figures(calls: int, warmup: int, env: dict[str, str], log: str) -> dict[str, Any]:
    """Median and p99 microseconds a call per path, in blocks of 100 calls taken in turn (the first `warmup` calls
    not counted)."""
    argvs = {
        "direct": [*RAW_UPSTREAM],
        "line_forwarder": [*LINE_FORWARDER, *RAW_UPSTREAM],
        "wrapped": wrap_argv("--log", log, "--", *RAW_UPSTREAM),
    }
    processes = {name: _open(argv, env) for name, argv in argvs.items()}
    samples: dict[str, list[float]] = {name: [] for name in argvs}
    request_id = 0
    try:
        warm_blocks = -(-warmup // 100)
        for block in range(warm_blocks + max(1, calls // 100)):
            for name, (_, stdin, stdout) in processes.items():
                write, read = stdin.write, stdout.readline
                for _ in range(100):
                    request_id += 1
                    started = time.perf_counter()
                    write(CALL % request_id)
                    read()
                    if block >= warm_blocks:
                        samples[name].append(time.perf_counter() - started)
    finally:
        for process, stdin, _ in processes.values():
            stdin.close()
            process.wait(10)
    out: dict[str, Any] = {}
    for name, values in samples.items():
        values.sort()
        out[name] = {
            "median_us": round(statistics.median(values) * 1e6, 1),
            "p99_us": round(values[int(len(values) * 0.99)] * 1e6, 1),
        }
    out["wrapper_over_floor_us"] = round(out["wrapped"]["median_us"] - out["line_forwarder"]["median_us"], 1)
    return out
