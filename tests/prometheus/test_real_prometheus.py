"""A real Prometheus (Debian's 2.42) scrapes a real wrapper every second: after ok calls and calls cut by
`--deadline 1`, its HTTP API answers the deadline counter and the duration histogram for that tool, every query of
the shipped dashboard evaluates, and the shipped deadline alert fires (its `for` shortened, its expression as
shipped)."""

from __future__ import annotations

import json
import re
import sys

import pytest

from mcpwatch.commands.prometheus import shipped
from mcpwatch.ports import free_port

from checkout import mcpwatch_cmd
from promserver import PrometheusServer, RawHost, binary
from wraptools import SDK_SERVER

pytestmark = pytest.mark.slow


def dashboard_queries() -> list[str]:
    """Every query of the shipped dashboard, with Grafana's variables as a scrape of everything would set them."""
    queries = [t["expr"] for panel in json.loads(shipped("dashboard"))["panels"] for t in panel["targets"]]
    return [q.replace("$__rate_interval", "1m").replace("$wrapper", ".*").replace("$tool", ".*") for q in queries]


@pytest.fixture(scope="module")
def scraped(tmp_path_factory):
    """A wrapper named `w1` (ok calls to `add`, two calls to `sleepy` cut at 1 s) and Prometheus scraping it, with
    the shipped deadline rule evaluated every second."""
    binary("prometheus")
    work = tmp_path_factory.mktemp("prometheus")
    # the unit tests (promtool) cover `for`; here the expressions as shipped must fire on real data
    rules = re.sub(r"(?m)^ +for: .*\n", "", shipped("rules"))
    assert rules != shipped("rules")
    rule_file = work / "alerts.yml"
    rule_file.write_text(rules)
    port = free_port()
    wrap = ("wrap", "--name", "w1", "--no-log", "--deadline", "1", "--metrics-port", str(port))
    host = RawHost(mcpwatch_cmd(*wrap, "--", sys.executable, SDK_SERVER))
    try:
        with PrometheusServer(work, [f"127.0.0.1:{port}"], [rule_file]) as prometheus:
            host.start()
            assert {t["name"] for t in host.ask("tools/list")["result"]["tools"]} >= {"add", "sleepy"}
            # listed tools are counted from 0, so the first cut is an increase rate() sees
            prometheus.wait(lambda: prometheus.vector('mcpwatch_deadlines_total{tool="sleepy"} == 0'), 30, "a scrape")
            for n in range(3):
                assert host.call("add", a=n, b=1)["result"]["structuredContent"] == {"result": n + 1}
            for _ in range(2):
                assert host.call("sleepy", seconds=5)["result"]["isError"] is True  # mcpwatch's answer at 1 s
            prometheus.host = host  # the last test stops the wrapper
            yield prometheus
        assert prometheus.process.poll() is not None  # stopped, whatever the tests did
    finally:
        host.finish()


@pytest.mark.slow
def test_prometheus_reads_the_deadline_counter_and_the_histogram_of_the_cut_tool(scraped):
    deadlines = scraped.wait(
        lambda: scraped.vector('mcpwatch_deadlines_total{tool="sleepy"} == 2'), 30, "the deadline counter at 2"
    )
    assert deadlines[0]["metric"]["wrapper"] == "w1" and deadlines[0]["metric"]["job"] == "mcpwatch"
    assert scraped.vector('mcpwatch_deadlines_total{tool="add"} > 0') == []  # no call to add was cut
    counts = {
        (s["metric"]["tool"], s["metric"]["outcome"]): float(s["value"][1])
        for s in scraped.vector('mcp_client_operation_duration_seconds_count{method="tools/call"}')
    }
    assert counts == {("add", "ok"): 3.0, ("sleepy", "deadline"): 2.0}
    buckets = {
        s["metric"]["le"]: float(s["value"][1])
        for s in scraped.vector('mcp_client_operation_duration_seconds_bucket{tool="sleepy"}')
    }
    assert buckets["0.5"] == 0 and buckets["2.0"] == 2 and buckets["+Inf"] == 2  # cut at the 1 s budget
    assert scraped.vector("up") and all(s["value"][1] == "1" for s in scraped.vector("up"))


def test_every_dashboard_query_evaluates_on_real_data(scraped):
    scraped.wait(lambda: scraped.vector("count_over_time(up[1m]) >= 3"), 30, "three scrapes")
    for query in dashboard_queries():
        answer = scraped.query(query)
        assert answer["status"] == "success", (query, answer)
    latency = dashboard_queries()[3]
    assert re.search(r"histogram_quantile\(0\.5,", latency)
    tools = {s["metric"]["tool"] for s in scraped.vector(latency)}
    assert tools == {"add", "sleepy"}


def test_the_shipped_deadline_alert_fires_for_the_tool_being_cut(scraped):
    def firing():
        return [
            a
            for a in scraped.alerts()
            if a["labels"]["alertname"] == "McpwatchToolDeadlines" and a["state"] == "firing"
        ]

    alerts = scraped.wait(firing, 60, "McpwatchToolDeadlines to fire")
    assert [(a["labels"]["wrapper"], a["labels"]["tool"]) for a in alerts] == [("w1", "sleepy")]
    summary = alerts[0]["annotations"]["summary"]
    assert re.fullmatch(r"Wrapper w1 cuts [\d.]+% of sleepy calls at their deadline", summary), summary
    assert float(alerts[0]["value"]) > 0.05  # the share cut (rate() extrapolates, so not exactly 2 of 2)
    assert "On-call playbook" in alerts[0]["annotations"]["runbook"]
    assert not [a for a in scraped.alerts() if a["labels"]["alertname"] == "McpwatchWrapperGone"]


def test_the_shipped_wrapper_gone_alert_fires_with_the_wrapper_name_once_it_stops(scraped):
    """Last in this module (pytest keeps file order): it stops the wrapper the tests above read."""
    scraped.host.finish()  # the host closes: the wrapper exits and stops answering scrapes

    def gone():
        return [
            a for a in scraped.alerts() if a["labels"]["alertname"] == "McpwatchWrapperGone" and a["state"] == "firing"
        ]

    alerts = scraped.wait(gone, 60, "McpwatchWrapperGone to fire")
    assert [(a["labels"]["wrapper"], a["labels"]["job"]) for a in alerts] == [("w1", "mcpwatch")]
    assert alerts[0]["annotations"]["summary"].startswith("Wrapper w1 at 127.0.0.1:")
