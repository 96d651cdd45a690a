"""What a scrape reads: the folded counts and the levels of the wrapper's state at that moment, handed to
`prometheus_client` as metric families (the library writes the text or OpenMetrics exposition).

Names follow Prometheus's conventions and are the wrapper's OTLP instruments as Prometheus translates them
(`mcpwatch.deadlines` → `mcpwatch_deadlines_total`); `OTLP_NAME` says which is which. Every series carries a
`wrapper` label (`--name`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, InfoMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from mcpwatch import __version__
from mcpwatch.prometheus.fold import METHODS, Histogram, MetricFold, bounded
from mcpwatch.terminal import safe


def _go_float(bound: float) -> str:
    """A bucket bound as Prometheus writes it (`+Inf`, `1.0`): prometheus_client's own helper, unannotated there."""
    text: str = floatToGoString(bound)  # type: ignore[no-untyped-call]  # prometheus_client leaves it unannotated
    return text


DURATION = "mcp_client_operation_duration_seconds"
OTLP_NAME = {
    DURATION: "mcp.client.operation.duration",
    "mcpwatch_deadlines_total": "mcpwatch.deadlines",
    "mcpwatch_late_answers_total": "mcpwatch.late_answers",
    "mcpwatch_late_results_total": "mcpwatch.late_results",
    "mcpwatch_late_reuses_total": "mcpwatch.late_reuses",
    "mcpwatch_upstream_restarts_total": "mcpwatch.upstream.restarts",
    "mcpwatch_heartbeats_total": "mcpwatch.heartbeats",
    "mcpwatch_calls_in_flight": "mcpwatch.calls.in_flight",
    "mcpwatch_tombstones": "mcpwatch.tombstones",
}
"""Each exposed name that has an OTLP instrument, and that instrument's name (tested against the exporter)."""

StatusReader = Callable[[], dict[str, Any]]
"""The operator status with its `log` and `otel` blocks, as `status()` answers it: read once per scrape."""


Keyed = tuple[tuple[Any, ...], Callable[[], Any]]
"""A family's fingerprint (its name first, then every label and number it holds) and how to build it: the same
fingerprint is the same family, so a scrape builds and renders only the families that changed (`endpoint`)."""


class WrapperCollector(Collector):
    def __init__(self, wrapper: str, fold: MetricFold, read_status: StatusReader) -> None:
        self.wrapper = safe(wrapper)  # `--name` may hold anything argv can: shown as the fold shows tool names
        self.fold = fold
        self.read_status = read_status

    def collect(self) -> Iterator[Any]:
        for _, build in self.keyed():
            yield build()

    def keyed(self) -> Iterator[Keyed]:
        """Every family as its fingerprint and its builder, in exposition order."""
        yield from self._counted()
        yield from self._levels(self.read_status())

    def _family(
        self, kind: type, name: str, doc: str, labels: tuple[str, ...] = (), values: Mapping[Any, float] | None = None
    ) -> Keyed:
        """A family with the `wrapper` label first; `values` maps a label value (or a tuple of them) to a number."""
        rows = sorted((values or {}).items())

        def build() -> Any:
            family = kind(name, doc, labels=["wrapper", *labels])
            for key, value in rows:
                family.add_metric([self.wrapper, *(key if isinstance(key, tuple) else (key,))], value)
            return family

        return (name, kind.__name__, labels, tuple(rows)), build

    def _single(self, kind: type, name: str, doc: str, value: float) -> Keyed:
        return self._family(kind, name, doc, (), {(): value})

    def _info(self) -> Any:
        info = InfoMetricFamily("mcpwatch_build", "The wrapper's version", labels=["wrapper"])
        info.add_metric([self.wrapper], {"version": __version__})
        return info

    def _durations(self, histograms: list[tuple[tuple[str, str, str], Histogram]]) -> Any:
        duration = HistogramMetricFamily(
            DURATION,
            "Duration of MCP requests the wrapper forwarded, until answered (or cut)",
            labels=["wrapper", "method", "tool", "outcome"],
        )
        for (method, tool, outcome), histogram in histograms:
            buckets = [(_go_float(bound), count) for bound, count in histogram.cumulative()]
            duration.add_metric([self.wrapper, method, tool, outcome], buckets, histogram.total)
        return duration

    def _counted(self) -> Iterator[Keyed]:
        counts = self.fold.counts()
        yield ("mcpwatch_build", __version__), self._info
        histograms = sorted(counts.durations.items())
        fingerprint = tuple((key, tuple(histogram.buckets), histogram.total) for key, histogram in histograms)
        yield (DURATION, fingerprint), lambda: self._durations(histograms)
        # Every listed tool's alerting counters exist from its listing at 0, so that the first deadline is an
        # increase a rate() sees rather than the first sample of a new series.
        listed = sorted(self.fold.tools.labels())
        deadlines = {**dict.fromkeys(listed, 0), **counts.deadlines}
        late = {**dict.fromkeys(((tool, "response") for tool in listed), 0), **counts.late_answers}
        counter = CounterMetricFamily
        yield self._family(counter, "mcpwatch_deadlines", "Calls cut at their deadline budget", ("tool",), deadlines)
        yield self._family(
            counter,
            "mcpwatch_late_answers",
            "Responses and progress that arrived after their call was cut (dropped)",
            ("tool", "what"),
            late,
        )
        yield self._family(
            counter,
            "mcpwatch_late_results",
            "Cut tools/calls that answered after all (kept in the log)",
            ("tool", "outcome"),
            counts.late_results,
        )
        yield self._family(
            counter,
            "mcpwatch_late_reuses",
            "Calls answered at once with a stored late result",
            ("tool",),
            counts.late_reuses,
        )
        yield self._single(
            counter,
            "mcpwatch_upstream_restarts",
            "Times the upstream was started again after it was lost",
            counts.upstream_restarts,
        )
        yield self._single(
            counter,
            "mcpwatch_heartbeats",
            "Progress sent by the wrapper to keep a host's idle clock alive",
            counts.heartbeats,
        )

    def _levels(self, status: dict[str, Any]) -> Iterator[Keyed]:
        by_method = Counter(bounded(call.get("method"), METHODS) for call in status.get("in_flight") or [])
        yield self._family(
            GaugeMetricFamily,
            "mcpwatch_calls_in_flight",
            "Requests forwarded and not yet answered",
            ("method",),
            by_method,
        )
        tombstones = (status.get("tombstones") or {}).get("count", 0)
        yield self._single(
            GaugeMetricFamily,
            "mcpwatch_tombstones",
            "Cut calls whose late answers are still awaited (live tombstones)",
            tombstones,
        )
        sessions = (status.get("wrapper") or {}).get("host_sessions")
        if sessions is not None:  # an HTTP front's
            yield self._single(GaugeMetricFamily, "mcpwatch_host_sessions", "Host sessions open", sessions["open"])
            yield self._single(
                GaugeMetricFamily,
                "mcpwatch_host_sessions_max",
                "Host sessions allowed at once ([front] max_sessions)",
                sessions["max"],
            )
            for key, doc in (
                ("opened", "Host sessions opened"),
                ("reclaimed", "Idle host sessions ended to make room for a newcomer at the cap"),
                ("refused", "Host sessions refused at the cap"),
            ):
                yield self._single(CounterMetricFamily, f"mcpwatch_host_sessions_{key}", doc, sessions.get(key, 0))
        log = status.get("log") or {}
        yield self._single(
            CounterMetricFamily,
            "mcpwatch_log_events_written",
            "Events written to the log",
            log.get("events_written", 0),
        )
        yield self._single(
            CounterMetricFamily,
            "mcpwatch_log_events_lost",
            "Events that could not be written to the log",
            log.get("events_dropped", 0),
        )
        otel = status.get("otel")
        if otel is not None:  # OpenTelemetry export is on
            yield self._family(
                CounterMetricFamily,
                "mcpwatch_otlp_dropped",
                "What the OTLP export lost: events (its queue was full) and spans (the collector did not take them)",
                ("what",),
                {"events": otel.get("events_dropped", 0), "spans": otel.get("spans_failed", 0)},
            )
