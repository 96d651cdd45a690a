"""What a scrape answers, without a process: bounded labels, the histogram, names that match the OTLP instruments,
the negotiated format (text, OpenMetrics) and the guard in front of it."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from mcpwatch.commands.prometheus import shipped
from mcpwatch.events import Event, Kind
from mcpwatch.httpserve.guard import FrontGuard
from mcpwatch.otel.metric_fold import LEVELS
from mcpwatch.prometheus.collector import OTLP_NAME
from mcpwatch.prometheus.endpoint import MetricsApp, metrics_registry
from mcpwatch.prometheus.fold import FOLD_AT, MAX_TOOLS, MetricFold

TOKEN = "s3cret-token-for-scrapes"


def event(kind: str, tool: str | None = None, request_id: str | None = None, **data: Any) -> Event:
    return Event(kind, "session", 0.0, 0.0, 0, request_id, tool, None, data)


def end(tool: str | None, outcome: str = "ok", seconds: float = 0.1, method: str = "tools/call", rid: str = "1"):
    return event(Kind.REQUEST_END, tool, rid, method=method, outcome=outcome, duration_s=seconds)


STATUS: dict[str, Any] = {
    "in_flight": [{"method": "tools/call"}, {"method": "tools/call"}, {"method": "made/up"}],
    "tombstones": {"count": 3},
    "wrapper": {"host_sessions": {"open": 5, "max": 16, "opened": 9, "reclaimed": 1, "refused": 2}},
    "log": {"events_written": 120, "events_dropped": 4},
    "otel": {"events_dropped": 7, "spans_failed": 1},
}


def every_metric_fold() -> MetricFold:
    """A fold that has seen every kind of event it counts."""
    fold = MetricFold()
    fold.tools.add_listed({"tools": [{"name": "add"}, {"name": "slow"}]})
    for each in (
        end("add"),
        end("slow", "deadline", 1.0),
        event(Kind.TOMBSTONE_HIT, "slow", what="response"),
        event(Kind.LATE_RESULT, "slow", outcome="ok"),
        event(Kind.LATE_REUSE, "slow"),
        event(Kind.HEARTBEAT, "slow"),
        event(Kind.UPSTREAM_STATE, state="ready", generation=1),
        event(Kind.UPSTREAM_STATE, state="ready", generation=2),
    ):
        fold.emit(each)
    return fold


def scrape(fold: MetricFold, status: dict[str, Any] | None = None, **request: Any) -> tuple[int, dict, bytes]:
    app = request.pop("app", None) or MetricsApp(
        metrics_registry("w1", fold, lambda: status or STATUS), request.pop("guard", FrontGuard())
    )
    given = request.pop("headers", [])
    headers = given if any(name == b"host" for name, _ in given) else [(b"host", b"127.0.0.1:9464"), *given]
    scope = {"type": "http", "method": request.pop("method", "GET"), "path": request.pop("path", "/metrics")}
    scope["headers"] = headers
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], dict(sent[0]["headers"]), sent[1]["body"]


def samples(body: bytes) -> dict[tuple[str, tuple], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    }


def test_every_metric_is_exposed_with_the_wrapper_label():
    status, headers, body = scrape(every_metric_fold())
    assert status == 200 and headers[b"content-type"].startswith(b"text/plain; version=0.0.4")
    values = samples(body)
    assert all(dict(labels).get("wrapper") == "w1" for _, labels in values)
    got = {(name, dict(labels).get("tool")): value for (name, labels), value in values.items()}
    assert got[("mcpwatch_deadlines_total", "slow")] == 1 and got[("mcpwatch_deadlines_total", "add")] == 0
    assert got[("mcpwatch_late_results_total", "slow")] == 1 and got[("mcpwatch_late_reuses_total", "slow")] == 1
    assert got[("mcpwatch_upstream_restarts_total", None)] == 1  # generation 2 is the one restart
    assert got[("mcpwatch_heartbeats_total", None)] == 1 and got[("mcpwatch_tombstones", None)] == 3
    in_flight = {dict(k)["method"]: v for (name, k), v in values.items() if name == "mcpwatch_calls_in_flight"}
    assert in_flight == {"tools/call": 2, "other": 1}
    assert got[("mcpwatch_host_sessions", None)] == 5 and got[("mcpwatch_host_sessions_max", None)] == 16
    assert got[("mcpwatch_host_sessions_refused_total", None)] == 2
    assert got[("mcpwatch_host_sessions_reclaimed_total", None)] == 1
    assert got[("mcpwatch_host_sessions_opened_total", None)] == 9
    assert got[("mcpwatch_log_events_lost_total", None)] == 4
    otlp = {dict(k)["what"]: v for (name, k), v in values.items() if name == "mcpwatch_otlp_dropped_total"}
    assert otlp == {"events": 7, "spans": 1}


def test_a_stdio_wrapper_without_export_has_no_host_session_or_otlp_series():
    _, _, body = scrape(every_metric_fold(), {"log": {"events_written": 1}})
    names = {name for name, _ in samples(body)}
    assert "mcpwatch_log_events_written_total" in names
    assert not {n for n in names if n.startswith(("mcpwatch_host_sessions", "mcpwatch_otlp"))}


def test_tools_not_listed_methods_not_mcp_and_request_ids_never_become_labels():
    fold = MetricFold()
    fold.tools.add_listed({"tools": [{"name": "add"}, {"name": 7}, {"name": "x" * 500}, "junk"]})
    for n in range(200):  # a host inventing names cannot grow the series
        fold.emit(end(f"invented-{n}", rid=f"request-{n}"))
        fold.emit(end(None, method=f"made/up{n}", rid=f"request-{n}"))
    fold.emit(end("add", rid="request-add"))
    _, _, body = scrape(fold)
    text = body.decode()
    assert "request-" not in text and "invented" not in text and "made/up" not in text and "xxxx" not in text
    counts = {
        (dict(k)["method"], dict(k)["tool"]): v
        for (name, k), v in samples(body).items()
        if name == "mcp_client_operation_duration_seconds_count"
    }
    assert counts == {("tools/call", "other"): 200, ("other", ""): 200, ("tools/call", "add"): 1}


def test_the_listed_tools_are_capped():
    fold = MetricFold()
    fold.tools.add_listed({"tools": [{"name": f"t{n}"} for n in range(MAX_TOOLS + 500)]})
    fold.tools.add_listed({"tools": [{"name": "late-comer"}]})
    assert len(fold.tools.names) == MAX_TOOLS and fold.tools.label("late-comer") == "other"
    fold.tools.add_listed({"tools": "not a list"})
    fold.tools.add_listed(None)


def test_the_histogram_has_the_otlp_buckets_cumulated():
    fold = MetricFold()
    fold.tools.add_listed({"tools": [{"name": "t"}]})
    for seconds in (0.005, 0.01, 1.0, 400.0):
        fold.emit(end("t", seconds=seconds))
    values = samples(scrape(fold)[2])
    buckets = {
        dict(k)["le"]: v for (name, k), v in values.items() if name == "mcp_client_operation_duration_seconds_bucket"
    }
    assert buckets["0.01"] == 2 and buckets["0.5"] == 2 and buckets["1.0"] == 3 and buckets["300.0"] == 3
    assert buckets["+Inf"] == 4
    total = [v for (name, k), v in values.items() if name == "mcp_client_operation_duration_seconds_sum"]
    assert total == [pytest.approx(401.015)]


def test_events_wait_for_a_scrape_but_never_pile_up():
    fold = MetricFold()
    for n in range(FOLD_AT * 3 + 5):
        fold.emit(end(None, rid=str(n)))
    assert len(fold._queue) < FOLD_AT
    histogram = next(iter(fold.counts().durations.values()))
    assert sum(histogram.buckets) == FOLD_AT * 3 + 5


def test_openmetrics_when_the_scraper_asks_for_it():
    accept = (b"accept", b"application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
    status, headers, body = scrape(every_metric_fold(), headers=[accept])
    assert status == 200 and headers[b"content-type"].startswith(b"application/openmetrics-text")
    assert body.endswith(b"# EOF\n") and b"mcpwatch_deadlines_total{" in body


def test_the_guard_refuses_a_foreign_host_a_wrong_token_and_other_paths():
    remote = FrontGuard.for_listen("0.0.0.0", remote=True, token=TOKEN)
    assert scrape(MetricFold(), guard=remote)[0] == 401
    wrong = (b"authorization", b"Bearer not-the-token-at-all")
    status, headers, body = scrape(MetricFold(), guard=remote, headers=[wrong])
    assert status == 401 and headers[b"www-authenticate"] == b"Bearer" and b"bearer token" in body
    assert scrape(MetricFold(), guard=remote, headers=[(b"authorization", f"Bearer {TOKEN}".encode())])[0] == 200
    assert scrape(MetricFold(), headers=[(b"host", b"evil.example")])[0] == 421  # DNS rebinding
    assert scrape(MetricFold(), headers=[(b"origin", b"http://evil.example")])[0] == 403
    assert scrape(MetricFold(), path="/")[0] == 404
    assert scrape(MetricFold(), method="POST")[0] == 405


def test_the_names_are_the_otlp_instruments_as_prometheus_translates_them():
    from mcpwatch.otel.config import OtelTarget
    from mcpwatch.otel.exporter import MetricRecorder

    url = "http://127.0.0.1:9/v1/metrics"
    recorder = MetricRecorder(OtelTarget(traces_url=None, metrics_url=url), url, lambda _ok, _error: None)
    try:
        counters = set(recorder.instruments)
        levels = set(LEVELS)
    finally:
        recorder.shutdown(0.1)
    translated = {}
    for otlp in counters:
        translated[otlp.replace(".", "_") + "_total"] = otlp
    for otlp in levels:
        translated[otlp.replace(".", "_")] = otlp
    translated["mcp_client_operation_duration_seconds"] = "mcp.client.operation.duration"  # unit s → _seconds
    assert translated == OTLP_NAME
    exposed = {name for name, _ in samples(scrape(every_metric_fold())[2])}
    assert {n for n in OTLP_NAME if n != "mcp_client_operation_duration_seconds"} <= exposed


def referenced(text: str) -> set[str]:
    return set(re.findall(r"\b(mcp(?:watch)?_[a-z_]+)\b", text))


def test_the_dashboard_and_the_rules_query_only_names_the_wrapper_exposes():
    exposed = {name for name, _ in samples(scrape(every_metric_fold())[2])}
    dashboard, rules = referenced(shipped("dashboard")), referenced(shipped("rules"))
    assert "mcpwatch_deadlines_total" in dashboard and "mcp_client_operation_duration_seconds_bucket" in dashboard
    assert dashboard - exposed == set() and rules - exposed == set()
    assert {"mcpwatch_deadlines_total", "mcpwatch_late_answers_total", "mcpwatch_build_info"} <= rules


def test_a_tight_scrape_loop_is_answered_from_the_last_exposition():
    now = [100.0]
    reads = []
    fold = MetricFold()
    app = MetricsApp(
        metrics_registry("w1", fold, lambda: reads.append(1) or STATUS), FrontGuard(), 0.25, lambda: now[0]
    )
    for _ in range(500):  # a client hammering the endpoint within one quarter second
        assert scrape(fold, app=app)[0] == 200
    assert app.collected == 1 and len(reads) == 1
    fold.emit(end(None))
    now[0] += 0.25
    _, _, body = scrape(fold, app=app)
    assert app.collected == 2 and b'method="tools/call"' in body  # a scrape after the interval sees the new call
    accept = [(b"accept", b"application/openmetrics-text;version=1.0.0")]
    assert scrape(fold, app=app, headers=accept)[2].endswith(b"# EOF\n")  # each format has its own last answer


def test_an_exposition_slow_to_build_is_built_again_only_after_nine_times_its_cost():
    """Any local process may scrape (no token on loopback), and an upstream that lists 1,000 tools of 128
    characters makes an exposition of about 100,000 lines: seconds of the wrapper's loop, the hosts' calls
    waiting meanwhile. A scrape loop must not be able to keep the loop busy more than a tenth of its time, so
    after a build that took T the last answer is served again for 9 T (at least `min_interval_s`)."""
    now = [100.0]

    def slow_status() -> dict[str, Any]:
        now[0] += 2.0  # reading and writing the exposition took 2 s of the loop
        return STATUS

    fold = MetricFold()
    app = MetricsApp(metrics_registry("w1", fold, slow_status), FrontGuard(), 0.25, lambda: now[0])
    assert scrape(fold, app=app)[0] == 200 and app.collected == 1
    fold.emit(end(None, "cancelled"))
    now[0] += 17.9  # 0.25 s would do for a cheap exposition; this one cost 2 s
    assert b'outcome="cancelled"' not in scrape(fold, app=app)[2] and app.collected == 1
    now[0] += 0.1  # 18 s (9 × 2 s) after the build ended
    assert b'outcome="cancelled"' in scrape(fold, app=app)[2] and app.collected == 2
