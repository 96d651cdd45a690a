import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli

from mcpwatch import __version__
from mcpwatch.bench import hosts as hosts_bench
from mcpwatch.bench import otel as otel_bench
from mcpwatch.bench import wrap as wrap_bench
from mcpwatch.bench.sessions import QUICK_CAP
from mcpwatch.cli import main

from checkout import REPO, mcpwatch_cmd
from wraptools import TASK_SERVER

FEW_CALLS = (10, 2)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(mcpwatch_cmd(*args), capture_output=True, text=True, cwd=REPO, timeout=60)


def test_version_prints_the_package_version():
    """A process of its own: `python -m mcpwatch` is the entry point a host starts."""
    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"mcpwatch {__version__}"


def test_help_lists_available_commands():
    result = run_cli("--help")
    assert result.returncode == 0
    assert "bench" in result.stdout


def test_unknown_subcommand_is_one_line_and_exit_2():
    result = run_cli("frobnicate")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "frobnicate" in lines[0]


def test_bad_option_is_one_line_and_exit_2(capsys):
    try:
        main(["bench", "--no-such-flag"])
    except SystemExit as exc:
        assert exc.code == 2
    else:  # pragma: no cover - argparse always exits here
        raise AssertionError("argparse accepted an unknown flag")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "--no-such-flag" in err[0]


def bench_quick(name: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """`mcpwatch bench NAME --quick` in this process (the command, its module and the processes it starts are real;
    `tests/unit/test_bench_baseline.py` runs `bench core` as a process of its own, from the command line)."""
    assert main(["bench", name, "--quick"]) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert report["benchmark"] == name
    return report


@pytest.fixture
def few_calls(monkeypatch: pytest.MonkeyPatch) -> int:
    """The stdio benches' smoke run with 10 calls a path (2 to warm up): the figures' shape, with every path open."""
    for module in (wrap_bench, otel_bench):
        monkeypatch.setattr(module, "QUICK_CALLS", FEW_CALLS)
    return FEW_CALLS[0]


@pytest.mark.bench
def test_bench_core_quick_prints_every_figure_against_its_target(capsys: pytest.CaptureFixture[str]) -> None:
    # The figures themselves are the benchmark's business (README); here: it runs and reports all five.
    report = bench_quick("core", capsys)
    names = [f["name"] for f in report["figures"]]
    assert names == [
        "cached policy resolution",
        "decorate 1000 tools",
        "tombstone lookup, 100,000 entries",
        "tombstone full sweep, 100,000 entries",
        "plain call, interpreter calls on the loop thread",
    ]
    for figure in report["figures"]:
        assert figure["value"] > 0 and figure["target"] > 0 and isinstance(figure["pass"], bool)


@pytest.mark.slow
@pytest.mark.bench
def test_bench_wrap_quick_compares_every_path_with_the_direct_one(
    capsys: pytest.CaptureFixture[str], few_calls: int, monkeypatch: pytest.MonkeyPatch
):
    """The stdio paths' four upstreams are the hand-written no-op server (tests/fixtures/task_server.py), as in the
    OTel smoke run below; the HTTP paths keep the SDK's, the one that serves Streamable HTTP."""
    sdk_server, http_run = wrap_bench.SERVER, wrap_bench._http_run

    def http_over_the_sdks_server(*args: Any) -> dict[str, Any]:
        with monkeypatch.context() as patch:
            patch.setattr(wrap_bench, "SERVER", sdk_server)
            return http_run(*args)

    monkeypatch.setattr(wrap_bench, "SERVER", TASK_SERVER)
    monkeypatch.setattr(wrap_bench, "_http_run", http_over_the_sdks_server)
    report = bench_quick("wrap", capsys)
    stdio = report["stdio"]
    for path in ("wrapped", "wrapped_no_log", "line_forwarder"):
        assert stdio[path]["calls"] == few_calls and stdio[path]["median_ratio"] > 0
        assert stdio[path]["cpu_us_per_call"] > 0  # the process in the middle was found and sampled
    assert stdio["concurrent_32"]["throughput_ratio"] > 0 and stdio["concurrent_32"]["line_forwarder_ratio"] > 0
    if hasattr(os, "sched_setaffinity"):  # every path's server kept on one CPU, then measured again
        assert stdio["concurrent_32_servers_on_one_cpu"]["throughput_ratio"] > 0
    raw = stdio["raw_client"]  # the raw client and upstream: the wrapper's own work over the floor
    assert all(raw[path]["median_us"] > 0 for path in ("direct", "line_forwarder", "wrapped"))
    assert raw["wrapper_over_floor_us"] == round(raw["wrapped"]["median_us"] - raw["line_forwarder"]["median_us"], 1)
    http = report["http"]
    assert http["wrapped"]["calls"] == http["wrapped_httpx2"]["calls"] == few_calls // 2
    assert http["wrapped"]["median_ratio"] > 0 and http["own_client_vs_httpx2_median"] > 0


@pytest.mark.slow
@pytest.mark.bench
def test_bench_sessions_quick_samples_one_upstream_per_host_session(capsys: pytest.CaptureFixture[str]) -> None:
    report = bench_quick("sessions", capsys)
    assert [s["sessions"] for s in report["samples"]] == [1, 2]
    assert [s["upstreams"] for s in report["samples"]] == [1, 2]
    assert report["wrapper_mb_per_session"] < report["upstream_mb_per_session"]  # far less than a process
    abandoned = report["abandoned"]  # 6 hosts gone without DELETE: reclaimed at the cap, none refused
    assert abandoned["sessions"] == 6 and 0 < abandoned["upstreams"] <= abandoned["max_sessions"] == QUICK_CAP < 6


@pytest.mark.slow
@pytest.mark.bench
def test_bench_hosts_quick_measures_each_stage_of_hosts(capsys: pytest.CaptureFixture[str]) -> None:
    report = bench_quick("hosts", capsys)
    saturation, paced = report["saturation"], report["paced"]
    assert [s["hosts"] for s in saturation] == [s["hosts"] for s in paced] == [1, 4]
    assert all(s["per_host_calls_per_s"] == 5.0 and s["p99_from_due_ms"] > 0 for s in paced)
    stages = saturation + paced
    assert all(s["calls_per_s"] > 0 and 0 < s["median_ms"] <= s["p99_ms"] for s in stages)
    assert all(s["wrapper_cpu_us_per_call"] > 0 and s["upstreams_cpu_us_per_call"] > 0 for s in stages)
    assert all(s["cpu_us_per_call"] > s["wrapper_cpu_us_per_call"] + s["upstreams_cpu_us_per_call"] for s in stages)
    assert [alone["processes"] for alone in report["upstreams_alone"]] == [1, 4]  # no front: the upstreams' own
    assert all(alone["cpu_us_per_call"] > 0 for alone in report["upstreams_alone"])
    assert report["cpu_ratio_with_the_front_at_4"] is None  # no stage of 64 hosts in a smoke run


def test_the_hosts_bound_takes_the_fronts_share_at_64_hosts_as_at_4() -> None:
    at_4 = {"cpu_us_per_call": 180.0, "wrapper_cpu_us_per_call": 120.0}
    at_64 = {"cpu_us_per_call": 260.0, "wrapper_cpu_us_per_call": 150.0}  # upstreams and hosts: 110 at 64, 60 at 4
    assert hosts_bench.front_held_ratio(at_4, at_64) == round(180.0 / (110.0 + 120.0), 2)
    assert hosts_bench.front_held_ratio(at_4, None) is None
    nothing_else = {"cpu_us_per_call": 150.0, "wrapper_cpu_us_per_call": 270.0}  # counters that do not add up
    assert hosts_bench.front_held_ratio(at_4, nothing_else) is None


@pytest.mark.slow
@pytest.mark.bench
def test_bench_otel_quick_compares_exporting_with_not_exporting(
    capsys: pytest.CaptureFixture[str], few_calls: int, monkeypatch: pytest.MonkeyPatch
):
    """Its three upstreams are the hand-written no-op server (tests/fixtures/task_server.py): the SDK's costs 0.9 s
    of CPU a start, and the smoke run checks the figures' shape, whatever the server."""
    monkeypatch.setattr(otel_bench, "SERVER", TASK_SERVER)
    stdio = bench_quick("otel", capsys)["stdio"]
    assert stdio["wrapped_otel"]["calls"] == stdio["wrapped"]["calls"] == few_calls
    assert stdio["otel_cost_ratio"] > 0 and stdio["wrapped_otel"]["cpu_us_per_call"] > 0


def test_watch_given_a_log_file_names_replay_in_one_line(tmp_path: Path) -> None:
    log = tmp_path / "events.db"
    log.write_bytes(b"not a wrapper")
    result = run("watch", str(log))
    assert result.returncode != 0
    (line,) = result.stderr.strip().splitlines()
    assert f"mcpwatch replay {log}" in line
