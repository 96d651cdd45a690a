"""Whether and where to export: the standard OpenTelemetry variables first, then `[otel]` in mcpwatch.toml.

Resolved once at start-up. Only OTLP over HTTP (protobuf) is spoken; a gRPC protocol setting is refused with a
reason rather than sending HTTP to a gRPC port. Every variable mcpwatch or the exporters read is checked here, so a
bad one is one message naming it (export then stays off), never a traceback from deep in the SDK nor a value the SDK
would quietly ignore.
"""

from __future__ import annotations

import math
import os
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


SIGNALS = ("traces", "metrics")
_PREFIXES = ("OTEL_EXPORTER_OTLP_", "OTEL_EXPORTER_OTLP_TRACES_", "OTEL_EXPORTER_OTLP_METRICS_")
_METRIC_CHOICES = {
    "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": ("cumulative", "delta", "lowmemory"),
    "OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION": (
        "explicit_bucket_histogram",
        "base2_exponential_bucket_histogram",
    ),
}


def _url_problem(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises on a port out of range)
    except ValueError as exc:
        return f"is not a valid URL ({exc})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "is not an http:// or https:// URL with a host"
    return None


def _signal_url(env: Mapping[str, str], base: tuple[str, str] | None, signal: str) -> tuple[str, str] | None:
    """The signal's URL and where it came from (a variable or the [otel] key)."""
    name = f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT"
    specific = env.get(name, "").strip()
    if specific:
        return specific, name
    if base:
        return base[0].rstrip("/") + f"/v1/{signal}", base[1]
    return None


def _exporter_on(env: Mapping[str, str], signal: str) -> bool:
    """OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER: unset or otlp → on, none → off (any case, spaces)."""
    name = f"OTEL_{signal.upper()}_EXPORTER"
    values = {v.strip().lower() for v in env.get(name, "").split(",")} - {""}
    if not values or "otlp" in values:
        return True
    if values == {"none"}:
        return False
    raise OtelConfigError(f"{name}={env[name]!r}: mcpwatch exports OTLP only (otlp, or none to switch {signal} off)")


def _pairs_problem(text: str) -> str | None:
    """W3C-baggage-like `key=value,key=value` (headers, resource attributes)."""
    for item in text.split(","):
        key, equals, _ = item.partition("=")
        if item.strip() and (not equals or not key.strip()):
            return f"has {item.strip()[:40]!r}, not key=value"
    return None


def check_variables(env: Mapping[str, str]) -> None:
    """The other OTLP variables the exporters read (timeouts, compression, TLS files, headers, resource)."""
    for prefix in _PREFIXES:
        if (value := env.get(prefix + "TIMEOUT", "").strip()) != "":
            try:
                ok = math.isfinite(float(value)) and float(value) > 0
            except ValueError:
                ok = False
            if not ok:
                raise OtelConfigError(f"{prefix}TIMEOUT={value!r} is not a positive number")
        if (value := env.get(prefix + "COMPRESSION", "").strip()) and value.lower() not in ("gzip", "deflate", "none"):
            raise OtelConfigError(f"{prefix}COMPRESSION={value!r} is not one of gzip, deflate, none")
        for suffix in ("CERTIFICATE", "CLIENT_KEY", "CLIENT_CERTIFICATE"):
            if (value := env.get(prefix + suffix, "").strip()) and not os.path.isfile(value):
                raise OtelConfigError(f"{prefix}{suffix}={value!r}: no such file")
        if (value := env.get(prefix + "HEADERS", "")) and (problem := _pairs_problem(value)) is not None:
            raise OtelConfigError(f"{prefix}HEADERS {problem}")
        protocol = env.get(prefix + "PROTOCOL", "").strip()
        if protocol and protocol != "http/protobuf":
            raise OtelConfigError(
                f"{prefix}PROTOCOL={protocol!r} is not supported: mcpwatch exports OTLP over HTTP "
                "(set it to http/protobuf and use the collector's HTTP port, usually 4318)"
            )
    if (value := env.get("OTEL_RESOURCE_ATTRIBUTES", "")) and (problem := _pairs_problem(value)) is not None:
        raise OtelConfigError(f"OTEL_RESOURCE_ATTRIBUTES {problem}")
    for name, allowed in _METRIC_CHOICES.items():
        if (value := env.get(name, "").strip()) and value.lower() not in allowed:
            raise OtelConfigError(f"{name}={value!r} is not one of {', '.join(allowed)}")


def resolve(env: Mapping[str, str], settings: OtelSettings) -> OtelTarget | None:
    """The export target, or None when nothing asks for export (the default) or it is switched off."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() in TRUE_WORDS or settings.enabled is False:
        return None
    from_env = bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip())
    if from_env:
        base: tuple[str, str] | None = (env["OTEL_EXPORTER_OTLP_ENDPOINT"].strip(), "OTEL_EXPORTER_OTLP_ENDPOINT")
    else:
        base = (settings.endpoint, "[otel] endpoint") if settings.endpoint else None
    urls = {signal: _signal_url(env, base, signal) if _exporter_on(env, signal) else None for signal in SIGNALS}
    if urls["traces"] is None and urls["metrics"] is None:
        if settings.enabled:
            raise OtelConfigError("[otel] enabled = true needs [otel] endpoint or OTEL_EXPORTER_OTLP_ENDPOINT")
        return None
    check_variables(env)
    if base is not None and (problem := _url_problem(base[0])) is not None:
        raise OtelConfigError(f"{base[1]}={base[0]!r} {problem}")
    for found in urls.values():
        if found is not None and (problem := _url_problem(found[0])) is not None:
            raise OtelConfigError(f"{found[1]}={found[0]!r} {problem}")
    traces, metrics = (None if found is None else found[0] for found in urls.values())
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
