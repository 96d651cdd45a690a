import json
import subprocess

import pytest

from mcpwatch import __version__
from mcpwatch.bench import QUICK_CALLS
from mcpwatch.cli import main

from checkout import REPO, mcpwatch_cmd


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(mcpwatch_cmd(*args), capture_output=True, text=True, cwd=REPO, timeout=60)


def test_version_prints_the_package_version():
    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"mcpwatch {__version__}"


def test_help_lists_available_commands():
    result = run("--help")
    assert result.returncode == 0
    assert "bench" in result.stdout


def test_unknown_subcommand_is_one_line_and_exit_2():
    result = run("frobnicate")
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


@pytest.mark.bench
def test_bench_core_quick_prints_every_figure_against_its_target() -> None:
    # The figures themselves are the benchmark's business (README); here: it runs and reports all five.
    done = subprocess.run(mcpwatch_cmd("bench", "core", "--quick"), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
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
def test_bench_wrap_quick_compares_every_path_with_the_direct_one() -> None:
    done = subprocess.run(mcpwatch_cmd("bench", "wrap", "--quick"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    stdio = report["stdio"]
    for path in ("wrapped", "wrapped_no_log", "line_forwarder"):
        assert stdio[path]["calls"] == QUICK_CALLS[0] and stdio[path]["median_ratio"] > 0
    assert stdio["concurrent_32"]["throughput_ratio"] > 0 and report["http"]["wrapped"]["median_ratio"] > 0


@pytest.mark.slow
@pytest.mark.bench
def test_bench_sessions_quick_samples_one_upstream_per_host_session() -> None:
    done = subprocess.run(mcpwatch_cmd("bench", "sessions", "--quick"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [s["sessions"] for s in report["samples"]] == [1, 2, 4]
    assert [s["upstreams"] for s in report["samples"]] == [1, 2, 4]
    assert report["wrapper_mb_per_session"] < report["upstream_mb_per_session"]  # far less than a process
    abandoned = report["abandoned"]  # 30 hosts gone without DELETE: reclaimed at the cap, none refused
    assert abandoned["sessions"] == 30 and 0 < abandoned["upstreams"] <= abandoned["max_sessions"] == 16


@pytest.mark.slow
@pytest.mark.bench
def test_bench_hosts_quick_measures_each_stage_of_hosts() -> None:
    done = subprocess.run(mcpwatch_cmd("bench", "hosts", "--quick"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    saturation, paced = report["saturation"], report["paced"]
    assert [s["hosts"] for s in saturation] == [s["hosts"] for s in paced] == [1, 4]
    assert all(s["per_host_calls_per_s"] == 5.0 and s["p99_from_due_ms"] > 0 for s in paced)
    stages = saturation + paced
    assert all(s["calls_per_s"] > 0 and 0 < s["median_ms"] <= s["p99_ms"] for s in stages)
    assert all(s["wrapper_cpu_us_per_call"] > 0 and s["upstreams_cpu_us_per_call"] > 0 for s in stages)


@pytest.mark.slow
@pytest.mark.bench
def test_bench_otel_quick_compares_exporting_with_not_exporting() -> None:
    done = subprocess.run(mcpwatch_cmd("bench", "otel", "--quick"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    stdio = json.loads(done.stdout)["stdio"]
    assert stdio["wrapped_otel"]["calls"] == stdio["wrapped"]["calls"] == QUICK_CALLS[0]
    assert stdio["otel_cost_ratio"] > 0 and stdio["wrapped_otel"]["cpu_us_per_call"] > 0
