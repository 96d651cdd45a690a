"""`mcpwatch bench paced` and the paced CPU comparisons `bench otel` and `bench metrics` make with it: the rates it
accepts, the ratios it reports, the kernel counters it reads, and one smoke run through a real wrapper."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from mcpwatch.bench import paced
from mcpwatch.bench.paced import Window, rates_asked, round_ratios
from mcpwatch.bench.procstat import thread_cpu
from mcpwatch.cli import main
from mcpwatch.errors import UserError


def test_rates_default_to_5000_and_250_and_are_read_from_the_environment() -> None:
    assert rates_asked({}) == [5000.0, 250.0]
    assert rates_asked({"MCPWATCH_BENCH_RATES": " 1000, 50.5 "}) == [1000.0, 50.5]


@pytest.mark.parametrize("text", ["fast", "0", "-5", "1000,", "1e9", "nan", "0.5", "1e-300", "inf"])
def test_a_bad_rate_is_one_line_naming_the_variable_and_an_example(text: str) -> None:
    with pytest.raises(UserError) as caught:
        rates_asked({"MCPWATCH_BENCH_RATES": text})
    message = str(caught.value)
    assert "\n" not in message and "MCPWATCH_BENCH_RATES" in message and "5000,250" in message


def test_a_bad_rate_through_the_command_is_one_line_and_no_process(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCPWATCH_BENCH_RATES", "fast")
    monkeypatch.setattr(paced, "open_hosts", None)  # nothing may start before the refusal
    assert main(["bench", "paced", "--quick"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "MCPWATCH_BENCH_RATES" in err[0] and "Traceback" not in err[0]


def test_a_rate_under_one_call_a_second_is_refused() -> None:
    """Each call waits 1/rate seconds for its slot: 1e-300 calls/s was a wait nothing ends."""
    assert rates_asked({"MCPWATCH_BENCH_RATES": "1,100000"}) == [1.0, 100000.0]
    with pytest.raises(UserError, match="from 1 to 100000"):
        rates_asked({"MCPWATCH_BENCH_RATES": "1e-300"})


@pytest.mark.parametrize("bench", ["paced", "hosts"])
def test_a_system_without_thread_counters_is_refused_not_measured_as_free(
    bench: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without /proc/PID/task every window read as 0 µs a call, under any target; now one line and no process."""
    from mcpwatch.bench import hosts

    monkeypatch.setattr(paced, "thread_cpu", lambda pid: {})
    monkeypatch.setattr(paced, "open_hosts", None)  # nothing may start before the refusal
    monkeypatch.setattr(hosts, "curve", None)
    monkeypatch.setenv("MCPWATCH_BENCH_RATES", "400")
    monkeypatch.delenv("MCPWATCH_BENCH_BASELINE", raising=False)
    monkeypatch.delenv("MCPWATCH_BENCH_FRONT_ROOT", raising=False)
    assert main(["bench", bench, "--quick"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "/proc/PID/task" in err[0] and "Traceback" not in err[0]


def _window(calls: int, *thread_ns: int) -> Window:
    return Window(calls, 1.0, {tid: ns for tid, ns in enumerate(thread_ns)})


def test_round_ratios_pair_each_round_with_its_own_base_round() -> None:
    windows = {
        "feature": [_window(100, 11_000), _window(100, 30_000), _window(200, 24_000)],  # 110, 300, 120 ns a call
        "plain": [_window(100, 10_000), _window(100, 20_000), _window(200, 20_000)],  # 100, 200, 100
    }
    assert round_ratios(windows, "feature", "plain") == {"median": 1.2, "min": 1.1, "max": 1.5, "rounds": 3}


def test_a_window_sums_every_thread_per_call() -> None:
    assert _window(4, 1_000, 3_000).per_call_us() == 1.0  # 4,000 ns over 4 calls


def test_thread_cpu_reads_every_thread_of_a_process_from_the_kernel() -> None:
    if not Path("/proc/self/task").is_dir():
        pytest.skip("no /proc")
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        found = thread_cpu(os.getpid())
        assert os.getpid() in found and worker.native_id in found
        assert found[os.getpid()][0] > 0  # this thread has run
    finally:
        stop.set()
        worker.join()
    assert thread_cpu(2**22 + 12345) == {}  # a process that is not there: nothing, no error


@pytest.mark.slow
@pytest.mark.bench
def test_bench_paced_quick_measures_a_real_wrapper_at_the_rate_asked(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCPWATCH_BENCH_RATES", "400")
    monkeypatch.delenv("MCPWATCH_BENCH_BASELINE", raising=False)
    assert main(["bench", "paced", "--quick"]) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    this = report["paced"]["400_calls_per_s"]["this"]
    assert this["calls"] == round(400 * report["window_s"]) and this["rate_asked"] == 400
    assert this["cpu_us_per_call"] > 0 and this["loop_thread_us_per_call"] > 0
    assert this["context_switches_per_call"] > 0


def test_a_baseline_without_mcpwatch_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCPWATCH_BENCH_BASELINE", str(tmp_path))
    monkeypatch.setattr(paced, "open_hosts", None)  # nothing may start before the refusal
    assert main(["bench", "paced", "--quick"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(tmp_path) in err[0] and "git worktree add" in err[0]


FAKE_WRAPPER = """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "tools/call":
        if sys.argv[1] == "garbage":
            print("not a JSON-RPC message", flush=True)
        continue  # "silent": never answers a call
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}}), flush=True)
"""


@pytest.mark.parametrize(
    ("mode", "says"),
    [("garbage", "stopped answering: the wrapper wrote a line that is not"), ("silent", "calls unanswered")],
)
def test_a_wrapper_that_stops_answering_ends_the_window_in_one_line(
    mode: str, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A window waited for every answer with no end: a wrapper (say, an older checkout's) writing a line that is
    not JSON killed the reader and one that never answered held the bench for good."""
    import asyncio
    import sys

    monkeypatch.setattr(paced, "ANSWER_WAIT_S", 0.2, raising=False)  # the silent one never answers: any bound shows it
    script = tmp_path / "wrapper.py"
    script.write_text(FAKE_WRAPPER)

    async def window() -> str:
        host = await paced.RawHost.start([sys.executable, str(script), mode], dict(os.environ))
        try:
            with pytest.raises(UserError) as caught:
                await asyncio.wait_for(host.paced(200, 0.05), 30)
            return str(caught.value)
        finally:
            await host.close()

    message = asyncio.run(window())
    assert says in message and "\n" not in message
