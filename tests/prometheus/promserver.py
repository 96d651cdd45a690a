"""A real Prometheus (Debian's `prometheus` package) for tests: started on a loopback port with its own storage,
always stopped; and a raw stdio host to drive a wrapper with exact frames."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from mcpwatch.ports import free_port

from checkout import REPO
from waiting import patience, stop_process

INSTALL = "apt-get install prometheus (Debian; .ci/run installs it when it runs as root)"


def binary(name: str) -> str:
    """The path of `prometheus` or `promtool`; the test skips, saying why, when it is not installed."""
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed: {INSTALL}")
    return path


def _die_with_parent() -> None:
    """In the child: Linux ends it if the test process dies without stopping it (a killed pytest)."""
    import ctypes
    import signal

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class PrometheusServer:
    """`prometheus` scraping `targets` every second and evaluating `rule_files` every second."""

    def __init__(self, workdir: Path, targets: list[str], rule_files: Sequence[Path] = (), headers: str = "") -> None:
        self.host: RawHost | None = None  # a wrapper the tests drive, when they share one
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = workdir / "prometheus.yml"
        rules = "".join(f"  - {path}\n" for path in rule_files)
        config.write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
            + (f"rule_files:\n{rules}" if rules else "")
            + f"scrape_configs:\n  - job_name: mcpwatch\n{headers}    static_configs:\n"
            + f"      - targets: {json.dumps(targets)}\n"
        )
        self.log = (workdir / "prometheus.log").open("wb")
        self.process = subprocess.Popen(
            [
                binary("prometheus"),
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
        )

    def __enter__(self) -> PrometheusServer:
        try:
            self.wait(lambda: self._get("/-/ready", raw=True), 60, "Prometheus to be ready")
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def stop(self) -> None:
        if self.process.poll() is None:
            stop_process(self.process, 15)
        self.log.close()

    def _get(self, path: str, raw: bool = False) -> Any:
        try:
            with urllib.request.urlopen(self.url + path, timeout=5) as reply:
                body = reply.read()
        except OSError:
            return None
        return body if raw else json.loads(body)

    def query(self, expr: str) -> dict[str, Any]:
        """The API's answer to an instant query (status, data)."""
        answer = self._get("/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        assert answer is not None, f"Prometheus did not answer the query {expr!r}"
        return answer

    def vector(self, expr: str) -> list[dict[str, Any]]:
        answer = self.query(expr)
        assert answer["status"] == "success", answer
        return answer["data"]["result"]

    def alerts(self) -> list[dict[str, Any]]:
        answer = self._get("/api/v1/alerts")
        return [] if answer is None else answer["data"]["alerts"]

    def wait(self, probe: Any, timeout: float, what: str) -> Any:
        deadline = time.monotonic() + patience(timeout)
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"Prometheus exited: {self.process.returncode}")
            found = probe()
            if found:
                return found
            time.sleep(0.25)
        raise AssertionError(f"waited {timeout:g} s for {what}")


class RawHost:
    """A stdio host sending exact frames to `mcpwatch wrap …` and reading answers by id."""

    def __init__(self, command: list[str], env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            command, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self._next = 0

    def ask(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self._next += 1
        message = {"jsonrpc": "2.0", "id": self._next, "method": method, "params": params or {}}
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()
        while True:
            line = self.process.stdout.readline()
            assert line, self.finish()
            answer = json.loads(line)
            if answer.get("id") == message["id"]:
                return answer

    def start(self) -> dict[str, Any]:
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "prom-host", "version": "1"},
        }
        answer = self.ask("initialize", init)
        assert self.process.stdin is not None
        self.process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        self.process.stdin.flush()
        return answer

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        return self.ask("tools/call", {"name": tool, "arguments": arguments})

    def finish(self) -> str:
        """Close the host side (the wrapper exits); its stderr."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
        assert self.process.stderr is not None
        return self.process.stderr.read().decode()
