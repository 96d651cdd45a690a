"""A stdio relay in front of the demo's council that ignores every second `notifications/cancelled`.

The council honours cancellation, so a call the wrapper cuts never answers; many real servers do not, and
their answers arrive after the host was told the call failed. Relaying the council through this (as
`python -m mcpwatch.demo.deaf_relay -- COMMAND…`) shows both in one demo: cut calls the council stops, and
cut calls that answer late, which the wrapper drops for the host and keeps in its log.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from typing import IO


def is_cancel(line: bytes) -> bool:
    """Whether a frame is a `notifications/cancelled` (a cheap test first: most frames are not)."""
    if b"notifications/cancelled" not in line:
        return False
    try:
        message = json.loads(line)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("method") == "notifications/cancelled"


def relay(host_in: IO[bytes], upstream_in: IO[bytes]) -> int:
    """Copy the host's frames to the upstream, leaving out every second cancellation; return how many were."""
    cancels = ignored = 0
    for line in host_in:
        if is_cancel(line):
            cancels += 1
            if cancels % 2 == 1:  # the first, third, … cut call goes on and answers late
                ignored += 1
                continue
        upstream_in.write(line)
        upstream_in.flush()
    return ignored


def _copy(source: IO[bytes], sink: IO[bytes]) -> None:
    for chunk in iter(lambda: source.read1(65536), b""):  # type: ignore[attr-defined]  # a buffered pipe has read1
        sink.write(chunk)
        sink.flush()


def main(argv: list[str]) -> int:
    command = argv[1:] if argv[:1] == ["--"] else argv
    if not command:
        print("usage: python -m mcpwatch.demo.deaf_relay -- COMMAND [ARG…]", file=sys.stderr)
        return 2
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    signal.signal(signal.SIGTERM, lambda *_: child.terminate())
    answers = threading.Thread(target=_copy, args=(child.stdout, sys.stdout.buffer), daemon=True)
    answers.start()
    try:
        relay(sys.stdin.buffer, child.stdin)
    except (BrokenPipeError, KeyboardInterrupt):
        pass
    finally:
        try:
            child.stdin.close()
        except BrokenPipeError:
            pass
    code = child.wait()
    answers.join(5)
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
