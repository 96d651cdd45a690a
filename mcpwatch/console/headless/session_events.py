"""Event handlers for the session as a whole: start and end, host and upstream, configuration, health checks,
invalidations and warnings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpwatch.console.headless.coerce import as_int, as_num, as_strs, as_text, clock_text
from mcpwatch.console.headless.panels.deadline import ConfigChangeView
from mcpwatch.console.headless.panels.invalidations import InvalidationView
from mcpwatch.console.headless.panels.warnings import WarningView
from mcpwatch.console.headless.state import _COUNTER_NAMES, ModelCore
from mcpwatch.events import (
    ConfigChangeData,
    Event,
    HealthCheckData,
    HostInfoData,
    InvalidationData,
    SessionEndData,
    SessionStartData,
    UnknownResponseData,
    UpstreamStateData,
    WarningData,
)
from mcpwatch.logview.estimate import council_estimates


class SessionEvents(ModelCore):
    """Folds session, host, upstream, configuration, health and warning events."""

    def _session_start(self, event: Event, mono: float, data: SessionStartData) -> None:
        session_id = self._s.session_id
        origin = self._s.origin_ts
        # The wrapper reports start-up problems (a bad env value…) before its session_start: they belong to
        # this session, so they survive the reset (anything of another session was already reset by `apply`).
        early = list(self._s.warnings) if event.session_id and event.session_id == session_id else []
        self.reset()
        s = self._s
        s.session_id, s.origin_ts, s.session_started = session_id, origin, True
        s.warnings.extend(early)
        s.last_mono, s.last_seq, s.events_applied = mono, event.seq if isinstance(event.seq, int) else 0, 1
        upstream: Mapping[str, Any] = got if isinstance(got := data.get("upstream"), Mapping) else {}
        s.header.update(
            name=as_text(data.get("name")),
            pid=as_int(data.get("pid")),
            version=as_text(data.get("version")),
            front=as_text(data.get("front")),
            upstream_kind=as_text(upstream.get("kind")),
            upstream_target=as_text(upstream.get("target")),
        )
        if isinstance(data.get("deadline"), Mapping):
            self._set_deadline(data["deadline"])
        if isinstance(data.get("tombstone_ttl"), Mapping):
            self._set_ttl_terms(data["tombstone_ttl"])
        state_sync = data.get("state_sync")
        if isinstance(state_sync, Mapping):
            s.state_sync_policies = as_int(state_sync.get("policies"))
            for overlap in as_strs(state_sync.get("overlaps")):
                s.warnings.append(WarningView(mono, f"state sync overlap: {overlap}"))

    def _session_end(self, event: Event, mono: float, data: SessionEndData) -> None:
        s = self._s
        s.ended = as_text(data.get("reason")) or "ended"
        s.ended_mono = mono
        s.header["upstream_state"] = "closed"  # the wrapper is gone, and its upstream with it
        s.header["retry_in_s"] = None
        counters = data.get("counters")
        if isinstance(counters, Mapping):
            degraded = s.counters["degraded"]
            for name in _COUNTER_NAMES:
                value = as_int(counters.get(name))
                if value is not None:
                    s.counters[name] = value
            if "degraded" not in counters:  # an older wrapper counted its degraded answers as ok
                s.counters["ok"] = max(0, s.counters["ok"] - degraded)

    def _host_info(self, event: Event, mono: float, data: HostInfoData) -> None:
        self._s.header.update(
            host_name=as_text(data.get("name")),
            host_version=as_text(data.get("version")),
            protocol_version=as_text(data.get("protocol_version")),
            host_profile=as_text(data.get("label")),
            host_clock=clock_text(data.get("deciding_clock")),
        )

    def _upstream_state(self, event: Event, mono: float, data: UpstreamStateData) -> None:
        s = self._s
        before = s.notable.total
        s.notable.upstream_state(mono, data)
        if s.notable.total > before and s.notable.items[-1].kind == "upstream_exit":
            item = s.notable.items[-1]
            last = f" — {item.detail[-1]}" if item.detail else ""
            s.warnings.append(WarningView(mono, item.text + last))
        header = s.header
        header["upstream_state"] = as_text(data.get("state"))
        generation = as_int(data.get("generation"))
        if generation is not None:
            header["generation"] = generation
        header["retry_in_s"] = as_num(data.get("retry_in_s"))
        header["exit_code"] = as_int(data.get("exit_code"))
        header["stderr_tail"] = as_strs(data.get("stderr_tail"))
        header["state_mono"] = mono

    def _unknown_response(self, event: Event, mono: float, data: UnknownResponseData) -> None:
        self._s.counters["unknown_dropped"] += 1

    def _invalidation(self, event: Event, mono: float, data: InvalidationData) -> None:
        s = self._s
        s.counters["invalidations"] += 1
        caused_by = as_text(data.get("caused_by")) or as_text(event.tool)
        s.invalidations.append(InvalidationView(mono, 0.0, caused_by, as_strs(data.get("patterns"))))

    def _health_check(self, event: Event, mono: float, data: HealthCheckData) -> None:
        s = self._s
        ping = as_num(data.get("ping_ms"))
        ok = data.get("ok")
        s.health = {
            "ok": ok if isinstance(ok, bool) else None,
            "ping_ms": ping,
            "tool": as_text(data.get("tool")) or as_text(event.tool),
            "error": as_text(data.get("error")),
            "at_mono": mono,
            "latency_ms": as_num(data.get("latency_ms")),
            "source": as_text(data.get("source")),
        }
        if ping is not None:
            s.health_history.append(ping)
        result = data.get("result")
        s.tier_estimates = council_estimates([event]) or s.tier_estimates
        if isinstance(result, Mapping):
            tiers = result.get("tiers")
            if isinstance(tiers, Mapping):
                s.tiers = {str(name): dict(body) for name, body in tiers.items() if isinstance(body, Mapping)}
                s.notable.tiers(mono, s.tiers, self.deadline_view().limit_s)
            multiplier = as_num(result.get("timeout_multiplier"))
            if multiplier is not None:
                s.health["timeout_multiplier"] = multiplier

    def _config_change(self, event: Event, mono: float, data: ConfigChangeData) -> None:
        s = self._s
        if isinstance(data.get("deadline"), Mapping):
            self._set_deadline(data["deadline"])
        if isinstance(data.get("tombstone_ttl"), Mapping):
            self._set_ttl_terms(data["tombstone_ttl"])
        key = as_text(data.get("key")) or "?"
        s.notable.config_change(mono, data)
        s.config_changes.append(
            ConfigChangeView(mono, key, data.get("old"), data.get("new"), as_text(data.get("source")))
        )

    def _warning(self, event: Event, mono: float, data: WarningData) -> None:
        message = as_text(data.get("message")) or "(no message)"
        self._s.warnings.append(WarningView(mono, message))
        self._s.notable.warning(mono, message)

    def _set_deadline(self, block: Mapping[str, Any]) -> None:
        self._s.deadline = {
            "host_timeout_s": as_num(block.get("host_timeout_s")),
            "margin_s": as_num(block.get("margin_s")),
            "override_s": as_num(block.get("override_s")),
            "budget_s": as_num(block.get("budget_s")),
            "source": as_text(block.get("source")),
        }

    def _set_ttl_terms(self, terms: Mapping[str, Any]) -> None:
        self._s.ttl_terms = {
            name: as_num(terms.get(name)) for name in ("init_timeout_s", "backoff_max_s", "epsilon_s", "total_s")
        } | {"request_timeout_s": as_num(terms.get("request_timeout_s"))}
