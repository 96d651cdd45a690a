"""A collector that misbehaves costs the wrapper neither memory nor its exit: a 300 MiB answer is read no further
than a small cap (the wrapper and `mcpwatch export --format otlp`), a silent (or slower than any bound) and a 429
collector both let the wrapper exit within its bound, and a refused metrics push is counted, logged once and said
once on stderr."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile_collector import HostileCollector
from test_wrap_otel import INIT, UPSTREAM, Host, call, wrapper_env

from mcpwatch import paths

from checkout import REPO, mcpwatch_cmd
from waiting import eventually, patience, sooner_than
from wraptools import Operator, registry_entry

SENT_MAX = 32 * 1024 * 1024  # the cap, plus what the two sockets' buffers hold before the exporter hangs up
RSS_MAX_KB = 200 * 1024  # the wrapper idles at ~45 MB; reading 300 MiB whole took it past 600 MB
EXIT_MAX_S = 15.0  # EXIT_WAIT_S (3 s) plus what a loaded machine adds; the silent collector holds an export for good


@pytest.fixture
def upstream(tmp_path: Path) -> list[str]:
    script = tmp_path / "upstream.py"
    script.write_text(UPSTREAM)
    return [sys.executable, str(script)]


def peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + patience(timeout)
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


@pytest.mark.slow
def test_a_300_mib_answer_is_read_no_further_than_the_cap_by_the_wrapper_and_by_export(
    tmp_path: Path, upstream: list[str]
) -> None:
    with HostileCollector("huge") as collector:
        host = Host(mcpwatch_cmd("wrap", "--", *upstream), wrapper_env(tmp_path, collector.endpoint))
        host.ask(INIT)
        for n in range(1, 6):
            assert host.ask(call(n, "meta"))["result"]["isError"] is False
        wait_for(lambda: len(collector.sent_per_answer) >= 3)  # spans and metrics both answered, at least
        peak = peak_rss_kb(host.process.pid)
        assert host.ask(call(99, "meta"))["result"]["isError"] is False  # still serving
        stderr = host.finish()
        print(f"wrapper peak RSS under a 300 MiB collector answer: {peak / 1024:.1f} MB; {collector.sent_per_answer}")
        assert "Traceback" not in stderr
        assert max(collector.sent_per_answer) < SENT_MAX, collector.sent_per_answer
        assert peak < RSS_MAX_KB, peak

        # The wrapper's session, exported to the same collector by `mcpwatch export --format otlp`.
        answered = len(collector.sent_per_answer)
        measure = "import resource, subprocess, sys; subprocess.run(sys.argv[1:]); "
        measure += "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
        command = mcpwatch_cmd("export", "--format", "otlp", "--endpoint", collector.endpoint)
        result = subprocess.run(
            [sys.executable, "-c", measure, *command], cwd=REPO, capture_output=True, text=True, timeout=120
        )
    peak = int(result.stdout.split()[-1])
    print(f"export --format otlp peak RSS under a 300 MiB answer: {peak / 1024:.1f} MB")
    assert "sent 7 spans" in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert collector.sent_per_answer[answered:] and max(collector.sent_per_answer[answered:]) < SENT_MAX
    assert peak < RSS_MAX_KB, peak


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["silent", "429"])
def test_the_wrapper_exits_within_its_bound_whatever_the_collector(tmp_path, upstream, mode: str) -> None:
    with HostileCollector(mode) as collector:
        host = Host(mcpwatch_cmd("wrap", "--", *upstream), wrapper_env(tmp_path, collector.endpoint))
        host.ask(INIT)
        assert host.ask(call(1, "meta"))["result"]["isError"] is False
        wait_for(lambda: len(collector.requests) >= 1)  # an export is in flight (or retrying)
        started = time.monotonic()
        stderr = host.finish()
        took = time.monotonic() - started
    print(f"exit with a {mode} collector: {took:.2f} s")
    assert "Traceback" not in stderr
    assert took < sooner_than(30, EXIT_MAX_S), took


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_refused_metrics_push_is_counted_shown_and_told_once(
    tmp_path, upstream, isolated_state, anyio_backend
) -> None:
    with HostileCollector("refuse_metrics") as collector:
        host = Host(mcpwatch_cmd("wrap", "--", *upstream), wrapper_env(tmp_path, collector.endpoint))
        host.ask(INIT)
        for n in range(1, 4):
            assert host.ask(call(n, "meta"))["result"]["isError"] is False
        operator = Operator(registry_entry(isolated_state))

        async def pushed() -> dict | None:
            otel = (await operator.tool("status"))["otel"]
            return otel if otel["metric_pushes_failed"] >= 2 and otel["spans_exported"] >= 3 else None

        otel = await eventually(pushed, 30, "two failed metric pushes and three spans exported")
        stderr = host.finish()
    assert otel["metric_pushes_failed"] >= 2 and otel["metric_pushes"] >= otel["metric_pushes_failed"]
    assert otel["spans_failed"] == 0 and "metrics" in otel["last_error"] and "HTTP 405" in otel["last_error"]
    told = [line for line in stderr.splitlines() if "OpenTelemetry" in line]
    assert len(told) == 1 and "OTEL_METRICS_EXPORTER=none" in told[0], stderr
    from mcpwatch.store import EventReader

    with EventReader(paths.default_log_path()) as reader:
        warnings = [e.data["message"] for e in reader.events(reader.latest_session().id, kinds=["warning"])]
    assert len([w for w in warnings if "metrics: the collector" in w]) == 1, warnings


def test_metrics_none_is_honoured(tmp_path: Path, upstream: list[str]) -> None:
    """OTEL_METRICS_EXPORTER=none (any case): not one metrics push, the spans still go."""
    with HostileCollector("refuse_metrics") as collector:
        env = wrapper_env(tmp_path, collector.endpoint, OTEL_METRICS_EXPORTER=" None ")
        host = Host(mcpwatch_cmd("wrap", "--", *upstream), env)
        host.ask(INIT)
        assert host.ask(call(1, "meta"))["result"]["isError"] is False
        time.sleep(0.6)  # three metrics intervals of the test's config
        stderr = host.finish()
    assert "OpenTelemetry" not in stderr, stderr
    assert "/v1/traces" in collector.requests and "/v1/metrics" not in collector.requests, collector.requests


@pytest.mark.parametrize("name", ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
def test_an_unusable_endpoint_is_one_line_and_the_wrapper_serves_without_export(tmp_path, upstream, name) -> None:
    env = wrapper_env(tmp_path, "http://127.0.0.1:9", **{name: "http://[::1"})
    host = Host(mcpwatch_cmd("wrap", "--", *upstream), env)
    host.ask(INIT)
    assert host.ask(call(1, "meta"))["result"]["isError"] is False
    stderr = host.finish()
    told = [line for line in stderr.splitlines() if "OpenTelemetry" in line]
    assert len(told) == 1 and f"{name}='http://[::1'" in told[0] and "export is off" in told[0], stderr
    assert "Traceback" not in stderr


def one_session_log(log: Path, calls: int) -> Path:
    """A log holding one session of `calls` answered calls (a session to export, without a wrapper)."""
    from mcpwatch.clock import ManualClock
    from mcpwatch.events import Event
    from mcpwatch.store import EventWriter

    writer = EventWriter(log, clock=ManualClock(wall=1_700_000_000.0))
    sid = writer.start_session(name="few", upstream="stdio: x", pid=1, config={})
    seq = 0
    for n in range(calls):
        for kind, data in (("request_start", {"method": "tools/call"}), ("request_end", {"outcome": "ok"})):
            seq += 1
            writer.emit(Event(kind, sid, 1_700_000_000.0 + seq, float(seq), seq, str(n), "t", None, data))
    writer.close()
    return log


def test_export_otlp_stops_at_the_first_refused_batch(tmp_path: Path) -> None:
    """A collector that refuses (or does not answer) is asked once, not once per batch of 512 spans."""
    log = one_session_log(tmp_path / "events.db", 1200)  # three batches of spans
    with HostileCollector("refuse_all") as collector:
        command = mcpwatch_cmd("export", str(log), "--format", "otlp", "--endpoint", collector.endpoint)
        result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "took 0 of 1200 spans (HTTP 405" in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr
    assert collector.requests == ["/v1/traces"]


def test_a_collector_trickling_its_headers_is_cut_at_the_export_timeout(tmp_path: Path) -> None:
    """A socket timeout only bounds the silence between two bytes: a collector sending its head a byte at a time
    held `export --format otlp` (and the wrapper's export thread) for as long as it liked."""
    log = one_session_log(tmp_path / "events.db", 2)
    with HostileCollector("trickle") as collector:
        command = mcpwatch_cmd("export", str(log), "--format", "otlp", "--endpoint", collector.endpoint)
        result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
        assert collector.hung_up.wait(30), "the export never hung up on the trickling collector"
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"mcpwatch: the collector at {collector.endpoint}/v1/traces took 0 of 2 spans (no complete answer within 5 s)"
    ]
