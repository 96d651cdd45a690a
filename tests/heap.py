"""What a test's code leaves held, by bytes: the attacks on memory measure it this one way."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable


def bytes_held(run: Callable[[], object]) -> int:
    """Bytes `run` allocated that are still held once it has returned and a full collection ran (tracemalloc traces
    only what is allocated while it runs, so nothing from before counts)."""
    gc.collect()
    tracemalloc.start()
    try:
        run()
        gc.collect()
        return tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
