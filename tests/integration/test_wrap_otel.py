"""OpenTelemetry export from a real wrapper to a real OTLP/HTTP receiver: spans, attributes, events, metrics,
trace context passed on to the upstream, an unreachable collector, a missing package, and a recorded session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcpwatch.otel.spans import DURATION_BUCKETS
from mcpwatch.ports import free_port

from checkout import REPO, mcpwatch_cmd
from otlp_receiver import OtlpReceiver
from waiting import sooner_than, wait_until
from wraptools import logged_events

HOST_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
HOST_SPAN = "00f067aa0ba902b7"

UPSTREAM = r"""
import json, sys, threading, time
# meta: answers with the _meta it received; fail: isError; bad: a JSON-RPC error; slow: answers after `seconds`,
# whatever the cancellation says (so its answer comes late).
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
def text(request_id, value, is_error=False):
    result = {"content": [{"type": "text", "text": value}], "isError": is_error}
    send({"jsonrpc": "2.0", "id": request_id, "result": result})
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method, params, rid = message["method"], message.get("params") or {}, message["id"]
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": params["protocolVersion"],
              "capabilities": {"tools": {}}, "serverInfo": {"name": "otel-upstream", "version": "1"}}})
    elif method == "tools/call":
        name = params["name"]
        if name == "meta":
            text(rid, json.dumps(params.get("_meta") or {}))
        elif name == "fail":
            text(rid, "no such city", is_error=True)
        elif name == "bad":
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Invalid params"}})
        elif name == "slow":
            seconds = params["arguments"]["seconds"]
            threading.Timer(seconds, text, (rid, "finally")).start()
    else:
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
"""


def call(request_id: int, tool: str, arguments: dict | None = None, meta: dict | None = None) -> dict:
    params = {"name": tool, "arguments": arguments or {}}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "otel-host", "version": "1"},
    },
}


class Host:
    """A raw stdio host: exact frames in, answers by id out."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            command, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )

    def ask(self, message: dict) -> dict:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()
        while True:
            line = self.process.stdout.readline()
            assert line, self.finish()
            answer = json.loads(line)
            if answer.get("id") == message["id"]:
                return answer

    def tell(self, message: dict) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def finish(self) -> str:
        """Close the host side (the wrapper exits, sending what is left); its stderr."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        self.process.wait(30)
        assert self.process.stderr is not None
        return self.process.stderr.read().decode()


@pytest.fixture
def upstream(tmp_path: Path) -> list[str]:
    script = tmp_path / "upstream.py"
    script.write_text(UPSTREAM)
    return [sys.executable, str(script)]


def wrapper_env(tmp_path: Path, endpoint: str, **extra: str) -> dict[str, str]:
    config = tmp_path / "mcpwatch.toml"
    config.write_text("[otel]\nmetrics_interval_ms = 200\nlate_window_s = 10\n")
    return {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_SERVICE_NAME": "wrapped-cities",
        "MCPWATCH_CONFIG": str(config),
        "MCPWATCH_TOOL_CALL_DEADLINE_SEC": "1",
        **extra,
    }


@pytest.mark.slow
def test_calls_become_spans_and_metrics_with_the_trace_passed_to_the_upstream(tmp_path, upstream):
    with OtlpReceiver() as receiver:
        host = Host(mcpwatch_cmd("wrap", "--name", "cities", "--", *upstream), wrapper_env(tmp_path, receiver.endpoint))
        assert host.ask(INIT)["result"]["serverInfo"]["name"] == "otel-upstream"
        host.tell({"jsonrpc": "2.0", "method": "notifications/initialized"})
        traceparent = f"00-{HOST_TRACE}-{HOST_SPAN}-01"
        seen = json.loads(host.ask(call(1, "meta", meta={"traceparent": traceparent}))["result"]["content"][0]["text"])
        unparented = json.loads(host.ask(call(2, "meta"))["result"]["content"][0]["text"])
        assert host.ask(call(3, "fail"))["result"]["isError"] is True
        assert host.ask(call(4, "bad"))["error"]["code"] == -32602
        cut = host.ask(call(5, "slow", {"seconds": 1.6}))
        assert cut["result"]["isError"] is True  # mcpwatch's deadline answer at 1 s
        receiver.wait_for(lambda r: any(s["name"] == "tools/call slow" for s in r.spans))  # released by its late answer
        receiver.wait_for(lambda r: any(m["name"] == "mcpwatch.late_answers" for m in r.metrics))
        stderr = host.finish()
    assert "Traceback" not in stderr
    spans = {s["name"] + (" #" + s["attributes"]["jsonrpc.request.id"]): s for s in receiver.spans}
    assert {
        "initialize #0",
        "tools/call meta #1",
        "tools/call meta #2",
        "tools/call fail #3",
        "tools/call bad #4",
    } <= set(spans)
    assert receiver.resources[0]["service.name"] == "wrapped-cities"

    # the host's trace goes on through the wrapper to the upstream
    traced = spans["tools/call meta #1"]
    assert traced["kind"] == 3  # SPAN_KIND_CLIENT
    assert traced["trace_id"] == HOST_TRACE and traced["parent_span_id"] == HOST_SPAN
    assert seen["traceparent"] == f"00-{HOST_TRACE}-{traced['span_id']}-01"
    assert traced["attributes"] == {
        "mcpwatch.wrapper.name": "cities",
        "mcp.method.name": "tools/call",
        "network.transport": "pipe",
        "jsonrpc.request.id": "1",
        "mcp.protocol.version": "2025-11-25",
        "gen_ai.tool.name": "meta",
        "gen_ai.operation.name": "execute_tool",
        "mcpwatch.budget_s": 1.0,
        "mcpwatch.budget_source": "explicit",
        "mcpwatch.generation": 1,
        "mcpwatch.upstream.request_id": traced["attributes"]["mcpwatch.upstream.request_id"],
        "mcpwatch.outcome": "ok",
    }
    assert traced["status"] == (0, "")
    # a host that sent no trace context: the wrapper starts the trace and hands it on
    root = spans["tools/call meta #2"]
    assert root["parent_span_id"] is None and root["trace_id"] != HOST_TRACE
    assert unparented["traceparent"] == f"00-{root['trace_id']}-{root['span_id']}-01"

    assert spans["tools/call fail #3"]["attributes"]["error.type"] == "tool_error"
    assert spans["tools/call fail #3"]["status"][0] == 2  # STATUS_CODE_ERROR
    bad = spans["tools/call bad #4"]["attributes"]
    assert (bad["error.type"], bad["rpc.response.status_code"]) == ("-32602", "-32602")

    slow = spans["tools/call slow #5"]
    assert slow["attributes"]["error.type"] == "timeout"
    assert slow["attributes"]["rpc.response.status_code"] == "DEADLINE_EXCEEDED"
    assert [name for name, _ in slow["events"]] == [
        "mcpwatch.cancel_sent",
        "mcpwatch.tombstone",
        "mcpwatch.late_answer",
    ]
    # the span ends at the cut (never before the 1 s budget), its late answer noted in it within the late window (10 s)
    # rather than when that window closed; a loaded machine makes either later, so the bounds are what is causal
    lasted_s = (slow["end_ns"] - slow["start_ns"]) / 1e9
    assert 0.95 <= lasted_s < sooner_than(10, 3), lasted_s
    delay = slow["events"][-1][1]["mcpwatch.late.delay_s"]  # since the cut: the upstream answers 1.6 s after the start
    assert 0 < delay < sooner_than(10, 3) and delay + lasted_s >= 1.55, (delay, lasted_s)

    durations = [m for m in receiver.metrics if m["name"] == "mcp.client.operation.duration"]
    assert durations and all(m["bounds"] == list(DURATION_BUCKETS) and m["unit"] == "s" for m in durations)
    by_tool = {m["attributes"].get("gen_ai.tool.name"): m for m in durations}
    assert by_tool["slow"]["attributes"]["error.type"] == "timeout" and by_tool["slow"]["count"] == 1
    levels = {m["name"]: m["value"] for m in receiver.metrics if m["kind"] == "sum" and "mcpwatch." in m["name"]}
    assert levels["mcpwatch.calls.in_flight"] == 0 and levels["mcpwatch.tombstones"] == 1  # the cut call's, still live
    deadlines = [m for m in receiver.metrics if m["name"] == "mcpwatch.deadlines"]
    assert deadlines[-1]["value"] == 1 and deadlines[-1]["attributes"] == {"gen_ai.tool.name": "slow"}


@pytest.mark.slow
def test_an_unreachable_collector_costs_the_host_nothing(tmp_path, upstream):
    # Nothing listens on this port: every export attempt fails (and retries, off the pump).
    env = wrapper_env(tmp_path, f"http://127.0.0.1:{free_port()}")
    host = Host(mcpwatch_cmd("wrap", "--", *upstream), env)
    host.ask(INIT)
    started = time.monotonic()
    for n in range(1, 41):
        assert host.ask(call(n, "meta"))["result"]["isError"] is False
    took = time.monotonic() - started
    stderr = host.finish()
    # an exporter on the pump would hold each call for its 5 s timeout (200 s for 40 calls); a generous bound
    assert took < sooner_than(200, 20), took
    assert "Traceback" not in stderr
    # said once by mcpwatch; the SDK's own retry messages stay out of the host's log of the server (the first
    # line names the command, whose path may hold "export" anywhere)
    lines = stderr.splitlines()[1:]
    assert [line for line in lines if "OpenTelemetry" in line or "export" in line.lower()] == [
        next(line for line in stderr.splitlines() if "OpenTelemetry" in line)
    ], stderr


def test_without_the_packages_the_wrapper_says_so_once_and_serves(tmp_path, upstream):
    hide = (
        "import sys; sys.modules['opentelemetry.exporter.otlp.proto.http.trace_exporter'] = None; "
        "from mcpwatch.cli import main; sys.exit(main())"
    )
    env = wrapper_env(tmp_path, "http://127.0.0.1:9")
    host = Host([sys.executable, "-c", hide, "wrap", "--", *upstream], env)
    host.ask(INIT)
    assert host.ask(call(1, "meta"))["result"]["isError"] is False
    stderr = host.finish()
    lines = [line for line in stderr.splitlines() if "OpenTelemetry" in line]
    assert len(lines) == 1 and "pip install 'mcpwatch[otel]'" in lines[0], stderr


def late_answers(log: Path) -> list[Any]:
    """The late answers (to cut calls) a live wrapper has logged so far."""
    return [e for e in logged_events(log) if e.kind == "tombstone_hit" and e.data["what"] == "response"]


@pytest.mark.slow
def test_a_recorded_session_is_sent_as_the_same_spans_with_its_own_times(tmp_path, upstream):
    log = tmp_path / "events.db"
    env = {**os.environ, "MCPWATCH_TOOL_CALL_DEADLINE_SEC": "1"}
    host = Host(mcpwatch_cmd("wrap", "--log", str(log), "--", *upstream), env)
    host.ask(INIT)
    host.ask(call(1, "meta"))
    host.ask(call(2, "slow", {"seconds": 1.3}))
    wait_until(lambda: late_answers(log), 20, "the late answer in the log")
    host.finish()
    recorded = time.time()
    with OtlpReceiver() as receiver:
        sent = subprocess.run(
            mcpwatch_cmd("export", str(log), "--format", "otlp", "--endpoint", receiver.endpoint),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert sent.returncode == 0, sent.stderr
        assert "sent 3 spans" in sent.stderr
    names = sorted(s["name"] for s in receiver.spans)
    assert names == ["initialize", "tools/call meta", "tools/call slow"]
    slow = next(s for s in receiver.spans if s["name"] == "tools/call slow")
    assert slow["end_ns"] < recorded * 1e9  # the times of the recording, not of the export
    assert [name for name, _ in slow["events"]][-1] == "mcpwatch.late_answer"
    refused = subprocess.run(
        mcpwatch_cmd("export", str(log), "--format", "otlp", "--endpoint", f"http://127.0.0.1:{free_port()}"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "took 0 of 3 spans" in refused.stderr and "Traceback" not in refused.stderr
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    nowhere = subprocess.run(
        mcpwatch_cmd("export", str(log), "--format", "otlp"), cwd=REPO, env=env, capture_output=True, text=True
    )
    assert nowhere.returncode == 2
    needs = "mcpwatch: --format otlp needs a collector: --endpoint URL or OTEL_EXPORTER_OTLP_ENDPOINT"
    assert nowhere.stderr.strip() == needs
