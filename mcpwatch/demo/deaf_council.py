"""The demo's council, deaf to every second `notifications/cancelled`, in one process.

`python -m mcpwatch.demo.deaf_council [COUNCIL ARGS…]` runs `mcpwatch council` with `deaf_relay.relay` as a
thread between the real stdin and the one the council reads. It was a relay process in front of the council: one
more Python process the demo started one after the other with the rest, which a loaded machine pays for in seconds.
"""

from __future__ import annotations

import os
import sys
import threading

from mcpwatch.demo.deaf_relay import relay


def deafen_stdin() -> threading.Thread:
    """Put a pipe on fd 0, fed by a thread that copies the real stdin through `relay`; when the real stdin ends, so
    does the pipe (the council's EOF). Done before the council imports anything, so it reads only the pipe."""
    host_fd = os.dup(0)
    read_end, write_end = os.pipe()
    os.dup2(read_end, 0)
    os.close(read_end)

    def copy() -> None:
        with open(host_fd, "rb") as host_in, open(write_end, "wb") as council_in:
            try:
                relay(host_in, council_in)
            except (BrokenPipeError, ValueError):  # the council is gone: nothing left to deliver
                pass

    thread = threading.Thread(target=copy, name="deaf-relay", daemon=True)
    thread.start()
    return thread


def main(argv: list[str]) -> int:
    deafen_stdin()
    from mcpwatch.cli import main as cli_main

    return cli_main(["council", *argv])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
