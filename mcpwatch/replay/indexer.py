"""The index pass in a child process, so a long session is indexed on another core while the console stays quick.

Folding a million events takes the better part of twenty seconds of CPU; in the console's own process that would
compete with the screen for the interpreter lock. The child (`python -m mcpwatch.replay.indexer PATH SESSION
LAST_SEQ EVERY`) runs `build_index` and reports each call on its `IndexSink` as one pickled tuple on stdout; a
thread in the console reads them and makes the same calls on the real `Index`. The pipe only ever carries what
this same program wrote a moment ago, from the same user, so unpickling it is as safe as the checkpoints
themselves. The child exits when the console goes away (its pipe breaks, or its parent changes).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
import threading
from typing import Any, BinaryIO

from mcpwatch.replay.engine import Checkpoint, Index, ThreadIndexer, build_index
from mcpwatch.replay.recording import Marker, Recording


class _PipeSink:
    """An `IndexSink` that writes each call to a binary stream."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._parent = os.getppid()

    def _send(self, *message: Any) -> None:
        pickle.dump(message, self._out, protocol=pickle.HIGHEST_PROTOCOL)
        self._out.flush()

    def set_markers(self, markers: list[Marker]) -> None:
        self._send("markers", markers)

    def add(self, checkpoint: Checkpoint) -> None:
        self._send("add", checkpoint)

    def advance(self, ordinal: int, seq: int, mono: float) -> None:
        self._send("advance", ordinal, seq, mono)

    def finish(self, ordinal: int, seq: int, mono: float) -> None:
        self._send("finish", ordinal, seq, mono)

    def fail(self, message: str) -> None:
        self._send("fail", message)

    def orphaned(self) -> bool:
        return os.getppid() != self._parent


def child_main(argv: list[str]) -> int:
    """The child's whole life: index the session, reporting on stdout; any failure is reported, not raised."""
    path, session_id, last_seq, every = argv[0], argv[1], int(argv[2]), int(argv[3])
    sink = _PipeSink(sys.stdout.buffer)
    try:
        recording = Recording(path, session_id, last_seq=last_seq)
        try:
            build_index(recording, sink, every, sink.orphaned)
        finally:
            recording.close()
    except BrokenPipeError:
        return 0  # the console has gone
    except Exception as exc:  # reported to the console, which shows it; the console itself carries on
        with contextlib.suppress(OSError):
            sink.fail(f"indexing stopped: {type(exc).__name__}: {exc}")
        return 1
    return 0


class ProcessIndexer:
    """Runs the index pass in a child process and applies what it reports to `index` from a reader thread.

    If the child cannot be started, the pass runs in a thread of this process instead (slower screen while it
    runs, same result).
    """

    def __init__(self, recording: Recording, index: Index, *, python: str = sys.executable) -> None:
        self.recording = recording
        self.index = index
        self._python = python
        self._process: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._fallback: ThreadIndexer | None = None
        self._stopping = False

    def start(self) -> None:
        if self._process is not None or self._fallback is not None:
            return
        command = [
            self._python,
            "-m",
            "mcpwatch.replay.indexer",
            str(self.recording.path),
            self.recording.session_id,
            str(self.index.last_seq),
            str(self.index.every),
        ]
        try:
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
            )
        except OSError:
            self._fallback = ThreadIndexer(self.recording, self.index)
            self._fallback.start()
            return
        self._thread = threading.Thread(target=self._read, name="mcpwatch-replay-index-reader", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        process, index = self._process, self.index
        assert process is not None and process.stdout is not None
        stream = process.stdout
        heard = False
        try:
            while True:
                try:
                    message = pickle.load(stream)
                except EOFError:
                    break
                heard = True
                name, *args = message
                getattr(index, _CALLS[name])(*args)
        except Exception as exc:  # a garbled pipe: say so rather than leave the index silently stuck
            if not self._stopping:
                index.fail(f"indexing stopped: {type(exc).__name__}: {exc}")
        finally:
            code = process.wait()
            if not (index.done or index.error or self._stopping):
                if heard:
                    index.fail(f"the indexing process ended early (exit code {code})")
                else:  # it never got going (it could not even import mcpwatch, say): index here instead
                    self._fallback = ThreadIndexer(self.recording, index)
                    self._fallback.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stopping = True
        if self._fallback is not None:
            self._fallback.stop(timeout)
        process = self._process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:  # pragma: no cover - terminate is enough for our own child
                process.kill()
                process.wait()
        if self._thread is not None:
            self._thread.join(timeout)
        if process is not None and process.stdout is not None:
            process.stdout.close()

    @property
    def pid(self) -> int | None:
        """The child's process id (None when the pass runs in a thread)."""
        return None if self._process is None else self._process.pid

    @property
    def running(self) -> bool:
        if self._fallback is not None:
            return self._fallback.running
        return self._thread is not None and self._thread.is_alive()


_CALLS = {"markers": "set_markers", "add": "add", "advance": "advance", "finish": "finish", "fail": "fail"}


if __name__ == "__main__":
    raise SystemExit(child_main(sys.argv[1:]))
