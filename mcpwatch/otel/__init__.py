"""OpenTelemetry export: the wrapper's calls as OTLP spans and metrics, named after the MCP semantic conventions.

Optional (`pip install 'mcpwatch[otel]'`) and off unless the standard `OTEL_EXPORTER_OTLP_*` variables or an
`[otel]` table ask for it. The pure parts (`config`, `context`, `spans`) import no OpenTelemetry package; only
`exporter` does, and it runs on a thread of its own, off the message pump.
"""
