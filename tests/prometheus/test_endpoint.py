"""The scrape endpoint of a real wrapper: off by default, on with --metrics-port or [metrics], guarded like the
front when other machines may scrape; bad input is one line and no wrapper."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from clirun import run_cli
from prometheus_client.parser import text_string_to_metric_families

from mcpwatch.ports import free_port

from checkout import REPO, mcpwatch_cmd
from promserver import RawHost
from waiting import patience, wait_for_port
from wraptools import RAW_SERVER

TOKEN = "a-scrape-token-of-enough-length"
# A hand-written server: these tests scrape the wrapper, the upstream only has to start (the SDK takes 0.6 s of CPU).
UPSTREAM = ("--", sys.executable, RAW_SERVER)


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def refused(*args: str, env_config: str | None = None, tmp_path=None) -> str:
    """Run a wrapper that must refuse to start (in this process: it refuses before it starts anything); its one
    line of stderr."""
    if env_config is not None:
        config = tmp_path / "mcpwatch.toml"
        config.write_text(env_config)
        args = ("--config", str(config), *args)
    done = run_cli("wrap", *args, *UPSTREAM)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_metrics_are_off_unless_asked_for():
    host = RawHost(mcpwatch_cmd("wrap", "--no-log", *UPSTREAM))
    host.start()
    assert "Prometheus" not in host.finish()


def test_a_taken_port_is_one_line_naming_the_option():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = refused("--no-log", "--metrics-port", str(port))
    assert f"--metrics-port 127.0.0.1:{port}: cannot listen there" in line, line


def test_a_host_other_machines_reach_needs_allow_remote(tmp_path):
    line = refused("--no-log", "--metrics-port", "0", env_config='[metrics]\nhost = "0.0.0.0"\n', tmp_path=tmp_path)
    assert "[metrics] host 0.0.0.0 is reachable from other machines: add --allow-remote" in line, line
    line = refused("--no-log", env_config='[metrics]\nport = "x"\n', tmp_path=tmp_path)
    assert "metrics.port must be a whole number from 0 to 65535, got 'x'" in line, line
    line = refused("--no-log", "--metrics-port", "70000")
    assert "--metrics-port must be 0-65535" in line, line
    line = refused("--no-log", "--allow-remote")
    assert "--allow-remote and --token-file only apply to --listen and --metrics-port" in line, line


def test_a_remote_scrape_needs_the_token_and_a_host_naming_this_machine(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o600)
    port = free_port()
    config = tmp_path / "mcpwatch.toml"
    config.write_text(f'[metrics]\nhost = "0.0.0.0"\nport = {port}\n')
    wrap = ("wrap", "--config", str(config), "--name", "remote", "--no-log", "--allow-remote")
    host = RawHost(mcpwatch_cmd(*wrap, "--token-file", str(token_file), *UPSTREAM))
    try:
        host.start()
        wait_for_port(port)
        url = f"http://127.0.0.1:{port}/metrics"
        assert get(url)[0] == 401
        status, body = get(url, {"Authorization": "Bearer wrong-token-of-enough-length"})
        assert status == 401 and "bearer token" in body
        assert get(url, {"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"})[0] == 421
        status, body = get(url, {"Authorization": f"Bearer {TOKEN}"})
        assert status == 200
        names = {family.name for family in text_string_to_metric_families(body)}
        assert {"mcpwatch_deadlines", "mcp_client_operation_duration_seconds", "mcpwatch_build_info"} <= names
    finally:
        stderr = host.finish()
    assert f"Prometheus metrics at http://0.0.0.0:{port}/metrics" in stderr, stderr
    assert TOKEN not in stderr  # a token from a file is never printed


def test_a_generated_token_is_printed_once_and_guards_the_scrape(tmp_path):
    port = free_port()
    config = tmp_path / "mcpwatch.toml"
    config.write_text('[metrics]\nhost = "0.0.0.0"\n')
    wrap = ("wrap", "--config", str(config), "--no-log", "--allow-remote", "--metrics-port", str(port))
    host = RawHost(mcpwatch_cmd(*wrap, *UPSTREAM))
    try:
        host.start()
        wait_for_port(port)
        assert get(f"http://127.0.0.1:{port}/metrics")[0] == 401
    finally:
        stderr = host.finish()
    lines = [line for line in stderr.splitlines() if "Authorization: Bearer" in line]
    assert len(lines) == 1 and lines[0].startswith("mcpwatch: Prometheus must send the header"), stderr


def test_an_http_front_exposes_its_host_sessions():
    port, front_port = free_port(), free_port()
    front = f"http://127.0.0.1:{front_port}/mcp"
    wrapper = subprocess.Popen(
        mcpwatch_cmd("wrap", "--no-log", "--listen", front, "--metrics-port", str(port), *UPSTREAM),
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
        status, body = get(f"http://127.0.0.1:{port}/metrics")
    finally:
        wrapper.terminate()
        wrapper.wait(15)
    values = {s.name: s.value for f in text_string_to_metric_families(body) for s in f.samples}
    assert status == 200 and values["mcpwatch_host_sessions"] == 0 and values["mcpwatch_host_sessions_max"] == 16
    assert values["mcpwatch_host_sessions_opened_total"] == 0 and "mcpwatch_host_sessions_refused_total" in values


def test_a_port_taken_after_the_check_leaves_the_wrapper_serving_without_metrics(capsys):
    import asyncio

    from mcpwatch.prometheus.endpoint import start_metrics
    from mcpwatch.prometheus.fold import MetricFold

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = asyncio.run(start_metrics("127.0.0.1", port, "w1", MetricFold(), dict, remote=False, token=None))
    assert server is None
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"mcpwatch: warning: Prometheus metrics are off: cannot listen on 127.0.0.1:{port} (Address already in use)"
    ]


def test_port_0_takes_a_free_port_and_says_which():
    host = RawHost(mcpwatch_cmd("wrap", "--name", "anyport", "--no-log", "--metrics-port", "0", *UPSTREAM))
    try:
        host.start()
        assert host.process.stderr is not None
        line = ""
        while "Prometheus metrics at" not in line:
            line = host.process.stderr.readline().decode()
            assert line, "the wrapper said nothing about its metrics"
        url = line.split("Prometheus metrics at ", 1)[1].strip()
        status, body = get(url)
        assert status == 200 and 'wrapper="anyport"' in body
    finally:
        host.finish()


LATE_UPSTREAM = r"""
import json, sys, threading
# slow: answers after `seconds` whatever the cancellation says, so its answer comes late
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method, params, rid = message["method"], message.get("params") or {}, message["id"]
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": params["protocolVersion"],
              "capabilities": {"tools": {}}, "serverInfo": {"name": "late", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [{"name": "slow", "inputSchema": {"type": "object"}}]}})
    elif method == "tools/call":
        answer = {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "finally"}]}}
        threading.Timer(params["arguments"]["seconds"], send, (answer,)).start()
"""


def test_a_late_answer_is_counted_by_tool_with_its_late_result_and_tombstone(tmp_path):
    upstream = tmp_path / "late.py"
    upstream.write_text(LATE_UPSTREAM)
    port = free_port()
    wrap = ("wrap", "--name", "late", "--no-log", "--deadline", "0.5", "--metrics-port", str(port))
    host = RawHost(mcpwatch_cmd(*wrap, "--", sys.executable, str(upstream)))
    try:
        host.start()
        host.ask("tools/list")
        assert host.call("slow", seconds=1.0)["result"]["isError"] is True  # cut at 0.5 s
        host.call("unlisted", seconds=0.1)  # a name the upstream never listed
        deadline = time.monotonic() + patience(20)
        while time.monotonic() < deadline:
            values = {
                (s.name, tuple(sorted((k, v) for k, v in s.labels.items() if k != "wrapper"))): s.value
                for f in text_string_to_metric_families(get(f"http://127.0.0.1:{port}/metrics")[1])
                for s in f.samples
            }
            if values.get(("mcpwatch_late_results_total", (("outcome", "ok"), ("tool", "slow")))):
                break
            time.sleep(0.3)
    finally:
        host.finish()
    assert values[("mcpwatch_late_answers_total", (("tool", "slow"), ("what", "response")))] == 1
    assert values[("mcpwatch_late_results_total", (("outcome", "ok"), ("tool", "slow")))] == 1
    assert values[("mcpwatch_deadlines_total", (("tool", "slow"),))] == 1
    assert values[("mcpwatch_tombstones", ())] == 1  # still live: its TTL outlasts the test
    calls = {k: v for k, v in values.items() if k[0] == "mcp_client_operation_duration_seconds_count"}
    assert (
        calls[
            (
                "mcp_client_operation_duration_seconds_count",
                (("method", "tools/call"), ("outcome", "ok"), ("tool", "other")),
            )
        ]
        == 1
    )


def test_a_token_file_guards_a_loopback_endpoint_too(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o600)
    port = free_port()
    wrap = ("wrap", "--no-log", "--metrics-port", str(port), "--token-file", str(token_file))
    host = RawHost(mcpwatch_cmd(*wrap, *UPSTREAM))
    try:
        host.start()
        wait_for_port(port)
        assert get(f"http://127.0.0.1:{port}/metrics")[0] == 401
        assert get(f"http://127.0.0.1:{port}/metrics", {"Authorization": f"Bearer {TOKEN}"})[0] == 200
    finally:
        host.finish()
