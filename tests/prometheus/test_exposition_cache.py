"""A scrape renders only the families whose numbers changed, and answers byte for byte what `prometheus_client`
makes of the whole registry, in both formats, scrape after scrape. Counted (families rendered), never timed."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client.exposition import choose_encoder
from test_exposition import STATUS, end, event, every_metric_fold, scrape

from mcpwatch.events import Kind
from mcpwatch.httpserve.guard import FrontGuard
from mcpwatch.prometheus.endpoint import MAX_FORMATS, MetricsApp, metrics_registry
from mcpwatch.prometheus.fold import MetricFold

FORMATS = {"text": "", "openmetrics": "application/openmetrics-text; version=1.0.0"}


def counting(encoder: Callable[[Any], bytes], rendered: list[int]) -> Callable[[Any], bytes]:
    def encode(registry: Any) -> bytes:
        rendered.append(len(list(registry.collect())))
        return encoder(registry)

    return encode


@pytest.mark.parametrize("accept", FORMATS.values(), ids=FORMATS.keys())
def test_each_scrape_is_the_whole_registry_s_exposition(accept: str) -> None:
    fold = every_metric_fold()
    status = copy.deepcopy(STATUS)
    registry = metrics_registry("w1", fold, lambda: status)
    encoder, content_type = choose_encoder(accept)
    changes: list[Callable[[], None]] = [
        lambda: None,
        lambda: fold.emit(end("add", seconds=0.3)),
        lambda: fold.emit(end("slow", "deadline", 70.0, rid="2")),
        lambda: status.update(tombstones={"count": 4}),
        lambda: fold.emit(event(Kind.TOMBSTONE_HIT, "add", what="progress")),
        lambda: fold.tools.add_listed({"tools": [{"name": "new\x1btool"}]}),
        lambda: status.pop("otel"),
        lambda: status.update(otel={"events_dropped": 1, "spans_failed": 0}),
        lambda: fold.emit(end(None, method="made/up")),
    ]
    for change in changes:
        change()
        assert registry.render(encoder, content_type) == encoder(registry)


@pytest.mark.parametrize("accept", FORMATS.values(), ids=FORMATS.keys())
def test_a_scrape_after_a_call_renders_only_what_moved(accept: str) -> None:
    fold = MetricFold()
    fold.tools.add_listed({"tools": [{"name": f"tool{n}"} for n in range(20)]})
    status = copy.deepcopy(STATUS)
    registry = metrics_registry("w1", fold, lambda: status)
    encoder, content_type = choose_encoder(accept)
    rendered: list[int] = []
    registry.render(counting(encoder, rendered), content_type)
    families = len([n for n in rendered if n])
    assert families >= 10
    rendered.clear()
    registry.render(counting(encoder, rendered), content_type)
    assert rendered == []  # nothing changed: nothing rendered again
    fold.emit(end("tool3"))
    status["in_flight"] = []
    registry.render(counting(encoder, rendered), content_type)
    assert rendered == [1, 1]  # the duration histogram and the calls in flight


def scrape_as(app: MetricsApp, fold: MetricFold, accept: str) -> tuple[int, dict[bytes, bytes], bytes]:
    return scrape(fold, app=app, headers=[(b"accept", accept.encode("latin-1"))])


@pytest.mark.parametrize("version", ["abc", "1.0.0x", "1.0.0\xe9", "1..0"])
def test_a_version_that_is_not_a_number_is_answered_in_the_text_format(version: str) -> None:
    """Any local process may scrape: an OpenMetrics version that is not dotted numbers made `choose_encoder` raise
    (a TypeError comparing a word with a number), a 500 and a traceback on the wrapper's stderr."""
    fold = every_metric_fold()
    app = MetricsApp(metrics_registry("w1", fold, lambda: STATUS), FrontGuard())
    status, headers, body = scrape_as(app, fold, f"application/openmetrics-text; version={version}")
    assert status == 200
    assert headers[b"content-type"].startswith(b"text/plain") and b"# EOF" not in body
    assert b"mcpwatch_build_info" in body


def test_scrapers_inventing_formats_hold_a_few_expositions_at_most() -> None:
    """Each OpenMetrics version a scraper names (`1.0.1`, `1.0.2`, …) is a content type of its own: the app kept
    each one's last answer, and the registry each one's text of every family, for ever."""
    now = [100.0]
    fold = MetricFold()
    fold.tools.add_listed({"tools": [{"name": f"tool{n}"} for n in range(50)]})
    app = MetricsApp(metrics_registry("w1", fold, lambda: STATUS), FrontGuard(), 0.25, lambda: now[0])
    one = len(scrape_as(app, fold, "application/openmetrics-text; version=1.0.0")[2])
    for n in range(200):
        now[0] += 1.0
        status, headers, _ = scrape_as(app, fold, f"application/openmetrics-text; version=1.0.{n + 1}")
        assert status == 200 and f"version=1.0.{n + 1};".encode() in headers[b"content-type"]
    assert app.held_bytes() <= 2 * MAX_FORMATS * one  # each kept format: its answer and its families' text


def test_inventing_a_format_per_scrape_does_not_take_the_loop() -> None:
    """A build's cost buys a quiet time of 9 T for every format, not only its own: a scraper naming a new version
    each time would otherwise have every scrape built, the loop's whole time going to expositions."""
    now = [100.0]

    def slow_status() -> dict[str, Any]:
        now[0] += 2.0  # each build takes 2 s of the loop
        return STATUS

    fold = MetricFold()
    app = MetricsApp(metrics_registry("w1", fold, slow_status), FrontGuard(), 0.25, lambda: now[0])
    assert scrape_as(app, fold, "")[0] == 200 and app.collected == 1
    for n in range(50):
        status, headers, _ = scrape_as(app, fold, f"application/openmetrics-text; version=1.0.{n}")
        assert status == 503 and int(headers[b"retry-after"]) >= 1
    assert app.collected == 1
    assert scrape_as(app, fold, "")[0] == 200  # the format built last is served its answer again meanwhile
    now[0] += 18.0  # 9 × 2 s after the build ended
    assert scrape_as(app, fold, "application/openmetrics-text; version=1.0.0")[0] == 200 and app.collected == 2
