"""Whether and where to export: the standard OpenTelemetry variables first, then `[otel]` in mcpwatch.toml.

Resolved once at start-up. Only OTLP over HTTP (protobuf) is spoken; a gRPC protocol setting is refused with a
reason rather than sending HTTP to a gRPC port.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from mcpwatch.config import OtelSettings

DEFAULT_SERVICE_NAME = "mcpwatch"
TRUE_WORDS = ("true", "1", "yes", "on")


@dataclass(frozen=True)
class OtelTarget:
    """Where spans and metrics go, and how; None fields mean "let the exporter read its own variable"."""

    traces_url: str | None
    metrics_url: str | None
    headers: dict[str, str] = field(default_factory=dict)
    service_name: str = DEFAULT_SERVICE_NAME
    queue_max: int = 10_000
    metrics_interval_ms: int = 10_000
    late_window_s: float = 30.0
    source: str = "environment"


class OtelConfigError(ValueError):
    """Export was asked for in a way mcpwatch cannot honour; the message says why and what to do."""


def _is_http_url(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _signal_url(env: Mapping[str, str], base: str | None, signal: str) -> str | None:
    specific = env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT", "").strip()
    if specific:
        return specific
    if base:
        return base.rstrip("/") + f"/v1/{signal}"
    return None


def resolve(env: Mapping[str, str], settings: OtelSettings) -> OtelTarget | None:
    """The export target, or None when nothing asks for export (the default) or it is switched off."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() in TRUE_WORDS or settings.enabled is False:
        return None
    protocol = (
        env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf"
    )
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or settings.endpoint
    traces = None if env.get("OTEL_TRACES_EXPORTER", "").strip() == "none" else _signal_url(env, base, "traces")
    metrics = None if env.get("OTEL_METRICS_EXPORTER", "").strip() == "none" else _signal_url(env, base, "metrics")
    if traces is None and metrics is None:
        if settings.enabled:
            raise OtelConfigError("[otel] enabled = true needs [otel] endpoint or OTEL_EXPORTER_OTLP_ENDPOINT")
        return None
    if protocol.strip() != "http/protobuf":
        raise OtelConfigError(
            f"OTLP protocol {protocol.strip()!r} is not supported: mcpwatch exports OTLP over HTTP "
            "(set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf and the collector's HTTP port, usually 4318)"
        )
    for url in (traces, metrics):
        if url is not None and not _is_http_url(url):
            raise OtelConfigError(f"the OTLP endpoint {url!r} is not an http:// or https:// URL with a host")
    from_env = bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip())
    return OtelTarget(
        traces_url=traces,
        metrics_url=metrics,
        headers=dict(settings.headers),
        service_name=env.get("OTEL_SERVICE_NAME", "").strip() or settings.service_name or DEFAULT_SERVICE_NAME,
        queue_max=settings.queue_max,
        metrics_interval_ms=settings.metrics_interval_ms,
        late_window_s=settings.late_window_s,
        source="environment" if from_env or not settings.endpoint else "mcpwatch.toml [otel]",
    )
