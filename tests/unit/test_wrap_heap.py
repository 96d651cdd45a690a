"""The `wrap` process settles its heap before serving: what starting made is out of the cyclic collector's reach, so
a full collection walks only what serving made (the host sessions, the calls in flight), and young collections are
rarer. Counted in objects, in a process of its own (freezing is for the whole process, never a test runner's)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import gc, json
import mcpwatch.wrapper.app
from mcpwatch.commands.wrap import YOUNG_OBJECTS_PER_COLLECTION, settle_heap
gc.collect()
before = len(gc.get_objects())
settle_heap()
after = len(gc.get_objects())
print(json.dumps({"before": before, "after": after, "frozen": gc.get_freeze_count(),
                  "young": gc.get_threshold()[0], "wanted": YOUNG_OBJECTS_PER_COLLECTION}))
"""


def test_what_starting_made_is_frozen_out_of_every_full_collection() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    counts = json.loads(done.stdout)
    assert counts["before"] > 10_000  # the wrapper's modules, classes and functions: what every collection walked
    assert counts["frozen"] > counts["before"] * 0.9 and counts["after"] < 100
    assert counts["young"] == counts["wanted"] == 7000


def test_the_wrap_command_settles_its_heap_before_it_serves() -> None:
    probe = (
        "import gc, sys, mcpwatch.wrapper.app as app\n"
        "async def serve(options): print(gc.get_freeze_count() > 10000, gc.get_threshold()[0]); return 0\n"
        "app.run_wrapper = serve\n"
        "from mcpwatch.cli import main\n"
        "sys.exit(main(['wrap', '--no-log', '--', 'true']))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "7000"]
