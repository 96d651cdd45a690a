"""Tool names that are not what they seem, listed by a real upstream and scraped by a real Prometheus: a lone
surrogate (legal JSON, not encodable as UTF-8), ESC, C1 and NUL. Every scrape answers 200 with valid UTF-8, the
names shown with their control characters as escapes (the console's `safe`), and Prometheus keeps the target up."""

from __future__ import annotations

import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from mcpwatch.ports import free_port

from checkout import mcpwatch_cmd
from promserver import PrometheusServer, RawHost, binary

NAMES = ["lone\ud800sur", "esc\x1b]0;owned\x07", "c1\x9bname", "nul\x00name", "plain"]
SHOWN = {"lone\\ud800sur", "esc\\x1b]0;owned\\x07", "c1\\u009bname", "nul\\x00name", "plain"}

STRANGE_UPSTREAM = r"""
import json, sys
NAMES = @NAMES@
def send(message):  # json.dumps escapes the lone surrogate as JSON allows: \ud800
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method, params, rid = message["method"], message.get("params") or {}, message["id"]
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": params["protocolVersion"],
              "capabilities": {"tools": {}}, "serverInfo": {"name": "strange", "version": "1"}}})
    elif method == "tools/list":
        tools = [{"name": name, "inputSchema": {"type": "object"}} for name in NAMES]
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "done"}]}})
""".replace("@NAMES@", repr(NAMES))


def scrape(port: int) -> tuple[int, bytes]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        return reply.status, reply.read()


@pytest.fixture(scope="module")
def strange(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """One wrapper over the strange upstream for the module, each name called once; its metrics port. The tests
    only scrape it (a scrape changes no count), so they share it; it must end without a traceback."""
    upstream = tmp_path_factory.mktemp("strange") / "strange.py"
    upstream.write_text(STRANGE_UPSTREAM)
    port = free_port()
    wrap = ("wrap", "--name", "w\x1b[2J", "--no-log", "--metrics-port", str(port))
    host = RawHost(mcpwatch_cmd(*wrap, "--", sys.executable, str(upstream)))
    try:
        host.start()
        assert [t["name"] for t in host.ask("tools/list")["result"]["tools"]] == NAMES  # the host sees them as listed
        for name in NAMES:
            assert host.call(name)["result"]["content"][0]["text"] == "done"
        yield port
    finally:
        stderr = host.finish()
    assert "Traceback" not in stderr, stderr


def test_every_scrape_answers_with_the_names_shown_never_raw(strange: int) -> None:
    for _ in range(2):  # the second scrape too: a failing collector fails every scrape, not just the first
        status, body = scrape(strange)
        assert status == 200
        text = body.decode("utf-8")  # strict: valid UTF-8
        assert not any(ch in text for ch in "\x1b\x9b\x00\x07"), "a raw control character reached /metrics"
        families = list(text_string_to_metric_families(text))
        deadlines = {s.labels["tool"] for f in families for s in f.samples if f.name == "mcpwatch_deadlines"}
        assert deadlines == SHOWN  # every listed tool is counted from 0, as shown
        calls = {
            s.labels["tool"]: s.value
            for f in families
            for s in f.samples
            if s.name == "mcp_client_operation_duration_seconds_count" and s.labels["method"] == "tools/call"
        }
        assert calls == dict.fromkeys(SHOWN, 1.0)
        assert {s.labels["wrapper"] for f in families for s in f.samples} == {"w\\x1b[2J"}


@pytest.mark.slow
def test_a_real_prometheus_keeps_the_wrapper_up_and_reads_the_shown_names(strange: int, tmp_path: Path) -> None:
    binary("prometheus")
    with PrometheusServer(tmp_path, [f"127.0.0.1:{strange}"]) as prometheus:
        prometheus.wait(lambda: prometheus.vector("count_over_time(up[1m]) >= 3"), 60, "three scrapes")
        assert [s["value"][1] for s in prometheus.vector("up")] == ["1"]
        assert prometheus.vector("min_over_time(up[1m])")[0]["value"][1] == "1"  # never down meanwhile
        series = prometheus.vector('mcp_client_operation_duration_seconds_count{method="tools/call"}')
        assert {s["metric"]["tool"] for s in series} == SHOWN
        lone = prometheus.vector('mcpwatch_deadlines_total{tool="lone\\\\ud800sur"}')
        assert [s["value"][1] for s in lone] == ["0"]
