"""A stdio relay in front of the demo's council that ignores every second `notifications/cancelled`.

The council honours cancellation, so a call the wrapper cuts never answers; many real servers do not, and
their answers arrive after the host was told the call failed. The filter `deaf_council` runs on the council's
stdin shows both in one demo: cut calls the council stops, and cut calls that answer late, which the wrapper drops
for the host and keeps in its log.
"""

from __future__ import annotations

import json
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
