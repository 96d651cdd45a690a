"""The kept `server/discover` answer attacked through its file: whatever sits at its path (a FIFO nobody writes, a
directory, JSON nested past the parser's recursion, another upstream's answer, a damaged file, a state directory
that cannot be written) the wrapper starts and serves on with one warning line, never a hang, never a traceback,
never another upstream's answer."""

from __future__ import annotations

import json
import os
import threading

from test_discover_memo import ANSWER, UPSTREAM, keep

from mcpwatch.wrapper.core.discover_memo import DiscoverMemo, memo_path, upstream_digest


def read(path, upstream: str = UPSTREAM) -> tuple[DiscoverMemo | None, list[str]]:
    """The memo as a starting wrapper makes it, on a thread: a read that blocks is a failure, not a stuck suite."""
    warnings: list[str] = []
    made: list[DiscoverMemo] = []
    reader = threading.Thread(target=lambda: made.append(DiscoverMemo(path, upstream, warnings.append)), daemon=True)
    reader.start()
    reader.join(60)
    if reader.is_alive():  # blocked opening a FIFO: open its other end so the thread can end
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(60)
        return None, warnings
    return made[0], warnings


def test_a_fifo_or_a_directory_at_the_kept_answers_path_is_refused_in_one_line(tmp_path) -> None:
    path = memo_path(tmp_path, UPSTREAM)
    path.parent.mkdir(mode=0o700, parents=True)
    os.mkfifo(path, 0o600)
    memo, warnings = read(path)
    assert memo is not None, "the wrapper's start blocked on a FIFO nobody writes"
    assert memo.answer is None and len(warnings) == 1 and "not a regular file" in warnings[0]
    path.unlink()
    path.mkdir(mode=0o700)
    memo, warnings = read(path)  # a directory: no IsADirectoryError out of the start
    assert memo is not None and memo.answer is None
    assert len(warnings) == 1 and "not a regular file" in warnings[0] and "\n" not in warnings[0]


def test_a_damaged_deeply_nested_or_foreign_file_is_said_once_and_never_served(tmp_path) -> None:
    path = keep(tmp_path)
    path.write_text("[" * 100_000 + "]" * 100_000)  # 200 kB, under the size bound: past the parser's recursion
    memo, warnings = read(path)
    assert memo is not None and memo.answer is None
    assert len(warnings) == 1 and "damaged" in warnings[0]
    path.write_text("{not json")
    memo, warnings = read(path)
    assert memo is not None and memo.answer is None and len(warnings) == 1 and "damaged" in warnings[0]
    path.write_text(json.dumps({"upstream": upstream_digest("python other.py"), "answer": ANSWER}))
    memo, warnings = read(path)
    assert memo is not None and memo.answer is None
    assert len(warnings) == 1 and "another upstream" in warnings[0]
    path.write_bytes(b" " * (1 << 20) + json.dumps({"upstream": upstream_digest(UPSTREAM), "answer": ANSWER}).encode())
    memo, warnings = read(path)  # 1 MiB: past the bound, read no further
    assert memo is not None and memo.answer is None and len(warnings) == 1 and "larger than" in warnings[0]
    keep(tmp_path)
    memo, warnings = read(path)  # and an honest file is served
    assert memo is not None and memo.answer == ANSWER and warnings == []


def test_a_state_directory_that_cannot_be_written_keeps_the_answer_in_memory_with_one_warning(tmp_path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "discover").write_text("a file where the directory should be")
    warnings: list[str] = []
    memo = DiscoverMemo(memo_path(state, UPSTREAM), UPSTREAM, warnings.append)
    memo.note(ANSWER)
    memo.note({**ANSWER, "serverInfo": {"name": "again"}})
    assert memo.answer == {**ANSWER, "serverInfo": {"name": "again"}}  # served from memory all the same
    assert len(warnings) == 1 and "cannot keep" in warnings[0]  # said once, not once per answer
