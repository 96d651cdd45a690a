"""A replay index built once per test process for each log, handed to every feed as its own copy."""

from __future__ import annotations

from pathlib import Path

from mcpwatch.replay.engine import Index, ThreadIndexer
from mcpwatch.replay.recording import Recording

_BUILT: dict[tuple[str, str | None, int, int, int], Index] = {}


def build_index(recording: Recording, index: Index, path: Path, session: str | None) -> None:
    """Build the index of this log once per run (many tests replay the same log), then hand each feed its own
    copy: an index is only appended to, so a copy holds exactly what the pass built."""
    stat = path.stat()  # the log as it is now, up to the session's last event when it was opened
    key = (str(path), session, index.every, index.last_seq, stat.st_mtime_ns)
    built = _BUILT.get(key)
    if built is None:
        ThreadIndexer(recording, index).run()
        if index.done and index.error is None:
            _BUILT[key] = index
        return
    assert built.markers is not None
    index.set_markers(list(built.markers))
    for checkpoint in built.checkpoints[1:]:  # the first, the empty model, every index starts with
        index.add(checkpoint)
    index.finish(built.built_ordinal, built.built_seq, built.built_mono)
