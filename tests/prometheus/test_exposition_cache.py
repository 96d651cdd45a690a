"""A scrape renders only the families whose numbers changed, and answers byte for byte what `prometheus_client`
makes of the whole registry, in both formats, scrape after scrape. Counted (families rendered), never timed."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client.exposition import choose_encoder
from test_exposition import STATUS, end, event, every_metric_fold

from mcpwatch.events import Kind
from mcpwatch.prometheus.endpoint import metrics_registry
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
