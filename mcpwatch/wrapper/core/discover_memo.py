"""The upstream's last `server/discover` answer, kept so a 2026-era host is answered while the upstream starts.

A 2026-era client's first request is `server/discover`, and its SDK gives it little time (the Python SDK 10 s)
before it falls back to the 2025 handshake, where tools that run only as tasks of the extension fail. An upstream
that starts slower than that (a FastMCP server beside busy CPUs: 12 to 21 s) would push every host of a freshly
started wrapper back an era. So the answer the upstream gave last time is kept, for that upstream alone (its command
or URL), in a private file of the state directory; while the upstream is not ready, a host's `server/discover` is
answered from it at once, and the same request goes upstream when it is ready, its answer replacing the kept one.
Nothing is kept that is not a discover answer naming a 2026-era version; an upstream whose fresh answer is an error
has its kept answer dropped. The file is read as the log is: never through a symlink, never another user's.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcpwatch import privacy

KEEP_BYTES_MAX = 256 * 1024  # a larger answer is served as it comes, never kept
REFRESH_TIMEOUT_S = 300.0  # the fresh answer is waited for this long at most (a never-ready upstream ends nothing)
MODERN_PREFIX = "2026-"  # the 2026-era versions: a kept answer names one, or it is not kept


def upstream_digest(upstream: str) -> str:
    """What names an upstream (its command line or URL) in a kept answer: a digest, never the text itself (a
    command line may carry a secret)."""
    return hashlib.sha256(upstream.encode("utf-8", "surrogatepass")).hexdigest()


def memo_path(state_dir: Path, upstream: str) -> Path:
    """One file per upstream, named by its digest."""
    return state_dir / "discover" / f"{upstream_digest(upstream)[:32]}.json"


def _usable(result: Any) -> bool:
    """A discover answer worth keeping: supported versions (one of them 2026-era) and capabilities."""
    if not isinstance(result, dict) or not isinstance(result.get("capabilities"), dict):
        return False
    versions = result.get("supportedVersions")
    return isinstance(versions, list) and any(isinstance(v, str) and v.startswith(MODERN_PREFIX) for v in versions)


class DiscoverMemo:
    def __init__(self, path: Path | None, upstream: str, warn: Callable[[str], None]) -> None:
        """`path` None keeps the answer in memory only (no state directory)."""
        self.path = path
        self.upstream = upstream_digest(upstream)
        self._warn = warn
        self.answer: dict[str, Any] | None = None
        self._refreshing: asyncio.Future[None] | None = None
        self._write_failed = False
        if path is not None:
            self.answer = self._read(path)

    def kept(self, version: str | None) -> dict[str, Any] | None:
        """The kept answer for a request at `version` (None: nothing kept, or not for that version)."""
        answer = self.answer
        if answer is None or version not in answer["supportedVersions"]:
            return None
        return answer

    def note(self, result: Any) -> None:
        """The upstream's own answer: kept (and written) when it differs from the kept one."""
        if not _usable(result) or result == self.answer:
            return
        text = json.dumps({"upstream": self.upstream, "answer": result}, sort_keys=True)
        if len(text) > KEEP_BYTES_MAX:
            return
        self.answer = result
        if self.path is not None:
            self._write(self.path, text)

    def forget(self, why: str) -> None:
        """The upstream no longer answers `server/discover` as it did: the kept answer is dropped."""
        if self.answer is None:
            return
        self.answer = None
        if self.path is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
        self._warn(f"the upstream's server/discover answer kept from an earlier start is dropped: {why}")

    def refresh(self, request: Callable[[], Awaitable[Any]], noted: Callable[[dict[str, Any]], None]) -> None:
        """Ask the upstream for its answer once it is ready (one request at a time, however many hosts asked):
        a fresh answer is kept, and `noted` hears it."""
        if self._refreshing is not None and not self._refreshing.done():
            return
        self._refreshing = asyncio.ensure_future(self._refresh(request, noted))

    async def _refresh(self, request: Callable[[], Awaitable[Any]], noted: Callable[[dict[str, Any]], None]) -> None:
        try:
            answer = await asyncio.wait_for(request(), REFRESH_TIMEOUT_S)
        except (ConnectionError, TimeoutError):
            return  # no fresh answer: the kept one stays (a later start asks again)
        result = answer.get("result") if isinstance(answer, dict) else None
        if isinstance(result, dict):
            self.note(result)
            noted(result)
        elif isinstance(answer, dict) and "error" in answer:
            error = answer["error"]
            message = error.get("message") if isinstance(error, dict) else None
            self.forget(f"it answers with an error now ({str(message)[:200]!r})")

    def _read(self, path: Path) -> dict[str, Any] | None:
        """The kept answer, read as the log is: opened without following a symlink and without waiting for a
        writer (a FIFO), then checked by its descriptor (a regular file of this user's that others cannot write),
        at most KEEP_BYTES_MAX read. Anything else is said in one warning and never served."""
        what = "kept server/discover answer"
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except (FileNotFoundError, NotADirectoryError):  # nothing kept (a directory that is not one: said on write)
            return None
        except OSError as exc:
            self._warn(f"{path}: the {what} is not used ({exc})")
            return None
        try:
            privacy.check_opened(path, fd, what)
            with os.fdopen(os.dup(fd), "rb") as file:
                raw = file.read(KEEP_BYTES_MAX + 1)
        except (OSError, privacy.UnsafePathError) as exc:
            self._warn(f"{path}: the {what} is not used ({exc})")
            return None
        finally:
            os.close(fd)
        if len(raw) > KEEP_BYTES_MAX:
            self._warn(f"{path}: the {what} is larger than {KEEP_BYTES_MAX} bytes, so it is not used; remove it")
            return None
        try:
            kept = json.loads(raw)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
            kept = None
        if not isinstance(kept, dict) or not _usable(kept.get("answer")):
            self._warn(f"{path}: the {what} is damaged, so it is not used; it is written again at the next answer")
            return None
        if kept.get("upstream") != self.upstream:
            self._warn(f"{path}: the {what} is another upstream's, so it is not used; remove it")
            return None
        answer: dict[str, Any] = kept["answer"]  # checked by _usable
        return answer

    def _write(self, path: Path, text: str) -> None:
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        try:
            privacy.ensure_dir(path.parent, "discover answers directory")
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, privacy.FILE_MODE)
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(text)
            os.replace(temporary, path)
        except (OSError, privacy.UnsafePathError) as exc:
            with contextlib.suppress(OSError):
                temporary.unlink()
            if not self._write_failed:  # said once: every later answer would fail alike
                self._write_failed = True
                self._warn(f"{path}: cannot keep the upstream's server/discover answer ({exc})")
