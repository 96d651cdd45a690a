"""Every OTEL_* value mcpwatch or the OTLP exporters read is checked: a bad one is a message naming the variable (the
wrapper then serves without export), never a traceback and never a value the SDK would quietly ignore."""

from __future__ import annotations

import pytest

from mcpwatch.config import OtelSettings
from mcpwatch.otel.config import OtelConfigError, resolve

BASE = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://[::1"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:99999"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://[::1"),
        ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "ftp://collector/v1/metrics"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "abc"),
        ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "-5"),
        ("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "nan"),
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "zip"),
        ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/nonexistent/ca.pem"),
        ("OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", "/nonexistent/key.pem"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "authorization"),
        ("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "=value"),
        ("OTEL_RESOURCE_ATTRIBUTES", "service.name"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/json"),
        ("OTEL_TRACES_EXPORTER", "zipkin"),
        ("OTEL_METRICS_EXPORTER", "prometheus"),
        ("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "sometimes"),
        ("OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION", "average"),
    ],
)
def test_a_bad_variable_is_one_message_naming_it(name: str, value: str) -> None:
    with pytest.raises(OtelConfigError) as caught:
        resolve({**BASE, name: value}, OtelSettings())
    message = str(caught.value)
    assert message.startswith(name) and repr(value) in message and "\n" not in message


def test_good_values_pass(tmp_path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("")
    env = {
        **BASE,
        "OTEL_EXPORTER_OTLP_TIMEOUT": "5000",
        "OTEL_EXPORTER_OTLP_COMPRESSION": "GZIP",
        "OTEL_EXPORTER_OTLP_CERTIFICATE": str(ca),
        "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer x, x-team=a=b",
        "OTEL_RESOURCE_ATTRIBUTES": "service.name=council,openinference.project.name=council",
        "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "Delta",
        "OTEL_TRACES_EXPORTER": "otlp",
    }
    assert resolve(env, OtelSettings()) is not None


@pytest.mark.parametrize("value", ["none", " None ", "NONE"])
def test_metrics_none_in_any_case_switches_metrics_off_and_keeps_traces(value: str) -> None:
    target = resolve({**BASE, "OTEL_METRICS_EXPORTER": value}, OtelSettings())
    assert target is not None and target.metrics_url is None and target.traces_url == "http://127.0.0.1:4318/v1/traces"


def test_the_otel_table_endpoint_is_named_as_the_key() -> None:
    with pytest.raises(OtelConfigError, match=r"^\[otel\] endpoint='http://\[::1'"):
        resolve({}, OtelSettings(endpoint="http://[::1"))
