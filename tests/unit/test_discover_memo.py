"""A 2026-era host's `server/discover` answered while the upstream starts, from the answer the upstream gave at its
last start (kept in a private file of the state directory, for that upstream alone): the host never waits for a cold
upstream, so its SDK never falls back to the 2025 handshake. A wrapper core on a manual clock, its upstream not yet
started; the order of events is asserted, never a duration."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from taskrig import Host, Upstream, spin

from mcpwatch.clock import ManualClock
from mcpwatch.config import DeadlineSettings, Settings
from mcpwatch.events import Kind
from mcpwatch.reliability.deadline import DeadlinePolicy
from mcpwatch.testing.scheduler import ManualScheduler
from mcpwatch.wrapper.calls.recorder import Recorder
from mcpwatch.wrapper.core.discover_memo import KEEP_BYTES_MAX, DiscoverMemo, memo_path, upstream_digest
from mcpwatch.wrapper.core.pump import WrapperCore

EXTENSION = "io.modelcontextprotocol/tasks"
UPSTREAM = "python server.py"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "sdk-host", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
ANSWER = {
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"tools": {}, "extensions": {EXTENSION: {}}},
    "ttlMs": 0,
    "resultType": "complete",
}
NOBODY = 65534


class ColdRig:
    """A core whose upstream has not started yet (its frames wait in the queue), with a kept-answer file."""

    def __init__(self, loop, state: Path, upstream: str = UPSTREAM) -> None:
        self.loop = loop
        settings = replace(Settings(), deadline=DeadlineSettings(host_timeout_s=30.0, margin_s=0.0))
        scheduler = ManualScheduler(ManualClock())
        self.recorder = Recorder("manual", None, clock=scheduler.clock)
        self.path = memo_path(state, upstream)
        self.memo = DiscoverMemo(self.path, upstream, self.recorder.warn)
        self.core = WrapperCore(
            settings=settings,
            deadline=DeadlinePolicy(settings.deadline, environ={}),
            recorder=self.recorder,
            loop=loop,
            scheduler=scheduler,
            discover_memo=self.memo,
        )
        self.host, self.upstream = Host(None), Upstream()
        self.core.attach_upstream(self.upstream)
        self.core.attach_link(self.host)

    def discover(self, request_id: Any = 1, version: str = "2026-07-28") -> None:
        meta = {**META, "io.modelcontextprotocol/protocolVersion": version}
        message = {"jsonrpc": "2.0", "id": request_id, "method": "server/discover", "params": {"_meta": meta}}
        self.core.host_message(self.host, message)
        spin(self.loop)

    def start_upstream(self) -> None:
        self.loop.run_until_complete(self.core.upstream_started())
        spin(self.loop)

    def answer_upstream(self, method: str, result: Any = None, error: Any = None) -> None:
        (sent,) = [m for m in self.upstream.sent if m.get("method") == method]
        body = {"error": error} if error is not None else {"result": result}
        self.core.upstream_message({"jsonrpc": "2.0", "id": sent["id"], **body})
        spin(self.loop)

    def replies(self) -> list[dict[str, Any]]:
        return [m for m in self.host.sent if "id" in m and "method" not in m]

    def warnings(self) -> list[str]:
        return [e.data["message"] for e in self.recorder.since(0, 1000) if e.kind == Kind.WARNING]


def keep(state: Path, answer: Any = ANSWER, upstream: str = UPSTREAM) -> Path:
    path = memo_path(state, upstream)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_text(json.dumps({"upstream": upstream_digest(upstream), "answer": answer}))
    path.chmod(0o600)
    return path


def test_a_cold_upstreams_discover_is_answered_at_once_from_the_kept_answer_then_asked_again(loop, tmp_path) -> None:
    keep(tmp_path)
    rig = ColdRig(loop, tmp_path)
    rig.discover(1)
    rig.discover(2)  # a second host meanwhile: answered too, and no second request upstream
    assert [r["id"] for r in rig.replies()] == [1, 2]  # answered before the upstream started
    assert rig.replies()[0]["result"]["supportedVersions"] == ["2026-07-28"]
    assert rig.upstream.sent == []  # nothing reached the upstream yet: it has not started
    rig.start_upstream()
    fresher = {**ANSWER, "capabilities": {"tools": {"listChanged": True}, "extensions": {EXTENSION: {}}}}
    rig.answer_upstream("server/discover", fresher)  # the one request the wrapper made once it was ready
    assert len(rig.replies()) == 2  # the wrapper's own request: no host is answered twice
    assert json.loads(rig.path.read_text())["answer"] == fresher  # kept for the next start
    rig.discover(3)
    assert [m.get("method") for m in rig.upstream.sent].count("server/discover") == 2  # ready: asked as ever
    assert rig.core.bridge.upstream_extension is True


def test_the_kept_answer_tells_the_bridge_that_the_upstream_takes_the_extension(loop, tmp_path) -> None:
    keep(tmp_path)
    rig = ColdRig(loop, tmp_path)
    assert rig.core.bridge.upstream_extension is False
    rig.discover()
    assert rig.core.bridge.upstream_extension is True  # a task-only call can be bridged before the upstream is up


def test_with_nothing_kept_the_discover_waits_for_the_upstream_and_its_answer_is_kept(loop, tmp_path) -> None:
    rig = ColdRig(loop, tmp_path)
    rig.discover()
    assert rig.replies() == []  # nothing true to answer with: it waits in the queue
    rig.start_upstream()
    rig.answer_upstream("server/discover", ANSWER)
    assert rig.replies()[0]["result"] == ANSWER
    assert json.loads(rig.path.read_text()) == {"upstream": upstream_digest(UPSTREAM), "answer": ANSWER}
    assert UPSTREAM not in rig.path.read_text()  # a command line may carry a secret: only its digest is kept
    assert oct(rig.path.stat().st_mode & 0o777) == "0o600"
    assert ColdRig(loop, tmp_path).memo.kept("2026-07-28") == ANSWER  # the next start has it


@pytest.mark.parametrize(
    "answer",
    [
        {"error": {"code": -32601, "message": "Method not found"}},
        {"result": {"supportedVersions": ["2025-11-25"], "capabilities": {}}},  # a 2025-era advertisement
        {"result": {"supportedVersions": ["2026-07-28"], "capabilities": {"x": "y" * KEEP_BYTES_MAX}}},
    ],
    ids=["error", "no-2026-version", "too-large"],
)
def test_only_a_2026_era_answer_of_bounded_size_is_kept(loop, tmp_path, answer) -> None:
    rig = ColdRig(loop, tmp_path)
    rig.discover()
    rig.start_upstream()
    rig.answer_upstream("server/discover", **answer)
    assert len(rig.replies()) == 1 and not rig.path.exists()


def test_a_version_the_kept_answer_does_not_name_waits_for_the_upstream(loop, tmp_path) -> None:
    keep(tmp_path)
    rig = ColdRig(loop, tmp_path)
    rig.discover(version="2027-01-01")
    assert rig.replies() == []


def test_an_upstream_that_now_refuses_discover_loses_its_kept_answer(loop, tmp_path) -> None:
    keep(tmp_path)
    rig = ColdRig(loop, tmp_path)
    rig.discover()
    rig.start_upstream()
    rig.answer_upstream("server/discover", error={"code": -32601, "message": "Method not found"})
    assert not rig.path.exists() and rig.memo.kept("2026-07-28") is None
    assert any("answers with an error now" in w for w in rig.warnings())
    rig.discover(2)
    assert len(rig.replies()) == 1  # the next host waits for the upstream's own answer


def test_another_upstreams_or_a_damaged_or_unsafe_file_is_never_served(loop, tmp_path) -> None:
    """The kept answer is the upstream's alone (its command or URL, checked inside the file too), read as the log
    is: never through a symlink, never a file others may write or another user owns."""
    path = keep(tmp_path, upstream="python other.py")
    os.replace(path, memo_path(tmp_path, UPSTREAM))  # another upstream's answer under this upstream's name
    assert ColdRig(loop, tmp_path).memo.answer is None
    memo_path(tmp_path, UPSTREAM).write_text("{not json")
    assert ColdRig(loop, tmp_path).memo.answer is None
    path = keep(tmp_path)
    path.chmod(0o666)
    rig = ColdRig(loop, tmp_path)
    assert rig.memo.answer is None and any("writable by other users" in w for w in rig.warnings())
    target = tmp_path / "elsewhere.json"
    os.replace(keep(tmp_path), target)
    path.symlink_to(target)
    assert ColdRig(loop, tmp_path).memo.answer is None
    path.unlink()
    if os.geteuid() == 0:  # another user's file: only root can make one
        os.chown(keep(tmp_path), NOBODY, NOBODY)
        rig = ColdRig(loop, tmp_path)
        assert rig.memo.answer is None and any("belongs to another user" in w for w in rig.warnings())
