"""A real OTLP/HTTP receiver for tests: decodes what an exporter POSTs with the protocol's own protobuf messages
(`opentelemetry-proto`), the way a Collector's `otlphttp` receiver does, and keeps it for assertions."""

from __future__ import annotations

import gzip
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from waiting import patience


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    return getattr(value, which) if which else None


def _attributes(items: Any) -> dict[str, Any]:
    return {item.key: _value(item.value) for item in items}


class OtlpReceiver:
    """`with OtlpReceiver() as receiver:` → `receiver.endpoint` to export to; `spans`, `metrics`, `resources`."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.metrics: list[dict[str, Any]] = []
        self.resources: list[dict[str, Any]] = []
        self.requests: list[tuple[str, dict[str, str]]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                headers = {k.lower(): v for k, v in self.headers.items()}
                if self.path == "/v1/traces":
                    receiver._traces(ExportTraceServiceRequest.FromString(body), headers)
                    reply = ExportTraceServiceResponse().SerializeToString()
                elif self.path == "/v1/metrics":
                    receiver._metrics(ExportMetricsServiceRequest.FromString(body), headers)
                    reply = ExportMetricsServiceResponse().SerializeToString()
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _traces(self, request: ExportTraceServiceRequest, headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append(("traces", headers))
            for resource_spans in request.resource_spans:
                self.resources.append(_attributes(resource_spans.resource.attributes))
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        self.spans.append(
                            {
                                "name": span.name,
                                "kind": span.kind,
                                "trace_id": span.trace_id.hex(),
                                "span_id": span.span_id.hex(),
                                "parent_span_id": span.parent_span_id.hex() or None,
                                "start_ns": span.start_time_unix_nano,
                                "end_ns": span.end_time_unix_nano,
                                "attributes": _attributes(span.attributes),
                                "events": [(e.name, _attributes(e.attributes)) for e in span.events],
                                "status": (span.status.code, span.status.message),
                                "scope": scope_spans.scope.name,
                            }
                        )

    def _metrics(self, request: ExportMetricsServiceRequest, headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append(("metrics", headers))
            for resource_metrics in request.resource_metrics:
                for scope_metrics in resource_metrics.scope_metrics:
                    for metric in scope_metrics.metrics:
                        kind = metric.WhichOneof("data")
                        for point in getattr(metric, kind).data_points:
                            entry = {"name": metric.name, "unit": metric.unit, "kind": kind}
                            entry["attributes"] = _attributes(point.attributes)
                            if kind == "histogram":
                                entry.update(count=point.count, sum=point.sum, bounds=list(point.explicit_bounds))
                            else:
                                entry["value"] = point.as_double if point.HasField("as_double") else point.as_int
                            self.metrics.append(entry)

    def wait_for(self, predicate: Any, timeout: float = 15.0) -> None:
        """Until `predicate(self)` holds (the exporter sends in batches, off the wrapper's pump)."""
        deadline = time.monotonic() + patience(timeout)
        while time.monotonic() < deadline:
            with self._lock:
                if predicate(self):
                    return
            time.sleep(0.05)
        raise AssertionError(f"the receiver did not get what was expected in {timeout} s: {len(self.spans)} spans")
