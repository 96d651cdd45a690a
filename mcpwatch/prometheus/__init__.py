"""Prometheus: a scrape endpoint on the wrapper (`--metrics-port`), with alerting rules and a Grafana dashboard
shipped beside it (`mcpwatch prometheus rules|dashboard`).

The pure part (`fold`) turns the wrapper's events into counts with bounded labels and imports no Prometheus
package; `collector` hands those counts and the levels read at scrape time to `prometheus_client`, which writes the
exposition (text or OpenMetrics); `endpoint` serves it behind the front's guard.
"""
